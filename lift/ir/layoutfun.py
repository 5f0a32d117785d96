"""Which functions only rearrange data (IR predicates the memory pass, the views and the code
generator must agree on; lift.layout builds their views).

A layout pattern is one whose family in the registry (lift.ir.registry) has a `layout` kind. A
layout function is a layout pattern, a map of a layout function, or a lambda whose body only
applies layout functions to its parameters (`map(transpose)`, `map(join)`): a view that never
materialises. An invertible one (the "reshape" and "combine" families: split, join, transpose,
as_vector, as_scalar, zip, tuple; maps of those, lambdas chaining them on their one parameter)
can have its arguments written through its destination.

Whether a function computes has three meanings, all from the registry's traits: `computes` (a
user function, a reduction or a constant: fusion and lowering), `writes_values` (a user function
or a constant: the memory a map writes, for address spaces and the mapping's context) and
`calls_userfun` (a user function: the recomputation of producers under stencils and kernel
boundaries).
"""

from __future__ import annotations

from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda
from lift.ir.paths import walk
from lift.ir.registry import INVERTIBLE, REGISTRY, has

_INVERTIBLE_KINDS = ("reshape", "combine")


def is_layout_pattern(f: FunDecl) -> bool:
    """Whether `f` is a layout pattern (its family's `layout` kind is set)."""
    entry = REGISTRY.get(type(f))
    return entry is not None and entry.layout is not None


def is_layout_fun(f: FunDecl) -> bool:
    """Whether `f` only rearranges data: a layout pattern, a map of a layout function, or a
    lambda whose body applies only layout functions to its parameters."""
    if isinstance(f, n.AbstractMap):
        return is_layout_fun(f.f)
    if isinstance(f, Lambda):
        return _layout_expr(f.body)
    return is_layout_pattern(f)


def is_layout_map(f: FunDecl) -> bool:
    """Whether `f` is a map (of any kind) of a layout function: a view, not a loop."""
    return isinstance(f, n.AbstractMap) and is_layout_fun(f.f)


def _layout_expr(e: Expr) -> bool:
    if isinstance(e, FunCall):
        return is_layout_fun(e.f) and all(_layout_expr(a) for a in e.args)
    return isinstance(e, n.Param)


def invertible(f: FunDecl) -> bool:
    """Whether the arguments of layout function `f` can be written through its destination
    (`arg_dests` is not None): split, join, transpose, as_vector, as_scalar, zip, tuple,
    maps of those, and lambdas chaining them on their one parameter."""
    if isinstance(f, n.AbstractMap):
        return invertible(f.f)
    if isinstance(f, Lambda):
        return len(f.params) == 1 and _invertible_chain(f.body, f.params[0])
    entry = REGISTRY.get(type(f))
    return entry is not None and entry.layout in _INVERTIBLE_KINDS


def _invertible_chain(e: Expr, p: n.Param) -> bool:
    if e is p or e == p:
        return True
    return (isinstance(e, FunCall) and len(e.args) == 1 and invertible(e.f)
            and _invertible_chain(e.args[0], p))


def computes(g: n.Node) -> bool:
    """Whether `g` computes: it calls a user function, reduces, or makes a constant (a map of views
    does not); the registry's "computes" trait anywhere in `g`."""
    return any(has("computes", m) for _, m in walk(g))


def writes_values(g: n.Node) -> bool:
    """Whether `g` writes values of its own: a user function or a constant somewhere (the
    registry's "writes" trait; unlike `computes`, a reduction of views alone does not)."""
    return any(has("writes", m) for _, m in walk(g))


def calls_userfun(g: n.Node) -> bool:
    """Whether `g` applies a user function somewhere (the registry's "userfun" trait): a producer
    worth recomputing, unlike one that only reduces or makes constants (`computes`)."""
    return any(has("userfun", m) for _, m in walk(g))


__all__ = ["computes", "writes_values", "calls_userfun", "INVERTIBLE", "is_layout_pattern", "is_layout_fun",
           "is_layout_map", "invertible"]
