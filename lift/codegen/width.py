"""Index width: 32-bit `int` indices where the symbolic ranges prove they fit, 64-bit `long` elsewhere.

A kernel is *wide* when a loop bound, a loop variable after its last increment, an index, a
guard, a buffer's element count or an ND-range size can exceed 2^31 - 1 for some value of the
kernel's variables within their ranges (known from constant sizes): its loop variables and its
size arguments become `long`, and the floor-division helpers take `long`. Other kernels keep
`int` (so small kernels and the golden files stay as they are); where a bound depends on
unbounded symbolic sizes (`N * M`), it is recorded as a *limit* that the program checks against
2^31 - 1 when a call binds the sizes (`lift.program.Program`): a call that passes it switches the
program to the same code generated with 64-bit indices (`generate(wide=True)`, built once, on the
first such call), so small sizes keep 32-bit kernels and large ones never hang or index wrongly. A
`Program` made without `lift.compile` (no way to regenerate) raises `LiftValueError` instead.

Example: `reduce_seq(add, 0.0) << pad(0, 2**31, 0.0) << x` loops `for (long i = 0; i < 2147483664; i++)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from lift.arith import C_HELPERS, Arith, Cst, FloorDiv, Max, Min, Mod, Prod, Sum, Var, free_vars, lower, upper
from lift.codegen.c_ast import (
    Assign,
    AtomicCombine,
    CBin,
    CCall,
    CCompound,
    CCond,
    CExpr,
    CIndex,
    CInt,
    CLane,
    CMember,
    CRaw,
    CStmt,
    CVecLoad,
    Decl,
    For,
    KernelDef,
    VecStore,
    walk_stmts,
)

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)

LONG_HELPERS = C_HELPERS.replace("int", "long")


@dataclass(frozen=True, slots=True)
class Width:
    """The decision for one kernel: `wide` (64-bit indices), else the symbolic maxima (`limits`,
    over the size variables) that must not exceed 2^31 - 1 at run time."""

    wide: bool
    limits: tuple[Arith, ...] = ()


def decide(kdef: KernelDef, extents: Iterable[Arith], sizes: Iterable[str]) -> Width:
    """Whether kernel `kdef` needs 64-bit indices; `extents` are its ND-range sizes and the element
    counts of its buffers, `sizes` the program's size variables."""
    size_names = set(sizes)
    limits: dict[Arith, None] = {}
    seen: set[Arith] = set()
    for q in (*extents, *_quantities(kdef)):
        for s in _subterms(q):
            if s in seen:
                continue
            seen.add(s)
            if _too_big(s, size_names, limits):
                return Width(True)
    return Width(False, tuple(limits))


def widen(kdef: KernelDef) -> KernelDef:
    """`kdef` with `long` loop variables and size arguments."""
    params = [replace(p, ctype="long") if not p.qual and p.ctype == "int" else p for p in kdef.params]
    return replace(kdef, params=params, index_type="long")


def _too_big(s: Arith, size_names: set[str], limits: dict[Arith, None]) -> bool:
    lo = lower(s)
    if isinstance(lo, Cst) and lo.value < INT32_MIN:
        return True
    hi = upper(s)
    if hi is None and not isinstance(s, Cst):
        hi = s if {v.name for v in free_vars(s)} <= size_names else None
    if isinstance(s, Cst):
        hi = s
    if hi is None:
        return False  # not bounded by the sizes (e.g. an iterate's counter): nothing to decide
    if isinstance(hi, Cst):
        return hi.value > INT32_MAX
    if {v.name for v in free_vars(hi)} <= size_names:
        limits[hi] = None
    return False


def _subterms(e: Arith) -> Iterator[Arith]:
    """`e` and every expression it is built from (what the C code computes on the way)."""
    yield e
    match e:
        case Sum(xs) | Prod(xs):
            for x in xs:
                yield from _subterms(x)
        case FloorDiv(a, b) | Mod(a, b) | Min(a, b) | Max(a, b):
            yield from _subterms(a)
            yield from _subterms(b)


def _quantities(kdef: KernelDef) -> Iterator[Arith]:
    """Every integer expression the kernel computes: loop bounds and increments, indices, guards."""
    for s in walk_stmts(kdef.body):
        yield from _stmt_quantities(s)


def _stmt_quantities(s: CStmt) -> Iterator[Arith]:
    match s:
        case For(var=var, init=init, bound=bound, step=step):
            yield bound
            if not s.once:  # the variable passes the bound by at most one step
                yield bound + _step(step, bound)
            if isinstance(var, Var) and var.hi is not None:
                yield var.hi
            yield from _expr_quantities(init)
        case Decl(_, _, init, _, size, _):
            if size is not None:
                yield size
            if init is not None:
                yield from _expr_quantities(init)
        case Assign(lhs, rhs, _):
            yield from _expr_quantities(lhs)
            yield from _expr_quantities(rhs)
        case VecStore(n, value, _, offset):
            yield offset + n
            yield from _expr_quantities(value)
        case AtomicCombine(_, target, value, _, _):
            yield from _expr_quantities(target)
            yield from _expr_quantities(value)


def _step(step: CExpr, bound: Arith) -> Arith:
    if isinstance(step, CInt):
        return step.value
    if isinstance(step, CRaw) and step.text.isdigit():
        return Cst(int(step.text))
    return bound  # a work-item stride: at most the rounded-up trip count


def _expr_quantities(e: CExpr) -> Iterator[Arith]:
    match e:
        case CInt(value):
            yield value
        case CIndex(_, index, _, _):
            yield index
        case CVecLoad(n, _, offset):
            yield offset + n
        case CMember(x, _) | CLane(x, _):
            yield from _expr_quantities(x)
        case CCall(_, args) | CCompound(_, args, _):
            for a in args:
                yield from _expr_quantities(a)
        case CBin(_, left, right):
            yield from _expr_quantities(left)
            yield from _expr_quantities(right)
        case CCond(conds, then, orelse):
            for c, _, hi in conds:
                yield c
                if hi is not None:
                    yield hi
            yield from _expr_quantities(then)
            yield from _expr_quantities(orelse)


__all__ = ["Width", "decide", "widen", "LONG_HELPERS", "INT32_MAX"]
