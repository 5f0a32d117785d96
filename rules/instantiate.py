"""Instances of any rule's left-hand side, for testing a user's own rule (`lift.testing.programs_for`).

A rule's `lhs` is a pattern: IR nodes with pattern variables. Each variable is filled from a small
pool by the role it plays: in function position (`map(f)`, `call(f, x)`) a scalar user function, as
an argument (`call(f, x)`) an input array, a zip of two, or a scalar literal, elsewhere (`split(n)`) a
small size. Assignments are tried in a fixed pseudo-random order; those that type-check and that the
rule matches are kept, so hypothesis draws among programs that all contain the left-hand side (no
filtering). The programs take three inputs: `a`, `b` of type `[Float]8` and `m` of type `[[Float]4]6`.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from typing import Any

from lift.arith import Arith, Cst
from lift.errors import LiftError
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Node, Param, Zip
from lift.rules.match import Either, Named, PVar
from lift.rules.terms import compare_fields
from lift.typecheck import typecheck
from lift.types import ArrayType, Float

TRIES = 3000    # assignments tried per rule
KEEP = 48       # instances kept per rule

_A = ArrayType(Float, Cst(8))
_M = ArrayType(ArrayType(Float, Cst(4)), Cst(6))


def inputs() -> tuple[Param, Param, Param]:
    """Fresh parameters `a`, `b` ([Float]8) and `m` ([[Float]4]6) for one rule's instances."""
    return Param(_A, "a"), Param(_A, "b"), Param(_M, "m")


def _pools(params: tuple[Param, Param, Param]) -> dict[str, list[Any]]:
    from lift.testing import FOLDS, UNARY  # lift.testing imports this module (its rule instances)

    def typed(f: Any, *ts: Any) -> Any:
        return f.specialise(*ts) if hasattr(f, "specialise") else f

    unary = [typed(f, Float) for f in UNARY[Float]]
    binary = [typed(f, Float, Float) for f, _ in FOLDS[Float]]
    a, b, m = params
    exprs: list[Any] = [a, m, FunCall(Zip(2), (a, b)), Literal(0.0, Float), Literal(1.0, Float), b]
    return {"fun": unary + binary, "expr": exprs, "size": [Cst(2), Cst(4), Cst(3), Cst(1), 2, 4]}


def _roles(p: Any, role: str, out: dict[str, str]) -> None:
    """The role (fun, expr, size) of each pattern variable in `p`."""
    if isinstance(p, PVar):
        out.setdefault(p.name, role)
    elif isinstance(p, Either):
        for o in p.options:
            _roles(o, role, out)
    elif isinstance(p, Named):
        _roles(p.pattern, role, out)
    elif isinstance(p, FunCall):
        _roles(p.f, "fun", out)
        for x in p.args:
            _roles(x, "expr", out)
    elif isinstance(p, Node):
        for f in dataclasses.fields(p):
            if f.compare and f.name not in ("label", "loc"):
                sub = "fun" if "FunDecl" in str(f.type) else "expr" if "Expr" in str(f.type) else "size"
                _roles(getattr(p, f.name), sub, out)
    elif isinstance(p, tuple):
        for x in p:
            _roles(x, role, out)


def _options(p: Any) -> list[Any]:
    """The pattern with each `Either` resolved, every way."""
    if isinstance(p, Either):
        return [x for o in p.options for x in _options(o)]
    if isinstance(p, Named):
        return _options(p.pattern)
    if isinstance(p, tuple):
        return [tuple(c) for c in itertools.product(*(_options(x) for x in p))]
    if isinstance(p, Node) and not isinstance(p, Param):
        names = list(compare_fields(p))
        alts = [_options(getattr(p, f)) for f in names]
        return [_rebuild(p, dict(zip(names, c))) for c in itertools.product(*alts)][:64]
    return [p]


def _rebuild(p: Node, values: dict[str, Any]) -> Any:
    try:
        return dataclasses.replace(p, **values)
    except (TypeError, ValueError):
        return None


def _fill(p: Any, env: dict[str, Any]) -> Any:
    if isinstance(p, PVar):
        return env[p.name]
    if isinstance(p, tuple):
        return tuple(_fill(x, env) for x in p)
    if isinstance(p, Node) and not isinstance(p, Param):
        names = compare_fields(p)
        return dataclasses.replace(p, **{f: _fill(getattr(p, f), env) for f in names})
    return p


def instances(rule: Any, params: dict[str, Any] | None = None) -> tuple[tuple[Param, ...], list[Expr]]:
    """Parameters and expressions over them that contain `rule`'s left-hand side where it applies."""

    ps = inputs()
    pools = _pools(ps)
    roles: dict[str, str] = {}
    _roles(rule.lhs, "expr", roles)
    names = sorted(roles)
    rng = random.Random(0)
    found: list[Expr] = []
    seen: set[Any] = set()
    for pattern in [o for o in _options(rule.lhs) if o is not None]:
        for _ in range(TRIES):
            env = {n: rng.choice(pools[roles[n]]) for n in names}
            key = tuple((n, id(v)) for n, v in env.items())
            if key in seen:
                continue
            seen.add(key)
            for e in _instance(pattern, env, pools["expr"]):
                try:
                    typecheck(Lambda(ps, e))
                    ok = bool(rule.matches(Lambda(ps, e), **(params or {})))
                except (LiftError, TypeError, ValueError, AttributeError, KeyError):
                    continue
                if ok:
                    found.append(e)
                    if len(found) >= KEEP:
                        return ps, found
                    break
    return ps, found


def _instance(pattern: Any, env: dict[str, Any], exprs: list[Any]) -> list[Expr]:
    """The filled pattern as expressions (a function pattern applied to each input)."""
    try:
        e = _fill(pattern, env)
    except (TypeError, ValueError, LiftError):
        return []
    if isinstance(e, FunDecl):  # a rule on functions: apply the instance to an input
        return [FunCall(e, (x,)) for x in exprs[:3]]
    if isinstance(e, Expr) and not isinstance(e, Literal | Param) and not isinstance(e, Arith):
        return [e]
    return []
