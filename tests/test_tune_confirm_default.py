"""The confirmation round never returns a kernel that was not measured faster than the default
(lift/explore/confirm.py, issue 27 item 5): exact fake timers on a fake clock, so every timing and
every deadline is known."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lift.choices import Choices
from lift.explore import confirm as confirm_mod
from lift.explore.confirm import MARGIN, MARGIN_S, WINS, confirm, contenders
from lift.explore.evaluate import Record
from lift.explore.pareto import score
from lift.explore.points import is_default, point

RANK = score("time")


def _point(structural: dict, default: bool = False) -> Choices:
    """A search point named by its structural parameters (the default lowering: mapping left open)."""
    return Choices(points=structural) if default else point(structural, {}, maps=())


class Clock:
    """A fake `time.perf_counter`: it advances only when a fake timer runs (by its timing)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(confirm_mod.time, "perf_counter", c)
    return c


def _rec(name: str, t: float, default: bool = False) -> Record:
    return Record(_point({"p": {"name": name}}, default), True, "", t, 0, True, source_hash=name)


def _name(r: Record) -> str:
    return r.candidate.points["p"]["name"]


def _exact(clock: Clock, truth: dict[str, float | None], calls: list[str] | None = None):
    """`timer_for` whose timings are exactly `truth[name]` seconds (None: the timing fails), each
    advancing the fake clock by that much (1 s for a failure)."""
    def timer_for(r: Record):
        name = _name(r)

        def timed() -> float | None:
            t = truth[name]
            clock.now += 1.0 if t is None else t
            if calls is not None:
                calls.append(name)
            return t

        return timed

    return timer_for


def test_a_winner_is_returned_only_when_faster_than_the_default_by_the_margin(clock: Clock) -> None:
    d = 1.0
    for t, wins in ((d * (1 - MARGIN) * 0.999, True), (d * (1 - MARGIN) * 1.001, False), (d, False), (1.5, False)):
        history = [_rec("default", d, default=True), _rec("w", 0.1)]
        winner, got = confirm(contenders(history, RANK), _exact(clock, {"default": d, "w": t}), deadline=1e9)
        assert _name(winner) == ("w" if wins else "default"), (t, got)
        assert got["medians"] == [t, d]


def test_a_lead_of_less_than_the_launch_jitter_keeps_the_default(clock: Clock) -> None:
    """A few-microsecond kernel: 20% ahead is one microsecond, under `MARGIN_S`; not evidence."""
    d = 5e-6
    for t, wins in ((d - MARGIN_S * 1.001, True), (d - MARGIN_S * 0.999, False), (d * (1 - MARGIN) * 0.99, False)):
        history = [_rec("default", d, default=True), _rec("w", 1e-7)]
        winner, got = confirm(contenders(history, RANK), _exact(clock, {"default": d, "w": t}), deadline=1e9)
        assert _name(winner) == ("w" if wins else "default"), (t, got)


def _sequence(clock: Clock, truth: dict[str, list[float]]):
    """`timer_for` whose timings of `name` are `truth[name]` in turn, one per round."""
    def timer_for(r: Record):
        times = iter(truth[_name(r)])

        def timed() -> float | None:
            t = next(times)
            clock.now += t
            return t

        return timed

    return timer_for


def test_a_median_lead_from_a_few_rounds_keeps_the_default(clock: Clock) -> None:
    """`w`'s median is 5% below the default's, but it was faster in only three of the five rounds
    (two lucky rounds moved its median): not `WINS` of them, so the default is kept; faster in four
    of five, `w` wins."""
    d = [1.0, 1.0, 1.0, 1.0, 1.0]
    for w, wins in (([0.8, 0.8, 0.95, 1.05, 1.1], False), ([0.8, 0.8, 0.95, 0.97, 1.1], True)):
        history = [_rec("default", 1.0, default=True), _rec("w", 0.1)]
        winner, got = confirm(contenders(history, RANK), _sequence(clock, {"default": d, "w": w}), deadline=1e9)
        assert got["rounds"] == 5 and got["medians"][0] < (1 - MARGIN) * got["medians"][1], got
        assert _name(winner) == ("w" if wins else "default"), (w, got)
    assert 3 < WINS * 5 <= 4


def test_the_deadline_before_the_default_is_timed_keeps_the_default(clock: Clock) -> None:
    """Round one times `fast` (1 s) then would time the default, but the deadline (0.5 s) has
    passed: `fast` has a median, the default none; `fast` was never measured against it."""
    history = [_rec("default", 3.0, default=True), _rec("fast", 0.5)]
    calls: list[str] = []
    winner, got = confirm(contenders(history, RANK), _exact(clock, {"default": 3.0, "fast": 1.0}, calls),
                          deadline=0.5)
    assert calls == ["fast"] and got["medians"] == [1.0, None]
    assert winner is not None and is_default(winner.candidate)


def test_a_default_whose_timing_fails_keeps_the_default(clock: Clock) -> None:
    history = [_rec("default", 3.0, default=True), _rec("fast", 0.5)]
    winner, got = confirm(contenders(history, RANK), _exact(clock, {"default": None, "fast": 1.0}), deadline=1e9)
    assert got["medians"][1] is None and winner is not None and is_default(winner.candidate)


def test_a_default_that_cannot_be_prepared_keeps_the_default(clock: Clock) -> None:
    history = [_rec("default", 3.0, default=True), _rec("fast", 0.5)]
    timers = _exact(clock, {"default": 3.0, "fast": 1.0})
    winner, _ = confirm(contenders(history, RANK), lambda r: None if is_default(r.candidate) else timers(r),
                        deadline=1e9)
    assert winner is not None and is_default(winner.candidate)


def test_without_a_correct_default_the_fastest_wins(clock: Clock) -> None:
    history = [Record(_point({"p": {"name": "default"}}, True), False, "wrong", None, 0, True),
               _rec("a", 2.0), _rec("b", 1.0)]
    winner, _ = confirm(contenders(history, RANK), _exact(clock, {"a": 2.0, "b": 1.0}), deadline=1e9)
    assert _name(winner) == "b"


@settings(max_examples=60, deadline=None)
@given(default=st.floats(0.5, 2.0), others=st.lists(st.floats(0.2, 3.0), min_size=1, max_size=5),
       deadline=st.floats(0.0, 40.0), spikes=st.lists(st.floats(1.0, 4.0), min_size=30, max_size=30))
def test_the_returned_kernel_is_the_default_or_measured_faster_than_it(default: float, others: list[float],
                                                                       deadline: float, spikes: list[float]) -> None:
    """Any true times, any load spikes, any deadline: the winner is the default, or its median beats
    the default's median, measured in the same rounds, by more than the margin."""
    clock = Clock()
    mp = pytest.MonkeyPatch()
    mp.setattr(confirm_mod.time, "perf_counter", clock)
    try:
        truth = {"default": default, **{f"c{i}": t for i, t in enumerate(others)}}
        history = [_rec(n, t * 0.5, default=n == "default") for n, t in truth.items()]  # the search was lucky
        spike = iter(spikes * 10)

        def timer_for(r: Record):
            def timed() -> float:
                t = truth[_name(r)] * next(spike)
                clock.now += t
                return t
            return timed

        winner, got = confirm(contenders(history, RANK), timer_for, deadline=deadline)
    finally:
        mp.undo()
    assert winner is not None
    if not is_default(winner.candidate):
        cands = contenders(history, RANK)
        d = got["medians"][next(j for j, r in enumerate(cands) if is_default(r.candidate))]
        assert d is not None and winner.confirmed < (1 - MARGIN) * d
