"""Synchronisability in the solver (thesis 7.2.2): a mapping classified before its candidates are planned.

Whether a mapping can be synchronised is decided by the barrier pass (`lift.barriers`) on the
generated code; before issue 42 the tuner found out only when a planned candidate failed, one
candidate at a time, and tuned a mapping that synchronises only for some launch or tuning values
over all of them. `Synchronised` wraps a strategy: the first time a proposal brings a mapping (of
one structural choice), the barrier pass is run on that mapping with its tuning and launch values
still open, probed at the ends that matter: the proposal's own values; the configuration most likely to
synchronise, every dimension in one work-group (`groups_d = 1`: the only launch where accesses of
different iterations of a global map can be ordered); and, for each dimension a global or
work-group map of the mapping uses, a launch with several work-groups in it; each completed by
z3 from the space. The mapping is then

- *always* synchronisable (every probe plans): nothing is added;
- *never* synchronisable (neither plans, or the one-work-group launch is outside the space: the
  device's work-group limits, a `map_wrg` over many groups): the named constraint "never
  synchronisable" removes the mapping from the space;
- *sometimes* synchronisable (some probes plan): the named constraint "synchronisable only"
  confines the mapping to one work-group in the dimensions where the failing probes had several
  (when that separates them from the ones that plan; else the failing values are excluded), so
  only valid values are sampled;

in the z3 model of the tuner's space (`Evaluator.space`), before any candidate with that mapping
is planned: a proposal the new constraint excludes is not built, and the strategy is asked
again. Proposals whose plans were made by the probe are kept and reused by the builder
(`Evaluator.planned` reads `pipe.probed`). Errors other than `NotSynchronisableError` leave the
mapping unclassified ("unknown": the candidate is planned and rejected as before), except when
every probe fails so (a `reduce_atomic` combine that cannot be generated for this mapping): the
named constraint "never planned" then removes the mapping from that structural choice's space.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import z3

from lift.choices import Choices
from lift.constraints.launch import DIMS, groups_name
from lift.constraints.model import Constraint
from lift.errors import LiftError, NotSynchronisableError

from .evaluate import Evaluator, Record
from .points import is_default, joint
from .points import key as point_key
from .search import IN_FLIGHT

NEVER = "never synchronisable"
UNPLANNABLE = "never planned"
ONLY = "synchronisable only"
RETRIES = 64
PROBED = 64  # plans kept for the builder at most
ALWAYS, SOMETIMES, NEVER_SYNC, UNKNOWN = "always", "sometimes", "never", "unknown"


def _plans(pipe: Evaluator, point: Choices) -> bool | None:
    """True when `point` plans (its plan kept in `pipe.probed` for the builder), False when the
    barrier pass cannot synchronise it, None on any other error (not ours to judge)."""
    try:
        planned = pipe.planned(point)
    except NotSynchronisableError:
        return False
    except LiftError:
        return None
    if len(pipe.probed) >= PROBED:
        pipe.probed.clear()
    pipe.probed[point_key(point)] = planned
    return True


def launch_with(space: Any, mapping: Mapping[str, int], several: int | None) -> dict[str, int] | None:
    """A joint choice of `space` with `mapping` whose launch has one work-group in every dimension
    (`several` None), or several in dimension `several`; None when the space has no launch
    variables or no such choice."""
    names = [groups_name(d) for d in DIMS]
    if not all(n in space.model.vars for n in names):
        return None
    s, _ = space.model.solver()
    for k, v in mapping.items():
        s.add(space.model.vars[k] == int(v))
    groups = [space.model.vars[n] for n in names]
    s.add(z3.And([g == 1 for g in groups]) if several is None else groups[several] > 1)
    if s.check() != z3.sat:
        return None
    m = s.model()
    return {k: m.eval(space.model.vars[k], model_completion=True).as_long() for k in space.variables}


def classify(pipe: Evaluator, point: Choices) -> str:
    """Classify the mapping of `point` (see the module) and add what it teaches to the space of its
    structural choice: "always", "sometimes", "never" or "unknown"."""
    space = pipe.space(point.points)
    if isinstance(space, Exception) or not point.mapping:
        return UNKNOWN
    mapping = {k: int(v) for k, v in point.mapping.items() if k in space.model.vars}
    own = {k: int(v) for k, v in joint(point).items() if k in space.model.vars}
    probes = [own]
    used = sorted({v % 10 for v in mapping.values() if v >= 20})  # dimensions of global and work-group maps
    for several in (None, *used):  # one work-group everywhere; several in each dimension used
        got = launch_with(space, mapping, several)
        if got is not None and got not in probes:
            probes.append(got)
    verdicts = [_plans(pipe, point if probe is own else pipe.point(point.points, probe, point.vectorise))
                for probe in probes]
    is_mapping = z3.And([space.model.vars[k] == v for k, v in mapping.items()])
    shown = ", ".join(f"{k}={v}" for k, v in sorted(mapping.items()))
    if all(v is None for v in verdicts):  # no probe plans, for another reason than synchronisation
        if len(probes) > 1:  # at every end of its launches: the mapping is not proposed again
            space.model.add(Constraint(UNPLANNABLE, tuple(mapping), f"the mapping {shown} cannot be planned with "
                                       "one work-group nor several (7.2.2)", z3.Not(is_mapping),
                                       family="synchronisation"))
        return UNKNOWN
    if None in verdicts:
        return UNKNOWN
    if all(verdicts):
        return ALWAYS
    if not any(verdicts):  # the one-work-group launch was among the probes, or is no launch of the space
        space.model.add(Constraint(NEVER, tuple(mapping), f"the mapping {shown} cannot be synchronised with any "
                                   "launch: the barrier pass fails with one work-group too, or one work-group is "
                                   "not a launch of the space (7.2.2)", z3.Not(is_mapping), family="synchronisation"))
        return NEVER_SYNC
    good = [p for p, ok in zip(probes, verdicts) if ok]
    bad = [p for p, ok in zip(probes, verdicts) if not ok]
    names = [groups_name(d) for d in DIMS]
    # the dimensions where several work-groups failed and never planned: one work-group there
    dims = sorted({n for p in bad for n in names if p.get(n, 1) > 1}
                  - {n for p in good for n in names if p.get(n, 1) > 1})
    if dims:
        one = z3.And([space.model.vars[n] == 1 for n in dims])
        space.model.add(Constraint(ONLY, tuple(mapping), f"the mapping {shown} can be synchronised only with "
                                   f"{', '.join(f'{n} = 1' for n in dims)}: accesses of different work-groups "
                                   "cannot be ordered (7.2.2)", z3.Implies(is_mapping, one), family="synchronisation"))
    for p in (p for p in bad if all(p.get(n, 1) == 1 for n in dims)):  # not explained: the values excluded
        fixed = z3.And([space.model.vars[k] == v for k, v in p.items()])
        space.model.add(Constraint(ONLY, tuple(mapping), f"the mapping {shown} cannot be synchronised with "
                                   "the values of a failed probe (7.2.2)", z3.Not(fixed), family="synchronisation"))
    return SOMETIMES


class Synchronised:
    """A strategy whose proposals' mappings were classified before planning (see the module);
    `counts` says how many mappings were found always, sometimes, never synchronisable (or
    unknown), `excluded` how many proposals the learnt constraints turned away.

    The probes cost plans, so they are spent where synchronisation is at stake: the tune's first
    mapping is classified; when synchronisation matters there (a class "sometimes" or "never", or
    a probe's kernel with barriers), every new mapping is; else only the new mappings of structural
    choices that showed it can matter (a candidate whose plan failed, a class other than "always").
    A program whose kernels need no barrier (matmul's blocks, conv, gemv's rows) is planned
    without probes after its first mapping."""

    def __init__(self, pipe: Evaluator, inner: Any) -> None:
        self.pipe, self.inner = pipe, inner
        self.done: set[str] = set()  # structural choice and mapping, classified
        self.sensitive: set[str] = set()  # structural choices whose new mappings are all classified
        self.everywhere = False  # synchronisation matters in this program: every new mapping is classified
        self.scanned: set[int] = set()  # records looked at for failed plans (by id)
        self.counts = {ALWAYS: 0, SOMETIMES: 0, NEVER_SYNC: 0, UNKNOWN: 0}
        self.passed: list[Record] = []
        self.excluded = 0

    def _scan(self, history: Sequence[Record]) -> None:
        for r in history:
            if id(r) not in self.scanned and r.reason != IN_FLIGHT:
                self.scanned.add(id(r))
                if not r.ok and r.reason.startswith("build:"):
                    self.sensitive.add(Choices(points=r.candidate.points).key())

    def _classify(self, cand: Choices) -> None:
        structural = Choices(points=cand.points).key()
        which = repr((structural, sorted((cand.mapping or {}).items())))
        if which in self.done or (self.done and not self.everywhere and structural not in self.sensitive):
            return
        self.done.add(which)
        got = classify(self.pipe, cand)
        self.counts[got] += 1
        kept = self.pipe.probed.get(point_key(cand))
        barriers = kept is not None and bool(getattr(kept.source, "barriers", ()))
        if got != ALWAYS or barriers:
            self.sensitive.add(structural)
        self.everywhere = self.everywhere or got in (SOMETIMES, NEVER_SYNC) or barriers

    def propose(self, history: Sequence[Record]) -> Choices | None:
        self._scan(history)
        cand = None
        for _ in range(RETRIES):
            cand = self.inner.propose([*history, *self.passed])
            if cand is None or is_default(cand) or not cand.mapping:
                return cand
            self._classify(cand)
            space = self.pipe.space(cand.points)
            if isinstance(space, Exception) or _valid(space, cand):
                return cand
            self.excluded += 1
            self.passed.append(Record(cand, False, IN_FLIGHT))  # tried: never planned again
            self.pipe.probed.pop(point_key(cand), None)
        return cand


def _valid(space: Any, cand: Choices) -> bool:
    """Whether `cand` satisfies the constraints the classification added (only those: a candidate
    from elsewhere, a winner transferred from other sizes, need not be the representative the
    uniqueness constraints keep)."""
    subs = [(space.model.vars[k], z3.IntVal(int(v))) for k, v in joint(cand).items() if k in space.model.vars]
    for c in space.model.constraints:
        if c.family == "synchronisation" and z3.is_false(z3.simplify(z3.substitute(c.formula, *subs))):
            return False
    return True


__all__ = ["Synchronised", "classify", "launch_with", "NEVER", "ONLY", "UNPLANNABLE"]
