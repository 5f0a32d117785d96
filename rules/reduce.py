"""Reduction rules: splitting a reduction into partial reductions and a final one.

Both rules need `f` to be associative with neutral element `z`: a function that computes the
built-in `add` (0), `mult` (1), or the idempotent `max_` and `min_` (any `z`), whatever it is
called (`lift.userfun.facts`), or one whose author vouched for it (`user_fun(..., associative=True,
neutral=...)`), or the sum of tuples component by component (`facts.tuple_sums`) from a tuple of
zeros; for another operator the caller vouches with `associative=True`.
"""

from __future__ import annotations

from lift.arith import as_arith
from lift.ir.alpha import alpha_equal
from lift.ir.nodes import Expr, FunCall, FunDecl, Join, Lambda, Literal, MakeTuple, Map, Param, Reduce, Split
from lift.rules.match import any_, call, exact, expr, fun, var
from lift.rules.rule import REQUIRED, Rule, divides
from lift.rules.split_join import divisors
from lift.rules.terms import constant, elem, eta, lam, length, meta, refresh
from lift.userfun import facts

f = fun("f")
z, x, xs = expr("z"), expr("x"), expr("xs")

_CONSTANT_TUPLE = FunCall(MakeTuple(any_()), var("args", tuple))  # tuple(..)
_c = var("c", Param)
_PARTIALS = Lambda((_c,), call(Reduce(f), z, _c))  # c => reduce(f, z) << c


def is_monoid(f: FunDecl, z: Expr) -> bool:
    """Whether `f` is an associative operator (by what it computes, or vouched for) and `z` its
    neutral element."""
    op = facts.operator(eta(f))
    if op is not None:
        return op.is_neutral(z)
    return zero_tuple_sum(f, z)


def zero_tuple_sum(f: FunDecl, z: Expr) -> bool:
    """Whether `f` adds tuples component by component (`facts.tuple_sums`) and `z` is the
    constant tuple of zeros (its neutral element)."""
    k = facts.tuple_sums(eta(f))
    t = exact(_CONSTANT_TUPLE, z)
    return (k is not None and t is not None and len(t["args"]) == k
            and all(isinstance(a, Literal) and a.value == 0 for a in t["args"]))


def folds_in_order(f: FunDecl, z: Expr) -> bool:
    """Whether chunks of `reduce(f, z) << x` may each be folded from `z` and their partial results
    folded in their order from `z` (the chunked form with a sequential combine): `is_monoid`, or
    an arg-min/arg-max step (`facts.selection`) from a constant tuple whose key is not NaN (the
    fold then holds only non-NaN keys, on which the step is associative; not commutative)."""
    if is_monoid(f, z):
        return True
    sel = facts.selection(eta(f))
    t = exact(_CONSTANT_TUPLE, z)
    if sel is None or t is None or not constant(z):
        return False
    key = t["args"][sel.key]
    return isinstance(key, Literal) and key.value == key.value


def _partials(f: FunDecl, z: Expr, chunks: Expr) -> Expr:
    """`map(c => reduce(f, z) << c) << chunks`."""
    inner = lam([elem(chunks)], lambda c: FunCall(Reduce(f), (refresh(z), c)), ["chunk"])
    return FunCall(Map(inner), (chunks,))


def _partial_reduce(f: FunDecl, z: Expr, x: Expr, n: int, matched: FunCall) -> Expr:
    chunks = FunCall(Split(as_arith(n)), (x,))
    return FunCall(Reduce(f, **meta(matched.f)), (z, _partials(f, z, chunks)), **meta(matched))


partial_reduce = Rule(
    "partial_reduce",
    law="reduce(f, z) << x -> reduce(f, z) << map(c => reduce(f, z) << c) << split(n) << x",
    lhs=call(Reduce(f), z, x), params={"n": REQUIRED, "associative": False},
    where=lambda f, z, x, n, associative, matched: (
        (associative or is_monoid(f, z)) and divides(n, length(x), matched, "partial_reduce")),
    rhs=_partial_reduce, suggest=lambda x: {"n": divisors(length(x))},
    doc="Partial reductions of chunks of n elements, then a final reduction of the partial results.",
)


def _partial_reduce_split_join(f: FunDecl, z: Expr, xs: Expr, matched: FunCall) -> Expr:
    return FunCall(Reduce(f, **meta(matched.f)), (z, _partials(f, z, xs)), **meta(matched))


partial_reduce_split_join = Rule(
    "partial_reduce_split_join",
    law="reduce(f, z) << join << xs -> reduce(f, z) << map(c => reduce(f, z) << c) << xs",
    lhs=call(Reduce(f), z, call(Join(), xs)), params={"associative": False},
    where=lambda f, z, associative: associative or is_monoid(f, z),
    rhs=_partial_reduce_split_join,
    doc="A reduction of a flattened array reduces each chunk, then the partial results.",
)



def _is_partials(f: FunDecl, z: Expr, g: FunDecl) -> bool:
    """`g` is `c => reduce(f, z) << c` (the form partial_reduce_split_join produces)."""
    b = exact(_PARTIALS, g, {"f": f})
    return b is not None and alpha_equal(b["z"], z)


partial_reduce_join = Rule(
    "partial_reduce_join",
    law="reduce(f, z) << map(c => reduce(f, z) << c) << xs -> reduce(f, z) << join << xs",
    lhs=call(Reduce(f), z, call(Map(fun("g")), xs)), params={"associative": False},
    where=lambda f, z, g, associative: _is_partials(f, z, g) and (associative or is_monoid(f, z)),
    rhs=lambda f, z, xs, matched: FunCall(Reduce(f, **meta(matched.f)), (z, FunCall(Join(), (xs,))),
                                          **meta(matched)),
    doc="The inverse of partial_reduce_split_join: one reduction over all the chunks.",
)

RULES = (partial_reduce, partial_reduce_split_join, partial_reduce_join)
