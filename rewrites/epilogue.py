"""A matrix product with an epilogue, split into the product and an element-wise epilogue.

    map(p => map(q => h(.., reduce(f, z) << map(g) << zip(u(p), v(q)), ..)) << Y(p)) << X
      ->
    map(P => map(Q => h(.., get(1) << Q, ..)[p := get(0) << P, q := get(0) << Q])
             << zip(Y(get(0) << P), get(1) << P))
      << zip(X, map(r => map(c => reduce(f, z) << map(g) << zip(r, c)) << V) << U)

with `U = map(p => u(p)) << X` and `V = map(q => v(q)) << Y` (the operands themselves when `u`, `v`
are components of zipped inputs: `zip(A, C)`'s A), `V` free of `p`. The product is then a plain
map-map-reduce nest, which the `block_nest` point blocks like any GEMM; the epilogue (alpha/beta,
bias, ReLU, quantisation: any element-wise function of the product and other operands) is one
pass over the result. Used by the automatic points (`rewrites.auto`) when the nest as written
does not block; the meaning is unchanged (every output is `h` of the same dot product).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from lift.ir.nodes import Expr, FunCall, Get, Lambda, Literal, Map, Node, OclKernel, Param, UserFun, Zip
from lift.ir.paths import children, replace_at, walk, with_children
from lift.rules.normalise import is_view
from lift.rules.terms import bound_ids, elem, lam, mentions, meta, substitute
from lift.typecheck import type_of
from lift.types import ScalarType

from .shapes import GET, MAP, REDUCE, ZIP, ZIP2, match_shape, projected


def split_epilogue(call: Node) -> Node | None:
    """The product and its epilogue (see the module), or None when `call` is not such a nest."""
    found = _nest(call)
    if isinstance(found, str):
        return None
    p, q, body, x, y, red, rows, cols = found
    return _epilogue(cast(FunCall, call), p, q, body, red, x, y, _product(red, rows, cols))


def _nest(call: Node) -> tuple[Param, Param, Expr, Expr, Expr, FunCall, Expr, Expr] | str:
    """`(p, q, body, X, Y, reduce call, rows, cols)` of `map(p => map(q => body) << Y) << X` whose
    body computes one product of a row `u(p)` and a column `v(q)` (rows and cols: the arrays of
    those, `cols` free of `p`), or why not."""
    m = match_shape(MAP, call)
    if m is None:
        return "not a map"
    outer, x = m["f"], m["x"]
    m = match_shape(MAP, outer.body) if isinstance(outer, Lambda) and len(outer.params) == 1 else None
    if m is None:
        return "not a map of maps"
    p, inner, y = outer.params[0], m["f"], m["x"]
    if not (isinstance(inner, Lambda) and len(inner.params) == 1):
        return "the inner map's function is not a lambda"
    q, body = inner.params[0], inner.body
    found = _the_product(body, p, q)
    if found is None:
        return "no product of a row and a column with an epilogue"
    red, u, v = found
    cols, rows = _operand(y, q, v), _operand(x, p, u)
    if cols is None or rows is None or mentions(cols, [p]):
        return "the columns depend on the row"
    return p, q, body, x, y, red, rows, cols


def _the_product(body: Node, p: Param, q: Param) -> tuple[FunCall, Any, Any] | None:
    """`(reduce call, u, v)`: the one reduction of `body` over `zip(u, v)`, `u` of `p` only and `v`
    of `q` only (or the other way round, as `(.., v, u)` swapped back), when `body` is not it."""
    reds = [m for _, m in walk(body) if match_shape(REDUCE, m) is not None]
    if len(reds) != 1 or reds[0] is body:
        return None
    red = cast(FunCall, reds[0])
    xs = red.args[1]
    if (mapped := match_shape(MAP, xs)) is not None:
        xs = mapped["x"]
    zipped = match_shape(ZIP2, xs)
    if zipped is None:
        return None
    u, v = zipped["a"], zipped["b"]
    if mentions(red.f, [p, q]) or mentions(red.args[0], [p, q]):
        return None
    if _only(u, p, q) and _only(v, q, p):
        return red, u, v
    return None


def _only(e: Node, keep: Param, other: Param) -> bool:
    """Whether `e` uses `keep` (as itself or components of it) and not `other`."""
    return mentions(e, [keep]) and not mentions(e, [other]) and _projection(e, keep)


def _projection(e: Node, p: Param) -> bool:
    """`p` or `get(i) << .. << p`."""
    return projected(e) == p


def _operand(xs: Expr, p: Param, u: Expr) -> Expr | None:
    """The array of `u`'s values as `p` ranges over `xs`: a zip's component itself, else a map."""
    if u == p:
        return xs
    got, zipped = match_shape(GET, u), match_shape(ZIP, xs)
    if got is not None and got["x"] == p and zipped is not None:
        return cast(Expr, zipped["xs"][got["i"]])
    return FunCall(Map(Lambda((p,), u)), (xs,))


def _product(red: FunCall, rows: Expr, cols: Expr) -> FunCall:
    """`map(r => map(c => reduce(f, z) << map(g) << zip(r, c)) << cols) << rows`."""
    xs = red.args[1]
    mapped = match_shape(MAP, xs) is not None

    def dot(r: Param, c: Param) -> Expr:
        pair = FunCall(Zip(2), (r, c))
        data = FunCall(cast(FunCall, xs).f, (pair,), **meta(xs)) if mapped else pair
        return FunCall(red.f, (red.args[0], data), **meta(red))

    return FunCall(Map(lam([elem(rows)], lambda r: FunCall(Map(lam([elem(cols)], lambda c: dot(r, c), ["c"])),
                                                          (cols,)), ["r"])), (rows,))


def _epilogue(call: FunCall, p: Param, q: Param, body: Expr, red: FunCall, x: Expr, y: Expr,
              product: Expr) -> Node | None:
    """`map(P => map(Q => body[red := Q.1, p := P.0, q := Q.0]) << zip(y[p := P.0], P.1)) << zip(x, product)`,
    each zip left out where the epilogue does not read `p` (or `q`); None when it reads `p` and `x`
    computes (it would be computed twice: by the product and by the epilogue)."""
    path = next(pth for pth, m in walk(body) if m is red)
    marker = Param(type_of(red), "t")
    rest = replace_at(body, path, marker)
    uses_p, uses_q = mentions(rest, [p]) or mentions(y, [p]), mentions(rest, [q])
    if uses_p and not is_view(x):
        return None
    rows = FunCall(Zip(2), (x, product)) if uses_p else product

    def per_row(big_p: Param) -> Expr:
        row_p, t_row = (FunCall(Get(0), (big_p,)), FunCall(Get(1), (big_p,))) if uses_p else (None, big_p)
        ys = FunCall(Zip(2), (substitute(y, {p.id: cast(FunCall, row_p)}) if uses_p else y, t_row)) if uses_q else t_row

        def per_out(big_q: Param) -> Expr:
            t, env = (FunCall(Get(1), (big_q,)), {q.id: FunCall(Get(0), (big_q,))}) if uses_q else (big_q, {})
            if uses_p:
                env[p.id] = cast(FunCall, row_p)
            return substitute(rest, {marker.id: t, **env})

        return FunCall(Map(lam([elem(ys)], per_out, ["q"])), (ys,))

    return FunCall(Map(lam([elem(rows)], per_row, ["p"]), **meta(call.f)), (rows,), **meta(call))


def as_kernel(epilogue: FunCall) -> FunCall:
    """`ocl_kernel((t, ..) => f(t)) << (rows, ..)` for the epilogue `f << rows`: its own kernel, after
    the product's kernels, reading the product and the other arrays it uses as parameters."""
    f, rows = epilogue.f, epilogue.args[0]
    free: dict[int, Param] = {}
    bound = bound_ids(f)
    for _, m in walk(f):
        if isinstance(m, Param) and m.id not in bound:
            free.setdefault(m.id, m)
    outer = sorted(free.values(), key=lambda m: m.id)
    ps = (Param(type_of(rows), "t"), *(Param(m.ptype, m.name) for m in outer))
    body = FunCall(substitute(f, {m.id: q for m, q in zip(outer, ps[1:])}), (ps[0],), **meta(epilogue))
    return FunCall(OclKernel(Lambda(ps, body)), (rows, *outer), loc=epilogue.loc)


