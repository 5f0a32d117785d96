"""Fusion and fission: map-map, reduce-map and zip-map fusion, map fission."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from lift.ir.layoutfun import computes
from lift.ir.nodes import (
    Expr,
    FunCall,
    FunDecl,
    Get,
    Join,
    Lambda,
    Let,
    MakeTuple,
    Map,
    MapSeq,
    Node,
    Param,
    Reduce,
    ReduceSeq,
    Split,
    Zip,
)
from lift.ir.paths import at, children, transform_bottom_up, walk, with_children
from lift.ir.registry import MAPS, REDUCES, is_address
from lift.rules.match import PVar, any_, call, either, exact, expr, fun, named, var
from lift.rules.rule import Rule
from lift.rules.terms import (
    as_call,
    as_expr,
    compose,
    elem,
    eta,
    fun_of,
    lam,
    mentions,
    meta,
    refresh,
    substitute,
    under_lambda,
)
from lift.rules.terms import call as apply_fun
from lift.typecheck import type_of
from lift.types import ArrayType, TupleType, Type

f, g = fun("f"), fun("g")
x, z = expr("x"), expr("z")


def _map_fusion(f: FunDecl, g: FunDecl, x: Expr, matched: FunCall) -> Expr:
    outer, inner = matched.f, as_call(matched.args[0]).f
    label = outer.label or inner.label
    return FunCall(Map(compose(f, g, elem(x)), label=label, loc=outer.loc), (x,), **meta(matched))


map_fusion = Rule(
    "map_fusion", law="map(f) << map(g) << x -> map(f << g) << x",
    lhs=call(Map(f), call(Map(g), x)), rhs=_map_fusion,
    doc="Two traversals become one; the intermediate array disappears.",
)


def _map_row_fusion(f: FunDecl, g: FunDecl, x: Expr, matched: FunCall) -> Expr:
    outer, inner = matched.f, as_call(matched.args[0]).f
    body = f if isinstance(f, Lambda) else lam([elem(matched.args[0])], lambda v: FunCall(f, (v,)), ["v"])
    row = lam([elem(x)], lambda r: FunCall(Let(body), (FunCall(g, (r,)),)), ["r"])
    return FunCall(Map(row, label=outer.label or inner.label, loc=outer.loc), (x,), **meta(matched))


map_row_fusion = Rule(
    "map_row_fusion", law="map(f) << map(g) << x -> map(r => let(f) << g(r)) << x",
    lhs=call(Map(f), call(Map(g), x)), rhs=_map_row_fusion,
    doc="One traversal; each g(r) is computed once and read by f as often as f needs (several MLP "
        "layers in one kernel, a work-group or work-item owning whole rows), where map_fusion's "
        "inlining would recompute it per read.",
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
    b = as_call(f.body)
    inner = eta(Lambda(f.params, b.args[i], loc=f.loc))
    q = Param(type_of(b.args[i]), "y")
    args = b.args[:i] + (q,) + b.args[i + 1:]
    outer = eta(Lambda((q,), FunCall(b.f, args, **meta(b)), loc=f.loc))
    first = FunCall(Map(inner), (x,))
    return FunCall(Map(outer, **meta(matched.f)), (first,), **meta(matched))


map_fission = Rule(
    "map_fission", law="map(p => h(e)) << x -> map(y => h(y)) << map(p => e) << x",
    lhs=call(Map(cast(Any, PVar("f", Lambda))), x), where=lambda f: fission_point(f) is not None,
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


def _map_call(a: Node) -> FunCall | None:
    """`a` if it is a call of a map (`_MAP_CALL`), else None."""
    return as_call(a) if exact(_MAP_CALL, a) is not None else None


def _zip_map_fusion(args: tuple[Expr, ...], matched: FunCall) -> Expr:
    calls = [_map_call(a) for a in args]
    xs = tuple(a if c is None else c.args[0] for a, c in zip(args, calls))
    t = TupleType(tuple(elem(a) for a in xs))

    def body(p: Param) -> Expr:
        parts = []
        for i, c in enumerate(calls):
            comp = FunCall(Get(i), (p,))
            parts.append(comp if c is None else apply_fun(fun_of(c.f), [comp]))
        return FunCall(MakeTuple(len(parts)), tuple(parts))

    zipped = FunCall(Zip(len(xs)), xs, **meta(matched))
    return FunCall(Map(lam([t], body, ["p"])), (zipped,))


zip_map_fusion = Rule(
    "zip_map_fusion",
    law="zip(map(f) << x, map(g) << y) -> map(p => tuple(f(get(0, p)), g(get(1, p)))) << zip(x, y)",
    lhs=FunCall(Zip(cast(Any, PVar("k"))), cast(Any, PVar("args"))),
    where=lambda args: any(_map_call(a) is not None for a in args),
    rhs=_zip_map_fusion,
    doc="Maps over zipped arrays move after the zip, into one map (any arity; plain arguments pass).",
)

# The shapes the fusion passes read, stated as patterns of the program as written (`exact`: no
# lambda eta-reduced); a bound function's side condition is its pattern variable's test.
h, y = fun("h"), expr("y")
_ARGS = var("args", tuple)
_MAP_CALL = FunCall(Map(g), _ARGS)  # map(g) << .., any arguments
_ZIP: Any = named("zip", FunCall(Zip(any_()), _ARGS))  # zip(..)
_FOLD = call(named("red", either(Reduce(f), ReduceSeq(f))), z, x)  # reduce(f, z) << x, either form
_GET = call(Get(var("i")), expr("p"))  # get(i) << p, p given
_ONE = var("p", Param)
_LAMBDA_1 = var("f", Lambda, lambda f: len(f.params) == 1)  # a lambda of one parameter


def _computing(g: FunDecl) -> bool:
    """Whether a map of `g` computes its elements and does not materialise them on purpose."""
    return computes(g) and not _materialises(g)


_PRODUCER = call(Map(var("g", FunDecl, _computing)), y)  # map(g) << y, g computing
_STAGE = call(Map(var("g", FunDecl, lambda g: _computing(g) and not _reduces(g))), y)  # ..not reducing
_CONSUMER = call(Map(var("f", FunDecl, computes)), named("inner", _PRODUCER))  # map(f) << map(g) << y
_VIEW_STEP = FunCall(var("f", FunDecl, lambda f: not computes(f)), (y,))  # a non-computing function of y
_SPLIT = call(Split(any_()), y)
_EPILOGUE = call(Map(f), x)  # map(f) << x
_ZIP_CONSUMER = call(Map(_LAMBDA_1), _ZIP)  # map(p => ..) << zip(..)
_MAP_OF_ZIP = call(Map(f), _ZIP)  # map(f) << zip(..)
_JOINED_CONSUMER = call(Map(var("f", FunDecl, computes)), named("join", call(Join(), named("inner", _PRODUCER))))
_MAP_FUN = Map(h)  # map(h), the function itself
_LAMBDA_OF_MAP = Lambda((_ONE,), cast(Any, named("body", call(Map(h), y))))  # p => map(h) << y
_LAMBDA_OF_ZIP_MAP = Lambda((_ONE,), call(Map(h), _ZIP))  # p => map(h) << zip(..)


def _materialises(g: Node) -> bool:
    """Whether `g` asks for its result in memory: `to_global(..)`, `to_local(..)`, `to_private(..)`
    (what the `materialise` rewrite point writes), possibly under a lambda."""

    while isinstance(g, Lambda) and isinstance(g.body, FunCall):
        g = g.body.f
    return is_address(g)


def _fusable_reduce(e: Node, nested: bool = False) -> bool:
    b = exact(_FOLD, e)
    return b is not None and _fusable_producer(b["x"], nested)


def _fusable_producer(xs: Node, nested: bool) -> bool:
    """Whether `xs` is a computing map a fold may apply per element. One whose function reduces
    only where the fold is `nested` (per element of an outer map) and the map does not reduce
    chunks of one array (`split`: the partial results of a tiled reduction, kept as the rewrites
    tiled it); its elements (distances to K centroids) need no array of the map's length in one
    work-item's memory then."""
    b = exact(_PRODUCER, xs)
    if b is None:
        return False
    return not _reduces(b["g"]) or (nested and not _chunks(b["y"]))


