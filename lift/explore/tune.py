"""`lift.tune`: explore rewrite points, mappings, tuning values and vectorisation (stage 10).

    best = lift.tune(dot, x, y, budget=60)       # TuneResult(best, pareto, history)
    best.best(x, y); best.best.source; best.best.choices

Each candidate is rewrite-point choices -> mapping and tuning values (the constraint
space) -> vectorisation -> compile -> run -> check against the interpreter's result
(computed once) -> time and memory. A wrong or crashing candidate is kept in `history` as
rejected, with the reason, and never chosen. The first candidate is the default lowering
of `lift.compile`, so the result is never worse than it. With `auto=True` (the default)
the program also gets automatic rewrite points at its natural places
(`lift.rewrites.auto_points`: chunked, fused, vectorised reductions; vectorised maps),
whose seed candidates (seeds.py) are tried before random sampling; the user's own points
are kept as written. The few fastest candidates are timed again at the end, so one noisy
run does not pick the winner. The winner is stored in the
tuning database; a later `tune` of the same program, shapes, device and objective returns
it at once (`refresh=True` searches again).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from lift.choices import Choices
from lift.errors import LiftValueError
from lift.ir.nodes import Lambda, Node

from .database import TuningDB, tuning_key
from .evaluate import Candidate, Pipeline, Record, all_skipped
from .pareto import pareto_front, score
from .search import LocalSearch, RandomSearch, RandomThenLocal
from .seeds import Seeded


@dataclass
class TuneResult:
    """The outcome of `tune`: the best compiled `Program` (its `.choices` say how it was made),
    the time/memory Pareto front and every candidate tried, in order."""

    best: Any
    pareto: list[Record]
    history: list[Record]
    best_record: Record | None = None
    cached: bool = False
    reference_checked: bool = True
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def choices(self) -> Choices:
        """The winning `lift.Choices`: `lift.compile(expr, choices=result.choices)` rebuilds `best`."""
        rec = self.best_record
        return rec.choices if rec is not None and rec.choices is not None else Choices()

    def __repr__(self) -> str:
        t = self.best_record.time if self.best_record else None
        shown = f"{t * 1e3:.3f} ms" if t else "?"
        rejected = sum(1 for r in self.history if not r.ok)
        return (f"<TuneResult best {shown}, {len(self.history)} candidates ({rejected} rejected), "
                f"{len(self.pareto)} on the Pareto front{', cached' if self.cached else ''}>")


def tune(expr: Node, *arrays: Any, budget: float = 60, objective: str = "time", device: Any = None,
         seed: int = 0, db: TuningDB | str | bool | None = None, progress: bool = True,
         refresh: bool = False, repeat: int = 3, auto: bool = True) -> TuneResult:
    """Search for the fastest (or smallest, or Pareto-optimal) correct compilation of `expr`
    on `arrays` within `budget` seconds; `db=False` uses no tuning database. With `auto`,
    rewrite points are also placed automatically at the program's natural places
    (`lift.rewrites.auto_points`; the user's points are kept as written) and tried first."""
    rank = score(objective)
    if not isinstance(expr, Lambda):
        raise LiftValueError("tune needs a program: wrap it in lift.fun([types...], lambda ...)", node=expr)
    dev = _device(device)
    database = None if db is False else db if isinstance(db, TuningDB) else TuningDB(db)
    sizes = _sizes(expr, arrays)
    expr, structural, auto_labels = _search_space(expr, sizes, auto)
    key = tuning_key(expr, arrays, dev.key, objective)
    if database is not None and not refresh:
        hit = _from_database(expr, arrays, device, database.lookup(key))
        if hit is not None:
            return hit
    pipe = Pipeline(expr, arrays, device, sizes, repeat=repeat)
    start = time.perf_counter()
    pipe.deadline = start + budget
    pipe.compute_reference()
    history: list[Record] = []
    bar = _Progress(budget, sys.stderr if progress else None)
    history.append(pipe.measure(Candidate(all_skipped(structural), default=True)))
    bar.update(history, rank)
    rnd = RandomSearch(pipe, structural, seed=seed)
    local = LocalSearch(pipe, structural, lambda r: rank(r), seed=seed)
    strategy: Any = RandomThenLocal(rnd, local, switch=lambda: time.perf_counter() - start > budget * 0.4)
    if auto_labels:
        strategy = Seeded(pipe, structural, auto_labels, strategy)
    while time.perf_counter() - start < budget:
        cand = strategy.propose(history)
        if cand is None:
            break
        history.append(pipe.measure(cand))
        _release(history, rank)
        bar.update(history, rank)
    bar.close()
    if objective == "time":
        _confirm(history, pipe, rank)
    return _result(history, rank, database, key, time.perf_counter() - start)


def _confirm(history: list[Record], pipe: Pipeline, rank: Any, top: int = 3, repeat: int = 10,
             limit_s: float = 0.05) -> None:
    """Time the `top` fastest correct candidates again, `repeat` times each, and keep the fastest
    of all their runs (one lucky or unlucky run of the search does not decide the winner).
    Candidates slower than `limit_s` a run keep their first measurement."""
    ok = sorted((r for r in history if r.ok and r.time is not None and r.time < limit_s), key=rank)
    for r in ok[:top]:
        prog = r.program
        try:
            if prog is None:
                prog = pipe.build(r.candidate)
            r.time = min(r.time, *prog.time(*pipe.arrays, repeat=repeat))  # type: ignore[type-var]
            r.program = prog
        except Exception:  # noqa: BLE001 - keep the search's measurement
            continue
    _release(history, rank)


def _search_space(expr: Lambda, sizes: dict[str, int], auto: bool) -> tuple[Any, dict[str, Any], list[str]]:
    """The program searched (with automatic points when `auto`), its structural space and the
    labels of the automatic points (restricted to their useful values by `auto_space`)."""
    from lift.rewrites import auto_points, auto_space, is_auto, structural_space

    if auto:
        expr = auto_points(expr, sizes)
    structural = structural_space(expr)
    structural.update(auto_space(expr, sizes))
    return expr, structural, [lab for lab in structural if is_auto(lab)]


def _release(history: list[Record], rank: Any) -> None:
    """Drop the compiled programs (and their device buffers) of every record but the best."""
    ok = [r for r in history if r.ok]
    best = min(ok, key=rank) if ok else None
    for r in history:
        if r is not best:
            r.program = None


def _result(history: list[Record], rank: Any, database: TuningDB | None, key: str, elapsed: float) -> TuneResult:
    ok = [r for r in history if r.ok]
    if not ok:
        reasons = "; ".join(sorted({r.reason for r in history}))[:500]
        raise LiftValueError(f"no candidate compiled and matched the interpreter: {reasons}")
    best = min(ok, key=rank)
    front = pareto_front(history)
    if database is not None:
        database.store(key, {"choices": best.choices.to_json(), "time": best.time, "memory": best.memory,
                             "candidates": len(history), "pareto": [r.to_json() for r in front]})
    stats = {"seconds": elapsed, "candidates": len(history), "rejected": len(history) - len(ok),
             "default_time": history[0].time}
    return TuneResult(best.program, front, history, best, stats=stats)


def _from_database(expr: Node, arrays: Sequence[Any], device: Any, entry: dict | None) -> TuneResult | None:
    """The stored winner rebuilt by `lift.compile` from its `Choices` (no search, no interpreter
    run), or None."""
    if entry is None:
        return None
    pipe = Pipeline(expr, arrays, device, _sizes(expr, arrays))
    pipe.cache_dir = None  # the winner's binary comes from the build cache
    try:
        choices = Choices.from_json(entry["choices"])
        prog = pipe.compile(choices)
    except Exception:  # noqa: BLE001 - a stale entry (older format, the compiler changed): search again
        return None
    cand = Candidate(dict(choices.points), {**(choices.mapping or {}), **choices.tuning, **choices.launch},
                     dict(choices.vectorise))
    rec = Record(cand, True, "from the tuning database", entry.get("time"), entry.get("memory"),
                 checked=False, program=prog, choices=prog.choices)
    front = [rec]
    return TuneResult(prog, front, [rec], rec, cached=True, reference_checked=False,
                      stats={"candidates": 0, "cached": True})


def _sizes(expr: Lambda, arrays: Sequence[Any]) -> dict[str, int]:
    from lift.interpret import bind_sizes

    return bind_sizes([p.ptype for p in expr.params], tuple(arrays), expr)


def _device(device: Any) -> Any:
    from lift import devices

    return device if isinstance(device, devices.Device) else devices.current(device)


class _Progress:
    """A one-line progress bar on a stream (none when `stream` is None)."""

    def __init__(self, budget: float, stream: TextIO | None) -> None:
        self.budget, self.stream, self.start = budget, stream, time.perf_counter()

    def update(self, history: Sequence[Record], rank: Any) -> None:
        if self.stream is None:
            return
        el = time.perf_counter() - self.start
        ok = [r for r in history if r.ok]
        best = min(ok, key=rank) if ok else None
        frac = min(1.0, el / self.budget) if self.budget > 0 else 1.0
        filled = int(frac * 20)
        shown = f"best {best.time * 1e3:.3f} ms" if best and best.time else "no result yet"
        self.stream.write(f"\r[lift.tune] [{'#' * filled}{'.' * (20 - filled)}] {el:5.1f}/{self.budget:g} s "
                          f"{len(history)} tried, {len(history) - len(ok)} rejected, {shown} ")
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.write("\n")
            self.stream.flush()
