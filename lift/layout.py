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

from lift.errors import UnsupportedError
from lift.ir import nodes as n
from lift.ir.layoutfun import INVERTIBLE, invertible, is_layout_fun, is_layout_map
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda
from lift.types import ArrayType, TupleType, Type, VectorType, base_type, shape
from lift.views import (
    Access,
    AsScalarV,
    AsVectorV,
    ConstV,
    GatherV,
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

    Component memories are named `name_0`, `name_1`, ... (struct of arrays), and so are the
    components of a tuple that holds arrays; a private tuple of scalars and vectors keeps its
    struct type."""
    b = base_type(t)
    if isinstance(b, TupleType) and (isinstance(t, ArrayType) or space != "private" or holds_array(b)):
        depth = len(shape(t))
        parts = tuple(memory_view(f"{name}_{k}", rewrap(t, c), space) for k, c in enumerate(b.elems))
        return SoA(parts, depth, b)
    return Mem(name, t, space)


def holds_array(t: Type) -> bool:
    """Whether `t` is an array or a tuple with an array inside (such tuples never become C structs)."""
    return isinstance(t, ArrayType) or (isinstance(t, TupleType) and any(holds_array(e) for e in t.elems))


def memories(v: View) -> list[Mem]:
    """The memories at the roots of a view made by `memory_view`."""
    if isinstance(v, Mem):
        return [v]
    if isinstance(v, SoA):
        return [m for x in v.vs for m in memories(x)]
    return []


def rewrap(t: Type, inner: Type) -> Type:
    """`t` with its base type replaced by `inner`."""
    return ArrayType(rewrap(t.elem, inner), t.size) if isinstance(t, ArrayType) else inner


def layout_view(f: n.FunDecl, args: list[View], types: list[Type]) -> View:
    """The input view of a layout pattern `f` applied to views of types `types`."""
    match f:
        case n.Split(m):
            return SplitV(args[0], m)
        case n.Join():
            return JoinV(args[0], _array(types[0]).elem.size)  # type: ignore[union-attr]
        case n.Transpose() | n.TransposeW():
            return TransposeV(args[0])
        case n.Slide(size, step):
            return SlideV(args[0], size, step)
        case n.Pad(left, _, value):
            return PadV(args[0], left, _array(types[0]).size, value)
        case n.Zip():
            elem = TupleType(tuple(_array(t).elem for t in types))
            return SoA(tuple(args), 1, elem)
        case n.MakeTuple():
            return SoA(tuple(args), 0, TupleType(tuple(types)))
        case n.Get(k):
            return Proj(args[0], k)
        case n.At(i):
            return LaneV(args[0], i) if isinstance(types[0], VectorType) else Access(args[0], i)
        case n.AsVector(width):
            return AsVectorV(args[0], width)
        case n.AsScalar():
            return AsScalarV(args[0], _array(types[0]).elem.n)  # type: ignore[union-attr]
        case n.Gather():
            return GatherV(args[0], args[1], _array(types[0]).size, _array(types[1]).size)
    raise UnsupportedError(f"{f} is not a layout pattern", node=f)


def _array(t: Type) -> ArrayType:
    assert isinstance(t, ArrayType), t
    return t


def dest_views(f: n.FunDecl, dest: View, types: list[Type]) -> list[View] | None:
    """Output views for the arguments of layout pattern `f` whose result is written to `dest`.

    None when `f` cannot be inverted (get, at, pad, slide): the argument is then computed
    into its own memory and copied."""
    match f:
        case n.Split():
            return [JoinV(dest, f.n)]
        case n.Join():
            return [SplitV(dest, _array(types[0]).elem.size)]  # type: ignore[union-attr]
        case n.Transpose() | n.TransposeW():
            return [TransposeV(dest)]
        case n.AsVector(width):
            return [AsScalarV(dest, width)]
        case n.AsScalar():
            return [AsVectorV(dest, _array(types[0]).elem.n)]  # type: ignore[union-attr]
        case n.Zip(k):
            return [Proj(dest, j, 1) for j in range(k)]
        case n.MakeTuple(k):
            return [Proj(dest, j, 0) for j in range(k)]
    return None


# --------------------------------------------------------- layout functions


def expr_view(e: Expr, env: dict[int, View]) -> View:
    """The view of an expression that computes nothing (layout functions of parameters and constants)."""
    match e:
        case n.Param():
            return env[e.id]
        case n.Literal(value, t):
            return ConstV(value, t)
        case FunCall(f, args):
            return apply_view(f, [expr_view(a, env) for a in args], [a.type for a in args], env)
    raise UnsupportedError(f"cannot view {e!r}", node=e)


def apply_view(f: FunDecl, args: list[View], types: list[Type], env: dict[int, View]) -> View:
    """The view of layout function `f` applied to views `args` of types `types`."""
    match f:
        case Lambda(params, body) | n.Let(f=Lambda(params, body)):
            return expr_view(body, {**env, **{p.id: v for p, v in zip(params, args)}})
        case n.AbstractMap(f=g):
            elem = _array(types[0]).elem
            return MapV(args[0], lambda el: apply_view(g, [el], [elem], env))
    if isinstance(f, n.LAYOUT):
        return layout_view(f, args, types)
    raise UnsupportedError(f"{str(f)[:60]} computes; it is not a layout function", node=f)


def arg_dests(f: FunDecl, dest: View, types: list[Type]) -> list[View] | None:
    """Output views for the arguments of layout function `f` whose result is written to `dest`;
    None when `f` is not `invertible` (the argument is then computed into its own memory)."""
    if not invertible(f):
        return None
    match f:
        case n.AbstractMap(f=g):
            elem = _array(types[0]).elem
            return [MapV(dest, lambda d: _first(arg_dests(g, d, [elem])))]
        case Lambda((p,), body):
            return [_chain_dest(body, p, dest)]
    return dest_views(f, dest, types)


def _chain_dest(e: Expr, p: n.Param, dest: View) -> View:
    if e is p or e == p:
        return dest
    assert isinstance(e, FunCall)
    (a,) = e.args
    return _chain_dest(a, p, _first(arg_dests(e.f, dest, [a.type])))


def _first(views: list[View] | None) -> View:
    assert views is not None
    return views[0]


__all__ = [
    "memory_view", "memories", "holds_array", "rewrap", "layout_view", "dest_views", "INVERTIBLE",
    "is_layout_fun", "is_layout_map", "expr_view", "apply_view", "invertible", "arg_dests",
]
