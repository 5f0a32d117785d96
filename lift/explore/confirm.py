"""The confirmation round of `lift.tune`: the winner is chosen by interleaved re-measurement.

During the search each candidate is timed once (the fastest of a few runs, right after its
build), at whatever load the machine had then: a lucky moment can make a slower kernel look
fastest. Before choosing, the few fastest distinct candidates *and the default lowering* (the
program `lift.compile` gives by default) are timed again round-robin on the same arrays, in
`ROUNDS` rounds, each round every contender once (`repeat` runs, their median), the order
rotated from round to round, so load changes hit them alike; the winner is the contender with
the smallest median over the rounds, unless that median is within `MARGIN` (or `MARGIN_S`) of the default's:
then the default wins (two builds of one kernel, timed as two programs, differ by up to ~2%
here: matmul 1024^3 on Zen 1, liftcl's default against the same kernel with its sizes fixed,
0.3-1.8% in four bench runs; a smaller lead is not evidence, and the default is what
`lift.compile` gives, so a tune that finds nothing clearly faster agrees with it); so does it
unless the contender was faster than it in `WINS` of the rounds that timed both (paired in time:
on a 2-vCPU VM whose speed drifts, a median lead built from two lucky rounds of five is noise;
tmm 128x1024x1024's packed form won a tune that way and then ran 10% slower than the default
beside numpy). The default
is always a contender (when it was correct: its record stands for a candidate of the same kernel),
and a contender other than the default wins only by beating the default's median measured in the
same rounds: where the default has no median (the deadline came first, or its timer failed) or
nothing was measured, the default is returned. So the tune never returns a kernel that was not
measured faster than the default (issue 27). A contender whose fastest timing so far is more than `DROP` times the best
median (twice that after the first round, one timing each) is not timed again (it cannot
win; its fastest, not its median, so that one load spike does not drop it), which bounds the
cost of a slow default lowering. The round stops at `deadline`; what was measured by then
decides (a contender with no measurement is out).

    winner = confirm(contenders(history, rank), timer_for, deadline=t_end)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from itertools import count
from typing import Any

from .evaluate import Record
from .points import is_default
from .worker import MIN_TIMEOUT_S

ROUNDS = 5
REPEAT = 3  # runs per timing call (after one warm-up run): their median is the round's time
TOP = 4  # the fastest distinct candidates of the search that are confirmed (besides the default)
DROP = 1.5  # a contender whose fastest timing is this much slower than the best median is dropped
MARGIN = 0.02  # a contender must beat the default's median by more than this share to replace it
MARGIN_S = 2e-6  # ... and by more than this many seconds per run: PoCL's launch jitter (a 4 us reduction
#                  timed 4 and 13 us in two tables; tunes of 5-8 us kernels won by 1 us and lost 1 us)
WINS = 0.75  # ... and be faster than the default in this share of the rounds that timed both
BUILD_S = 0.4  # what preparing one contender costs (code generation in the parent, OpenCL build)

Timer = Callable[[], "float | None"]  # one timing of a contender: seconds per run, None if it failed


def contenders(history: Sequence[Record], rank: Any, top: int = TOP) -> list[Record]:
    """The `top` fastest correct candidates of `history`, one per distinct kernel (source and
    launch sizes), and the default lowering's record when it is correct (always included: in the
    place of a faster candidate of the same kernel, else last)."""
    ok = sorted((r for r in history if r.ok and r.time is not None), key=rank)
    out: list[Record] = []
    seen: set[tuple[str, str]] = set()
    for r in ok:
        k = _kernel_key(r)
        if k not in seen and len(out) < top:
            seen.add(k)
            out.append(r)
    default = next((r for r in ok if is_default(r.candidate)), None)
    if default is not None and _kernel_key(default) not in seen:
        out.append(default)
    elif default is not None:  # the same kernel is there: the default's record stands for it
        out = [default if _kernel_key(r) == _kernel_key(default) else r for r in out]
    return out


def _kernel_key(r: Record) -> tuple[str, str]:
    """What makes two records the same kernel: the source hash and the launch sizes (records
    without a source hash, from another tune, count as distinct)."""
    if not r.source_hash:
        return (f"#{id(r)}", "")
    launch = r.choices.launch if r.choices is not None else {}
    return (r.source_hash, repr(sorted(launch.items())))


def reserve(history: Sequence[Record], rank: Any, rounds: int = ROUNDS, repeat: int = REPEAT) -> float:
    """Seconds to keep at the end of the budget for the confirmation round of the contenders
    `history` gives now (preparing each, `rounds` timings of `repeat` + 1 runs, and building
    the winner)."""
    cs = contenders(history, rank)
    if not cs:
        return 0.0
    times = [float(r.time) for r in cs if r.time is not None]  # contenders are measured records
    best = min(times, default=0.0)
    # a contender slower than DROP x the best is timed in one round only
    runs = sum((repeat + 1) * t * (rounds if t <= DROP * best else 1) for t in times)
    return len(cs) * BUILD_S + runs + 0.05 * rounds * len(cs) + BUILD_S


def confirm(cands: Sequence[Record], timer_for: Callable[[Record], Timer | None], *, deadline: float,
            rounds: int = ROUNDS, drop: float = DROP, margin: float = MARGIN) -> tuple[Record | None, dict[str, Any]]:
    """Time `cands` round-robin (see the module docstring); `timer_for(record)` prepares a
    contender and gives its timer (None: it cannot be prepared, it is out). Returns the
    contender with the smallest median, or the default lowering where that is within `margin`
    of the default's median or the default has no median (None when nothing was measured and the
    default is not a contender) and what was measured:
    {"medians": [seconds or None per contender], "rounds": rounds done}. Each record's
    `confirmed` is set to its median."""
    timers: list[Timer | None] = []
    for r in cands:
        timers.append(timer_for(r) if time.perf_counter() < deadline else None)
    runs: list[list[float]] = [[] for _ in cands]
    per_round: list[dict[int, float]] = []  # round -> {contender: its time in that round}
    alive = [t is not None for t in timers]
    done = 0
    for k in range(rounds):
        order = [(k + i) % len(cands) for i in range(len(cands))]  # rotated: no contender always first
        per_round.append({})
        for i in order:
            timer = timers[i]
            if not alive[i] or timer is None or time.perf_counter() > deadline:
                continue
            t = timer()
            if t is None:
                alive[i] = False
            else:
                runs[i].append(t)
                per_round[-1][i] = t
        if time.perf_counter() > deadline:
            break
        done += 1
        medians = [statistics.median(ts) if ts and alive[i] else None for i, ts in enumerate(runs)]
        best = min((m for m in medians if m is not None), default=None)
        if best is None:  # nothing could be prepared or timed: no round to rank
            break
        fastest = [min(ts) if ts and alive[i] else None for i, ts in enumerate(runs)]  # a load spike only slows
        limit = drop * (2 if k == 0 else 1) * best  # one timing each: spikes double it
        alive = [a and f is not None and f <= limit for a, f in zip(alive, fastest)]
    medians = [statistics.median(ts) if ts else None for ts in runs]
    for r, m in zip(cands, medians):
        r.confirmed = m
    measured = [(m, i) for i, m in enumerate(medians) if m is not None]
    default = next((j for j, r in enumerate(cands) if is_default(r.candidate)), None)
    against = medians[default] if default is not None else None
    if default is not None and against is None:  # nothing was measured against the default
        return cands[default], {"medians": medians, "rounds": done}
    if not measured:
        return None, {"medians": medians, "rounds": done}
    best, i = min(measured)
    if default is not None and against is not None and (
            best > min((1.0 - margin) * against, against - MARGIN_S) or not _wins_rounds(per_round, i, default)):
        i = default  # no clear lead over the default: it is kept
    return cands[i], {"medians": medians, "rounds": done}


def _wins_rounds(per_round: Sequence[dict[int, float]], i: int, default: int) -> bool:
    """Whether contender `i` was faster than the default in at least `WINS` of the rounds that
    timed both (the two timed moments apart under the same load: a lead in the medians that comes
    from a few rounds is noise)."""
    paired = [(r[i], r[default]) for r in per_round if i in r and default in r]
    return i == default or (bool(paired) and sum(a < b for a, b in paired) >= WINS * len(paired))


def worker_timer(pipe: Any, worker: Any, repeat: int = REPEAT) -> Callable[[Record], Timer | None]:
    """`timer_for` of a candidate measured in `worker` (lift.explore.worker): its plan is made here
    and built there into a slot of its own, kept while the rounds alternate between contenders
    (`worker.call(("drop",))` frees them)."""
    slots = count()

    def prepare(r: Record) -> Timer | None:
        try:
            plan, _ = pipe.plan(r.candidate)
        except Exception:  # noqa: BLE001 - it was built before; now it is out
            return None
        k = next(slots)
        limit = max(MIN_TIMEOUT_S, pipe.timeout_s)
        if not worker.call(("load", k, plan), limit).ok:
            return None

        def timed() -> float | None:
            got = worker.call(("time", repeat, k), limit)
            return statistics.median(got.value[0]) if got.ok else None

        return timed

    return prepare


def process_timer(pipe: Any, repeat: int = REPEAT) -> Callable[[Record], Timer | None]:
    """`timer_for` of a candidate built and timed in this process (`tune(isolate=False)`)."""

    def prepare(r: Record) -> Timer | None:
        try:
            prog = r.program if r.program is not None else pipe.build(r.candidate)
        except Exception:  # noqa: BLE001
            return None
        r.program = prog

        def timed() -> float | None:
            try:
                return statistics.median(prog.time(*pipe.arrays, repeat=repeat))
            except Exception:  # noqa: BLE001
                return None

        return timed

    return prepare


__all__ = ["confirm", "contenders", "reserve", "worker_timer", "process_timer", "ROUNDS", "TOP", "DROP", "MARGIN",
           "WINS"]
