"""Fusion and fission: map-map, reduce-map and zip-map fusion, map fission."""

from __future__ import annotations

from lift.ir.nodes import (
    Expr,
    FunCall,
    FunDecl,
    Get,
    Lambda,
    MakeTuple,
    Map,
    MapSeq,
    Node,
    Param,
    Reduce,
    ReduceSeq,
    Zip,
)
from lift.rules.match import PVar, call, either, expr, fun, named
from lift.rules.rule import Rule
from lift.rules.terms import call as apply_fun
from lift.rules.terms import compose, elem, eta, lam, mentions, meta
from lift.typecheck import type_of
from lift.types import TupleType

f, g = fun("f"), fun("g")
x, z = expr("x"), expr("z")


def _map_fusion(f: FunDecl, g: FunDecl, x: Expr, matched: FunCall) -> Expr:
    outer, inner = matched.f, matched.args[0].f  # type: ignore[attr-defined]
    label = outer.label or inner.label
    return FunCall(Map(compose(f, g, elem(x)), label=label, loc=outer.loc), (x,), **meta(matched))


map_fusion = Rule(
    "map_fusion", law="map(f) << map(g) << x -> map(f << g) << x",
    lhs=call(Map(f), call(Map(g), x)), rhs=_map_fusion,
    doc="Two traversals become one; the intermediate array disappears.",
)


def fission_point(f: FunDecl) -> int | None:
    """The argument of `f`'s body to split off: `f = p => h(.., e, ..)`, only `e` uses `p`."""
    if not (isinstance(f, Lambda) and len(f.params) == 1 and isinstance(f.body, FunCall)):
        return None
    b = f.body
    if mentions(b.f, f.params):
        return None
    hits = [i for i, a in enumerate(b.args) if mentions(a, f.params)]
    if len(hits) != 1 or b.args[hits[0]] == f.params[0]:
        return None
    return hits[0]


def _map_fission(f: Lambda, x: Expr, matched: FunCall) -> Expr:
    i = fission_point(f)
    assert i is not None
    b: FunCall = f.body  # type: ignore[assignment]
    inner = eta(Lambda(f.params, b.args[i], loc=f.loc))
    q = Param(type_of(b.args[i]), "y")
    args = b.args[:i] + (q,) + b.args[i + 1:]
    outer = eta(Lambda((q,), FunCall(b.f, args, **meta(b)), loc=f.loc))
    first = FunCall(Map(inner), (x,))
    return FunCall(Map(outer, **meta(matched.f)), (first,), **meta(matched))


map_fission = Rule(
    "map_fission", law="map(p => h(e)) << x -> map(y => h(y)) << map(p => e) << x",
    lhs=call(Map(PVar("f", Lambda)), x), where=lambda f: fission_point(f) is not None,
    rhs=_map_fission,
    doc="Splits a map whose body applies h (not using p) to e into two maps.",
)


def _reduce_map_fusion(f: FunDecl, g: FunDecl, z: Expr, x: Expr, red: Node, matched: FunCall) -> Expr:
    body = lam([type_of(z), elem(x)], lambda acc, a: apply_fun(f, [acc, apply_fun(g, [a])]), ["acc", "a"])
    return FunCall(ReduceSeq(body, **meta(red)), (z, x), **meta(matched))


reduce_map_fusion = Rule(
    "reduce_map_fusion",
    law="reduce(f, z) << map(g) << x -> reduce_seq((acc, a) => f(acc, g(a)), z) << x",
    lhs=call(named("red", either(Reduce(f), ReduceSeq(f))), z, call(either(Map(g), MapSeq(g)), x)),
    rhs=_reduce_map_fusion,
    doc="The fused operator is not associative, so the result is a sequential reduction.",
)


def _is_map_call(a: Node) -> bool:
    return isinstance(a, FunCall) and isinstance(a.f, Map)


def _zip_map_fusion(args: tuple[Expr, ...], matched: FunCall) -> Expr:
    xs = tuple(a.args[0] if _is_map_call(a) else a for a in args)  # type: ignore[attr-defined]
    t = TupleType(tuple(elem(a) for a in xs))

    def body(p: Param) -> Expr:
        parts = []
        for i, a in enumerate(args):
            comp = FunCall(Get(i), (p,))
            parts.append(apply_fun(a.f.f, [comp]) if _is_map_call(a) else comp)  # type: ignore[attr-defined]
        return FunCall(MakeTuple(len(parts)), tuple(parts))

    zipped = FunCall(Zip(len(xs)), xs, **meta(matched))
    return FunCall(Map(lam([t], body, ["p"])), (zipped,))


zip_map_fusion = Rule(
    "zip_map_fusion",
    law="zip(map(f) << x, map(g) << y) -> map(p => tuple(f(get(0, p)), g(get(1, p)))) << zip(x, y)",
    lhs=FunCall(Zip(PVar("k")), PVar("args")),
    where=lambda args: any(_is_map_call(a) for a in args),
    rhs=_zip_map_fusion,
    doc="Maps over zipped arrays move after the zip, into one map (any arity; plain arguments pass).",
)

def _materialises(g: Node) -> bool:
    """Whether `g` asks for its result in memory: `to_global(..)`, `to_local(..)`, `to_private(..)`
    (what the `materialise` rewrite point writes), possibly under a lambda."""
    from lift.ir.nodes import ToGlobal, ToLocal, ToPrivate

    while isinstance(g, Lambda) and isinstance(g.body, FunCall):
        g = g.body.f
    return isinstance(g, ToGlobal | ToLocal | ToPrivate)


def _computes(g: Node) -> bool:
    from lift.ir.nodes import AbstractReduce, Literal, UserFun
    from lift.ir.paths import walk

    return any(isinstance(m, UserFun | AbstractReduce | Literal) for _, m in walk(g))


def _fusable_reduce(e: Node) -> bool:
    if not (isinstance(e, FunCall) and isinstance(e.f, Reduce | ReduceSeq) and len(e.args) == 2):
        return False
    xs = e.args[1]
    return (isinstance(xs, FunCall) and type(xs.f) is Map and len(xs.args) == 1
            and _computes(xs.f.f) and not _materialises(xs.f.f) and not _reduces(xs.f.f))


def _reduces(g: Node) -> bool:
    """Whether `g` reduces: `map(chunk => reduce(..) << chunk)` makes partial results, one per
    chunk (reduction tiling, `split_reduce`); they are what the parallel stage hands on."""
    from lift.ir.nodes import AbstractReduce
    from lift.ir.paths import walk

    return any(isinstance(m, AbstractReduce) for _, m in walk(g))


def fuse_reduce_maps(expr: Node) -> Node:
    """`expr` with every `reduce(f, z) << map(g) << x` fused into
    `reduce_seq((acc, a) => f(acc, g(a)), z) << x` (`reduce_map_fusion`, everywhere, repeatedly),
    so that no temporary array holds `map(g)`. Kept: a map that materialises on purpose
    (`map(to_global(..))`, as the `materialise` point writes), a map of views, and a map whose
    function reduces (partial results of a tiled reduction, one per chunk: the parallel stage)."""
    from lift.ir.paths import transform_bottom_up

    def fuse(m: Node) -> Node:
        while _fusable_reduce(m):
            red, xs = m.f, m.args[1]  # type: ignore[attr-defined]
            m = _reduce_map_fusion(red.f, xs.f.f, m.args[0], xs.args[0], red, m)  # type: ignore[attr-defined]
        return m

    return transform_bottom_up(expr, fuse)


RULES = (map_fusion, map_fission, reduce_map_fusion, zip_map_fusion)
