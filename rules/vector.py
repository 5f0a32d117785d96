"""Vectorisation rules: `vectorise` and the as_vector/as_scalar identities."""

from __future__ import annotations

from typing import Any

from lift.arith import free_vars
from lift.arith.ops import as_int
from lift.ir.nodes import AsScalar, AsVector, Expr, FunCall, FunDecl, Lambda, Map, UserFun, Vectorise
from lift.rules.match import PVar, call, expr, fun
from lift.rules.rule import REQUIRED, Rule, divides
from lift.rules.terms import elem, eta, length, meta
from lift.typecheck import type_of
from lift.types import Double, Float, Int, ScalarType, VectorType

f = fun("f")
x = expr("x")
k: Any = PVar("k")

WIDTHS = (2, 4, 8, 16)
VECTOR_SCALARS = (Float, Double, Int)


def _result(f: FunDecl) -> object:
    f = eta(f)
    if isinstance(f, UserFun):
        return f.out_type
    if isinstance(f, Lambda):
        return type_of(f.body)
    return None


def vectorisable(f: FunDecl, x: Expr) -> bool:
    """A map of `f` over `x` can be vectorised: scalars in, scalars out."""
    return elem(x) in VECTOR_SCALARS and _result(f) in VECTOR_SCALARS and eta(f).arity == 1


def _vectorise(f: FunDecl, x: Expr, n: int, matched: FunCall) -> Expr:
    vecs = FunCall(AsVector(n), (x,))
    mapped = FunCall(Map(Vectorise(eta(f), n), **meta(matched.f)), (vecs,), **meta(matched))
    return FunCall(AsScalar(), (mapped,))


def _widths(x: Expr) -> dict[str, tuple[int, ...]]:
    n = length(x)
    if free_vars(n):
        return {"n": (2, 4)}
    return {"n": tuple(w for w in WIDTHS if as_int(n) % w == 0)}


vectorise = Rule(
    "vectorise", law="map(f) << x -> as_scalar << map(vectorise(f, n)) << as_vector(n) << x",
    lhs=call(Map(f), x), params={"n": REQUIRED},
    where=lambda f, x, n, matched: vectorisable(f, x) and (n is None or n in WIDTHS) and divides(
        n, length(x), matched, "vectorise"),
    rhs=_vectorise, suggest=_widths,
    doc="Applies a scalar function to vectors of n lanes (thesis 2.3.2.1).",
)


def _vectors_of(x: Expr, k: int) -> bool:
    t = elem(x)
    return isinstance(t, VectorType) and t.n == k


as_vector_as_scalar_id = Rule(
    "as_vector_as_scalar_id", law="as_vector(k) << as_scalar << x -> x   (x : [<T>k]m)",
    lhs=call(AsVector(k), call(AsScalar(), x)), where=lambda k, x: _vectors_of(x, k),
    rhs=lambda x: x, doc="Flattening vectors then regrouping them by the same width is the identity.",
)

as_scalar_as_vector_id = Rule(
    "as_scalar_as_vector_id", law="as_scalar << as_vector(k) << x -> x",
    lhs=call(AsScalar(), call(AsVector(k), x)),
    where=lambda k, x, matched: isinstance(elem(x), ScalarType) and divides(k, length(x), matched),
    rhs=lambda x: x, doc="Grouping scalars into vectors then flattening them is the identity.",
)

RULES = (vectorise, as_vector_as_scalar_id, as_scalar_as_vector_id)
