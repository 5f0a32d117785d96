"""The lexicographic optimum of a finite-domain z3 model, found with one incremental solver.

`lex_optimum(domains, formulas, terms, order)` is the assignment `z3.Optimize` returns for
`opt.maximize(Sum(If(c, w, 0) for c, w in terms)); opt.minimize(v) for v in order` (its default
lexicographic priority): the largest score, then, with it fixed, the smallest value of each
variable of `order` in turn. When `order` names every variable the optimum is one assignment, so
both searches give the same answer. This one asks a sequence of satisfiability questions instead
of running the optimiser, whose search grew exponentially with the depth of a map nest (issue 26:
a nest of depth 10 spent 26 s in `Optimize.check`, depth 30 over 4 minutes).

The questions go to a SAT solver: every variable becomes one Boolean per value of its domain
(exactly one true), every atom of a formula over one or two variables is enumerated over their
domains (`constraints.sampling.compile_formula` evaluates it on numpy arrays) into clauses on
those Booleans, and the score is a pseudo-Boolean sum. A formula outside that fragment (an atom
over three or more variables, a term the evaluator does not know, a variable with a domain of
more than `ONE_HOT_DOMAIN` values) sends the whole search to
z3's integer solver instead, which asks the same questions more slowly.

The score is bounded by a binary search between a solution's score and its upper bound (about
log2 of its range questions); each variable is then lowered below its value in the last solution
until the solver says no (at most its domain size questions). Every question adds one bound
under `push`/`pop` to the same solver, which keeps what it learnt. A question the SAT solver
cannot answer within `MAX_CONFLICTS` conflicts is "unknown", and the search keeps the best solution
it has: proving a score bound on a deep nest is a pigeonhole problem (which parallel level each of
many nested maps takes), exponential for a SAT solver, so a nest of depth 16 or 30 gets a good valid
mapping, not a proven optimum, in a few seconds; the mappings of examples/ stay proven optima.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import z3

from .limits import note, used
from .sampling import Unsupported, build_fn, parse_sexpr

Terms = Sequence[tuple[Any, int]]  # the score: (z3 condition, weight) pairs
MAX_CONFLICTS = 20_000  # a SAT question that needs more is "unknown" (deterministic, unlike a clock)
ONE_HOT_DOMAIN = 64  # a variable with a larger domain (a tuning value, a launch size): z3's integers


class BudgetSpent(Exception):
    """The solver answered "unknown" (its resource budget ran out) before any solution."""


def lex_optimum(domains: Mapping[str, Sequence[int]], formulas: Sequence[Any], terms: Terms,
                order: Sequence[str], *, rlimit: int) -> dict[str, int] | None:
    """The lexicographic optimum as {name: value} of the `order` variables, None when `formulas`
    (over integer variables named by `domains`, each restricted to its domain) are unsatisfiable.

    `rlimit` is z3's resource budget for all the questions together (as one `Optimize.check`
    had): `BudgetSpent` when the solver cannot find a first solution within it; once it is spent,
    or the solver answers "unknown", the best solution found so far is kept (valid, and the same
    under any load)."""
    try:
        enc: Encoding = OneHot(domains, formulas, terms)
    except Unsupported:
        enc = Linear(domains, formulas, terms)
    s = enc.solver()
    budget = _Budget(s, rlimit)
    try:
        return _search(enc, budget, order)
    finally:
        note("constraints/lexopt.py:lex_optimum (all questions)", rlimit - budget.left, type(enc).__name__)


def _search(enc: Encoding, budget: _Budget, order: Sequence[str]) -> dict[str, int] | None:
    """`lex_optimum`'s questions to `budget`'s solver, which holds `enc`'s model."""
    s = budget.s
    first = budget.check()
    if first == z3.unsat:
        return None
    if first != z3.sat:
        raise BudgetSpent(s.reason_unknown())
    model = s.model()
    low, high = enc.score(model), enc.upper
    while low < high:
        mid = (low + high + 1) // 2
        found = _try(budget, enc.at_least(mid))
        if found is None:
            high = mid - 1
        elif found is False:  # unknown: keep what is proven
            high = low
        else:
            model, low = found, enc.score(found)
    s.add(enc.at_least(low))
    for name in order:
        best = enc.value(model, name)
        while True:
            found = _try(budget, enc.below(name, best))
            if not found:
                break
            model, best = found, enc.value(found, name)
        s.add(enc.equals(name, best))
    return {name: enc.value(model, name) for name in order}


