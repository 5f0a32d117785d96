"""The register-blocking rewrite point `block_nest` for nested map-reduce (matmul, conv, batched
dot products), used by `auto_points`.

    block_nest(map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb)) << B)) << A
        ->  join << map(as => map(join) << transpose << map(bs => block(as, bs)) << split(BN) << B')
            << split(BM) << A'
    block(as, bs) = to_global(map_seq(map_seq(post)))
                    << reduce_seq((acc, ab) => map_seq(ra => map_seq(c => F(c.0, G(ra.1, c.1)))
                                                       << zip(ra.0, ab.1)) << zip(acc, ab.0),
                                  value(<z>W, [[<S>W]BN]BM))
                    << zip(transpose << map(as_vector(W)) << as, transpose << map(as_vector(W)) << bs)
        (A : [[T]K]M, B : [[U]K]N, `g` a user function of the pair, F = vectorise(f, W),
        G = vectorise(g, W), post = the lane sum when W > 1, else `id`)

Two-level tiling of the output: the two block maps are left high-level, so the mapping solver
and the tuner choose how blocks go to work-groups and work-items (the launch sizes are the
work-group tile); each work-item computes a BM x BN block of outputs in registers (a private
accumulator: no global `tmp`), reading BM rows of A and BN rows of B as vectors of W lanes
along the reduced dimension, each loaded value reused BN (or BM) times.

Layout: when A or B is `transpose << X` (a strided read of the reduced dimension), the
structural parameter `layout="copy"` materialises the transposed array first, in its own
kernel (`ocl_kernel(split << map(to_global(id)) << join << transpose) << X`), so that the
block reads contiguous rows (`"keep"`: read through the transposed view).

Structural parameters: `rows` (BM), `cols` (BN), `width` (W), `layout` ("copy", "keep").
No tuning variables: the blocks are structural, the constraint space of the result decides the
mapping and launch. The rewrite refuses (and the point is skipped) when a size is not divisible,
`f` is not associative with neutral `z`, or W > 1 for an `f` other than `add`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from lift.arith import Cst, as_arith
from lift.ir import nodes as n
from lift.ir.build import elaborate
from lift.ir.nodes import FunCall, FunDecl, Lambda, Literal, Param, UserFun, node
from lift.rules.reduce import builtin, is_monoid
from lift.rules.terms import eta, lam
from lift.rules.vector import VECTOR_SCALARS
from lift.typecheck import type_of
from lift.types import ArrayType, TupleType, VectorType
from lift.userfun.builtins import id as copy

from .chunks import _zip_fun, lane_sum
from .nested import _nest, _reduction
from .point import Nested, RewritePoint, constructor

LAYOUTS = ("copy", "keep")
BLOCKS = (4, 2, 8, 1)
WIDTHS = (8, 16, 4, 1)


def nest_parts(call: Any) -> tuple[Lambda, Any, Any, Any, Any, Any] | str:
    """`(outer lambda, A, B, reduce call, f, user function g)` of a map-map-reduce nest, or why not."""
    found = _nest(call)
    if isinstance(found, str):
        return found
    fa, a, h, b = found
    red = _reduction(h, fa.params[0])
    if isinstance(red, str):
        return red
    r_call, xs = red
    f, z = r_call.f.f, r_call.args[0]
    if not is_monoid(f, z) or not isinstance(z, Literal):
        return f"{f} is not a known associative operator with a constant neutral {z}"
    g = r_call.args[1].f.f if r_call.args[1] is not xs else None
    found_g = _zip_fun(g, xs)
    if found_g is None or not isinstance(found_g[0], UserFun) or len(found_g[0].in_types) != 2:
        return "the reduced elements are not a scalar user function of the pair (map(g) << zip(ra, rb))"
    return fa, a, b, r_call, f, found_g[0]


def _rows(x: Any) -> tuple[Any, Any] | None:
    """`(K, N)` for an array of rows `[[T]K]N` of scalars, else None."""
    t = type_of(x)
    if isinstance(t, ArrayType) and isinstance(t.elem, ArrayType) and t.elem.elem in VECTOR_SCALARS:
        return t.elem.size, t.size
    return None


def _divides(k: int, size: Any) -> bool:
    """False only when `size` is a constant that `k` does not divide (a symbolic size becomes a
    size condition of the program, checked when it is called)."""
    s = as_arith(size)
    return k == 1 or not isinstance(s, Cst) or int(s.value) % k == 0


def copied(x: Any) -> Any:
    """`transpose << y` materialised in its own kernel (contiguous rows), else `x` itself."""
    if not (isinstance(x, FunCall) and isinstance(x.f, n.Transpose)):
        return x
    inner = type_of(x.args[0])
    q = Param(inner, "t")
    cols = inner.size  # type: ignore[union-attr]  # the length of a row of the transposed array
    flat = FunCall(n.Join(), (FunCall(n.Transpose(), (q,)),))
    ident = elaborate(copy, [inner.elem.elem])  # type: ignore[union-attr]
    body = FunCall(n.Split(cols), (FunCall(n.Map(n.ToGlobal(ident)), (flat,)),))
    return FunCall(n.OclKernel(Lambda((q,), body)), (x.args[0],))


def block(rows_a: Param, rows_b: Param, f: FunDecl, g: UserFun, z: Literal, bm: int, bn: int, w: int) -> Any:
    """The BM x BN outputs of `rows_a` x `rows_b` in a private accumulator (see the module)."""
    s_t = g.out_type if builtin(f) is None else eta(f).in_types[0]  # type: ignore[union-attr]

    def vec(x: Param) -> Any:
        rows = x if w == 1 else FunCall(n.Map(n.AsVector(w)), (x,))
        return FunCall(n.Transpose(), (rows,))

    ff = eta(f)
    big_f = n.Vectorise(ff, w) if w > 1 else ff
    big_g = n.Vectorise(g, w) if w > 1 else g
    lane = VectorType(s_t, w) if w > 1 else s_t
    ta, tb = (VectorType(t.elem.elem, w) if w > 1 else t.elem.elem for t in (rows_a.ptype, rows_b.ptype))
    acc_t = ArrayType(ArrayType(lane, Cst(bn)), Cst(bm))
    pair_t = TupleType((ArrayType(ta, Cst(bm)), ArrayType(tb, Cst(bn))))

    def step(acc: Param, ab: Param) -> Any:
        def per_row(ra: Param) -> Any:
            def per_col(c: Param) -> Any:
                prod = FunCall(big_g, (FunCall(n.Get(1), (ra,)), FunCall(n.Get(1), (c,))))
                return FunCall(big_f, (FunCall(n.Get(0), (c,)), prod))

            cols = FunCall(n.Zip(2), (FunCall(n.Get(0), (ra,)), FunCall(n.Get(1), (ab,))))
            return FunCall(n.MapSeq(lam([TupleType((lane, tb))], per_col, ["c"])), (cols,))

        rows = FunCall(n.Zip(2), (acc, FunCall(n.Get(0), (ab,))))
        return FunCall(n.MapSeq(lam([TupleType((ArrayType(lane, Cst(bn)), ta))], per_row, ["ra"])), (rows,))

    op = lam([acc_t, pair_t], step, ["acc", "ab"])
    init = Literal(z.value, acc_t)
    acc = FunCall(n.ReduceSeq(op), (init, FunCall(n.Zip(2), (vec(rows_a), vec(rows_b)))))
    post = lane_sum(s_t, w) if w > 1 else elaborate(copy, [s_t])
    return FunCall(n.ToGlobal(n.MapSeq(n.MapSeq(post))), (acc,))


@node
class BlockNest(RewritePoint):
    """`block_nest(map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb)) << B))`: BM x BN
    register blocks of the output with vectors of W lanes (see the module)."""

    f: FunDecl
    rows: Any = None
    cols: Any = None
    width: Any = None
    layout: Any = None
    kind: ClassVar[str] = "block_nest"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"rows": BLOCKS, "cols": BLOCKS, "width": WIDTHS, "layout": LAYOUTS}
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        parts = nest_parts(call)
        if isinstance(parts, str):
            return parts
        fa, a, b, r_call, f, g = parts
        bm, bn, w = (int(params.get(k) or getattr(self, k) or 1) for k in ("rows", "cols", "width"))
        layout = params.get("layout") or self.layout or "copy"
        if layout not in LAYOUTS:
            return f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}"
        if w > 1 and builtin(f) != "add":
            return f"width {w} needs the operator add (lane sums), got {f}"
        ra_dims, rb_dims = _rows(a), _rows(b)
        if ra_dims is None or rb_dims is None:
            return "A and B must be arrays of rows of scalars"
        for k, size, what in ((bm, ra_dims[1], "rows"), (bn, rb_dims[1], "cols"), (w, ra_dims[0], "width")):
            if not _divides(k, size):
                return f"{what} {k} does not divide {size}"
        staged = layout == "copy" and (copied(a) is not a or copied(b) is not b)
        if staged:  # the copies are kernels: the blocks are one too, reading them as arguments
            pa, pb = Param(type_of(a), "ta"), Param(type_of(b), "tb")
            args = (copied(a), copied(b))
            body = self.blocks(pa, pb, call, fa, r_call, f, g, nested, (bm, bn, w))
            return FunCall(n.OclKernel(Lambda((pa, pb), body)), args)
        return self.blocks(a, b, call, fa, r_call, f, g, nested, (bm, bn, w))

    def blocks(self, a: Any, b: Any, call: Any, fa: Lambda, r_call: Any, f: FunDecl, g: UserFun, nested: Nested,
               sizes: tuple[int, int, int]) -> Any:
        """The blocked nest over `a` and `b` (arrays of rows)."""
        bm, bn, w = sizes
        at, bt = type_of(a), type_of(b)
        blk_a = Param(ArrayType(at.elem, Cst(bm)), "as")  # type: ignore[union-attr]
        blk_b = Param(ArrayType(bt.elem, Cst(bn)), "bs")  # type: ignore[union-attr]
        inner = block(blk_a, blk_b, f, g, r_call.args[0], bm, bn, w)
        over_b = FunCall(nested(n.Map(Lambda((blk_b,), inner), label=fa.body.f.label)),
                         (FunCall(n.Split(Cst(bn)), (b,)),))
        row = FunCall(n.Map(n.Join()), (FunCall(n.Transpose(), (over_b,)),))
        over_a = FunCall(n.Map(Lambda((blk_a,), row), label=call.f.label, loc=call.f.loc),
                         (FunCall(n.Split(Cst(bm)), (a,)),))
        return FunCall(n.Join(), (over_a,))


def space(point: BlockNest, sizes: Mapping[str, int]) -> dict[str, tuple[Any, ...]]:
    """The structural choices of an automatic `block_nest` point for input `sizes`: blocks and
    widths that divide the sizes (1 where a size is unknown), `copy` first when it changes a layout."""
    from lift.arith import evaluate

    parts = nest_parts(point.f.body) if isinstance(point.f, Lambda) else "not a lambda"  # type: ignore[attr-defined]
    if isinstance(parts, str):
        return {}
    _, a, b, _, f, _ = parts

    def known(size: Any) -> int | None:
        try:
            return int(evaluate(size, dict(sizes)))
        except Exception:  # noqa: BLE001 - symbolic
            return None

    (ka, m), (_, nn) = _rows(a) or (1, 1), _rows(b) or (1, 1)
    def fits(doms: tuple[int, ...], size: Any) -> tuple[int, ...]:
        v = known(size)
        return tuple(d for d in doms if v is not None and v % d == 0) or (1,)

    widths = fits(WIDTHS, ka) if builtin(f) == "add" else (1,)
    strided = any(isinstance(x, FunCall) and isinstance(x.f, n.Transpose) for x in (a, b))
    return {"rows": fits(BLOCKS, m), "cols": fits(BLOCKS, nn), "width": widths,
            "layout": LAYOUTS if strided else ("keep",)}


block_nest = constructor(BlockNest, "block_nest")

__all__ = ["BlockNest", "block_nest", "nest_parts", "copied", "LAYOUTS", "BLOCKS", "WIDTHS"]
