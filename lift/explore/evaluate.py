"""One point of the exploration space and the evaluator that turns it into a measured program.

A `Candidate` is rewrite-point choices (structural parameters, by point label), a joint
mapping/tuning/launch choice (`lift.constraints.joint_space` variables), and the sequential
maps to vectorise. `Evaluator.planned` turns a candidate into a `lift.Choices` (its joint choice
sorted by the candidate's constraint space) and runs `lift.compile.plan`, the pipeline
`lift.compile` runs, on it (in this process and for the worker alike), so the program's
`.choices` rebuild it exactly; `Evaluator.measure` builds and runs it, checks it against the
interpreter's result (computed once) and records time and memory. The default candidate is the
program with every point skipped (the default lowering), or, when `plain` is set (tune placed
automatic points), `lift.compile` of the user's program itself, so the search never does worse.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lift.choices import Choices, joint_fields
from lift.compile import Planned, built, plan
from lift.compile import compile as lift_compile
from lift.decide import device_widths
from lift.errors import LiftError, RewriteError, RewritePointSkipped
from lift.ir.nodes import Node
from lift.spaces import joint_space_of, points_applied, profile_of

from .reference import Reference


@dataclass(frozen=True)
class Candidate:
    """Choices for one program: rewrite points, joint mapping/tuning/launch, vectorisation."""

    structural: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    joint: Mapping[str, int] = field(default_factory=dict)
    vectorise: Mapping[str, int] = field(default_factory=dict)
    default: bool = False  # the default lowering of `lift.compile` (points skipped)

    def key(self) -> str:
        """A canonical JSON string (for de-duplication and the tuning database)."""
        return json.dumps(self.to_json(), sort_keys=True)

    def to_json(self) -> dict[str, Any]:
        return {"structural": {k: dict(v) for k, v in self.structural.items()},
                "joint": {k: int(v) for k, v in self.joint.items()},
                "vectorise": {k: int(v) for k, v in self.vectorise.items()}, "default": self.default}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Candidate:
        return Candidate(dict(d.get("structural", {})), dict(d.get("joint", {})),
                         dict(d.get("vectorise", {})), bool(d.get("default", False)))

    def __str__(self) -> str:
        if self.default:
            return "default lowering"
        parts = [f"{k}:{','.join(f'{p}={v}' for p, v in ps.items())}" for k, ps in self.structural.items()]
        parts += [f"{k}={v}" for k, v in self.joint.items()]
        parts += [f"vec {k}={v}" for k, v in self.vectorise.items()]
        return " ".join(parts)


@dataclass
class Record:
    """The outcome of one candidate: `ok` (checked against the interpreter) or rejected, and why."""

    candidate: Candidate
    ok: bool
    reason: str = ""
    time: float | None = None  # seconds per run (the fastest of `repeat`)
    memory: int | None = None  # bytes allocated on the device (every address space)
    checked: bool = False  # the result was compared with the interpreter's
    build_s: float = 0.0
    source_hash: str = ""
    wall_s: float = 0.0  # the whole evaluation: build, run, check, timing
    program: Any = field(default=None, repr=False, compare=False)
    choices: Choices | None = None  # what `lift.compile` was given to build it (None: not built)
    confirmed: float | None = None  # median seconds per run in tune's confirmation round (confirm.py)

    def to_json(self) -> dict[str, Any]:
        return {"choices": self.candidate.to_json(), "ok": self.ok, "reason": self.reason,
                "time": self.time, "memory": self.memory, "checked": self.checked}


def all_skipped(structural: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every point skipped."""
    return {k: {"skip": True} for k in structural}