class _Budget:
    """A solver's checks within one z3 resource budget (z3's `rlimit` counts per check)."""

    def __init__(self, s: Any, rlimit: int) -> None:
        self.s, self.left = s, rlimit

    def check(self) -> Any:
        if self.left <= 0:
            return z3.unknown
        before = used(self.s)
        self.s.set("rlimit", self.left)
        r = self.s.check()
        self.left -= max(used(self.s) - before, 1)
        return r


def _try(budget: _Budget, bound: Any) -> Any:
    """A model of the solver with `bound` added (then removed again), None when there is none,
    False when the solver cannot tell (or the budget is spent)."""
    s = budget.s
    s.push()
    try:
        s.add(bound)
        r = budget.check()
        if r == z3.sat:
            return s.model()
        return None if r == z3.unsat else False
    finally:
        s.pop()


class Encoding:
    """The questions `lex_optimum` asks, in one encoding of the variables."""

    upper: int

    def solver(self) -> Any:
        raise NotImplementedError

    def score(self, model: Any) -> int:
        raise NotImplementedError

    def at_least(self, k: int) -> Any:
        raise NotImplementedError

    def value(self, model: Any, name: str) -> int:
        raise NotImplementedError

    def below(self, name: str, v: int) -> Any:
        raise NotImplementedError

    def equals(self, name: str, v: int) -> Any:
        raise NotImplementedError


class Linear(Encoding):
    """The model as written: integer variables, z3's arithmetic solver."""

    def __init__(self, domains: Mapping[str, Sequence[int]], formulas: Sequence[Any], terms: Terms) -> None:
        self.vars = {name: z3.Int(name) for name in domains}
        self.domains = {name: tuple(d) for name, d in domains.items()}
        self.formulas = list(formulas)
        self.total = z3.Sum([z3.If(c, w, 0) for c, w in terms]) if terms else z3.IntVal(0)
        self.upper = sum(max(w, 0) for _, w in terms)

    def solver(self) -> Any:
        s = z3.Solver()
        s.add([_within(self.vars[k], d) for k, d in self.domains.items()])
        s.add(*self.formulas)
        return s

    def score(self, model: Any) -> int:
        return model.eval(self.total, model_completion=True).as_long()

    def at_least(self, k: int) -> Any:
        return self.total >= k

    def value(self, model: Any, name: str) -> int:
        return model.eval(self.vars[name], model_completion=True).as_long()

    def below(self, name: str, v: int) -> Any:
        return self.vars[name] < v

    def equals(self, name: str, v: int) -> Any:
        return self.vars[name] == v


def _within(v: Any, domain: tuple[int, ...]) -> Any:
    """z3: `v` takes a value of `domain` (a range when it has no gaps)."""
    lo, hi = min(domain), max(domain)
    if len(set(domain)) == hi - lo + 1:
        return z3.And(v >= lo, v <= hi)
    return z3.Or([v == x for x in domain])


