"""`lift.tune` keeps its budget: wall time from call to return within the budget plus one
candidate, the reference interpretation inside it (lift/explore/reference.py; a candidate waits
for the reference at most `Evaluator.reference_grace_s` past the budget)."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest

from lift.errors import LiftError
from lift.explore import tune
from lift.explore.evaluate import NO_REFERENCE, Evaluator
from lift.explore.points import is_default
from lift.explore.reference import Reference
from tests.programs import dot_program, rand
from tests.test_tune import tiled_dot

interp_mod = importlib.import_module("lift.interpret")  # the package (`lift.interpret` is the function)
FINAL_S = 1.5  # after the search: the winner built in this process (one more compile and OpenCL build)


def _timed_tune(*args, **kw):
    t0 = time.perf_counter()
    res = tune(*args, db=False, progress=False, **kw)
    return res, time.perf_counter() - t0


@pytest.mark.device
def test_tune_wall_time_is_the_budget_plus_one_candidate() -> None:
    x, y = rand(4096), rand(4096, seed=1)
    res, wall = _timed_tune(tiled_dot(), x, y, budget=3.0, trials=10_000)  # the budget, not the count, stops it
    one = max(r.wall_s for r in res.history)
    assert res.reference_checked
    assert wall <= 3.0 + one + FINAL_S, (wall, one, len(res.history))
    assert np.allclose(res.best(x, y), np.dot(x, y), rtol=1e-3)


@pytest.mark.device
def test_a_reference_slower_than_the_budget_leaves_the_default_unchecked(monkeypatch) -> None:
    """The interpretation runs in a forked child (which inherits this slowed interpreter) and is
    abandoned at the budget's end: the default lowering is returned, not checked, and not stored
    as the tuned winner; other candidates are rejected for want of a reference."""
    plain = interp_mod.interpret

    def slow(*args, **kw):
        time.sleep(60)
        return plain(*args, **kw)

    monkeypatch.setattr(interp_mod, "interpret", slow)
    grace = Evaluator.__init__

    def short_grace(self, *a, **kw):
        grace(self, *a, **kw)
        self.reference_grace_s = 0.5  # (10 s by default)

    monkeypatch.setattr(Evaluator, "__init__", short_grace)
    x, y = rand(2048), rand(2048, seed=1)
    res, wall = _timed_tune(tiled_dot(), x, y, budget=1.5, trials=4)
    assert wall < 1.5 + 0.5 + max(r.wall_s for r in res.history) + FINAL_S < 30
    assert not res.reference_checked and is_default(res.best_record.candidate)
    assert NO_REFERENCE in res.best_record.reason and not res.best_record.checked
    assert all(not r.ok for r in res.history if not is_default(r.candidate))
    assert np.allclose(res.best(x, y), np.dot(x, y), rtol=1e-3)  # lift.compile's default lowering


def test_reference_in_a_child_process_matches_the_interpreter() -> None:
    x, y = rand(1000), rand(1000, seed=1)
    ref = Reference(dot_program(), (x, y))
    want = interp_mod.interpret(dot_program(), x, y)
    assert np.allclose(ref.get(0), want) and ref.seconds is not None
    assert np.allclose(ref.get(1), np.dot(x.astype(np.float64), y.astype(np.float64)))
    ref.close()
    bad = Reference(dot_program(), (x, rand(999)))  # the interpreter refuses: raised here, as in-process
    with pytest.raises(LiftError):
        bad.get(0)
    bad.close()


@pytest.mark.device
def test_tune_with_the_informed_strategy_past_its_warmup(monkeypatch) -> None:
    """The forest proposes once ten candidates are measured (the informed strategy is tune's
    default); the result is checked."""
    from lift.explore import surrogate

    calls = []
    plain = surrogate.improvement
    monkeypatch.setattr(surrogate, "improvement", lambda m, p, **k: calls.append(len(p)) or plain(m, p, **k))
    x, y = rand(4096), rand(4096, seed=1)
    res = tune(tiled_dot(), x, y, budget=120, trials=14, db=False, progress=False)
    assert calls and all(n >= 1 for n in calls) and len(res.history) == 14
    assert res.reference_checked and np.allclose(res.best(x, y), np.dot(x, y), rtol=1e-3)


def test_the_reference_child_ends_when_its_parent_is_killed(tmp_path) -> None:
    """A tune killed midway (SIGKILL: no cleanup) leaves no interpreter child behind."""
    import os
    import signal
    import subprocess
    import sys

    script = tmp_path / "parent.py"
    script.write_text(
        "import os, signal, sys\n"
        "from lift.explore.reference import Reference\n"
        "from tests.programs import dot_program, rand\n"
        "ref = Reference(dot_program(), (rand(64), rand(64, seed=1)))\n"
        "ref.get(0)\n"  # the child now waits to be asked for the float64 result
        "open(sys.argv[1], 'w').write(str(ref._proc.pid))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pid_file = tmp_path / "child.pid"
    out = subprocess.run([sys.executable, str(script), str(pid_file)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, cwd=root, env={**os.environ, "PYTHONPATH": root}, timeout=120)
    assert out.returncode == -signal.SIGKILL
    child = int(pid_file.read_text())
    deadline = time.perf_counter() + 10
    while time.perf_counter() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    pytest.fail(f"the reference child {child} outlived its killed parent")
