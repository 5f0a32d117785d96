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
output form's rows, cols and width are chosen together by `first_block` (rewrites/block_space.py): 2 x 5 float8 for
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

from collections.abc import Mapping
from typing import Any, ClassVar, cast

from lift.arith import Cst
from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Param, UserFun, node
from lift.ir.paths import walk
from lift.ir.registry import has
from lift.rules.terms import substitute
from lift.typecheck import type_of
from lift.types import ArrayType, TupleType
from lift.userfun.facts import sums

from .auto_conv import padded_blocks
from .block_space import ALONG, COLS, EPILOGUES, LAYOUTS, PACKS, ROWS, TAILS, WIDTHS, epilogues
from .chunks import safe_widths
from .epilogue import Fusable, as_kernel, fusable, split_epilogue
from .nest import (
    BlockEpilogue,
    NestBlocks,
    array_of,
    block,
    block_out,
    copied,
    divides,
    gathered,
    known_size,
    nest_parts,
    own_kernel,
    rows_of,
)
from .packing import pack_a, pack_b
from .point import Nested, RewritePoint, constructor
from .refusal import Refusal, RefusalKind, indivisible
from .shapes import TRANSPOSE, ZIP, match_shape


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
    placed: ClassVar[tuple[str, ...]] = ("known", "kernel")

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"rows": ROWS, "cols": COLS, "width": WIDTHS, "layout": LAYOUTS, "along": ALONG, "pack": PACKS}
        found = fusable(self.f.body) if isinstance(self.f, Lambda) else "not a lambda"
        if isinstance(found, Fusable):
            doms["epilogue"], doms["tail"] = epilogues(found), TAILS
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def epilogue_kernel(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Expr | Refusal:
        """`call`'s product blocked and its epilogue a kernel of its own (rewrites/epilogue.py), or
        a map over the product's result where the point cannot add kernels."""
        split = split_epilogue(call)
        if split is None:
            return Refusal("the epilogue reads the rows of a computed operand: it cannot be split from the product")
        rows = cast(Any, split).args[0]
        product = rows.args[1] if match_shape(ZIP, rows) is not None else rows
        blocked = self.rewrite(product, {k: v for k, v in params.items() if k != "epilogue"}, nested, stored=True)
        if isinstance(blocked, Refusal):
            return blocked
        if self.kernel is not False and not any(has("kernel", x) for _, x in walk(blocked)):
            blocked = own_kernel(blocked)  # the reduced form reads its inputs in place: a kernel of its own
        rows = FunCall(rows.f, (rows.args[0], blocked)) if product is not rows else blocked
        out = FunCall(cast(FunCall, split).f, (rows,), label=split.label, loc=split.loc)
        return as_kernel(out) if self.kernel is not False else out

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested,
                stored: bool = False) -> Expr | Refusal:
        """`call` blocked with `params`; `stored`: the product's result is read from memory by a
        kernel of its own (its epilogue's), so its rows may be padded (`tail` "pad")."""
        tail = params.get("tail") or self.tail or "exact"
        if tail not in TAILS:
            return Refusal(f"tail must be one of {', '.join(TAILS)}, got {tail!r}")
        parts = nest_parts(call)
        epi: Fusable | None = None
        if isinstance(parts, str):
            found = fusable(call)
            if isinstance(found, str):
                return Refusal(parts)
            mode = params.get("epilogue") or self.epilogue or epilogues(found)[0]
            if mode not in EPILOGUES:
                return Refusal(f"epilogue must be one of {', '.join(EPILOGUES)}, got {mode!r}")
            if mode == "kernel":
                return self.epilogue_kernel(call, params, nested)
            width = int(params.get("width") or self.width or 1)
            if width not in safe_widths([u for _, u in walk(found.fun) if isinstance(u, UserFun)]):
                return Refusal(f"the epilogue's functions cannot run on vectors of width {width}")
            epi, call = found, found.product
            parts = nest_parts(call)
        if isinstance(parts, str):
            return Refusal(parts)
        if tail == "pad" and not stored:
            return Refusal("tail 'pad' truncates the product's padded rows as a kernel of its own reads them: "
                           "epilogue 'kernel'")
        fa, a, b, r_call, f, g = parts
        bm, bn, w = (int(params.get(k) or getattr(self, k) or 1) for k in ("rows", "cols", "width"))
        layout = params.get("layout") or self.layout or "copy"
        if layout not in LAYOUTS:
            return Refusal(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
        ra_dims, rb_dims = rows_of(a), rows_of(b)
        if ra_dims is None or rb_dims is None:
            return Refusal("A and B must be arrays of rows of scalars")
        for k, size, what in ((bm, ra_dims[1], "rows"), (bn, rb_dims[1], "cols")):
            if not divides(k, size, dict(self.known or ())) and not (what == "cols" and tail == "pad"):
                return indivisible(f"{what} {k} does not divide {size}")
        along = params.get("along") or self.along or "output"
        if along not in ALONG:
            return Refusal(f"along must be one of {', '.join(ALONG)}, got {along!r}")
        if tail == "pad" and along != "output":
            return Refusal("tail 'pad' pads B's panels: along='output'")
        pack = params.get("pack") or self.pack or "none"
        if pack not in PACKS:
            return Refusal(f"pack must be one of {', '.join(PACKS)}, got {pack!r}")
        if pack != "none" and self.kernel is False:
            return Refusal("pack: the panels are copied by kernels of their own, which a point inside a map cannot add")
        if epi is not None and (layout == "pad" or along != "output"):
            return Refusal("epilogue 'fused' applies to the output form's blocks (along='output', not layout 'pad')")
        if layout == "pad":  # windows read from a copy of their padded input (rewrites/auto_conv.py)
            return padded_blocks(self, call, parts, (bm, bn, w), along, nested, dict(self.known or ()),
                                 params.get("chunk") or self.chunk, pack)
        if along == "output":  # preferred; where B's columns are not contiguous, the reduced form
            nest = NestBlocks(call, r_call, f, g, (bm, bn, w))
            out = self.output(nest, a, b, layout, pack, epi, tail == "pad")
            if tail == "pad":
                return out
            if epi is not None and self.kernel is not False and not isinstance(out, Refusal) and not (
                    isinstance(out, FunCall) and has("kernel", out.f)):
                out = own_kernel(out)  # the epilogue's result is read from memory by what follows
            if not isinstance(out, Refusal) or out.kind is RefusalKind.INDIVISIBLE or epi is not None:
                return out
        if w > 1 and not sums(f):
            return Refusal(f"width {w} along the reduced dimension needs an addition (lane sums), got {f}")
        if not divides(w, ra_dims[0], dict(self.known or ())):
            return indivisible(f"width {w} does not divide {ra_dims[0]}")
        move = copied if layout == "copy" else gathered if layout == "gather" else None
        staged = move is not None and self.kernel is not False and (move(a) is not a or move(b) is not b)
        if staged:  # the copies are kernels: the blocks are one too, reading them as arguments
            pa, pb = Param(type_of(a), "ta"), Param(type_of(b), "tb")
            args = (cast(Any, move)(a), cast(Any, move)(b))  # staged: move is not None
            body = self.blocks(NestBlocks(call, r_call, f, g, (bm, bn, w)), pa, pb, fa, nested)
            return FunCall(n.OclKernel(Lambda((pa, pb), body)), args)
        return self.blocks(NestBlocks(call, r_call, f, g, (bm, bn, w)), a, b, fa, nested)

    def output(self, nest: NestBlocks, a: Any, b: Any, layout: str, pack: str, epi: Fusable | None = None,
               padded: bool = False) -> Expr | Refusal:
        """Blocks with vectors along the output, reading B's columns: `X` for B = `transpose << X`,
        else (with layout "copy") B copied transposed in a kernel of its own; operands packed into
        panels by kernels of their own (`pack`, rewrites/packing.py); or why not. `padded`: X's
        rows padded with zeros to a multiple of the block's columns in B's panels, the product's
        rows truncated to N as they are read (`tail` "pad")."""
        bm, bn, w = nest.sizes
        if w == 1:
            return Refusal("along='output' needs a width above 1")
        columns = match_shape(TRANSPOSE, b)
        transposed = columns is not None
        x = columns["x"] if columns is not None else FunCall(n.Transpose(), (b,))  # X: [[U]N]K
        if not transposed and "b" not in pack and (layout == "keep" or self.kernel is False):
            return Refusal("along='output' reads B's columns: B must be transpose << X, or copied (layout 'copy')")
        n_out = array_of(array_of(type_of(x)).elem).size
        pad = 0
        if padded:
            n_known = known_size(n_out, dict(self.known or ()))
            if not (transposed and "b" in pack and n_known is not None and self.kernel is not False):
                return Refusal("tail 'pad' pads B's panels: B = transpose << X of known width, packed "
                               "(pack 'b' or 'ab')")
            pad = -n_known % (bn * w)
        elif not divides(bn * w, n_out, dict(self.known or ())):
            return indivisible(f"cols {bn} x width {w} does not divide {n_out}")
        if pack != "none":
            xa = pack_a(a, bm) if "a" in pack else gathered(a) if layout == "gather" else a
            xx = pack_b(x, bn * w, pad) if "b" in pack else x if transposed else copied(x)
        elif transposed:
            if not (layout == "gather" and self.kernel is not False and not isinstance(a, Param)):
                return self.output_blocks(nest, a, x, (False, False), epi)
            xa, xx = gathered(a), x
        else:
            xa, xx = gathered(a) if layout == "gather" else a, copied(x)
        pa, px = Param(type_of(xa), "ta"), Param(type_of(xx), "tx")
        body = self.output_blocks(nest, pa, px, ("a" in pack, "b" in pack), epi)
        if isinstance(body, Refusal):
            return body
        if epi is not None:  # (never padded: `tail` "pad" needs the epilogue a kernel of its own)
            return own_kernel(body, (pa, px), (xa, xx))  # the epilogue's reads (C, a bias, alpha): arguments too
        blocks = FunCall(n.OclKernel(Lambda((pa, px), body)), (xa, xx))
        return FunCall(n.Map(n.Pad(Cst(0), Cst(-pad), 0)), (blocks,)) if pad else blocks  # padding dropped

    def output_blocks(self, nest: NestBlocks, a: Any, x: Any, packed: tuple[bool, bool] = (False, False),
                      epi: Fusable | None = None) -> Expr | Refusal:
        """Blocks with vectors along the output: X's rows ([[U]N]K) read as vectors; `packed`: A,
        X given as panels ([[[T]BM]K]M/BM, [[[U]BN*W]K]N/(BN*W); rewrites/packing.py); or why not."""
        call, bm, bn, w = nest.call, *nest.sizes
        at, xt = array_of(type_of(a)), array_of(type_of(x))
        x_row = array_of(xt.elem)
        if packed[1]:
            blk_x, cols = Param(xt.elem, "xs"), x
        elif not divides(bn * w, x_row.size, dict(self.known or ())):
            return indivisible(f"cols {bn} x width {w} does not divide {x_row.size}")
        else:
            blk_x = Param(ArrayType(ArrayType(x_row.elem, Cst(bn * w)), xt.size), "xs")
            cols = FunCall(n.Transpose(), (FunCall(n.Map(n.Split(Cst(bn * w))), (x,)),))
        if packed[0]:
            blk_a, a_cols, a_blocks = Param(at.elem, "as"), None, a
        else:
            blk_a = Param(ArrayType(at.elem, Cst(bm)), "as")
            a_cols, a_blocks = FunCall(n.Transpose(), (blk_a,)), FunCall(n.Split(Cst(bm)), (a,))
        if epi is None:
            inner = block_out(a_cols or blk_a, blk_x, nest.f, nest.g, nest.r_call.args[0], nest.sizes)
            over_x = FunCall(n.Map(Lambda((blk_x,), inner)), (cols,))
            row = FunCall(n.Map(n.Join()), (FunCall(n.Transpose(), (over_x,)),))
            over_a = FunCall(n.Map(Lambda((blk_a,), row), label=call.f.label, loc=call.f.loc), (a_blocks,))
            return FunCall(n.Join(), (over_a,))
        return self.fused_blocks(nest, blk_a, a_cols, a_blocks, blk_x, cols, epi)

    def fused_blocks(self, nest: NestBlocks, blk_a: Param, a_cols: Any, a_blocks: Any, blk_x: Param, cols: Any,
                     epi: Fusable) -> Expr:
        """`output_blocks` with the epilogue applied in the blocks: each leaf array split like the
        output (rows in blocks of BM with A's, columns in panels of BN * W with X's) and zipped with
        the operand blocks, so a block reads its own part."""
        call, bm, bn, w = nest.call, *nest.sizes
        kinds = tuple(leaf.kind for leaf in epi.leaves)
        values = tuple(leaf.value for leaf in epi.leaves)
        by_row = [j for j, k in enumerate(kinds) if k in ("both", "row")]
        by_col = [j for j, k in enumerate(kinds) if k in ("both", "col")]
        a_zip = [a_blocks, *(FunCall(n.Split(Cst(bm)), (cast(Expr, values[j]),)) for j in by_row)]
        ta = Param(TupleType(tuple(array_of(type_of(e)).elem for e in a_zip)), "ta")
        rows_of = {j: FunCall(n.Get(1 + i), (ta,)) for i, j in enumerate(by_row)}  # [BM] or [BM][N]
        x_zip = [cols, *(FunCall(n.Transpose(), (FunCall(n.Map(n.Split(Cst(bn * w))), (rows_of[j],)),))
                         if kinds[j] == "both" else FunCall(n.Split(Cst(bn * w)), (cast(Expr, values[j]),))
                         for j in by_col)]
        tx = Param(TupleType(tuple(array_of(type_of(e)).elem for e in x_zip)), "tx")
        part = {j: FunCall(n.Get(1 + i), (tx,)) for i, j in enumerate(by_col)}  # [BM][BN*W] or [BN*W]
        blk = BlockEpilogue(epi.fun, kinds, values,
                            tuple(part[j] if k == "both" else rows_of.get(j) for j, k in enumerate(kinds)),
                            tuple(part.get(j) if k == "col" else None for j, k in enumerate(kinds)))
        inner = block_out(a_cols or blk_a, blk_x, nest.f, nest.g, nest.r_call.args[0], nest.sizes, blk)
        inner = substitute(inner, {blk_x.id: FunCall(n.Get(0), (tx,)), blk_a.id: FunCall(n.Get(0), (ta,))})
        over_x = FunCall(n.Map(Lambda((tx,), inner)), (FunCall(n.Zip(len(x_zip)), tuple(x_zip)),))
        row = FunCall(n.Map(n.Join()), (FunCall(n.Transpose(), (over_x,)),))
        over_a = FunCall(n.Map(Lambda((ta,), row), label=call.f.label, loc=call.f.loc),
                         (FunCall(n.Zip(len(a_zip)), tuple(a_zip)),))
        return FunCall(n.Join(), (over_a,))

    def blocks(self, nest: NestBlocks, a: Any, b: Any, fa: Lambda, nested: Nested) -> Expr:
        """The blocked nest over `a` and `b` (arrays of rows)."""
        call, (bm, bn, w) = nest.call, nest.sizes
        at, bt = array_of(type_of(a)), array_of(type_of(b))
        blk_a = Param(ArrayType(at.elem, Cst(bm)), "as")
        blk_b = Param(ArrayType(bt.elem, Cst(bn)), "bs")
        inner = block(blk_a, blk_b, nest.f, nest.g, nest.r_call.args[0], bm, bn, w)
        over_b = FunCall(nested(n.Map(Lambda((blk_b,), inner), label=cast(FunCall, fa.body).f.label)),
                         (FunCall(n.Split(Cst(bn)), (b,)),))
        row = FunCall(n.Map(n.Join()), (FunCall(n.Transpose(), (over_b,)),))
        over_a = FunCall(n.Map(Lambda((blk_a,), row), label=call.f.label, loc=call.f.loc),
                         (FunCall(n.Split(Cst(bm)), (a,)),))
        return FunCall(n.Join(), (over_a,))

block_nest = constructor(BlockNest, "block_nest")

__all__ = ["BlockNest", "block_nest"]
