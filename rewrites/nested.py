"""Reduction-nest rewrite points: `interchange_reduce_nd` (thesis 6.2.5.8, Listing 6.13, ranks
2 and 3) and `tile_nested_map_reduce` (6.2.5.3, Listing 6.8).

    interchange_reduce_nd(reduce((acc, x) => map(f) << zip(acc, x), init)) << xs
      rank 2 (new_reduce_dim 1):
        ->  map(p => nested(reduce((a, e) => f(a, e), p.0)) << p.1) << zip(init, transpose << xs)
      rank 3, the m columns in blocks of F (tuning parameter `F_label` or `factor`):
        dim 1 ->  join << map(p => nested(reduce((a, x) => map(f) << zip(a, x), p.0)) << p.1)
                       << zip(split(F) << init, transposeND(1, 0, 2) << map(split(F)) << xs)
        dim 2 ->  join << map(q => <rank 2 on q.1 with init q.0>)
                       << zip(split(F) << init, transposeND(1, 0, 2) << map(split(F)) << xs)
        (init : [S]m, xs : [[V]m]K; an array `value(z, [S]m)` initialises each reduction with z)

    tile_nested_map_reduce(map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb)) << B), final) << A
        ->  split(M) << interchange_reduce_nd(privatise_accumulator(
                reduce((acc, x) => map(final) << zip(acc, x), value(z, [S]N*M))))
            << map(t => join << nested(map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb))
                                             << t.1) << t.0))
            << zip(transpose << map(split(T)) << A, transpose << map(split(T)) << B)
        (A : [[T]K]N, B : [[U]K]M; each tile of T reduced elements is reduced by the original
        nest, the partial results by the user's `final` operator)

`interchange_reduce_nd` has the structural parameters `rank` (2, 3) and `new_reduce_dim` (how
many maps the reduction sinks under: 1 for rank 2; 1 (blocks) or 2 (columns) for rank 3);
`tile_nested_map_reduce` has the tuning parameter `T_label` (the tile of the reduced dimension)
and `final` (the final reduction operator; it may be left out when `f` is a known associative
operator with neutral `z`). The points it inserts are labelled `label.interchange` and `label.privatise`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

from lift.ir import nodes as n
from lift.ir import patterns as p
from lift.ir.build import elaborate
from lift.ir.nodes import FunCall, FunDecl, Lambda, Literal, Param, node
from lift.rules.reduce import is_monoid
from lift.rules.terms import call as apply_fun
from lift.rules.terms import eta, lam, mentions, substitute
from lift.typecheck import type_of
from lift.types import ArrayType, TupleType

from .memory_points import PrivatiseAccumulator
from .point import Nested, RewritePoint, constructor, size_param, tuning_var
from .shapes import MAP, REDUCE, ZIP, ZIP2, match_shape


def _elementwise(op: FunDecl) -> FunDecl | None:
    """`f` for an operator `(acc, x) => map(f) << zip(acc, x)`, else None."""
    op = eta(op)
    if not (isinstance(op, Lambda) and len(op.params) == 2 and isinstance(op.body, FunCall)):
        return None
    m = match_shape(MAP, op.body)
    zipped = match_shape(ZIP, m["x"]) if m is not None else None
    if m is None or zipped is None or zipped["xs"] != op.params:
        return None
    return None if mentions(m["f"], op.params) else cast(FunDecl, m["f"])


def _pairwise(f: FunDecl, a: Any, e: Any) -> Any:
    """`f(tuple(a, e))`, as `u(a, e)` when `f` is `q => u(q.0, q.1)`."""
    g = eta(f)
    if isinstance(g, Lambda) and len(g.params) == 1 and isinstance(g.body, FunCall) and len(g.body.args) == 2:
        q = g.params[0]
        if all(isinstance(x, FunCall) and x.f == n.Get(i) and x.args == (q,) for i, x in enumerate(g.body.args)) \
                and not mentions(g.body.f, (q,)):
            return FunCall(g.body.f, (a, e))
    return apply_fun(f, [FunCall(n.MakeTuple(2), (a, e))])


@node
class InterchangeReduceND(RewritePoint):
    """`interchange_reduce_nd(reduce((acc, x) => map(f) << zip(acc, x), init), rank=None,
    new_reduce_dim=None, factor=None)`: the reduction of rows sunk under the map of its
    columns (Listing 6.13; rank 2, or rank 3 with the columns split in blocks of `factor`)."""

    f: FunDecl
    new_reduce_dim: Any = None
    rank: Any = None
    factor: Any = None
    kind: ClassVar[str] = "interchange_reduce_nd"
    places_nested: ClassVar[bool] = True

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"rank": (2, 3), "new_reduce_dim": (1, 2)}
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        if match_shape(REDUCE, call) is None:
            return f"expects reduce(g, init) << xs, got {call}"
        rank = params.get("rank") or self.rank or 2
        dim = params.get("new_reduce_dim") or self.new_reduce_dim or rank - 1
        if rank not in (2, 3) or dim not in range(1, rank):
            return f"rank {rank}, new_reduce_dim {dim}: expects rank 2 (dim 1) or rank 3 (dim 1 or 2)"
        f = _elementwise(call.f.f)
        if f is None:
            return f"the operator {call.f.f} is not (acc, x) => map(f) << zip(acc, x)"
        init, xs = call.args
        it, xt = type_of(init), type_of(xs)
        if not (isinstance(it, ArrayType) and isinstance(xt, ArrayType) and isinstance(xt.elem, ArrayType)):
            return f"expects an array accumulator and rows of arrays, got {it} and {xt}"
        if rank == 3:
            factor = size_param(self.factor, params, self.label or "T", "factor") \
                if params.get("factor") is not None or self.factor is not None else tuning_var(self.label or "T", "F")
            return _blocks(call, f, init, xs, factor, dim, nested)
        return _columns(call, f, init, xs, nested)


def _columns(call: Any, f: FunDecl, init: Any, xs: Any, nested: Nested) -> Any:
    """Rank 2: `map(col => reduce(f', z) << col) << transpose << xs` (one reduction per column)."""
    it, xt = cast(Any, type_of(init)), cast(Any, type_of(xs))
    s_t, v_t = it.elem, xt.elem.elem
    op = lam([s_t, v_t], lambda a, e: _pairwise(f, a, e), ["a", "e"])
    col_t = ArrayType(v_t, xt.size)
    if isinstance(init, Literal):  # value(z, [S]m): every reduction starts from z
        z = Literal(init.value, s_t)
        per = lam([col_t], lambda c: FunCall(nested(n.Reduce(op, label=call.f.label)), (z, c)), ["col"])
        return FunCall(n.Map(per), (p.transpose << xs,))
    pt = TupleType((s_t, col_t))
    per = lam([pt], lambda q: FunCall(nested(n.Reduce(op, label=call.f.label)),
                                      (FunCall(n.Get(0), (q,)), FunCall(n.Get(1), (q,)))), ["p"])
    return FunCall(n.Map(per), (p.zip(init, p.transpose << xs),))


def _blocks(call: Any, f: FunDecl, init: Any, xs: Any, factor: Any, dim: int, nested: Nested) -> Any:
    """Rank 3: the columns in blocks of `factor`; dim 1: one reduction per block (its accumulator
    a row of `factor`), `join << map(b => reduce(map(f), init_b) << b) << transposeND(1, 0, 2)`;
    dim 2: one per column, `join << map(map(col => reduce(f', z) << col)) << transposeND(1, 2, 0)`."""
    it, xt = cast(Any, type_of(init)), cast(Any, type_of(xs))
    s_t, v_t = it.elem, xt.elem.elem
    blocked = p.map(p.split(factor)) << xs  # [[[V]F]m/F]K
    if dim == 2:
        if isinstance(init, Literal):
            z = Literal(init.value, ArrayType(s_t, factor))
            inner = lam([ArrayType(ArrayType(v_t, factor), xt.size)],
                        lambda blk: _columns(call, f, z, blk, nested), ["blk"])
            return p.join << FunCall(n.Map(inner), (p.transpose << blocked,))
        pt = TupleType((ArrayType(s_t, factor), ArrayType(ArrayType(v_t, factor), xt.size)))
        per = lam([pt], lambda q: _columns(call, f, FunCall(n.Get(0), (q,)), FunCall(n.Get(1), (q,)), nested), ["p"])
        return p.join << FunCall(n.Map(per), (p.zip(p.split(factor) << init, p.transpose << blocked),))
    acc_t, row_t = ArrayType(s_t, factor), ArrayType(v_t, factor)
    op = lam([acc_t, row_t], lambda a, x: FunCall(n.Map(f), (p.zip(a, x),)), ["acc", "x"])
    blk_t = ArrayType(row_t, xt.size)
    if isinstance(init, Literal):
        z = Literal(init.value, acc_t)
        per = lam([blk_t], lambda b: FunCall(nested(n.Reduce(op, label=call.f.label)), (z, b)), ["blk"])
        return p.join << FunCall(n.Map(per), (p.transpose << blocked,))
    pt = TupleType((acc_t, blk_t))
    per = lam([pt], lambda q: FunCall(nested(n.Reduce(op, label=call.f.label)),
                                      (FunCall(n.Get(0), (q,)), FunCall(n.Get(1), (q,)))), ["p"])
    return p.join << FunCall(n.Map(per), (p.zip(p.split(factor) << init, p.transpose << blocked),))


def map_map_nest(call: Any) -> tuple[Lambda, Any, FunDecl, Any] | str:
    """`(outer lambda, A, inner function, B)` for `map(ra => map(h) << B) << A`, or why not."""
    outer = match_shape(MAP, call)
    if outer is None:
        return f"expects map(ra => map(rb => reduce << map << zip(ra, rb)) << B) << A, got {call}"
    fa = eta(outer["f"])
    inner = match_shape(MAP, fa.body) if isinstance(fa, Lambda) and len(fa.params) == 1 else None
    if not isinstance(fa, Lambda) or inner is None:
        return "the outer map's body is not map(rb => ..) << B"
    b = inner["x"]
    if mentions(b, fa.params):
        return "B depends on the outer element: the maps are not over independent arrays"
    return fa, outer["x"], inner["f"], b


def nest_reduction(call: Any) -> tuple[Lambda, Any, FunDecl, Any, Any, Any] | str:
    """`(outer lambda, A, inner function, B, reduce call, zip)` for
    `map(ra => map(rb => reduce(f, z) << [map(g) <<] zip(ra, rb)) << B) << A`, or why not."""
    found = map_map_nest(call)
    if isinstance(found, str):
        return found
    fa, a, h, b = found
    red = zip_reduction(h, fa.params[0])
    if isinstance(red, str):
        return red
    return (fa, a, h, b, *red)


def zip_reduction(h: FunDecl, ra: Param) -> tuple[Any, Any] | str:
    """`(reduce call, zip)` for `rb => reduce(f, z) << [map(g) <<] zip(ra, rb)`, or why not."""
    h = eta(h)
    if not (isinstance(h, Lambda) and len(h.params) == 1):
        return "the inner map's function is not rb => reduce(..) << .."
    red = h.body
    m = match_shape(REDUCE, red)
    if m is None:
        return f"the inner function is not a reduce, got {red}"
    xs = m["xs"]
    if (mapped := match_shape(MAP, xs)) is not None:
        xs = mapped["x"]
    zipped = match_shape(ZIP2, xs)
    if zipped is None or zipped["a"] != ra or zipped["b"] != h.params[0]:
        return "the reduction's input is not [map(g) <<] zip(ra, rb)"
    return red, xs


@node
class TileNestedMapReduce(RewritePoint):
    """`tile_nested_map_reduce(map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb)) << B),
    final=None, size=None)`: tile the reduced dimension of a map-map-reduce nest (Listing 6.8)."""

    f: FunDecl
    final: Any = None
    size: Any = None
    kind: ClassVar[str] = "tile_nested_map_reduce"
    places_nested: ClassVar[bool] = True

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        found = nest_reduction(call)
        if isinstance(found, str):
            return found
        fa, a, h, b, r_call, _ = found
        z = r_call.args[0]
        s_t = type_of(z)
        final = params.get("final", self.final)
        if final is None and not is_monoid(r_call.f.f, z):
            return f"{r_call.f.f} is not a known associative operator with neutral {z}; give final="
        fin = elaborate(final, [s_t, s_t]) if final is not None else r_call.f.f
        at, bt = type_of(a), type_of(b)
        if not (isinstance(at, ArrayType) and isinstance(bt, ArrayType) and isinstance(at.elem, ArrayType)):
            return f"expects A : [[T]K]N and B : [[U]K]M, got {at} and {bt}"
        lab = self.label or "T"
        t = size_param(self.size, params, lab)
        ta = p.transpose << (p.map(p.split(t)) << a)
        tb = p.transpose << (p.map(p.split(t)) << b)
        row_a, row_b = ArrayType(at.elem.elem, t), ArrayType(cast(ArrayType, bt.elem).elem, t)
        tile_a = Param(ArrayType(row_a, at.size), "tileA")
        tile_b = Param(ArrayType(row_b, bt.size), "tileB")
        ea = Param(row_a, fa.params[0].name)
        h_lam = eta(h)
        assert isinstance(h_lam, Lambda)  # nest_reduction found rb => reduce(..) << ..
        eb = Param(row_b, h_lam.params[0].name)
        h_new = Lambda((eb,), substitute(h_lam.body, {h_lam.params[0].id: eb, fa.params[0].id: ea}))
        inner = FunCall(n.Map(h_new, label=cast(FunCall, fa.body).f.label, loc=cast(FunCall, fa.body).f.loc), (tile_b,))
        nest = FunCall(nested(n.Map(Lambda((ea,), inner), label=call.f.label, loc=call.f.loc)), (tile_a,))
        pair = TupleType((cast(Any, type_of(ta)).elem, cast(Any, type_of(tb)).elem))

        def per_tile(q: Param) -> Any:
            body = substitute(nest, {tile_a.id: FunCall(n.Get(0), (q,)), tile_b.id: FunCall(n.Get(1), (q,))})
            return p.join << body

        partial = FunCall(n.Map(lam([pair], per_tile, ["tiles"])), (p.zip(ta, tb),))
        nm = at.size * bt.size
        step = lam([ArrayType(s_t, nm), ArrayType(s_t, nm)], lambda acc, x: p.map(
            lam([TupleType((s_t, s_t))], lambda q: apply_fun(fin, [FunCall(n.Get(0), (q,)), FunCall(n.Get(1), (q,))]),
                ["q"])) << p.zip(acc, x), ["acc", "x"])
        init = Literal(z.value, ArrayType(s_t, nm)) if isinstance(z, Literal) else None
        if init is None:
            return f"the reduction's initial value {z} is not a constant"
        final_reduce = InterchangeReduceND(PrivatiseAccumulator(n.Reduce(step), label=f"{lab}.privatise"),
                                           label=f"{lab}.interchange")
        return p.split(bt.size) << FunCall(final_reduce, (init, partial))


interchange_reduce_nd = constructor(InterchangeReduceND, "interchange_reduce_nd")
tile_nested_map_reduce = constructor(TileNestedMapReduce, "tile_nested_map_reduce")

__all__ = ["InterchangeReduceND", "TileNestedMapReduce", "interchange_reduce_nd", "tile_nested_map_reduce"]
