"""`max_` and `min_` propagate NaN as numpy's `np.maximum` / `np.minimum` do, in the interpreter and
in kernels, for every reduction order and chunking (issue 26 item 2)."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, Int, Size, fun, map, reduce, zip
from lift.rewrites.chunks import reduce_chunks

N = Size("N")
M = Size("M")
OPS = {"max": (lift.max_, -np.inf, np.max, np.maximum), "min": (lift.min_, np.inf, np.min, np.minimum)}


def _data(n: int, nans: tuple[int, ...], seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, n).astype(np.float32)
    x[list(nans)] = np.nan
    return x


def _same(got: object, want: object) -> None:
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))  # NaN equals NaN here


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("n, nans", [(3, (0,)), (3, (1,)), (3, (2,)), (3, ()), (4096, (1,)),
                                     (4096, (2049,)), (1 << 16, (40000,)), (1 << 16, (5, 65535))])
def test_a_reduction_with_a_nan_is_nan_interpreted_and_compiled(op: str, n: int, nans: tuple[int, ...]) -> None:
    f, z, ref, _ = OPS[op]
    prog = fun([Array(Float, N)], lambda x: reduce(f, z) << x)
    x = _data(n, nans)
    want = ref(x)
    _same(lift.interpret(prog, x), want)
    _same(lift.compile(prog)(x), want)  # the default chunks and their atomic combine


@pytest.mark.device
@pytest.mark.parametrize("combine", ["kernel", "atomic"])
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("size", [4, 64])
def test_every_chunking_and_combine_propagates_the_nan(op: str, combine: str, size: int) -> None:
    f, z, ref, _ = OPS[op]
    prog = fun([Array(Float, N)], lambda x: reduce_chunks(reduce(f, z), size=size, width=1,
                                                          combine=combine, pad=True, label="R") << x)
    k = lift.compile(prog, local_size=8)
    for nans in ((0,), (777,), (1000,), ()):
        x = _data(1001, nans, seed=size)
        _same(k(x), ref(x))
        _same(lift.interpret(prog, x), ref(x))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("rows, cols", [(3, 5), (3000, 4), (4, 3000)])
def test_row_reductions_batch_the_nan_per_row(op: str, rows: int, cols: int) -> None:
    """The interpreter's folds over a batch (a step per column, or all at once) and the kernel."""
    f, z, ref, _ = OPS[op]
    prog = fun([Array(Array(Float, M), N)], lambda a: map(lambda r: reduce(f, z) << r) << a)
    a = np.random.default_rng(1).uniform(-1, 1, (rows, cols)).astype(np.float32)
    a[0, 0] = a[1, cols - 1] = a[2, cols // 2] = np.nan
    a[-1, :] = 0.0
    a[-1, 1] = -0.0
    want = ref(a, axis=1)
    _same(lift.interpret(prog, a), want)
    _same(lift.compile(prog)(a), want)


@pytest.mark.parametrize("op", ["max", "min"])
def test_elementwise_extremes_are_numpys(op: str) -> None:
    f, _, _, ufunc = OPS[op]
    prog = fun([Array(Float, N), Array(Float, N)], lambda a, b: map(f) << zip(a, b))
    a = np.array([1.0, np.nan, 3.0, np.nan, -np.inf, 2.0], dtype=np.float32)
    b = np.array([np.nan, 1.0, 2.0, np.nan, 0.0, np.inf], dtype=np.float32)
    _same(lift.interpret(prog, a, b), ufunc(a, b))
    _same(lift.compile(prog)(a, b), ufunc(a, b))


def test_int_extremes_are_unchanged() -> None:
    prog = fun([Array(Int, N)], lambda x: reduce(lift.max_, -(2**31)) << x)
    x = np.random.default_rng(2).integers(-1000, 1000, 5000, dtype=np.int32)
    assert lift.interpret(prog, x) == lift.compile(prog)(x) == x.max()
