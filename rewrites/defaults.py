"""The default form of a program whose result is a full reduction: parallel chunks, atomic combine.

`lift.compile(prog)` without choices (and without a tuned winner in the database) lowers a
program whose body is `reduce(f, z) [<< map(g)] << x`, `f` a built-in commutative operator
(`add`, `mult`, `max_`, `min_`) on 32-bit Float or Int, as the automatic `reduce_chunks` point
with: chunks of `DEFAULT_CHUNK` scalars per work-item (vectors of 8 where `f` is `add` and `g` a
scalar function), the atomic combine, and the tail step for the elements the chunks do not cover
(so any length works, and a short array is all tail: one work-item, as before); on a CPU, where
the chunks cover a known length, the partials combined in order instead (`default_reduction`).
A sum of tuples component by component from the tuple of zeros (`rules.reduce.zero_tuple_sum`: a
sum and a sum of squares) and an arg-min/arg-max step have no atomic combine: where the chunks
cover the array they get the same chunks with the partials combined in order (vectors of 8 per
component for the tuple sum), else the program as written.
Without this, the default is one work-item looping over the whole array.

    prog = lift.compile(fun([Array(Float, N)], lambda x: reduce(add, 0.0) << x))
    prog.choices   # auto_r0:combine=atomic,pad=False,skip=False,tail=True,width=8 ... T_auto_r0=256

The choices name the automatic point, so `lift.compile(prog, choices=prog.choices)` places the
automatic points again (`with_auto_points`) and rebuilds the same program.
"""

from __future__ import annotations

from typing import Any

from lift.choices import Choices
from lift.ir.nodes import FunCall, Lambda, Node
from lift.rules.reduce import folds_in_order, is_monoid, zero_tuple_sum

from .apply import points
from .argbest import vector_selection
from .auto import PointPlacer, auto_points, is_auto
from .chunks import ReduceChunks, atomic_ok, reduce_parts
from .shapes import GET, match_shape

DEFAULT_CHUNK = 2048  # scalars per work-item (PoCL: a long contiguous chunk per work-item is fastest)
# An arg-min over positions (rewrites/argbest.py): a cache line of lanes (comparisons and selects,
# no builtins), 4096 elements per chunk. Arg-min over 2^20 floats on PoCL 3.0-rc2 (znver3), medians
# of 15: 8 lanes x 2048 0.09-0.18 ms, 16 x 2048 0.08, 16 x 4096 0.071-0.074, 16 x 16384 0.07,
# 16 x 65536 0.126; numpy's argmin 0.070; the scalar fold per chunk 0.32-0.40.
SELECTION_WIDTH, SELECTION_CHUNK = 16, 4096


def default_reduction(expr: Node, kind: str | None = None) -> tuple[Node, Choices] | None:
    """`(program with automatic points, choices)` for a program whose result is a full reduction (or a
    component of one) that the atomic combine supports, or an arg-min/arg-max step
    (`lift.userfun.facts.selection`) or a sum of tuples (`zero_tuple_sum`) whose chunks the chunk
    size divides (their partials folded in order by a second kernel), or None (see the module
    docstring). On a CPU (`kind` "cpu") a reduction whose chunks cover the array combines its
    partials in order too: the combine then runs at the end of the chunks' kernel
    (`lift.codegen.tails`), one launch where the atomic combine takes two (its initial value's
    fill), with no contended atomics, and the same result every run (dot of 2^16 floats, Xeon
    icelake-client PoCL 3.0: kernel 21.7 -> 11.6 us, call 72 -> 51 us)."""
    if not isinstance(expr, Lambda) or points(expr):
        return None
    pointed = auto_points(expr, {})
    body = pointed.body if isinstance(pointed, Lambda) else None
    if (got := match_shape(GET, body)) is not None:
        body = got["x"]  # a component of a tuple-valued reduction (an arg-min's index)
    if not (isinstance(body, FunCall) and isinstance(body.f, ReduceChunks) and isinstance(body.f.f, Lambda)):
        return None
    parts = reduce_parts(body.f.f.body)
    if parts is None:
        return None
    f, z, g, x = parts
    combine = "atomic" if atomic_ok(f, z) else "kernel"
    if combine == "kernel" and not (folds_in_order(f, z) and (not is_monoid(f, z) or zero_tuple_sum(f, z))):
        return None  # an operator the atomic combine does not take: as written (the module)
    top = body.f.label
    n = PointPlacer({}).length(x)
    w = 8 if 8 in PointPlacer({}).widths(f, z, g, x) else 1
    chunk = DEFAULT_CHUNK // w
    if combine == "kernel" and not isinstance(vector_selection(f, z, g, x, SELECTION_WIDTH), str):
        # an arg-min over positions: lanes combined by position (rewrites/argbest.py)
        w, chunk = SELECTION_WIDTH, SELECTION_CHUNK // SELECTION_WIDTH
    if n is not None and n <= chunk * w:
        return None  # a known array of at most one chunk: one work-item as written is as good (a chunks
        # kernel of one work-item and a combine of one partial would be two launches)
    # the tail step only where the chunks may not cover the array: a tail of a length the chunks
    # divide would be an empty array (`pad(-n, 0)`), which the type checker rightly refuses
    tail = n is None or n % (chunk * w) != 0
    if combine == "atomic" and not tail and kind == "cpu":
        combine = "kernel"
    if tail and combine == "kernel":
        return None  # an arg-min's chunks in order: no tail step folded first
    chosen: dict[Any, dict[str, Any]] = {lab: {"skip": True} for lab in points(pointed)}
    chosen[top] = {"skip": False, "width": w, "combine": combine, "tail": tail, "pad": False}
    return pointed, Choices(points=chosen, tuning={f"T_{top}": chunk})


def with_auto_points(expr: Node, choices: Any) -> Node:
    """`expr` with its automatic points placed when `choices` name automatic points that `expr`
    lacks (choices from `default_reduction` or a tune), else `expr`."""
    named = getattr(choices, "points", None) or {}
    if any(is_auto(lab) for lab in named) and not points(expr):
        return auto_points(expr, {})
    return expr


__all__ = ["default_reduction", "with_auto_points", "DEFAULT_CHUNK"]
