"""Automatic rewrite points (`lift.rewrites.auto_points`, `reduce_chunks`) and `lift.tune` on
programs the user wrote without points: dot finds the chunked float8 two-stage version."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, reduce, zip
from lift import rewrites as rw
from lift.explore import tune
from lift.explore.points import is_default
from lift.interpret import interpret
from tests.programs import dot_program, gemv_program, mult, rand

N, M = Size("N"), Size("M")


def _auto_labels(expr) -> dict[str, str]:
    return {lab: p.kind for lab, p in rw.points(expr).items() if rw.is_auto(lab)}


def test_auto_points_wrap_associative_reductions_in_dot_and_gemv() -> None:
    dot = rw.auto_points(dot_program(), {"N": 1 << 16})
    assert _auto_labels(dot) == {"auto_r0": "reduce_chunks"}
    assert rw.auto_space(dot, {"N": 1 << 16}) == {"auto_r0": {
        "skip": (False, True), "width": (8, 16, 4, 1), "combine": ("kernel", "atomic"), "tail": (False, True),
        "pad": (False, True)}}
    gemv = rw.auto_points(gemv_program(), {"M": 8, "N": 1024})
    assert _auto_labels(gemv) == {"auto_r0": "reduce_chunks"}
    assert rw.auto_space(rw.auto_points(dot_program(), {"N": 1028}), {"N": 1028})["auto_r0"]["width"] == (4, 1)


def test_auto_points_leave_short_reductions_and_user_points_alone() -> None:
    short = dot_program()
    assert rw.auto_points(short, {"N": 64}) is short
    tiled = fun([Array(Float, N), Array(Float, N)],
                lambda x, y: rw.split_reduce(lambda p: reduce(lift.add, 0.0) << map(mult) << p, label="R")
                << zip(x, y))
    assert rw.auto_points(tiled, {"N": 1 << 16}) is tiled  # nothing placed inside or around a user point
    non_monoid = fun([Array(Float, N)], lambda x: reduce(lift.add, 1.0) << x)  # 1 is not add's neutral
    assert not _auto_labels(rw.auto_points(non_monoid, {"N": 1 << 16}))


@pytest.mark.parametrize("width", [1, 4, 8, 16])
@pytest.mark.parametrize("make, args", [
    (dot_program, lambda: (rand(1 << 12), rand(1 << 12, seed=1))),
    (gemv_program, lambda: (rand(4, 256), rand(256))),
])
def test_reduce_chunks_preserves_the_meaning(make, args, width) -> None:
    xs = args()
    prog = rw.auto_points(make())  # symbolic sizes: every associative reduction is wrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the point must apply, not be skipped
        out = rw.apply_all(prog, {"auto_r0": {"width": width, "size": 8}})
    assert not rw.points(out)
    np.testing.assert_allclose(interpret(out, *xs), interpret(make(), *xs), rtol=1e-4)


def test_width_16_is_left_out_for_functions_that_crash_pocl_with_it() -> None:
    class Fun:
        c_source = "float f(float a, float b) { return fma(a, b, 1.0f); }"

    assert rw.chunks.safe_widths([Fun()]) == (8, 4, 1)
    assert rw.chunks.safe_widths([mult, None]) == (8, 16, 4, 1)


def test_reduce_chunks_refuses_a_width_for_other_operators() -> None:
    maxred = fun([Array(Float, N)], lambda x: reduce(lift.max_, 0.0) << x)
    prog = rw.auto_points(maxred, {"N": 1 << 12})
    assert rw.auto_space(prog, {"N": 1 << 12})["auto_r0"]["width"] == (1,)
    with pytest.warns(lift.errors.RewritePointSkipped, match="needs the reduction to be an addition"):
        rw.apply_all(prog, {"auto_r0": {"width": 8, "size": 32}})
    out = rw.apply_all(prog, {"auto_r0": {"width": 1, "size": 32}})
    x = rand(1 << 12)
    assert interpret(out, x) == pytest.approx(float(x.max()))


def _best_time(prog, args, rounds: int = 3, repeat: int = 10) -> float:
    """The fastest of `rounds` x `repeat` runs (robust to a noisy shared machine)."""
    return min(min(prog.time(*args, repeat=repeat)) for _ in range(rounds))


@pytest.mark.device
@pytest.mark.requires_pocl  # Intel's compiler runs the one-work-item loop over 2^18 floats in 0.037 ms
def test_tuning_plain_dot_beats_the_default_lowering() -> None:
    x, y = rand(1 << 18), rand(1 << 18, seed=1)
    res = tune(dot_program(), x, y, budget=120, trials=8, db=False, progress=False)  # trials: not load-dependent
    for r in res.history:  # every candidate was checked against the interpreter, or rejected
        assert (r.ok and r.checked) or (not r.ok and r.reason)
    assert is_default(res.history[0].candidate)
    assert np.allclose(res.best(x, y), np.dot(x.astype(np.float64), y), rtol=1e-3)
    won = res.best_record.candidate.points.get("auto_r0", {})
    if is_default(res.best_record.candidate):  # compile's default chunks the reduction itself (default_reduction)
        won = res.best.choices.points.get("auto_r0", {})
    assert won and not won.get("skip")
    default = lift.compile(dot_program(), choices={})  # the solver's form: one work-item (not the default)
    t_default, t_best = _best_time(default, (x, y)), _best_time(res.best, (x, y))
    assert t_best * 1.5 <= t_default, f"tuned {t_best * 1e3:.3f} ms vs default {t_default * 1e3:.3f} ms"


@pytest.mark.device
def test_tuning_plain_gemv_finds_a_chunked_reduction() -> None:
    a, v = rand(256, 1024), rand(1024)
    res = tune(gemv_program(), a, v, budget=120, trials=8, db=False, progress=False)
    assert np.allclose(res.best(a, v), a.astype(np.float64) @ v, rtol=1e-3)
    won = res.best_record.candidate.points.get("auto_r0", {})
    if is_default(res.best_record.candidate):  # compile's default chunks the rows itself (default points)
        won = res.best.specialised(a, v).choices.points.get("auto_r0", {})
    assert won and not won.get("skip")
    t_generic = _best_time(lift.compile(gemv_program(), specialise=False), (a, v))  # one row per work-item
    assert _best_time(res.best, (a, v)) * 1.5 <= t_generic


@pytest.mark.device
def test_auto_points_can_be_turned_off() -> None:
    x, y = rand(1 << 12), rand(1 << 12, seed=1)
    res = tune(dot_program(), x, y, budget=1, db=False, progress=False, auto=False)
    assert all(not r.candidate.points for r in res.history)