# ------------------------------------------------------------------------------- fused into the blocks


@dataclass(frozen=True)
class Leaf:
    """A value the epilogue reads besides the product: a scalar free of the output's indices
    (`alpha`), or an input array read at the output's row (`kind` "row", [M]), column ("col", [N])
    or both ("both", [M][N]): `value` is the scalar or the array."""

    kind: str
    value: Node


@dataclass(frozen=True)
class Fusable:
    """A product nest with an element-wise epilogue that `block_nest` applies to its accumulators:
    `fun` is `(t, l1, .., lk) => ..` (the epilogue of the product `t` and the leaves' values, made of
    user-function calls and literals only: it is vectorised as a whole), `leaves` their values."""

    product: FunCall
    fun: Lambda
    leaves: tuple[Leaf, ...]


def fusable(call: Node) -> Fusable | str:
    """`call` (`map(p => map(q => h(.., reduce(..) << zip(u(p), v(q)), ..)) << Y(p)) << X`, see the
    module) as its product and an epilogue the blocks can apply before they store, or why not:
    the epilogue must be user-function calls over the product, literals, scalars free of `p` and
    `q`, and elements of input arrays at the output's row and/or column (sgemm's `C[p][q]`, a
    bias `b[q]`), each array an input itself once its zips are looked through."""
    found = _nest(call)
    if isinstance(found, str):
        return found
    p, q, body, x, y, red, rows, cols = found
    t = Param(type_of(red), "t")
    path = next(pth for pth, m in walk(body) if m is red)
    leaves: list[Leaf] = []
    params: list[Param] = []

    def leaf(e: Expr) -> Expr | str:
        if e is t or (isinstance(e, Literal) and isinstance(e.ltype, ScalarType)):
            return e
        if isinstance(e, FunCall) and isinstance(e.f, UserFun):
            args = [leaf(a) for a in e.args]
            bad = next((a for a in args if isinstance(a, str)), None)
            return bad if bad is not None else FunCall(e.f, tuple(cast(list[Expr], args)), **meta(e))
        if not isinstance(type_of(e), ScalarType):
            return f"the epilogue reads {e}, not a scalar"
        uses_q = mentions(e, [q])
        uses_p = mentions(e, [p]) or (uses_q and mentions(y, [p]))  # q ranges over a row's zip: both
        kind = {(False, False): "scalar", (True, False): "row", (False, True): "col", (True, True): "both"}[
            (uses_p, uses_q)]
        value: Node
        if kind == "scalar":
            value = e
        elif kind == "row":
            value = simplified(FunCall(Map(Lambda((p,), e)), (x,)))
        elif kind == "col":
            value = simplified(FunCall(Map(Lambda((q,), e)), (y,)))
        else:
            value = simplified(FunCall(Map(Lambda((p,), FunCall(Map(Lambda((q,), e)), (y,)))), (x,)))
        if not isinstance(value, Param):
            return f"the epilogue reads {e}: not an input's element at the output's row or column"
        for lf, prm in zip(leaves, params):
            if lf == Leaf(kind, value):
                return prm
        leaves.append(Leaf(kind, value))
        params.append(Param(type_of(e), f"e{len(params)}"))
        return params[-1]

    rest = leaf(replace_at(body, path, t))
    if isinstance(rest, str):
        return rest
    if mentions(rest, [p, q]):
        return "the epilogue uses the row or column other than through its leaves"
    product = _product(red, rows, cols)
    return Fusable(product, Lambda((t, *params), rest), tuple(leaves))


def simplified(e: Node) -> Node:
    """`e` with `map(x => get(i) << x) << zip(a0, ..)` read as `ai` and `map(x => x) << a` as `a`,
    inside lambdas too (what an epilogue's reads of zipped inputs reduce to)."""
    e = with_children(e, tuple(simplified(c) for c in children(e)))
    m = match_shape(MAP, e)
    if m is None or not (isinstance(m["f"], Lambda) and len(m["f"].params) == 1):
        return e
    arr: Node = m["x"]
    x, body = m["f"].params[0], m["f"].body
    if body == x:
        return arr
    got, zipped = match_shape(GET, body), match_shape(ZIP, arr)
    if got is not None and got["x"] == x and zipped is not None:
        return cast(Node, zipped["xs"][got["i"]])
    return e
