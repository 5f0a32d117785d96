"""Which functions only rearrange data (IR predicates the memory pass, the views and the code
generator must agree on; lift.layout builds their views).

A layout function is a layout pattern, a map of a layout function, or a lambda whose body only
applies layout functions to its parameters (`map(transpose)`, `map(join)`): a view that never
materialises. An invertible one (split, join, transpose, as_vector, as_scalar, zip, tuple, maps
of those, lambdas chaining them on their one parameter) can have its arguments written through
its destination.
"""

from __future__ import annotations

from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda

INVERTIBLE = (n.Split, n.Join, n.Transpose, n.TransposeW, n.AsVector, n.AsScalar, n.Zip, n.MakeTuple)


def is_layout_fun(f: FunDecl) -> bool:
    """Whether `f` only rearranges data: a layout pattern, a map of a layout function, or a
    lambda whose body applies only layout functions to its parameters."""
    match f:
        case n.AbstractMap(f=g):
            return is_layout_fun(g)
        case Lambda(_, body):
            return _layout_expr(body)
    return isinstance(f, n.LAYOUT)


def is_layout_map(f: FunDecl) -> bool:
    """Whether `f` is a map (of any kind) of a layout function: a view, not a loop."""
    return isinstance(f, n.AbstractMap) and is_layout_fun(f.f)


def _layout_expr(e: Expr) -> bool:
    match e:
        case n.Param():
            return True
        case FunCall(f, args):
            return is_layout_fun(f) and all(_layout_expr(a) for a in args)
    return False


def invertible(f: FunDecl) -> bool:
    """Whether the arguments of layout function `f` can be written through its destination
    (`arg_dests` is not None): split, join, transpose, as_vector, as_scalar, zip, tuple,
    maps of those, and lambdas chaining them on their one parameter."""
    match f:
        case n.AbstractMap(f=g):
            return invertible(g)
        case Lambda((p,), body):
            return _invertible_chain(body, p)
    return isinstance(f, INVERTIBLE)


def _invertible_chain(e: Expr, p: n.Param) -> bool:
    if e is p or e == p:
        return True
    return (isinstance(e, FunCall) and len(e.args) == 1 and invertible(e.f)
            and _invertible_chain(e.args[0], p))


__all__ = ["INVERTIBLE", "is_layout_fun", "is_layout_map", "invertible"]
