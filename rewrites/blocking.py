"""The register-blocking rewrite point `register_block` (thesis 6.2.5: abTile's tiles with
interchangeReduce's accumulator sunk under both maps, privatised, the reduced dimension
vectorised; the shape of the hand-written matmul and conv kernels of
shared/notes/pocl-performance.md).

    register_block(map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb)) << B)) << A
      ->  join << map(ba => map(join) << transpose << map(bb =>
              map(map(lane_sum)) << reduce_seq((acc, q) =>
                  map(ar => map(cb => vf(cb.0, vg(ar.1, cb.1))) << zip(ar.0, q.1)) << zip(acc, q.0),
                  value(<z>w, [[<S>w]RB]RA))
              << zip(transpose << map(as_vector(w)) << ba, transpose << map(as_vector(w)) << bb))
          << split(RB) << B) << split(RA) << A
      (A : [[T]K]N, B : [[U]K]M; vf, vg: f and g on vectors of w lanes; width 1: no vectors, no lane_sum)

Each block of RA rows of A and RB rows of B is computed by one sequential reduction over K
whose accumulator, RA x RB vectors, lives in private memory (registers): a loaded vector
of A is used RB times, one of B RA times, and K is read `w` elements at a time (aligned
vector loads when the view proves alignment). Structural parameters, each an upper bound
(the largest value not above it that divides the size is used, so a default fits every
shape; 1 always does): `rows` (RA), `cols` (RB), `width` (w; 2, 4, 8, 16 or 1). A width
above 1 needs `f` to be `add` (the lanes are summed at the end) and `g` a scalar user
function of two arguments; width 1 keeps `f` (any associative operator with neutral `z`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

from lift.arith import Arith, as_arith, prove_divides
from lift.ir import nodes as n
from lift.ir import patterns as p
from lift.ir.nodes import FunCall, FunDecl, Lambda, Literal, UserFun, node
from lift.rules.reduce import is_monoid
from lift.rules.terms import call as apply_fun
from lift.rules.terms import eta, lam, mentions
from lift.rules.vector import VECTOR_SCALARS, WIDTHS
from lift.typecheck import type_of
from lift.types import ArrayType, TupleType, VectorType
from lift.userfun.compose import fused
from lift.userfun.facts import pair_call, sums

from .chunks import lane_sum
from .nested import map_map_nest, zip_reduction
from .point import Nested, RewritePoint, constructor
from .shapes import MAP, REDUCE, ZIP, match_shape

# domains ordered by preference: 2 x 4 accumulators of 8 lanes fill half of a 16-register vector
# file (AVX2) and leave the rest to the loaded operands (4 x 4 spilled: ~1.5x slower on the conv)
ROWS, COLS, BLOCK_WIDTHS = (2, 4, 8, 1), (4, 8, 2, 1), (8, 4, 16, 1)


def fitting(bound: int, size: Arith) -> int:
    """The largest `d <= bound` that provably divides `size` (1 always does)."""
    return next(d for d in range(max(int(bound), 1), 0, -1) if prove_divides(d, as_arith(size)))


def _pair_fun(g: FunDecl | None) -> UserFun | None:
    """`uf` when `g` is a scalar user function of two arguments or `q => uf(q.0, q.1)`."""
    if g is None:
        return None
    g = eta(g)
    if isinstance(g, UserFun):
        return g if len(g.in_types) == 2 else None
    return pair_call(g)


@node
class RegisterBlock(RewritePoint):
    """`register_block(map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb)) << B),
    rows=None, cols=None, width=None)`: RA x RB results per sequential reduction, accumulated
    in private vectors of `width` lanes."""

    f: FunDecl
    rows: int | None = None
    cols: int | None = None
    width: int | None = None
    kind: ClassVar[str] = "register_block"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"rows": ROWS, "cols": COLS, "width": BLOCK_WIDTHS}
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        found = map_map_nest(call)
        if isinstance(found, str):
            return found
        fa, a, h, b = found
        red = zip_reduction(h, fa.params[0])
        swapped = isinstance(red, str) and _swapped(h, fa.params[0])
        if swapped:
            red = (cast(Any, eta(h)).body, None)
        if isinstance(red, str):
            return red
        r_call, _ = red
        f, z, xs = r_call.f.f, r_call.args[0], r_call.args[1]
        g = mapped["f"] if (mapped := match_shape(MAP, xs)) is not None else None
        if not isinstance(z, Literal) or not is_monoid(f, z):
            return f"{f} is not a known associative operator with the constant neutral {z}"
        elems = fa.params + cast(Any, eta(h)).params
        if mentions(f, elems) or (g is not None and mentions(g, elems)):
            return "the reduction's functions use the mapped elements (only zip(ra, rb) may)"
        at, bt = type_of(a), type_of(b)
        if not (isinstance(at, ArrayType) and isinstance(bt, ArrayType) and isinstance(at.elem, ArrayType)
                and isinstance(bt.elem, ArrayType)):
            return f"expects A : [[T]K]N and B : [[U]K]M, got {at} and {bt}"
        for k, dom in (("rows", ROWS), ("cols", COLS), ("width", BLOCK_WIDTHS)):
            v = params.get(k, getattr(self, k))
            if v is not None and (not isinstance(v, int) or v < 1 or (k == "width" and v not in WIDTHS + (1,))):
                return f"{k}={v!r} is not one of {dom} (or a positive block size)"
        ra = fitting(params.get("rows") or self.rows or 1, at.size)
        rb = fitting(params.get("cols") or self.cols or 1, bt.size)
        w = _width(params.get("width") or self.width or 1, f, g, at, bt)
        if isinstance(w, str):
            return w
        return _blocked(a, b, f, z, g, ra, rb, w, swapped)


def _width(bound: int, f: FunDecl, g: FunDecl | None, at: ArrayType, bt: ArrayType) -> int | str:
    """The vector width: the widest of `WIDTHS` (or 1) not above `bound` dividing K, when the
    functions allow vectors; 1 otherwise."""
    if bound == 1:
        return 1
    if not sums(f) or _pair_fun(g) is None:
        return 1
    if cast(ArrayType, at.elem).elem not in VECTOR_SCALARS or cast(ArrayType, bt.elem).elem not in VECTOR_SCALARS:
        return 1
    k = cast(ArrayType, at.elem).size
    fits = [w for w in sorted(WIDTHS, reverse=True) if w <= bound and prove_divides(w, k)
            and prove_divides(w, cast(ArrayType, bt.elem).size)]
    return fits[0] if fits else 1


def update(f: FunDecl, g: UserFun, w: int, acc: Any, x: Any, y: Any) -> Any:
    """`f(acc, g(x, y))` on `w` lanes (w > 1: vectorised), as one fused user function where both
    bodies are C expressions (lift/userfun/compose.py: the OpenCL compiler contracts a multiply-add
    only within one expression)."""
    ff = eta(f)
    one = fused(ff, g, 1) if isinstance(ff, UserFun) else None
    if one is not None:
        return FunCall(n.Vectorise(one, w) if w > 1 else one, (acc, x, y))
    big_f, big_g = (n.Vectorise(ff, w), n.Vectorise(g, w)) if w > 1 else (ff, g)
    return FunCall(big_f, (acc, FunCall(big_g, (x, y))))


def _swapped(h: FunDecl, ra: Any) -> bool:
    """Whether `h` is `rb => reduce(f, z) << [map(g) <<] zip(rb, ra)` (the arrays the other way round)."""
    h = eta(h)
    red = match_shape(REDUCE, h.body) if isinstance(h, Lambda) and len(h.params) == 1 else None
    if not isinstance(h, Lambda) or red is None:
        return False
    xs = red["xs"]
    if (mapped := match_shape(MAP, xs)) is not None:
        xs = mapped["x"]
    zipped = match_shape(ZIP, xs)
    return zipped is not None and zipped["xs"] == (h.params[0], ra)


def _blocked(a: Any, b: Any, f: FunDecl, z: Literal, g: FunDecl | None, ra: int, rb: int, w: int,
             swapped: bool = False) -> Any:
    """The blocked nest; `swapped`: the reduction zips (rb, ra), so g takes B's element first."""
    at, bt = cast(Any, type_of(a)), cast(Any, type_of(b))
    ea, eb = at.elem.elem, bt.elem.elem
    s_t = cast(Any, type_of(z))
    if w > 1:
        uf = _pair_fun(g)
        ea, eb, acc_t = VectorType(ea, w), VectorType(eb, w), VectorType(s_t, w)

        def step(acc: Any, x: Any, y: Any) -> Any:
            return update(f, cast(UserFun, uf), w, acc, *((y, x) if swapped else (x, y)))
    else:
        acc_t = s_t

        def step(acc: Any, x: Any, y: Any) -> Any:
            pair = FunCall(n.MakeTuple(2), (y, x) if swapped else (x, y))
            return apply_fun(f, [acc, pair if g is None else apply_fun(g, [pair])])

    n_a, n_b = as_arith(ra), as_arith(rb)
    blk_t = ArrayType(ArrayType(acc_t, n_b), n_a)
    col = TupleType((ArrayType(ea, n_a), ArrayType(eb, n_b)))

    def rows_of(x: Any) -> Any:
        return x if w == 1 else p.map(p.as_vector(w)) << x

    def block(ba: Any, bb: Any) -> Any:
        def update(acc: Any, q: Any) -> Any:
            def row(ar: Any) -> Any:
                per = lam([TupleType((acc_t, eb))], lambda cb: step(
                    FunCall(n.Get(0), (cb,)), FunCall(n.Get(1), (ar,)), FunCall(n.Get(1), (cb,))), ["cb"])
                return FunCall(n.Map(per), (p.zip(FunCall(n.Get(0), (ar,)), FunCall(n.Get(1), (q,))),))

            rows_t = TupleType((ArrayType(acc_t, n_b), ea))
            return FunCall(n.Map(lam([rows_t], row, ["ar"])), (p.zip(acc, FunCall(n.Get(0), (q,))),))

        init = Literal(z.value, blk_t)
        cols = p.zip(p.transpose << rows_of(ba), p.transpose << rows_of(bb))
        acc = FunCall(n.ReduceSeq(lam([blk_t, col], update, ["acc", "q"])), (init, cols))
        if w == 1:
            return acc
        return p.map(p.map(lane_sum(s_t, w))) << acc

    tile_a = ArrayType(at.elem, n_a)
    tile_b = ArrayType(bt.elem, n_b)
    per_a = lam([tile_a], lambda ba: p.map(p.join) << (p.transpose << FunCall(
        n.Map(lam([tile_b], lambda bb: block(ba, bb), ["bb"])), (p.split(rb) << b,))), ["ba"])
    return p.join << FunCall(n.Map(per_a), (p.split(ra) << a,))


register_block = constructor(RegisterBlock, "register_block")

__all__ = ["RegisterBlock", "register_block", "fitting", "update"]
