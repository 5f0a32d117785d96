"""The evaluator that turns a search point (a `lift.Choices`, lift.explore.points) into a measured program.

`Evaluator.point` sorts a joint mapping/tuning/launch choice into a point by the constraint
space of the program its rewrite points give; `Evaluator.planned` runs `lift.compile.plan`, the
pipeline `lift.compile` runs, on a point (in this process and for the worker alike), so the
program's `.choices` rebuild it exactly; `Evaluator.measure` builds and runs it, checks it
against the interpreter's result (computed once) and records time and memory. The default
lowering (`points.default_point`: every point skipped, the mapping left to `lift.compile`) is
planned as compile plans it, or, when `plain` is set (tune placed automatic points), is
`lift.compile` of the user's program itself, so the search never does worse.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lift.choices import Choices
from lift.compile import Planned, built, plan
from lift.compile import compile as lift_compile
from lift.decide import device_widths
from lift.errors import LiftError, RewriteError, RewritePointSkipped
from lift.ir.nodes import Node
from lift.spaces import fused_of, joint_space_of, points_applied, profile_of

from .points import Structural, decode, is_default, key, point
from .reference import Reference


@dataclass
class Record:
    """The outcome of one candidate (a search point, lift.explore.points): `ok` (checked against
    the interpreter) or rejected, and why."""

    candidate: Choices
    ok: bool
    reason: str = ""
    time: float | None = None  # seconds per run (the fastest of `repeat`)
    memory: int | None = None  # bytes allocated on the device (every address space)
    checked: bool = False  # the result was compared with the interpreter's
    build_s: float = 0.0
    source_hash: str = ""
    wall_s: float = 0.0  # the whole evaluation: build, run, check, timing
    program: Any = field(default=None, repr=False, compare=False)
    choices: Choices | None = None  # the choices its program reports (`Program.choices`; None: not built)
    confirmed: float | None = None  # median seconds per run in tune's confirmation round (confirm.py)

    def to_json(self) -> dict[str, Any]:
        return {"choices": self.candidate.to_json(), "ok": self.ok, "reason": self.reason,
                "time": self.time, "memory": self.memory, "checked": self.checked}


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
        self.unique = False  # search the spaces with the uniqueness constraints (lift.constraints.unique)
        self.probed: dict[str, Planned] = {}  # plans made by the synchronisability probe (synchronise.py), by point key

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
            choices = Choices(points=structural, sizes=self.sizes)
            fused = fused_of(self.points_applied(structural), choices, self._spaces)
            return joint_space_of(fused, profile_of(self.device), choices, self._spaces, unique=self.unique)
        except LiftError as err:
            return err

    def point(self, structural: Structural, joint: Mapping[str, int],
              vectorise: Mapping[str, int] | None = None) -> Choices:
        """The search point of `structural` point parameters and a `joint` choice of their space
        (`space(structural)`, which must be one): the joint choice sorted into mapping codes,
        tuning values and launch sizes, the program specialised for the tuned sizes."""
        return point(structural, joint, vectorise, maps=self.map_labels(structural), sizes=self.sizes)

    def map_labels(self, structural: Structural) -> list[str]:
        """The labels of the maps of the program rewritten by `structural` (none when its space
        is refused)."""
        space = self.space(structural)
        return [] if isinstance(space, Exception) else list(space.context.maps)

    def decode(self, d: Mapping[str, Any]) -> Choices:
        """The search point stored as `d` (either form: `lift.explore.points.decode`), sorted by
        this program's spaces."""
        return decode(d, self.map_labels, self.sizes)

    def build(self, point: Choices) -> Any:
        """The compiled `Program` of a point, from its `planned` (raises on a point that
        cannot be built); its `.choices` rebuild it."""
        if is_default(point) and self.plain is not None:
            return self.default_program()
        return built(self.planned(point), self.device, node=self.expr, cache_dir=self.cache_dir)

    def plan(self, point: Choices) -> tuple[Any, Choices]:
        """A point's linked `KernelSource` and the `Choices` used, as `build` makes them
        but without the OpenCL build (which the worker does)."""
        if is_default(point) and self.plain is not None:
            prog = self.default_program()
            return prog.plan, prog.choices
        planned = self.planned(point)
        return planned.source, planned.choices

    def planned(self, point: Choices) -> Planned:
        """`lift.compile.plan` of a point (the device's vector widths where it gives none; not
        vectorisable here: the plain mapping). What the point leaves open, such as the
        parameters of a skipped point or the default's tile sizes, is chosen as `lift.compile`
        chooses it, so the choices recorded are those it reports for the program; a point that
        sets mapping and tuning values has only a skipped point's open."""
        kept = self.probed.pop(key(point), None) if self.probed else None
        if kept is not None:  # planned when its mapping was classified (synchronise.py)
            return kept
        try:
            return self._planned(point)
        except RewriteError:
            if not point.vectorise:
                raise
            return self._planned(point.replace(vectorise={}))

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

    def measure(self, cand: Choices) -> Record:
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
        if seen is not None and not is_default(cand):
            return Record(cand, seen.ok, seen.reason, seen.time, seen.memory, seen.checked, build_s, digest,
                          program=prog, choices=prog.choices)
        rec = self._run(cand, prog, build_s, digest)
        rec.wall_s, rec.choices = time.perf_counter() - t0, prog.choices
        self._seen[digest] = rec
        return rec

    def _run(self, cand: Choices, prog: Any, build_s: float, digest: str) -> Record:
        reference = self.reference  # waited for before the run, so that it does not share the CPU
        t0 = time.perf_counter()
        try:
            out = prog(*self.arrays)
        except Exception as err:  # noqa: BLE001 - a crashing candidate is rejected
            return Record(cand, False, f"run: {_why(err)}", build_s=build_s, source_hash=digest)
        if reference is None:
            return unchecked(cand, build_s, digest, time.perf_counter() - t0, None)
        bad = mismatch(out, reference, self.rtol)
        if bad and self.precise is not None and as_accurate(out, reference, self.precise):
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


def unchecked(cand: Choices, build_s: float, digest: str, seconds: float, memory: int | None) -> Record:
    """The record of a candidate run when the reference is not there: the default lowering
    (`lift.compile`'s own program) is kept, not checked; any other candidate is rejected."""
    if is_default(cand):
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


def as_accurate(got: Any, semantics: Any, precise: Any) -> bool:
    """`got` is at most twice as far from the float64 result as the float32 semantics is."""
    if isinstance(precise, tuple):
        return (isinstance(got, tuple) and len(got) == len(precise)
                and all(as_accurate(g, s, p) for g, s, p in zip(got, semantics, precise)))
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
