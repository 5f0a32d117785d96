"""The tuner's two roles: builders and runners (issue 29).

A *builder* turns a search point (a `lift.Choices`, lift.explore.points) into a `Built`:
rewriting, the z3 spaces and code generation up to the generated `KernelSource` (which
pickles; the device compiler's build happens where the device is). A *runner* owns one
OpenCL device and measures one `Built` at a time: it builds the source with the device
compiler, runs it once, checks the result against the interpreter's reference and times it
(`run_checked`), so it never runs two candidates at once.

    built = build(pipe, cand)                        # builder: in the driver, or a Ray task
    rec = run_checked(worker, pipe, built)           # runner: any `ops` with .call(msg, timeout)

`ops` is a `lift.explore.worker.Worker` (the local tuner: a process of its own, restarted
after a crash), a `worker.Served` (inside a Ray runner actor: the actor is that process) or a
`cluster.ActorOps` (the driver's handle on an actor); all answer the worker protocol
("build", "run", "time", "load", "drop") with an `Outcome`. `spec` is anything with the
attributes the check needs (`Evaluator` has them all; a Ray actor gets a `Spec`).
`LocalRunner` is a runner whose measurements run in a thread of the driver, so that the
driver's builder compiles the next candidates while the worker times this one (pipelining).
"""

from __future__ import annotations

import hashlib
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lift.choices import Choices

from . import worker as _worker
from .evaluate import Record, as_accurate, mismatch, unchecked
from .points import is_default


@dataclass
class Built:
    """What a builder made of a candidate: its generated source (`plan`) and the `Choices`
    used, or the reason it could not be generated."""

    candidate: Choices
    plan: Any = None
    choices: Choices | None = None
    reason: str = ""
    build_s: float = 0.0
    digest: str = ""  # of the source
    same: str = ""  # of the source and the launch sizes: the same kernels are measured once
    builder_pid: int = 0  # the process that built it

    def rejected(self) -> Record:
        return Record(self.candidate, False, f"build: {self.reason}", build_s=self.build_s)


def build(pipe: Any, cand: Choices) -> Built:
    """The builder role: `pipe.plan(cand)` (rewriting, solving, code generation); never raises."""
    t0 = time.perf_counter()
    try:
        plan, choices = pipe.plan(cand)
    except Exception as err:  # noqa: BLE001 - a candidate that cannot be generated is rejected
        return Built(cand, reason=why(err), build_s=time.perf_counter() - t0)
    digest = hashlib.sha256(plan.source.encode()).hexdigest()[:16]
    same = digest + hashlib.sha256(repr(plan.launches).encode()).hexdigest()[:16]  # launch sizes timed apart
    return Built(cand, plan, choices, "", time.perf_counter() - t0, digest, same, os.getpid())


def seen(pipe: Any, built: Built) -> Record | None:
    """The record of a kernel already measured in this tune (same source and launch), copied for
    `built`'s candidate, or its build failure; None when it must be run."""
    if built.plan is None:
        return built.rejected()
    rec = pipe._seen.get(built.same)
    if rec is None or is_default(built.candidate):
        return None
    return Record(built.candidate, rec.ok, rec.reason, rec.time, rec.memory, rec.checked, built.build_s,
                  built.digest, choices=built.choices)


def remember(pipe: Any, built: Built, rec: Record) -> Record:
    """Note a run's record under its kernel (for `seen`) and give it the built choices."""
    rec.choices = built.choices
    if built.same:
        pipe._seen[built.same] = rec
    return rec


@dataclass
class Spec:
    """What a runner away from the driver needs for the check (`Evaluator` has the same attributes)."""

    reference: Any
    precise: Any
    rtol: float
    slow_s: float
    repeat: int
    timeout_s: float
    deadline: float  # time.perf_counter() of the runner's own process


def limit(spec: Any, cand: Choices) -> float:
    """The timeout of one runner call: the candidate timeout, cut at the budget's end plus a
    grace (killing a worker that is only slow costs a restart); the default lowering, tried
    first, gets the whole budget left plus the grace when that is longer than the candidate
    timeout (it is the result when nothing else is correct; `tune` measures it in-process if
    even that is not enough)."""
    full = getattr(spec, "timeout_s", 30.0)
    if is_default(cand):
        return max(full, spec.deadline - time.perf_counter() + _worker.GRACE_S)
    return min(full, max(_worker.GRACE_S, spec.deadline - time.perf_counter() + _worker.MIN_TIMEOUT_S))


def run_checked(ops: Any, spec: Any, built: Built) -> Record:
    """The runner role: build `built`'s source on the device, run it, check it against
    `spec.reference` and time it, through `ops` (the worker protocol); never raises."""
    cand, build_s, digest = built.candidate, built.build_s, built.digest
    if built.plan is None:
        return built.rejected()

    def reject(stage: str, reason: str, checked: bool = False) -> Record:
        return Record(cand, False, f"{stage}: {reason}", checked=checked, build_s=build_s, source_hash=digest)

    got = ops.call(("build", built.plan), limit(spec, cand))
    if not got.ok:
        return reject("opencl build", got.reason)
    reference = spec.reference  # waited for before the run, so that the run does not share the CPU with it
    if reference is None and not is_default(cand):
        return unchecked(cand, build_s, digest, 0.0, None)
    got = ops.call(("run",), limit(spec, cand))
    if not got.ok:
        return reject("run", got.reason)
    out, kernel_s, mem = got.value
    if reference is None:
        return unchecked(cand, build_s, digest, kernel_s, mem)
    bad = mismatch(out, reference, spec.rtol)
    if bad and spec.precise is not None and as_accurate(out, reference, spec.precise):
        bad = ""
    if bad:
        return reject("wrong result", bad, checked=True)
    # slow (its kernels, not the transfers: a large result takes seconds through the pipe under
    # load, and a first run on fresh buffers pays their page faults): timed by its checked run
    if kernel_s > spec.slow_s or time.perf_counter() > spec.deadline:
        return Record(cand, True, "", kernel_s, mem, True, build_s, digest)
    got = ops.call(("time", spec.repeat), limit(spec, cand))
    if not got.ok:
        return reject("timing", got.reason, checked=True)
    times, mem = got.value
    return Record(cand, True, "", min(times), mem, True, build_s, digest)


class LocalRunner:
    """A runner on this machine: `run_checked` through the tune's worker process, in a thread of
    the driver, so that `submit` returns at once and the driver builds ahead meanwhile. One
    candidate at a time (a single thread)."""

    def __init__(self, pipe: Any, ops: Any) -> None:
        self.pipe, self.ops = pipe, ops
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="liftcl-runner")

    def submit(self, built: Built) -> Future:
        """Measure `built` in the background: a Future of its `Record`."""
        return self._pool.submit(self._measure, built)

    def _measure(self, built: Built) -> Record:
        t0 = time.perf_counter()
        rec = run_checked(self.ops, self.pipe, built)
        rec.wall_s = built.build_s + time.perf_counter() - t0
        return rec

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def why(err: BaseException) -> str:
    msg = getattr(err, "message", None) or str(err)
    return f"{type(err).__name__}: {msg.splitlines()[0] if msg else ''}"[:300]


__all__ = ["Built", "build", "seen", "remember", "run_checked", "Spec", "LocalRunner", "limit"]
