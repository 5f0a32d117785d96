"""A matrix product whose left operand's rows are the given array's columns (`A^T B`: `map(r =>
..) << transpose << a`) packs A into panels as well as B by default (rewrites/auto_nest.py): the
blocks' rows would otherwise stride a cache line per step of the reduction."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, fun, map, reduce, transpose, zip
from lift.rewrites import auto_space
from lift.rewrites.auto import default_points


def product(m: int, k: int, n: int, a_t: bool, b_t: bool):
    """C (m x n) from a given as A (m x k) or A^T (k x m) and b as B (k x n) or B^T (n x k)."""
    def dot(r, c):
        return reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)

    ta = Array(Array(Float, m), k) if a_t else Array(Array(Float, k), m)
    tb = Array(Array(Float, k), n) if b_t else Array(Array(Float, n), k)
    return fun([ta, tb], lambda a, b: map(lambda r: map(lambda c: dot(r, c)) << (b if b_t else transpose << b))
               << (transpose << a if a_t else a))


@pytest.mark.parametrize("a_t,b_t", [(True, False), (True, True), (False, False), (False, True)])
def test_a_given_transposed_is_packed_first(a_t: bool, b_t: bool) -> None:
    pointed = default_points(product(256, 512, 128, a_t, b_t))
    space = next(v for k, v in auto_space(pointed, {}).items() if k.startswith("auto_b"))
    if a_t:
        assert space["pack"][0] == "ab", space
    else:
        assert space["pack"][0] != "ab", space


@pytest.mark.device
def test_compiled_with_both_panels_equals_numpy() -> None:
    prog = product(256, 512, 128, True, False)
    compiled = lift.compile(prog)
    lab = next(k for k in compiled.choices.points if k.startswith("auto_b"))
    assert compiled.choices.points[lab]["pack"] == "ab", compiled.choices
    rng = np.random.default_rng(0)
    a, b = rng.random((512, 256), dtype=np.float32) - 0.5, rng.random((512, 128), dtype=np.float32) - 0.5
    np.testing.assert_allclose(compiled(a, b), a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
