"""Open tuning values (rewrites/choose.py): each variable gets a value in the middle of its own
valid values, however many variables a program has. Two reductions in one kernel that are alike
get what one of them alone gets, and the compiled program equals the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, fun, map, reduce, user_fun, zip

N = 1024


def _dot(r, x):
    return reduce(lift.add, 0.0) << map(lift.mult) << zip(r, x)


def _one():
    return fun([Array(Array(Float, N), N), Array(Float, N)], lambda a, x: map(lambda r: _dot(r, x)) << a)


def _combine(ax: float, bx: float) -> float:
    return ax - 2.0 * bx


combine = user_fun(_combine, [Float, Float], Float, name="combine")


def _two():
    return fun([Array(Array(Float, N), N), Array(Array(Float, N), N), Array(Float, N)], lambda a, b, x: map(
        lambda rows: combine(_dot(rows[0], x), _dot(rows[1], x))) << zip(a, b))


def _tuning(prog) -> dict[str, int]:
    return {k: v for k, v in prog.choices.tuning.items() if k.startswith("T_")}


def test_two_alike_reductions_get_the_value_one_alone_gets() -> None:
    one = _tuning(lift.compile(_one(), cache_dir=False))
    prog = lift.compile(_two(), cache_dir=False)
    two = _tuning(prog)
    assert len(one) == 1 and len(two) == 2, (one, two)
    (alone,) = one.values()
    assert set(two.values()) == {alone}, f"{two} where one reduction alone gets {alone}"
    rng = np.random.default_rng(3)
    a, b = rng.random((N, N), dtype=np.float32) - 0.5, rng.random((N, N), dtype=np.float32) - 0.5
    x = rng.random(N, dtype=np.float32) - 0.5
    want = np.asarray(lift.interpret(_two(), a, b, x))
    np.testing.assert_allclose(prog(a, b, x), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_middle_of_each_variable_is_valid_and_central(seed: int) -> None:
    from lift.rewrites.choose import _middle

    class Grid:  # a space of two variables with the constraint t0 * t1 <= 32
        def is_valid(self, c: dict[str, int]) -> bool:
            return c.get("t0", 1) * c.get("t1", 1) <= 32

    values = [1, 2, 4, 8, 16, 32]
    rng = np.random.default_rng(seed)
    cands = [{"t0": int(p), "t1": int(q)} for p in values for q in values if p * q <= 32]
    cands = [cands[i] for i in rng.permutation(len(cands))]
    got = _middle(Grid(), cands, ["t0", "t1"])
    assert got["t0"] == 8, got  # the middle of t0's values 1..32
    assert Grid().is_valid(got)
    assert got["t1"] == 4, got  # t1's middle, 8, does not go with t0 = 8: the nearest smaller value


def test_a_middle_that_extends_to_no_sampled_value_falls_back_to_a_valid_sample() -> None:
    from lift.rewrites.choose import _middle

    names = ["t0", "t1", "t2"]
    sampled = ((1, 1, 1), (4, 4, 4), (16, 1, 1), (64, 64, 64), (1, 16, 64))
    cands = [{"t0": t[0], "t1": t[1], "t2": t[2]} for t in sampled]
    solutions = [tuple(c.values()) for c in cands] + [(16, 16, 3)]  # one the samples do not show

    class Listed:
        def is_valid(self, c: dict[str, int]) -> bool:
            return any(all(c[k] == s[i] for i, k in enumerate(names) if k in c) for s in solutions)

    got = _middle(Listed(), cands, names)  # t0 = 16, t1 = 16 extend only to t2 = 3
    assert got == {"t0": 4, "t1": 4, "t2": 4}, got  # the middle sample
