"""The GPU reduction point `gpu_reduce`: a work-group local-memory tree reduction per chunk and
the atomic combine of the groups' results (thesis 6.2.5.3, Listing 6.7, with LIFT's GPU tree).

    gpu_reduce(reduce(f, z) << map(g)) << x
        ->  reduce_atomic(f, z) << map_wrg(0)(chunk => group(chunk)) << split(L*C) << x
    group(chunk) = reduce_seq(f, z) << halve^(log2 L)          (halve composed log2 L times: `iterate`
                                                                 cannot hold a map_lcl in a kernel)
    halve(a)     = to_local(map_lcl(0)(pr => reduce_seq(f, z) << pr)) << split(2) << a
                   << to_local(map_lcl(0)(col => reduce_seq((acc, v) => f(acc, g(v)), z) << col))
                   << transpose << split(L) << chunk

A work-group of L work-items reduces L*C elements: work-item l first folds elements l, l+L, l+2L, ..
(consecutive work-items read consecutive addresses at every step: coalesced), then the L partial
results are halved in local memory log2(L) times (the MAG pass puts a barrier between the steps),
and local work-item 0 combines the group's result into the output with an atomic
(lift/codegen/atomic.py; the output pre-filled with z). `f` must be associative and commutative
with neutral z (the atomic combine reorders), the operators `reduce_atomic` supports.

Structural parameters: `local` (L, a power of two) and `chunk` (C). Their space, with the device's
limits as named z3 constraints, is `lift.constraints.gpu_tiles.ReduceSpace`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

from lift.arith import Cst
from lift.ir import patterns as p
from lift.ir.nodes import FunCall, FunDecl, Join, Lambda, Literal, MapWrg, Param, ReduceAtomic, Split, node
from lift.rules.reduce import is_monoid
from lift.rules.terms import substitute
from lift.typecheck import type_of
from lift.types import ArrayType
from lift.userfun.builtins import id as copy

from .auto import PREFIX
from .chunks import atomic_ok, reduce_parts
from .point import Nested, RewritePoint, constructor
from .shapes import MAP, match_shape

LOCALS = (256, 128, 64, 32)  # work-items per group (powers of two: the tree halves)
CHUNKS = (64, 32, 16, 8, 4, 2, 1, 128, 256, 512, 1024)  # elements per work-item


@node
class GpuReduce(RewritePoint):
    """`gpu_reduce(reduce(f, z) << map(g))`: a local-memory tree per work-group, atomic combine."""

    f: FunDecl
    local: Any = None
    chunk: Any = None
    kind: ClassVar[str] = "gpu_reduce"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"local": LOCALS, "chunk": CHUNKS}
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        parts = reduce_parts(call)
        if parts is None:
            return f"expects reduce(f, z) [<< map(g)] << x, got {call}"
        f, z, g, x = parts
        if not (isinstance(z, Literal) and atomic_ok(f, z)):
            return f"{f} with {z} has no atomic combine (add, mult, max_, min_ on Float or Int)"
        local, chunk = (int(params.get(k) or getattr(self, k) or 1) for k in ("local", "chunk"))
        if local & (local - 1):
            return f"local {local} is not a power of two"
        n = cast(ArrayType, type_of(x)).size
        if not (isinstance(n, Cst) and n.value % (local * chunk) == 0):
            return f"local {local} x chunk {chunk} does not divide the length {n}"

        elem = Param(cast(ArrayType, type_of(FunCall(Split(Cst(local * chunk)), (x,)))).elem, "chunk")
        body = Lambda((elem,), tree(elem, (f, z, g), local))
        groups = FunCall(MapWrg(body, dim=0), (FunCall(Split(Cst(local * chunk)), (x,)),))
        return FunCall(ReduceAtomic(f, label=call.f.label, loc=call.f.loc), (Literal(z.value, z.type), groups),
                       loc=call.loc)


def tree(c: Any, op: tuple[FunDecl, Literal, Any], local: int, *, store: bool = False) -> Any:
    """The reduction of `c` ([E]local*C) by a work-group of `local` work-items: each folds a strided
    column (`op` = (f, z, g): f(acc, g(e)), g None for the identity), then log2(local) halvings in
    local memory; the group's scalar, or with `store` the [S]1 array written to global memory by
    local work-item 0."""
    f, z, g = op

    def fold(acc: Any, v: Any) -> Any:
        return FunCall(f, (acc, v if g is None else FunCall(g, (v,))))

    def zero() -> Literal:
        return Literal(z.value, z.type)

    out = p.to_local(p.map_lcl(lambda col: p.reduce_seq(fold, zero()) << col, dim=0)) \
        << p.transpose << p.split(local) << c
    for _ in range(local.bit_length() - 1):  # unrolled: iterate cannot hold a map_lcl in a kernel
        out = p.to_local(p.map_lcl(lambda pr: p.reduce_seq(f, zero()) << pr, dim=0)) << p.split(2) << out
    if store:
        return p.to_global(p.map_lcl(copy, dim=0)) << out
    return p.reduce_seq(f, zero()) << out


@node
class GpuRows(RewritePoint):
    """`gpu_rows(map(row => reduce(f, z) << map(g) << x(row)))`: a work-group per row (gemv), its
    `local` work-items reduce the row with `tree` and local work-item 0 writes the result."""

    f: FunDecl
    local: Any = None
    kind: ClassVar[str] = "gpu_rows"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        return {} if self.local is not None else {"local": LOCALS}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        found = row_parts(call)
        if isinstance(found, str):
            return found
        row, rows, (f, z, g, x), n = found
        local = int(params.get("local") or self.local or 1)
        if local & (local - 1) or n % local:
            return f"local {local} is not a power of two dividing the row length {n}"
        body = Lambda((row,), tree(x, (f, z, g), local, store=True))
        return FunCall(Join(), (FunCall(MapWrg(body, dim=0), (rows,)),), loc=call.loc)


def row_parts(call: Any) -> tuple[Param, Any, tuple[Any, Any, Any, Any], int] | str:
    """`(row, rows, (f, z, g, x), row length)` of `map(row => reduce(f, z) [<< map(g)] << x) << rows`
    with `f` a monoid with constant neutral z and a constant row length, or why not."""
    m = match_shape(MAP, call)
    if m is None or not (isinstance(m["f"], Lambda) and len(m["f"].params) == 1):
        return f"expects map(row => reduce(f, z) << ..) << rows, got {call}"
    parts = reduce_parts(m["f"].body)
    if parts is None or not (isinstance(parts[1], Literal) and is_monoid(parts[0], parts[1])):
        return "the rows are not reduced by an associative operator with a constant neutral element"
    n = getattr(type_of(parts[3]), "size", None)
    if not isinstance(n, Cst):
        return f"the row length {n} is not a constant"
    return call.f.f.params[0], call.args[0], parts, n.value


def reduce_point(expr: Any) -> Any:
    """`expr` with a `gpu_reduce` point (label `auto_gr0`) around its body when the body is a
    full reduction `reduce(f, z) [<< map(g)] << x` with an atomic combine and constant length, a
    `gpu_rows` point when it is a map of such reductions over rows (gemv), else `expr`."""
    if not isinstance(expr, Lambda):
        return expr
    if not isinstance(row_parts(expr.body), str):  # gemv: a work-group per row
        return _wrapped(expr, GpuRows, PREFIX + "gr0")
    parts = reduce_parts(expr.body)
    if parts is None or not (isinstance(parts[1], Literal) and atomic_ok(parts[0], parts[1])):
        return expr
    if not isinstance(cast(ArrayType, type_of(parts[3])).size, Cst):
        return expr
    return _wrapped(expr, GpuReduce, PREFIX + "gr0")


def _wrapped(expr: Lambda, cls: type, label: str) -> Lambda:
    """`expr` with its body wrapped in a point of class `cls` over the program's parameters."""
    ps = tuple(Param(q.ptype, q.name) for q in expr.params)
    body = substitute(expr.body, {q.id: r for q, r in zip(expr.params, ps)})
    point = cls(Lambda(ps, body), label=label, loc=expr.body.loc)
    return Lambda(expr.params, FunCall(point, expr.params), label=expr.label, loc=expr.loc)


gpu_reduce = constructor(GpuReduce, "gpu_reduce")
gpu_rows = constructor(GpuRows, "gpu_rows")

__all__ = ["GpuReduce", "GpuRows", "gpu_reduce", "gpu_rows", "reduce_point", "row_parts", "tree", "LOCALS",
           "CHUNKS"]
