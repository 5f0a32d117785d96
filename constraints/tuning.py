"""Tuning parameters and their constraints (thesis 4.3): inference, simplification, ranges.

Tuning parameters are the size variables a program uses as split, slide, pad (and rewrite-
point) amounts that are not sizes of its inputs: `split(T) << x` with `T = Size("T")`.
Algorithmic constraints (4.1-4.5) come from the size conditions the type checker records
plus `m <= n` for splits and strict coverage for tiling slides (a slide whose size or step
is a tuning parameter: `(n - size) % step == 0`). Hardware constraints come from the device:
local and private buffer sizes, and the largest input or output allocation.

`simplify` drops entailed constraints (4.6, 4.7) and de-duplicates equivalent ones (4.8,
4.9): first by canonical form, then by a z3 proof of equivalence under the parameter
ranges and the other constraints. `reduce_ranges` is Algorithm 2.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

import z3

from lift.arith import (
    Arith,
    Cst,
    Mod,
    Var,
    evaluate,
    free_vars,
    lower,
    max_,
    min_,
    prove_eq,
    prove_le,
    prove_lt,
    substitute,
    to_z3,
    upper,
)
from lift.devices import Device
from lift.ir import nodes as n
from lift.ir.nodes import FunCall, Lambda, Node
from lift.ir.paths import walk
from lift.ir.registry import case, register
from lift.typecheck import size_conditions, typecheck
from lift.types import ArrayType, TupleType, Type, scalar_bytes, scalar_count

from .context import Context
from .limits import PROOF_RLIMIT, limited
from .model import Constraint, Pred

DIVISIBILITY, POSITIVITY, BOUNDS, COVERAGE = "divisibility", "positivity", "bounds", "strict slide coverage"
LOCAL_MEM, PRIVATE_MEM, ALLOCATION = "local memory size", "private memory size", "maximum allocation"
DEFAULT_MAX = 1 << 16  # the upper end of a range nothing bounds
PRIVATE_BUDGET = {"gpu": 1024, "cpu": 64 * 1024, "accelerator": 1024}  # bytes per work-item
POCL_STACK_BYTES = 8 << 20  # a PoCL pthread worker's stack, which holds a work-group's private arrays
POCL_STACK_RESERVE = 1 << 20  # what the kernel's own frames and the runtime need of it


@dataclass(frozen=True, slots=True)
class TuningParam:
    """A tuning parameter with its (possibly symbolic) inclusive range."""

    name: str
    lo: Arith
    hi: Arith | None  # None: unbounded
    labels: tuple[str, ...] = ()

    @property
    def var(self) -> Var:
        """The parameter as a range-carrying variable (for range-aware proofs)."""
        return Var(self.name, self.lo, self.hi)

    def __str__(self) -> str:
        return f"{self.name}: [{self.lo}..{self.hi}]"


def input_sizes(expr: Node) -> set[str]:
    """Names of the size variables in the program's parameter types (problem sizes)."""
    if not isinstance(expr, Lambda):
        return set()
    return {v.name for p in expr.params for v in _type_vars(p.ptype)}


def _type_vars(t: Type) -> set[Var]:
    if isinstance(t, ArrayType):
        return free_vars(t.size) | _type_vars(t.elem)
    if isinstance(t, TupleType):
        return set().union(*(_type_vars(e) for e in t.elems))
    return set()


def collect_params(expr: Node) -> dict[str, TuningParam]:
    """The tuning parameters of `expr`, each with the range [1..] (unbounded above)."""
    inputs = input_sizes(expr)
    out: dict[str, TuningParam] = {}
    for _, x in walk(expr):
        sizes = case("sizes", x)
        for a in sizes(x) if sizes is not None else []:
            for v in free_vars(a):
                if v.name not in inputs:
                    old = out.get(v.name)
                    labels = (old.labels if old else ()) + ((x.label,) if x.label else ())
                    out[v.name] = TuningParam(v.name, Cst(1), None, tuple(dict.fromkeys(labels)))
    return out


# The sizes of a pattern a tuning parameter may name (a stage of the registry, `case("sizes", f)`);
# other patterns name none.


@register(n.Split, stage="sizes")
def _split_sizes(f: n.Split) -> list[Arith]:
    return [f.n]


@register(n.Slide, stage="sizes")
def _slide_sizes(f: n.Slide) -> list[Arith]:
    return [f.size, f.step]


