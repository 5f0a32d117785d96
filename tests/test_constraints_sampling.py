"""The concrete sampler (constraints/sampling.py): formulas evaluated as z3 does, samples valid
and distinct, z3 as the fallback, preference search for the tuner's seeds."""

from __future__ import annotations

import random

import numpy as np
import pytest
import z3
import z3.z3util

from lift.constraints import joint_space
from lift.constraints.model import Constraint, Model
from lift.constraints.prefer import _complete_fast, complete
from lift.constraints.sampling import Sampler, compile_formula
from tests.programs import conv_program, matmul_program

X, Y = z3.Ints("x y")
FORMULAS = [
    z3.And(X * Y - 3 >= -X, z3.Or(X % 4 == 1, (X + Y) / 3 == 2)),
    z3.Implies(X > 2, z3.Distinct(X, Y, -Y)),
    z3.If(X - Y < 0, X % 3, (-X) / 2) == Y % 5,
    z3.Not(X / (Y - 2) == 1),  # a zero divisor: uninterpreted in z3
    z3.And((X + 1) * (X + 1) > 4, (X + 1) * (X + 1) < 50),  # z3 prints a shared term with `let`
]


def _z3_holds(f, x: int, y: int) -> bool:
    s = z3.Solver()
    s.add(X == x, Y == y, f)
    return s.check() == z3.sat


def test_compiled_formulas_agree_with_z3_elementwise() -> None:
    xs = np.arange(-7, 8)
    for f in FORMULAS:
        fn, names = compile_formula(f)
        assert names == {str(v) for v in z3.z3util.get_vars(f)}
        for y in (-4, 0, 2, 3, 9):
            got = np.broadcast_to(fn({"x": xs, "y": y}), xs.shape)
            for x, g in zip(xs.tolist(), got.tolist()):
                if f is FORMULAS[3] and y == 2:
                    continue  # z3 may interpret x/0 as anything; the sampler's choice is confirmed by z3
                assert bool(g) == _z3_holds(f, x, y), (str(f), x, y)


def _model(extra=()) -> Model:
    m = Model()
    a, b, c = m.var("a", range(1, 13)), m.var("b", (1, 2, 4, 8, 16)), m.var("c", range(1, 300))
    for f in (a * c == 240, z3.Or(b <= a, b == 16), (c % b) == 0, *extra):
        m.add(Constraint("test", (), str(f), f))
    return m


def _valid(m: Model, s: dict) -> bool:
    a, b, c = s["a"], s["b"], s["c"]
    return a * c == 240 and (b <= a or b == 16) and c % b == 0


def test_samples_are_valid_distinct_and_seeded() -> None:
    m = _model()
    got = m.sample(200, seed=3)
    assert all(_valid(m, s) for s in got)
    assert len({tuple(sorted(s.items())) for s in got}) == len(got)
    assert m.count() == len(got)  # a small space: every solution found (z3 completes what the sampler missed)
    assert m.sample(5, seed=1) == m.sample(5, seed=1) and m.sample(5, seed=1) != m.sample(5, seed=2)


def test_a_formula_the_sampler_cannot_read_is_left_to_z3() -> None:
    a = z3.Int("a")
    even = z3.Xor(a % 2 == 0, a > 100)  # a even (a <= 12); xor is not compiled: z3 rejects odd draws
    m = _model([even])
    assert m._sampler().skipped == 1
    got = m.sample(10, seed=0)
    assert got and all(_valid(m, s) and s["a"] % 2 == 0 for s in got)


def test_an_unsatisfiable_model_samples_nothing() -> None:
    m = _model([z3.Int("a") > 12])
    assert m.sample(5) == []


def test_joint_space_samples_are_valid_and_cheap_to_draw() -> None:
    space = joint_space(conv_program(3, 3, 1, 1), "pocl-cpu", sizes={"H": 6, "W": 6, "C": 2, "M": 4})
    fast = space.model._sampler()
    assert fast is not None and fast.skipped == 0 and fast.block
    rng = random.Random(0)
    drawn = [fast.one(rng) for _ in range(30)]
    assert sum(d is not None for d in drawn) >= 25  # the concrete search rarely gives up
    assert all(space.model.is_valid(d) for d in drawn if d is not None)
    samples = space.sample(30, seed=0)
    assert len(samples) == 30 and all(space.is_valid(s) for s in samples)


@pytest.mark.parametrize("program, sizes", [
    (matmul_program, {"M": 64, "N": 256, "K": 16}),
    (lambda: conv_program(3, 3, 1, 1), {"H": 10, "W": 12, "C": 4, "M": 8}),
])
def test_samples_of_a_fully_compiled_space_need_no_z3_confirmation(program, sizes) -> None:
    """`Model.sample` skips the z3 check when the sampler compiled every constraint: z3 (the
    oracle) must accept every sample it returns."""
    space = joint_space(program(), "pocl-cpu", sizes=sizes)
    assert space.model._sampler().skipped == 0
    samples = space.model.sample(60, seed=5)
    assert len(samples) >= 30
    assert all(space.model.is_valid(s) for s in samples)


def test_seed_completion_keeps_its_preferences() -> None:
    space = joint_space(matmul_program(), "pocl-cpu", sizes={"M": 64, "N": 256, "K": 16})
    fast = _complete_fast(space, {})
    assert fast is not None and space.is_valid(fast)
    for lab, site in space.context.maps.items():
        assert fast[lab] == (0 if site.outer else 30)  # top-level maps global, inner ones sequential
    assert complete(space, {}) == fast
    assert _complete_fast(space, {"local_size_0": 2}) is not None
    assert _complete_fast(space, {"local_size_0": 2})["local_size_0"] == 2
    assert _complete_fast(space, {"nonsense": 1}) is None


def test_the_block_table_holds_exactly_the_valid_small_combinations() -> None:
    m = _model()
    s = Sampler(m.domains, [c.formula for c in m.constraints])
    assert s.block == ["b", "a"]  # domains of 5 and 12 values; c (299 values) is not enumerated
    rows = set(zip(s.rows["a"].tolist(), s.rows["b"].tolist()))
    assert rows == {(a, b) for a in range(1, 13) for b in (1, 2, 4, 8, 16) if b <= a or b == 16}
