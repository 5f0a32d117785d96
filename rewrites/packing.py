"""Packed operands of `block_nest`'s output form (rewrites/auto_nest.py): the panels a work-item's
register block reads, copied contiguous in kernels of their own (BLAS-style packing).

    pack_a(BM) A = ocl_kernel(copy) << map(transpose) << split(BM) << A     [[[T]BM]K]M/BM
    pack_b(P)  X = ocl_kernel(copy) << transpose << map(split(P)) << X      [[[U]P]K]N/P
        (A : [[T]K]M, X : [[U]N]K row-major; P = BN * W, the output columns of a block;
         `copy` = materialise's global copy, moving vectors where the element count allows)

Why (measured on PoCL, AVX2, matmul 1024^3, shared/notes/pocl-performance.md): a block read in
place walks BM rows of A and a BN*W-wide strip of X's columns, one row of each per step of k; with
row strides of a power of two (4 KiB for 1024 floats) every step lands in a new page at the same
offset, so the strip maps onto a few cache sets and each step is a TLB miss. Packed, a work-item
reads both panels sequentially (one stream each, in step order); the copies move each operand once
(2 x 4 MiB at 1024^3, against 2 GFLOP of blocks). The packed arrays are the same values, so the
interpreter's result is unchanged.
"""

from __future__ import annotations

from typing import Any

from lift.arith import Cst
from lift.ir import nodes as n
from lift.ir.nodes import FunCall, Lambda, Param
from lift.typecheck import type_of
from lift.types import ArrayType

from .memory_points import copy_into
from .nest import array_of
from .shapes import TRANSPOSE, match_shape

COPY_WIDTH = 8  # vectors of the copy (the widest of 8, 4, 2 dividing the element count is used)


def _kernel(x: Any, body: Any, name: str) -> Any:
    """`body(q)` (copies of parts of `x`, made by `_copied`) computed by a kernel of its own."""
    q = Param(type_of(x), name)
    return FunCall(n.OclKernel(Lambda((q,), body(q))), (x,))


def _copied(view: Any) -> Any:
    """`view` (an array of scalars) copied into global memory, `COPY_WIDTH` scalars at a time."""
    out = copy_into("global", view, width=COPY_WIDTH)
    if isinstance(out, str):
        raise AssertionError(f"packing a {type_of(view)}: {out}")  # arrays of scalars only (nest_parts)
    return out


def pack_a(a: Any, bm: int) -> Any:
    """A ([[T]K]M) as M/BM panels of its BM rows transposed ([[[T]BM]K]M/BM): a block's scalars of
    one step of k side by side. A given as `transpose << y` with K a known multiple of BM (a
    product reading A^T): copied by tiles in y's order (`_tiles_of_columns`)."""
    if (columns := match_shape(TRANSPOSE, a)) is not None:
        y = columns["x"]
        steps = array_of(type_of(y)).size
        if isinstance(steps, Cst) and steps.value % bm == 0:
            return _kernel(y, lambda q: _tiles_of_columns(q, bm), "pt")
    return _kernel(a, lambda q: _copied(FunCall(n.Map(n.Transpose()), (FunCall(n.Split(Cst(bm)), (q,)),))), "pa")