def _chunks(e: Node) -> bool:
    """Whether `e` is chunks of an array: a `split`, possibly under other layouts."""
    while (b := exact(_VIEW_STEP, e)) is not None:
        if exact(_SPLIT, e) is not None:
            return True
        e = b["y"]
    return False


def _fused_zip_reduce(e: Node, nested: bool) -> Expr | None:
    """`reduce_seq((acc, q) => f(acc, (.., g(get(i) << q), ..)), z) << zip(.., y, ..)` for
    `e = reduce(f, z) << zip(.., map(g) << y, ..)` nested in an outer map (the K-Means step: the
    distances to every centroid folded to the nearest, `zip(iota(K), map(dist) << cs)`), so no
    array of the zip's length is kept per outer element; None when `e` is not such a fold."""
    b = exact(_FOLD, e) if nested else None
    if b is None or exact(_ZIP, b["x"]) is None:
        return None
    zs = as_call(b["x"])
    producers = {i: as_call(a) for i, a in enumerate(zs.args) if _fusable_producer(a, nested)}
    if not producers:
        return None
    args = tuple(producers[i].args[0] if i in producers else a for i, a in enumerate(zs.args))
    q_type = TupleType(tuple(elem(a) for a in args))
    red, z = b["red"], b["z"]

    def step(acc: Expr, q: Expr) -> Expr:
        comps = tuple(apply_fun(fun_of(producers[i].f), [FunCall(Get(i), (q,))]) if i in producers
                      else FunCall(Get(i), (q,)) for i in range(len(args)))
        return apply_fun(fun_of(red), [acc, FunCall(MakeTuple(len(comps)), comps)])

    body = lam([type_of(z), q_type], step, ["acc", "q"])
    return FunCall(ReduceSeq(body, **meta(red)), (z, FunCall(Zip(len(args)), args, **meta(zs))), **meta(e))


