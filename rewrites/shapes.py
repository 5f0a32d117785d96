"""The call shapes the rewrite points look for, as patterns of `lift.rules.match` (IR constructors
with pattern variables, like the rules' left-hand sides): `match(MAP, e)` is `{"f": f, "x": x}`
when `e` is `map(f) << x`, else None.

Each shape names the one pattern a point rewrites as written: `map` (not a lowered map), `reduce`
(not `reduce_seq`), a zip of any width, `get(i)`, `transpose`. A point that looks for a shape
`match`es it (or builds its own pattern from these constructors) rather than testing node classes.
"""

from __future__ import annotations

from lift.ir.nodes import FunCall, Get, Map, Reduce, Transpose, Zip
from lift.rules.match import PVar, call, expr, fun, match

MAP = call(Map(fun("f")), expr("x"))
"""`map(f) << x`: binds `f` and `x`."""

REDUCE = call(Reduce(fun("f")), expr("z"), expr("xs"))
"""`reduce(f, z) << xs`: binds `f`, `z` and `xs`."""

ZIP = FunCall(Zip(PVar("n")), PVar("xs", tuple))
"""`zip(x1, .., xn)`: binds `n` and `xs`, the tuple of the zipped arrays."""

ZIP2 = call(Zip(PVar("n")), expr("a"), expr("b"))
"""`zip(a, b)`: binds `a` and `b` (and `n`, 2)."""

GET = call(Get(PVar("i")), expr("x"))
"""`get(i) << x`: binds `i` and `x`."""

TRANSPOSE = call(Transpose(), expr("x"))
"""`transpose << x`: binds `x`."""


def projected(e: object) -> object:
    """`e` with its `get(i) << ..` projections taken off (`x` for `get(1) << get(0) << x`)."""
    while (m := match(GET, e)) is not None:
        e = m["x"]
    return e


__all__ = ["MAP", "REDUCE", "ZIP", "ZIP2", "GET", "TRANSPOSE", "projected"]
