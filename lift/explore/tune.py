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
are kept as written. Before choosing, the few fastest candidates and the default lowering
are timed again, interleaved, and the winner is chosen by those medians (confirm.py; a lead
of 2% or less over the default keeps the default), so one lucky run does not pick the winner
and the result is never measured slower than the default. Every finished candidate is written to the tuning database
(database.py, shared.py) as it finishes, and candidates already there are not measured
again: a stopped tune resumes, concurrent tunes of one problem share their work. The winner
is stored too; a later `tune` of the same program, shapes, device and objective returns it
at once (`refresh=True` measures and searches again). A database that cannot be read or
written warns (`TuningDatabaseWarning`) and the tune goes on without it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from lift import devices
from lift.choices import Choices
from lift.compile import serialised
from lift.errors import LiftValueError
from lift.interpret import bind_sizes
from lift.ir.nodes import Lambda, Node
from lift.rewrites import auto_points, auto_space, is_auto, structural_space
from lift.rewrites.block_space import Registers
from lift.rewrites.gpu_search import gpu_search_space
from lift.rules.normalise import normalise

from .cluster import ray_backend
from .confirm import confirm, contenders, process_timer, reserve, worker_timer
from .database import TuningDB
from .dbkeys import encode_choices, liftcl_version, measure_key, objective_key, program_hash, shapes_key
from .drive import LocalBackend, drive
from .effort import effort_of, limits
from .evaluate import Evaluator, Record
from .pareto import pareto_front, score
from .plot import plot_front
from .points import default_point, describe, is_default, json_default
from .progress import Progress
from .reuse import symbolic_sizes
from .roles import LocalRunner
from .search import DEFAULT as DEFAULT_STRATEGY
from .search import make_strategy
from .seeds import Seeded
from .shared import SharedWork, record_from_json
from .synchronise import Synchronised
from .transfer import Transferred, seed_points
from .unique import Unique
from .worker import GRACE_S
from .worker import shared as shared_worker


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

    def to_json(self) -> dict[str, Any]:
        """The winner, the time/memory Pareto front (fastest first) and the search's figures."""
        best = self.best_record.to_json() if self.best_record else None
        return {"choices": encode_choices(self.choices), "best": best,
                "pareto": [r.to_json() for r in self.pareto], "stats": dict(self.stats),
                "cached": self.cached, "candidates": [r.to_json() for r in self.history]}

    def plot(self, path: Any, title: str | None = None) -> Any:
        """Draw every correct candidate's time and memory and the Pareto front (thesis Fig. 4.5)
        into an image file `path` (PNG, SVG, PDF: by its suffix); needs matplotlib
        (`pip install "liftcl[plot]"`). Returns the path."""
        return plot_front(self, path, title)

    def __repr__(self) -> str:
        t = self.best_record.time if self.best_record else None
        shown = f"{t * 1e3:.3f} ms" if t else "?"
        rejected = sum(1 for r in self.history if not r.ok)
        return (f"<TuneResult best {shown}, {len(self.history)} candidates ({rejected} rejected), "
                f"{len(self.pareto)} on the Pareto front{', cached' if self.cached else ''}>")


