"""The element-wise evaluator: every pattern on interpreter values, one element at a time.

This is the plain reading of the semantics (a map evaluates its body once per element, a reduce
folds left to right) and the fallback of the batched evaluator (lift.interpret.batch): with a
`Batched` evaluator given, each map and reduce is first tried batched at depth 0, and evaluated
element by element only when that evaluator cannot handle it (recorded in `Stats`).
"""

from __future__ import annotations

import builtins
import typing
from typing import Any

import numpy as np

from lift.arith import Arith, evaluate
from lift.errors import LiftTypeError, LiftValueError, UnsupportedError
from lift.interpret.values import (
    Zipped,
    axis_op,
    cast,
    dims_of,
    dt,
    index0,
    length,
    pad_axis,
    slide_axis,
    stack,
)
from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda
from lift.ir.registry import MAPS, REDUCES, RewritePoint, case, register, table
from lift.typecheck import unify
from lift.types import ArrayType, Int, ScalarType, Type, VectorType, base_type


class NotBatchable(Exception):  # noqa: N818 - control flow between the two evaluators, never escapes
    """The batched evaluator cannot evaluate this node; `reason` says why."""

    def __init__(self, reason: str, node: Any = None) -> None:
        super().__init__(reason)
        self.reason, self.node = reason, node


class Element:
    """Evaluate a program element by element; `fast` (a batched evaluator, or None) is tried first
    for every map and reduce."""

    def __init__(self, sizes: dict[str, int], wide: dict[np.dtype, np.dtype], fast: Any = None) -> None:
        self.sizes, self.wide, self.fast = sizes, wide, fast

    def size(self, e: Arith) -> int:
        return evaluate(e, self.sizes)

    def constant(self, v: Any, t: Type) -> Any:
        """A literal: a scalar, or `v` broadcast to a vector or array type (`value(0.0, [Float]4)`)."""
        if isinstance(t, ScalarType):
            return dt(t, self.wide).type(v)
        b = base_type(t)
        lanes = (b.n,) if isinstance(b, VectorType) else ()
        scal = b.scalar if isinstance(b, VectorType) else b
        return np.full(tuple(self.size(d) for d in dims_of(t)) + lanes, v,
                       dtype=dt(typing.cast(ScalarType, scal), self.wide))

    def eval(self, e: Expr, env: dict[int, Any]) -> Any:
        # the three kinds of expression (the patterns are the functions: `call`)
        if isinstance(e, FunCall):
            f = e.f
            vals = [self.eval(a, env) for a in e.args]
            if self.fast is not None and isinstance(f, (*MAPS, *REDUCES)):
                try:
                    return self.fast.at_depth0(e, f, vals, env)
                except NotBatchable as why:
                    self.fast.stats.fell_back(why, e)
            return self.call(f, vals, e, env)
        if isinstance(e, n.Param):
            try:
                return env[e.id]
            except KeyError:
                raise LiftTypeError(f"parameter {e.name} is used outside its lambda", node=e) from None
        if isinstance(e, n.Literal):
            return self.constant(e.value, e.ltype)
        raise LiftTypeError(f"cannot evaluate {e!r}", node=e)

    def call(self, f: FunDecl, vals: list[Any], node: FunCall | None, env: dict[int, Any]) -> Any:
        """Apply `f` to values; `node` is the call in the program, for errors (or None). The case
        is the one `f`'s family registered (lift.ir.registry, stage "interpret")."""
        rule = _CASES.get(type(f)) or case("interpret", f)
        if rule is None:
            raise UnsupportedError(f"the interpreter has no rule for {type(f).__name__}", node=node)
        return rule(self, f, vals, node, env)

    def map(self, g: FunDecl, xs: Any, node: FunCall | None, env: dict[int, Any]) -> Any:
        items = [self.call(g, [index0(xs, i)], node, env) for i in range(length(xs))]
        if not items:
            raise LiftValueError("map over an empty array", node=node)
        return stack(items)

    def iterate(self, k: int, g: FunDecl, x: Any, node: FunCall | None, env: dict[int, Any]) -> Any:
        for _ in range(k):
            inner = self.with_sizes(iterate_sizes(g, length_of_value(x), self))
            x = inner.call(g, [x], node, env)
        return x

    def with_sizes(self, sizes: dict[str, int]) -> Element:
        """This evaluator with more size variables bound."""
        return self if not sizes else Element({**self.sizes, **sizes}, self.wide, self.fast)


def length_of_value(x: Any) -> int | None:
    """The outer length of `x`, or None when it is not an array."""
    if isinstance(x, Zipped) or (isinstance(x, np.ndarray) and x.ndim > 0):
        return length(x)
    return None


def iterate_sizes(g: FunDecl, n_len: int | None, ev: Any) -> dict[str, int]:
    """The sizes that `g`'s parameter type binds for an argument of outer length `n_len`."""
    if not isinstance(g, Lambda) or n_len is None:
        return {}
    ptype = g.params[0].ptype
    if not isinstance(ptype, ArrayType):
        return {}
    binding = unify(ptype, ArrayType(ptype.elem, typing.cast(Arith, n_len))) or {}
    return {v: ev.size(e) for v, e in binding.items()}