class OneHot(Encoding):
    """One Boolean per variable and value; formulas as clauses over them; the score pseudo-Boolean."""

    def __init__(self, domains: Mapping[str, Sequence[int]], formulas: Sequence[Any], terms: Terms) -> None:
        if any(len(d) > ONE_HOT_DOMAIN for d in domains.values()):
            raise Unsupported(f"a domain of more than {ONE_HOT_DOMAIN} values")
        self.domains = {name: np.asarray(sorted(set(d)), dtype=np.int64) for name, d in domains.items()}
        self.lits = {name: {int(v): z3.Bool(f"{name}={int(v)}") for v in d} for name, d in self.domains.items()}
        self.clauses = [self._translate(_inline(parse_sexpr(f.sexpr()), {})) for f in formulas]
        self.terms = [(self._translate(_inline(parse_sexpr(c.sexpr()), {})), w) for c, w in terms]
        self.upper = sum(max(w, 0) for _, w in terms)

    def solver(self) -> Any:
        s = z3.SolverFor("QF_FD")
        s.set("max_conflicts", MAX_CONFLICTS)  # per question: the SAT solver's rlimit counts too little
        for lits in self.lits.values():
            s.add(z3.PbEq([(b, 1) for b in lits.values()], 1))
        s.add(*self.clauses)
        return s

    def score(self, model: Any) -> int:
        return sum(w for c, w in self.terms if z3.is_true(model.eval(c, model_completion=True)))

    def at_least(self, k: int) -> Any:
        # pseudo-Boolean weights are positive: a negative weight counts its condition's negation
        pairs = [(c, w) if w > 0 else (z3.Not(c), -w) for c, w in self.terms if w]
        return z3.PbGe(pairs, k + sum(-w for _, w in self.terms if w < 0)) if pairs else z3.BoolVal(k <= 0)

    def value(self, model: Any, name: str) -> int:
        for v, b in self.lits[name].items():
            if z3.is_true(model.eval(b, model_completion=True)):
                return v
        raise ValueError(f"the model gives {name} no value")

    def below(self, name: str, v: int) -> Any:
        return _or([b for k, b in self.lits[name].items() if k < v])

    def equals(self, name: str, v: int) -> Any:
        return self.lits[name][v]

    def _translate(self, t: Any) -> Any:
        """A parsed formula as a Boolean formula over the value literals."""
        names = _names(t, self.domains)
        if len(names) <= 2:
            return self._enumerate(t, sorted(names))
        if isinstance(t, list) and t and t[0] in _CONNECTIVES:
            args = [self._translate(a) for a in t[1:]]
            return _CONNECTIVES[t[0]](args)
        raise Unsupported(f"an atom over {len(names)} variables")

    def _enumerate(self, t: Any, names: list[str]) -> Any:
        """A formula over at most two variables, as clauses: for each value of the first, the
        values of the second it allows."""
        fn = build_fn(t, {}, set())
        if not names:
            return z3.BoolVal(bool(fn({})))
        grids = np.meshgrid(*(self.domains[k] for k in names), indexing="ij")
        ok = np.broadcast_to(np.asarray(fn(dict(zip(names, grids))), dtype=bool), grids[0].shape)
        first = self.lits[names[0]]
        if len(names) == 1:
            return _or([first[int(v)] for v, good in zip(self.domains[names[0]], ok) if good])
        second = self.lits[names[1]]
        clauses = []
        for i, v in enumerate(self.domains[names[0]]):
            if ok[i].all():
                continue
            allowed = [second[int(w)] for w, good in zip(self.domains[names[1]], ok[i]) if good]
            clauses.append(_or([_not(first[int(v)]), *allowed]))
        return _and(clauses)


def _connective(mk: Any, lits: list[Any], empty: bool) -> Any:
    """`mk` (Z3_mk_or / Z3_mk_and) over Boolean literals through z3's C API: z3.Or/And coerce and
    sort-check every argument in Python, which was half of choose_mapping's time on deep nests."""
    if not lits:
        return z3.BoolVal(empty)
    if len(lits) == 1:
        return lits[0]
    ctx = lits[0].ctx
    arr = (z3.Ast * len(lits))()
    for i, a in enumerate(lits):
        arr[i] = a.as_ast()
    return z3.BoolRef(mk(ctx.ref(), len(lits), arr), ctx)


def _or(lits: list[Any]) -> Any:
    return _connective(z3.Z3_mk_or, lits, False)


def _and(lits: list[Any]) -> Any:
    return _connective(z3.Z3_mk_and, lits, True)


def _not(a: Any) -> Any:
    return z3.BoolRef(z3.Z3_mk_not(a.ctx.ref(), a.as_ast()), a.ctx)


_CONNECTIVES = {
    "and": z3.And,
    "or": z3.Or,
    "not": lambda a: z3.Not(a[0]),
    "=>": lambda a: z3.Implies(a[0], a[1]),
}


def _inline(t: Any, scope: dict[str, Any]) -> Any:
    """The parsed s-expression with its `let` bindings substituted."""
    if isinstance(t, str):
        return scope.get(t, t)
    if t and t[0] == "let":
        inner = dict(scope)
        for name, value in t[1]:
            inner[name] = _inline(value, scope)
        return _inline(t[2], inner)
    return [_inline(a, scope) for a in t]


def _names(t: Any, domains: Mapping[str, Any]) -> set[str]:
    """The variables a parsed formula reads; `Unsupported` for a name that is none of them."""
    if isinstance(t, str):
        if t.lstrip("-").isdigit() or t in ("true", "false"):
            return set()
        name = t[1:-1] if t.startswith("|") else t
        if name not in domains:
            raise Unsupported(f"{name} is not a variable of the model")
        return {name}
    out: set[str] = set()
    for a in t[1:]:
        out |= _names(a, domains)
    return out


__all__ = ["lex_optimum", "BudgetSpent"]
