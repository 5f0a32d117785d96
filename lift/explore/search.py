"""Search strategies over the constrained space (thesis 4.5, 6.3.6): random, then local.

A strategy proposes search points (`lift.Choices`, lift.explore.points) one at a time from
what has been measured so far:

- `RandomSearch`: a random choice of rewrite-point parameters, then a valid joint mapping/
  tuning/launch choice sampled from the constraint space of the rewritten program
  (`Space.sample`, spread by random pivots), and sometimes vectorised sequential maps.
- `LocalSearch` (hill climbing): neighbours of the best candidate so far: one tuning or
  launch value doubled or halved, one map given another valid code, one point parameter
  changed; only neighbours the constraint model accepts (`Space.is_valid`) are proposed.
- `RandomThenLocal`: random sampling for the first part of the budget, then local search
  around the best, falling back to random samples when the neighbourhood is exhausted.
- `ModelBased` ("informed"): a random forest of log time over the choices' features
  (`lift.explore.forest`, `lift.explore.surrogate`: block rows/cols/width, layout, along, a
  skipped point, map kind and dimension, launch sizes), refitted to what was measured; proposes
  the untried pool candidate with the largest expected improvement (a tenth stay random).
- `Evolution` ("evolution"): after a few random candidates, mostly mutations (one value
  changed) of a parent drawn by tournament from the fastest few, some random ones kept.

`make_strategy(name, ...)` builds "informed" (`tune`'s default), "uniform" (random sampling),
"evolution" or "random-local" (random sampling, then hill climbing). Replayed over tables
recorded with the automatic block_nest points (benchmarks/tables: matmul 512^3, 257 candidates,
and the conv layer 32x32, 32 -> 32 channels, 525 candidates; each time the median of three
passes of seven runs; 20 seeds, 5% tolerance), the informed strategy reached uniform sampling's
best in 21.5 evaluations where uniform needed 52.3 (matmul) and 26.9 where it needed 98.0
(conv), with 6 random candidates before the first model (10 before: 26.9 and 30.9; the ridge
model of before: 34.9 and 54.2; benchmarks/strategies.py). On session 3's tables, where no
structural point varied and launch noise decided the best, it does worse than uniform (5 seeds:
55.8 vs 44.6 on matmul 256, 99.4 vs 91.4 on conv 24; with a warm-up of 10: 73.0 and 120.8): it
pays where structure decides the time.
`replay(table, name, seed)` re-runs a strategy over recorded measurements (`Table`, from a
tune's history: candidate -> time), so strategies are compared over many seeds without
running a kernel (benchmarks/strategies.py).
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from lift.arith import Cst
from lift.choices import Choices
from lift.constraints import CODES
from lift.errors import LiftValueError

from . import surrogate
from .evaluate import Evaluator, Record
from .points import decode, is_default, joint
from .points import key as point_key

VECTOR_WIDTHS = (4, 8, 16)


class Strategy(Protocol):
    """`propose(history) -> Choices | None` (None: nothing left to try)."""

    def propose(self, history: Sequence[Record]) -> Choices | None: ...


def _fastest(history: Sequence[Record], score: Callable[[Record], float]) -> Record | None:
    ok = [r for r in history if r.ok]
    return min(ok, key=score) if ok else None


class RandomSearch:
    """Random points of the space: structural choices, then a sampled valid joint choice."""

    def __init__(self, pipeline: Evaluator, structural: Mapping[str, Mapping[str, Sequence[Any]]],
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
        out = {}
        for lab, site in space.context.maps.items():
            if joint.get(lab) == 0 and site.scalar_elems and site.stride == Cst(1):
                out[lab] = self.rng.choice(VECTOR_WIDTHS)
        return out

    def propose(self, history: Sequence[Record]) -> Choices | None:
        tried = {point_key(r.candidate) for r in history}
        for _ in range(50):
            s = self.random_structural()
            pool = self.joint_samples(s)
            while pool:
                joint = pool.pop()
                cand = self.pipeline.point(s, joint, self.vectorise(s, joint))
                if point_key(cand) not in tried:
                    return cand
        return None


class LocalSearch:
    """Hill climbing: the valid neighbours of the best candidate measured so far."""

    def __init__(self, pipeline: Evaluator, structural: Mapping[str, Mapping[str, Sequence[Any]]],
                 score: Callable[[Record], float], seed: int = 0) -> None:
        self.pipeline, self.structural, self.score = pipeline, structural, score
        self.rng = random.Random(seed + 1)
        self._queue: list[Choices] = []
        self._centre: str | None = None

    def propose(self, history: Sequence[Record]) -> Choices | None:
        best = _fastest([r for r in history if not is_default(r.candidate)], self.score)
        if best is None:
            return None
        if point_key(best.candidate) != self._centre:
            self._centre = point_key(best.candidate)
            self._queue = list(self.neighbours(best.candidate))
            self.rng.shuffle(self._queue)
        tried = {point_key(r.candidate) for r in history}
        while self._queue:
            cand = self._queue.pop()
            if point_key(cand) not in tried:
                return cand
        return None

    def neighbours(self, c: Choices) -> Iterator[Choices]:
        """Valid points that differ from `c` in one value."""
        point, given = self.pipeline.point, joint(c)
        space = self.pipeline.space(c.points)
        if not isinstance(space, Exception):
            for var in space.variables:
                for v in _moves(var, given.get(var), space):
                    moved = {**given, var: v}
                    if space.is_valid(moved):
                        yield point(c.points, moved, c.vectorise)
            for lab, site in space.context.maps.items():
                if given.get(lab) == 0 and lab not in c.vectorise and site.scalar_elems:
                    for w in VECTOR_WIDTHS:
                        yield point(c.points, given, {**c.vectorise, lab: w})
        for lab, ps in self.structural.items():
            for p, vals in ps.items():
                for v in vals:
                    if v != c.points.get(lab, {}).get(p):
                        s = {**c.points, lab: {**c.points.get(lab, {}), p: v}}
                        pool = self._sample(s)
                        if pool is not None:
                            yield point(s, pool, {})

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
        return [c for c in CODES if c != value]
    return sorted({v for v in (value * 2, value // 2, value * 4, value // 4) if v >= 1 and v != value})


class RandomThenLocal:
    """Random sampling for a fraction of the budget, then hill climbing around the best."""

    def __init__(self, random_search: RandomSearch, local: LocalSearch, *, min_random: int = 4,
                 switch: Callable[[], bool] = lambda: False) -> None:
        self.random, self.local, self.min_random, self.switch = random_search, local, min_random, switch

    def propose(self, history: Sequence[Record]) -> Choices | None:
        n_random = sum(1 for r in history if not is_default(r.candidate))
        if n_random >= self.min_random and self.switch():
            cand = self.local.propose(history)
            if cand is not None:
                return cand
        return self.random.propose(history)


IN_FLIGHT = "in flight"  # the reason of a proposed candidate not measured yet (the driver's view: drive.py)
STRATEGIES = ("informed", "uniform", "evolution", "random-local")
DEFAULT = "informed"


def make_strategy(name: str, pipeline: Evaluator, structural: Mapping[str, Mapping[str, Sequence[Any]]],
                  score: Callable[[Record], float], seed: int = 0,
                  switch: Callable[[], bool] = lambda: False) -> Strategy:
    """The strategy called `name` (one of `STRATEGIES`) over `pipeline`'s space."""
    if name == "uniform":
        return RandomSearch(pipeline, structural, seed=seed)
    if name == "informed":
        return ModelBased(RandomSearch(pipeline, structural, seed=seed).propose, seed=seed)
    if name == "evolution":
        rnd = RandomSearch(pipeline, structural, seed=seed)
        local = LocalSearch(pipeline, structural, score, seed=seed)
        return Evolution(rnd.propose, local.neighbours, score, seed=seed)
    if name == "random-local":
        return RandomThenLocal(RandomSearch(pipeline, structural, seed=seed),
                               LocalSearch(pipeline, structural, score, seed=seed), switch=switch)
    raise LiftValueError(f"unknown search strategy {name!r}; one of {', '.join(STRATEGIES)}")


