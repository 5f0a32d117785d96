"""`reduce(add) << map(mult) << zip(xs, ys)`: one matrix product in numpy (precise mode), or the
exact-order float32 sum in one pass (lift.interpret.ordered) or in blocks (`contract_sequential`).

In the precise (float64) mode the order of a float sum is free (the reference is compared within a
tolerance derived from the reduction length), so summing the products of two arrays' elements along
the reduced axis is a contraction over the batch axes: the axes along which only `xs` varies become
rows, those along which only `ys` varies columns, those along which both vary a batch, and numpy
(BLAS) multiplies the matrices. A dot product, gemv and matmul (any nesting of maps around the
reduction) all take this path; whatever does not match it takes the general fold.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from lift.interpret.ordered import cores, ordered_sum
from lift.interpret.twins import monoid
from lift.interpret.values import Zipped
from lift.ir import nodes as n
from lift.ir.nodes import FunCall, FunDecl, Lambda, Param


def is_product(h: FunDecl) -> bool:
    """`h` is `p => mult(get(0) << p, get(1) << p)` with `mult` a product user function."""
    if not (isinstance(h, Lambda) and len(h.params) == 1 and isinstance(h.body, FunCall)):
        return False
    p, body = h.params[0], h.body
    if monoid(body.f) != "mult" or len(body.args) != 2:
        return False
    return all(isinstance(a, FunCall) and isinstance(a.f, n.Get) and a.f.i == k and len(a.args) == 1
               and isinstance(a.args[0], Param) and a.args[0].id == p.id for k, a in enumerate(body.args))


@dataclass(frozen=True)
class _Operands:
    """The pair as matrices: `x` (B, I, m) and `y` (B, m, J) over the batch axes along which both
    vary (b), only x (i), only y (j); and how a (B, I, J) result goes back to the batch axes."""

    x: np.ndarray
    y: np.ndarray
    shape: tuple[int, ...]  # the b, i, j axes' lengths, in that order
    dest: list[int]  # where each of them goes among the varying batch axes (kept in order)
    full: tuple[int, ...]  # the result's batch shape (size 1 where neither varies)

    def back(self, r: np.ndarray) -> np.ndarray:
        """A (B, I, J) result with the batch axes in their order."""
        r = np.moveaxis(r.reshape(self.shape), range(len(self.dest)), self.dest)
        return r.reshape(self.full)

    def forward(self, a: np.ndarray) -> np.ndarray:
        """A value of the batch shape (each axis full or 1) as (B, I, J), the inverse of `back`."""
        kept = np.broadcast_to(a, self.full).reshape([k for k in self.full if k > 1])
        return np.moveaxis(kept, self.dest, range(len(self.dest))).reshape(
            self.x.shape[0], self.x.shape[1], self.y.shape[2])


def _operands(ys: Any, d: int, dtype: type) -> _Operands | None:
    if not (isinstance(ys, Zipped) and ys.ndim == 1 and len(ys.parts) == 2):
        return None
    x, y = (np.asarray(p) for p in ys.parts)
    if not (x.dtype == y.dtype == dtype and x.ndim == y.ndim == d + 1):
        return None
    b, i, j = [], [], []  # type: list[int], list[int], list[int]  # batch axes along which both, only x, only y vary
    for ax in range(d):
        (b if x.shape[ax] > 1 and y.shape[ax] > 1 else i if x.shape[ax] > 1 else j if y.shape[ax] > 1
         else []).append(ax)
    m = x.shape[d]
    lens = {a: max(x.shape[a], y.shape[a]) for a in range(d)}
    size = [int(np.prod([lens[a] for a in axes], dtype=np.int64)) for axes in (b, i, j)]
    xm = np.moveaxis(x, b + i + [d], range(len(b + i) + 1)).reshape(size[0], size[1], m)  # (b.., i.., k, 1..)
    ym = np.moveaxis(y, b + [d] + j, range(len(b + j) + 1)).reshape(size[0], m, size[2])  # (b.., k, j.., 1..)
    order = b + i + j
    return _Operands(xm, ym, tuple(lens[a] for a in order), [sorted(order).index(a) for a in order],
                     tuple(lens[a] if a in order else 1 for a in range(d)))


def contract(acc: Any, ys: Any, d: int) -> np.ndarray | None:
    """`acc + sum_k x[..., k] * y[..., k]` over the reduced axis `d` of the float64 pair `ys`, in any
    order (precise mode), or None when `ys` is not a pair of float64 arrays of scalars (the caller
    then folds it the general way)."""
    ops = _operands(ys, d, np.float64)
    if ops is None:
        return None
    if ops.x.shape[1] == ops.y.shape[2] == 1:
        r = np.einsum("bk,bk->b", ops.x[:, 0], ops.y[:, :, 0])
    else:
        r = np.matmul(ops.x, ops.y)
    return np.add(acc, ops.back(r))


BLOCK = 1 << 20  # products the block fold of a float32 contraction materialises at once
MIN_COLUMNS = 64  # below this many columns (J), the block fold declines (at least 2: see below)
PARALLEL_WORK = 1 << 24  # from this many products on, the block fold uses every core


def contract_sequential(acc: Any, ys: Any, d: int) -> np.ndarray | None:
    """The same in float32 and in the exact order of the fold, `acc = acc + x_k * y_k` for k = 0,
    1, ... (each product and each sum rounded to float32), or None when `ys` is not a float32 pair
    of scalars. One pass by numpy's einsum where it keeps the order (lift.interpret.ordered: a start
    of at most one varying axis, finite operands), else in blocks (at least MIN_COLUMNS columns)."""
    ops = _operands(ys, d, np.float32)
    a = np.asarray(acc)
    if ops is None or a.dtype != np.float32:
        return None
    start = ops.forward(a)
    out = ordered_sum(start, ops.x, ops.y)
    if out is None and ops.y.shape[2] >= max(2, MIN_COLUMNS):
        out = _block_fold(start, ops.x, ops.y)
    return None if out is None else ops.back(out)


def _block_fold(start: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """For a block of rows, the products P[r, k, j] are made at once; `P[:, 0] += start` is the first
    step and numpy's reduction along the middle axis (not the fastest-varying one, so it adds one k
    after the other for every (r, j), without pairwise summation) the rest. Large contractions fold
    their blocks on all cores (threads: each output element is still made by one sequence of
    float32 operations)."""
    (nb, ni, m), nj = x.shape, y.shape[2]
    ys_ = np.ascontiguousarray(y)  # rows of k contiguous along j: the products' inner loop
    out = np.empty((nb, ni, nj), np.float32)
    rows = max(1, BLOCK // (m * nj))
    blocks = [(bi, r0, min(ni, r0 + rows)) for bi in range(nb) for r0 in range(0, ni, rows)]

    def run(part: list[tuple[int, int, int]]) -> None:
        prods = np.empty((min(rows, ni), m, nj), np.float32)
        with np.errstate(all="ignore"):  # and numpy's buffer no longer than a row of j (none copied)
            np.setbufsize(max(16, min(nj, 8192) // 16 * 16))
            for bi, r0, r1 in part:
                p = prods[: r1 - r0]
                np.multiply(x[bi, r0:r1, :, None], ys_[bi, None], out=p)
                np.add(start[bi, r0:r1], p[:, 0], out=p[:, 0])
                np.add.reduce(p, axis=1, out=out[bi, r0:r1])

    workers = min(cores(), len(blocks)) if nb * ni * nj * m >= PARALLEL_WORK else 1
    if workers <= 1:
        run(blocks)
    else:  # the blocks write disjoint outputs; numpy releases the GIL in each call
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(run, [blocks[w::workers] for w in range(workers)]))
    return out