@serialised  # z3 (the spaces, the sampler) is not thread-safe: tunes and compiles run one at a time
def tune(expr: Node, *arrays: Any, budget: float | None = None, objective: str = "time", device: Any = None,
         seed: int = 0, db: TuningDB | str | bool | None = None, progress: bool = True,
         refresh: bool = False, repeat: int = 3, auto: bool = True, isolate: bool = True,
         strategy: str | None = None, trials: int | None = None, cluster: str | None = None,
         ahead: int | None = None, builders: int | None = None, effort: str | None = None) -> TuneResult:
    """Search for the fastest (or smallest, or Pareto-optimal) correct compilation of `expr`
    on `arrays` within `budget` seconds; `db=False` uses no tuning database.
    `effort` ("quick", "normal": the default, or "exhaustive"; lift.explore.effort) says how much
    of the space to explore: "quick" tries the default lowering, the winners stored for this
    program at the nearest other sizes and the automatic points' seeds, then a few informed
    candidates (`effort.QUICK_TRIALS` in all, 20 s unless `budget` is given); "normal" searches
    until the budget (60 s unless given) is spent; "exhaustive" searches without the uniqueness
    constraints on tuning values and thread dimensions (600 s unless given). Every level keeps
    the contract: never measured slower than the default lowering. At every level the
    space carries the uniqueness constraints unless exhaustive (lift.constraints.unique: tile
    sizes of all-sequential loops fixed, thread dimensions 1 and 2 ordered), and a candidate
    that plans the same program and choices as one proposed before is not built
    (lift.explore.unique; `stats["redundant"]` counts them). A program over symbolic sizes
    tuned before at other sizes starts from those winners that are valid at these
    (lift.explore.transfer; `stats["transferred"]`). With `auto`,
    rewrite points are also placed automatically at the program's natural places
    (`lift.rewrites.auto_points`; the user's points are kept as written) and tried first.
    With `isolate` (the default) candidates are built and run in a worker process
    (`lift.explore.worker`): one that crashes or hangs is rejected with the reason.
    `strategy`: "informed" (the default: a random forest's expected improvement,
    `lift.explore.search.ModelBased`), "random-local" (random sampling, then hill climbing),
    "uniform" or "evolution" (see benchmarks/strategies.py
    for how they compare on recorded measurements).
    `trials` (keyword-only; None: no limit): stop after that many candidates (the default
    lowering included, rejected ones too) even when budget is left; the budget still bounds
    the wall time. With `trials`, the switch from random sampling to local search also
    follows the count (after 40% of the trials) instead of the clock, so which candidates are
    tried does not depend on the machine's speed (tests use a generous budget and a count).
    Candidates are built (rewriting, solving, code generation: lift.explore.roles' builder) and
    measured by a runner that owns the device, one at a time (lift.explore.drive); `ahead`
    built candidates may wait for the runner (default 2, or 0 with `trials`: the sequential
    order), so the builder compiles while the runner times. `cluster="ray"` (or
    "ray://host:port", or "auto") runs the builders as Ray tasks (`builders` at once, default
    the cluster's CPUs) and the runners as Ray actors on every node that advertises the
    device (lift.explore.cluster; `pip install "liftcl[ray]"`)."""
    start = time.perf_counter()  # the budget counts from the call: the reference interpretation is inside it
    level = effort_of(effort)
    budget, trials = limits(level, budget, trials)
    rank = score(objective)
    if trials is not None and (not isinstance(trials, int) or isinstance(trials, bool) or trials < 1):
        raise LiftValueError(f"trials must be an int of at least 1 or None, got {trials!r}")
    if not isinstance(expr, Lambda):
        raise LiftValueError("tune needs a program: wrap it in lift.fun([types...], lambda ...)", node=expr)
    expr = cast(Lambda, normalise(expr))  # every spelling of a program searches one space (lift.rules.normalise)
    dev = _device(device)
    database = None if db is False else db if isinstance(db, TuningDB) else TuningDB(None if db is True else db)
    sizes = _sizes(expr, arrays)
    user_hash, symbolic, user = program_hash(expr), symbolic_sizes(expr), expr
    expr, structural, auto_labels = _search_space(expr, sizes, auto, dev)
    mkey = measure_key(expr, arrays, dev.key)
    key = objective_key(mkey, objective)
    info = {"mkey": mkey, "user_program": user_hash, "program": str(expr)[:2000], "shapes": shapes_key(arrays),
            "sizes": json.dumps({k: int(v) for k, v in sizes.items() if k in symbolic}, sort_keys=True),
            "device": dev.key, "device_name": dev.name, "version": liftcl_version(), "objective": objective,
            "auto": auto}
    plain = user if expr is not user else None  # the default candidate: lift.compile of the user's program
    if database is not None and not refresh:
        hit = _from_database(expr, arrays, device, database.lookup(key), plain)
        if hit is not None:
            return hit
    pipe = Evaluator(expr, arrays, device, sizes, repeat=repeat)
    pipe.plain = plain
    pipe.deadline = start + budget
    pipe.unique = level.unique
    bound = {k: int(v) for k, v in sizes.items() if k in symbolic}
    near = seed_points(pipe, database, user_hash, dev.key, bound)  # winners tuned at other sizes
    try:
        return _search(TuneRun(pipe, tuple(arrays), structural, auto_labels, database, key, info, start,
                               budget=budget, transferred=tuple(near), rank=rank, objective=objective, seed=seed,
                               progress=progress, refresh=refresh, isolate=isolate, strategy=strategy,
                               trials=trials, dev=dev, mkey=mkey, cluster=cluster, ahead=ahead,
                               builders=builders))
    finally:
        pipe.close_reference()