class Evaluator:
    """Builds and measures candidates of one program on one device for fixed arguments (through
    `lift.compile.plan`, the one pipeline)."""

    def __init__(self, expr: Node, arrays: Sequence[Any], device: Any, sizes: Mapping[str, int],
                 *, repeat: int = 3, rtol: float = 1e-3) -> None:
        self.expr, self.arrays, self.device, self.sizes = expr, tuple(arrays), device, dict(sizes)
        self.repeat, self.rtol = repeat, rtol
        self.cache_dir: Any = False  # candidates are not written to the build cache (the winner is)
        self.slow_s = 1.0  # a candidate whose checked run took longer is timed once, not `repeat` times
        self.deadline = float("inf")  # past it (the budget), candidates are timed once
        self.worker: Any = None  # a lift.explore.worker.Worker: candidates are built and run there
        self.timeout_s = 30.0  # the most one worker call of a candidate may take
        self._ref: Any = None  # a lift.explore.reference.Reference, started by `start_reference`
        self.reference_grace_s = 10.0  # how long past the deadline a candidate waits for the reference
        self._spaces: dict[Any, Any] = {}  # `lift.compile`'s rewritten programs and spaces of this program
        self._seen: dict[str, Record] = {}  # by source hash: the same kernels are measured once
        self.plain: Node | None = None  # the user's program (set by tune when it placed automatic points)
        self._default: Any = None  # `lift.compile(plain)`, built once

    def start_reference(self) -> None:
        """Start computing the interpreter's result (once, in a child process: see reference.py)."""
        if self._ref is None:
            self._ref = Reference(self.expr, self.arrays)

    def compute_reference(self) -> None:
        """The interpreter's result, computed once for every check (waits for it)."""
        self.start_reference()
        self._ref.get(0)

    def close_reference(self) -> None:
        """Stop an unfinished reference interpretation."""
        if self._ref is not None:
            self._ref.close()

    @property
    def reference(self) -> Any:
        """The interpreter's result (waiting for it until the budget's end plus `reference_grace_s`,
        the grace a worker call gets past the budget), None if not there by then."""
        return None if self._ref is None else self._ref.get(0, self.deadline + self.reference_grace_s)

    @property
    def precise(self) -> Any:
        """The interpreter's result with Float carried in float64 (computed when first asked for,
        given about as long as the result took), None if not there in time."""
        if self._ref is None or self._ref.seconds is None:
            return None
        return self._ref.get(1, max(self.deadline, time.perf_counter() + 2 * self._ref.seconds + 1.0))

    def points_applied(self, structural: Mapping[str, Mapping[str, Any]]) -> Node:
        """The program with its rewrite points applied by `structural` (kept as `lift.compile` keeps it)."""
        return points_applied(self.expr, Choices(points=structural), self._spaces, warn=False)

    def space(self, structural: Mapping[str, Mapping[str, Any]]) -> Any:
        """The joint mapping/tuning/launch space of the program rewritten by `structural` (kept in
        the cache `lift.compile` uses for this program), or the `LiftError` that refused it."""
        try:
            return joint_space_of(self.points_applied(structural), profile_of(self.device),
                                  Choices(points=structural, sizes=self.sizes), self._spaces)
        except LiftError as err:
            return err

    def choices(self, cand: Candidate) -> Choices:
        """The `lift.Choices` of a candidate: its joint choice sorted into mapping codes, tuning values
        and launch sizes by the candidate's space; the program specialised for the tuned sizes."""
        if cand.default:  # `lift.compile`'s own choice, the points skipped
            return Choices(points=all_skipped(cand.structural))
        space = self.space(cand.structural)
        if isinstance(space, Exception):
            raise space
        return Choices(points=cand.structural, **joint_fields(cand.joint, space.context.maps),
                       vectorise=cand.vectorise, sizes=self.sizes)

    def build(self, cand: Candidate) -> Any:
        """The compiled `Program` of a candidate, from its `planned` (raises on a candidate that
        cannot be built); its `.choices` rebuild it."""
        if cand.default and self.plain is not None:
            return self.default_program()
        return built(self.planned(cand), self.device, node=self.expr, cache_dir=self.cache_dir)

    def plan(self, cand: Candidate) -> tuple[Any, Choices]:
        """A candidate's linked `KernelSource` and the `Choices` used, as `build` makes them
        but without the OpenCL build (which the worker does)."""
        if cand.default and self.plain is not None:
            prog = self.default_program()
            return prog.plan, prog.choices
        planned = self.planned(cand)
        return planned.source, planned.choices

    def planned(self, cand: Candidate) -> Planned:
        """`lift.compile.plan` of a candidate's `choices` (the device's vector widths where it
        gives none; not vectorisable here: the plain mapping). What the candidate leaves open,
        such as the parameters of a skipped point or the default's tile sizes, is chosen as
        `lift.compile` chooses it, so the choices recorded are those it reports for the program;
        a candidate that sets mapping and tuning values has only a skipped point's open."""
        choices = self.choices(cand)
        try:
            return self._planned(choices)
        except RewriteError:
            if not cand.vectorise:
                raise
            return self._planned(choices.replace(vectorise={}))

    def _planned(self, choices: Choices) -> Planned:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RewritePointSkipped)
            wanted = device_widths(self.expr, choices, profile_of(self.device))
            return plan(self.expr, self.device, wanted, spaces=self._spaces,
                        choose_open=choices.mapping is None and not choices.tuning)

    def default_program(self) -> Any:
        """`lift.compile` of the user's program (`plain`) with no choices, as a call with this
        evaluator's arrays runs it (`Program.specialised`: specialised to their sizes where compile
        does that): what a user gets without tuning (its default points, e.g. a full reduction's
        parallel chunks, which the program with automatic points placed and all skipped does not
        get), never the tuning database's winner. Built here, once."""
        if self._default is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RewritePointSkipped)
                prog = lift_compile(self.plain, device=self.device, cache_dir=self.cache_dir, tuned=False)
                self._default = prog.specialised(*self.arrays) if self.arrays else prog
        return self._default

    def compile(self, choices: Choices) -> Any:
        """`lift.compile` of the program with `choices` (a stored winner's), sharing this evaluator's
        constraint spaces."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RewritePointSkipped)
            return lift_compile(self.expr, device=self.device, choices=choices, cache_dir=self.cache_dir,
                                spaces=self._spaces)

    def measure(self, cand: Candidate) -> Record:
        """Build, run, check against the interpreter and time one candidate; never raises.
        With a `worker` (lift.explore.worker), the OpenCL build and the runs happen there."""
        if self.worker is not None:
            from .worker import measure_isolated  # the worker's module imports this one

            return measure_isolated(self, cand, self.worker)
        t0 = time.perf_counter()
        try:
            prog = self.build(cand)
        except Exception as err:  # noqa: BLE001 - a candidate that cannot be built is rejected
            return Record(cand, False, f"build: {_why(err)}", build_s=time.perf_counter() - t0)
        build_s = time.perf_counter() - t0
        digest = hashlib.sha256(prog.source.encode()).hexdigest()[:16]
        seen = self._seen.get(digest)
        if seen is not None and not cand.default:
            return Record(cand, seen.ok, seen.reason, seen.time, seen.memory, seen.checked, build_s, digest,
                          program=prog, choices=prog.choices)
        rec = self._run(cand, prog, build_s, digest)
        rec.wall_s, rec.choices = time.perf_counter() - t0, prog.choices
        self._seen[digest] = rec
        return rec

    def _run(self, cand: Candidate, prog: Any, build_s: float, digest: str) -> Record:
        reference = self.reference  # waited for before the run, so that it does not share the CPU
        t0 = time.perf_counter()
        try:
            out = prog(*self.arrays)
        except Exception as err:  # noqa: BLE001 - a crashing candidate is rejected
            return Record(cand, False, f"run: {_why(err)}", build_s=build_s, source_hash=digest)
        if reference is None:
            return unchecked(cand, build_s, digest, time.perf_counter() - t0, None)
        bad = mismatch(out, reference, self.rtol)
        if bad and self.precise is not None and _as_accurate(out, reference, self.precise):
            bad = ""  # another summation order: rounds differently from the sequential semantics, not worse
        if bad:
            return Record(cand, False, f"wrong result: {bad}", checked=True, build_s=build_s, source_hash=digest)
        slow = time.perf_counter() - t0 > self.slow_s or time.perf_counter() > self.deadline
        try:
            t = min(prog.time(*self.arrays, repeat=1 if slow else self.repeat))
            mem = int(sum(prog.memory_bytes_for(*self.arrays).values()))
        except Exception as err:  # noqa: BLE001
            return Record(cand, False, f"timing: {_why(err)}", checked=True, build_s=build_s, source_hash=digest)
        return Record(cand, True, "", t, mem, True, build_s, digest, program=prog)


NO_REFERENCE = "the interpreter's reference did not finish within the budget"


def unchecked(cand: Candidate, build_s: float, digest: str, seconds: float, memory: int | None) -> Record:
    """The record of a candidate run when the reference is not there: the default lowering
    (`lift.compile`'s own program) is kept, not checked; any other candidate is rejected."""
    if cand.default:
        return Record(cand, True, f"not checked: {NO_REFERENCE}", seconds, memory, False, build_s, digest)
    return Record(cand, False, f"check: {NO_REFERENCE}", build_s=build_s, source_hash=digest)


def mismatch(got: Any, want: Any, rtol: float) -> str:
    """Why `got` differs from the interpreter's `want` ("" when they agree)."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return "a tuple of a different length"
        return next((m for m in (mismatch(g, w, rtol) for g, w in zip(got, want)) if m), "")
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if g.size != w.size:
        return f"shape {g.shape}, expected {w.shape}"
    g, w = g.reshape(w.shape), w
    scale = float(np.max(np.abs(w))) if w.size else 0.0
    if np.allclose(g, w, rtol=rtol, atol=rtol * 1e-2 * max(scale, 1e-30)):
        return ""
    err = float(np.max(np.abs(g - w)))
    return f"max abs error {err:.3g} (values up to {scale:.3g})"


def _as_accurate(got: Any, semantics: Any, precise: Any) -> bool:
    """`got` is at most twice as far from the float64 result as the float32 semantics is."""
    if isinstance(precise, tuple):
        return (isinstance(got, tuple) and len(got) == len(precise)
                and all(_as_accurate(g, s, p) for g, s, p in zip(got, semantics, precise)))
    g, s, p = (np.asarray(v, dtype=np.float64) for v in (got, semantics, precise))
    if g.size != p.size or s.size != p.size:
        return False
    g, s = g.reshape(p.shape), s.reshape(p.shape)
    scale = float(np.max(np.abs(p))) if p.size else 0.0
    slack = 2.0 * float(np.max(np.abs(s - p))) + 1e-6 * scale
    return float(np.max(np.abs(g - p))) <= slack


def _why(err: BaseException) -> str:
    msg = getattr(err, "message", None) or str(err)
    return f"{type(err).__name__}: {msg.splitlines()[0] if msg else ''}"[:300]
