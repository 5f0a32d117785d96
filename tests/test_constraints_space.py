"""Sampled mappings of the examples, realised and run against the interpreter (and on PoCL)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, split, zip
from lift.constraints import joint_space, mapping_space, tuning_space
from lift.errors import NotSynchronisableError
from tests.programs import conv_program, dot_program, gemv_program, matmul_program, mult, rand, stencil2d_program

N, T = Size("N"), Size("T")


def tiled_dot():
    """dot with partial sums of T-element chunks: two kernels (the second sequential)."""
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: lift.reduce(lift.add, 0.0) << map(lambda c: lift.reduce(lift.add, 0.0) << map(mult) << c)
               << split(T) << zip(x, y))


EXAMPLES = {
    "dot": (tiled_dot, {"N": 240}, lambda: (rand(240), rand(240, seed=1))),
    "gemv": (gemv_program, {"M": 24, "N": 16}, lambda: (rand(24, 16), rand(16))),
    "matmul": (matmul_program, {"M": 8, "N": 12, "K": 16}, lambda: (rand(8, 16), rand(12, 16))),
    "stencil2d": (stencil2d_program, {"H": 12, "W": 10}, lambda: (rand(3, 3), rand(12, 10))),
    "conv": (lambda: conv_program(3, 3, 1, 1), {"H": 6, "W": 6, "C": 2, "M": 4},
             lambda: (rand(6, 6, 2), rand(4, 3, 3, 2))),
}


def _space(name: str):
    make, sizes, data = EXAMPLES[name]
    prog = make()
    return prog, joint_space(prog, "pocl-cpu", sizes=sizes), data()


def _run(space, choice, args, ref, compiled: bool) -> str:
    low = space.realise(choice)
    if not compiled:
        return "ok" if np.allclose(lift.interpret(low, *args), ref, rtol=1e-4, atol=1e-5) else "WRONG"
    from lift.compile import compile

    nd = space.ndrange(choice)
    gs, ls = nd if nd is not None else (None, None)
    try:
        k = compile(low, global_size=gs, local_size=ls)
    except NotSynchronisableError:
        return "not synchronisable"
    return "ok" if np.allclose(k(*args), ref, rtol=1e-4, atol=1e-5) else "WRONG"


def _check(name: str, n: int, compiled: bool) -> None:
    prog, space, args = _space(name)
    ref = lift.interpret(dot_program() if name == "dot" else prog, *args)
    t0 = time.perf_counter()
    samples = space.sample(n, seed=7)
    t1 = time.perf_counter()
    count = space.count(limit=n)  # dot has one mapping: its map is fused into the reduction
    want = n if count is None else min(n, count)
    assert len(samples) == want and len({tuple(sorted(s.items())) for s in samples}) == want
    outcome = {}
    for s in samples:
        r = _run(space, s, args, ref, compiled)
        outcome[r] = outcome.get(r, 0) + 1
        assert r != "WRONG", (name, s, str(space.realise(s)))
    where = "PoCL" if compiled else "interpreter"
    print(f"{name}: {n} sampled in {t1 - t0:.1f}s, on the {where}: " +
          ", ".join(f"{v} {k}" for k, v in sorted(outcome.items())) + f" ({time.perf_counter() - t1:.1f}s)")


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_fifty_sampled_mappings_match_the_interpreter(name: str) -> None:
    _check(name, 50, compiled=False)


@pytest.mark.device
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_sampled_mappings_run_on_pocl(name: str) -> None:
    _check(name, 12, compiled=True)


@pytest.mark.slow
@pytest.mark.device
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_fifty_sampled_mappings_run_on_pocl(name: str) -> None:
    _check(name, 50, compiled=True)


def test_samples_are_spread_not_neighbours() -> None:
    _, space, _ = _space("conv")
    samples = space.sample(30, seed=0)
    codes = {tuple(s[m] for m in space.context.maps) for s in samples}
    assert len(codes) >= 10  # many distinct mappings, not one mapping with 30 thread configurations
    assert len({s["local_size_0"] for s in samples}) >= 3


def test_different_seeds_draw_different_valid_samples() -> None:
    _, space, _ = _space("matmul")
    a, b = space.sample(5, seed=3), space.sample(5, seed=4)
    assert a != b and all(space.is_valid(s) for s in a + b)


def test_work_group_size_limit_from_the_device() -> None:
    prog, sizes = matmul_program(), {"M": 64, "N": 1024, "K": 16}
    sp = joint_space(prog, "mali-g72", sizes=sizes)
    for s in sp.sample(20, seed=0):
        assert s["local_size_0"] * s["local_size_1"] * s["local_size_2"] <= 384
    assert sp.is_valid({"m0": 20, "m1": 10, "local_size_0": 256, "groups_0": 64})
    assert not sp.is_valid({"m0": 20, "m1": 10, "local_size_0": 512})  # Mali: 384 work-items
    assert not sp.is_valid({"m0": 20, "m1": 10, "groups_0": 65})  # more groups than rows


def test_mapping_space_of_the_plain_examples() -> None:
    """dot's map(mult) is fused into its reduction (no temporary): no map variable is left."""
    assert mapping_space(dot_program(), "pocl-cpu").count() == 1
    assert mapping_space(gemv_program(), "pocl-cpu").count() == 4
    sp = tuning_space(tiled_dot(), "pocl-cpu", sizes={"N": 240})
    assert sp.count() == 20  # the divisors of 240
