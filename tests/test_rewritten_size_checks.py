"""A program compiled from a rewritten form with symbolic sizes checks the divisibility its
rewrites added: a call with sizes the blocks do not divide is refused with the reason, never run
(it read past the arrays and returned wrong numbers silently)."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, reduce, transpose, zip
from lift import rewrites as rw
from lift.errors import LiftValueError

M, N, K = Size("M"), Size("N"), Size("K")


def matmul():
    return fun([Array(Array(Float, K), M), Array(Array(Float, N), K)], lambda a, b: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << (transpose << b)) << a)


@pytest.mark.device
def test_blocks_placed_for_other_sizes_refuse_a_call_they_do_not_divide() -> None:
    sizes = {"M": 64, "N": 64, "K": 256}
    prog = rw.auto_points(matmul(), sizes)
    space = rw.auto_space(prog, sizes)["auto_b0"]
    choice = {k: v[0] for k, v in space.items()}
    assert choice["skip"] is False and choice["rows"] > 1
    k = lift.compile(prog, choices={"auto_b0": choice})
    rng = np.random.default_rng(0)
    a, b = rng.random((64, 256), dtype=np.float32), rng.random((256, 64), dtype=np.float32)
    assert np.allclose(k(a, b), a @ b, rtol=1e-4)
    a, b = rng.random((12, 100), dtype=np.float32), rng.random((100, 20), dtype=np.float32)
    with pytest.raises(LiftValueError, match="needs .* to divide"):
        k(a, b)
