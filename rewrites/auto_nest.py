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

With `along="output"` (the default where it applies: B is `transpose << X`, the nest is
`reduce(add) << map(mult)`), the vectors run along the output instead, as in hand-written CPU
kernels: X's rows are contiguous in the output dimension, so

    join << map(as => map(join) << transpose << map(xs => block_out(as, xs))
                << transpose << map(split(BN*W)) << X) << split(BM) << A
    block_out(as, xs) = map(as_scalar) << to_global(map_seq(map_seq(vectorise(id, W))))
                        << reduce_seq((acc, ab) => map_seq(ra => map_seq(c => c.0 + ra.1 * c.1)
                                                           << zip(ra.0, ab.1)) << zip(acc, ab.0),
                                      value(<0>W, [[<S>W]BN]BM))
                        << zip(transpose << as, map(as_vector(W)) << xs)

(BM x BN*W outputs per work-item, A's scalars broadcast into W lanes: no transposed copy and no
lane sums). Where B's columns are not contiguous, "output" falls back to the reduced form.
Structural parameter `pack` (the output form; "b" first): X's BN*W-column strips (and with "ab"
A's BM-row blocks too) copied into contiguous panels by kernels of their own (rewrites/packing.py:
`pack_b`, `pack_a`), the blocks then read `xs` (and `as`) from the panels, one sequential stream each
("a": A's only, "none": read in place). In place, with power-of-two row strides, every step of k
lands in a new page at the same offset (cache-set and TLB conflicts): on PoCL/AVX2 the packed
4 x 2 float8 blocks ran ~1.5-2x the unpacked ones and the hand-written kernels (matmul 1024^3).
A block reads its BM rows of A in place as BM sequential streams, so A's copy costs more than it
saves there: pack "b" 29.6-29.9 ms against "ab" 30.4-30.9 (Zen 1, interleaved, 1 x 64 groups).

Two-level tiling of the output: the two block maps are left high-level, so the mapping solver
and the tuner choose how blocks go to work-groups and work-items (the launch sizes are the
work-group tile); each work-item computes a block of outputs in registers (a private
accumulator: no global `tmp`), each loaded value reused BN (or BM) times.

Layout (the reduced form): when A or B is `transpose << X` (a strided read of the reduced
dimension), `layout="copy"` materialises the transposed array first, in its own kernel
(`ocl_kernel(split << map(to_global(id)) << join << transpose) << X`), so that the block reads
contiguous rows (`"keep"`: read through the transposed view). Where A's rows are windows of a
padded input (conv), `layout="pad"` copies the padded input once and the blocks read their windows
from it directly (rewrites/auto_conv.py); `"gather"` copies the windows themselves (im2col).

Structural parameters: `rows` (BM), `cols` (BN), `width` (W), `layout` ("copy", "keep", "gather", "pad"),
`along` ("output", "reduced"), `pack` ("b", "ab", "a", "none"; only where kernels may be added; not with
"pad"), with an epilogue `epilogue` ("fused", "kernel") and `tail` ("exact", "pad"); their first
values are the default choice (4 x 2 blocks of float8: 8 accumulators, 2 loaded vectors and a
broadcast in the 16 AVX2 vector registers; 8 x 2 spills; where float8 x 2 does not divide N, the
output form's rows, cols and width are chosen together by `_first_block`: 2 x 5 float8 for
N = 1000 rather than 4 x 2 float4 or 8 x 1 float8). A nest inside a map (tbmm's batch) cannot add
kernels: it gets the reduced form, both operands read along K; so does, first, A B^T with both
operands given as rows and at most `SMALL_M` output rows (a packed copy of B would be reused by too
few rows), its epilogue, if any, a kernel of its own (`relu(X W^T + b)`, MLP layers). A nest whose
epilogue is a kernel of its own (sgemm's `beta C`) may use blocks wider than N divides (`tail` "pad":
B's panels padded with zeros, the product's padded columns dropped as the epilogue reads them):
4 x 3 float8 at N = 1024 (15.5 against 18.1 ms for 4 x 2 on PoCL/Zen 3, numpy 17.7). The register budget and the
native width are the device's (`Registers.of(device)`, from `lift.devices.Device.vector_bits` and
`vector_registers`; AVX2's 16 registers of float8 by default): on an AVX-512 target the first
choice is float16 vectors in 32 registers (4 x 4 float16 at N = 1024: 9.5 ms against 10.5 for
4 x 2 float8 on Debian's PoCL 3.1 targeting skylake-avx512 on a Zen 4, numpy 10.7; 8 x 2 and
4 x 2 float16 within 1% of 4 x 4; interleaved medians). No tuning variables:
the blocks are structural, the constraint space of the result decides the mapping and launch.
The rewrite refuses (and the point is skipped) when a size is not divisible, `f` is not
associative with neutral `z`, or W > 1 for an `f` other than `add`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from lift.arith import Cst, as_arith, evaluate
from lift.devices import Device
from lift.ir import nodes as n
from lift.ir.build import elaborate
from lift.ir.nodes import FunCall, FunDecl, Lambda, Literal, Param, UserFun, node
from lift.ir.paths import walk
from lift.rules.reduce import is_monoid
from lift.rules.terms import eta, free_ids, lam, substitute
from lift.rules.vector import VECTOR_SCALARS
from lift.typecheck import type_of
from lift.types import ArrayType, TupleType, VectorType
from lift.userfun import user_fun
from lift.userfun.builtins import id as copy
from lift.userfun.ctypes import c_type
from lift.userfun.facts import operator, sums

from .auto_conv import chunk_lengths, offered, padded_blocks
from .blocking import update
from .chunks import _zip_fun, lane_sum, safe_widths
from .epilogue import Fusable, as_kernel, fusable, split_epilogue
from .nested import nest_reduction
from .packing import pack_a, pack_b
from .point import Nested, RewritePoint, constructor

LAYOUTS = ("copy", "keep", "gather", "pad")  # "pad": rewrites/auto_conv.py
# first values: the default choice (4 x 2 blocks of float8 along the output, packed); the blocks of
# 3, 5 and 6 are for sizes that powers of two do not divide (N = 1000: 2 x 5 blocks of float8)
ROWS = (4, 8, 2, 1, 6, 3, 5)
COLS = (2, 1, 4, 8, 5, 3, 6)
WIDTHS = (8, 16, 4, 1)
ALONG = ("output", "reduced")
PACKS = ("b", "ab", "a", "none")  # operands of the output form packed into panels (rewrites/packing.py)
EPILOGUES = ("fused", "kernel")  # a nest with an epilogue: applied to the accumulators, or a kernel of its own
TAILS = ("exact", "pad")  # "pad": N padded to the output form's block in B's panels (an epilogue kernel of its own)
PAD_WASTE = Fraction(1, 32)  # at most this share of padded columns in a default block


def epilogues(found: Fusable) -> tuple[str, ...]:
    """The `epilogue` choices of a nest with the epilogue `found`, the default first: fused, unless
    the epilogue reads a whole matrix (sgemm's `beta C`): a block's reads of C's rows at its end are
    scattered (a work-group's work-items take rows BM apart), where a kernel of its own streams
    them; sgemm 1024^3 on PoCL/Zen 3, interleaved, four runs: fused 18.1-23.2 ms, split 17.7-23.2
    (kernel-variant faster in three), gemm_bias_relu and mlp3 (a bias read per column) equal within
    noise, with fewer kernels fused."""
    return EPILOGUES[::-1] if any(leaf.kind == "both" for leaf in found.leaves) else EPILOGUES


def nest_parts(call: Any) -> tuple[Lambda, Any, Any, Any, Any, Any] | str:
    """`(outer lambda, A, B, reduce call, f, user function g)` of a map-map-reduce nest, or why not."""
    found = nest_reduction(call)
    if isinstance(found, str):
        return found
    fa, a, _, b, r_call, xs = found
    f, z = r_call.f.f, r_call.args[0]
    if not is_monoid(f, z) or not isinstance(z, Literal):
        return f"{f} is not a known associative operator with a constant neutral {z}"
    g = r_call.args[1].f.f if r_call.args[1] is not xs else None
    found_g = _zip_fun(g, xs)
    if found_g is None or not isinstance(found_g[0], UserFun) or len(found_g[0].in_types) != 2:
        return "the reduced elements are not a scalar user function of the pair (map(g) << zip(ra, rb))"
    return fa, a, b, r_call, f, found_g[0]


def _array(t: Any) -> ArrayType:
    """`t` as an array type (the operands of a nest that `nest_parts` accepted are arrays of rows)."""
    if not isinstance(t, ArrayType):
        raise AssertionError(f"block_nest: expected an array, got {t}")
    return t


def _rows(x: Any) -> tuple[Any, Any] | None:
    """`(K, N)` for an array of rows `[[T]K]N` of scalars, else None."""
    t = type_of(x)
    if isinstance(t, ArrayType) and isinstance(t.elem, ArrayType) and t.elem.elem in VECTOR_SCALARS:
        return t.elem.size, t.size
    return None


def _known(size: Any, known: Mapping[str, int]) -> int | None:
    """`size` as an int given the `known` sizes, or None."""
    try:
        return int(evaluate(as_arith(size), dict(known)))
    except Exception:  # noqa: BLE001 - symbolic
        return None


def _divides(k: int, size: Any, known: Mapping[str, int]) -> bool:
    """False only when `size` (evaluated with the `known` input sizes) is a constant that `k` does
    not divide (a symbolic size becomes a size condition of the program, checked when called)."""
    v = _known(size, known) if k != 1 else None
    return v is None or v % k == 0


def copied(x: Any) -> Any:
    """`transpose << y` materialised in its own kernel (contiguous rows), else `x` itself."""
    if not (isinstance(x, FunCall) and isinstance(x.f, n.Transpose)):
        return x
    inner = _array(type_of(x.args[0]))
    q = Param(inner, "t")
    cols = inner.size  # the length of a row of the transposed array
    flat = FunCall(n.Join(), (FunCall(n.Transpose(), (q,)),))
    ident = elaborate(copy, [_array(inner.elem).elem])
    body = FunCall(n.Split(cols), (FunCall(n.Map(n.ToGlobal(ident)), (flat,)),))
    return FunCall(n.OclKernel(Lambda((q,), body)), (x.args[0],))


def gathered(x: Any) -> Any:
    """`x` (an array of rows) materialised in its own kernel when it is a view of something (conv's
    windows: im2col), else `x` itself."""
    if isinstance(x, Param):
        return x
    t = _array(type_of(x))
    q = Param(t, "v")
    rows = FunCall(n.Map(n.Map(n.ToGlobal(elaborate(copy, [_array(t.elem).elem])))), (q,))
    return FunCall(n.OclKernel(Lambda((q,), rows)), (x,))


def block(rows_a: Param, rows_b: Param, f: FunDecl, g: UserFun, z: Literal, bm: int, bn: int, w: int) -> Any:
    """The BM x BN outputs of `rows_a` x `rows_b` in a private accumulator (see the module)."""
    s_t = g.out_type if operator(eta(f)) is None else eta(f).in_types[0]  # type: ignore[union-attr]

    def vec(x: Param) -> Any:
        rows = x if w == 1 else FunCall(n.Map(n.AsVector(w)), (x,))
        return FunCall(n.Transpose(), (rows,))

    lane = VectorType(s_t, w) if w > 1 else s_t
    ta, tb = (VectorType(t.elem.elem, w) if w > 1 else t.elem.elem for t in (rows_a.ptype, rows_b.ptype))
    acc_t = ArrayType(ArrayType(lane, Cst(bn)), Cst(bm))
    pair_t = TupleType((ArrayType(ta, Cst(bm)), ArrayType(tb, Cst(bn))))

    def step(acc: Param, ab: Param) -> Any:
        def per_row(ra: Param) -> Any:
            def per_col(c: Param) -> Any:
                return update(f, g, w, FunCall(n.Get(0), (c,)), FunCall(n.Get(1), (ra,)), FunCall(n.Get(1), (c,)))

            cols = FunCall(n.Zip(2), (FunCall(n.Get(0), (ra,)), FunCall(n.Get(1), (ab,))))
            return FunCall(n.MapSeq(lam([TupleType((lane, tb))], per_col, ["c"])), (cols,))

        rows = FunCall(n.Zip(2), (acc, FunCall(n.Get(0), (ab,))))
        return FunCall(n.MapSeq(lam([TupleType((ArrayType(lane, Cst(bn)), ta))], per_row, ["ra"])), (rows,))

    op = lam([acc_t, pair_t], step, ["acc", "ab"])
    init = Literal(z.value, acc_t)
    acc = FunCall(n.ReduceSeq(op), (init, FunCall(n.Zip(2), (vec(rows_a), vec(rows_b)))))
    post = lane_sum(s_t, w) if w > 1 else elaborate(copy, [s_t])
    return FunCall(n.ToGlobal(n.MapSeq(n.MapSeq(post))), (acc,))


def own_kernel(body: Any, params: tuple[Param, ...] = (), args: tuple[Any, ...] = ()) -> FunCall:
    """`ocl_kernel((params, ..) => body) << (args, ..)`, the parameters `body` uses free besides
    `params` passed as further arguments (in order of their ids)."""
    free, found = free_ids(body) - {p.id for p in params}, {}
    for _, m in walk(body):
        if isinstance(m, Param) and m.id in free:
            found.setdefault(m.id, m)
    outer = sorted(found.values(), key=lambda m: m.id)
    inner = tuple(Param(m.ptype, m.name) for m in outer)
    body = substitute(body, {m.id: q for m, q in zip(outer, inner)})
    return FunCall(n.OclKernel(Lambda((*params, *inner), body)), (*args, *outer))


@functools.cache
def broadcast(t: Any, w: int) -> UserFun:
    """`a => <a, .., a>`: a scalar in all `w` lanes of a vector."""
    return user_fun.c(f"bcast{w}_{c_type(t)}", ["a"], f"return ({c_type(VectorType(t, w))})(a);", [t],
                      VectorType(t, w), py=lambda a: np.full(w, a, dtype=np.asarray(a).dtype))


def block_out(a_cols: Any, cols_x: Param, f: FunDecl, g: UserFun, z: Literal, sizes: tuple[int, int, int],
              epi: BlockEpilogue | None = None) -> Any:
    """BM rows of A read step by step (`a_cols`: [[T]BM]K, `transpose` of the rows or a packed
    panel) times BN * W columns of X ([[U]BN*W]K, rows contiguous): a private [[<S>W]BN]BM
    accumulator along the output dimension, A's scalars broadcast into W lanes; stored as they are, or
    through the epilogue `epi` (`fused_store`)."""
    bm, bn, w = sizes
    t, u = type_of(a_cols).elem.elem, cols_x.ptype.elem.elem  # type: ignore[attr-defined,union-attr]
    s_t = eta(f).in_types[0]  # type: ignore[union-attr]
    lane, ub = VectorType(s_t, w), ArrayType(VectorType(u, w), Cst(bn))
    acc_t = ArrayType(ArrayType(lane, Cst(bn)), Cst(bm))
    spread = broadcast(t, w)

    def step(acc: Param, ab: Param) -> Any:
        def per_row(ra: Param) -> Any:
            a = FunCall(spread, (FunCall(n.Get(1), (ra,)),))

            def per_col(c: Param) -> Any:
                return update(f, g, w, FunCall(n.Get(0), (c,)), a, FunCall(n.Get(1), (c,)))

            cols = FunCall(n.Zip(2), (FunCall(n.Get(0), (ra,)), FunCall(n.Get(1), (ab,))))
            return FunCall(n.MapSeq(lam([TupleType((lane, VectorType(u, w)))], per_col, ["c"])), (cols,))

        rows = FunCall(n.Zip(2), (acc, FunCall(n.Get(0), (ab,))))
        return FunCall(n.MapSeq(lam([TupleType((ArrayType(lane, Cst(bn)), t))], per_row, ["ra"])), (rows,))

    op = lam([acc_t, TupleType((ArrayType(t, Cst(bm)), ub))], step, ["acc", "ab"])
    xs = FunCall(n.Zip(2), (a_cols, FunCall(n.Map(n.AsVector(w)), (cols_x,))))
    acc = FunCall(n.ReduceSeq(op), (Literal(z.value, acc_t), xs))
    if epi is None:
        out = FunCall(n.ToGlobal(n.MapSeq(n.MapSeq(n.Vectorise(elaborate(copy, [s_t]), w)))), (acc,))
    else:
        out = fused_store(acc, epi, w)
    return FunCall(n.Map(n.AsScalar()), (out,))  # vector stores, read back as scalars


@dataclass(frozen=True)
class BlockEpilogue:
    """An epilogue (`Fusable`) at one register block: per leaf its kind, its value (a scalar's
    expression), its part of the block's rows (`rows`: [BM] scalars for "row", [BM][BN*W] for
    "both", else None) and of its columns (`cols`: [BN*W] for "col", else None)."""

    fun: Lambda
    kinds: tuple[str, ...]
    values: tuple[Any, ...]
    rows: tuple[Any, ...]
    cols: tuple[Any, ...]


def fused_store(acc: Any, epi: BlockEpilogue, w: int) -> Any:
    """`epi.fun` applied lane-wise to the block's accumulators ([[<S>W]BN]BM) and the leaves, the
    results stored to global memory: one pass over the output, no temporary. The accumulators'
    rows are zipped with the leaves read by row, each row's vectors with the leaves read by
    column; scalars (a leaf's, or a row's) are broadcast into the W lanes."""
    rows, at_row = [acc], {}  # leaf -> its place in a row's tuple
    for j, kind in enumerate(epi.kinds):
        if kind in ("both", "row"):
            at_row[j] = len(rows)
            rows.append(FunCall(n.Map(n.AsVector(w)), (epi.rows[j],)) if kind == "both" else epi.rows[j])

    def per_row(ra: Param) -> Any:
        of_row = _component(ra, len(rows))
        cols, at_col = [of_row(0)], {}  # leaf -> its place in a column's tuple
        for j, kind in enumerate(epi.kinds):
            if kind in ("both", "col"):
                at_col[j] = len(cols)
                cols.append(of_row(at_row[j]) if kind == "both" else FunCall(n.AsVector(w), (epi.cols[j],)))

        def per_col(rc: Param) -> Any:
            of_col = _component(rc, len(cols))
            args = [of_col(0)]
            for j, kind in enumerate(epi.kinds):
                if kind in ("both", "col"):
                    args.append(of_col(at_col[j]))
                else:
                    v = epi.values[j] if kind == "scalar" else of_row(at_row[j])
                    args.append(FunCall(broadcast(type_of(v), w), (v,)))
            return FunCall(n.Vectorise(epi.fun, w), tuple(args))

        return FunCall(n.MapSeq(lam([_elem_of(cols)], per_col, ["rc"])), (_zipped(cols),))

    return FunCall(n.ToGlobal(n.MapSeq(lam([_elem_of(rows)], per_row, ["ra"]))), (_zipped(rows),))


def _zipped(arrays: list[Any]) -> Any:
    """`zip(arrays..)`, or the one array."""
    return FunCall(n.Zip(len(arrays)), tuple(arrays)) if len(arrays) > 1 else arrays[0]


def _elem_of(arrays: list[Any]) -> Any:
    """The element type of `_zipped(arrays)`."""
    elems = tuple(_array(type_of(x)).elem for x in arrays)
    return TupleType(elems) if len(elems) > 1 else elems[0]


def _component(p: Param, count: int) -> Any:
    """`i => get(i) << p` for an element of `count` zipped arrays (`p` itself for one)."""
    return (lambda i: FunCall(n.Get(i), (p,))) if count > 1 else (lambda i: p)


@node
class BlockNest(RewritePoint):
    """`block_nest(map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb)) << B))`: BM x BN
    register blocks of the output with vectors of W lanes (see the module)."""

    f: FunDecl
    rows: Any = None
    cols: Any = None
    width: Any = None
    layout: Any = None
    along: Any = None
    chunk: Any = None  # layout "pad": the reduction's chunk length (rewrites/auto_conv.py)
    known: Any = None  # ((size name, value), ..): the input sizes it was placed for (auto_points)
    kernel: Any = None  # False: inside a map, the copies of layout "copy" cannot be kernels of their own
    pack: Any = None
    epilogue: Any = None  # a nest with an epilogue (rewrites/epilogue.py): "fused" or "kernel"
    tail: Any = None  # a nest with an epilogue: "exact" (blocks divide N) or "pad" (B's panels padded)
    kind: ClassVar[str] = "block_nest"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"rows": ROWS, "cols": COLS, "width": WIDTHS, "layout": LAYOUTS, "along": ALONG, "pack": PACKS}
        found = fusable(self.f.body) if isinstance(self.f, Lambda) else "not a lambda"
        if isinstance(found, Fusable):
            doms["epilogue"], doms["tail"] = epilogues(found), TAILS
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def epilogue_kernel(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        """`call`'s product blocked and its epilogue a kernel of its own (rewrites/epilogue.py), or
        a map over the product's result where the point cannot add kernels."""
        split = split_epilogue(call)
        if split is None:
            return "the epilogue reads the rows of a computed operand: it cannot be split from the product"
        rows = split.args[0]
        product = rows.args[1] if isinstance(rows, FunCall) and isinstance(rows.f, n.Zip) else rows
        blocked = self.rewrite(product, {k: v for k, v in params.items() if k != "epilogue"}, nested, stored=True)
        if isinstance(blocked, str):
            return blocked
        if self.kernel is not False and not any(isinstance(x, n.OclKernel) for _, x in walk(blocked)):
            blocked = own_kernel(blocked)  # the reduced form reads its inputs in place: a kernel of its own
        rows = FunCall(rows.f, (rows.args[0], blocked)) if product is not rows else blocked
        out = FunCall(split.f, (rows,), label=split.label, loc=split.loc)
        return as_kernel(out) if self.kernel is not False else out

    def fixed(self) -> dict[str, Any]:
        return {k: v for k, v in RewritePoint.fixed(self).items() if k not in ("known", "kernel")}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested, stored: bool = False) -> Any:
        """`call` blocked with `params`; `stored`: the product's result is read from memory by a
        kernel of its own (its epilogue's), so its rows may be padded (`tail` "pad")."""
        tail = params.get("tail") or self.tail or "exact"
        if tail not in TAILS:
            return f"tail must be one of {', '.join(TAILS)}, got {tail!r}"
        parts = nest_parts(call)
        epi: Fusable | None = None
        if isinstance(parts, str):
            found = fusable(call)
            if isinstance(found, str):
                return parts
            mode = params.get("epilogue") or self.epilogue or epilogues(found)[0]
            if mode not in EPILOGUES:
                return f"epilogue must be one of {', '.join(EPILOGUES)}, got {mode!r}"
            if mode == "kernel":
                return self.epilogue_kernel(call, params, nested)
            width = int(params.get("width") or self.width or 1)
            if width not in safe_widths([u for _, u in walk(found.fun) if isinstance(u, UserFun)]):
                return f"the epilogue's functions cannot run on vectors of width {width}"
            epi, call = found, found.product
            parts = nest_parts(call)
        if isinstance(parts, str):
            return parts
        if tail == "pad" and not stored:
            return "tail 'pad' truncates the product's padded rows as a kernel of its own reads them: epilogue 'kernel'"
        fa, a, b, r_call, f, g = parts
        bm, bn, w = (int(params.get(k) or getattr(self, k) or 1) for k in ("rows", "cols", "width"))
        layout = params.get("layout") or self.layout or "copy"
        if layout not in LAYOUTS:
            return f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}"
        ra_dims, rb_dims = _rows(a), _rows(b)
        if ra_dims is None or rb_dims is None:
            return "A and B must be arrays of rows of scalars"
        for k, size, what in ((bm, ra_dims[1], "rows"), (bn, rb_dims[1], "cols")):
            if not _divides(k, size, dict(self.known or ())) and not (what == "cols" and tail == "pad"):
                return f"{what} {k} does not divide {size}"
        along = params.get("along") or self.along or "output"
        if along not in ALONG:
            return f"along must be one of {', '.join(ALONG)}, got {along!r}"
        if tail == "pad" and along != "output":
            return "tail 'pad' pads B's panels: along='output'"
        pack = params.get("pack") or self.pack or "none"
        if pack not in PACKS:
            return f"pack must be one of {', '.join(PACKS)}, got {pack!r}"
        if pack != "none" and self.kernel is False:
            return "pack: the panels are copied by kernels of their own, which a point inside a map cannot add"
        if epi is not None and (layout == "pad" or along != "output"):
            return "epilogue 'fused' applies to the output form's blocks (along='output', not layout 'pad')"
        if layout == "pad":  # windows read from a copy of their padded input (rewrites/auto_conv.py)
            return padded_blocks(self, call, parts, (bm, bn, w), along, nested, dict(self.known or ()),
                                 params.get("chunk") or self.chunk, pack)
        if along == "output":  # preferred; where B's columns are not contiguous, the reduced form
            out = self.output(call, a, b, r_call, f, g, (bm, bn, w), layout, pack, epi, tail == "pad")
            if tail == "pad":
                return out
            if epi is not None and self.kernel is not False and not isinstance(out, str) and not (
                    isinstance(out, FunCall) and isinstance(out.f, n.OclKernel)):
                out = own_kernel(out)  # the epilogue's result is read from memory by what follows
            if not isinstance(out, str) or "does not divide" in out or epi is not None:
                return out
        if w > 1 and not sums(f):
            return f"width {w} along the reduced dimension needs an addition (lane sums), got {f}"
        if not _divides(w, ra_dims[0], dict(self.known or ())):
            return f"width {w} does not divide {ra_dims[0]}"
        move = copied if layout == "copy" else gathered if layout == "gather" else None
        staged = move is not None and self.kernel is not False and (move(a) is not a or move(b) is not b)
        if staged:  # the copies are kernels: the blocks are one too, reading them as arguments
            pa, pb = Param(type_of(a), "ta"), Param(type_of(b), "tb")
            args = (move(a), move(b))  # type: ignore[misc]
            body = self.blocks(pa, pb, call, fa, r_call, f, g, nested, (bm, bn, w))
            return FunCall(n.OclKernel(Lambda((pa, pb), body)), args)
        return self.blocks(a, b, call, fa, r_call, f, g, nested, (bm, bn, w))

    def output(self, call: Any, a: Any, b: Any, r_call: Any, f: FunDecl, g: UserFun,
               sizes: tuple[int, int, int], layout: str, pack: str, epi: Fusable | None = None,
               padded: bool = False) -> Any:
        """Blocks with vectors along the output, reading B's columns: `X` for B = `transpose << X`,
        else (with layout "copy") B copied transposed in a kernel of its own; operands packed into
        panels by kernels of their own (`pack`, rewrites/packing.py); or why not. `padded`: X's
        rows padded with zeros to a multiple of the block's columns in B's panels, the product's
        rows truncated to N as they are read (`tail` "pad")."""
        bm, bn, w = sizes
        if w == 1:
            return "along='output' needs a width above 1"
        transposed = isinstance(b, FunCall) and isinstance(b.f, n.Transpose)
        x = b.args[0] if transposed else FunCall(n.Transpose(), (b,))  # X: [[U]N]K
        if not transposed and "b" not in pack and (layout == "keep" or self.kernel is False):
            return "along='output' reads B's columns: B must be transpose << X, or copied (layout 'copy')"
        n_out = _array(_array(type_of(x)).elem).size
        pad = 0
        if padded:
            n_known = _known(n_out, dict(self.known or ()))
            if not (transposed and "b" in pack and n_known is not None and self.kernel is not False):
                return "tail 'pad' pads B's panels: B = transpose << X of known width, packed (pack 'b' or 'ab')"
            pad = -n_known % (bn * w)
        elif not _divides(bn * w, n_out, dict(self.known or ())):
            return f"cols {bn} x width {w} does not divide {n_out}"
        if pack != "none":
            xa = pack_a(a, bm) if "a" in pack else gathered(a) if layout == "gather" else a
            xx = pack_b(x, bn * w, pad) if "b" in pack else x if transposed else copied(x)
        elif transposed:
            if not (layout == "gather" and self.kernel is not False and not isinstance(a, Param)):
                return self.output_blocks(call, a, x, r_call, f, g, sizes, (False, False), epi)
            xa, xx = gathered(a), x
        else:
            xa, xx = gathered(a) if layout == "gather" else a, copied(x)
        pa, px = Param(type_of(xa), "ta"), Param(type_of(xx), "tx")
        body = self.output_blocks(call, pa, px, r_call, f, g, sizes, ("a" in pack, "b" in pack), epi)
        if isinstance(body, str):
            return body
        if epi is not None:  # (never padded: `tail` "pad" needs the epilogue a kernel of its own)
            return own_kernel(body, (pa, px), (xa, xx))  # the epilogue's reads (C, a bias, alpha): arguments too
        blocks = FunCall(n.OclKernel(Lambda((pa, px), body)), (xa, xx))
        return FunCall(n.Map(n.Pad(Cst(0), Cst(-pad), 0)), (blocks,)) if pad else blocks  # padding dropped

    def output_blocks(self, call: Any, a: Any, x: Any, r_call: Any, f: FunDecl, g: UserFun,
                      sizes: tuple[int, int, int], packed: tuple[bool, bool] = (False, False),
                      epi: Fusable | None = None) -> Any:
        """Blocks with vectors along the output: X's rows ([[U]N]K) read as vectors; `packed`: A,
        X given as panels ([[[T]BM]K]M/BM, [[[U]BN*W]K]N/(BN*W); rewrites/packing.py)."""
        bm, bn, w = sizes
        at, xt = _array(type_of(a)), _array(type_of(x))
        x_row = _array(xt.elem)
        if packed[1]:
            blk_x, cols = Param(xt.elem, "xs"), x
        elif not _divides(bn * w, x_row.size, dict(self.known or ())):
            return f"cols {bn} x width {w} does not divide {x_row.size}"
        else:
            blk_x = Param(ArrayType(ArrayType(x_row.elem, Cst(bn * w)), xt.size), "xs")
            cols = FunCall(n.Transpose(), (FunCall(n.Map(n.Split(Cst(bn * w))), (x,)),))
        if packed[0]:
            blk_a, a_cols, a_blocks = Param(at.elem, "as"), None, a
        else:
            blk_a = Param(ArrayType(at.elem, Cst(bm)), "as")
            a_cols, a_blocks = FunCall(n.Transpose(), (blk_a,)), FunCall(n.Split(Cst(bm)), (a,))
        if epi is None:
            inner = block_out(a_cols or blk_a, blk_x, f, g, r_call.args[0], sizes)
            over_x = FunCall(n.Map(Lambda((blk_x,), inner)), (cols,))
            row = FunCall(n.Map(n.Join()), (FunCall(n.Transpose(), (over_x,)),))
            over_a = FunCall(n.Map(Lambda((blk_a,), row), label=call.f.label, loc=call.f.loc), (a_blocks,))
            return FunCall(n.Join(), (over_a,))
        return self.fused_blocks(call, blk_a, a_cols, a_blocks, blk_x, cols, r_call, f, g, sizes, epi)

    def fused_blocks(self, call: Any, blk_a: Param, a_cols: Any, a_blocks: Any, blk_x: Param, cols: Any, r_call: Any,
                     f: FunDecl, g: UserFun, sizes: tuple[int, int, int], epi: Fusable) -> Any:
        """`output_blocks` with the epilogue applied in the blocks: each leaf array split like the
        output (rows in blocks of BM with A's, columns in panels of BN * W with X's) and zipped with
        the operand blocks, so a block reads its own part."""
        bm, bn, w = sizes
        kinds = tuple(leaf.kind for leaf in epi.leaves)
        values = tuple(leaf.value for leaf in epi.leaves)
        by_row = [j for j, k in enumerate(kinds) if k in ("both", "row")]
        by_col = [j for j, k in enumerate(kinds) if k in ("both", "col")]
        a_zip = [a_blocks, *(FunCall(n.Split(Cst(bm)), (values[j],)) for j in by_row)]
        ta = Param(TupleType(tuple(_array(type_of(e)).elem for e in a_zip)), "ta")
        rows_of = {j: FunCall(n.Get(1 + i), (ta,)) for i, j in enumerate(by_row)}  # [BM] or [BM][N]
        x_zip = [cols, *(FunCall(n.Transpose(), (FunCall(n.Map(n.Split(Cst(bn * w))), (rows_of[j],)),))
                         if kinds[j] == "both" else FunCall(n.Split(Cst(bn * w)), (values[j],)) for j in by_col)]
        tx = Param(TupleType(tuple(_array(type_of(e)).elem for e in x_zip)), "tx")
        part = {j: FunCall(n.Get(1 + i), (tx,)) for i, j in enumerate(by_col)}  # [BM][BN*W] or [BN*W]
        blk = BlockEpilogue(epi.fun, kinds, values,
                            tuple(part[j] if k == "both" else rows_of.get(j) for j, k in enumerate(kinds)),
                            tuple(part.get(j) if k == "col" else None for j, k in enumerate(kinds)))
        inner = block_out(a_cols or blk_a, blk_x, f, g, r_call.args[0], sizes, blk)
        inner = substitute(inner, {blk_x.id: FunCall(n.Get(0), (tx,)), blk_a.id: FunCall(n.Get(0), (ta,))})
        over_x = FunCall(n.Map(Lambda((tx,), inner)), (FunCall(n.Zip(len(x_zip)), tuple(x_zip)),))
        row = FunCall(n.Map(n.Join()), (FunCall(n.Transpose(), (over_x,)),))
        over_a = FunCall(n.Map(Lambda((ta,), row), label=call.f.label, loc=call.f.loc),
                         (FunCall(n.Zip(len(a_zip)), tuple(a_zip)),))
        return FunCall(n.Join(), (over_a,))

    def blocks(self, a: Any, b: Any, call: Any, fa: Lambda, r_call: Any, f: FunDecl, g: UserFun, nested: Nested,
               sizes: tuple[int, int, int]) -> Any:
        """The blocked nest over `a` and `b` (arrays of rows)."""
        bm, bn, w = sizes
        at, bt = _array(type_of(a)), _array(type_of(b))
        blk_a = Param(ArrayType(at.elem, Cst(bm)), "as")
        blk_b = Param(ArrayType(bt.elem, Cst(bn)), "bs")
        inner = block(blk_a, blk_b, f, g, r_call.args[0], bm, bn, w)
        over_b = FunCall(nested(n.Map(Lambda((blk_b,), inner), label=fa.body.f.label)),
                         (FunCall(n.Split(Cst(bn)), (b,)),))
        row = FunCall(n.Map(n.Join()), (FunCall(n.Transpose(), (over_b,)),))
        over_a = FunCall(n.Map(Lambda((blk_a,), row), label=call.f.label, loc=call.f.loc),
                         (FunCall(n.Split(Cst(bm)), (a,)),))
        return FunCall(n.Join(), (over_a,))


