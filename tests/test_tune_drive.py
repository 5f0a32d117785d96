"""The tune's driver (lift.explore.drive) with builders and runners as two roles: proposals in
flight are seen as tried, results may arrive in any order, the driver writes every record once,
and `lift.tune_all` resumes an interrupted list of programs from the tuning database."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift.choices import Choices
from lift.explore import TuningDB
from lift.explore.drive import drive
from lift.explore.evaluate import Record
from lift.explore.points import joint, point
from lift.explore.points import key as point_key
from lift.explore.roles import Built
from lift.explore.search import IN_FLIGHT
from lift.explore.shared import SharedWork
from tests.programs import rand
from tests.test_tune import tiled_dot


class _Pipe:
    def __init__(self) -> None:
        self._seen: dict = {}


class _Backend:
    """Builds at once; holds runs until `hold` are in flight, then finishes the newest first."""

    def __init__(self, runners: int, hold: int) -> None:
        self.runners, self.hold = runners, hold
        self._built: list[Built] = []
        self.runs: list[Built] = []
        self.max_in_flight = 0
        self.waits = 0

    @property
    def building(self) -> int:
        return len(self._built)

    def build(self, cand: Choices) -> None:
        self._built.append(Built(cand, plan=object(), same=point_key(cand)))

    def idle(self) -> int:
        return self.runners - len(self.runs)

    def run(self, built: Built) -> None:
        self.runs.append(built)
        self.max_in_flight = max(self.max_in_flight, len(self.runs))

    def running_keys(self) -> set[str]:
        return {point_key(b.candidate) for b in self.runs}

    def drop_builds(self) -> None:
        self._built = []

    def poll(self, timeout: float):
        builds, self._built = self._built, []
        if builds or (len(self.runs) < self.hold and self.idle() and self.waits < 2):
            self.waits += 1  # (the last few are finished when nothing more comes)
            return builds, []
        self.waits = 0
        b = self.runs.pop()  # the newest first: out of order
        n = int(joint(b.candidate)["n"])
        return [], [(b, Record(b.candidate, True, "", time=1.0 / (n + 1), checked=True))]


class _Counting:
    """Proposes n = 0, 1, 2, ... (the first not tried in the history it is shown)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.views = limit, []

    def propose(self, history):
        self.views.append([r.reason for r in history])
        tried = {joint(r.candidate)["n"] for r in history}
        n = next((i for i in range(self.limit) if i not in tried), None)
        return None if n is None else point({}, {"n": n}, maps=())


@pytest.mark.parametrize("runners,ahead", [(1, 0), (1, 2), (3, 2)])
def test_the_driver_sees_proposals_in_flight_as_tried_and_takes_results_in_any_order(runners, ahead) -> None:
    backend, strategy, history = _Backend(runners, hold=runners), _Counting(12), []
    work = SharedWork(_Pipe(), None, "m")
    drive(backend, work, strategy, history, may_propose=lambda flying: True, time_left=lambda: True,
          ahead=ahead, wait_until=lambda: float("inf"))
    keys = [point_key(r.candidate) for r in history]
    assert sorted(joint(r.candidate)["n"] for r in history) == list(range(12))  # each once, none lost
    assert len(set(keys)) == len(keys) and work.measured == 12
    assert backend.max_in_flight == runners  # every runner busy, one candidate each
    in_flight = max(v.count(IN_FLIGHT) for v in strategy.views)
    if ahead == 0 and runners == 1:
        assert in_flight == 0  # sequential: proposed only when nothing is in flight
    else:
        assert in_flight >= 1  # proposals made while others were still building or running


def test_trials_count_the_candidates_in_flight() -> None:
    backend, history = _Backend(2, hold=2), []
    drive(backend, SharedWork(_Pipe(), None, "m"), _Counting(50), history, ahead=3,
          may_propose=lambda flying: len(history) + flying < 7, time_left=lambda: True,
          wait_until=lambda: float("inf"))
    assert len(history) == 7


@pytest.mark.device
def test_a_pipelined_tune_is_checked_and_written_once_per_candidate(tmp_path) -> None:
    x, y = rand(1 << 12), rand(1 << 12, seed=1)
    db = TuningDB(tmp_path / "t.sqlite")
    res = lift.tune(tiled_dot(), x, y, budget=60, trials=6, ahead=2, db=db, progress=False)
    assert len(res.history) == 6 and all((r.ok and r.checked) or r.reason for r in res.history)
    assert len({point_key(r.candidate) for r in res.history}) == 6
    (mkey,) = {k for k in _mkeys(db)}
    stored = db.finished(mkey)
    assert set(stored) == {point_key(r.candidate) for r in res.history}
    assert all(stored[point_key(r.candidate)]["ok"] == r.ok for r in res.history)
    np.testing.assert_allclose(res.best(x, y), lift.interpret(tiled_dot(), x, y), rtol=1e-3)


def _mkeys(db: TuningDB) -> set[str]:
    with db._use("read") as conn:
        return {row[0] for row in conn.execute("SELECT DISTINCT mkey FROM candidates")}


def resumable_tune_all(tmp_path, monkeypatch, cluster=None) -> None:
    """`tune_all` of two programs, interrupted after the second's third record is written, run
    again: the first is a database hit, the second resumes from its stored candidates."""
    from lift.explore import shared

    progs = [("dot", tiled_dot(), (rand(1 << 10), rand(1 << 10, seed=1))),
             ("dot4k", tiled_dot(), (rand(1 << 12), rand(1 << 12, seed=2)))]
    db = TuningDB(tmp_path / "t.sqlite")
    real, writes = shared.SharedWork.finish, {"n": 0}

    def finish(self, cand, rec):
        out = real(self, cand, rec)
        writes["n"] += 1
        if writes["n"] == 6 + 3:  # the first program's 6 trials, then 3 of the second's
            raise KeyboardInterrupt
        return out

    monkeypatch.setattr(shared.SharedWork, "finish", finish)
    with pytest.raises(KeyboardInterrupt):
        lift.tune_all(progs, budget=120, trials=6, db=db, progress=False, cluster=cluster)
    monkeypatch.setattr(shared.SharedWork, "finish", real)
    seen = []
    got = lift.tune_all(progs, budget=120, trials=6, db=db, progress=False, cluster=cluster,
                        on_result=lambda name, r: seen.append(name))
    assert seen == ["dot", "dot4k"]
    assert got["dot"].cached and not got["dot4k"].cached
    assert got["dot4k"].stats["from_database"] >= 3 and len(got["dot4k"].history) >= 6
    for name, prog, arrays in progs:
        np.testing.assert_allclose(got[name].best(*arrays), lift.interpret(prog, *arrays), rtol=1e-3)


@pytest.mark.device
def test_tune_all_resumes_after_an_interruption(tmp_path, monkeypatch) -> None:
    resumable_tune_all(tmp_path, monkeypatch)
