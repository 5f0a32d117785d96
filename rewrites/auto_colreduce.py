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

With `vectors` K, a work-item owns K vectors (K x W contiguous columns, K accumulators updated by
a `map_seq`), so each row is read K W floats wide (512 bytes for 8 float16): whole cache lines
in a stream the prefetcher follows, where one vector per work-item strides 64 bytes per row.

Structural choices: `width` (vector lanes; 1 for an operator other than add, whose lanes would
need a vector form of `f`), `vectors` (the most that divide N first), `parts` (1 first unless
N/(W K) is below `FILL` work-items), `combine`. Measured (col_sums 8192x768, Zen 3 2 vCPU PoCL
3.0, loaded machine, medians of 5 interleaved): the `map(reduce)` of one strided column per
work-item 190 ms; (width, parts, vectors) (16, 2, 8) 1.36 ms, (16, 8, 8) 1.48, (16, 1, 8) 1.52,
(16, 1, 4) 1.90, (16, 1, 1) 3.15, (8, 1, 1) 13.9; numpy `x.sum(0)` 1.94 ms. On a Xeon (icelake-client,
2 vCPUs, PoCL 3.0, quiet) more parts won by more: 8192x768 (16, 4, 8) 0.78 ms, (16, 64, 8) 0.55, numpy
1.20; hence `FILL`, the work-items the parts make up to.
Placed by `rewrites.auto` (`place`) over constant sizes, for `lift.compile` by default and for
the tuner (`space`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from lift.arith import Cst, evaluate
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
    Literal,
    Map,
    MapSeq,
    Param,
    Reduce,
    ReduceAtomic,
    ReduceSeq,
    Split,
    ToGlobal,
    Transpose,
    UserFun,
    Vectorise,
    Zip,
    node,
)
from lift.rules.reduce import is_monoid
from lift.rules.terms import eta, lam, mentions, refresh
from lift.rules.vector import VECTOR_SCALARS, WIDTHS
from lift.typecheck import type_of
from lift.types import ArrayType, ScalarType, TupleType, Type, VectorType
from lift.userfun.builtins import id as copy
from lift.userfun.facts import sums

from .chunks import atomic_ok, reduce_parts
from .lanes import broadcast
from .point import Nested, RewritePoint, constructor
from .shapes import GET, MAP, TRANSPOSE, ZIP, match_shape

COL_WIDTHS = (16, 8, 4, 1)  # the first that divides N: a cache line of floats per work-item and row
PARTS = (1, 2, 4, 8, 16, 32, 64)
COMBINES = ("kernel", "atomic")  # "atomic": refused by the code generator today (the module)
VECTORS = (1, 2, 4, 8)  # vectors (of `width` columns) per work-item: one accumulator each
FILL = 512  # fewer work-items than this (column vectors x parts) leave a CPU's cores underused: the
# reduced dimension is split too (Xeon icelake-client, 2 vCPUs, PoCL 3.0, kernel medians: 2048x2048
# parts 4 (64 work-items) 528 us, 32 (512) 389; 512x8192 parts 1 (64) 544, 8 (512) 416; 8192x768
# parts 4 (24) 780, 64 (384) 554)


Parts = tuple[Any, ...]  # (f, z, g, X, vs, rs): see col_parts


