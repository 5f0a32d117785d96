"""Candidate isolation (lift.explore.worker): a candidate that crashes or hangs the OpenCL
runtime, or computes a wrong result, is rejected with its reason; the search goes on and
keeps its budget."""

from __future__ import annotations

import dataclasses
import importlib
import time

import numpy as np
import pytest

from lift.explore import evaluate as cand_mod
from lift.explore import tune
from lift.explore.points import is_default
from lift.explore.worker import shared
from tests.programs import rand
from tests.test_tune import tiled_dot

tune_mod = importlib.import_module("lift.explore.tune")


def _faulty(kind: str, every: int = 2):
    """An injection hook: every `every`-th built plan faults with `kind`."""
    count = {"n": 0}

    def inject(plan):
        count["n"] += 1
        return kind if count["n"] % every == 0 else None

    return inject


def _tune_with_fault(monkeypatch, kind: str, budget: float):
    def faulty_worker(device, arrays):
        w = shared(device, arrays)
        w.inject = _faulty(kind)
        return w

    monkeypatch.setattr(tune_mod, "shared_worker", faulty_worker)
    x, y = rand(1 << 10), rand(1 << 10, seed=1)
    t0 = time.perf_counter()
    res = tune(tiled_dot(), x, y, budget=budget, db=False, progress=False)
    return res, time.perf_counter() - t0


@pytest.mark.device
def test_a_candidate_that_segfaults_the_runtime_is_rejected_and_the_tune_finishes(monkeypatch) -> None:
    res, _ = _tune_with_fault(monkeypatch, "segv", budget=6)
    crashed = [r for r in res.history if "SIGSEGV" in r.reason]
    assert crashed and all(not r.ok for r in crashed)
    assert res.best_record.ok and "SIGSEGV" not in res.best_record.reason
    assert sum(r.ok for r in res.history) >= 2  # the search went on after the crash
    x, y = rand(1 << 10), rand(1 << 10, seed=1)
    assert np.isclose(res.best(x, y), np.dot(x.astype(np.float64), y), rtol=1e-3)


@pytest.mark.device
def test_a_hanging_candidate_times_out_and_the_budget_is_kept(monkeypatch) -> None:
    monkeypatch.setattr(cand_mod.Evaluator, "__init__", _short_timeout(cand_mod.Evaluator.__init__))
    res, wall = _tune_with_fault(monkeypatch, "hang", budget=6)
    hung = [r for r in res.history if "timed out" in r.reason]
    assert hung and not any(r.ok for r in hung)
    assert wall < 6 + 3 + 2  # the budget plus one candidate (a timeout of 3 s) plus slack


def _short_timeout(init):
    def patched(self, *a, **k):
        init(self, *a, **k)
        self.timeout_s = 3.0

    return patched


@pytest.mark.device
def test_a_wrong_kernel_run_in_the_worker_is_rejected(monkeypatch) -> None:
    real = cand_mod.Evaluator.plan

    def plan(self, cand):
        p, used = real(self, cand)
        if is_default(cand):
            return p, used
        return dataclasses.replace(p, source=p.source.replace("0.0f", "1.0f")), used

    monkeypatch.setattr(cand_mod.Evaluator, "plan", plan)
    x, y = rand(1 << 10), rand(1 << 10, seed=1)
    res = tune(tiled_dot(), x, y, budget=5, db=False, progress=False)
    wrong = [r for r in res.history if "wrong result" in r.reason]
    assert wrong and all(r.checked and not r.ok for r in wrong)
    assert is_default(res.best_record.candidate)


