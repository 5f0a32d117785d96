"""lift.compile chooses what the user left open in rewrite points and records it in Program.choices."""

from __future__ import annotations

import numpy as np

import lift
from lift import Array, Float, Size, fun, map, reduce, zip
from lift import rewrites as rw

N = Size("N")


def _dot(n):
    return fun([Array(Float, n), Array(Float, n)],
               lambda x, y: rw.split_reduce(reduce(lift.add, 0.0) << map(lift.mult), label="R") << zip(x, y))


def test_open_tile_size_is_chosen_and_recorded_with_concrete_sizes():
    k = lift.compile(_dot(4096))
    t = k.choices["T_R"]
    assert k.choices["R"] == {"skip": False} and 1 < t < 4096 and 4096 % t == 0
    assert "T_R" not in k.source
    x = np.random.default_rng(0).random(4096, dtype=np.float32)
    assert np.isclose(k(x, x), float(x.astype(np.float64) @ x), rtol=1e-4)


def test_symbolic_sizes_get_the_tile_size_valid_for_every_size():
    k = lift.compile(_dot(N))
    assert k.choices["T_R"] == 1 and "T_R" not in k.source
    x = np.random.default_rng(1).random(999, dtype=np.float32)
    assert np.isclose(k(x, x), float(x.astype(np.float64) @ x), rtol=1e-4)


def test_given_tuning_value_is_kept():
    k = lift.compile(_dot(4096), choices={"T_R": 128})
    assert k.choices["T_R"] == 128
