"""Column reductions weighted by a function of each row: the `col_fold` rewrite point (one pass over X).

A column reduction whose per-row operand is itself computed from the rows of the same array,

    let(t => map(col => reduce(f, z) << map(g) << zip(col, t)) << transpose << X) << (map(h) << X)

(ATAX's `A^T (A x)`: `h` the dot product of a row with x, `g` the product; least-squares gradients
`A^T (A x - b)` and power-iteration steps have the same shape), reads X twice when it is compiled
as written: once by rows for `t`, once by columns for the reductions (two kernels, `col_reduce`'s
vectors down the rows for the second). `col_fold` reads it once: each of `parts` work-items walks
its share of the rows, computes `h(row)` and folds the row into an accumulator of every column at
once, `width` lanes per vector:

    parts P, width W:  combine << map(part => as_scalar << reduce_seq((acc, row) =>
                           let(ti => map_seq(vectorise(f, W)(acc_j, vectorise(g, W)(row_j, <ti>W)))
                               << zip(acc, as_vector(W) << row)) << h(row), <z>[N/W]) << part) << split(M/P) << X

`combine` adds the P partial rows lane-wise in one sequential reduction, `reduce_seq((acc, prow) =>
map_seq(vectorise(f, W)) << zip(acc, prow))`: a kernel of one work-item, which on a CPU the last
work-item of the fold runs at its end (`lift.codegen.tails`), so the whole point is one launch.

The same point takes the spelling with `map(h) << X` written inside the columns' function
(`zip(col, map(h) << X)`): it is the same value for every column, so the placer binds it once
(`let`) first, and where the point is skipped the program still computes it once.

Each work-item's accumulator holds a whole row (N scalars: 8 KiB at N = 2048, in private memory up
to `lift.allocation.PRIVATE_ACC_SCALARS`, in a global slice of its own beyond), so the point suits
a CPU, whose few cores each keep theirs in cache; `lift.compile` applies it by default on a CPU
only, with `FOLD_ITEMS_PER_UNIT` parts per compute unit, and not where the rows split in no more
than one part (`lift.decide.default_blocks`, `default_parts`). Measured (ATAX 2048^2, Xeon
family 6 model 207, 2 vCPUs, PoCL 3.0-rc2 icelake-client, kernel medians of 11 interleaved rounds):
written as two passes 760-816 us, the fold with 8 parts of 256 rows 491-556 us; numpy's `A.T @ (A @ x)`
650-770 us by call, the fold's call 620 us (its combine a kernel of its own: 610-690 us). Folding k rows
a step (each accumulator read and written once per k rows) was slower: 8 parts, k = 1, 2, 4, 8: 484,
516, 535, 569 us (15 interleaved rounds); so one row a step.

The nested points of `h` (its reduction's `reduce_chunks`, a vectorised dot product) and of the
columns (`col_reduce`, for when the point is skipped) are placed inside the point's body and
rewritten after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from lift.arith import Cst
from lift.ir.build import elaborate
from lift.ir.nodes import (
    AsScalar,
    AsVector,
    Expr,
    FunCall,
    FunDecl,
    Get,
    Join,
    Lambda,
    Let,
    Literal,
    Map,
    MapSeq,
    Param,
    ReduceSeq,
    Split,
    ToGlobal,
    UserFun,
    Vectorise,
    Zip,
    node,
)
from lift.rules.terms import call as beta_call
from lift.rules.terms import eta, lam
from lift.rules.vector import VECTOR_SCALARS, WIDTHS
from lift.typecheck import type_of
from lift.types import ArrayType, ScalarType, TupleType, VectorType
from lift.userfun.builtins import id as copy
from lift.userfun.facts import sums

from .auto_colreduce import ColReduce, ColumnSums, col_parts, element_value, known_value
from .chunks import safe_widths
from .point import Nested, RewritePoint, constructor
from .refusal import indivisible
from .shapes import MAP, ZIP, match_shape

FOLD_WIDTHS = (16, 8, 4, 1)  # lanes of the accumulator's vectors: the first that divides N
FOLD_PARTS = (8, 16, 4, 32, 2, 64, 128, 256, 1)  # work-items, each folding M/P rows (8 first; a compile's
# default: `default_parts`)
FOLD_ITEMS_PER_UNIT = 4  # a compile's default parts: the fewest offered that give each compute unit this many


@dataclass(frozen=True, slots=True)
class FoldParts:
    """What `fold_parts` found: the reduction `f` with neutral `z`, the element function `g`
    (`col_parts`' `(user function, argument spec)`), the array `X`, the row function `h` and what it
    maps over (`data`: X, or X zipped with per-row operands, X at `at`), the row operand
    `map(h) << data` (`value`) and the column reduction as written (`columns`)."""

    f: FunDecl
    z: Literal
    g: tuple[UserFun, tuple[int, ...]]
    x: Expr
    h: FunDecl
    data: Expr
    at: int | None
    value: Expr
    columns: Expr


def _seen(e: Any) -> Any:
    """`e` with a `col_reduce` point around it replaced by its body (the point's placer put it there
    for when `col_fold` is skipped)."""
    if isinstance(e, FunCall) and isinstance(e.f, ColReduce):
        return beta_call(e.f.f, e.args)
    return e


def fold_parts(call: Any) -> FoldParts | str:
    """The parts of a column reduction of X weighted by a row function of X: the let form
    `let(t => columns) << (map(h) << X)`, `columns` a `col_parts` reduction of X whose one row
    operand is `t`, or the inline form, `columns` with `map(h) << X` itself as the row operand;
    `h` may read per-row operands too (`map(h) << zip(X, b)`: least squares' `A x - b`). Or why not."""
    bound = call.f.f if isinstance(call, FunCall) and isinstance(call.f, Let) else None
    if isinstance(bound, Lambda) and len(bound.params) == 1 and len(call.args) == 1:
        t, value, columns = bound.params[0], call.args[0], _seen(bound.body)
        found = col_parts(columns)
        if isinstance(found, str):
            return found
        rs = found[5]
        if not (len(rs) == 1 and isinstance(rs[0], Param) and rs[0].id == t.id):
            return "expects the bound value to be the columns' one row operand"
    else:
        columns = _seen(call)
        found = col_parts(columns)
        if isinstance(found, str):
            return found
        rs = found[5]
        if len(rs) != 1:
            return "expects one row operand: map(h) << X"
        value = rs[0]
    f, z, g, x, vs, _ = found
    if vs:
        return "expects no column operands"
    if not isinstance(z, Literal):
        return f"expects a constant initial value (the accumulators start from it), got {z}"
    if g is None or not any(i <= -2 for i in g[1]):
        return "expects the element function to read the row operand"
    rows = match_shape(MAP, value)
    xt = cast(ArrayType, type_of(x))
    zipped = match_shape(ZIP, rows["x"]) if rows is not None else None
    at = None
    if zipped is not None:
        at = next((i for i, a in enumerate(zipped["xs"]) if a == x), None)  # X's row: the first copy
        if at is None or any(cast(ArrayType, type_of(a)).size != xt.size for a in zipped["xs"]):
            return "expects map(h) << zip(X, per-row operands)"
    elif rows is None or rows["x"] != x:
        return "expects the row operand to be map(h) << X over the columns' own array X"
    if type_of(value) != ArrayType(cast(ArrayType, xt.elem).elem, xt.size):
        return "expects h to give one scalar of the array's type per row"
    assert rows is not None and g is not None  # checked above
    return FoldParts(f, z, g, x, rows["f"], rows["x"], at, value, columns)


@node
class ColFold(RewritePoint):
    """`col_fold(let(t => map(col => reduce(f, z) << map(g) << zip(col, t)) << transpose << X) << (map(h)
    << X))`: the rows folded into `parts` partial column results, `width` lanes per vector, in one
    pass over X (the module)."""

    f: FunDecl
    width: Any = None
    parts: Any = None
    known: Any = None  # ((size name, value), ..): the input sizes it was placed for
    kind: ClassVar[str] = "col_fold"
    placed: ClassVar[tuple[str, ...]] = ("known",)

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"width": FOLD_WIDTHS, "parts": FOLD_PARTS}
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        """`call` as one pass over X (the module), or why not."""
        found = fold_parts(call)
        if isinstance(found, str):
            return found
        f, z, g, x = found.f, found.z, found.g, found.x
        w, p = (int(params.get(a) or getattr(self, a) or 1) for a in ("width", "parts"))
        known = dict(self.known or ())
        xt = cast(ArrayType, type_of(x))
        m, n = known_value(xt.size, known), known_value(cast(ArrayType, xt.elem).size, known)
        elem = cast(ArrayType, xt.elem).elem
        if m is None or n is None:
            return "expects constant (or known) sizes"
        if w > 1 and (w not in WIDTHS or not sums(f) or elem not in VECTOR_SCALARS):
            return f"width {w} needs the reduction to be add (lane-wise) over scalars, got {f}"
        if n % w:
            return indivisible(f"width {w} does not divide the {n} columns")
        if p < 1 or m % p:
            return indivisible(f"parts {p} does not divide the {m} rows")
        vt = elem if w == 1 else VectorType(cast(ScalarType, elem), w)
        op = f if w == 1 else Vectorise(eta(f), w)
        sums_of = ColumnSums(f, z, g, (), w, 1, elem, vt, op, call.f.label if isinstance(call, FunCall) else None,
                              call.loc)
        partials = _partials(sums_of, found, m // p, n)
        return _combined(sums_of, partials, p, call.loc)


def _partials(c: ColumnSums, fp: FoldParts, rows_p: int, n: int) -> Expr:
    """[[T]N]M -> [[T]N]P: each part's rows folded into a row of column results."""
    w, vt = c.w, c.vt
    split = FunCall(Split(Cst(rows_p)), (fp.data,))
    elem_t = cast(ArrayType, type_of(fp.data)).elem
    acc_t = ArrayType(vt, Cst(n // w))

    def step(acc: Any, e: Any) -> Any:
        ti = Param(c.elem, "ti")
        row = e if fp.at is None else FunCall(Get(fp.at), (e,))
        lanes = row if w == 1 else FunCall(AsVector(w), (row,))

        def one(pq: Any) -> Any:  # (accumulated vector, the row's vector)
            v = element_value(c, FunCall(Get(1), (pq,)), lambda i: pq, lambda j: ti)
            return FunCall(c.op, (FunCall(Get(0), (pq,)), v))

        update = FunCall(MapSeq(lam([TupleType((vt, vt))], one, ["pq"])), (FunCall(Zip(2), (acc, lanes)),))
        return FunCall(Let(Lambda((ti,), update)), (FunCall(fp.h, (e,)),))

    fold = lam([acc_t, elem_t], step, ["acc", "row" if fp.at is None else "e"])
    part = Param(cast(ArrayType, type_of(split)).elem, "part")
    acc = FunCall(ReduceSeq(fold), (Literal(c.z.value, acc_t), part))
    ident = elaborate(copy, [c.elem])
    out: Expr = FunCall(ToGlobal(MapSeq(ident if w == 1 else Vectorise(ident, w))), (acc,))
    if w > 1:
        out = FunCall(AsScalar(), (out,))
    return FunCall(Map(Lambda((part,), out), label=c.label, loc=c.loc), (split,))


def _combined(c: ColumnSums, partials: Expr, p: int, loc: Any) -> Expr:
    """[[T]N]P -> [T]N: the parts' partial rows added into one, lane-wise, by one sequential
    reduction (a kernel of one work-item, which a CPU runs at the end of the fold's kernel:
    `lift.codegen.tails`); one part: its row."""
    if p == 1:
        return FunCall(Join(), (partials,), loc=loc)
    w, vt = c.w, c.vt
    lanes = partials if w == 1 else FunCall(Map(AsVector(w)), (partials,))
    acc_t = cast(ArrayType, type_of(lanes)).elem

    def add(acc: Any, row: Any) -> Any:
        pair = lam([TupleType((vt, vt))], lambda pq: FunCall(c.op, (FunCall(Get(0), (pq,)), FunCall(Get(1), (pq,)))),
                   ["pq"])
        return FunCall(MapSeq(pair), (FunCall(Zip(2), (acc, row)),))

    total = FunCall(ReduceSeq(lam([acc_t, acc_t], add, ["acc", "row"])), (Literal(c.z.value, acc_t), lanes), loc=loc)
    return total if w == 1 else FunCall(AsScalar(), (total,), loc=loc)


def space(point: ColFold, sizes: Mapping[str, int] | None = None) -> dict[str, tuple[Any, ...]]:
    """The structural choices of an automatic `col_fold` point (its sizes known): the widths that
    divide N (add only, beyond 1), the parts that divide M (`FOLD_PARTS`' order)."""
    body = point.f.body if isinstance(point.f, Lambda) else None
    found = fold_parts(body)
    if isinstance(found, str):
        return {}
    f, x = found.f, found.x
    known = {**dict(point.known or ()), **dict(sizes or {})}
    xt = cast(ArrayType, type_of(x))
    m, n = known_value(xt.size, known), known_value(cast(ArrayType, xt.elem).size, known)
    if m is None or n is None:
        return {}
    safe = safe_widths([found.g[0]])  # 16 lanes only where PoCL 3.0 runs the element function that wide
    widths = tuple(w for w in FOLD_WIDTHS if n % w == 0 and (w == 1 or (sums(f) and w in safe))) or (1,)
    parts = tuple(q for q in FOLD_PARTS if m % q == 0) or (1,)
    return {"width": widths, "parts": parts}


def default_parts(offered: tuple[int, ...], units: int) -> int | None:
    """A compile's default number of parts among `offered` on a device of `units` compute units:
    the fewest that give each unit `FOLD_ITEMS_PER_UNIT` work-items (8 on 2 vCPUs, the module's
    figures), else the most offered; None when only 1 is offered (one work-item would fold every
    row, where the two passes as written run in parallel)."""
    many = sorted(q for q in offered if q > 1)
    if not many:
        return None
    return next((q for q in many if q >= FOLD_ITEMS_PER_UNIT * max(units, 1)), many[-1])


col_fold = constructor(ColFold, "col_fold")

__all__ = ["ColFold", "FoldParts", "col_fold", "default_parts", "fold_parts", "space", "FOLD_WIDTHS", "FOLD_PARTS"]