_NESTS = MAPS + REDUCES  # the patterns applying a function per element (the registry's maps and reductions)


def _bottom_up_nested(e: Node, fn: Callable[[Node, bool], Node], nested: bool = False) -> Node:
    """`transform_bottom_up` telling `fn` whether a node lies in the function of a map or reduce."""
    inner = nested or isinstance(e, _NESTS)
    cs = tuple(_bottom_up_nested(c, fn, inner) for c in children(e))
    return fn(with_children(e, cs), nested)


def _reduces(g: Node) -> bool:
    """Whether `g` reduces: `map(chunk => reduce(..) << chunk)` makes partial results, one per
    chunk (reduction tiling, `split_reduce`); they are what the parallel stage hands on."""

    return any(isinstance(m, REDUCES) for _, m in walk(g))


def fuse_reduce_maps(expr: Node) -> Node:
    """`expr` with every `reduce(f, z) << map(g) << x` fused into
    `reduce_seq((acc, a) => f(acc, g(a)), z) << x` (`reduce_map_fusion`, everywhere, repeatedly),
    so that no temporary array holds `map(g)`. Kept: a map that materialises on purpose
    (`map(to_global(..))`, as the `materialise` point writes), a map of views, and a map whose
    function reduces (partial results of a tiled reduction, one per chunk: the parallel stage)
    unless the reduction is nested in an outer map's function, where the maps of a zip it folds
    are fused as well (`_fused_zip_reduce`)."""

    def fuse(m: Node, nested: bool) -> Node:
        while True:
            if _fusable_reduce(m, nested):
                call = as_call(m)
                red, xs = call.f, as_call(call.args[1])
                m = _reduce_map_fusion(fun_of(red), fun_of(xs.f), call.args[0], xs.args[0], red, call)
                continue
            zipped = _fused_zip_reduce(m, nested)
            if zipped is None:
                return m
            m = zipped

    return _bottom_up_nested(expr, fuse)