@register(n.Pad, stage="sizes")
def _pad_sizes(f: n.Pad) -> list[Arith]:
    return [f.left, f.right]


# ------------------------------------------------------------- algorithmic


def _label(node: Node) -> tuple[str, ...]:
    lab = node.label or (node.f.label if isinstance(node, FunCall) else None)
    return (lab,) if lab else ()


def pred_constraint(kind: str, pred: Pred, labels: tuple[str, ...], reason: str, family: str) -> Constraint:
    """A constraint from a symbolic predicate (its z3 formula made from the predicate)."""
    return Constraint(kind, labels, reason, pred_z3(pred), pred=pred, family=family)


def pred_z3(p: Pred) -> z3.BoolRef:
    """The z3 form of a predicate over size variables."""
    a, b = to_z3(p.lhs), to_z3(p.rhs)
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[p.op]


def algorithmic(expr: Node) -> list[Constraint]:
    """Constraints 4.1-4.5 of the program's patterns (before simplification)."""
    out = []
    for c in size_conditions(expr):
        pred = {"divides": Pred("==", c.b % c.a, Cst(0)), "positive": Pred(">", c.a, Cst(0)),
                "nonneg": Pred(">=", c.a, Cst(0)), "less": Pred("<", c.a, c.b)}[c.kind]
        kind = {"divides": DIVISIBILITY, "positive": POSITIVITY}.get(c.kind, BOUNDS)
        out.append(pred_constraint(kind, pred, _label(c.node), c.reason, "algorithmic"))
    params = set(collect_params(expr))
    for _, x in walk(expr):
        if isinstance(x, FunCall) and isinstance(x.args[0].type if x.args else None, ArrayType):
            extra = case("algorithmic", x.f)
            if extra is not None:
                out.extend(extra(x.f, cast(ArrayType, x.args[0].type).size, _label(x), params))
    return out


# The constraints a pattern puts on the size of its argument beside its typing conditions (a stage of
# the registry, `case("algorithmic", f)`: `(f, size, labels, params) -> list[Constraint]`).


@register(n.Split, stage="algorithmic")
def _split_bound(f: n.Split, size: Arith, lab: tuple[str, ...], params: set[str]) -> list[Constraint]:
    m = f.n
    return [pred_constraint(BOUNDS, Pred("<=", m, size), lab, f"split size {m} <= {size} (4.2)", "algorithmic")]


@register(n.Slide, stage="algorithmic")
def _slide_coverage(f: n.Slide, size: Arith, lab: tuple[str, ...], params: set[str]) -> list[Constraint]:
    sz, step = f.size, f.step
    if not {v.name for v in free_vars(sz) | free_vars(step)} & params:
        return []
    return [pred_constraint(COVERAGE, Pred("==", (size - sz) % step, Cst(0)), lab,
                            f"tiling slide({sz}, {step}) covers all {size} elements (4.4)", "algorithmic")]


# ----------------------------------------------------------------- hardware


def buffer_bytes(ctx: Context, space: str) -> Arith | None:
    """Bytes of the `space` ("local", "private") buffers of one work-group / work-item, or
    None when there are none."""
    bufs = [b for b in ctx.buffers if b.space == space]
    total: Arith = Cst(0)
    for b in bufs:
        total = total + b.elems * 4 * _below_owner(ctx, b)
    return total if bufs else None


def private_per_group(device: Device) -> int | None:
    """Bytes of private memory that all the work-items of one work-group share, or None when
    the device gives each its own registers. PoCL's CPU devices run a work-group on one worker
    thread and keep every work-item's private arrays on its 8 MiB stack; more kills the process."""
    if device.kind == "cpu" and "portable computing language" in (device.platform or "").lower():
        return POCL_STACK_BYTES - POCL_STACK_RESERVE
    return None


def hardware(expr: Node, ctx: Context, device: Device) -> list[Constraint]:
    """Device limits on local and private buffers and on input/output allocations."""
    out = []
    for space, kind, limit in (("local", LOCAL_MEM, device.local_mem_bytes),
                               ("private", PRIVATE_MEM, PRIVATE_BUDGET.get(device.kind, 1024))):
        total = buffer_bytes(ctx, space)
        if total is not None:
            out.append(pred_constraint(kind, Pred("<=", total, Cst(limit)), (),
                                       f"{space} buffers ({total} bytes) fit in {limit} bytes", "hardware"))
    types = [p.ptype for p in expr.params] if isinstance(expr, Lambda) else []
    result = typecheck(expr)
    types.append(result.out if hasattr(result, "out") else result)
    for k, t in enumerate(types):
        size = scalar_count(t) * scalar_bytes(t)
        if free_vars(size) or (isinstance(size, Cst) and size.value > device.max_alloc_bytes):
            what = f"argument {k}" if k < len(types) - 1 else "the result"
            out.append(pred_constraint(ALLOCATION, Pred("<=", size, Cst(device.max_alloc_bytes)), (),
                                       f"{what} ({size} bytes) fits one allocation", "hardware"))
    return out


