"""A program with symbolic sizes specialises to the sizes of its calls (`lift.compile(expr, specialise=True)`).

`lift.compile(expr)` of a program over `Size("N")` compiles the generic program, correct for every
size. Some of the compiler's best choices need constant sizes: the default register blocks of a
nested map-reduce (`lift.rewrites.auto.default_points`) add size conditions (8 | M, 16 | N) that
other sizes fail, and a tuned winner is stored for the sizes it was tuned at. So the `Program`
carries a `Specialiser`, and a call with sizes it has not seen before decides, once per size tuple:

1. the tuning database's winner for `expr` tuned at these sizes (`lift.tune(expr, *arrays)`;
   the `lift.decide` lookup with the call's bindings), else
2. a tuned winner of the program with these sizes substituted, else
3. the nearest winner of `expr` tuned at other sizes whose choices the constraints prove valid
   at these (`lift.explore.transfer`: the lookup gives it when there is no exact winner), else
4. the program with these sizes substituted when that has what the generic one cannot have: the
   default points (compiled with their first valid choices, `lift.decide.default_blocks`), or a
   full reduction's default that changes with its length known (`_reduction_gains`: no tail step,
   and on a CPU the partials combined in order in the chunks' kernel), else
5. the generic program (nothing compiled: nothing to gain at these sizes).

A specialisation that is refused (the default points do not compile for these sizes) or fails
(its compile, or later its run, raises) leaves the generic program to run the call: never an error
the generic program would not give. Every decision is kept, with its reason and the seconds it
took, for the `LIMIT` most recent size tuples (`Program.specialisations`), and logged at debug
level on the "lift.specialise" logger (a specialised program that fails to run is a compiler bug:
logged as a warning). Only the program that ran the
last call holds device buffers (as a generic program holds those of one shape: `Program._runs`).
Specialised binaries go to the disk cache under their own source, as any program's.

Thread-safe: the first calls of several threads with one size tuple specialise once. The decision
is made under `lift.constraints.model.Z3_LOCK` (the lock `lift.compile` holds: z3 is not
thread-safe), and the other threads wait for it; the table of decisions has a lock of its own, so
a call whose sizes are decided never waits for another thread's compile.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from lift.constraints.model import Z3_LOCK
from lift.decide import Decision, Lookup, decide, tuned_decisions
from lift.decide import default_blocks as default_block_decisions
from lift.ir.nodes import Lambda
from lift.program import Program
from lift.realise import substitute_sizes
from lift.rewrites.auto import default_points
from lift.rewrites.defaults import default_reduction
from lift.spaces import profile_of
from lift.types import size_names

log = logging.getLogger("lift.specialise")

LIMIT = 8  # size tuples whose decision (and specialised program) a Program keeps


@dataclass
class Specialisation:
    """What a `Program` runs for one size tuple: `program` (None: the generic program) and why."""

    sizes: dict[str, int]
    program: Any  # the specialised `lift.Program`, or None: the generic program runs
    reason: str
    seconds: float  # spent deciding and compiling (the OpenCL build included)

    def __repr__(self) -> str:
        what = "specialised" if self.program is not None else "generic"
        return f"<Specialisation {self.sizes}: {what}, {self.seconds:.2f} s: {self.reason}>"


def symbolic_sizes(expr: Lambda) -> set[str]:
    """The names of the symbolic sizes in the program's parameter types."""
    return set(size_names(p.ptype for p in expr.params))


Build = Callable[[Iterable[Decision]], Program | None]  # the first decision built (lift.compile.first_built)


