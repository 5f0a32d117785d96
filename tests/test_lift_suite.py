"""LIFT's benchmark suite (examples/lift_suite/, benchmarks/lift_suite.py) at small sizes: its
programs compile by default and equal their numpy references (the benchmark checks every one at
LIFT's sizes)."""

from __future__ import annotations

import builtins
import sys
from pathlib import Path

import numpy as np
import pytest

import lift

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from lift_suite import cgo17 as c  # noqa: E402
from lift_suite import stencils as s  # noqa: E402

# one program per compiler path the suite depends on (the benchmark runs them all)
CASES = {
    "nbody": lambda r: c.nbody_case(256, r), "md": lambda r: c.md_case(512, 16, r),
    "kmeans": lambda r: c.kmeans_case(512, 5, 34, r), "mriq": lambda r: c.mriq_case(512, 64, r),
    "atax": lambda r: c.atax_case(128, r), "argmin": lambda r: c.argmin_case(1 << 16, r),
    "hotspot3d": lambda r: s.hotspot3d_case(32, 4, r), "srad": lambda r: s.srad_case(64, r),
    "acoustic": lambda r: s.acoustic_case(32, 4, r), "separable": lambda r: s.separable_case(64, 17, r),
}


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_by_default_equals_numpy(name: str) -> None:
    case = CASES[name](np.random.default_rng(7))
    got, want = lift.compile(case.program)(*case.inputs), case.numpy(*case.inputs)
    pairs = builtins.zip(got, want) if isinstance(want, tuple) else [(got, want)]
    for g, w in pairs:
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64),
                                   rtol=case.rtol, atol=case.atol)
