"""Interchange rules: swapping nested maps, a map of reductions, and transpose identities."""

from __future__ import annotations

from typing import Any

from lift.ir.nodes import (
    Expr,
    FunCall,
    FunDecl,
    Get,
    Lambda,
    Map,
    Param,
    Reduce,
    ReduceSeq,
    Transpose,
    Zip,
)
from lift.rules.match import PVar, call, either, exact, expr, fun, named, var
from lift.rules.rule import Rule
from lift.rules.terms import array_type, as_call, elem, lam, mentions, meta, refresh
from lift.rules.terms import call as apply_fun
from lift.typecheck import type_of
from lift.types import ArrayType, TupleType

f = fun("f")
x = expr("x")
lam_f: Any = PVar("f", Lambda)

# The shapes of `f` the side conditions read, as patterns of the function as written (`exact`).
_a = var("a", Param)
_op = fun("op")
_INNER_MAP = Lambda((_a,), call(Map(fun("g")), expr("ys")))  # a => map(g) << ys
# a => reduce(op, z) << a, either form
_ROW_REDUCE = Lambda((_a,), call(named("red", either(Reduce(_op), ReduceSeq(_op))), expr("z"), _a))


def _inner_map(f: Lambda) -> tuple[FunDecl, Expr] | None:
    """`(g, ys)` for `f = a => map(g) << ys` with `ys` not using `a`."""
    b = exact(_INNER_MAP, f)
    if b is None:
        return None
    ys = b["ys"]
    return None if mentions(ys, f.params) else (b["g"], ys)


def _map_map_interchange(f: Lambda, x: Expr, matched: FunCall) -> Expr:
    inner = _inner_map(f)
    assert inner is not None  # the rule's side condition
    g, ys = inner
    a = f.params[0]
    inner_map = as_call(f.body).f

    def swapped(b: Param) -> Expr:
        return FunCall(Map(Lambda((a,), apply_fun(g, [b])), **meta(inner_map)), (x,))

    outer = FunCall(Map(lam([elem(ys)], swapped, ["b"]), **meta(matched.f)), (ys,), **meta(matched))
    return FunCall(Transpose(), (outer,))


map_map_interchange = Rule(
    "map_map_interchange",
    law="map(a => map(b => f(a, b)) << ys) << x -> transpose << map(b => map(a => f(a, b)) << x) << ys",
    lhs=call(Map(lam_f), x), where=lambda f: _inner_map(f) is not None,
    rhs=_map_map_interchange,
    doc="Swaps two nested maps when the inner array does not depend on the outer element.",
)


def _nested(x: Expr) -> bool:
    return isinstance(elem(x), ArrayType)


transpose_both_sides = Rule(
    "transpose_both_sides", law="map(map(f)) << x -> transpose << map(map(f)) << transpose << x",
    lhs=call(Map(Map(f)), x), where=lambda x: _nested(x),
    rhs=lambda f, x, matched: FunCall(Transpose(), (FunCall(
        Map(Map(f), **meta(matched.f)), (FunCall(Transpose(), (x,)),), **meta(matched)),)),
    doc="An element-wise map over a matrix commutes with transposition.",
)


def _row_reduce(f: Lambda) -> tuple[FunDecl, Expr, type] | None:
    """`(op, z, cls)` for `f = r => reduce(op, z) << r` with `op` and `z` not using `r`."""
    b = exact(_ROW_REDUCE, f)
    if b is None:
        return None
    op, z = b["op"], b["z"]
    if mentions(z, f.params) or mentions(op, f.params):
        return None
    return op, z, type(b["red"])


def _map_reduce_interchange(f: Lambda, x: Expr, matched: FunCall) -> Expr:
    found = _row_reduce(f)
    assert found is not None  # the rule's side condition
    op, z, cls = found
    rows = array_type(x)
    row = rows.elem
    assert isinstance(row, ArrayType)  # x holds rows: f reduces each
    u, t, n = type_of(z), row.elem, rows.size
    init = FunCall(Map(lam([elem(x)], lambda _: refresh(z), ["row"])), (refresh(x),))

    def step(acc: Param, col: Param) -> Expr:
        pair = lam([TupleType((u, t))], lambda p: apply_fun(
            op, [FunCall(Get(0), (p,)), FunCall(Get(1), (p,))]), ["p"])
        return FunCall(Map(pair), (FunCall(Zip(2), (acc, col)),))

    body = lam([ArrayType(u, n), ArrayType(t, n)], step, ["accs", "col"])
    return FunCall(cls(body, **meta(matched.f)), (init, FunCall(Transpose(), (x,))), **meta(matched))


map_reduce_interchange = Rule(
    "map_reduce_interchange",
    law="map(r => reduce(f, z) << r) << x -> "
        "reduce((accs, col) => map(f) << zip(accs, col), map(_ => z) << x) << transpose << x",
    lhs=call(Map(lam_f), x), where=lambda f: _row_reduce(f) is not None,
    rhs=_map_reduce_interchange,
    doc="Row reductions become one reduction over columns with an array of accumulators.",
)

transpose_transpose_id = Rule(
    "transpose_transpose_id", law="transpose << transpose << x -> x",
    lhs=call(Transpose(), call(Transpose(), x)), rhs=lambda x: x,
    doc="Transposing twice is the identity.",
)

RULES = (map_map_interchange, transpose_both_sides, map_reduce_interchange, transpose_transpose_id)