@dataclass(frozen=True)
class TuneRun:
    """What one `tune` searches with: its evaluator, arrays and space, where it keeps the result,
    and the arguments of the call (see `tune`)."""

    pipe: Evaluator
    arrays: tuple[Any, ...]
    structural: dict[str, Any]
    auto_labels: list[str]
    database: TuningDB | None
    key: str
    info: dict[str, Any]
    start: float
    budget: float
    transferred: tuple[Choices, ...]
    rank: Any
    objective: str
    seed: int
    progress: bool
    refresh: bool
    isolate: bool
    strategy: str | None
    trials: int | None
    dev: Any
    mkey: str
    cluster: str | None = None
    ahead: int | None = None
    builders: int | None = None


def _search(run: TuneRun) -> TuneResult:
    """The search of `tune`, from the default lowering to the result: the back end chosen
    (a Ray cluster, a worker process, or this process), then `_searched`."""
    pipe = run.pipe
    backend: Any = None
    if run.cluster is not None:
        backend = ray_backend(run.cluster, pipe, run.dev, run.arrays, builders=run.builders)
        pipe.worker = backend.ops()  # the default lowering and the confirmation round: on a runner actor
    elif run.isolate:
        pipe.worker = shared_worker(run.dev, run.arrays)  # started once per process (opening the device takes ~1 s)
        backend = LocalBackend(pipe, LocalRunner(pipe, pipe.worker))
    try:
        return _searched(run, backend, _ahead(run.ahead, backend, run.trials))
    finally:
        if backend is not None:
            backend.close()


def _searched(run: TuneRun, backend: Any, ahead: int) -> TuneResult:
    """`_search` once the back end is chosen: the default lowering first, then the strategy's
    candidates through `backend` (None: measured in this process, `isolate=False`)."""
    pipe, database, rank, objective = run.pipe, run.database, run.rank, run.objective
    start, budget, trials, transferred = run.start, run.budget, run.trials, run.transferred
    structural = run.structural
    work = SharedWork(pipe, database, run.mkey, reuse=not run.refresh)
    history: list[Record] = []
    bar = Progress(budget, sys.stderr if run.progress else None)
    first = work.measure(default_point(structural))
    history.extend([first] if first is not None else [])  # None: a concurrent tune measures it; collected later
    bar.update(history, rank, work.reused)
    search = make_strategy(run.strategy or DEFAULT_STRATEGY, pipe, structural, rank, run.seed,
                           switch=_switch(start, budget, trials, history))
    if run.auto_labels:
        search = Seeded(pipe, structural, run.auto_labels, search)
    if transferred:  # the winners tuned at the nearest other sizes, valid at these: first
        search = Transferred(transferred, search)
    search = synchronised = Synchronised(pipe, search)  # mappings classified before they are planned
    search = unique = Unique(pipe, search)

    def time_left() -> bool:
        return time.perf_counter() - start < budget - _reserve(history, rank, objective, budget)

    def on_record() -> None:
        _release(history, rank)
        bar.update(history, rank, work.reused)

    if backend is not None:
        pipe.start_reference()
        backend.prepare(pipe)
        drive(backend, work, search, history, time_left=time_left, ahead=ahead, on_record=on_record,
              may_propose=lambda flying: trials is None or len(history) + flying < trials,
              wait_until=lambda: pipe.deadline + GRACE_S)
        backend.settle()
    while backend is None and time_left() and (trials is None or len(history) < trials):
        cand = search.propose(history)  # in this process, one candidate after the other (isolate=False)
        if cand is None:
            break
        rec = work.measure(cand)
        if rec is None:  # another tune is measuring it: take what others have finished meanwhile
            history.extend(work.collect(history))
            continue
        history.append(rec)
        on_record()
    work.wait_pending(history, start + budget)
    history.extend(work.collect(history))
    if not any(r.ok for r in history):  # all this tune proposed is being measured elsewhere: wait for it
        work.wait_pending(history, time.perf_counter() + budget + 60)
    _rescue_default(history, pipe)
    bar.close()
    winner, confirmed = _confirm(history, pipe, rank) if objective == "time" else (None, {})
    result = _result(history, rank, pipe, time.perf_counter() - start, winner)
    result.stats.update(confirmed)
    result.stats.update(measured=work.measured, from_database=work.reused, redundant=unique.redundant,
                        transferred=len(transferred), mappings=dict(synchronised.counts),
                        unsynchronisable=synchronised.excluded)
    if database is not None and result.reference_checked:  # an unchecked default is no winner to keep
        database.store(run.key, _entry(result), run.info, replace=run.refresh)
    return result


