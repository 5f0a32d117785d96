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
"""

from __future__ import annotations

from dataclasses import replace

from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, Lambda, Node
from lift.typecheck import typecheck


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
    chain: list[FunCall] = []  # the result-position layouts, outermost first
    cur = e
    while isinstance(cur, FunCall) and len(cur.args) == 1 and _layout(cur.f):
        chain.append(cur)
        cur = cur.args[0]
    if not any(_has_slide(c.f) for c in chain):
        return e
    if isinstance(cur, FunCall) and isinstance(cur.f, n.Let) and len(cur.args) == 1 \
            and isinstance(cur.args[0], n.Param) and _let_map(cur.f.f) is not None:
        cur = FunCall(_let_map(cur.f.f), cur.args, loc=cur.loc)  # let of a parameter: nothing to evaluate once
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


def _commute(lay: n.FunDecl, mf: n.Map) -> n.Map | None:
    """`m2` with `lay << mf << x == m2 << lay << x`, or None."""
    match lay:
        case n.Slide() | n.Split():
            return n.Map(replace(mf, label=None), label=mf.label, loc=mf.loc)
        case n.Transpose() if isinstance(mf.f, n.Map):
            return mf
        case n.Join() if isinstance(mf.f, n.Map):
            return replace(mf.f, label=mf.label)
        case n.Map(f=inner) if isinstance(mf.f, n.Map) and _layout(inner):
            moved = _commute(inner, mf.f)
            return None if moved is None else n.Map(moved, label=mf.label, loc=mf.loc)
    return None


def _let_map(f: n.FunDecl) -> n.Map | None:
    """The map a `let` applies: `let(map(g))` or `let(v => map(g) << v)`."""
    if isinstance(f, n.Map):
        return f
    if isinstance(f, Lambda) and len(f.params) == 1 and isinstance(f.body, FunCall) \
            and isinstance(f.body.f, n.Map) and f.body.args == (f.params[0],):
        return f.body.f
    return None


def _layout(f: n.FunDecl) -> bool:
    return isinstance(f, n.Slide | n.Split | n.Transpose | n.Join) or (isinstance(f, n.Map) and _layout(f.f))


def _has_slide(f: n.FunDecl) -> bool:
    return isinstance(f, n.Slide) or (isinstance(f, n.Map) and _has_slide(f.f))


__all__ = ["recompute_layouts"]
