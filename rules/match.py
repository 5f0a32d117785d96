"""Pattern variables and the matcher: `match(lhs, expr)` gives the bindings or `None`.

A pattern is built from IR constructors with pattern variables in place of
sub-terms, e.g. `FunCall(Map(f), (FunCall(Map(g), (x,)),))`. Matching is structural on
the fields that take part in equality; metadata (label, loc) is ignored. A lambda in the
program is eta-reduced where the pattern expects another function, so
`map(r => map(f) << r)` matches `Map(Map(f))`.

`exact(pattern, expr)` matches the program as written (no lambda eta-reduced): the normaliser
(rules/normalise.py), the fusion passes (rules/fusion.py) and the rules' side conditions state
the shapes they read this way, one pattern each, instead of testing node classes by hand:

    _TWO_TRANSPOSES = call(Transpose(), call(Transpose(), x))     # transpose << transpose << x
    b = exact(_TWO_TRANSPOSES, e)                                 # {"x": ...} or None

A pattern variable's `test` carries a side condition (`PVar("g", FunDecl, computes)`), `any_()`
matches a field the pattern does not ask, and `env` gives bindings beforehand (`exact(get_i_of_p,
e, {"p": p})`: a component of that parameter).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Node
from lift.rules.terms import compare_fields, eta

Bindings = dict[str, Any]


@dataclass(frozen=True)
class PVar:
    """A pattern variable: matches any value of `kind` (and `test`, if given)."""

    name: str
    kind: type | tuple[type, ...] = object
    test: Callable[[Any], bool] | None = None

    def __repr__(self) -> str:
        return f"?{self.name}"


@dataclass(frozen=True)
class Either:
    """Matches the first of `options` that matches."""

    options: tuple[Any, ...]


@dataclass(frozen=True)
class Named:
    """Matches `pattern` and binds the whole matched value to `name`."""

    name: str
    pattern: Any


def pvars(names: str, kind: type | tuple[type, ...] = object) -> tuple[Any, ...]:
    """Pattern variables from a space-separated list: `f, g, x = pvars("f g x")`."""
    # typed Any: a PVar stands for a function, an expression or a size in a pattern built with the
    # IR's constructors (`Map(f)`, `Split(k)`), whose fields are typed for programs
    return tuple(PVar(n, kind) for n in names.split())


def var(name: str, kind: type | tuple[type, ...] = object, test: Callable[[Any], bool] | None = None) -> Any:
    """A pattern variable of `kind` with a side condition `test` (typed Any, as `pvars`)."""
    return PVar(name, kind, test)


def any_() -> Any:
    """A wildcard: matches any value and binds nothing (a field the pattern does not ask)."""
    return PVar("_")


def either(*options: Any) -> Either:
    """A pattern matching any of `options`."""
    return Either(tuple(options))


def named(name: str, pattern: Any) -> Named:
    """`pattern`, binding the matched value to `name` too."""
    return Named(name, pattern)


def fun(name: str) -> Any:
    """A pattern variable for a function (typed Any, as `pvars`)."""
    return PVar(name, FunDecl)


def expr(name: str) -> Any:
    """A pattern variable for an expression (typed Any, as `pvars`)."""
    return PVar(name, Expr)


def call(f: Any, *args: Any) -> FunCall:
    """The pattern `f(args)` (`call(Map(f), x)` is `map(f) << x`)."""
    return FunCall(f, tuple(args))


def match(pattern: Any, value: Any, env: Bindings | None = None) -> Bindings | None:
    """The bindings that make `pattern` equal to `value`, or None."""
    if isinstance(value, Lambda) and isinstance(pattern, Node) and not isinstance(pattern, Lambda):
        return None  # eta-reduction only below the matched node: the node itself stays in place
    env = dict(env or {})
    return env if _match(pattern, value, env, True) else None


def exact(pattern: Any, value: Any, env: Bindings | None = None) -> Bindings | None:
    """The bindings that make `pattern` equal to `value` as written (no lambda is eta-reduced), or
    None: how a stage that reads the program's own shapes (the normaliser, fusion) states them.
    `env` holds bindings given beforehand (a parameter the pattern must find: `{"p": p}`)."""
    if isinstance(pattern, Node) and type(value) is not type(pattern):
        return None  # the common case, answered before any bindings are made
    env = {} if env is None else dict(env)
    return env if _match(pattern, value, env, False) else None


def _match(p: Any, v: Any, env: Bindings, eta_: bool) -> bool:
    if isinstance(p, Node):
        return _match_node(p, v, env, eta_)
    if isinstance(p, PVar):
        return _bind(p, v, env)
    if isinstance(p, Either):
        for option in p.options:
            trial = dict(env)
            if _match(option, v, trial, eta_):
                env.clear()
                env.update(trial)
                return True
        return False
    if isinstance(p, Named):
        return _match(p.pattern, v, env, eta_) and _bind(PVar(p.name), v, env)
    if isinstance(p, tuple):
        return (isinstance(v, tuple) and len(p) == len(v)
                and all(_match(a, b, env, eta_) for a, b in zip(p, v)))
    return cast(bool, p == v)


def _bind(p: PVar, v: Any, env: Bindings) -> bool:
    if not isinstance(v, p.kind) or (p.test is not None and not p.test(v)):
        return False
    if p.name == "_":
        return True  # a wildcard binds nothing
    if p.name in env:
        return cast(bool, env[p.name] == v)
    env[p.name] = v
    return True


def _match_node(p: Node, v: Any, env: Bindings, eta_: bool) -> bool:
    if eta_ and isinstance(v, Lambda) and not isinstance(p, Lambda):
        v = eta(v)
    if type(v) is not type(p):
        return False
    for f in compare_fields(p):
        if not _match(getattr(p, f), getattr(v, f), env, eta_):
            return False
    return True