def _ahead(ahead: int | None, backend: Any, trials: int | None) -> int:
    """How many built candidates may wait for a runner: `ahead`, else the cluster's builders, else 2
    (0 with `trials`: the sequential order, the same candidates on any machine)."""
    if ahead is not None:
        return max(0, int(ahead))
    return getattr(backend, "max_builds", None) or (0 if trials is not None else 2)


def _rescue_default(history: list[Record], pipe: Evaluator) -> None:
    """When nothing is correct and the default lowering was only too slow for the worker's
    timeout, measure it here, in-process and without a timeout (run, check, one timed run):
    a correct default lowering is always a result."""
    if any(r.ok for r in history):
        return
    for i, r in enumerate(history):
        if is_default(r.candidate) and "timed out" in r.reason:
            worker, deadline = pipe.worker, pipe.deadline
            pipe.worker, pipe.deadline = None, 0.0  # past the deadline: timed by one run
            try:
                history[i] = pipe.measure(r.candidate)
            finally:
                pipe.worker, pipe.deadline = worker, deadline
            return


def _switch(start: float, budget: float, trials: int | None, history: list[Record]) -> Any:
    """When random sampling gives way to local search: after 40% of the trials when they are
    counted, else after 40% of the budget."""
    if trials is not None:
        return lambda: len(history) >= 0.4 * trials
    return lambda: time.perf_counter() - start > budget * 0.4


def _entry(result: TuneResult) -> dict[str, Any]:
    best = result.best_record
    assert best is not None
    return {"choices": encode_choices(result.choices), "candidate": encode_choices(best.candidate),
            "time": best.time, "memory": best.memory, "candidates": len(result.history),
            "pareto": [r.to_json() for r in result.pareto]}


def _reserve(history: list[Record], rank: Any, objective: str, budget: float) -> float:
    """Seconds kept at the end of the budget: the confirmation round (confirm.py) of the
    contenders so far and building the winner (at most a quarter of the budget)."""
    if objective == "time":
        return min(0.25 * budget, reserve(history, rank))
    return min(0.1 * budget, 0.5 if any(r.ok for r in history) else 0.0)


def _confirm(history: list[Record], pipe: Evaluator, rank: Any) -> tuple[Record | None, dict[str, Any]]:
    """The winner of the confirmation round (confirm.py) among the fastest distinct candidates and
    the default lowering, timed interleaved until the budget's end; (None, {}) when there was
    nothing to confirm or no time left. The figures go into `TuneResult.stats`."""
    cands = contenders(history, rank)
    if len(cands) < 2:
        return None, {}
    if pipe.worker is not None:
        timer_for = worker_timer(pipe, pipe.worker)
    else:
        timer_for = process_timer(pipe)
    try:
        winner, got = confirm(cands, timer_for, deadline=pipe.deadline)
    finally:
        if pipe.worker is not None and pipe.worker.running():  # free the kept programs (not restart it)
            pipe.worker.call(("drop",))
    _release(history, rank, keep=winner)
    return winner, {"confirmed": [{"candidate": describe(r.candidate), "search_s": r.time, "median_s": m}
                                  for r, m in zip(cands, got["medians"])], "confirm_rounds": got["rounds"]}


