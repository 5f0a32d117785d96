"""Fused recomputation where no barrier placement exists: a slide of a computed array at the result.

A `slide` in the layout chain that forms the program's result (`transpose << slide(n, s) <<
map(f) << x`) cannot be written in place (windows overlap), and the copy that would build it
reads values that other work-groups write, which no barrier orders. The map that computes the
slid array is moved above the layouts instead, recomputing `f` per window element:
`map(map(f)) << slide(n, s) << x` (the same value; `f` runs about n/s times per element). A map
commutes with `slide` and `split` (one more level), with `transpose` and `join` when it maps
the elements two levels down, and with `map(layout)` level by level. Chains without a slide are
left alone (they are written in place). The outer map keeps the original map's label, so
mapping choices still name it.

`fuse_into_stencils` does the same for a producer read by a stencil anywhere in the program (the
overlapped tiles of AKG's fusion, as recomputed halos): `map(g) << layouts << map(f) << x`, the
layouts holding a `slide`, becomes `map(g << map(f)') << layouts << x`: each window recomputes
its elements from `x` instead of reading a temporary array that another kernel wrote. A `pad`
commutes with the producer when the producer keeps the padding value (`f(v) == v`, evaluated with
the user function's Python meaning: zero padding after a quantisation or a ReLU).
It is not applied by default: on the CPU device the recomputation costs more than the temporary
it saves (quantize -> 3x3 conv -> ReLU at 2048^2: 308 ms fused vs 73 ms as two kernels, measured
interleaved; the producer pass is cheap and the conv reads it from cache), while on a GPU the saved
global traffic is what AKG's fusion is for. Apply it to a program before `lift.compile`, or mark
the stencil with the rewrite point `lift.rewrites.recompute_producer` so that the tuner decides
(its `skip` keeps the temporary).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import cast

from lift.arith import Cst
from lift.ir import nodes as n
from lift.ir.layoutfun import calls_userfun
from lift.ir.nodes import Expr, FunCall, Lambda, Node, Param
from lift.ir.paths import transform_bottom_up, walk
from lift.ir.registry import case, has, register
from lift.typecheck import typecheck
from lift.types import ArrayType, Type


def recompute_layouts(expr: Node) -> Node:
    """`expr` with the computing map under a result-position `slide` moved above its layouts."""
    if not isinstance(expr, Lambda):
        return expr
    body = _push(expr.body)
    if body is expr.body:
        return expr
    out = replace(expr, body=body)
    typecheck(out)
    return out


def _push(e: Expr) -> Expr:
    chain, cur = _slide_chain(e, _layout)  # the result-position layouts, outermost first
    if not chain:
        return e
    if isinstance(cur, FunCall) and isinstance(cur.f, n.Let) and len(cur.args) == 1 \
            and isinstance(cur.args[0], n.Param) and _let_map(cur.f.f) is not None:
        # let of a parameter: nothing to evaluate once
        cur = FunCall(cast(n.Map, _let_map(cur.f.f)), cur.args, loc=cur.loc)
    if not (isinstance(cur, FunCall) and isinstance(cur.f, n.Map) and len(cur.args) == 1):
        return e
    mf: n.Map = cur.f
    below: Expr = cur.args[0]
    k = len(chain)
    while k > 0:
        moved = _commute(chain[k - 1].f, mf)
        if moved is None:
            break
        k -= 1
        below = FunCall(chain[k].f, (below,), loc=chain[k].loc)
        mf = moved
    if k == len(chain):
        return e
    out: Expr = FunCall(mf, (below,), loc=cur.loc)
    for c in reversed(chain[:k]):
        out = FunCall(c.f, (out,), loc=c.loc)
    return out


def fuse_into_stencils(expr: Node) -> Node:
    """`expr` with every elementwise producer under a stencil's slide recomputed per window (module
    docstring): `map(g) << slide(n, s) << pad(l, r, 0) << map(relu) << x` ->
    `map(w => g(map(relu) << w)) << slide(n, s) << pad(l, r, 0) << x`."""
    if not isinstance(expr, Lambda):
        return expr

    def visit(e: Node) -> Node:
        fused = stencil_fused(e)
        return e if fused is None else fused

    out = transform_bottom_up(expr, visit)
    if out is not expr:
        typecheck(out)
    return out


def stencil_fused(e: Node) -> Expr | None:
    """`map(g << map(f)') << layouts << x` for `e = map(g) << layouts << map(f) << x` (see
    `fuse_into_stencils`), or None when `e` is not such a stencil over an elementwise producer."""
    if not (isinstance(e, FunCall) and isinstance(e.f, n.Map) and len(e.args) == 1 and calls_userfun(e.f.f)):
        return None
    pulled = _pull(e.args[0])
    if pulled is None:
        return None
    mf, below = pulled
    t = below.type
    assert isinstance(t, ArrayType)
    return FunCall(n.Map(_then(mf.f, e.f.f, t.elem), label=e.f.label, loc=e.f.loc), (below,), loc=e.loc)


def _then(h: n.FunDecl, g: n.FunDecl, t: Type) -> Lambda:
    """`w => g(h(w))` for `w: t`, maps of maps fused level by level (`map(g') << map(h')` ->
    `map(g' << h')`), so that no window-sized temporary is left between them."""
    w = Param(t, "w")
    if isinstance(g, n.Map) and isinstance(h, n.Map) and isinstance(t, ArrayType):
        inner = n.Map(_then(h.f, g.f, t.elem), label=g.label, loc=g.loc)
        return Lambda((w,), FunCall(inner, (w,), loc=g.loc), loc=g.loc)
    if _constant(t):  # a window of constant size: recomputed into private memory (registers)
        h = n.ToPrivate(h, loc=h.loc)
    return Lambda((w,), FunCall(g, (FunCall(h, (w,), loc=h.loc),), loc=g.loc), loc=g.loc)


def _constant(t: Type) -> bool:

    while isinstance(t, ArrayType):
        if not isinstance(t.size, Cst) or t.size.value > 64:
            return False
        t = t.elem
    return True


def _pull(e: Expr) -> tuple[n.Map, Expr] | None:
    """(`m2`, `layouts << x`) with `m2 << layouts << x == e`, for `e = layouts << map(f) << x` whose
    layouts hold a slide and whose `f` computes elementwise (no reduction, no address space)."""
    chain, cur = _slide_chain(e, _movable)
    if not chain:
        return None
    if not (isinstance(cur, FunCall) and isinstance(cur.f, n.Map) and len(cur.args) == 1 and calls_userfun(cur.f.f)):
        return None
    if any(isinstance(y, n.AbstractReduce) or has("wrapper", y) for _, y in walk(cur.f)):
        return None
    mf: n.Map = cur.f
    below: Expr = cur.args[0]
    for c in reversed(chain):
        moved = _commute(c.f, mf)
        if moved is None:
            return None
        below = FunCall(c.f, (below,), loc=c.loc)
        mf = moved
    return mf, below


def _slide_chain(e: Expr, keep: Callable[[n.FunDecl], bool]) -> tuple[list[FunCall], Expr]:
    """`(chain, rest)`: the one-argument calls of functions `keep` accepts at the top of `e`,
    outermost first, and what they apply to; `chain` is empty unless one of them holds a slide."""
    chain: list[FunCall] = []
    cur = e
    while isinstance(cur, FunCall) and len(cur.args) == 1 and keep(cur.f):
        chain.append(cur)
        cur = cur.args[0]
    return (chain if any(_has_slide(c.f) for c in chain) else []), cur


def _movable(f: n.FunDecl) -> bool:
    """Whether an elementwise map moves across `f`: the function under its maps has a "commute"
    case (`pad` and the layouts with the "commutes" trait)."""
    return case("commute", _under_maps(f)) is not None


def _under_maps(f: n.FunDecl) -> n.FunDecl:
    """The function `f` applies under its maps (`f` itself when it is no map)."""
    while isinstance(f, n.Map):
        f = f.f
    return f


def _keeps(mf: n.Map, value: float) -> bool:
    """Whether the scalar function under the maps of `mf` maps the padding `value` to itself."""
    f = _under_maps(mf)
    if not (isinstance(f, n.UserFun) and f.arity == 1 and f.py_fn is not None):
        return False
    try:
        got = float(f.py_fn(value))
    except Exception:  # noqa: BLE001 - a function we cannot evaluate here is not assumed to keep it
        return False
    return got == float(value) or (math.isnan(got) and math.isnan(float(value)))


def _commute(lay: n.FunDecl, mf: n.Map) -> n.Map | None:
    """`m2` with `lay << mf << x == m2 << lay << x`, or None: the layout's "commute" case."""
    rule = case("commute", lay)
    return None if rule is None else rule(lay, mf)


