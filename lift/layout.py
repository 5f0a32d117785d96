"""Views of memories and of layout functions (thesis 2.3.2.2): where values live, never copies.

`memory_view` is the view of a fresh memory (struct of arrays for tuples). `layout_view` is
the input view of a layout pattern; `apply_view` extends it to layout *functions*: maps and
lambdas whose bodies only apply layout patterns (`map(transpose)`, `map(join)`), which are
views too and never materialise. `arg_dests` gives the output views through which the
arguments of an invertible layout function are written when its result goes to a
destination, e.g. the producer under `map(join)` writes through `map(split)` of the
destination; `invertible` says when that is possible (the memory pass and the code
generator must agree on it).
"""

from __future__ import annotations

from typing import cast

from lift.errors import UnsupportedError
from lift.ir import nodes as n
from lift.ir.layoutfun import INVERTIBLE, invertible, is_layout_fun, is_layout_map, is_layout_pattern
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda
from lift.ir.registry import case, register, table
from lift.types import ArrayType, TupleType, Type, VectorType, base_type, holds_array, rewrap, shape, split_memory
from lift.views import (
    Access,
    AsScalarV,
    AsVectorV,
    ConstV,
    IotaV,
    JoinV,
    LaneV,
    MapV,
    Mem,
    PadV,
    Proj,
    SlideV,
    SoA,
    SplitV,
    TransposeV,
    View,
)

# ---------------------------------------------------------------- memories


def memory_view(name: str, t: Type, space: str) -> View:
    """The view of a fresh memory of type `t`; arrays of tuples become one memory per component.

    Component memories are named `name_0`, `name_1`, ... (struct of arrays: `lift.types.memory_names`
    lists them), and so are the components of a tuple that holds arrays; a private tuple of scalars
    and vectors keeps its struct type."""
    if split_memory(t, space):
        b = cast(TupleType, base_type(t))
        parts = tuple(memory_view(f"{name}_{k}", rewrap(t, c), space) for k, c in enumerate(b.elems))
        return SoA(parts, len(shape(t)), b)
    return Mem(name, t, space)


def memories(v: View) -> list[Mem]:
    """The memories at the roots of a view made by `memory_view`."""
    if isinstance(v, Mem):
        return [v]
    if isinstance(v, SoA):
        return [m for x in v.vs for m in memories(x)]
    return []


def layout_view(f: n.FunDecl, args: list[View], types: list[Type]) -> View:
    """The input view of a layout pattern `f` applied to views of types `types`."""
    if not is_layout_pattern(f):
        raise UnsupportedError(f"{f} is not a layout pattern", node=f)
    return apply_view(f, args, types, {})


def dest_views(f: n.FunDecl, dest: View, types: list[Type]) -> list[View] | None:
    """Output views for the arguments of layout pattern `f` whose result is written to `dest`.

    None when `f` cannot be inverted (get, at, pad, slide): the argument is then computed
    into its own memory and copied."""
    rule = case("dest", f) if is_layout_pattern(f) else None
    return rule(f, dest, types) if rule is not None else None


# --------------------------------------------------------- layout functions


def expr_view(e: Expr, env: dict[int, View]) -> View:
    """The view of an expression that computes nothing (layout functions of parameters and constants)."""
    if isinstance(e, FunCall):
        return apply_view(e.f, [expr_view(a, env) for a in e.args], [a.type for a in e.args], env)
    if isinstance(e, n.Param):
        return env[e.id]
    if isinstance(e, n.Literal):
        return ConstV(e.value, e.ltype)
    raise UnsupportedError(f"cannot view {e!r}", node=e)


def apply_view(f: FunDecl, args: list[View], types: list[Type], env: dict[int, View]) -> View:
    """The view of layout function `f` applied to views `args` of types `types`: the case its
    family registered (lift.ir.registry, stage "view")."""
    rule = _VIEWS.get(type(f)) or case("view", f)
    if rule is None:
        raise UnsupportedError(f"{str(f)[:60]} computes; it is not a layout function", node=f)
    return rule(f, args, types, env)


def arg_dests(f: FunDecl, dest: View, types: list[Type]) -> list[View] | None:
    """Output views for the arguments of layout function `f` whose result is written to `dest`;
    None when `f` is not `invertible` (the argument is then computed into its own memory)."""
    if not invertible(f):
        return None
    rule = case("dest", f)
    return rule(f, dest, types) if rule is not None else None


def _chain_dest(e: Expr, p: n.Param, dest: View) -> View:
    if e is p or e == p:
        return dest
    assert isinstance(e, FunCall)
    (a,) = e.args
    return _chain_dest(a, p, _first(arg_dests(e.f, dest, [a.type])))


def _first(views: list[View] | None) -> View:
    assert views is not None
    return views[0]


def _array(t: Type) -> ArrayType:
    assert isinstance(t, ArrayType), t
    return t


def _inner(t: Type) -> ArrayType:
    """The element type of an array of arrays `t`."""
    return _array(_array(t).elem)


def _lanes(t: Type) -> int:
    """The width of the vectors an array `t` holds."""
    elem = _array(t).elem
    if isinstance(elem, TupleType):  # tuples of vectors of one width (as_scalar's lanes of tuples)
        elem = elem.elems[0]
    assert isinstance(elem, VectorType), t
    return elem.n


# ------------------------------------------------------------ the cases (lift.ir.registry)

