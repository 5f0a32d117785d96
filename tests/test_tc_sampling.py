"""The concrete sampler (constraints/sampling.py) on the big constants that programs with many
symbolic sizes give their spaces (TC's gconv: five nested maps over symbolic sizes): integer
arithmetic that leaves int64 is exact (Python integers), never an OverflowError or a wrapped value."""

from __future__ import annotations

import random

import numpy as np
import z3

from lift.constraints.sampling import Sampler, compile_formula


def test_products_past_int64_are_exact_not_an_overflow_error() -> None:
    x, y = z3.Ints("x y")
    big = [x * 4611686018427387904 * 4 + y <= 40000000000000000000, x >= 1]  # 2**64 * x + y
    s = Sampler({"x": range(1, 8), "y": range(0, 100)}, big)
    got = s.one(random.Random(0))
    assert got is not None and got["x"] in (1, 2)
    fn, _ = compile_formula(big[0])
    np.testing.assert_array_equal(np.asarray(fn({"x": np.arange(1, 5), "y": 99}), dtype=bool),
                                  [True, True, False, False])


def test_an_int64_product_that_would_wrap_keeps_its_sign() -> None:
    x = z3.Int("x")
    fn, _ = compile_formula(x * 3037000500 * 3037000500 > 0)  # 9.2234e18 * x: past 2**63 - 1
    assert np.asarray(fn({"x": np.arange(1, 4, dtype=np.int64)}), dtype=bool).all()
    neg, _ = compile_formula(-(x * 3037000500 * 3037000500) < 0)
    assert np.asarray(neg({"x": np.arange(1, 4, dtype=np.int64)}), dtype=bool).all()


def test_small_values_keep_int64_arrays() -> None:
    x, y = z3.Ints("x y")
    fn, _ = compile_formula(x * y + 3)
    r = fn({"x": np.arange(4, dtype=np.int64), "y": 5})
    assert r.dtype == np.int64 and r.tolist() == [3, 8, 13, 18]