def _below_owner(ctx: Context, b) -> Arith:
    """Product of the lengths of the writer's maps inside the buffer's owner."""
    owner = b.owner_chain
    chain = max(b.writer_chains, key=len) if b.writer_chains else owner
    total: Arith = Cst(1)
    for m in chain[len(owner):]:
        total = total * ctx.maps[m].length
    return total




# ----------------------------------------------------------- simplification


def substitute_constraint(c: Constraint, env: Mapping[str, Arith | int]) -> Constraint:
    """`c` with variables replaced (its z3 formula rebuilt)."""
    if c.pred is None:
        return c
    p = Pred(c.pred.op, substitute(c.pred.lhs, env), substitute(c.pred.rhs, env))
    return replace(c, pred=p, formula=pred_z3(p))


def decide(p: Pred, params: Mapping[str, TuningParam]) -> bool | None:
    """True if `p` holds for all values in the ranges, False if for none, else None."""
    env = {t.name: t.var for t in params.values()}
    a, b = substitute(p.lhs, env), substitute(p.rhs, env)
    if isinstance(a, Cst) and isinstance(b, Cst):
        return {"==": a.value == b.value, "!=": a.value != b.value, "<": a.value < b.value,
                "<=": a.value <= b.value, ">": a.value > b.value, ">=": a.value >= b.value}[p.op]
    tests = {"<=": (prove_le(a, b), prove_lt(b, a)), "<": (prove_lt(a, b), prove_le(b, a)),
             ">=": (prove_le(b, a), prove_lt(a, b)), ">": (prove_lt(b, a), prove_le(a, b)),
             "==": (prove_eq(a, b), prove_lt(a, b) or prove_lt(b, a))}
    yes, no = tests.get(p.op, (False, False))
    return True if yes else False if no else None


def _ranges_z3(params: Mapping[str, TuningParam], others: set[str]) -> list[z3.BoolRef]:
    out = [z3.Int(v) >= 1 for v in others]
    for t in params.values():
        v = z3.Int(t.name)
        out += [v >= to_z3(t.lo)] + ([v <= to_z3(t.hi)] if t.hi is not None else [])
    return out


def _proved(claim: z3.BoolRef, facts: list[z3.BoolRef], rlimit: int = PROOF_RLIMIT) -> bool:
    """`facts` entail `claim` (within a resource budget, so the answer does not depend on load;
    not proved when the budget runs out)."""
    s = limited(z3.Solver(), rlimit)
    s.add(facts)
    s.add(z3.Not(claim))
    return s.check() == z3.unsat


def simplify(params: Mapping[str, TuningParam], cons: list[Constraint]) -> tuple[list[Constraint], list[tuple]]:
    """Drop entailed constraints and duplicates; returns (kept, [(dropped, why), ...]).

    Duplicates are found on normal forms: canonical arithmetic after writing every `v` known
    to be a multiple of `d` (a constraint `v % d == 0`) as `d*v'` (4.8, and 4.9 for exact
    division), then by a z3 proof of equivalence under the ranges and the other constraints."""
    kept: list[Constraint] = []
    dropped: list[tuple] = []
    seen: dict[tuple, Constraint] = {}
    facts = _multiples(cons)
    for c in cons:
        key = _normal(c, facts)
        if c.pred is not None and decide(c.pred, params) is True:
            dropped.append((c, "entailed by the parameter ranges"))
        elif key is not None and key in seen:
            dropped.append((c, f"duplicate of: {seen[key]}"))
        else:
            kept.append(c)
            if key is not None:
                seen[key] = c
    return _dedup_z3(params, kept, dropped)


def _multiples(cons: list[Constraint]) -> dict[str, tuple[Arith, Constraint]]:
    """{v: (d, c)} for constraints c of the form `v % d == 0`."""

    out = {}
    for c in cons:
        p = c.pred
        if p is not None and p.op == "==" and p.rhs == Cst(0) and isinstance(p.lhs, Mod) \
                and isinstance(p.lhs.a, Var) and p.lhs.a.name not in out:
            out[p.lhs.a.name] = (p.lhs.b, c)
    return out