# ------------------------------------------------------------------ replay


class Table:
    """Recorded measurements: candidate key -> {"choices", "ok", "time"} (the default lowering left out)."""

    def __init__(self, rows: Mapping[str, dict[str, Any]]) -> None:
        self.rows = dict(rows)

    @staticmethod
    def from_history(history: Sequence[Record]) -> Table:
        return Table({point_key(r.candidate): {"choices": r.candidate.to_json(), "ok": r.ok,
                                          "time": r.time if r.ok else None}
                      for r in history if not is_default(r.candidate)})

    def to_json(self) -> dict[str, Any]:
        return {"rows": list(self.rows.values())}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Table:
        rows = {}
        for row in d["rows"]:
            rows[point_key(decode(row["choices"]))] = row
        return Table(rows)

    def best_time(self) -> float:
        return min(r["time"] for r in self.rows.values() if r["ok"])


class Evolution:
    """The informed strategy: mutate good candidates (an evolutionary search with an elite).

    Until `warmup` candidates are measured, and then for a fraction `explore` of proposals,
    a random candidate; otherwise a parent chosen by a tournament of two among the `elite`
    fastest correct candidates, and one of its untried neighbours (one value changed, from
    `neighbours`). Parents whose neighbourhood is exhausted are passed over."""

    def __init__(self, random_: Callable[[Sequence[Record]], Choices | None],
                 neighbours: Callable[[Choices], Iterator[Choices]], score: Callable[[Record], float],
                 seed: int = 0, *, warmup: int = 6, explore: float = 0.15, elite: int = 4,
                 fan_out: int = 48) -> None:
        self.random_, self.neighbours, self.score = random_, neighbours, score
        self.rng = random.Random(seed + 7)
        self.warmup, self.explore, self.elite, self.fan_out = warmup, explore, elite, fan_out
        self._pending: dict[str, list[Choices]] = {}

    def propose(self, history: Sequence[Record]) -> Choices | None:
        measured = [r for r in history if not is_default(r.candidate)]
        if len(measured) >= self.warmup and self.rng.random() >= self.explore:
            tried = {point_key(r.candidate) for r in history}
            ranked = sorted((r for r in measured if r.ok and r.time is not None), key=self.score)
            top = ranked[:self.elite]
            while top:
                parent = min(self.rng.sample(top, min(2, len(top))), key=self.score)
                cand = self._child(parent.candidate, tried)
                if cand is not None:
                    return cand
                top.remove(parent)
        return self.random_(history)

    def _child(self, parent: Choices, tried: set[str]) -> Choices | None:
        key = point_key(parent)
        if key not in self._pending:
            found = list(itertools.islice(self.neighbours(parent), self.fan_out))
            self.rng.shuffle(found)
            self._pending[key] = found
        pool = self._pending[key]
        while pool:
            cand = pool.pop()
            if point_key(cand) not in tried:
                return cand
        return None