def col_parts(call: Any) -> Parts | str:
    """`(f, z, g, X, vs, rs)` for a reduction of every column of X (`[[T]N]M`, rows of scalars):
    `map(xs => reduce(f, z) [<< map(g)] << xs) << transpose << X`, or with per-column operands
    `vs` (arrays `[T]N`: add_mul_sum0's broadcast rows) `map(t => reduce(f, z) << map(e => uf(..))
    << get(0) << t) << zip(transpose << X, v1, ..)`, or with per-row operands `rs` (arrays `[T]M`
    the same for every column, zipped with the column: `X^T y` is `map(xs => reduce(add, 0) <<
    map(mult) << zip(xs, y)) << transpose << X`). `g` is None, or `(uf, spec)`: a scalar user
    function and, per argument, -1 for the element, i >= 1 for `get(i) << t` (operand `vs[i-1]`),
    -2 - j for the row's element of `rs[j]`."""
    m = match_shape(MAP, call)
    if m is None:
        return "expects map(reduce) << transpose << X"
    vs: tuple[Expr, ...]
    arg, vs = m["x"], ()
    if (zipped := match_shape(ZIP, arg)) is not None and len(zipped["xs"]) > 1:
        arg, vs = zipped["xs"][0], tuple(zipped["xs"][1:])
    columns = match_shape(TRANSPOSE, arg)
    if columns is None:
        return "expects the columns of an array: map(..) << transpose << X"
    x = columns["x"]
    t = type_of(x)
    if not (isinstance(t, ArrayType) and isinstance(t.elem, ArrayType) and t.elem.elem in VECTOR_SCALARS):
        return f"expects X an array of rows of scalars, got {t}"
    if any(type_of(v) != ArrayType(t.elem.elem, t.elem.size) for v in vs):
        return "expects every zipped operand to hold one scalar per column"
    fm = eta(m["f"])
    if not (isinstance(fm, Lambda) and len(fm.params) == 1):
        return "expects map(xs => reduce(f, z) << xs)"
    q = fm.params[0]
    parts = reduce_parts(fm.body)
    if parts is None:
        return "expects the column reduced whole: xs => reduce(f, z) [<< map(g)] << xs"

    def whole(col: Any) -> bool:
        return isinstance(col, Param) and col.id == q.id if not vs else \
            isinstance(col, FunCall) and col.f == Get(0) and col.args == (q,)

    f, z, g, col = parts
    if not is_monoid(f, z):
        return f"{f} is not a known associative operator with neutral {z}"
    if match_shape(ZIP, col) is not None and g is not None:
        return _row_operands(f, z, eta(g), col, whole, q, x, vs)
    if not whole(col):
        return "expects the column reduced whole: xs => reduce(f, z) [<< map(g)] << xs"
    if g is None:
        return f, z, None, x, vs, ()
    g = eta(g)
    if isinstance(g, UserFun) and len(g.in_types) == 1:
        return f, z, (g, (-1,)), x, vs, ()
    if not (isinstance(g, Lambda) and len(g.params) == 1 and isinstance(g.body, FunCall)
            and isinstance(g.body.f, UserFun)):
        return f"the element function must be a scalar user function, got {g}"
    spec = []
    for a in g.body.args:
        if isinstance(a, Param) and a.id == g.params[0].id:
            spec.append(-1)
        elif vs and (got := match_shape(GET, a)) is not None and got["x"] == q and got["i"] >= 1:
            spec.append(got["i"])
        else:
            return f"the element function's arguments must be the element or a column's operand, got {a}"
    return f, z, (g.body.f, tuple(spec)), x, vs, ()


def _row_operands(f: Any, z: Any, g: Any, col: Any, whole: Callable[[Any], bool], q: Param, x: Any,
                  vs: tuple[Any, ...]) -> Parts | str:
    """`col_parts` of a column zipped with per-row operands: `reduce(f, z) << map(g) << zip(..)`,
    one of the zipped arrays the column, the others arrays `[T]M` that do not depend on it, `g` a
    scalar user function of the zip's components (`uf`, or `e => uf(get(i) << e, ..)`)."""
    items = col.args
    at = [k for k, a in enumerate(items) if whole(a)]
    if len(at) != 1:
        return "expects the column zipped once with per-row operands"
    t = _array(type_of(x))
    rows = tuple(a for k, a in enumerate(items) if k != at[0])
    if any(type_of(r) != ArrayType(_array(t.elem).elem, t.size) or mentions(r, [q]) for r in rows):
        return "expects every operand zipped with the column to hold one scalar per row, the same for every column"
    which = {at[0]: -1, **{k: -2 - j for j, k in enumerate(k for k in range(len(items)) if k != at[0])}}
    if isinstance(g, UserFun) and len(g.in_types) == len(items):
        return f, z, (g, tuple(which[k] for k in range(len(items)))), x, vs, rows
    if not (isinstance(g, Lambda) and len(g.params) == 1 and isinstance(g.body, FunCall)
            and isinstance(g.body.f, UserFun)):
        return f"the element function must be a scalar user function, got {g}"
    spec = []
    for a in g.body.args:
        got = match_shape(GET, a)
        if got is None or got["x"] != g.params[0] or not got["i"] < len(items):
            return f"the element function's arguments must be the zip's components, got {a}"
        spec.append(which[got["i"]])
    return f, z, (g.body.f, tuple(spec)), x, vs, rows