def fuse_epilogues(expr: Node) -> Node:
    """`expr` with every elementwise consumer of a computed map fused into it (`map_fusion` and
    `zip_map_fusion` where each element is read once), so that, e.g., the bias and ReLU applied to a
    GEMM's result run in the GEMM's kernel and no array holds the GEMM's result:

        map(row => map(p => relu(get(0, p) + get(1, p))) << zip(row, bias)) << map(r => map(c => dot(r, c)) << w) << x
        ->  map(r => map(q => relu(dot(r, get(0, q)) + get(1, q))) << zip(w, bias)) << x

    The consumer must read each element once: a map of an elementwise function, or
    `p => map(h) << zip(.., p, ..)` with `h` elementwise (at the scalar level, any function). A
    producer that materialises on purpose (`to_global(..)`) or reduces per element only when its
    consumer is scalar (a reduction's result is read once) is fused as well. A `join` between them (a
    producer tiled by `split_join`) is crossed: `map(f) << join == join << map(map(f))`."""

    def fuse(m: Node) -> Node:
        if exact(_EPILOGUE, m) is None:
            return m
        mc = as_call(m)
        joined = _through_join(mc)
        if joined is not None:
            return joined
        zipped = _through_zip(mc)
        if zipped is not None:
            return fuse_epilogues(zipped)  # the components it applied may be consumed element-wise in turn
        b = exact(_CONSUMER, m)
        if b is not None:
            fused = _fuse_fun(b["f"], b["g"], elem(b["y"]))
            if fused is not None:
                return FunCall(Map(fused, **meta(mc.f)), (b["y"],), **meta(m))
        return m

    return transform_bottom_up(expr, fuse)


def _through_zip(m: FunCall) -> Expr | None:
    """`map(q => f(.., g(get(i) << q), ..)) << zip(.., y, ..)` for `m = map(f) << zip(.., map(g) << y, ..)`
    when `f` reads each fused component once, as `get(i) << p`, a row of it only as an argument of a
    zip that a map traverses (each element once: then fused the same way) (an unsharp mask's
    `map(rows => map(sharpen) << zip(rows.0, rows.1)) << zip(img, blurred)`: the blur is computed
    where the sharpening reads it, not into an array first), or None."""
    b = exact(_ZIP_CONSUMER, m)
    if b is None:
        return None
    f, z = cast(Lambda, b["f"]), as_call(b["zip"])
    p = f.params[0]
    producers = {i: as_call(a) for i, a in enumerate(z.args) if exact(_STAGE, a) is not None}
    if not producers or not computes(f) or not _only_gets(f.body, p):
        return None
    gets = [(path, got["i"]) for path, y in walk(f.body) if (got := exact(_GET, y, {"p": p})) is not None]
    if any([i for _, i in gets].count(i) != 1 for i in producers) or any(mentions(a, (p,)) for a in z.args):
        return None
    for path, i in gets:  # evaluated once per element (not under a lambda of f's: per inner iteration);
        if i in producers and (under_lambda(f.body, path) or  # a row only zipped into a map, fused in turn
                               isinstance(elem(producers[i]), ArrayType) and not _zipped_into_map(f.body, path)):
            return None
    args = tuple(producers[i].args[0] if i in producers else a for i, a in enumerate(z.args))
    q = Param(TupleType(tuple(elem(a) for a in args)), p.name)
    comps: list[Expr] = [FunCall(Get(i), (q,)) for i in range(len(args))]
    for i, a in producers.items():
        comps[i] = apply_fun(fun_of(a.f), [comps[i]])
    body = _replace_gets(f.body, p, comps)
    return FunCall(Map(Lambda((q,), body), **meta(m.f)), (FunCall(Zip(len(args)), args, **meta(z)),), **meta(m))


def _zipped_into_map(body: Node, path: tuple[int, ...]) -> bool:
    """Whether the node at `path` in `body` is an argument of a zip that a map traverses."""
    if len(path) < 2:
        return False
    b = exact(_MAP_OF_ZIP, at(body, path[:-2]))
    return b is not None and b["zip"] is at(body, path[:-1])


def _through_join(m: FunCall) -> Expr | None:
    """`join << map(v => map(f) << g(v)) << y` for `m = map(f) << join << map(g) << y` (a tiled
    producer: `map(f) << join == join << map(map(f))`), fused as `fuse_epilogues` does, or None."""
    b = exact(_JOINED_CONSUMER, m)
    if b is None:
        return None
    j, inner = as_call(b["join"]), as_call(b["inner"])
    fused = _fuse_fun(Map(b["f"], **meta(m.f)), b["g"], elem(b["y"]))
    if fused is None:
        return None
    return FunCall(j.f, (FunCall(Map(fused, **meta(inner.f)), inner.args, **meta(inner)),), **meta(j))


