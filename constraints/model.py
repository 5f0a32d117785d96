"""Named constraints and the z3 model that holds them (thesis 4.3.2, 5.3.2).

A `Constraint` records the thesis `kind` it belongs to (e.g. "private memory scoping",
"divisibility"), the labels of the IR nodes it concerns, a one-line `reason`, and its z3
`formula`. A `Model` is a set of integer variables with finite domains plus constraints;
it checks satisfiability with every constraint tracked, so that an unsatisfiable model
raises `UnsatisfiableError` whose `core` lists the conflicting constraints in those words.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import z3

from lift.arith import Arith
from lift.errors import UnsatisfiableError

from .limits import MODEL_RLIMIT, limited
from .sampling import Sampler

Choice = dict[str, int]

Z3_LOCK = threading.RLock()
"""Held by `lift.compile` and `lift.tune` for their whole run: z3's Python API builds every term
in one global context, which is not thread-safe (two threads solving at once crash the process),
so compiles and tunes of different threads run one at a time."""



@dataclass(frozen=True, slots=True)
class Pred:
    """A symbolic predicate `lhs op rhs` over sizes (op: == != < <= > >=)."""

    op: str
    lhs: Arith
    rhs: Arith

    def __str__(self) -> str:
        return f"{self.lhs} {self.op} {self.rhs}"


@dataclass(frozen=True, slots=True)
class Constraint:
    """A named constraint: `kind` (thesis name), node `labels`, one-line `reason`, z3 `formula`."""

    kind: str
    labels: tuple[str, ...]
    reason: str
    formula: Any = field(compare=False, repr=False)
    pred: Pred | None = None  # the symbolic form of a tuning constraint (simplification)
    family: str = ""  # "algorithmic", "hardware", "mapping" or "launch"

    def __str__(self) -> str:
        where = ", ".join(self.labels)
        return f"[{self.kind}] {self.reason}" + (f" ({where})" if where else "")


def code_in(v: Any, values: Iterable[int]) -> Any:
    """z3: `v` is one of `values`."""
    vs = list(values)
    return z3.Or([v == x for x in vs]) if vs else z3.BoolVal(False)


class Model:
    """Integer variables with finite domains, and named constraints over them."""

    def __init__(self) -> None:
        self.vars: dict[str, Any] = {}
        self.domains: dict[str, tuple[int, ...]] = {}
        self.constraints: list[Constraint] = []

    def var(self, name: str, domain: Iterable[int]) -> Any:
        """A new z3 integer `name` restricted to `domain` (a sorted tuple of ints)."""
        if name in self.vars:
            raise ValueError(f"variable {name!r} declared twice")
        v = z3.Int(name)
        self.vars[name] = v
        self.domains[name] = tuple(sorted(set(domain)))
        return v

    def add(self, c: Constraint) -> None:
        """Add a named constraint (the same formula for the same nodes is kept once)."""
        self.constraints.append(c)

    def domain_formulas(self) -> list[Any]:
        """The domain of every variable, as z3 formulas (kept until a variable is added)."""
        if getattr(self, "_domain_f", (None, -1))[1] == len(self.domains):
            return list(self._domain_f[0])
        out = []
        for name, dom in self.domains.items():
            v = self.vars[name]
            lo, hi = dom[0], dom[-1]
            if len(dom) == hi - lo + 1:
                out.append(z3.And(v >= lo, v <= hi))
            else:
                out.append(code_in(v, dom))
        self._domain_f: tuple[list[Any], int] = (out, len(self.domains))
        return list(out)

    def solver(self, *, tracked: bool = False, seed: int = 0) -> tuple[Any, dict[str, Constraint]]:
        """A z3 solver holding the model (with a tracking literal per constraint if asked), each
        check bounded by `MODEL_RLIMIT` resource units (constraints/limits.py)."""
        s = limited(z3.Solver(), MODEL_RLIMIT)
        s.set("random_seed", seed)
        s.add(self.domain_formulas())
        names: dict[str, Constraint] = {}
        for k, c in enumerate(self.constraints):
            if tracked:
                lit = f"c{k}"
                names[lit] = c
                s.assert_and_track(c.formula, lit)
            else:
                s.add(c.formula)
        return s, names

    def core(self, choice: Mapping[str, int] | None = None) -> tuple[Constraint, ...] | None:
        """The unsat core (constraints) with `choice` assumed, or None when satisfiable."""
        s, names = self.solver(tracked=True)
        fixed = self._fix(choice or {})
        for k, f in enumerate(fixed):
            s.assert_and_track(f, f"choice{k}")
        r = s.check()
        if r == z3.sat:
            return None
        if r == z3.unknown:
            raise UnsatisfiableError(f"z3 could not decide the model: {s.reason_unknown()}")
        return tuple(names[str(lit)] for lit in s.unsat_core() if str(lit) in names)

    def check(self, choice: Mapping[str, int] | None = None, *, what: str = "the model") -> None:
        """Raise `UnsatisfiableError` (core in the constraints' words) unless satisfiable."""
        core = self.core(choice)
        if core is not None:
            shown = "; ".join(str(c) for c in core) or "the choice is outside the variables' domains"
            raise UnsatisfiableError(f"{what} is unsatisfiable: {shown}", core=core)

    def _fix(self, choice: Mapping[str, int]) -> list[Any]:
        unknown = [k for k in choice if k not in self.vars]
        if unknown:
            raise KeyError(f"not a variable of this space: {', '.join(map(str, unknown))}; "
                           f"variables: {', '.join(self.vars)}")
        return [self.vars[k] == int(v) for k, v in choice.items()]

    def is_valid(self, choice: Mapping[str, int]) -> bool:
        """True when `choice` (some or all variables) extends to a solution."""
        key = len(self.constraints)
        if getattr(self, "_base", (None, -1))[1] != key:
            self._base = (self.solver()[0], key)
        s = self._base[0]
        s.push()
        try:
            s.add(self._fix(choice))
            return s.check() == z3.sat
        finally:
            s.pop()

    def stats(self) -> dict[str, int]:
        """Number of constraint instances by kind (like thesis Table 5.4)."""
        return dict(Counter(c.kind for c in self.constraints))

    # --------------------------------------------------------------- sampling

    def sample(self, n: int, seed: int = 0, names: Iterable[str] | None = None) -> list[Choice]:
        """Up to `n` distinct solutions, projected on `names`: drawn by the concrete sampler
        (`constraints.sampling`; confirmed by z3 only when the sampler skipped a constraint it
        cannot evaluate: a draw passing every constraint concretely is a solution, since the
        compiled formulas agree with z3 wherever z3's value is defined, and where it is not, a
        division by zero, z3 may choose the value the sampler computed), then, for what it could
        not find, by z3 random pivots with the solutions found blocked."""
        names = list(names if names is not None else self.vars)
        rng = random.Random(seed)
        out: list[Choice] = []
        seen: set[tuple[int, ...]] = set()
        fast = self._sampler()
        exact = fast is not None and fast.skipped == 0  # every constraint evaluated: z3 would agree
        misses = 0
        while fast is not None and len(out) < n and misses < max(8, n):
            sol = fast.one(rng)
            key = None if sol is None else tuple(sol[k] for k in names)
            if key is None or key in seen or not (exact or self.is_valid(sol)):
                misses += 1
                continue
            seen.add(key)
            out.append({k: sol[k] for k in names})
        if len(out) < n:
            out += self._sample_z3(n - len(out), seed, names, out)
        return out

    def preferred(self, fixed: Mapping[str, int], prefer: Any, row_cost: Any) -> Choice | None:
        """A solution extending `fixed`, found in preference order by the concrete sampler
        (`constraints.sampling.Sampler.best`) and confirmed by z3; None when that search finds
        none (the space may still have one: ask z3)."""
        fast = self._sampler()
        if fast is None or any(k not in self.vars for k in fixed):
            return None
        sol = fast.best(fixed, prefer, row_cost)
        return sol if sol is not None and self.is_valid(sol) else None

    def _sampler(self) -> Any:
        """The concrete sampler of this model (rebuilt when constraints were added), or None."""

        key = len(self.constraints)
        if getattr(self, "_fast", (None, -1))[1] != key:
            ok = bool(self.vars) and Sampler.usable(self.domains)
            self._fast = (Sampler(self.domains, [c.formula for c in self.constraints]) if ok else None, key)
        return self._fast[0]

    def _sample_z3(self, n: int, seed: int, names: list[str], found: list[Choice]) -> list[Choice]:
        """Up to `n` more solutions by z3 random pivots, the `found` ones blocked. Asked in a new z3
        context (the model copied through its SMT-LIB text, as `limits.solve_isolated` does): in
        the process's one context a check's cost depends on the terms built before it, so the
        resource limit cut the search at different places by what the process compiled before
        (SRAD's statistics got 14 or 15 chunk sizes, so a median chunk of 128 or 256 elements,
        by the order of the tests)."""
        rng = random.Random(seed)
        base, _ = self.solver(seed=seed)
        for prev in found:
            base.add(z3.Or([self.vars[k] != v for k, v in prev.items()]))
        ctx = z3.Context()
        s = limited(z3.Solver(ctx=ctx), MODEL_RLIMIT)
        s.set("random_seed", seed)
        vars_ = {k: z3.Int(k, ctx) for k in self.vars}
        try:
            s.add(*z3.parse_smt2_string(base.to_smt2(), ctx=ctx))
        except z3.Z3Exception:  # a name SMT-LIB reserves (a size called `and`): asked in this context
            s, vars_ = base, self.vars
        out: list[Choice] = []
        while len(out) < n:
            sol = _random_solution(s, vars_, self.domains, names, rng)
            if sol is None:
                break
            out.append(sol)
            s.add(z3.Or([vars_[k] != v for k, v in sol.items()]))  # block it
        return out

    def count(self, names: Iterable[str] | None = None, limit: int = 100_000) -> int | None:
        """The number of solutions projected on `names`; None if more than `limit`."""
        names = list(names if names is not None else self.vars)
        s, _ = self.solver()
        k = 0
        while s.check() == z3.sat:
            k += 1
            if k > limit:
                return None
            m = s.model()
            s.add(z3.Or([self.vars[x] != m.eval(self.vars[x], model_completion=True) for x in names]))
        return k


def _random_solution(s: Any, vars_: dict[str, Any], domains: dict[str, tuple[int, ...]],
                     names: list[str], rng: random.Random) -> Choice | None:
    """Fix `names` one at a time in random order, each at a random pivot of its domain."""
    if s.check() != z3.sat:
        return None
    order = names[:]
    rng.shuffle(order)
    s.push()
    try:
        m = None
        for name in order:
            v, dom = vars_[name], domains[name]
            val = _pick(s, v, dom, rng)
            if val is None:  # the solver gave up (its resource limit): no sample this time
                break
            s.add(v == val)
        else:
            m = s.model() if s.check() == z3.sat else None
    finally:
        s.pop()
    if m is None:
        return None
    return {k: m.eval(vars_[k], model_completion=True).as_long() for k in names}


def _pick(s: Any, v: Any, dom: tuple[int, ...], rng: random.Random) -> int | None:
    """A value of `v` consistent with `s`: a random domain value, else the nearest feasible;
    None when the solver cannot decide (it answered "unknown": its resource limit)."""
    pivot = rng.choice(dom)
    for guard in (v == pivot, v >= pivot if rng.random() < 0.5 else v <= pivot, None):
        if guard is not None:
            s.push()
            s.add(guard)
        r = s.check()
        val = s.model().eval(v, model_completion=True).as_long() if r == z3.sat else None
        if guard is not None:
            s.pop()
        if val is not None:
            return val
    return None