@node
class ColReduce(RewritePoint):
    """`col_reduce(map(xs => reduce(f, z) << map(g) << xs) << transpose << X)`: `vectors` vectors
    of `width` columns per work-item, the rows split in `parts`, partials combined by `combine`
    (the module)."""

    f: FunDecl
    width: Any = None
    parts: Any = None
    combine: Any = None
    vectors: Any = None
    known: Any = None  # ((size name, value), ..): the input sizes it was placed for (auto_points)
    kind: ClassVar[str] = "col_reduce"
    placed: ClassVar[tuple[str, ...]] = ("known",)

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"width": COL_WIDTHS, "parts": PARTS, "combine": COMBINES, "vectors": VECTORS}
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        """`call` as column reductions: `vectors` vectors of `width` columns per work-item, the
        rows split in `parts` combined by `combine` (the module), or why not."""
        found = col_parts(call)
        if isinstance(found, str):
            return found
        f, z, g, x, vs, rs = found
        w, p, k = (int(params.get(a) or getattr(self, a) or 1) for a in ("width", "parts", "vectors"))
        combine = params.get("combine") or self.combine or "kernel"
        known = dict(self.known or ())
        why = _refused(f, z, _array(type_of(x)), (w, p, k), combine, known)
        if why is not None:
            return why
        elem = _array(_array(type_of(x)).elem).elem
        vt = elem if w == 1 else VectorType(_scalar(elem), w)
        op = f if w == 1 else Vectorise(eta(f), w)
        sums_of = ColumnSums(f, z, g, vs, w, k, elem, vt, op, call.f.label, call.f.loc)
        if p == 1:
            return _reductions(sums_of, x, rs)
        return _in_parts(sums_of, call, (x, rs), Cst(_rows(_array(type_of(x)).size, known) // p), p, combine)


@dataclass(frozen=True)
class ColumnSums:
    """What the column reductions of one `col_reduce` are built from: the reduction `f` with
    neutral `z`, the element function `g` (`(user function, argument spec)` as `col_parts` gives
    it; None: the element itself), the column operands `vs`, `w` lanes per vector and `k` vectors
    per work-item, the scalar `elem`, its vector `vt` and the (vectorised) reduction `op`, and the
    label and location of the map the point wraps."""

    f: Any
    z: Any
    g: tuple[Any, tuple[int, ...]] | None
    vs: tuple[Any, ...]
    w: int
    k: int
    elem: Any
    vt: Any
    op: Any
    label: Any
    loc: Any


def _array(t: Type) -> ArrayType:
    """`t` as an array type (what `col_parts` accepted is an array of rows)."""
    if not isinstance(t, ArrayType):
        raise AssertionError(f"col_reduce: expected an array, got {t}")
    return t


def _scalar(t: Type) -> ScalarType:
    """`t` as a scalar type (the columns of a point with a width above 1 hold scalars)."""
    if not isinstance(t, ScalarType):
        raise AssertionError(f"col_reduce: expected scalars, got {t}")
    return t


def _rows(size: Any, known: Mapping[str, int]) -> int:
    """The number of rows `size`, known (`_refused` checked that the parts divide it)."""
    v = known_value(size, known)
    if v is None:
        raise AssertionError(f"col_reduce: the rows {size} are not known")
    return v


def _refused(f: Any, z: Any, xt: ArrayType, wpk: tuple[int, int, int], combine: str,
             known: Mapping[str, int]) -> str | None:
    """Why the width, parts and vectors `wpk` and `combine` do not apply to columns of `xt`
    reduced by `f` (neutral `z`), or None."""
    w, p, k = wpk
    if combine not in COMBINES:
        return f"combine must be one of {', '.join(COMBINES)}, got {combine!r}"
    m, n = xt.size, _array(xt.elem).size
    if w > 1 and (w not in WIDTHS or not sums(f)):
        return f"width {w} needs the reduction to be add (lane-wise), got {f}"
    if (w > 1 or k > 1) and not isinstance(z, Literal):
        return f"width {w} and vectors {k} need a constant initial value (its vector or array), got {z}"
    for d, size, what in ((w, n, "width"), (p, m, "parts"), (w * k, n, "width x vectors")):
        if d > 1 and not _divides(d, size, known):
            return f"{what} {d} does not divide {size}"
    if p > 1 and combine == "atomic" and not atomic_ok(f, z):
        return f"{f} on {type_of(z)} has no atomic combine (add, mult, max_, min_ on Float or Int)"
    return None


def element_value(c: ColumnSums, e: Any, operand: Callable[[int], Any], row: Callable[[int], Any]) -> Any:
    """`g` of the element `e`: column operand i (`operand(i)`), row operand j (`row(j)`,
    broadcast into the lanes)."""
    if c.g is None:
        return e
    uf, spec = c.g

    def arg(i: int) -> Any:
        if i == -1:
            return e
        if i >= 1:
            return operand(i)
        r = row(-2 - i)
        return r if c.w == 1 else FunCall(broadcast(c.elem, c.w), (r,))

    return FunCall(uf if c.w == 1 else Vectorise(uf, c.w), tuple(arg(i) for i in spec))


def _with_rows(column: Any, rops: tuple[Any, ...]) -> Any:
    """The rows' elements zipped with their operands."""
    return FunCall(Zip(1 + len(rops)), (column, *rops)) if rops else column


def _reductions(c: ColumnSums, rows: Any, rops: tuple[Any, ...]) -> Any:
    """[[T]N]R -> [T]N: the column reductions of `rows` (`k` > 1: `_grouped`, else `_columns`)."""
    return _grouped(c, rows, rops) if c.k > 1 else _columns(c, rows, rops)


def _columns(c: ColumnSums, rows: Any, rops: tuple[Any, ...]) -> Any:
    """[[T]N]R -> [T]N: the column reductions of `rows`, one vector of columns per work-item."""
    w = c.w
    cols_ = FunCall(Transpose(), (rows if w == 1 else FunCall(Map(AsVector(w)), (rows,)),))
    ops = tuple(v if w == 1 else FunCall(AsVector(w), (v,)) for v in c.vs)
    data = FunCall(Zip(1 + len(ops)), (cols_, *ops)) if ops else cols_
    cs = Param(_array(type_of(data)).elem, "cs")
    reduced = _with_rows(FunCall(Get(0), (cs,)) if ops else cs, rops)

    def step(acc: Any, e: Any) -> Any:
        x_ = FunCall(Get(0), (e,)) if rops else e
        v = element_value(c, x_, lambda i: FunCall(Get(i), (cs,)), lambda j: FunCall(Get(1 + j), (e,)))
        return FunCall(c.op, (acc, v))

    init = refresh(c.z) if w == 1 else Literal(c.z.value, c.vt)
    fold = lam([c.vt, _array(type_of(reduced)).elem], step, ["acc", "e"])
    col = Lambda((cs,), FunCall(ReduceSeq(fold), (init, reduced)))
    sums_ = FunCall(Map(col, label=c.label, loc=c.loc), (data,))
    return sums_ if w == 1 else FunCall(AsScalar(), (sums_,))


def _grouped(c: ColumnSums, rows: Any, rops: tuple[Any, ...]) -> Any:
    """`_columns` with `k` vectors of `w` columns per work-item (k accumulators)."""
    w, k, vt = c.w, c.k, c.vt
    vec_rows = rows if w == 1 else FunCall(Map(AsVector(w)), (rows,))
    cols_ = FunCall(Transpose(), (FunCall(Map(Split(Cst(k))), (vec_rows,)),))
    ops = tuple(FunCall(Split(Cst(k)), (v if w == 1 else FunCall(AsVector(w), (v,)),)) for v in c.vs)
    data = FunCall(Zip(1 + len(ops)), (cols_, *ops)) if ops else cols_
    cs = Param(_array(type_of(data)).elem, "cs")
    reduced = _with_rows(FunCall(Get(0), (cs,)) if ops else cs, rops)
    grp = ArrayType(vt, Cst(k))

    def step(acc: Any, e: Any) -> Any:
        def one(pq: Any) -> Any:  # (acc, element, operands..) of one vector
            v = element_value(c, FunCall(Get(1), (pq,)), lambda i: FunCall(Get(1 + i), (pq,)),
                         lambda j: FunCall(Get(1 + j), (e,)))
            return FunCall(c.op, (FunCall(Get(0), (pq,)), v))

        group = FunCall(Get(0), (e,)) if rops else e
        lanes = FunCall(Zip(2 + len(ops)), (acc, group, *(FunCall(Get(1 + i), (cs,)) for i in range(len(ops)))))
        return FunCall(MapSeq(lam([TupleType((vt,) * (2 + len(ops)))], one, ["pq"])), (lanes,))

    fold = lam([grp, _array(type_of(reduced)).elem], step, ["acc", "e"])
    acc = FunCall(ReduceSeq(fold), (Literal(c.z.value, grp), reduced))
    ident = elaborate(copy, [c.elem])
    out = FunCall(ToGlobal(MapSeq(ident if w == 1 else Vectorise(ident, w))), (acc,))
    sums_ = FunCall(Join(), (FunCall(Map(Lambda((cs,), out), label=c.label, loc=c.loc), (data,)),))
    return sums_ if w == 1 else FunCall(AsScalar(), (sums_,))


def _in_parts(c: ColumnSums, call: Any, xs: tuple[Any, tuple[Any, ...]], rows_p: Cst, p: int,
              combine: str) -> Any:
    """The column reductions of `xs` (the rows and their row operands) in `p` parts of `rows_p`
    rows, the parts' partial results combined by a reduction (`combine` "atomic": `reduce_atomic`)."""
    x, rs = xs
    split = tuple(FunCall(Split(rows_p), (a,)) for a in (x, *rs))
    chunk = Param(_array(type_of(split[0])).elem if not rs else
                  TupleType(tuple(_array(type_of(a)).elem for a in split)), "part")
    part_rows = FunCall(Get(0), (chunk,)) if rs else chunk
    part_ops = tuple(FunCall(Get(1 + j), (chunk,)) for j in range(len(rs)))
    partials = FunCall(Map(Lambda((chunk,), _reductions(c, part_rows, part_ops))),
                       (FunCall(Zip(len(split)), split) if rs else split[0],))
    ps = Param(ArrayType(type_of(c.z), Cst(p)), "ps")
    final = ReduceAtomic if combine == "atomic" else Reduce
    combine_col = Lambda((ps,), FunCall(final(c.f), (refresh(c.z), ps)))
    return FunCall(Map(combine_col, loc=c.loc), (FunCall(Transpose(), (partials,)),), loc=call.loc)


def known_value(size: Any, known: Mapping[str, int] | None = None) -> int | None:
    """`size` evaluated with the `known` sizes, or None where it stays symbolic."""
    try:
        return int(evaluate(size, dict(known or {})))
    except Exception:  # noqa: BLE001 - symbolic
        return None


def _divides(k: int, size: Any, known: Mapping[str, int]) -> bool:
    v = known_value(size, known)
    return v is not None and v % k == 0


def space(point: ColReduce, sizes: Mapping[str, int] | None = None) -> dict[str, tuple[Any, ...]]:
    """The structural choices of an automatic `col_reduce` point (its sizes constant): the widths
    that divide N (add only), the vectors per work-item (the most that divide N first), the parts
    that divide M (1 first unless fewer than `FILL` work-items per part: then the fewest parts
    that make `FILL`), the combines that apply."""
    body = point.f.body if isinstance(point.f, Lambda) else None
    found = col_parts(body)
    if isinstance(found, str):
        return {}
    f, x = found[0], found[3]
    known = {**dict(point.known or ()), **dict(sizes or {})}
    m, n = known_value(cast(Any, type_of(x)).size, known), known_value(cast(Any, type_of(x)).elem.size, known)
    if m is None or n is None:
        return {}
    widths = tuple(w for w in COL_WIDTHS if n % w == 0 and (w == 1 or sums(f))) or (1,)
    vecs = tuple(k for k in sorted(VECTORS, reverse=True) if n % (widths[0] * k) == 0)
    parts = [q for q in PARTS if m % q == 0 and m // q >= 8] or [1]
    groups = n // (widths[0] * vecs[0])  # work-items per part
    if groups < FILL:
        need = next((q for q in parts if q * groups >= FILL), parts[-1])
        parts = [need, *(q for q in parts if q != need)]
    return {"width": widths, "vectors": vecs, "parts": tuple(parts), "combine": ("kernel",)}


def place(call: Any, label: Callable[[], str], long: Callable[[Any], bool], sizes: Mapping[str, int]) -> Any:
    """`col_reduce[label()](..) << X` around `call` when it is a column reduction over sizes that are
    constant or in `sizes`, whose columns are `long` (the `PointPlacer`'s test, of an array), else None."""
    found = col_parts(call)
    if isinstance(found, str) or not long(FunCall(Join(), (found[3],))):  # all of X: short columns too
        return None
    x, vs = found[3], found[4]
    xt = cast(Any, type_of(x))
    if known_value(xt.size, sizes) is None or known_value(xt.elem.size, sizes) is None:
        return None  # symbolic sizes, not known: the parts and widths could not be checked
    qs = tuple(Param(type_of(a), f"xs{i}") for i, a in enumerate((x, *vs)))
    cols = FunCall(Transpose(), (qs[0],))
    arg = FunCall(Zip(len(qs)), (cols, *qs[1:])) if vs else cols
    body = FunCall(call.f, (arg,), loc=call.loc)
    known = tuple(sorted((k, int(v)) for k, v in sizes.items())) or None
    return FunCall(ColReduce(Lambda(qs, body), known=known, label=label(), loc=call.loc), (x, *vs), loc=call.loc)


col_reduce = constructor(ColReduce, "col_reduce")

__all__ = ["ColReduce", "ColumnSums", "col_reduce", "col_parts", "element_value", "known_value", "space", "place",
           "COL_WIDTHS", "PARTS", "FILL"]
