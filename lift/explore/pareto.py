"""The time/memory Pareto front of measured candidates (thesis 4.5.3, multi-objective search).

A candidate dominates another when it is no slower and uses no more memory, and is strictly
better in one of the two. The front is the set of correct candidates nothing dominates,
sorted by time (so memory decreases along it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from .evaluate import Record

R = TypeVar("R")


def dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """`a` is no worse than `b` in every objective and better in one (smaller is better)."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def front(items: Iterable[R], key: Callable[[R], tuple[float, ...]]) -> list[R]:
    """The items whose objectives (`key`, smaller is better) no other item dominates, sorted by
    the objectives; items with equal objectives keep only the first."""
    pts = sorted(items, key=key)
    out: list[R] = []
    seen: set[tuple[float, ...]] = set()
    for p in pts:
        k = key(p)
        if k in seen or any(dominates(key(q), k) for q in out):
            continue
        seen.add(k)
        out.append(p)
    return out


def objectives(r: Record) -> tuple[float, float]:
    """(seconds, bytes) of a measured record."""
    assert r.time is not None and r.memory is not None, "objectives of an unmeasured record"
    return (float(r.time), float(r.memory))


def pareto_front(history: Sequence[Record]) -> list[Record]:
    """The time/memory front of the correct candidates in `history`, fastest first."""
    return front([r for r in history if r.ok and r.time is not None and r.memory is not None], objectives)


def score(objective: str) -> Callable[[Record], tuple[float, ...]]:
    """The ordering of records for an objective: "time" (then memory), "memory" (then time), or
    "pareto" (time on the front, the fastest point as the single best)."""
    if objective == "memory":
        return lambda r: (float(r.memory or 0), float(r.time or 0))
    if objective in ("time", "pareto"):
        return lambda r: (float(r.time or 0), float(r.memory or 0))
    raise ValueError(f'objective must be "time", "memory" or "pareto", not {objective!r}')
