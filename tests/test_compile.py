"""The pipeline: `compile(expr)` against the interpreter, and the high-level test."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, join, map, map_glb, map_seq, reduce, reduce_seq, split, to_global, zip
from lift.compile import compile, is_high_level

N, M = Size("N"), Size("M")


def test_high_level_detection() -> None:
    assert is_high_level(fun([Array(Float, N)], lambda x: map(lift.id) << x))
    assert is_high_level(fun([Array(Float, N)], lambda x: reduce(lift.add, 0.0) << x))
    assert not is_high_level(fun([Array(Float, N)], lambda x: map_glb(lift.id) << x))
    assert not is_high_level(fun([Array(Float, N)], lambda x: reduce_seq(lift.add, 0.0) << x))


def test_a_map_of_layout_is_a_view_not_high_level() -> None:
    rows = lambda a: map(join) << map(split(2)) << a  # noqa: E731
    prog = fun([Array(Array(Float, N), M)],
               lambda a: map_glb(to_global(lambda r: reduce_seq(lift.add, 0.0) << r)) << rows(a))
    assert not is_high_level(prog)


def rand(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape)).random(shape, dtype=np.float32)


PROGRAMS = {
    "map_glb": (lambda: fun([Array(Float, N)], lambda x: map_glb(lambda v: v * 2.0 + 1.0) << x), lambda: (rand(37),)),
    "dot": (lambda: fun([Array(Float, N), Array(Float, N)],
                        lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y)),
            lambda: (rand(64), rand(64))),
    "gemv": (lambda: fun([Array(Array(Float, N), M), Array(Float, N)],
                         lambda a, v: map_glb(to_global(lambda r: reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0)
                                                        << zip(r, v))) << a),
             lambda: (rand(9, 16), rand(16))),
    "map_seq in map_glb": (lambda: fun([Array(Array(Float, N), M)], lambda a: map_glb(map_seq(lift.id)) << a),
                           lambda: (rand(5, 7),)),
}


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_matches_interpreter(name: str, tmp_path) -> None:
    make, args = PROGRAMS[name]
    prog, xs = make(), args()
    k = compile(prog, cache_dir=tmp_path)
    np.testing.assert_allclose(k(*xs), lift.interpret(prog, *xs), rtol=1e-5, atol=1e-5)
    assert k.kernels and "kernel" in k.source


@pytest.mark.device
def test_choices_are_kept_and_time_is_positive(tmp_path) -> None:
    prog = PROGRAMS["map_glb"][0]()
    k = compile(prog, choices={"A": 30}, cache_dir=tmp_path)
    assert k.choices == {"A": 30}
    assert all(t > 0 for t in k.time(rand(1024), repeat=2))


# ------------------------------------------------------------ per-kernel sizes


def _two_stage_dot():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import dot

    return dot.two_stage(), dot.inputs(14)


@pytest.mark.device
def test_one_local_size_applies_to_the_kernels_with_work_groups(tmp_path) -> None:
    prog, (x, y) = _two_stage_dot()
    k = compile(prog, local_size=32, cache_dir=tmp_path)
    sizes = {r.kernel: r.local_size for r in k.ndrange}
    assert sizes["partial"] == (32,) and sizes["final"] is None  # the map_glb kernel keeps its default
    np.testing.assert_allclose(k(x, y), [np.dot(x.astype(np.float64), y)], rtol=1e-4)


@pytest.mark.device
def test_local_size_per_kernel(tmp_path) -> None:
    prog, (x, y) = _two_stage_dot()
    k = compile(prog, local_size={"partial": 16, "final": 1}, cache_dir=tmp_path)
    sizes = {r.kernel: r.local_size for r in k.ndrange}
    assert sizes == {"partial": (16,), "final": (1,)}
    np.testing.assert_allclose(k(x, y), [np.dot(x.astype(np.float64), y)], rtol=1e-4)


def test_a_size_for_an_unknown_kernel_is_an_error() -> None:
    prog, _ = _two_stage_dot()
    with pytest.raises(lift.LiftValueError, match="local_size names no kernel nope; the kernels are final, partial"):
        compile(prog, local_size={"nope": 8})


def test_one_size_for_a_single_map_glb_kernel_still_applies() -> None:
    from lift.codegen import generate

    plan = generate(PROGRAMS["map_glb"][0](), local_size=8, global_size=64)
    assert plan.launches[0].local_size == (8,) and plan.launches[0].global_size == (64,)
