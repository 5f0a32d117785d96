"""Direct windows over a materialised input: the `"pad"` layout of the automatic `block_nest`
point (rewrites/auto_nest.py), the structure of the annotated convolution of examples/vgg.py.

A nest whose rows A are windows of a view of an input (conv: `join << map_nd(join_nd) <<
slide_nd(3, 3, 1) << pad_nd(1, 1, 0) << X`) reads every element of the padded input 9 times
through the pad's conditions (a branch per read), or, gathered (`layout="gather"`), copies the
9x larger im2col array with a div/mod per element. With `layout="pad"` the argument of the
lowest slide of A's view chain (`y = pad_nd(..) << X`, the padded input) is copied once, in a
kernel of its own, moving float8 vectors along its innermost dimension (as `materialise` with
`width` does), and the blocks read their windows directly from that copy (aligned vector loads
along the contiguous channels):

    block_nest(nest(A, B))  with  A = v << slide(..) << y,  y = pads.. << X
      ->  ocl_kernel((p, q..) => blocks(v << slide(..) << p, B[q..]))
              (ocl_kernel(x => copy_into(global, y[x], width 8)) << X, ..B's inputs)

`blocks` is the point's own blocked nest (vectors along the reduced dimension, or along the
output with B's columns read from `transpose << X` or a transposed copy): the copy changes where
the windows are read from, not what the blocks compute, so every block shape and width of the
point's space applies. Offered (`offered`) only where such a slide over a view exists.

Structural choice `chunk` (`chunk_lengths`): the blocks' reduction split into chunks of whole rows
of the copy (`split_reduction`: nested `reduce_seq`s, the same steps in the same order), so that
the window index of the inner loop needs no division per step: for conv, 3C, C or the whole 9C.

Windows of an input as it lies in memory (a valid convolution, `slide_nd(2, 3, s) << X`, any
stride and window size) have nothing to copy: `layout="pad"` is offered for them too and means
the blocks of layout "copy" (or "keep" inside a map) reading the windows directly from `X`, with
the same `chunk` choice: a window's row is whole rows of `X`, so its index needs no division per
step (`padded_blocks` with `y is X`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast

from lift.arith import Cst, as_arith, evaluate, prove_divides
from lift.ir import nodes as n
from lift.ir import patterns as p
from lift.ir.alpha import substitute
from lift.ir.layoutfun import is_layout_fun
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, Param
from lift.ir.paths import walk
from lift.ir.registry import MAPS, is_wrapper
from lift.rules.match import expr, fun, var
from lift.rules.terms import free_ids
from lift.rules.vector import VECTOR_SCALARS
from lift.typecheck import type_of
from lift.types import ArrayType
from lift.userfun.builtins import id as copy
from lift.userfun.facts import sums

from .memory_points import copy_into
from .nest import NestBlocks, copied, divides, rows_of
from .refusal import Refusal, RefusalKind, indivisible
from .shapes import TRANSPOSE, match_shape

_ACCUMULATED = FunCall(n.ReduceSeq(fun("f")), (var("z", Literal), expr("xs")))  # reduce_seq(f, literal) << xs

COPY_WIDTH = 8  # the copy moves float8 vectors where the element count allows (else 4, 2, 1)
# seed block shapes of the tuner for this layout (lift/explore/seeds.py tries them before BLOCK_SEEDS):
# 2 rows x 4 float8 columns (8 accumulators: half the AVX2 vector file) first, along the output
PAD_SEEDS = ({"rows": 2, "cols": 4, "width": 8, "along": "output", "layout": "pad"},
             {"rows": 2, "cols": 2, "width": 16, "along": "output", "layout": "pad"},
             {"rows": 2, "cols": 4, "width": 8, "along": "reduced", "layout": "pad"},
             {"rows": 4, "cols": 2, "width": 8, "along": "output", "layout": "pad"})


def _has(f: FunDecl, cls: type | tuple[type, ...]) -> bool:
    return any(isinstance(m, cls) for _, m in walk(f))


def window_source(x: Any) -> tuple[tuple[FunCall, ...], Any, Param] | None:
    """`(calls, y, X)` when `x` is a view chain `calls[0] << .. << calls[-1] << y` over the input
    `X`, `calls[-1]` the lowest call whose function holds a `slide` and `y` (its argument) a view of
    `X` that pads or transposes it (its elements are not `X`'s as they lie in memory: what
    `layout="pad"` materialises) or, for windows of the input itself, `X` (`y is X`: nothing to
    copy); else None."""
    chain, cur = [], x
    while isinstance(cur, FunCall) and len(cur.args) == 1 and is_layout_fun(cur.f):
        chain.append(cur)
        cur = cur.args[0]
    if not isinstance(cur, Param):
        return None
    lowest = max((i for i, c in enumerate(chain) if _has(c.f, n.Slide)), default=None)
    if lowest is None:
        return None  # no window
    if not any(_has(c.f, (n.Pad, n.Transpose)) for c in chain[lowest + 1:]):
        if lowest + 1 < len(chain) or _has(chain[lowest].f, (n.Pad, n.Transpose)):
            return None  # windows of a reshaped input, or padded in the same call: not plain windows of X
        return tuple(chain[:lowest + 1]), cur, cur  # windows of the input as it lies in memory
    return tuple(chain[:lowest + 1]), chain[lowest].args[0], cur


def offered(a: Any) -> bool:
    """Whether `layout="pad"` applies to a nest with rows `a`."""
    return window_source(a) is not None


def _rebuilt(calls: tuple[FunCall, ...], base: Any) -> Any:
    """`calls[0] << .. << calls[-1] << base`."""
    out = base
    for c in reversed(calls):
        out = dataclasses.replace(c, args=(out,))
    return out


def _copy_kernel(y: Any, x: Param, known: Mapping[str, int]) -> Any:
    """`ocl_kernel(q => copy of y[q] in global memory) << X`: `y` in memory, one kernel, moving
    vectors of the widest of 8, 4, 2 lanes that divides its innermost dimension (evaluated with
    the `known` input sizes: a symbolic size becomes a size condition of the program)."""
    q = Param(x.ptype, "x")
    view = substitute(y, {x.id: q})
    t, dims = type_of(y), []
    while isinstance(t, ArrayType):
        dims.append(t.size)
        t = t.elem
    w = next((v for v in (COPY_WIDTH, 4, 2) if _known_divides(v, dims[-1], known)), 1) if dims else 1
    if w == 1 or t not in VECTOR_SCALARS:
        body = copy_into("global", view)
    else:
        flat = p.join_nd(len(dims)) << view if len(dims) > 1 else view
        body = p.as_scalar << (p.map(p.to_global(p.vectorise(copy, w))) << (p.as_vector(w) << flat))
        body = p.split_nd(*dims[1:]) << body if len(dims) > 1 else body
    if isinstance(body, str):
        return body
    return FunCall(n.OclKernel(Lambda((q,), body)), (x,))


def _known_divides(k: int, size: Any, known: Mapping[str, int]) -> bool:
    """Whether `k` divides `size`, evaluated with the `known` sizes (proved when symbolic)."""
    try:
        return int(evaluate(as_arith(size), dict(known))) % k == 0
    except Exception:  # noqa: BLE001 - symbolic
        return prove_divides(k, as_arith(size))


def chunk_lengths(a: Any, known: Mapping[str, int]) -> tuple[int, ...]:
    """The lengths offered to split the reduction of layout "pad" into (`chunk`): the multiples of
    the copied source's innermost dimension that divide the reduced length (a window's row is whole
    rows of the source: with such chunks its index needs no division per element), the longest
    two below the reduced length first, then the reduced length itself (one loop); () if unknown."""

    found, rows = window_source(a), rows_of(a)
    t = type_of(found[1]) if found is not None else None
    while isinstance(t, ArrayType) and isinstance(t.elem, ArrayType):
        t = t.elem
    if rows is None or not isinstance(t, ArrayType):
        return ()
    try:
        k, inner = int(evaluate(as_arith(rows[0]), dict(known))), int(evaluate(as_arith(t.size), dict(known)))
    except Exception:  # noqa: BLE001 - symbolic
        return ()
    below = [d for d in range(k - inner, 0, -inner) if k % d == 0] if inner > 0 else []
    return (*below[:2], k)


def split_reduction(body: Expr, length: int) -> Expr:
    """`body` with its accumulating `reduce_seq(op, value(..)) << xs` (the blocks' loop over the
    reduced dimension) split into chunks of `length`: `reduce_seq((acc, part) => reduce_seq(op, acc)
    << part, value(..)) << split(length) << xs`, the same sequence of steps (any `op`), nested loops."""
    def go(e: Expr) -> Expr:
        if (m := match_shape(_ACCUMULATED, e)) is not None:
            init, xs = m["z"], m["xs"]
            acc = Param(type_of(init), "acc")
            part = Param(ArrayType(cast(Any, type_of(xs)).elem, Cst(length)), "part")
            inner = FunCall(n.ReduceSeq(m["f"]), (acc, part))
            return FunCall(n.ReduceSeq(Lambda((acc, part), inner)), (init, FunCall(n.Split(Cst(length)), (xs,))),
                           loc=e.loc)
        if isinstance(e, FunCall):
            return dataclasses.replace(e, f=go_fun(e.f), args=tuple(go(x) for x in e.args))
        return e

    def go_fun(f: Any) -> Any:
        if isinstance(f, Lambda):
            return dataclasses.replace(f, body=go(f.body))
        if isinstance(f, MAPS) or is_wrapper(f):  # one function `f`: a map's, or under an annotation
            return dataclasses.replace(f, f=go_fun(f.f))
        return f

    return go(body)


def padded_blocks(point: Any, call: Any, parts: tuple[Any, ...], sizes: tuple[int, int, int], along: str,
                  nested: Any, known: Mapping[str, int], chunk: int | None = None,
                  pack: str = "none") -> Expr | Refusal:
    """The blocked nest of `point` (a `BlockNest`) reading A's windows from a copy of their padded
    source, or in place from an input (see the module; `pack` applies to the latter only), its
    reduction split into chunks of `chunk` elements (None or the reduced length: one loop), or why not."""

    fa, a, b, r_call, f, g = parts
    found = window_source(a)
    if found is None:
        return Refusal("layout 'pad' needs rows that are windows (slide) of an input, padded, rearranged or not")
    if found[1] is found[2]:  # windows of the input as it lies in memory: the blocks read them in place
        layout = "keep" if point.kernel is False else "copy"
        if along == "output" and sizes[2] > 1:  # no fallback to the reduced form: the chunks count scalars
            return _chunked(point.output(NestBlocks(call, r_call, f, g, sizes), a, b, layout, pack), chunk, 1, a, known)
        plain = {"rows": sizes[0], "cols": sizes[1], "width": sizes[2], "along": "reduced", "pack": pack,
                 "layout": layout}
        return _chunked(point.rewrite(call, plain, nested), chunk, sizes[2], a, known)
    if point.kernel is False:
        return Refusal("layout 'pad' copies an input in a kernel of its own: the point must be over the program's "
                       "inputs")
    calls, y, x = found
    staged = _copy_kernel(y, x, known)
    if isinstance(staged, str):
        return Refusal(f"layout 'pad' cannot copy {y}: {staged}")
    pp = Param(type_of(y), "padded")
    rows = _rebuilt(calls, pp)
    free = free_ids(b)
    b_inputs = sorted({m.id: m for _, m in walk(b) if isinstance(m, Param) and m.id in free}.values(),
                      key=lambda m: m.id)
    qs = tuple(Param(m.ptype, f"w{i}") for i, m in enumerate(b_inputs))
    cols = substitute(b, {m.id: q for m, q in zip(b_inputs, qs)})
    bm, bn, w = sizes
    if along == "output" and w > 1:
        if (columns := match_shape(TRANSPOSE, cols)) is not None and isinstance(columns["x"], Param):
            tx, px, arg = columns["x"], columns["x"], None
        else:  # B's columns copied transposed, in a kernel of its own (reads its inputs)
            moved = copied(FunCall(n.Transpose(), (b,)))
            px, arg = Param(type_of(moved), "tx"), moved
            tx = px
        body = point.output_blocks(NestBlocks(call, r_call, f, g, sizes), rows, tx)
        body = _chunked(body, chunk, 1, a, known)
        if not isinstance(body, Refusal):
            params, args = ((pp, *qs), (staged, *b_inputs)) if arg is None else ((pp, px), (staged, arg))
            return FunCall(n.OclKernel(Lambda(params, body)), args)
        if body.kind is RefusalKind.INDIVISIBLE:
            return body
    if w > 1 and not sums(f):
        return Refusal(f"width {w} along the reduced dimension needs an addition (lane sums), got {f}")
    ra = rows_of(a)
    if ra is None or not divides(w, ra[0], known):
        return indivisible(f"width {w} does not divide the reduced dimension")
    body = _chunked(point.blocks(NestBlocks(call, r_call, f, g, sizes), rows, cols, fa, nested), chunk, w, a, known)
    if isinstance(body, Refusal):
        return body
    return FunCall(n.OclKernel(Lambda((pp, *qs), body)), (staged, *b_inputs))


def _chunked(body: Expr | Refusal, chunk: int | None, w: int, a: Any, known: Mapping[str, int]) -> Expr | Refusal:
    """`body` with its reduction split into chunks of `chunk` elements (`chunk / w` vectors of `w`
    lanes), unchanged for no chunk or the whole reduced length, or why not."""

    if isinstance(body, Refusal) or not chunk:
        return body
    k = cast(tuple[Any, Any], rows_of(a))[0]
    try:
        whole = int(evaluate(as_arith(k), dict(known))) == int(chunk)
    except Exception:  # noqa: BLE001 - symbolic
        whole = False
    if whole:
        return body
    if int(chunk) % w or not divides(int(chunk), k, known):
        return indivisible(f"chunk {chunk} does not divide the reduced dimension {k} in vectors of {w}")
    return split_reduction(body, int(chunk) // w)


__all__ = ["chunk_lengths", "split_reduction", "window_source", "offered", "padded_blocks", "COPY_WIDTH", "PAD_SEEDS"]