REGISTERS = 16  # AVX2's vector registers: a block's accumulators, its loaded vectors and a broadcast


@dataclass(frozen=True)
class Registers:
    """The vector registers the blocks' cost model fills: `count` of them, each holding `lanes`
    floats (the device's native vector width, `lift.devices.Device.vector_bits` / 32). The default
    is AVX2's 16 registers of 8 floats; an AVX-512 target has 32 of 16."""

    count: int = REGISTERS
    lanes: int = 8

    @staticmethod
    def of(device: Device | None) -> Registers:
        """The registers of a CPU `device` from its facts (AVX2's where it has none, and off a CPU:
        a GPU's blocks are `lift.rewrites.gpu_tiles`')."""
        if device is None or device.kind != "cpu" or device.vector_bits < 128 or device.vector_registers < 1:
            return AVX2
        return Registers(device.vector_registers, device.vector_bits // 32)

    @property
    def widths(self) -> tuple[int, ...]:
        """`WIDTHS` in the order a block prefers them: the native width first."""
        return (self.lanes, *(w for w in WIDTHS if w != self.lanes)) if self.lanes in WIDTHS else WIDTHS

    def per(self, w: int) -> int:
        """The registers a vector of `w` floats takes (float16: 2 with AVX2, 1 with AVX-512)."""
        return max(1, -(-w // self.lanes))


AVX2 = Registers()


def _first_block(rows: tuple[int, ...], cols: tuple[int, ...], n_out: int | None,
                 pad: bool = False, regs: Registers = AVX2) -> tuple[int, int, int] | None:
    """The default `(rows, cols, width)` of the output form among the offered `rows` and `cols`
    whose `cols * width` divides the output's `n_out` columns, chosen jointly: the first of
    `regs.widths` that fits (the native width first); then a block whose R x C accumulators, C
    loaded vectors of X and one broadcast of A fit in the `regs.count` registers (8 x 2 float8
    spills AVX2's 16); then the fewest loads per multiply-add, (R + C) / (R * C) (a step of the
    reduction loads R scalars and C vectors for R * C multiply-adds); then the domains' order
    (4 x 2 before 2 x 4: a broadcast is cheaper than a vector from the panel). On AVX2: 4 x 2
    float8 where it fits; with N = 1000 (gemm_bias_relu) 2 x 5 float8 (10 accumulators, 0.7 loads
    per multiply-add) rather than 8 x 1 (1.1): 2.51 against 3.23 ms for the 128x1000x1024
    product on PoCL/Zen 3 (hand-written kernels of both blocks, interleaved, medians of 15); 8 x 1
    float8 before 4 x 2 float4 (~1.8x). On AVX-512 (32 registers of 16 floats): 4 x 4 float16
    at N = 1024. None where no vector fits. `pad`: blocks whose columns do not divide N count too
    (B's panels padded, `tail` "pad"), native vectors and at most `PAD_WASTE` of the columns
    padding, after an equal dividing one."""
    if n_out is None:
        return None
    order = regs.widths

    def cost(b: tuple[int, int, int]) -> tuple[Any, ...]:
        r, c, w = b
        fit, loads, *rank = _block_cost(r, c, (r * c + c) * regs.per(w) + 1, rows, cols, regs)
        return (order.index(w), fit, loads, n_out % (c * w) != 0, *rank)

    shapes = [(r, c, w) for w in order if w > 1 for c in cols for r in rows if n_out % (c * w) == 0
              or (pad and w == regs.lanes and Fraction(-n_out % (c * w), n_out) <= PAD_WASTE)]
    return min(shapes, key=cost) if shapes else None


SMALL_M = 256  # at most this many output rows: B's rows read along K as written, not packed
GROUP = 32  # work-items of a reduced-form block kernel's work-group


def _first_reduced(rows: tuple[int, ...], cols: tuple[int, ...], w: int = 8,
                   regs: Registers = AVX2) -> tuple[int, int]:
    """The default `(rows, cols)` of the reduced form (both operands' rows read along K, one
    vector of `w` lanes of each per step): R x C accumulators and the R + C loaded vectors in the
    `regs.count` registers, then the fewest loads per multiply-add, then the domains' order (4 x 2)."""
    return min(((r, c) for r in rows for c in cols),
               key=lambda b: _block_cost(*b, (b[0] * b[1] + sum(b)) * regs.per(w), ROWS, COLS, regs))


def _block_cost(r: int, c: int, used: int, rows: tuple[int, ...], cols: tuple[int, ...],
                regs: Registers = AVX2) -> tuple[Any, ...]:
    """A block's rank among the offered ones: `used` registers over `regs.count` last, then the
    loads per multiply-add, (R + C) / (R * C), then the domains' order."""
    return (used > regs.count, Fraction(r + c, r * c), rows.index(r), cols.index(c))


def reduced_group(rows: int, cols: int) -> tuple[int, int]:
    """The work-group of a reduced-form block kernel launched as a grid (column blocks in dimension
    0, row blocks in dimension 1): `GROUP` blocks, as many of B's rows as of A's (L0 * cols ~
    L1 * rows), so that both operands' rows are shared by the group (a CPU runs its work-items one
    after another): 8 x 4 for 4 x 2 blocks. On PoCL/Zen 3, tmm 128x1024x1024: 8 x 4, 16 x 4 and
    32 x 2 2.61-2.63 ms, 16 x 2 2.95, 32 x 1 3.30, the packed output form 3.98 (interleaved,
    medians of 45)."""
    l0 = 1
    while l0 * 2 <= GROUP and (l0 * 2) * cols <= (GROUP // (l0 * 2)) * rows:
        l0 *= 2
    return l0, GROUP // l0


def space(point: BlockNest, sizes: Mapping[str, int], regs: Registers = AVX2) -> dict[str, tuple[Any, ...]]:
    """The structural choices of an automatic `block_nest` point for input `sizes`: blocks and
    widths that divide the sizes (1 where a size is unknown), `copy` first when it changes a layout;
    the first choice fills the vector registers `regs` of the device compiled for (AVX2's by default)."""
    body = point.f.body if isinstance(point.f, Lambda) else None
    parts = nest_parts(body) if body is not None else "not a lambda"
    whole = fusable(body) if isinstance(parts, str) and body is not None else None
    if isinstance(whole, Fusable):
        parts = nest_parts(whole.product)
    if isinstance(parts, str):
        return {}
    _, a, b, _, f, g = parts

    def known(size: Any) -> int | None:
        return _known(size, sizes)

    (ka, m), (_, nn) = _rows(a) or (1, 1), _rows(b) or (1, 1)
    def fits(doms: tuple[int, ...], size: Any) -> tuple[int, ...]:
        v = known(size)
        return tuple(d for d in doms if v is not None and v % d == 0) or (1,)

    widths = fits(regs.widths, ka) if sums(f) else (1,)  # lane sums: an addition only
    kernels = point.kernel is not False
    strided = kernels and any(isinstance(x, FunCall) and isinstance(x.f, n.Transpose) for x in (a, b))
    views = kernels and any(not isinstance(x, Param) and not (isinstance(x, FunCall) and isinstance(x.f, n.Transpose)
                                                           and isinstance(x.args[0], Param)) for x in (a, b))
    layouts = tuple(x for x in LAYOUTS if x == "keep" or (x == "copy" and strided) or (x == "gather" and views)
                    or (x == "pad" and kernels and offered(a)))
    out = {"rows": fits(ROWS, m), "cols": fits(COLS, nn), "width": widths, "layout": layouts,
           "along": ("reduced",), "pack": ("none",)}
    v = known(nn)
    first = _first_block(out["rows"], out["cols"], v, regs=regs)
    cols = out["cols"][0] if first is None else first[1]
    along_out = tuple(w for w in regs.widths if w > 1 and v is not None and v % (cols * w) == 0)
    b_columns = isinstance(b, FunCall) and isinstance(b.f, n.Transpose)
    if (b_columns or kernels) and along_out:
        out["along"] = ALONG  # vectors along the output too (B's columns contiguous, or copied so)
        if first is not None:  # the block that fills the vector registers best comes first
            out["rows"] = (first[0], *(r for r in out["rows"] if r != first[0]))
            out["cols"] = (first[1], *(c for c in out["cols"] if c != first[1]))
        out["width"] = along_out + tuple(w for w in widths if w not in along_out)  # the first choice fits both
        out["layout"] = tuple(x for x in LAYOUTS if (x != "gather" or views) and (x != "pad" or offered(a))) \
            if kernels else ("keep",)
        out["pack"] = PACKS if kernels else ("none",)  # panels copied by kernels of their own
        if kernels and isinstance(a, FunCall) and isinstance(a.f, n.Transpose):
            # A's rows are the given array's columns: a block's rows would stride a cache line per
            # k; A packed too (A^T B 2048^3 on PoCL 3.0-rc2/znver3, loaded 2-core machine,
            # interleaved: 317-400 ms against 587-761 with B's panels only; 1024^3 26-32 vs 33-38)
            out["pack"] = ("ab", *(x for x in out["pack"] if x != "ab"))
    if isinstance(whole, Fusable) and b_columns and kernels and v is not None and out["along"][0] == "output":
        out.update(_padded(out, whole, first, v, regs))
    if "pad" in out["layout"]:  # windows of a padded input: copy it first (rewrites/auto_conv.py)
        out["layout"] = ("pad", *(x for x in out["layout"] if x != "pad"))
        out["chunk"] = chunk_lengths(a, sizes) or (None,)
    elif _rows_first(out, a, b, known(m), widths):
        # Few output rows, both operands given as rows (A B^T: tmm): packing B's panels would cost
        # a copy of B reused by only M rows; each block reads both operands' rows along K as
        # written instead (tmm 128x1024x1024 on PoCL/Zen 3: 2.61 against 3.98 ms, 256 rows 4.97
        # against 6.34; 1024 rows 15.4 against 14.6: packed; interleaved). With an epilogue too,
        # split into a kernel of its own (the reduced form does not apply it to its sums): the
        # packing kernel was 0.6-0.7 ms of gemm_bias_relu's 2.9 (128x1024x1000; reduced and split
        # 2.21 against the fused output form's 2.89, numpy 2.78, interleaved); fused stays the
        # tuner's other choice.
        r, c = _first_reduced(out["rows"], out["cols"], widths[0], regs)
        out["along"] = ("reduced", *(x for x in out["along"] if x != "reduced"))
        out["rows"] = (r, *(x for x in out["rows"] if x != r))
        out["cols"] = (c, *(x for x in out["cols"] if x != c))
        out["width"] = widths + tuple(w for w in out["width"] if w not in widths)
        out["layout"] = ("keep", *(x for x in out["layout"] if x != "keep"))
        out["pack"] = ("none", *(x for x in out["pack"] if x != "none"))
    if isinstance(whole, Fusable):  # applied to the accumulators of the output form's blocks
        fused = out["along"][0] == "output" and out["layout"][0] != "pad"
        later = out["along"] == ("reduced", "output")  # the reduced form first: fused with the output form
        out["epilogue"] = epilogues(whole) if fused else ("kernel", "fused") if later else ("kernel",)
    return out


def _padded(out: Mapping[str, Any], whole: Fusable, first: tuple[int, int, int] | None, n_out: int,
            regs: Registers = AVX2) -> dict[str, tuple[Any, ...]]:
    """The `tail` choices (and the block domains) of the output form of a nest with an epilogue
    over B = transpose << X: "pad" first where the epilogue is a kernel of its own by default (it
    reads the product from memory, truncated) and a block that does not divide N fits the
    registers better than every dividing one (sgemm at N = 1024: 4 x 3 float8, 12 accumulators,
    N padded to 1032, rather than 4 x 2). The columns that do not divide N are offered too."""
    cols = out["cols"] + tuple(c for c in COLS if c not in out["cols"])
    best = _first_block(out["rows"], cols, n_out, pad=True, regs=regs)
    if best is None or best == first or n_out % (best[1] * best[2]) == 0 or epilogues(whole)[0] != "kernel":
        return {"tail": TAILS, "cols": cols}
    r, c, w = best
    return {"tail": ("pad", "exact"), "rows": (r, *(x for x in out["rows"] if x != r)),
            "cols": (c, *(x for x in cols if x != c)), "width": (w, *(x for x in out["width"] if x != w))}


def _rows_first(out: Mapping[str, Any], a: Any, b: Any, m: int | None, widths: tuple[int, ...]) -> bool:
    """Whether the reduced form comes first: both operands are inputs given as rows, the output has
    at most `SMALL_M` rows, vectors fit along K, and the output form is offered (kernels may be
    added) so the point chose between the two."""
    return (out["along"] == ALONG and isinstance(a, Param) and isinstance(b, Param) and m is not None
            and m <= SMALL_M and widths[0] > 1)


block_nest = constructor(BlockNest, "block_nest")

__all__ = ["BlockNest", "block_nest", "nest_parts", "copied", "reduced_group", "Registers", "AVX2", "LAYOUTS", "ROWS",
           "COLS", "WIDTHS",
           "ALONG", "PACKS", "SMALL_M", "TAILS"]