def _tiles_of_columns(y: Any, bm: int) -> Any:
    """The panels of A = `transpose << y` (y : [[T]M]K, so a panel's BM scalars of one step of k
    are BM contiguous scalars of a row of y), copied a BM x BM tile at a time: BM steps of k of
    one panel, read as BM runs of BM scalars from BM rows of y, written as one contiguous run of
    the panel; work-items in y's order along its rows, so neighbours read the same cache lines.

        map(join) << transpose_w << split(M/BM) << map(tile => map(copy) << tile) << join
            << map(transpose) << map(map(split(BM))) << split(BM) << y

    (One parallel map over the tiles, y's rows the fast direction; nested maps over steps and
    panels made a kernel nesting deeper than the blocks', which then took the blocks' launch.)

    Copied in the panels' order instead (`pack_a`'s general form), each work-item reads BM
    scalars of a row of y and the next work-item those of the next row, M scalars away: on PoCL
    (Xeon, AVX-512, 1024 x 1024) that copy took 1.0 ms, a plain copy of the 4 MiB 0.4 ms."""
    rows = array_of(array_of(type_of(y)).elem)  # [T]M: nest_parts gives arrays of rows of scalars
    scalar = rows.elem
    row = Param(ArrayType(scalar, Cst(bm)), "tr")
    tile = Param(ArrayType(ArrayType(scalar, Cst(bm)), Cst(bm)), "tile")
    per_tile = Lambda((tile,), FunCall(n.Map(Lambda((row,), _copied(row))), (tile,)))
    tiles = FunCall(n.Map(n.Transpose()),
                    (FunCall(n.Map(n.Map(n.Split(Cst(bm)))), (FunCall(n.Split(Cst(bm)), (y,)),)),))
    copied = FunCall(n.Map(per_tile), (FunCall(n.Join(), (tiles,)),))  # one map: tiles in y's order
    by_step = FunCall(n.Split(rows.size // bm), (copied,))
    return FunCall(n.Map(n.Join()), (FunCall(n.TransposeW(), (by_step,)),))


def pack_b(x: Any, cols: int, pad: int = 0) -> Any:
    """X ([[U]N]K) as N/cols panels of `cols` columns ([[[U]cols]K]N/cols): a block's strip of
    X contiguous, step after step of k. `pad` (X given as rows only): each row of X padded with
    `pad` zeros first, (N + pad)/cols panels (a block wider than N divides).

    The copy runs in X's order (a row of X after another, each row's vectors side by side) and
    writes through `transpose_w`: every read is sequential, and each work-item's write is a run
    of `cols` scalars (whole cache lines for 16 floats). Run in the panels' order instead, each
    step of k reads the next row of X, N scalars away: on PoCL/AVX2 at 1024^3 that copy took
    0.7-1.2 ms, the one in X's order 0.36 ms (a plain 4 MiB copy: 0.35 ms)."""
    if (columns := match_shape(TRANSPOSE, x)) is not None:
        assert not pad, "pack_b pads the rows of an X given as rows"
        return _kernel(columns["x"], lambda q: _panels_of_rows(q, cols), "pt")
    xt = type_of(x)
    assert isinstance(xt, ArrayType)  # X : [[U]N]K
    row = Param(xt.elem, "row")
    padded = FunCall(n.Pad(Cst(0), Cst(pad), 0), (row,)) if pad else row
    per_row = Lambda((row,), FunCall(n.Split(Cst(cols)), (_copied(padded),)))
    return _kernel(x, lambda q: FunCall(n.TransposeW(), (FunCall(n.Map(per_row), (q,)),)), "pb")


def _panels_of_rows(y: Any, cols: int) -> Any:
    """The panels of X = `transpose << y` (y : [[U]K]N, so X's columns are y's contiguous rows),
    copied in y's order: a panel's `cols` rows of y in groups of V (the widest of 8, 4, 2 dividing
    `cols`), each group read step by step of k (V sequential streams) and written as one vector of V
    lanes per step, through `transpose_w` into the panel's [[U]cols]K order.

        map(pan => map(join) << transpose_w << map(grp => copy << transpose << grp) << split(V) << pan)
            << split(cols) << y

    Copied in X's order instead (`pack_b`'s form for a row-major X), every step of k reads `cols`
    rows of y K scalars apart, across work-items: on PoCL/AVX2 (tmm, 1024 x 1024) that copy took
    ~7-15 ms where the launch put those work-items on the inner dimension, this one ~0.9 ms."""
    v = next(d for d in (COPY_WIDTH, 4, 2, 1) if cols % d == 0)
    rows = type_of(y)
    assert isinstance(rows, ArrayType)  # nest_parts: an array of rows of scalars
    pan = Param(ArrayType(rows.elem, Cst(cols)), "pan")
    grp = Param(ArrayType(rows.elem, Cst(v)), "grp")
    per_grp = Lambda((grp,), _copied(FunCall(n.Transpose(), (grp,))))  # [[U]V]K
    groups = FunCall(n.Map(per_grp), (FunCall(n.Split(Cst(v)), (pan,)),))
    per_pan = Lambda((pan,), FunCall(n.Map(n.Join()), (FunCall(n.TransposeW(), (groups,)),)))
    return FunCall(n.Map(per_pan), (FunCall(n.Split(Cst(cols)), (y,)),))


__all__ = ["pack_a", "pack_b", "COPY_WIDTH"]
