"""The time/memory Pareto front (thesis 4.5.3)."""

from __future__ import annotations

import pytest

from lift.explore import Record, dominates, front, pareto_front
from lift.explore.pareto import score
from lift.explore.points import point


def rec(t: float | None, m: int | None, ok: bool = True) -> Record:
    return Record(point({}, {"t": int((t or 0) * 1000), "m": m or 0}, maps=()), ok, "" if ok else "wrong", t, m)


def test_dominance_is_no_worse_everywhere_and_better_somewhere() -> None:
    assert dominates((1, 1), (2, 1)) and dominates((1, 1), (2, 2))
    assert not dominates((1, 1), (1, 1)) and not dominates((1, 3), (2, 2))


def test_front_keeps_the_non_dominated_points_sorted_by_time() -> None:
    hist = [rec(3, 10), rec(1, 30), rec(2, 20), rec(2, 25), rec(4, 40), rec(1.5, 30)]
    got = [(r.time, r.memory) for r in pareto_front(hist)]
    assert got == [(1, 30), (2, 20), (3, 10)]


def test_rejected_and_unmeasured_candidates_are_not_on_the_front() -> None:
    hist = [rec(0.1, 1, ok=False), rec(None, None), rec(5, 5)]
    assert [(r.time, r.memory) for r in pareto_front(hist)] == [(5, 5)]


def test_equal_points_appear_once() -> None:
    assert len(front([(1, 1), (1, 1), (0, 2)], key=lambda p: p)) == 2


def test_objectives_order_records() -> None:
    a, b = rec(1, 20), rec(2, 10)
    assert min([a, b], key=score("time")) is a
    assert min([a, b], key=score("memory")) is b
    assert min([a, b], key=score("pareto")) is a
    with pytest.raises(ValueError, match="objective"):
        score("speed")
