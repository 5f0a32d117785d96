"""Column reductions: the `col_reduce` rewrite point (the Panamera paper's y-reduce, issue 27 item 4).

A reduction of every column of a row-major array, `map(xs => reduce(f, z) [<< map(g)] << xs) <<
transpose << X` (X `[[T]N]M`, col_sums: `x.sum(0)`), written as a map over the transposed array
gives each work-item one column: it reads with a stride of a whole row per step, one scalar of
each cache line. `col_reduce` turns it around: each work-item owns a vector of W contiguous
columns and walks down the rows, accumulating W lanes at once (one aligned vector load per row):

    width W, parts 1:  as_scalar << map(cs => reduce_seq((acc, e) => vectorise(f, W)(acc,
                           vectorise(g, W)(e)), <z>W) << cs) << transpose << map(as_vector(W)) << X

When the N/W column vectors are too few to fill the device, the reduced dimension is split as
well (`parts` P, dividing M): each of the P x N/W work-items reduces M/P rows of its columns into
a partial `[[T]N]P`, and the partials are combined (`combine`): "kernel", a second pass
`map(reduce(f, z)) << transpose << partials` (its own kernel). "atomic" (each partial combined
into the result with an OpenCL atomic as the first pass computes it) is written as
`map(reduce_atomic(f, z)) << transpose << partials`, which the code generator refuses today
(`reduce_atomic` must consume the map computing its elements, lane by lane: a vector's lanes
would need one atomic each), so the space offers "kernel" only.

Structural choices: `width` (vector lanes; 1 for an operator other than add, whose lanes would
need a vector form of `f`), `parts` (1 first unless N/W is below `FILL` work-items), `combine`.
Measured (col_sums 8192x768, Zen 3 2 vCPU PoCL 3.0, loaded machine, medians of 5 interleaved):
the default `map(reduce)` of one strided column per work-item 190 ms; width 16 parts 1 3.2 ms,
width 16 parts 2 3.7, width 8 parts 16 2.9, width 8 parts 1 21.6; numpy `x.sum(0)` 1.9 ms.
Placed by `rewrites.auto` (`place`) over constant sizes, for `lift.compile` by default and for
the tuner (`space`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from lift.arith import Cst, evaluate
from lift.ir.nodes import (
    AsScalar,
    AsVector,
    FunCall,
    FunDecl,
    Lambda,
    Literal,
    Map,
    Param,
    Reduce,
    ReduceAtomic,
    ReduceSeq,
    Split,
    Transpose,
    UserFun,
    Vectorise,
    node,
)
from lift.rules.reduce import builtin, is_monoid
from lift.rules.terms import call as call_fun
from lift.rules.terms import eta, lam, refresh
from lift.rules.vector import VECTOR_SCALARS, WIDTHS
from lift.typecheck import type_of
from lift.types import ArrayType, VectorType

from .chunks import atomic_ok, reduce_parts
from .point import Nested, RewritePoint, constructor

COL_WIDTHS = (16, 8, 4, 1)  # the first that divides N: a cache line of floats per work-item and row
PARTS = (1, 2, 4, 8, 16, 32, 64)
COMBINES = ("kernel", "atomic")  # "atomic": refused by the code generator today (the module)
FILL = 64  # fewer column vectors than this leave a device idle: the reduced dimension is split too


def col_parts(call: Any) -> tuple[FunDecl, Any, FunDecl | None, Any] | str:
    """`(f, z, g, X)` for `map(xs => reduce(f, z) [<< map(g)] << xs) << transpose << X` with X an
    array of rows of scalars and `g` (if any) a scalar function of one element; else why not."""
    if not (isinstance(call, FunCall) and type(call.f) is Map and len(call.args) == 1):
        return "expects map(reduce) << transpose << X"
    xt = call.args[0]
    if not (isinstance(xt, FunCall) and isinstance(xt.f, Transpose) and len(xt.args) == 1):
        return "expects the columns of an array: map(..) << transpose << X"
    x = xt.args[0]
    t = type_of(x)
    if not (isinstance(t, ArrayType) and isinstance(t.elem, ArrayType) and t.elem.elem in VECTOR_SCALARS):
        return f"expects X an array of rows of scalars, got {t}"
    fm = eta(call.f.f)
    if not (isinstance(fm, Lambda) and len(fm.params) == 1):
        return "expects map(xs => reduce(f, z) << xs)"
    parts = reduce_parts(fm.body)
    if parts is None or not (isinstance(parts[3], Param) and parts[3].id == fm.params[0].id):
        return "expects the column reduced whole: xs => reduce(f, z) [<< map(g)] << xs"
    f, z, g, _ = parts
    if not is_monoid(f, z):
        return f"{f} is not a known associative operator with neutral {z}"
    if g is not None:
        g = eta(g)
        if not (isinstance(g, UserFun) and len(g.in_types) == 1):
            return f"the element function must be a scalar user function, got {g}"
    return f, z, g, x


@node
class ColReduce(RewritePoint):
    """`col_reduce(map(xs => reduce(f, z) << map(g) << xs) << transpose << X)`: vectors of `width`
    columns per work-item, the rows split in `parts`, partials combined by `combine` (the module)."""

    f: FunDecl
    width: Any = None
    parts: Any = None
    combine: Any = None
    kind: ClassVar[str] = "col_reduce"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"width": COL_WIDTHS, "parts": PARTS, "combine": COMBINES}
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        found = col_parts(call)
        if isinstance(found, str):
            return found
        f, z, g, x = found
        w, p = (int(params.get(k) or getattr(self, k) or 1) for k in ("width", "parts"))
        combine = params.get("combine") or self.combine or "kernel"
        if combine not in COMBINES:
            return f"combine must be one of {', '.join(COMBINES)}, got {combine!r}"
        xt = type_of(x)
        m, n = xt.size, xt.elem.size  # type: ignore[union-attr]
        if w > 1 and (w not in WIDTHS or builtin(f) != "add"):
            return f"width {w} needs the reduction to be add (lane-wise), got {f}"
        for k, size, what in ((w, n, "width"), (p, m, "parts")):
            if k > 1 and not _divides(k, size):
                return f"{what} {k} does not divide {size}"
        if p > 1 and combine == "atomic" and not atomic_ok(f, z):
            return f"{f} on {type_of(z)} has no atomic combine (add, mult, max_, min_ on Float or Int)"
        label, loc = call.f.label, call.f.loc

        def columns(rows: Any) -> Any:  # [[T]N]R -> [T]N: the column sums of `rows`
            elem = xt.elem.elem  # type: ignore[union-attr]
            if w == 1:
                step = lam([type_of(z), elem], lambda acc, e: FunCall(f, (acc, _apply(g, e))), ["acc", "e"])
                cs = Param(ArrayType(elem, type_of(rows).size), "cs")  # type: ignore[union-attr]
                col = Lambda((cs,), FunCall(ReduceSeq(step), (refresh(z), cs)))
                return FunCall(Map(col, label=label, loc=loc), (FunCall(Transpose(), (rows,)),))
            vt = VectorType(elem, w)
            vf = Vectorise(eta(f), w)
            step = lam([vt, vt], lambda acc, e: FunCall(vf, (acc, FunCall(Vectorise(g, w), (e,)) if g else e)),
                       ["acc", "e"])
            cs = Param(ArrayType(vt, type_of(rows).size), "cs")  # type: ignore[union-attr]
            col = Lambda((cs,), FunCall(ReduceSeq(step), (Literal(z.value, vt), cs)))
            vec_rows = FunCall(Map(AsVector(w)), (rows,))
            sums = FunCall(Map(col, label=label, loc=loc), (FunCall(Transpose(), (vec_rows,)),))
            return FunCall(AsScalar(), (sums,))

        if p == 1:
            return columns(x)
        part = Param(ArrayType(xt.elem, Cst(_value(m) // p) if _value(m) else m), "part")  # type: ignore[union-attr]
        partials = FunCall(Map(Lambda((part,), columns(part))), (FunCall(Split(part.ptype.size), (x,)),))
        ps = Param(ArrayType(type_of(z), Cst(p)), "ps")
        final = ReduceAtomic if combine == "atomic" else Reduce
        combine_col = Lambda((ps,), FunCall(final(f), (refresh(z), ps)))
        return FunCall(Map(combine_col, loc=loc), (FunCall(Transpose(), (partials,)),), loc=call.loc)


def _apply(g: FunDecl | None, e: Any) -> Any:
    return e if g is None else call_fun(g, [e])


def _value(size: Any) -> int | None:
    try:
        return int(evaluate(size, {}))
    except Exception:  # noqa: BLE001 - symbolic
        return None


def _divides(k: int, size: Any) -> bool:
    v = _value(size)
    return v is not None and v % k == 0


def space(point: ColReduce) -> dict[str, tuple[Any, ...]]:
    """The structural choices of an automatic `col_reduce` point (its sizes constant): the widths
    that divide N (add only), the parts that divide M (1 first unless fewer than `FILL` column
    vectors: then the fewest parts that make `FILL` work-items), the combines that apply."""
    body = point.f.body if isinstance(point.f, Lambda) else None  # type: ignore[attr-defined]
    found = col_parts(body)
    if isinstance(found, str):
        return {}
    f, z, _, x = found
    m, n = _value(type_of(x).size), _value(type_of(x).elem.size)  # type: ignore[union-attr]
    if m is None or n is None:
        return {}
    widths = tuple(w for w in COL_WIDTHS if n % w == 0 and (w == 1 or builtin(f) == "add")) or (1,)
    parts = [q for q in PARTS if m % q == 0 and m // q >= 8]
    vectors = n // widths[0]
    if vectors < FILL:
        need = next((q for q in parts if q * vectors >= FILL), parts[-1])
        parts = [need, *(q for q in parts if q != need)]
    return {"width": widths, "parts": tuple(parts) or (1,), "combine": ("kernel",)}


def place(call: Any, label: Callable[[], str], long: Callable[[Any], bool]) -> Any:
    """`col_reduce[label()](..) << X` around `call` when it is a column reduction over constant
    sizes whose columns are `long` (the `_Placer`'s test, a function of an array), else None."""
    found = col_parts(call)
    if isinstance(found, str) or not long(found[3]):  # X's length: a column's
        return None
    x = found[3]
    if _value(type_of(x).size) is None or _value(type_of(x).elem.size) is None:  # type: ignore[union-attr]
        return None
    q = Param(type_of(x), "xs")
    body = FunCall(call.f, (FunCall(Transpose(), (q,)),), loc=call.loc)
    return FunCall(ColReduce(Lambda((q,), body), label=label(), loc=call.loc), (x,), loc=call.loc)


col_reduce = constructor(ColReduce, "col_reduce")

__all__ = ["ColReduce", "col_reduce", "col_parts", "space", "place", "COL_WIDTHS", "PARTS", "FILL"]
