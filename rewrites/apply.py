"""Applying rewrite points top-down (thesis 6.2.3, Algorithm 4).

`apply_all(expr, choices)` rewrites every point of `expr`: the arguments of a call first,
then the point itself with its structural parameters taken from `choices` (by label),
then, recursively, whatever the rewritten function contains (the nested points that it
placed). A point that does not match its pattern, or whose parameters make an ill-typed
program, is eliminated and reported as a `RewritePointSkipped` warning (label, line,
reason). Postcondition: no rewrite point is left and the type is unchanged.

    apply_all(prog, {"A": {"size": 64}, "B": {"skip": True}})
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from collections.abc import Mapping
from typing import Any, TypeGuard, cast

from lift.errors import LiftError, RewriteError, RewritePointSkipped
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Node, Param
from lift.ir.paths import children, walk, with_children
from lift.ir.registry import MAPS, REDUCES
from lift.rules.rule import same_type
from lift.rules.terms import as_expr, as_fun
from lift.rules.terms import call as beta_call
from lift.typecheck import type_of, typecheck
from lift.types import ArrayType, Type

from .point import Outcome, RewritePoint
from .refusal import Refusal

Choices = Mapping[str, Any]  # label -> {param: value} (or False: skip the point)


def is_point(n: object) -> TypeGuard[RewritePoint]:
    """Whether `n` is a rewrite point."""
    return isinstance(n, RewritePoint)


def label_points(expr: Node) -> Node:
    """`expr` with every unlabelled point labelled by its kind and pre-order index (`split_join0`)."""
    counter = itertools.count()

    def go(n: Node) -> Node:
        if is_point(n):
            k = next(counter)
            if n.label is None:
                n = dataclasses.replace(n, label=f"{n.kind}{k}")
        return with_children(n, tuple(go(c) for c in children(n)))

    return go(expr)


def points(expr: Node) -> dict[str, RewritePoint]:
    """The rewrite points of `expr` by label (after `label_points`), in pre-order."""
    return {n.label or "": n for _, n in walk(label_points(expr)) if is_point(n)}


def structural_space(expr: Node) -> dict[str, dict[str, tuple[Any, ...]]]:
    """For each point label, its structural parameters and their candidate values (`skip` first)."""
    return {lab: {"skip": (False, True), **p.structural()} for lab, p in points(expr).items()}


def point_params(p: RewritePoint, choices: Choices | None) -> dict[str, Any]:
    """The parameters of `p`: its fixed fields, overridden by `choices[p.label]`."""
    got = (choices or {}).get(p.label or "", {})
    if got is False or got is True:
        got = {"skip": not got}
    return {**p.fixed(), **dict(got)}


def apply_all(expr: Node, choices: Choices | None = None, *, warn: bool = True,
              outcomes: list[Outcome] | None = None) -> Node:
    """`expr` with every rewrite point applied (or eliminated), top-down (Algorithm 4).

    `choices[label]` gives a point's structural parameters (`skip`, ...) and may fix its
    tuning values (`size`); a tuning value not given becomes a size variable (`T_label`)
    for the constraint solver. `outcomes` collects what happened to each point."""
    app = _Applier(choices or {}, warn, outcomes if outcomes is not None else [])
    labelled = label_points(expr)
    if not any(is_point(n) for _, n in walk(labelled)):
        return expr
    return app.node(labelled)


class _Applier:
    def __init__(self, choices: Choices, warn: bool, outcomes: list[Outcome]) -> None:
        self.choices, self.warn, self.outcomes = choices, warn, outcomes

    def node(self, n: Node) -> Node:
        if isinstance(n, Lambda):
            return dataclasses.replace(n, body=self.expr(n.body))
        if isinstance(n, Expr):
            return self.expr(n)
        return self.fun(as_fun(n), None)

    def expr(self, e: Expr) -> Expr:
        if not isinstance(e, FunCall):
            return e
        args = tuple(self.expr(a) for a in e.args)
        if is_point(e.f):
            return self.point(e.f, args, e)
        types = [type_of(a) for a in args]
        return as_expr(with_children(e, (self.fun(e.f, types), *args)))

    def fun(self, f: FunDecl, types: list[Type] | None) -> FunDecl:
        """`f` with the points inside it applied; `types`: the types it is applied to."""
        match f:
            case Lambda(_, body):
                return dataclasses.replace(f, body=self.expr(body))
            case RewritePoint():
                if types is None:
                    self.skip(f, "its argument types are unknown here; apply it to an expression")
                    return self.fun(f.f, types)
                ps = tuple(Param(t, "x") for t in types)
                return Lambda(ps, self.point(f, ps, None), label=f.label, loc=f.loc)
        if isinstance(f, MAPS):  # its function applied to each element
            inner = [types[0].elem] if types and isinstance(types[0], ArrayType) else None
            return cast(FunDecl, dataclasses.replace(cast(Any, f), f=self.fun(f.f, inner)))
        if isinstance(f, REDUCES):  # its function applied to the accumulator and each element
            inner = [types[0], types[1].elem] if types and isinstance(types[1], ArrayType) else None
            return cast(FunDecl, dataclasses.replace(cast(Any, f), f=self.fun(f.f, inner)))
        inner = getattr(f, "f", None)
        if isinstance(inner, FunDecl):
            same = types if getattr(f, "arity", 1) == inner.arity else None
            return cast(FunDecl, dataclasses.replace(cast(Any, f), f=self.fun(inner, same)))
        return f

    def point(self, p: RewritePoint, args: tuple[Expr, ...], old: FunCall | None) -> Expr:
        """The call `p << args` with `p` applied, then what it produced rewritten too."""
        params = point_params(p, self.choices)
        chain: list[RewritePoint] = []
        core: FunDecl = p.f
        while is_point(core):
            chain.append(core)
            core = core.f

        def nested(fn: FunDecl) -> FunDecl:
            for q in reversed(chain):
                fn = dataclasses.replace(cast(Any, q), f=fn)
            return fn

        if params.get("skip"):
            self.outcomes.append(Outcome(p.label or "", p.kind, False, params, "skipped by choice"))
            return self.expr(beta_call(nested(core), args))
        ps = tuple(Param(type_of(a), "x") for a in args)
        seen = tuple(a if isinstance(a, Literal) else q for a, q in zip(args, ps))  # constants stay visible
        try:
            out = p.rewrite(beta_call(core, seen), params, nested if p.places_nested else _identity)
            if not isinstance(out, (str, Refusal)):
                fn: FunDecl = Lambda(ps, out)
                new = beta_call(fn, args) if p.places_nested or not chain else FunCall(nested(fn), args)
                self.check(FunCall(p, args) if old is None else old, new)
        except LiftError as err:
            out = err.message if hasattr(err, "message") else str(err)
        if isinstance(out, (str, Refusal)):
            self.skip(p, str(out), params)
            return self.expr(beta_call(nested(core), args))
        self.outcomes.append(Outcome(p.label or "", p.kind, True, params))
        return self.expr(new)

    def check(self, old: FunCall, new: Expr) -> None:
        """`RewriteError` unless `new` is well typed with the type of `old`."""
        t_old, t_new = type_of(old), typecheck(new)
        for _, n in walk(new):
            if isinstance(n, FunCall):
                type_of(n)
        if not equal_types(t_old, t_new):
            raise RewriteError(f"the rewrite changed the type from {t_old} to {t_new}", node=old,
                               expected=t_old, got=t_new)

    def skip(self, p: RewritePoint, reason: str, params: Mapping[str, Any] | None = None) -> None:
        self.outcomes.append(Outcome(p.label or "", p.kind, False, dict(params or {}), reason))
        if not self.warn:
            return
        w = skipped(p, reason)
        if p.loc is None:
            warnings.warn(w, stacklevel=4)
        else:  # reported at the user's line that wrote the point
            warnings.warn_explicit(w, RewritePointSkipped, p.loc.file, p.loc.line)


def skipped(p: RewritePoint, reason: str) -> RewritePointSkipped:
    """The warning for a point that did not apply; `.label`, `.line` and `.reason` are set."""
    line = p.loc.line if p.loc is not None else None
    where = f" at {p.loc}" if p.loc is not None else ""
    w = RewritePointSkipped(f"rewrite point {p.kind} [{p.label}]{where} was not applied: {reason}")
    w.label, w.line, w.reason, w.loc = p.label, line, reason, p.loc
    return w


def _identity(f: FunDecl) -> FunDecl:
    return f


def equal_types(a: Type, b: Type) -> bool:
    """Types provably equal (sizes up to exact division)."""
    return same_type(a, b)