def _fuse_fun(f: FunDecl, g: FunDecl, t: Type) -> FunDecl | None:
    """`v => f(g(v))` for `v: t`, pushed down so that g's elements feed f's one by one; None when
    f may read an element of g's result more than once (and t is an array)."""
    if not isinstance(t, ArrayType):
        return lam([t], lambda v: apply_fun(f, [apply_fun(g, [v])]), ["v"])
    gm = _map_body(g)
    if gm is None:
        return None
    fm = exact(_MAP_FUN, f)
    if fm is not None:
        probe = Param(t, "r")
        if _fuse_fun(fm["h"], gm(probe)[0], _elem_of(gm(probe)[1])) is None:
            return None

        def mapped(v: Param) -> Expr:
            gfun, src = gm(v)
            inner = _fuse_fun(fm["h"], gfun, _elem_of(src))
            assert inner is not None  # the probe above fused
            return FunCall(Map(inner, **meta(f)), (src,))

        return lam([t], mapped, ["r"])
    zf = _zip_consumer(f)
    if zf is None:
        return None
    h, others, pos = zf  # f = p => map(h) << zip(others with p at pos)

    def body(v: Param) -> Expr:
        gfun, src = gm(v)
        args = [src if o is None else o for o in others]
        q = Param(TupleType(tuple(_elem_of(a) for a in args)), "q")
        comps: list[Expr] = [FunCall(Get(i), (q,)) for i in range(len(args))]
        comps[pos] = apply_fun(gfun, [comps[pos]])
        hp = h.params[0] if isinstance(h, Lambda) and len(h.params) == 1 else None
        if hp is not None and _only_gets(cast(Lambda, h).body, hp):
            new_body = _replace_gets(cast(Lambda, h).body, hp, comps)
        else:
            new_body = apply_fun(h, [FunCall(MakeTuple(len(comps)), tuple(comps))])
        return FunCall(Map(Lambda((q,), new_body)), (FunCall(Zip(len(args)), tuple(args)),))

    return lam([t], body, ["r"])


def _elem_of(e: Expr) -> Type:
    t = type_of(e)
    assert isinstance(t, ArrayType), t
    return t.elem


def _map_body(g: FunDecl) -> Callable[[Expr], tuple[FunDecl, Expr]] | None:
    """A function of `v` giving (gfun, src) with `g(v) == map(gfun) << src`, or None."""
    gm = exact(_MAP_FUN, g)
    if gm is not None:
        return lambda v: (gm["h"], v)
    b = exact(_LAMBDA_OF_MAP, g)
    if b is not None:
        p, body = b["p"], b["body"]

        def at(v: Expr) -> tuple[FunDecl, Expr]:
            new = as_call(substitute(body, {p.id: v}))
            return fun_of(new.f), new.args[0]

        return at
    return None


def _zip_consumer(f: FunDecl) -> tuple[FunDecl, list[Expr | None], int] | None:
    """(h, zip args with None at p's place, p's place) for `f = p => map(h) << zip(.., p, ..)`."""
    b = exact(_LAMBDA_OF_ZIP_MAP, f)
    if b is None:
        return None
    p, z, h = b["p"], as_call(b["zip"]), b["h"]
    if mentions(h, (p,)):
        return None
    hits = [i for i, a in enumerate(z.args) if a == p]
    if len(hits) != 1 or any(mentions(a, (p,)) for i, a in enumerate(z.args) if i != hits[0]):
        return None
    return h, [None if i == hits[0] else a for i, a in enumerate(z.args)], hits[0]


def _only_gets(body: Node, p: Param) -> bool:
    """Whether `p` occurs in `body` only as `get(i) << p`."""

    gets = sum(1 for _, y in walk(body) if exact(_GET, y, {"p": p}) is not None)
    return gets == sum(1 for _, y in walk(body) if y == p)


def _replace_gets(body: Node, p: Param, comps: list[Expr]) -> Expr:

    def swap(y: Node) -> Node:
        got = exact(_GET, y, {"p": p})
        return y if got is None else refresh(comps[got["i"]])

    return as_expr(transform_bottom_up(body, swap))


RULES = (map_fusion, map_row_fusion, map_fission, reduce_map_fusion, zip_map_fusion)
