"""The confirmation round of `lift.tune` (lift/explore/confirm.py): the winner is chosen by
interleaved medians of the fastest candidates and the default lowering, not by the search's
single measurement of each."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

import lift
from lift.choices import Choices
from lift.explore import tune
from lift.explore.confirm import MARGIN, TOP, confirm, contenders, reserve
from lift.explore.evaluate import Record
from lift.explore.pareto import score
from lift.explore.points import is_default, point
from tests.programs import dot_program, rand

RANK = score("time")


def _point(structural: dict, default: bool = False) -> Choices:
    """A search point named by its structural parameters (the default lowering: mapping left open)."""
    return Choices(points=structural) if default else point(structural, {}, maps=())


def _rec(name: str, t: float, default: bool = False, digest: str | None = None) -> Record:
    cand = _point({"p": {"name": name}}, default)
    return Record(cand, True, "", t, 0, True, source_hash=digest or name)


def _timers(true_times: dict[str, float], calls: list[str] | None = None):
    """`timer_for` over a table of true times per contender (each timing returns its true time,
    jittered by a fixed +-2% pattern); `calls` records the order of the timings."""
    jitter = itertools.cycle((1.0, 1.02, 0.98))

    def timer_for(r: Record):
        name = r.candidate.points["p"]["name"]

        def timed() -> float:
            if calls is not None:
                calls.append(name)
            return true_times[name] * next(jitter)

        return timed

    return timer_for


def test_a_lucky_first_timing_does_not_win() -> None:
    """The search timed `lucky` at 1 ms once (a quiet moment); its true time is 3 ms. The others'
    search times are their true times. The confirmation picks the truly fastest, `steady`."""
    history = [_rec("default", 2.5e-3, default=True), _rec("lucky", 1e-3), _rec("steady", 2e-3),
               _rec("other", 2.2e-3), _rec("slow", 9e-3)]
    truth = {"default": 2.5e-3, "lucky": 3e-3, "steady": 2e-3, "other": 2.2e-3, "slow": 9e-3}
    cands = contenders(history, RANK)
    assert [r.candidate.points["p"]["name"] for r in cands] == ["lucky", "steady", "other", "default"]
    winner, got = confirm(cands, _timers(truth), deadline=time.perf_counter() + 60)
    assert winner is not None and winner.candidate.points["p"]["name"] == "steady"
    assert got["rounds"] == 5
    assert winner.confirmed == pytest.approx(2e-3, rel=0.03)


def test_the_default_wins_when_the_others_were_lucky() -> None:
    """Every candidate but the default looked faster in the search; in truth the default is the
    fastest: it is chosen (the tune never returns a kernel measured slower than the default)."""
    history = [_rec("default", 5e-3, default=True)] + [_rec(f"c{i}", (i + 1) * 1e-3) for i in range(TOP + 1)]
    truth = {"default": 4e-3, **{f"c{i}": 4.5e-3 + i * 1e-4 for i in range(TOP + 1)}}
    cands = contenders(history, RANK)
    assert is_default(cands[-1].candidate) and len(cands) == TOP + 1  # the fastest TOP and the default
    winner, _ = confirm(cands, _timers(truth), deadline=time.perf_counter() + 60)
    assert winner is not None and is_default(winner.candidate)


def test_rounds_are_interleaved_and_hopeless_contenders_dropped() -> None:
    calls: list[str] = []
    history = [_rec("default", 50e-3, default=True), _rec("a", 1e-3), _rec("b", 1.1e-3)]
    truth = {"default": 50e-3, "a": 1e-3, "b": 1.1e-3}
    confirm(contenders(history, RANK), _timers(truth, calls), deadline=time.perf_counter() + 60)
    assert calls[:3] == ["a", "b", "default"] and calls[3:5] == ["b", "a"]  # rotated each round
    assert calls.count("default") == 1 and calls.count("a") == 5  # 50x slower: timed in one round only


def test_same_kernel_is_one_contender_and_the_deadline_stops_the_rounds() -> None:
    history = [_rec("default", 3e-3, default=True, digest="k"), _rec("same", 1e-3, digest="k"), _rec("b", 2e-3)]
    cands = contenders(history, RANK)
    # the default's kernel is there: the default's record stands for it, in its place
    assert [r.candidate.points["p"]["name"] for r in cands] == ["default", "b"]
    winner, got = confirm(cands, _timers({"default": 1e-3, "b": 2e-3}), deadline=time.perf_counter() - 1)
    assert winner is cands[0] and got["rounds"] == 0  # past the deadline: nothing measured, the default stays
    nodefault = contenders(history[1:], RANK)
    winner, got = confirm(nodefault, _timers({"same": 1e-3, "b": 2e-3}), deadline=time.perf_counter() - 1)
    assert winner is None and got["rounds"] == 0  # no default among them: the search decides
    assert reserve(history, RANK) > 0 and reserve([], RANK) == 0


def test_a_contender_that_fails_is_out() -> None:
    history = [_rec("default", 3e-3, default=True), _rec("broken", 1e-3)]

    def timer_for(r: Record):
        if is_default(r.candidate):
            return lambda: 3e-3
        return lambda: None

    winner, got = confirm(contenders(history, RANK), timer_for, deadline=time.perf_counter() + 60)
    assert winner is not None and is_default(winner.candidate) and got["medians"][0] is None


@pytest.mark.device
@pytest.mark.parametrize("isolate", [True, False])
def test_tune_confirms_the_default_among_the_contenders(isolate: bool) -> None:
    """A real tune: the default lowering is one of the confirmed contenders, the winner has the
    smallest confirmed median, and it is correct."""
    x, y = rand(1 << 16), rand(1 << 16, seed=1)
    res = tune(dot_program(), x, y, budget=6, trials=8, db=False, progress=False, isolate=isolate)
    got = res.stats.get("confirmed")
    assert got, res.stats
    assert any(c["candidate"] == "default lowering" and c["median_s"] for c in got)
    medians = [c["median_s"] for c in got if c["median_s"] is not None]
    default = next(c["median_s"] for c in got if c["candidate"] == "default lowering")
    best = res.best_record.confirmed
    # the smallest median wins, unless it is within MARGIN of the default's or was faster than the
    # default in too few rounds (confirm.WINS): then the default does
    if not is_default(res.best_record.candidate):
        assert best == min(medians) and default is not None and best < default * (1 - MARGIN), got
    else:
        assert best == default, got
    assert np.allclose(res.best(x, y), np.dot(x, y), rtol=1e-3)


def test_one_load_spike_in_the_first_round_does_not_drop_the_best() -> None:
    """`b` is the fastest but its first timing hit a load spike (2.5x): it stays in the rounds."""
    history = [_rec("default", 3e-3, default=True), _rec("a", 1e-3), _rec("b", 1.1e-3)]
    seen = {"b": 0}

    def timer_for(r: Record):
        name = r.candidate.points["p"]["name"]

        def timed() -> float:
            if name == "b":
                seen["b"] += 1
                return 2.5e-3 if seen["b"] == 1 else 0.9e-3
            return {"a": 1e-3, "default": 3e-3}[name]

        return timed

    winner, _ = confirm(contenders(history, RANK), timer_for, deadline=time.perf_counter() + 60)
    assert winner is not None and winner.candidate.points["p"]["name"] == "b"


@pytest.mark.device
def test_the_default_contender_is_what_lift_compile_gives() -> None:
    """With automatic points placed, the default candidate is `lift.compile` of the program as
    written (for dot: main's default parallel chunks), not the pointed program with its points
    skipped (one sequential loop, 10x slower): the confirmation compares against the real default."""
    x, y = rand(1 << 14), rand(1 << 14, seed=1)
    prog = dot_program()
    want = lift.compile(prog).specialised(x, y)  # what a call with these arrays runs
    res = tune(prog, x, y, budget=30, trials=3, db=False, progress=False)
    first = res.history[0]
    assert is_default(first.candidate) and first.choices == want.choices
    if is_default(res.best_record.candidate):
        assert res.best.source == want.source


@pytest.mark.parametrize(("lead", "wins"), [(0.01, "default"), (0.05, "fast")])
def test_a_lead_within_the_margin_keeps_the_default(lead: float, wins: str) -> None:
    """A contender 1% faster than the default is within the noise of two builds of one kernel
    (confirm.MARGIN, 2%): the default is kept; 5% faster, the contender wins."""
    history = [_rec("default", 2e-3, default=True), _rec("fast", 1.5e-3)]
    truth = {"default": 2e-3, "fast": 2e-3 * (1.0 - lead)}

    def timer_for(r: Record):
        return lambda: truth[r.candidate.points["p"]["name"]]

    winner, got = confirm(contenders(history, RANK), timer_for, deadline=time.perf_counter() + 60)
    assert winner is not None and winner.candidate.points["p"]["name"] == wins
    assert got["medians"] == [pytest.approx(truth["fast"]), pytest.approx(truth["default"])]