_VIEWS = table("view")
Views = list[View]
Types = list[Type]
Env = dict[int, View]


@register(n.Lambda, stage="view")
def _lambda_view(f: Lambda, args: Views, types: Types, env: Env) -> View:
    return expr_view(f.body, {**env, **{p.id: v for p, v in zip(f.params, args)}})


@register(n.Let, stage="view")
def _let_view(f: n.Let, args: Views, types: Types, env: Env) -> View:
    if not isinstance(f.f, Lambda):
        raise UnsupportedError(f"{str(f)[:60]} computes; it is not a layout function", node=f)
    return _lambda_view(f.f, args, types, env)


@register(*n.MAPS, stage="view")
def _map_view(f: n.AbstractMap, args: Views, types: Types, env: Env) -> View:
    elem = _array(types[0]).elem
    return MapV(args[0], lambda el: apply_view(f.f, [el], [elem], env))


@register(n.Split, stage="view")
def _split_view(f: n.Split, args: Views, types: Types, env: Env) -> View:
    return SplitV(args[0], f.n)


@register(n.Join, stage="view")
def _join_view(f: n.Join, args: Views, types: Types, env: Env) -> View:
    return JoinV(args[0], _inner(types[0]).size)


@register(n.Transpose, n.TransposeW, stage="view")
def _transpose_view(f: FunDecl, args: Views, types: Types, env: Env) -> View:
    return TransposeV(args[0])


@register(n.Slide, stage="view")
def _slide_view(f: n.Slide, args: Views, types: Types, env: Env) -> View:
    return SlideV(args[0], f.size, f.step)


@register(n.Pad, stage="view")
def _pad_view(f: n.Pad, args: Views, types: Types, env: Env) -> View:
    return PadV(args[0], f.left, _array(types[0]).size, f.value, f.mode)


@register(n.Zip, stage="view")
def _zip_view(f: n.Zip, args: Views, types: Types, env: Env) -> View:
    return SoA(tuple(args), 1, TupleType(tuple(_array(t).elem for t in types)))


@register(n.MakeTuple, stage="view")
def _tuple_view(f: n.MakeTuple, args: Views, types: Types, env: Env) -> View:
    return SoA(tuple(args), 0, TupleType(tuple(types)))


@register(n.Get, stage="view")
def _get_view(f: n.Get, args: Views, types: Types, env: Env) -> View:
    return Proj(args[0], f.i)


@register(n.Iota, stage="view")
def _iota_view(f: n.Iota, args: Views, types: Types, env: Env) -> View:
    return IotaV(f.n)


@register(n.At, stage="view")
def _at_view(f: n.At, args: Views, types: Types, env: Env) -> View:
    return LaneV(args[0], f.index) if isinstance(types[0], VectorType) else Access(args[0], f.index)


@register(n.AsVector, stage="view")
def _as_vector_view(f: n.AsVector, args: Views, types: Types, env: Env) -> View:
    return AsVectorV(args[0], f.n)


@register(n.AsScalar, stage="view")
def _as_scalar_view(f: n.AsScalar, args: Views, types: Types, env: Env) -> View:
    return AsScalarV(args[0], _lanes(types[0]))


# The output views of an invertible layout function's arguments (`arg_dests`), the inverse of its view.


@register(*n.MAPS, stage="dest")
def _map_dest(f: n.AbstractMap, dest: View, types: Types) -> list[View] | None:
    elem = _array(types[0]).elem
    return [MapV(dest, lambda d: _first(arg_dests(f.f, d, [elem])))]


@register(n.Lambda, stage="dest")
def _lambda_dest(f: Lambda, dest: View, types: Types) -> list[View] | None:
    (p,) = f.params
    return [_chain_dest(f.body, p, dest)]


@register(n.Split, stage="dest")
def _split_dest(f: n.Split, dest: View, types: Types) -> list[View] | None:
    return [JoinV(dest, f.n)]


@register(n.Join, stage="dest")
def _join_dest(f: n.Join, dest: View, types: Types) -> list[View] | None:
    return [SplitV(dest, _inner(types[0]).size)]


@register(n.Transpose, n.TransposeW, stage="dest")
def _transpose_dest(f: FunDecl, dest: View, types: Types) -> list[View] | None:
    return [TransposeV(dest)]


@register(n.AsVector, stage="dest")
def _as_vector_dest(f: n.AsVector, dest: View, types: Types) -> list[View] | None:
    return [AsScalarV(dest, f.n)]


@register(n.AsScalar, stage="dest")
def _as_scalar_dest(f: n.AsScalar, dest: View, types: Types) -> list[View] | None:
    return [AsVectorV(dest, _lanes(types[0]))]


@register(n.Zip, stage="dest")
def _zip_dest(f: n.Zip, dest: View, types: Types) -> list[View] | None:
    return [Proj(dest, j, 1) for j in range(f.n)]


@register(n.MakeTuple, stage="dest")
def _tuple_dest(f: n.MakeTuple, dest: View, types: Types) -> list[View] | None:
    return [Proj(dest, j, 0) for j in range(f.n)]


__all__ = [
    "memory_view", "memories", "holds_array", "rewrap", "layout_view", "dest_views", "INVERTIBLE",
    "is_layout_fun", "is_layout_map", "expr_view", "apply_view", "invertible", "arg_dests",
]
