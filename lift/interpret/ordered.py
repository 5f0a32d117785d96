"""Exact-order float32 sums of products in one pass: numpy's einsum with the reduced axis outermost.

For `out[b, i, j] = start[b, i, j] + x[b, i, 0] * y[b, 0, j] + x[b, i, 1] * y[b, 1, j] + ...` (each
product rounded to float32, then added to the float32 accumulator, k = 0, 1, ... in order), numpy's
einsum `bik,bkj->bij` keeps the sequential order when its inner loop runs along j (y contiguous,
more than one column): for each k it does `out[b, i, :] += x[b, i, k] * y[b, k, :]`, which reads
and writes every output once per k but never reorders a sum (the loop along k would use partial
sums). Whether this numpy build's loop rounds the product before the add (no FMA contraction) and
keeps the order is checked once, on values where either would change the bits (`in_order`). The
longer of the output's axes is the inner loop: when it is i, the transposed product is summed
(out^T = y^T x^T, a float product commutes); large sums are cut into blocks of rows on every core.

Three things are outside what einsum reproduces bit for bit, and decline (None, the caller folds in
blocks): a start that is -0.0 somewhere or varies along both i and j (einsum starts from +0.0, so
a start is passed as one more first term whose products are the start, `s * 1`, exact), and
non-finite operands (with finite ones every NaN is the default NaN of inf - inf, whatever the
order of an add's operands; an input NaN or infinity could come out with another payload or sign).
"""

from __future__ import annotations

import functools
import logging
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

log = logging.getLogger("lift.interpret")

MIN_INNER = 64  # below this many outputs along the inner loop (i or j), decline: numpy's cost per
# inner loop would dominate (the threshold the block fold had for its columns)
TILE = 16  # columns copied at once by `contiguous` (16 float32: a cache line)
PARALLEL_WORK = 1 << 22  # from this many products on, blocks of outputs are summed on every core


def ordered_sum(start: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """`start + sum_k x[:, :, k, None] * y[:, k, None, :]` in the sequential float32 order, shape
    (B, I, J) for `x` (B, I, K), `y` (B, K, J) and `start` (B, I, J), or None (see the module)."""
    (nb, ni, m), nj = x.shape, y.shape[2]
    if max(ni, nj) < max(2, MIN_INNER) or min(nb, ni, nj, m) == 0 or not in_order():  # 1: a loop along k
        return None
    if not (_finite(x) and _finite(y) and _finite(start)):
        return None
    terms = _with_start(start, x, y)
    if terms is None:
        return None
    x, y = terms
    if nj >= ni:  # the longer of the output's axes is the inner loop
        return _sum_rows(x, contiguous(y))
    return _sum_rows(y.transpose(0, 2, 1), contiguous(x.transpose(0, 2, 1))).transpose(0, 2, 1)  # y^T x^T


def contiguous(a: np.ndarray) -> np.ndarray:
    """`a` (B, K, J) as a C-contiguous array; when its k axis is the closer-packed one (the transposed
    view of a row-major array), copied TILE columns at a time: each row of the copy gets a cache
    line per step, several times faster than numpy's copy of a large transposed view."""
    if a.flags.c_contiguous or abs(a.strides[1]) >= abs(a.strides[2]):
        return np.ascontiguousarray(a)
    out = np.empty(a.shape, a.dtype)
    for j0 in range(0, a.shape[2], TILE):
        out[:, :, j0:j0 + TILE] = a[:, :, j0:j0 + TILE]
    return out


def _finite(a: np.ndarray) -> bool:
    """No infinity and no NaN in `a` (numpy's max and min propagate a NaN)."""
    return bool(np.isfinite(a.max()) and np.isfinite(a.min()))


def _with_start(start: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """`x`, `y` with a first term k whose products are `start` (or as they are where `start` is +0.0
    everywhere, einsum's own start), or None when `start` has a -0.0 (einsum's +0.0 + -0.0 is +0.0)
    or is no such product: it varies along both i and j."""
    if np.any(np.signbit(start) & (start == 0)):
        return None
    if not start.any():
        return x, y
    nb, ni, nj = start.shape
    if np.array_equal(start, np.broadcast_to(start[:, :, :1], start.shape)):  # s[b, i] * 1
        first_x, first_y = start[:, :, :1], np.ones((nb, 1, nj), np.float32)
    elif np.array_equal(start, np.broadcast_to(start[:, :1, :], start.shape)):  # 1 * s[b, j]
        first_x, first_y = np.ones((nb, ni, 1), np.float32), start[:, :1, :]
    else:
        return None
    return np.concatenate([first_x, x], axis=2), np.concatenate([first_y, y], axis=1)


def _sum_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """einsum `bik,bkj->bij` (y contiguous, so the inner loop runs along j), in blocks of rows (or
    of the batch) on every core when the work is large: the blocks write disjoint outputs, and
    numpy releases the GIL in einsum's loops."""
    (nb, ni, m), nj = x.shape, y.shape[2]
    out = np.empty((nb, ni, nj), np.float32)
    workers = min(cores(), max(nb, ni)) if nb * ni * nj * m >= PARALLEL_WORK else 1
    if ni >= workers:
        cut = np.linspace(0, ni, workers + 1).astype(int)
        parts = [(slice(None), slice(a, b)) for a, b in zip(cut[:-1], cut[1:], strict=True)]
    else:
        cut = np.linspace(0, nb, workers + 1).astype(int)
        parts = [(slice(a, b), slice(None)) for a, b in zip(cut[:-1], cut[1:], strict=True)]

    def run(part: tuple[slice, slice]) -> None:
        bs, rs = part
        with np.errstate(all="ignore"):  # a worker thread has numpy's default error state
            np.einsum("bik,bkj->bij", x[bs, rs], y[bs], out=out[bs, rs])

    if workers <= 1:
        run(parts[0])
    else:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(run, parts))
    return out


@functools.cache
def in_order() -> bool:
    """Whether this numpy's einsum `bik,bkj->bij` (y contiguous) gives the bits of the sequential
    loop, on values where a fused multiply-add (-1 + a * a with a = 1 + 2^-12), a reordered or a
    partial sum (2^24 + 1 + 1 + ... stays 2^24 in order) would differ; checked once, for several
    row lengths (vector loops and their tails, rows of every alignment)."""
    a = np.float32(1 + 2.0**-12)
    rng = np.random.default_rng(7)
    for nj in (2, 3, 5, 8, 16, 17, 31, 64, 100):
        x = rng.standard_normal((2, 3, 40)).astype(np.float32)
        y = rng.standard_normal((2, 40, nj)).astype(np.float32)
        y[0, 0], y[0, 1], y[0, 2:] = 1.0, a, 1.0
        x[0, 0, :2] = -1.0, a  # -1 + a * a: the product rounded first, or fused
        x[0, 1], x[0, 1, :2] = 1.0, (2.0**24, 0.0)  # 2^24 + 0 + 1 + 1 + ...
        want = _loop(x, y)
        got = np.einsum("bik,bkj->bij", x, np.ascontiguousarray(y))
        if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
            log.debug("einsum does not keep the sequential float32 order here (%d columns)", nj)
            return False
    return True


def _loop(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The sequential semantics, one k at a time: the oracle of `in_order`."""
    acc = np.zeros((x.shape[0], x.shape[1], y.shape[2]), np.float32)
    for k in range(x.shape[2]):
        acc = np.add(acc, np.multiply(x[:, :, k, None], y[:, k, None, :]))
    return acc


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