class ModelBased:
    """The informed strategy: a model of log time over the choices' features, refitted after each
    measurement; after `warmup` random candidates each proposal is the untried pool candidate
    the model rates best (a fraction `explore` of proposals stay random). `model`: "forest"
    (a random forest, `lift.explore.forest`; the candidate with the largest expected
    improvement) or "ridge" (`lift.explore.surrogate.predict`; the best predicted time). The
    pool is up to `pool_size` random valid candidates, topped up by at most `refill` at each
    proposal (a candidate of a structural choice not drawn before costs its constraint space,
    0.1-0.3 s: a pool drawn whole at once took half of a 25 s tune), or a recorded table itself
    in a replay."""

    def __init__(self, random_: Callable[[Sequence[Record]], Choices | None], seed: int = 0, *,
                 warmup: int = 6, explore: float = 0.1, pool_size: int = 64, refill: int = 3,
                 model: str = "forest", pool: Callable[[], Sequence[Choices]] | None = None) -> None:
        self.random_, self.rng, self.seed = random_, random.Random(seed + 11), seed
        self.warmup, self.explore, self.pool_size, self.model = warmup, explore, pool_size, model
        self.refill = refill
        self._fixed_pool = pool
        self._pool: list[Choices] = []

    def propose(self, history: Sequence[Record]) -> Choices | None:
        measured = [r for r in history if not is_default(r.candidate) and r.reason != IN_FLIGHT]
        if len(measured) < self.warmup or self.rng.random() < self.explore:
            return self.random_(history)
        tried = {point_key(r.candidate) for r in history}
        pool = self._candidates(history, tried)
        if not pool:
            return self.random_(history)
        if self.model == "ridge":
            rated = (-surrogate.predict(measured, pool)).tolist()
        else:
            rated = surrogate.improvement(measured, pool, seed=self.seed * 7919 + len(measured)).tolist()
        return max(zip(rated, (point_key(c) for c in pool), pool))[2]

    def _candidates(self, history: Sequence[Record], tried: set[str]) -> list[Choices]:
        if self._fixed_pool is not None:
            return [c for c in self._fixed_pool() if point_key(c) not in tried]
        self._pool = [c for c in self._pool if point_key(c) not in tried]
        for _ in range(min(self.refill, self.pool_size - len(self._pool))):
            c = self.random_([*history, *(Record(p, False) for p in self._pool)])
            if c is None:
                break
            self._pool.append(c)
        return list(self._pool)


