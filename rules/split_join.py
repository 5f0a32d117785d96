"""Tiling rules: split-join, the split/join identities and overlapped tiling of a slide."""

from __future__ import annotations

from lift.arith import Arith, Cst, as_arith, free_vars, prove_eq
from lift.ir.nodes import Expr, FunCall, FunDecl, Join, Map, Slide, Split
from lift.rules.match import call, expr, fun, pvars
from lift.rules.rule import REQUIRED, Rule, divides
from lift.rules.terms import elem, length, meta
from lift.types import ArrayType

f = fun("f")
x = expr("x")
k, size, step = pvars("k size step")


def divisors(n: Arith, *, proper: bool = True) -> tuple[int, ...]:
    """Split sizes to try for a length: its divisors (without 1 and `n`), or 2 and 4 if symbolic."""
    if free_vars(n) or not isinstance(n, Cst):
        return (2, 4)
    v = n.value
    ds = tuple(d for d in range(2 if proper else 1, v + (0 if proper else 1)) if v % d == 0)
    return ds or (1,)


def _split_join(f: FunDecl, x: Expr, n: int, matched: FunCall) -> Expr:
    chunks = FunCall(Split(as_arith(n)), (x,))
    return FunCall(Join(), (FunCall(Map(Map(f), **meta(matched.f)), (chunks,), **meta(matched)),))


split_join = Rule(
    "split_join", law="map(f) << x -> join << map(map(f)) << split(n) << x",
    lhs=call(Map(f), x), params={"n": REQUIRED},
    where=lambda x, n, matched: divides(n, length(x), matched, "split_join"),
    rhs=_split_join, suggest=lambda x: {"n": divisors(length(x))},
    doc="Tiles a map into chunks of n elements (thesis 2.3.2.1, Split-Join).",
)

join_split_id = Rule(
    "join_split_id", law="join << split(k) << x -> x",
    lhs=call(Join(), call(Split(k), x)),
    where=lambda k, x, matched: divides(k, length(x), matched, "join_split_id"),
    rhs=lambda x: x,
    doc="Splitting then flattening is the identity.",
)


def _inner_is(x: Expr, k: Arith) -> bool:
    t = elem(x)
    return isinstance(t, ArrayType) and prove_eq(t.size, k)


split_join_id = Rule(
    "split_join_id", law="split(k) << join << x -> x   (x : [[T]k]m)",
    lhs=call(Split(k), call(Join(), x)),
    where=lambda k, x: _inner_is(x, k),
    rhs=lambda x: x,
    doc="Flattening then splitting by the inner length is the identity.",
)


def _windows(x: Expr, size: Arith, step: Arith) -> Arith:
    return (length(x) - size + step) // step


def _slide_tiling(x: Expr, size: Arith, step: Arith, n: int, matched: FunCall) -> Expr:
    v = step * n
    u = step * (n - 1) + size
    tiles = FunCall(Slide(u, v), (x,))
    inner = FunCall(Map(Slide(size, step)), (tiles,))
    return FunCall(Join(), (inner,), **meta(matched))


slide_tiling = Rule(
    "slide_tiling",
    law="slide(size, step) << x -> join << map(slide(size, step)) << slide(size + (n-1)*step, n*step) << x",
    lhs=call(Slide(size, step), x), params={"n": REQUIRED},
    where=lambda x, size, step, n, matched: divides(n, _windows(x, size, step), matched, "slide_tiling"),
    rhs=_slide_tiling, suggest=lambda x, size, step: {"n": divisors(_windows(x, size, step))},
    doc="Overlapped tiling: tiles of n windows each, overlapping by size - step elements.",
)

RULES = (split_join, join_split_id, split_join_id, slide_tiling)