def call_userfun(f: n.UserFun, vals: list[Any], wide: dict[np.dtype, np.dtype]) -> Any:
    """A user function on one element, through its Python function."""
    if f.py_fn is None:
        raise UnsupportedError(f"user function {f.name} has a raw C body and no py_fn; the "
                               f"interpreter cannot run it", node=f,
                               hint="pass py_fn= to user_fun.c")
    return cast(f.py_fn(*vals), f.out_type, wide)


# ------------------------------------------------------------ the cases (lift.ir.registry)

_CASES = table("interpret")
Vals = list[Any]
Call = FunCall | None


@register(Lambda, stage="interpret")
def _lambda(ev: Element, f: Lambda, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    return ev.eval(f.body, {**env, **{p.id: v for p, v in zip(f.params, vals)}})


@register(n.UserFun, stage="interpret")
def _userfun(ev: Element, f: n.UserFun, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    return call_userfun(f, vals, ev.wide)


@register(*n.MAPS, stage="interpret")
def _map(ev: Element, f: n.AbstractMap, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    return ev.map(f.f, vals[0], node, env)


@register(*n.REDUCES, stage="interpret")
def _reduce(ev: Element, f: n.AbstractReduce, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    acc, xs = vals
    for i in range(length(xs)):
        acc = ev.call(f.f, [acc, index0(xs, i)], node, env)
    return acc


@register(n.Zip, stage="interpret")
def _zip(ev: Element, f: n.Zip, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    return Zipped(tuple(vals), 1)


@register(n.MakeTuple, stage="interpret")
def _tuple(ev: Element, f: n.MakeTuple, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    return tuple(vals)


@register(n.Get, stage="interpret")
def _get(ev: Element, f: n.Get, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    return vals[0][f.i]


@register(n.At, stage="interpret")
def _at(ev: Element, f: n.At, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    k, x = ev.size(f.index), vals[0]
    if not 0 <= k < length(x):
        raise LiftValueError(f"index {k} out of range for length {length(x)}", node=node)
    return index0(x, k)


@register(n.Split, n.AsVector, stage="interpret")
def _split(ev: Element, f: n.Split | n.AsVector, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    m = ev.size(f.n) if isinstance(f.n, Arith) else f.n
    return axis_op(vals[0], lambda a: a.reshape((a.shape[0] // m, m) + a.shape[1:]), +1)


@register(n.Join, n.AsScalar, stage="interpret")
def _join(ev: Element, f: n.Join | n.AsScalar, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    return axis_op(vals[0], lambda a: a.reshape((a.shape[0] * a.shape[1],) + a.shape[2:]), -1)


@register(n.Slide, stage="interpret")
def _slide(ev: Element, f: n.Slide, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    sz, st = ev.size(f.size), ev.size(f.step)
    return axis_op(vals[0], lambda a: slide_axis(a, sz, st), +1)


@register(n.Iota, stage="interpret")
def _iota(ev: Element, f: n.Iota, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    return np.arange(ev.size(f.n), dtype=dt(Int, ev.wide))


@register(n.Pad, stage="interpret")
def _pad(ev: Element, f: n.Pad, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    lo, hi = ev.size(f.left), ev.size(f.right)
    return axis_op(vals[0], lambda a: pad_axis(a, lo, hi, f.value, mode=f.mode), 0)


@register(n.Transpose, n.TransposeW, stage="interpret")
def _transpose(ev: Element, f: FunDecl, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    return axis_op(vals[0], lambda a: np.swapaxes(a, 0, 1), 0)


@register(n.Let, *n.WRAPPERS, RewritePoint, stage="interpret")
def _wrapped(ev: Element, f: Any, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    """let, the address spaces, ocl_kernel and a rewrite point mean their function `f.f`."""
    return ev.call(f.f, vals, node, env)


@register(n.Vectorise, stage="interpret")
def _vectorise(ev: Element, f: n.Vectorise, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    def lane(v: Any, j: int) -> Any:  # lane j of a vector, or of each vector of a tuple
        return tuple(c[j] for c in v) if isinstance(v, tuple) else v[j]

    lanes = [ev.call(f.f, [lane(v, j) for v in vals], node, env) for j in range(f.n)]
    if isinstance(lanes[0], tuple):  # a tuple of scalars per lane: a tuple of vectors
        return tuple(np.asarray(c, dtype=np.asarray(c[0]).dtype) for c in builtins.zip(*lanes))
    return np.asarray(lanes, dtype=np.asarray(lanes[0]).dtype)


@register(n.Iterate, stage="interpret")
def _iterate(ev: Element, f: n.Iterate, vals: Vals, node: Call, env: dict[int, Any]) -> Any:
    return ev.iterate(f.n, f.f, vals[0], node, env)