def test_private_memory_per_work_group_is_a_hardware_constraint_on_pocl(monkeypatch) -> None:
    import lift
    from lift.constraints import joint_space
    from lift.constraints import tuning as tn
    from lift.explore.tune import _search_space, _sizes
    from tests.test_tune import tiled_gemv

    assert tn.private_per_group(lift.devices.profile("pocl-cpu")) == (8 << 20) - (1 << 20)
    assert tn.private_per_group(lift.devices.profile("nvidia")) is None
    a, v = rand(64, 256), rand(256)
    sizes = _sizes(tiled_gemv(), (a, v))
    expr, _, _ = _search_space(tiled_gemv(), sizes, auto=False)
    prog = lift.rewrites.apply_all(expr, {"R": {"skip": False}}, warn=False)
    monkeypatch.setattr(tn, "POCL_STACK_RESERVE", 0)
    monkeypatch.setattr(tn, "POCL_STACK_BYTES", 8 * 16)  # room for 16 work-items' 8 private bytes
    space = joint_space(prog, lift.devices.profile("pocl-cpu"), sizes=sizes)
    assert any(c.kind == tn.PRIVATE_MEM and "stack" in c.reason for c in space.constraints)
    for choice in space.sample(20, seed=3):
        ls = choice["local_size_0"] * choice["local_size_1"] * choice["local_size_2"]
        assert ls <= 16


def _slow_default_tune(monkeypatch, timeout_s: float, **kw):
    """A tune where every OpenCL build takes `SLOW_S` (1 s) and the candidate timeout is shorter."""
    from lift.explore import worker as worker_mod

    monkeypatch.setattr(worker_mod, "MIN_TIMEOUT_S", 0.05)
    real_init = cand_mod.Evaluator.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.timeout_s = timeout_s
        self.slow_s = 0.0  # every candidate is slow: checked and timed by one run

    def slow_worker(device, arrays):
        w = shared(device, arrays)
        w.inject = lambda plan: "slow"
        return w

    monkeypatch.setattr(cand_mod.Evaluator, "__init__", init)
    monkeypatch.setattr(tune_mod, "shared_worker", slow_worker)
    x, y = rand(1 << 10), rand(1 << 10, seed=1)
    return tune(tiled_dot(), x, y, db=False, progress=False, **kw), (x, y)


@pytest.mark.device
def test_a_default_slower_than_the_candidate_timeout_is_still_the_result(monkeypatch) -> None:
    res, (x, y) = _slow_default_tune(monkeypatch, 0.3, budget=30, trials=2)
    first, other = res.history
    assert is_default(first.candidate) and first.ok and first.checked and 0 < first.time < 0.3
    assert not other.ok and "timed out" in other.reason  # the other candidates keep the short timeout
    assert res.best_record is first
    np.testing.assert_allclose(res.best(x, y), np.dot(x.astype(np.float64), y), rtol=1e-3)


@pytest.mark.device
def test_a_default_that_times_out_even_in_the_budget_is_measured_in_process(monkeypatch) -> None:
    from lift.explore import worker as worker_mod

    monkeypatch.setattr(worker_mod, "GRACE_S", 0.0)
    res, (x, y) = _slow_default_tune(monkeypatch, 0.3, budget=0.3, trials=1)
    (first,) = res.history
    assert is_default(first.candidate) and first.ok and first.checked and first.time > 0
    np.testing.assert_allclose(res.best(x, y), np.dot(x.astype(np.float64), y), rtol=1e-3)


_UNGUARDED = """
import numpy as np
import lift
from lift import Array, Float, Size, fun, map, reduce, zip

N = Size("N")
prog = fun([Array(Float, N), Array(Float, N)],
           lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))
x, y = np.arange(256, dtype=np.float32), np.ones(256, dtype=np.float32)
res = lift.tune(prog, x, y, budget=3, db=False, progress=False)
print("tuned", sum(r.ok for r in res.history), float(res.best(x, y)))
"""


@pytest.mark.device
@pytest.mark.parametrize("how", ["path", "module"])
def test_tune_works_in_a_script_without_a_main_guard(tmp_path, how: str) -> None:
    """The worker is a 'spawn' process, which re-runs the main module first; a script with no
    `if __name__ == "__main__":` guard (run as a file or with -m) still tunes."""
    import os
    import subprocess
    import sys

    (tmp_path / "unguarded.py").write_text(_UNGUARDED)
    cmd = [sys.executable, str(tmp_path / "unguarded.py")] if how == "path" else [sys.executable, "-m", "unguarded"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("tuned")]
    assert line, done.stdout
    ok, value = line[0].split()[1:]
    assert int(ok) >= 1 and float(value) == float(sum(range(256)))
