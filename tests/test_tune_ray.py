"""Tuning on Ray (lift.explore.cluster), on a local cluster (`ray.init(num_cpus=2)` with this
machine's device advertised). Marked `ray` (a Ray start costs 10-30 s here): run with
`python -m pytest -m ray tests/test_tune_ray.py -n 0` after `pip install -e ".[ray]"`."""

from __future__ import annotations

import os
import signal
import sys

import numpy as np
import pytest

import lift
from lift.explore import TuningDB, cluster
from lift.explore.points import key as point_key
from tests.programs import rand
from tests.test_tune import tiled_dot
from tests.test_tune_drive import _mkeys, resumable_tune_all


@pytest.mark.device
def test_without_ray_cluster_ray_is_a_lift_error_naming_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    x, y = rand(64), rand(64, seed=1)
    with pytest.raises(cluster.ClusterError, match=r"liftcl\[ray\]"):
        lift.tune(tiled_dot(), x, y, budget=30, db=False, progress=False, cluster="ray")


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason='tuning on Ray needs pip install -e ".[ray]"')
    if not ray.is_initialized():
        cluster.start_local(num_cpus=2)
    yield ray
    ray.shutdown()


@pytest.mark.ray
@pytest.mark.device
def test_a_tune_on_ray_gives_the_same_kind_of_result_as_the_local_tuner(ray_cluster) -> None:
    x, y = rand(1 << 12), rand(1 << 12, seed=1)
    want = lift.interpret(tiled_dot(), x, y)
    local = lift.tune(tiled_dot(), x, y, budget=120, trials=8, db=False, progress=False)
    on_ray = lift.tune(tiled_dot(), x, y, budget=120, trials=8, db=False, progress=False, cluster="ray")
    for res in (local, on_ray):
        assert len(res.history) == 8 and res.best_record.ok and res.best_record.checked
        assert sum(r.ok for r in res.history) >= 4  # correct candidates measured, not only rejected
        assert all((r.ok and r.checked) or r.reason for r in res.history)
        np.testing.assert_allclose(res.best(x, y), want, rtol=1e-3)
        assert res.stats.get("confirmed")  # the confirmation round ran (on a runner actor for Ray)
    assert on_ray.best.device.key == local.best.device.key


@pytest.mark.ray
@pytest.mark.device
def test_a_runner_killed_mid_tune_loses_nothing_and_the_database_stays_consistent(ray_cluster, tmp_path,
                                                                                  monkeypatch) -> None:
    real_run, seen = cluster.RayBackend.run, {"runs": 0, "killed": None, "backend": None}

    def run(self, built, tries=0, runner=None):
        real_run(self, built, tries, runner)
        seen["runs"] += 1
        seen["backend"] = self
        if seen["runs"] == 3:  # the third candidate is in flight: kill its runner's process
            pid = ray_cluster.get(self.runners[0].pid.remote())
            os.kill(pid, signal.SIGKILL)
            seen["killed"] = point_key(built.candidate)

    monkeypatch.setattr(cluster.RayBackend, "run", run)
    x, y = rand(1 << 12), rand(1 << 12, seed=3)
    db = TuningDB(tmp_path / "t.sqlite")
    res = lift.tune(tiled_dot(), x, y, budget=180, trials=8, db=db, progress=False, cluster="ray")
    assert seen["killed"] is not None and seen["backend"].lost >= 1
    keys = [point_key(r.candidate) for r in res.history]
    assert len(keys) == 8 and len(set(keys)) == 8  # the tune finished, nothing twice
    killed = next(r for r in res.history if point_key(r.candidate) == seen["killed"])
    assert killed.ok or "crashed" in killed.reason  # measured again on the restarted runner
    (mkey,) = _mkeys(db)
    stored = db.finished(mkey)
    assert set(stored) == set(keys)  # nothing lost from the database, nothing else in it
    assert all(stored[point_key(r.candidate)]["ok"] == r.ok for r in res.history)
    np.testing.assert_allclose(res.best(x, y), lift.interpret(tiled_dot(), x, y), rtol=1e-3)


@pytest.mark.ray
@pytest.mark.device
def test_a_builder_killed_mid_tune_loses_nothing(ray_cluster, tmp_path, monkeypatch) -> None:
    real_poll, seen = cluster.RayBackend.poll, {"builds": 0, "killed": 0}

    def poll(self, timeout):
        builds, runs = real_poll(self, timeout)
        seen["builds"] += len(builds)
        if seen["builds"] >= 2 and not seen["killed"] and builds and builds[-1].builder_pid:
            seen["killed"] = builds[-1].builder_pid  # a builder process, while other builds are in flight
            os.kill(seen["killed"], signal.SIGKILL)
        return builds, runs

    monkeypatch.setattr(cluster.RayBackend, "poll", poll)
    x, y = rand(1 << 12), rand(1 << 12, seed=4)
    db = TuningDB(tmp_path / "t.sqlite")
    res = lift.tune(tiled_dot(), x, y, budget=180, trials=8, db=db, progress=False, cluster="ray")
    assert seen["killed"] and seen["killed"] != os.getpid()
    keys = [point_key(r.candidate) for r in res.history]
    assert len(keys) == 8 and len(set(keys)) == 8
    assert not any("builder died" in r.reason for r in res.history)  # Ray ran the lost build again
    (mkey,) = _mkeys(db)
    assert set(db.finished(mkey)) == set(keys)
    np.testing.assert_allclose(res.best(x, y), lift.interpret(tiled_dot(), x, y), rtol=1e-3)


@pytest.mark.ray
@pytest.mark.device
def test_tune_all_on_ray_resumes_after_an_interruption(ray_cluster, tmp_path, monkeypatch) -> None:
    resumable_tune_all(tmp_path, monkeypatch, cluster="ray")
