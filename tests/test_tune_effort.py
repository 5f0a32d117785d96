"""Effort levels (issue 42, lift.explore.effort): `lift.tune(..., effort=...)` and `lift tune --effort`,
beside a budget, with the same contract (the default lowering first, never slower than it)."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift.cli import parser
from lift.errors import LiftValueError
from lift.explore import evaluate as evaluate_mod
from lift.explore.effort import EFFORTS, QUICK_TRIALS, effort_of, limits
from lift.explore.points import is_default
from tests.programs import gemv_program, rand
from tests.test_tune import tiled_gemv


def test_effort_levels_and_their_limits() -> None:
    assert effort_of(None) is EFFORTS["normal"] and set(EFFORTS) == {"quick", "normal", "exhaustive"}
    with pytest.raises(LiftValueError, match="effort must be one of"):
        effort_of("thorough")
    assert limits(EFFORTS["normal"], None, None) == (60.0, None)
    assert limits(EFFORTS["quick"], None, None) == (20.0, QUICK_TRIALS)
    assert limits(EFFORTS["quick"], 5, 3) == (5.0, 3)  # what is given wins; trials: the smaller
    assert limits(EFFORTS["exhaustive"], 30, None) == (30.0, None)
    assert not EFFORTS["exhaustive"].unique and EFFORTS["normal"].unique and EFFORTS["quick"].unique
    with pytest.raises(LiftValueError, match="budget"):
        limits(EFFORTS["normal"], -1, None)
    with pytest.raises(LiftValueError, match="effort"):
        lift.tune(gemv_program(), rand(4, 8), rand(8), effort="fast", db=False, progress=False)


def test_the_command_line_takes_an_effort() -> None:
    opts = parser().parse_args(["tune", "prog.py", "--effort", "quick"])
    assert opts.effort == "quick" and opts.budget is None
    assert parser().parse_args(["tune", "prog.py"]).effort == "normal"
    with pytest.raises(SystemExit):
        parser().parse_args(["tune", "prog.py", "--effort", "fast"])


@pytest.mark.device
def test_a_quick_tune_keeps_the_contract_within_its_trials() -> None:
    a, v = rand(32, 256), rand(256, seed=1)
    res = lift.tune(gemv_program(), a, v, budget=120, effort="quick", db=False, progress=False)
    assert len(res.history) <= QUICK_TRIALS and is_default(res.history[0].candidate)
    assert res.best_record.ok and res.best_record.checked
    assert np.allclose(res.best(a, v), a @ v, rtol=1e-3)
    default = next(r for r in res.history if is_default(r.candidate))
    medians = {c["candidate"]: c["median_s"] for c in res.stats.get("confirmed", [])}
    if medians and "default lowering" in medians and not is_default(res.best_record.candidate):
        assert res.best_record.confirmed is None or res.best_record.confirmed <= medians["default lowering"]
    assert default.ok


@pytest.mark.device
def test_exhaustive_searches_without_the_uniqueness_constraints(monkeypatch) -> None:
    asked: list[bool] = []
    real = evaluate_mod.joint_space_of

    def spy(*args, unique=False, **kw):
        asked.append(unique)
        return real(*args, unique=unique, **kw)

    monkeypatch.setattr(evaluate_mod, "joint_space_of", spy)
    a, v = rand(32, 256), rand(256, seed=1)
    for effort, unique in (("exhaustive", False), ("normal", True)):
        asked.clear()
        res = lift.tune(tiled_gemv(), a, v, budget=120, trials=3, effort=effort, db=False, progress=False)
        assert asked and set(asked) == {unique}
        assert np.allclose(res.best(a, v), a @ v, rtol=1e-3)
