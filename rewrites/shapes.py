"""The call shapes the rewrite points look for, as patterns of `lift.rules.match` (IR constructors
with pattern variables, like the rules' left-hand sides): `match_shape(MAP, e)` is
`{"f": f, "x": x}` when `e` is `map(f) << x`, else None.

Each shape names the one pattern a point rewrites as written: `map` (not a lowered map), `reduce`
(not `reduce_seq`), a zip or tuple of any width, `get(i)`, `transpose`, `iota`. A point that looks
for a shape matches it with `match_shape` (or a pattern of its own built from these constructors)
rather than testing node classes; what a point asks of a node class beside its shape (a kernel, a
map of any kind) it asks the registry (`lift.ir.registry`).
"""

from __future__ import annotations

from typing import Any

from lift.ir.nodes import FunCall, Get, Iota, Lambda, MakeTuple, Map, Reduce, Transpose, Zip
from lift.rules.match import Bindings, call, expr, fun, match, var

MAP = call(Map(fun("f")), expr("x"))
"""`map(f) << x`: binds `f` and `x`."""

MAP_OF = Map(fun("f"))
"""`map(f)`, the function (a map nested directly in another): binds `f`."""

REDUCE = call(Reduce(fun("f")), expr("z"), expr("xs"))
"""`reduce(f, z) << xs`: binds `f`, `z` and `xs`."""

ZIP = FunCall(Zip(var("n")), var("xs", tuple))
"""`zip(x1, .., xn)`: binds `n` and `xs`, the tuple of the zipped arrays."""

ZIP2 = call(Zip(var("n")), expr("a"), expr("b"))
"""`zip(a, b)`: binds `a` and `b` (and `n`, 2)."""

TUPLE = FunCall(MakeTuple(var("n")), var("xs", tuple))
"""`tuple(x1, .., xn)`: binds `n` and `xs`, the tuple of the components."""

GET = call(Get(var("i")), expr("x"))
"""`get(i) << x`: binds `i` and `x`."""

TRANSPOSE = call(Transpose(), expr("x"))
"""`transpose << x`: binds `x`."""

IOTA = call(Iota(var("n")))
"""`iota(n)`, the positions 0 .. n-1 (a view with no argument): binds `n`."""


def match_shape(shape: Any, e: object) -> Bindings | None:
    """The bindings of `shape` (one of the call shapes here, or one built the same way) in `e`, or None.
    Stricter than `match`, which reads a lambda in a call's function place eta-reduced: a call of a
    lambda (`(r => map(f) << r) << x`) is not the shape's call."""
    if isinstance(e, FunCall) and isinstance(e.f, Lambda):
        return None
    return match(shape, e)


def projected(e: object) -> object:
    """`e` with its `get(i) << ..` projections taken off (`x` for `get(1) << get(0) << x`)."""
    while (m := match_shape(GET, e)) is not None:
        e = m["x"]
    return e


__all__ = ["MAP", "MAP_OF", "REDUCE", "ZIP", "ZIP2", "TUPLE", "GET", "TRANSPOSE", "IOTA", "match_shape", "projected",
           "var"]