@register(n.Pad, stage="commute")
def _across_pad(lay: n.Pad, mf: n.Map) -> n.Map | None:
    """A re-indexing pad: every function commutes with it; a constant pad: when `mf` keeps the value."""
    return mf if lay.mode != "constant" or _keeps(mf, lay.value) else None


@register(n.Slide, n.Split, stage="commute")
def _across_window(lay: n.FunDecl, mf: n.Map) -> n.Map:
    """One more level: `slide << map(f) == map(map(f)) << slide` (and `split`)."""
    return n.Map(replace(mf, label=None), label=mf.label, loc=mf.loc)


@register(n.Transpose, stage="commute")
def _across_transpose(lay: n.Transpose, mf: n.Map) -> n.Map | None:
    """When `mf` maps the elements two levels down."""
    return mf if isinstance(mf.f, n.Map) else None


@register(n.Join, stage="commute")
def _across_join(lay: n.Join, mf: n.Map) -> n.Map | None:
    """`join << map(map(f)) == map(f) << join`."""
    return replace(mf.f, label=mf.label) if isinstance(mf.f, n.Map) else None


@register(n.Map, stage="commute")
def _across_map(lay: n.Map, mf: n.Map) -> n.Map | None:
    """`map(layout)`, level by level."""
    if not (isinstance(mf.f, n.Map) and _movable(lay.f)):
        return None
    moved = _commute(lay.f, mf.f)
    return None if moved is None else n.Map(moved, label=mf.label, loc=mf.loc)


def _let_map(f: n.FunDecl) -> n.Map | None:
    """The map a `let` applies: `let(map(g))` or `let(v => map(g) << v)`."""
    if isinstance(f, n.Map):
        return f
    if isinstance(f, Lambda) and len(f.params) == 1 and isinstance(f.body, FunCall) \
            and isinstance(f.body.f, n.Map) and f.body.args == (f.params[0],):
        return f.body.f
    return None


def _layout(f: n.FunDecl) -> bool:
    """Whether `f` is a layout with the "commutes" trait, or a map of one."""
    return has("commutes", _under_maps(f))


def _has_slide(f: n.FunDecl) -> bool:
    """Whether `f` is a slide, or a map of one."""
    return isinstance(_under_maps(f), n.Slide)


__all__ = ["recompute_layouts", "fuse_into_stencils", "stencil_fused"]