def _search_space(expr: Lambda, sizes: dict[str, int], auto: bool,
                  device: Any = None) -> tuple[Any, dict[str, Any], list[str]]:
    """The program searched (with automatic points when `auto`), its structural space and the
    labels of the automatic points (restricted to their useful values by `auto_space`, the register
    blocks that fit the vector registers of `device` first: `Registers.of`). On a GPU
    `device`, the GPU points where they apply (`lift.rewrites.gpu_search`)."""
    if auto and getattr(device, "kind", None) == "gpu":
        found = gpu_search_space(expr, sizes, device)
        if found is not None:
            return found
    if auto:
        expr = cast(Lambda, auto_points(expr, sizes))
    structural = structural_space(expr)
    regs = Registers.of(device if isinstance(device, devices.Device) else None)
    structural.update(auto_space(expr, sizes, regs=regs))
    return expr, structural, [lab for lab in structural if is_auto(lab)]


def _release(history: list[Record], rank: Any, keep: Record | None = None) -> None:
    """Drop the compiled programs (and their device buffers) of every record but the best
    (or `keep`)."""
    ok = [r for r in history if r.ok]
    best = keep if keep is not None else min(ok, key=rank) if ok else None
    for r in history:
        if r is not best:
            r.program = None


def _result(history: list[Record], rank: Any, pipe: Evaluator, elapsed: float,
            winner: Record | None = None) -> TuneResult:
    """The result: `winner` (the confirmation round's), else the best correct record by `rank`."""
    ok = [r for r in history if r.ok]
    if not ok:
        reasons = "; ".join(sorted({r.reason for r in history}))[:500]
        raise LiftValueError(f"no candidate compiled and matched the interpreter: {reasons}")
    best = winner if winner is not None else min(ok, key=rank)
    if best.program is None:  # measured in the worker, or by an earlier or concurrent tune: build it here
        best.program = pipe.build(best.candidate)
    if best.choices is None:
        best.choices = best.program.choices
    front = pareto_front(history)
    stats = {"seconds": elapsed, "candidates": len(history), "rejected": len(history) - len(ok),
             "default_time": next((r.time for r in history if is_default(r.candidate)), None)}
    return TuneResult(best.program, front, history, best, reference_checked=best.checked, stats=stats)


def _from_database(expr: Node, arrays: Sequence[Any], device: Any, entry: dict | None,
                   plain: Node | None = None) -> TuneResult | None:
    """The stored winner rebuilt by `lift.compile` from its `Choices` (no search, no interpreter
    run), or None. A default winner of a tune with automatic points is `lift.compile(plain)`."""
    if entry is None:
        return None
    pipe = Evaluator(expr, arrays, device, _sizes(cast(Lambda, expr), arrays))
    pipe.cache_dir = None  # the winner's binary comes from the build cache
    pipe.plain = plain
    try:
        choices = Choices.from_json(entry["choices"])
        default = plain is not None and json_default(entry.get("candidate"))
        prog = pipe.default_program() if default else pipe.compile(choices)
    except Exception:  # noqa: BLE001 - a stale entry (older format, the compiler changed): search again
        return None
    rec = Record(choices, True, "from the tuning database", entry.get("time"), entry.get("memory"),
                 checked=False, program=prog, choices=prog.choices)
    front = [record_from_json(d, pipe) for d in entry.get("pareto", [])] or [rec]
    return TuneResult(prog, front, [rec], rec, cached=True, reference_checked=False,
                      stats={"candidates": 0, "cached": True, "searched": entry.get("candidates")})


def _sizes(expr: Lambda, arrays: Sequence[Any]) -> dict[str, int]:
    return bind_sizes([p.ptype for p in expr.params], tuple(arrays), expr)


def _device(device: Any) -> Any:
    return device if isinstance(device, devices.Device) else devices.current(device)