def _normal(c: Constraint, facts: Mapping[str, tuple[Arith, Constraint]]) -> tuple | None:
    if c.pred is None:
        return None
    env = {v: d * Var(v + "'", Cst(1), None) for v, (d, fc) in facts.items() if fc is not c}
    p = c.pred
    return (p.op, substitute(p.lhs, env), substitute(p.rhs, env)) if env else (p.op, p.lhs, p.rhs)


def _dedup_z3(params: Mapping[str, TuningParam], kept: list[Constraint],
              dropped: list[tuple]) -> tuple[list[Constraint], list[tuple]]:
    """Merge constraints proven equivalent under the ranges and the other constraints.

    A pair is tried on concrete points first (`_differ`: a point where every other constraint
    holds and the two disagree shows they are not equivalent, the common case); z3 is asked
    only when no such point is found, and its answers are cached by constraint."""
    names = {v.name for c in kept if c.pred for v in free_vars(c.pred.lhs) | free_vars(c.pred.rhs)}
    ranges = _ranges_z3(params, names - set(params))
    out = list(kept)
    for i in range(len(out) - 1, -1, -1):
        c = out[i]
        if c.pred is None:
            continue
        for d in out[:i]:
            if d.pred is None or not set(_vars(c)) & set(_vars(d)):
                continue
            others = [x for x in out if x is not c and x is not d]
            if _equivalent(c, d, others, params, ranges):
                dropped.append((c, f"equivalent to: {d}"))
                out.pop(i)
                break
    return out, dropped


_PROOFS: dict[tuple, bool] = {}  # (c, d, others, ranges) -> proved equivalent
PROBES = 64  # concrete points tried before z3 is asked


def _equivalent(c: Constraint, d: Constraint, others: list[Constraint], params: Mapping[str, TuningParam],
                ranges: list[z3.BoolRef]) -> bool:
    key = (c.pred, d.pred, tuple(x.pred if x.pred is not None else x.formula.sexpr() for x in others),
           tuple((t.name, t.lo, t.hi) for t in params.values()))
    hit = _PROOFS.get(key)
    if hit is None:
        if _differ(c, d, others, params):
            hit = False
        else:
            hit = _proved(c.formula == d.formula, ranges + [x.formula for x in others])
        _PROOFS[key] = hit
    return hit


def _differ(c: Constraint, d: Constraint, others: list[Constraint], params: Mapping[str, TuningParam]) -> bool:
    """A concrete point (sizes from 1 to 2^40, log-uniform, and tuning values in their ranges)
    where the other constraints hold and `c` and `d` disagree: they are not equivalent."""

    names = sorted({v.name for x in (c, d, *others) if x.pred for v in
                    free_vars(x.pred.lhs) | free_vars(x.pred.rhs)})
    if any(x.pred is None for x in others):
        return False  # a fact this cannot evaluate: leave it to z3
    rng = random.Random(hash(tuple(names)) & 0xFFFF)
    for k in range(PROBES):
        env = {v: _probe(rng, k) for v in names}
        if not _in_ranges(env, params):
            continue
        try:
            if all(_holds(cast(Pred, x.pred), env) for x in others) \
                    and _holds(cast(Pred, c.pred), env) != _holds(cast(Pred, d.pred), env):
                return True
        except (ZeroDivisionError, KeyError, ValueError):
            continue
    return False


def _probe(rng, k: int) -> int:
    if k < 8:
        return 1 << (5 * k)
    return max(1, int(2 ** rng.uniform(0, 40)))


def _in_ranges(env: Mapping[str, int], params: Mapping[str, TuningParam]) -> bool:

    try:
        for t in params.values():
            if t.name in env and (env[t.name] < evaluate(t.lo, env)
                                  or (t.hi is not None and env[t.name] > evaluate(t.hi, env))):
                return False
    except (KeyError, ZeroDivisionError, ValueError):
        return False
    return True


def _holds(p: Pred, env: Mapping[str, int]) -> bool:

    a, b = evaluate(p.lhs, env), evaluate(p.rhs, env)
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[p.op]


def _vars(c: Constraint) -> list[str]:
    return [v.name for v in free_vars(c.pred.lhs) | free_vars(c.pred.rhs)] if c.pred else []


