"""Reductions by a built-in associative operator over a batch axis, in numpy, in the exact order.

`fold(op, acc, xs, ax)` is `op(...op(op(acc, x_0), x_1)..., x_{n-1})` where `x_j` is slice `j` of
`xs` along axis `ax` (axes before `ax` are batch axes, axes after it the lanes of a vector). The
sequential semantics is kept for floats: `np.add.accumulate` adds left to right in the array's
dtype, and a Python loop over the reduced axis does the same with each step vectorised over the
batch. Integer `add`/`mult` (wrapping) and `max_`/`min_` (exact; a NaN propagates, as in numpy) do
not depend on the order. With `precise` (float64 references), float `add` and `mult` use numpy's
(pairwise) reduction.
"""

from __future__ import annotations

import numpy as np

UFUNCS = {"add": np.add, "mult": np.multiply, "max_": np.maximum, "min_": np.minimum}
LOOP_BATCH = 2048  # from this batch size on, loop over the reduced axis (each step vectorised)


def fold(op: str, acc: np.ndarray, xs: np.ndarray, ax: int, *, precise: bool = False,
         owned: bool = False) -> np.ndarray:
    """Fold the slices of `xs` along axis `ax` into `acc` with the built-in `op`, left to right;
    `owned`: `xs` is a fresh array that may be overwritten."""
    n = xs.shape[ax]
    if n == 0:
        return acc
    ufunc = UFUNCS[op]
    batch = int(np.prod(xs.shape[:ax], dtype=np.int64)) * int(np.prod(xs.shape[ax + 1:], dtype=np.int64))
    if batch >= LOOP_BATCH or n <= 2:  # a step per slice, each vectorised over the batch
        if op in ("max_", "min_"):
            return _loop_extreme(op, acc, xs, ax)
        return _loop(ufunc, acc, xs, ax)
    if xs.dtype.kind in "iu" or (precise and op in ("add", "mult")):  # the order does not matter
        return ufunc(acc, ufunc.reduce(xs, axis=ax, dtype=xs.dtype), dtype=xs.dtype)
    if op in ("max_", "min_"):
        return _extreme(op, acc, xs, ax)
    first = xs[(slice(None),) * ax + (slice(0, 1),)]  # a view, also of a 1-D array
    acc1 = np.expand_dims(np.asarray(acc), ax)
    if owned and xs.flags.writeable and np.broadcast_shapes(acc1.shape, first.shape) == first.shape:
        ufunc(acc1, first, out=first)  # the first step, then the rest in place
        ufunc.accumulate(xs, axis=ax, out=xs)
        return _take(xs, ax, n - 1)
    cat = _with_acc(acc, xs, ax)
    ufunc.accumulate(cat, axis=-1, out=cat)
    return cat[..., -1]


def _loop(ufunc: np.ufunc, acc: np.ndarray, xs: np.ndarray, ax: int) -> np.ndarray:
    """`acc = ufunc(acc, x_j)` for each slice, in place from the second step on (the first makes
    a fresh accumulator of the broadcast shape)."""
    acc = ufunc(acc, _take(xs, ax, 0))
    x = _take(xs, ax, 0)
    same = isinstance(acc, np.ndarray) and acc.dtype == xs.dtype and \
        np.broadcast_shapes(acc.shape, x.shape) == acc.shape
    for j in range(1, xs.shape[ax]):
        x = _take(xs, ax, j)
        if same:
            ufunc(acc, x, out=acc)
        else:
            acc = ufunc(acc, x)
    return acc


def _take(xs: np.ndarray, ax: int, j: int) -> np.ndarray:
    return xs[(slice(None),) * ax + (j,)]


def _with_acc(acc: np.ndarray, xs: np.ndarray, ax: int) -> np.ndarray:
    """A fresh array: `acc` followed by the slices of `xs`, along the last axis."""
    moved = np.moveaxis(xs, ax, -1)
    shape = np.broadcast_shapes(np.shape(acc), moved.shape[:-1])
    cat = np.empty(shape + (moved.shape[-1] + 1,), dtype=np.result_type(acc, xs))
    cat[..., 0] = acc
    cat[..., 1:] = moved
    return cat


def _loop_extreme(op: str, acc: np.ndarray, xs: np.ndarray, ax: int) -> np.ndarray:
    """`acc if acc > x or acc != acc else x` (max_; `<` for min_), one slice at a time: the
    first NaN met stays."""
    cmp = np.greater if op == "max_" else np.less
    for j in range(xs.shape[ax]):
        x = _take(xs, ax, j)
        acc = np.where(cmp(acc, x) | np.isnan(acc), acc, x)
    return acc


def _extreme(op: str, acc: np.ndarray, xs: np.ndarray, ax: int) -> np.ndarray:
    """The sequential max_/min_ at once: NaN where a NaN is met (np.maximum's reduction propagates
    it), else the extreme value, and on ties (0.0 == -0.0) the last one equal to it, as
    `acc if acc > x else x` keeps."""
    cat = _with_acc(acc, xs, ax)
    m = UFUNCS[op].reduce(cat, axis=-1)
    if not np.any(m == 0):
        return m
    last = cat.shape[-1] - 1 - np.argmax((cat == m[..., None])[..., ::-1], axis=-1)
    return np.where(m == 0, np.take_along_axis(cat, last[..., None], axis=-1)[..., 0], m)
