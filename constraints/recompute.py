"""Fused recomputation where no barrier placement exists: a slide of a computed array at the output.

`slide(n, s) << map(f) << x` at the program's result (possibly under other windows) cannot be
written in place (windows overlap) and its copy would read values other work-groups write,
which no barrier orders. The slide is moved before the map, which then recomputes `f` per
window element: `map(map(f)) << slide(n, s) << x` (the same value; `f` runs n/s times per
element). The outer map keeps the original map's label, so mapping choices still name it.
"""

from __future__ import annotations

from dataclasses import replace

from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, Lambda, Node
from lift.typecheck import typecheck


def recompute_layouts(expr: Node) -> Node:
    """`expr` with every result-position `slide << map(f)` turned into `map(map(f)) << slide`."""
    if not isinstance(expr, Lambda):
        return expr
    body = _push(expr.body)
    if body is expr.body:
        return expr
    out = replace(expr, body=body)
    typecheck(out)
    return out


def _push(e: Expr) -> Expr:
    """Move result-position slides below the maps that compute their input."""
    if _is_map_of_slide(e):  # map(slide) << map(map(f)) << x -> map(map(map(f))) << map(slide) << x
        arg = e.args[0]
        if isinstance(arg, FunCall) and isinstance(arg.f, n.Map) and isinstance(arg.f.f, n.Map) and len(arg.args) == 1:
            inner = n.Map(n.Map(arg.f.f.f, loc=arg.f.loc), label=arg.f.f.label, loc=arg.f.loc)
            return FunCall(n.Map(inner, label=arg.f.label, loc=arg.f.loc),
                           (FunCall(e.f, (arg.args[0],), loc=e.loc),), loc=arg.loc)
        return e
    if not (isinstance(e, FunCall) and isinstance(e.f, n.Slide) and len(e.args) == 1):
        return e
    arg = _push(e.args[0])
    if isinstance(arg, FunCall) and isinstance(arg.f, n.Map) and len(arg.args) == 1:
        inner = n.Map(arg.f.f, loc=arg.f.loc)
        outer = n.Map(inner, label=arg.f.label, loc=arg.f.loc)
        return FunCall(outer, (FunCall(e.f, (arg.args[0],), loc=e.loc),), loc=arg.loc)
    return e if arg is e.args[0] else FunCall(e.f, (arg,), loc=e.loc)


def _is_map_of_slide(e: Expr) -> bool:
    return isinstance(e, FunCall) and isinstance(e.f, n.Map) and isinstance(e.f.f, n.Slide) and len(e.args) == 1


__all__ = ["recompute_layouts"]