class Specialiser:
    """The specialised programs of one program with symbolic sizes, by size tuple (the last `limit`).

    s = Specialiser(expr, device, cache_dir, lookup=..., build=...); s.get({"N": 1024}).program -> Program | None

    `build` builds the first of some `lift.decide` decisions that plans (`lift.compile` gives
    `first_built`; None: nothing is specialised); `lookup` is the tuning database's (None: not asked)."""

    def __init__(self, expr: Lambda, device: Any = None, cache_dir: Any = None, *, limit: int = LIMIT,
                 lookup: Lookup | None = None, build: Build | None = None) -> None:
        self.expr, self.device, self.cache_dir, self.limit = expr, device, cache_dir, limit
        self.lookup, self.build = lookup, build
        self.names = tuple(sorted(symbolic_sizes(expr)))
        self._done: OrderedDict[tuple[int, ...], Specialisation] = OrderedDict()
        self._table = threading.Lock()  # guards `_done` (never held while compiling)

    @property
    def records(self) -> tuple[Specialisation, ...]:
        """The decisions kept, least recently used first."""
        with self._table:
            return tuple(self._done.values())

    def get(self, sizes: Mapping[str, int]) -> Specialisation:
        """The decision for `sizes` (the bindings of a call), made at its first call."""
        unbound = [n for n in self.names if sizes.get(n) is None]
        if unbound:  # e.g. only `N * M` is a length: the generic program binds what it needs
            return Specialisation(dict(sizes), None, f"the call binds no value of {', '.join(unbound)}; generic", 0.0)
        key = tuple(int(sizes[n]) for n in self.names)
        rec = self._decided(key)
        if rec is not None:
            return rec
        with Z3_LOCK:  # one specialisation at a time; a thread that waited finds it made
            rec = self._decided(key)
            if rec is not None:
                return rec
            t0 = time.perf_counter()
            bound = dict(zip(self.names, key))
            program, reason = self._make(bound)
            rec = Specialisation(bound, program, reason, time.perf_counter() - t0)
            log.debug("%s", rec)
            with self._table:
                self._done[key] = rec
                while len(self._done) > self.limit:
                    self._done.popitem(last=False)
        return rec

    def decided(self, sizes: Mapping[str, int]) -> Specialisation | None:
        """The decision already made for `sizes`, while it is kept (and marked as just used), else
        None: nothing is decided here (a replayed call's check, `Program._replayed`)."""
        try:
            key = tuple(int(sizes[n]) for n in self.names)
        except (KeyError, TypeError):
            return None
        return self._decided(key)

    def _decided(self, key: tuple[int, ...]) -> Specialisation | None:
        with self._table:
            rec = self._done.get(key)
            if rec is not None:
                self._done.move_to_end(key)
            return rec

    def refuse(self, sizes: Mapping[str, int], err: BaseException) -> None:
        """The specialised program for `sizes` failed to run: the generic program runs those sizes."""
        rec = self.get(sizes)
        with self._table:
            rec.program = None
            rec.reason = f"the specialised program failed to run ({type(err).__name__}: {_first_line(err)}); generic"
            log.warning("%s", rec)

    def _make(self, bound: dict[str, int]) -> tuple[Program | None, str]:
        """The specialised program for `bound` and why, or None and why not (see the module docstring)."""
        if self.build is None:
            return None, "no compiler to specialise with; generic"
        try:
            tuned = self.lookup(self.expr, self.device, bound) if self.lookup is not None else None
            near = tuned if tuned is not None and tuned.transferred else None  # after the exact winners
            # a default winner is compile's own default of the generic program, which this is: below
            if tuned is not None and not tuned.default and near is None:
                program = self.build(tuned_decisions(self.expr, self.device, tuned))
                if program is not None:
                    return program, f"tuned for these sizes: {tuned.origin}"
            fixed = substitute_sizes(self.expr, bound)
            tuned = self.lookup(fixed, self.device) if self.lookup is not None else None
            if tuned is not None:
                program = self.build(tuned_decisions(fixed, self.device, tuned))
                if program is not None:
                    return program, f"the program with these sizes fixed was tuned: {tuned.origin}"
            if near is not None:
                program = self.build(tuned_decisions(self.expr, self.device, near))
                if program is not None:
                    return program, f"tuned at other sizes, valid at these: {near.origin}"
            gains = _reduction_gains(self.expr, fixed, self.device)
            if gains is not None:  # a full reduction: compile's default for it at these sizes, if it gains
                if not gains:
                    return None, ("nothing to specialise: the full reduction's default is the same at these "
                                  "sizes; generic")
                reduced = self.build(replace(d, sizes=bound, specialise=False)
                                     for d in decide(fixed, self.device, None, plain=True, specialise=False))
                if reduced is None:
                    return None, "the default reduction does not compile for these sizes; generic"
                return reduced, f"the full reduction's default with its length known: {_applied(reduced)}"
            placed = default_points(fixed)
            if placed is fixed:
                return None, "nothing to specialise: no tuned choice and no default point for these sizes; generic"
            # recorded with the sizes, so that `compile(expr, choices=...)` rebuilds it
            blocked = self.build(replace(d, sizes=bound) for d in default_block_decisions(fixed, self.device))
        except Exception as err:  # noqa: BLE001 - a refusal: the generic program runs the call
            return None, f"specialisation failed ({type(err).__name__}: {_first_line(err)}); generic"
        if blocked is None:
            return None, "the default points do not compile for these sizes; generic"
        return blocked, f"default points {_applied(blocked) or '(all skipped)'} with these sizes fixed"


def _applied(program: Program) -> str:
    """The points `program` applied, with their parameters: "auto_r0 (combine kernel, width 8)"."""
    return "; ".join(f"{lab} ({', '.join(f'{k} {v}' for k, v in sorted(c.items()) if k != 'skip')})"
                     for lab, c in sorted(program.choices.points.items()) if not c.get("skip"))


def _reduction_gains(expr: Lambda, fixed: Any, device: Any) -> bool | None:
    """None when `fixed` (`expr` with the call's sizes) is not a full reduction that
    `lift.rewrites.defaults.default_reduction` takes at these sizes; else whether its default
    there is better than the generic program's: chunks that cover the array need no tail step and
    on a CPU combine their partials in order at the end of their kernel (one launch, where the
    generic program fills the atomic combine's initial value first: dot of 2^20 floats over
    `Size("N")`, Xeon icelake-client PoCL 3.0, calls 278 -> 232 us, numpy 260), an arg-min's
    chunks need a length they divide (the generic program folds in one work-item: over `iota(N)`
    at 2^20 floats, calls 1010 -> 203 us), and never a narrower vector."""
    kind = profile_of(device).kind
    special, generic = default_reduction(fixed, kind), default_reduction(expr, kind)
    if special is None:
        return None
    if generic is None:
        return True  # an arg-min's chunks need a length they divide: the generic program folds in one work-item

    def chunks(found: Any) -> dict[str, Any]:
        return next((dict(c) for c in found[1].points.values() if not c.get("skip")), {})

    s, g = chunks(special), chunks(generic)
    return (s.get("width", 1) >= g.get("width", 1)  # not a narrower vector (a length 8 does not divide)
            and (s.get("combine") != g.get("combine") or bool(g.get("tail")) and not s.get("tail")))


def _first_line(err: BaseException) -> str:
    return (str(err).splitlines() or [""])[0][:200]


__all__ = ["Specialiser", "Specialisation", "LIMIT", "symbolic_sizes"]
