"""The seed papers' workloads (benchmarks/seed_programs.py, issue 17) compile from their high-level form
with the default lowering and match numpy at tiny sizes. A workload refused today would be listed in
REFUSED with the reason and run as a strict xfail, so that the day it compiles the test says so."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import seeds  # noqa: E402
from seed_programs import SEEDS, Seed, np_maxpool  # noqa: E402

from lift import LiftError  # noqa: E402
from lift.arith import Cst, Var, evaluate, min_  # noqa: E402
from lift.codegen.kernel import DEFAULT_LOCAL, cap  # noqa: E402
from lift.compile import compile  # noqa: E402
from lift.errors import MappingFallback  # noqa: E402

# workload id -> (the LiftError class it raises today, why). Empty: every workload compiles today.
REFUSED: dict[str, tuple[type[LiftError], str]] = {}


def _id(seed: Seed) -> str:
    return f"{seed.name}-{'x'.join(str(s) for s in seed.tiny)}"


def _param(seed: Seed) -> object:
    marks = []
    if _id(seed) in REFUSED:
        error, why = REFUSED[_id(seed)]
        marks.append(pytest.mark.xfail(strict=True, raises=error, reason=why))
    return pytest.param(seed, id=_id(seed), marks=marks)


def test_ids_are_unique() -> None:
    ids = [_id(s) for s in SEEDS]
    assert len(ids) == len(set(ids))
    assert set(REFUSED) <= set(ids)


@pytest.mark.device
@pytest.mark.parametrize("seed", [_param(s) for s in SEEDS])
def test_seed_matches_numpy(seed: Seed, tmp_path: Path) -> None:
    arrays = seed.inputs(seed.tiny)
    want = seed.reference(*(np.float64(a) if np.ndim(a) == 0 else a.astype(np.float64) for a in arrays))
    with warnings.catch_warnings():
        warnings.simplefilter("error", MappingFallback)  # the solver's mapping, never a fallback (issue 14)
        prog = compile(seed.build(), cache_dir=tmp_path)
    got = prog(*arrays)
    ok, err = seeds.judge(seed, got, want, seed.tiny)
    assert ok, f"{_id(seed)}: max error {err:.3g}"


def _full_id(seed: Seed) -> str:
    return f"{seed.name}-{'x'.join(str(s) for s in seed.full)}"


@pytest.mark.slow
@pytest.mark.device
@pytest.mark.parametrize("seed", [pytest.param(s, id=_full_id(s)) for s in SEEDS])
def test_seed_matches_numpy_at_the_papers_sizes(seed: Seed, tmp_path: Path) -> None:
    """Every workload at the issue's sizes (reduce_sum over 16,226,304 and 2176 floats, sgemm 1024^3,
    unsharp mask on 3x2048x2048, ...), no user padding; a few minutes in all (sgemm: ~5 s a run)."""
    arrays = seed.inputs(seed.full)
    want = seed.reference(*(np.float64(a) if np.ndim(a) == 0 else a.astype(np.float64) for a in arrays))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MappingFallback)
        prog = compile(seed.build(), cache_dir=tmp_path)
    ok, err = seeds.judge(seed, prog(*arrays), want, seed.full)
    assert ok, f"{_full_id(seed)}: max error {err:.3g}"


def test_judge_rejects_a_wrong_result() -> None:
    """The comparison can fail: a perturbed result and a missing output are both rejected."""
    seed = next(s for s in SEEDS if s.name == "row_sums")
    (x,) = seed.inputs(seed.tiny)
    want = x.astype(np.float64).sum(1)
    assert seeds.judge(seed, want.astype(np.float32), want, seed.tiny)[0]
    assert not seeds.judge(seed, want + 0.01, want, seed.tiny)[0]
    two = next(s for s in SEEDS if s.name == "two_reductions")
    assert not seeds.judge(two, np.float32(1.0), (1.0, 2.0), two.tiny)[0]


@pytest.mark.device
def test_a_tune_that_kept_the_default_is_timed_once(tmp_path: Path) -> None:
    """Two builds of the default are the same kernels (the table times them once and says so); a
    program with another launch or another kernel is not."""
    seed = next(s for s in SEEDS if s.name == "reduce_sum")
    arrays = seed.inputs((2176,))
    a, b = (compile(seed.build(), cache_dir=tmp_path).specialised(*arrays) for _ in range(2))
    assert a is not b and seeds.same_kernels(a, b)
    assert a.choices.points  # the default reduction's point: its width is changed below
    narrower = compile(seed.build(), choices=a.choices.replace(launch={}, tuning={}, mapping=None, points={
        lab: {**dict(p), "width": 4} for lab, p in a.choices.points.items()}), cache_dir=tmp_path)
    assert not seeds.same_kernels(a, narrower)
    row = {"name": "x", "sizes": [1], "status": "ok", "kernel_s": 1e-3, "numpy_s": 2e-3, "tuned_status": "ok",
           "tuned_s": 1e-3, "numpy_tuned_s": 2e-3, "tuned_same": True}
    assert "ok (= default)" in seeds.format_row(row)


def test_tolerance_scales_with_the_sum_length() -> None:
    assert seeds.tolerance(10) == 1e-4
    assert 5e-4 < seeds.tolerance(16_226_304) < 2e-3


# ------------------------------------------- the default work-group of a multi-dimensional map_lcl nest


def test_default_local_size_caps_the_whole_work_group() -> None:
    """Each of k local dimensions gets at most 2 ** (8 // k) work-items: 256, 16 x 16, 4 x 4 x 4."""
    w = Var("W", Cst(1), None)
    for k in (1, 2, 3):
        per = evaluate(cap(w, k), {"W": 10**6})
        assert per ** k <= DEFAULT_LOCAL
        assert evaluate(cap(w, k), {"W": 3}) == 3
    assert evaluate(cap(min_(w, 5), 2), {"W": 100}) == 5


@pytest.mark.device
def test_maxpool_2d_local_nest_fits_the_device(tmp_path: Path) -> None:
    """The solver maps maxpool's window grid to a 2-D map_wrg/map_lcl nest; its default work-group
    was min(W/2, 256) x min(H/2, 256), refused by the device check (65536 > 4096 work-items) before
    any size was known. Now each dimension is capped at 16 and the 112 x 112 images run."""
    seed = next(s for s in SEEDS if s.name == "maxpool")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MappingFallback)
        prog = compile(seed.build(), cache_dir=tmp_path)
    sizes = {"N": 1, "C": 2, "H": 112, "W": 112}
    for nd in prog.ndrange:
        if nd.local_size:
            assert np.prod([evaluate(s, sizes) for s in nd.local_size]) <= DEFAULT_LOCAL
    (x,) = seed.inputs((1, 2, 112, 112))
    np.testing.assert_array_equal(prog(x), np_maxpool(x))