# ---------------------------------------------------------- range reduction


def _bound(c: Constraint, params: Mapping[str, TuningParam]) -> tuple[str, str, Arith] | None:
    """(t, op, x) when `c` is `t op x` (or `x op t`) with one tuning parameter t (4.10)."""
    p = c.pred
    if p is None or p.op not in ("<", "<=", ">", ">=", "=="):
        return None
    flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}
    for t, op, x in ((p.lhs, p.op, p.rhs), (p.rhs, flip[p.op], p.lhs)):
        if isinstance(t, Var) and t.name in params and not {v.name for v in free_vars(x)} & set(params):
            return t.name, op, x
    return None


def _tighten(t: TuningParam, op: str, x: Arith) -> TuningParam:
    lo = {">": x + 1, ">=": x, "==": x}.get(op)
    hi = {"<": x - 1, "<=": x, "==": x}.get(op)
    if lo is not None and not prove_le(lo, t.lo):
        t = replace(t, lo=lo if prove_le(t.lo, lo) else _max(t.lo, lo))
    if hi is not None and (t.hi is None or not prove_le(t.hi, hi)):
        t = replace(t, hi=hi if t.hi is None or prove_le(hi, t.hi) else _min(t.hi, hi))
    return t


def _max(a: Arith, b: Arith) -> Arith:

    return max_(a, b)


def _min(a: Arith, b: Arith) -> Arith:

    return min_(a, b)


def reduce_ranges(params: Mapping[str, TuningParam], cons: list[Constraint]
                  ) -> tuple[dict[str, TuningParam], list[Constraint], dict[str, Arith]]:
    """Algorithm 2: bound constraints narrow ranges and go; single-value parameters go.

    Returns the remaining parameters (ranges reduced), constraints, and the fixed values."""
    fixed: dict[str, Any] = {}
    ts, cs = dict(params), list(cons)
    while True:
        bs = [c for c in cs if _bound(c, ts)]
        if not bs:
            break
        for b in bs:
            bound = _bound(b, ts) if b in cs else None
            if bound is None:  # already removed or no longer a bound
                continue
            cs.remove(b)
            name, op, x = bound
            ts[name] = _tighten(ts[name], op, x)
            ts, cs, fixed = _propagate(ts, cs, fixed)
    ts = _relational(ts, cs)
    return ts, cs, fixed


def _propagate(ts: dict[str, TuningParam], cs: list[Constraint], fixed: dict[str, Arith]):
    """Remove single-value parameters, substitute them, drop constraints that became true."""
    while True:
        single = {k: t.lo for k, t in ts.items() if t.hi is not None and prove_eq(t.lo, t.hi)}
        if not single:
            break
        fixed.update(single)
        ts = {k: replace(t, lo=substitute(t.lo, single), hi=None if t.hi is None else substitute(t.hi, single))
             for k, t in ts.items() if k not in single}
        cs = [substitute_constraint(c, single) for c in cs]
    cs = [c for c in cs if c.pred is None or decide(c.pred, ts) is not True]
    return ts, cs, fixed


def _relational(ts: dict[str, TuningParam], cs: list[Constraint]) -> dict[str, TuningParam]:
    """Narrow `t <= x(other parameters)` to the bound of x over their ranges (keeps the constraint)."""
    for c in cs:
        p = c.pred
        if p is None or p.op not in ("<", "<="):
            continue
        for t, x, up in ((p.lhs, p.rhs, True), (p.rhs, p.lhs, False)):
            if not (isinstance(t, Var) and t.name in ts):
                continue
            env = {k: v.var for k, v in ts.items() if k != t.name}
            xr = substitute(x, env)
            b = upper(xr) if up else lower(xr)
            if b is not None and not {v.name for v in free_vars(b)} & set(ts):
                strict = p.op == "<"
                ts[t.name] = _tighten(ts[t.name], ("<" if strict else "<=") if up else (">" if strict else ">="), b)
    return ts


def concrete_range(t: TuningParam, sizes: Mapping[str, int]) -> range:
    """The integer range of `t` with problem sizes known."""

    lo = evaluate(substitute(t.lo, sizes), {}) if not free_vars(substitute(t.lo, sizes)) else 1
    hi_e = substitute(t.hi, sizes) if t.hi is not None else None
    hi = evaluate(hi_e, {}) if hi_e is not None and not free_vars(hi_e) else DEFAULT_MAX
    return range(max(lo, 0), max(hi, lo) + 1)
