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

from .memory_points import copy_into

COPY_WIDTH = 8  # vectors of the copy (the widest of 8, 4, 2 dividing the element count is used)


def _kernel(x: Any, view: Any, name: str) -> Any:
    """`view(q)` of `x` copied into global memory by a kernel of its own."""
    q = Param(type_of(x), name)
    body = copy_into("global", view(q), width=COPY_WIDTH)
    if isinstance(body, str):
        raise AssertionError(f"packing a {type_of(x)}: {body}")  # arrays of scalars only (nest_parts)
    return FunCall(n.OclKernel(Lambda((q,), body)), (x,))


def pack_a(a: Any, bm: int) -> Any:
    """A ([[T]K]M) as M/BM panels of its BM rows transposed ([[[T]BM]K]M/BM): a block's scalars of
    one step of k side by side."""
    return _kernel(a, lambda q: FunCall(n.Map(n.Transpose()), (FunCall(n.Split(Cst(bm)), (q,)),)), "pa")


def pack_b(x: Any, cols: int) -> Any:
    """X ([[U]N]K) as N/cols panels of `cols` columns ([[[U]cols]K]N/cols): a block's strip of
    X contiguous, step after step of k."""
    return _kernel(x, lambda q: FunCall(n.Transpose(), (FunCall(n.Map(n.Split(Cst(cols))), (q,)),)), "pb")


__all__ = ["pack_a", "pack_b", "COPY_WIDTH"]
