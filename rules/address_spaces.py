"""Memory rules: address-space wrappers and the identity copy that materialises a value."""

from __future__ import annotations

from typing import Any, cast

from lift.ir.layoutfun import writes_values
from lift.ir.nodes import (
    MAPS,
    REDUCES,
    Expr,
    FunCall,
    FunDecl,
    Literal,
    Map,
    Node,
    ToGlobal,
    ToLocal,
    ToPrivate,
    UserFun,
)
from lift.rules.match import PVar
from lift.rules.rule import Rule
from lift.rules.terms import eta, meta
from lift.types import ArrayType, ScalarType, Type, VectorType
from lift.userfun.builtins import id as id_fun
from lift.userfun.facts import is_identity

CONCRETE: tuple[type[FunDecl], ...] = (*MAPS, *REDUCES, UserFun)


def _writer(g: object) -> bool:
    """A map, reduction or user function that writes memory (a map of layouts, `map(pad(1, 0, 0))`,
    is a view: an address space on it means nothing and the code generator cannot read it)."""
    return isinstance(g, CONCRETE) and writes_values(g)


def _to_memory(cls: type, name: str, what: str) -> Rule:
    def rhs(g: FunDecl, args: tuple[Expr, ...], matched: FunCall) -> Expr:
        return FunCall(cls(g), args, **meta(matched))

    return Rule(name, law=f"g(xs) -> {what}(g)(xs)   (g a map, reduction or user function)",
                lhs=FunCall(cast(Any, PVar("g", FunDecl, _writer)), cast(Any, PVar("args"))), rhs=rhs,
                doc=f"The result of g is written to {what.split('_')[1]} memory.")


to_private_memory = _to_memory(ToPrivate, "to_private_memory", "to_private")
to_local_memory = _to_memory(ToLocal, "to_local_memory", "to_local")
to_global_memory = _to_memory(ToGlobal, "to_global_memory", "to_global")


def copy_fun(t: Type) -> FunDecl | None:
    """The identity copy for values of type `t`: `id`, `map(id)`, `map(map(id))`, ... (or None)."""
    if isinstance(t, (ScalarType, VectorType)):
        return cast(FunDecl, id_fun.specialise(t))
    if isinstance(t, ArrayType):
        inner = copy_fun(t.elem)
        return None if inner is None else Map(inner)
    return None


def is_copy(f: Node) -> bool:
    """Whether `f` is an identity copy (`id`, a user's own `x => x`, `map(id)`, ...)."""
    f = eta(f) if isinstance(f, FunDecl) else f
    if isinstance(f, UserFun):
        return is_identity(f)
    return isinstance(f, MAPS) and is_copy(f.f)


def _copyable(x: Expr) -> bool:
    if isinstance(x, Literal) or (isinstance(x, FunCall) and is_copy(x.f)):
        return False
    return copy_fun(x.type) is not None


add_copy = Rule(
    "add_copy", law="x -> map(id) << x   (id, map(map(id)), ... by the type of x)",
    lhs=PVar("x", Expr, _copyable),
    rhs=lambda x: FunCall(cast(FunDecl, copy_fun(x.type)), (x,)),  # _copyable: not None
    doc="An identity copy, so that a value can be materialised (e.g. in local memory).",
)

RULES = (to_private_memory, to_local_memory, to_global_memory, add_copy)