def _table_neighbours(table: Table, near: int = 6) -> Callable[[Choices], Iterator[Choices]]:
    """The `near` recorded candidates closest to one (values compared on a log2 scale)."""
    cands = [decode(r["choices"]) for r in table.rows.values()]
    flat = [(_flat(c), c) for c in cands]

    def neighbours(c: Choices) -> Iterator[Choices]:
        me = _flat(c)
        ranked = sorted((_distance(me, f), i) for i, (f, _) in enumerate(flat) if f != me)
        return iter([flat[i][1] for _, i in ranked[:near]])

    return neighbours


def _flat(c: Choices) -> dict[str, Any]:
    out: dict[str, Any] = {f"s.{k}.{p}": v for k, ps in c.points.items() for p, v in ps.items()}
    out.update({f"j.{k}": v for k, v in joint(c).items()})
    out.update({f"v.{k}": v for k, v in c.vectorise.items()})
    return out


def _distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    d = 0.0
    for k in set(a) | set(b):
        x, y = a.get(k), b.get(k)
        if x == y:
            continue
        if isinstance(x, int) and isinstance(y, int) and not isinstance(x, bool) and x > 0 and y > 0 \
                and not k.startswith("j.m"):
            d += abs(math.log2(x) - math.log2(y))
        else:
            d += 2.0
    return d


class Replayed:
    """The outcome of a replay: the recorded time (None: rejected) of each evaluation, in order."""

    def __init__(self, keys: list[str], times: list[float | None]) -> None:
        self.keys, self.times = keys, times

    def evaluations_to(self, target: float) -> int | None:
        """How many evaluations it took to measure a time at most `target` (None: never)."""
        for i, t in enumerate(self.times):
            if t is not None and t <= target * (1 + 1e-9):
                return i + 1
        return None


def replay(table: Table, strategy: str, seed: int = 0, limit: int | None = None, *,
           stop: float | None = None, pool: int | None = None, **options: Any) -> Replayed:
    """Run `strategy` ("uniform", "informed" or "evolution") over recorded measurements: a
    proposal is "measured" by looking it up (the proposals are drawn from the table itself).
    With `stop`, the replay ends at the first time at most `stop` (what follows it cannot change
    `evaluations_to(stop)`). The informed strategy chooses among every untried row, or with
    `pool`, among that many rows drawn at random for each proposal (as `tune`'s pool of random
    candidates); `options` go to it (`ModelBased`)."""
    rng = random.Random(seed)
    order = list(table.rows)
    rng.shuffle(order)

    def uniform(history: Sequence[Record]) -> Choices | None:
        tried = {point_key(r.candidate) for r in history}
        for k in order:
            if k not in tried:
                return decode(table.rows[k]["choices"])
        return None

    def score(r: Record) -> float:
        return r.time if r.time is not None else float("inf")

    cands = [decode(r["choices"]) for r in table.rows.values()]
    draw = random.Random(seed + 1)

    def candidates() -> list[Choices]:
        return cands if pool is None else draw.sample(cands, min(pool, len(cands)))

    chooser: Any = {"uniform": uniform,
                    "evolution": Evolution(uniform, _table_neighbours(table), score, seed=seed).propose,
                    "informed": ModelBased(uniform, seed=seed, pool=candidates, **options).propose}[strategy]
    history: list[Record] = []
    for _ in range(limit or len(order)):
        cand = chooser(history)
        if cand is None:
            break
        row = table.rows[point_key(cand)]
        history.append(Record(cand, bool(row["ok"]), "" if row["ok"] else "rejected", row["time"]))
        if stop is not None and row["ok"] and row["time"] <= stop * (1 + 1e-9):
            break
    return Replayed([point_key(r.candidate) for r in history], [r.time if r.ok else None for r in history])
