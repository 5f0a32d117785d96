"""Search strategies over the constrained space (thesis 4.5, 6.3.6): random, then local.

A strategy proposes `Candidate`s one at a time from what has been measured so far:

- `RandomSearch`: a random choice of rewrite-point parameters, then a valid joint mapping/
  tuning/launch choice sampled from the constraint space of the rewritten program
  (`Space.sample`, spread by random pivots), and sometimes vectorised sequential maps.
- `LocalSearch` (hill climbing): neighbours of the best candidate so far: one tuning or
  launch value doubled or halved, one map given another valid code, one point parameter
  changed; only neighbours the constraint model accepts (`Space.is_valid`) are proposed.
- `RandomThenLocal`: random sampling for the first part of the budget, then local search
  around the best, falling back to random samples when the neighbourhood is exhausted.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from .evaluate import Candidate, Pipeline, Record

VECTOR_WIDTHS = (4, 8, 16)


class Strategy(Protocol):
    """`propose(history) -> Candidate | None` (None: nothing left to try)."""

    def propose(self, history: Sequence[Record]) -> Candidate | None: ...


def _fastest(history: Sequence[Record], score: Callable[[Record], float]) -> Record | None:
    ok = [r for r in history if r.ok]
    return min(ok, key=score) if ok else None


class RandomSearch:
    """Random points of the space: structural choices, then a sampled valid joint choice."""

    def __init__(self, pipeline: Pipeline, structural: Mapping[str, Mapping[str, Sequence[Any]]],
                 seed: int = 0, batch: int = 8) -> None:
        self.pipeline, self.structural, self.rng, self.batch = pipeline, structural, random.Random(seed), batch
        self._pools: dict[str, list[dict[str, int]]] = {}
        self._draws: dict[str, int] = {}
        self.refills = 40
        self.slow_sample_s = 3.0

    def random_structural(self) -> dict[str, dict[str, Any]]:
        """Random point parameters; a point is applied three times in four."""
        return {lab: {p: (self.rng.random() < 0.25) if p == "skip" else self.rng.choice(tuple(vals))
                      for p, vals in ps.items()} for lab, ps in self.structural.items()}

    def joint_samples(self, structural: Mapping[str, Mapping[str, Any]]) -> list[dict[str, int]]:
        """A shuffled pool of valid joint choices for these structural choices, drawn again
        (with a new seed, at most `refills` times) when it runs out."""
        key = repr(sorted((k, sorted(v.items())) for k, v in structural.items()))
        pool = self._pools.setdefault(key, [])
        if not pool and self._draws.get(key, 0) < self.refills:
            self._draws[key] = self._draws.get(key, 0) + 1
            space = self.pipeline.space(structural)
            t0 = time.perf_counter()
            if not isinstance(space, Exception):
                try:
                    pool.extend(dict(c) for c in space.sample(self.batch, seed=self.rng.randrange(1 << 30)))
                except Exception:  # noqa: BLE001 - an unsatisfiable space has no samples
                    pass
            if time.perf_counter() - t0 > self.slow_sample_s:
                self._draws[key] = self.refills  # the solver struggles here: draw no more
            self.rng.shuffle(pool)
        return pool

    def vectorise(self, structural: Mapping[str, Mapping[str, Any]], joint: Mapping[str, int]) -> dict[str, int]:
        """Sometimes vectorise the sequential maps that read contiguous scalars."""
        space = self.pipeline.space(structural)
        if isinstance(space, Exception) or self.rng.random() < 0.5:
            return {}
        from lift.arith import Cst

        out = {}
        for lab, site in space.context.maps.items():
            if joint.get(lab) == 0 and site.scalar_elems and site.stride == Cst(1):
                out[lab] = self.rng.choice(VECTOR_WIDTHS)
        return out

    def propose(self, history: Sequence[Record]) -> Candidate | None:
        tried = {r.candidate.key() for r in history}
        for _ in range(50):
            s = self.random_structural()
            pool = self.joint_samples(s)
            while pool:
                joint = pool.pop()
                cand = Candidate(s, joint, self.vectorise(s, joint))
                if cand.key() not in tried:
                    return cand
        return None


class LocalSearch:
    """Hill climbing: the valid neighbours of the best candidate measured so far."""

    def __init__(self, pipeline: Pipeline, structural: Mapping[str, Mapping[str, Sequence[Any]]],
                 score: Callable[[Record], float], seed: int = 0) -> None:
        self.pipeline, self.structural, self.score = pipeline, structural, score
        self.rng = random.Random(seed + 1)
        self._queue: list[Candidate] = []
        self._centre: str | None = None

    def propose(self, history: Sequence[Record]) -> Candidate | None:
        best = _fastest([r for r in history if not r.candidate.default], self.score)
        if best is None:
            return None
        if best.candidate.key() != self._centre:
            self._centre = best.candidate.key()
            self._queue = list(self.neighbours(best.candidate))
            self.rng.shuffle(self._queue)
        tried = {r.candidate.key() for r in history}
        while self._queue:
            cand = self._queue.pop()
            if cand.key() not in tried:
                return cand
        return None

    def neighbours(self, c: Candidate) -> Iterator[Candidate]:
        """Valid candidates that differ from `c` in one value."""
        space = self.pipeline.space(c.structural)
        if not isinstance(space, Exception):
            for var in space.variables:
                for v in _moves(var, c.joint.get(var), space):
                    joint = {**c.joint, var: v}
                    if space.is_valid(joint):
                        yield Candidate(c.structural, joint, c.vectorise)
            for lab, site in space.context.maps.items():
                if c.joint.get(lab) == 0 and lab not in c.vectorise and site.scalar_elems:
                    for w in VECTOR_WIDTHS:
                        yield Candidate(c.structural, c.joint, {**c.vectorise, lab: w})
        for lab, ps in self.structural.items():
            for p, vals in ps.items():
                for v in vals:
                    if v != c.structural.get(lab, {}).get(p):
                        s = {**c.structural, lab: {**c.structural.get(lab, {}), p: v}}
                        pool = self._sample(s)
                        if pool is not None:
                            yield Candidate(s, pool, {})

    def _sample(self, structural: Mapping[str, Mapping[str, Any]]) -> dict[str, int] | None:
        space = self.pipeline.space(structural)
        if isinstance(space, Exception):
            return None
        try:
            got = space.sample(1, seed=self.rng.randrange(1 << 30))
        except Exception:  # noqa: BLE001
            return None
        return dict(got[0]) if got else None


def _moves(var: str, value: int | None, space: Any) -> list[int]:
    """Values to try next to `value` for one variable of the joint space."""
    if value is None:
        return []
    if var in space.context.maps:
        from lift.constraints import CODES

        return [c for c in CODES if c != value]
    return sorted({v for v in (value * 2, value // 2, value * 4, value // 4) if v >= 1 and v != value})


class RandomThenLocal:
    """Random sampling for a fraction of the budget, then hill climbing around the best."""

    def __init__(self, random_search: RandomSearch, local: LocalSearch, *, min_random: int = 4,
                 switch: Callable[[], bool] = lambda: False) -> None:
        self.random, self.local, self.min_random, self.switch = random_search, local, min_random, switch

    def propose(self, history: Sequence[Record]) -> Candidate | None:
        n_random = sum(1 for r in history if not r.candidate.default)
        if n_random >= self.min_random and self.switch():
            cand = self.local.propose(history)
            if cand is not None:
                return cand
        return self.random.propose(history)
