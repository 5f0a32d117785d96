"""A one-dimensional `local_size` given to a kernel that uses two dimensions (found by tests/fuzz.py).

`ndrange` zipped the kernel's trip counts with the requested local size, so a 1-tuple cut the
global size to one dimension and only the first row was computed (`map(map(relu)) << x` with
`local_size=7`: wrong results). The local size is now padded with 1s to the kernel's dimensions."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, fun, map, pad, slide, user_fun
from lift.testing import assert_same

relu = user_fun(lambda a: a if a > 0 else 0.0, [Float], Float, name="relu")
halve = user_fun(lambda a: a * 0.5 - 0.5, [Float], Float, name="halve")


@pytest.mark.parametrize("local", [1, 7, 64])
def test_a_one_dimensional_local_size_keeps_every_dimension_of_a_2d_kernel(local):
    prog = fun([Array(Array(Float, 40), 24)], lambda x: map(map(relu)) << x)
    x = np.random.default_rng(0).standard_normal((24, 40)).astype(np.float32)
    k = lift.compile(prog, local_size=local)
    (nd,) = k.ndrange
    assert len(nd.global_size) == len(nd.local_size) == 2
    assert [int(str(s)) for s in nd.local_size] == [local, 1]
    assert_same(lift.interpret(prog, x), k(x))


def test_a_recomputed_slide_with_a_large_work_group():
    prog = fun([Array(Float, 4)], lambda x: slide(3, 3) << map(halve) << map(halve) << pad(1, 1, 0.0) << x)
    x = np.arange(4, dtype=np.float32)
    assert_same(lift.interpret(prog, x), lift.compile(prog, local_size=256)(x))
