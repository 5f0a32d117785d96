"""The element-wise evaluator: every pattern on interpreter values, one element at a time.

This is the plain reading of the semantics (a map evaluates its body once per element, a reduce
folds left to right) and the fallback of the batched evaluator (lift.interpret.batch): with a
`Batched` evaluator given, each map and reduce is first tried batched at depth 0, and evaluated
element by element only when that evaluator cannot handle it (recorded in `Stats`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lift.arith import Arith, evaluate
from lift.errors import LiftTypeError, LiftValueError, UnsupportedError
from lift.gather import gather_values
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
from lift.typecheck import unify
from lift.types import ArrayType, ScalarType, Type, VectorType, base_type


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
        return np.full(tuple(self.size(d) for d in dims_of(t)) + lanes, v, dtype=dt(scal, self.wide))

    def eval(self, e: Expr, env: dict[int, Any]) -> Any:
        match e:
            case n.Param():
                try:
                    return env[e.id]
                except KeyError:
                    raise LiftTypeError(f"parameter {e.name} is used outside its lambda", node=e) from None
            case n.Literal(v, t):
                return self.constant(v, t)
            case FunCall(f, args):
                vals = [self.eval(a, env) for a in args]
                if self.fast is not None and isinstance(f, n.AbstractMap | n.AbstractReduce):
                    try:
                        return self.fast.at_depth0(e, f, vals, env)
                    except NotBatchable as why:
                        self.fast.stats.fell_back(why, e)
                return self.call(f, vals, e, env)
        raise LiftTypeError(f"cannot evaluate {e!r}", node=e)

    def call(self, f: FunDecl, vals: list[Any], node: FunCall | None, env: dict[int, Any]) -> Any:
        """Apply `f` to values; `node` is the call in the program, for errors (or None)."""
        match f:
            case Lambda(params, body):
                return self.eval(body, {**env, **{p.id: v for p, v in zip(params, vals)}})
            case n.UserFun():
                return call_userfun(f, vals, self.wide)
            case n.AbstractMap(f=g):
                return self.map(g, vals[0], node, env)
            case n.AbstractReduce(f=g):
                acc, xs = vals
                for i in range(length(xs)):
                    acc = self.call(g, [acc, index0(xs, i)], node, env)
                return acc
            case n.Zip():
                return Zipped(tuple(vals), 1)
            case n.MakeTuple():
                return tuple(vals)
            case n.Get(i):
                return vals[0][i]
            case n.At(i):
                k = self.size(i)
                x = vals[0]
                if not 0 <= k < length(x):
                    raise LiftValueError(f"index {k} out of range for length {length(x)}", node=node)
                return index0(x, k)
            case n.Gather():
                return gather_values(vals[0], vals[1], node)
            case n.Split(m) | n.AsVector(m):
                m = self.size(m) if isinstance(m, Arith) else m
                return axis_op(vals[0], lambda a: a.reshape((a.shape[0] // m, m) + a.shape[1:]), +1)
            case n.Join() | n.AsScalar():
                return axis_op(vals[0], lambda a: a.reshape((a.shape[0] * a.shape[1],) + a.shape[2:]), -1)
            case n.Slide(size, step):
                sz, st = self.size(size), self.size(step)
                return axis_op(vals[0], lambda a: slide_axis(a, sz, st), +1)
            case n.Pad(left, right, value):
                lo, hi = self.size(left), self.size(right)
                return axis_op(vals[0], lambda a: pad_axis(a, lo, hi, value), 0)
            case n.Transpose() | n.TransposeW():
                return axis_op(vals[0], lambda a: np.swapaxes(a, 0, 1), 0)
            case n.Let(g) | n.ToGlobal(g) | n.ToLocal(g) | n.ToPrivate(g) | n.OclKernel(g):
                return self.call(g, vals, node, env)
            case n.Vectorise(g, k):
                lanes = [self.call(g, [v[j] for v in vals], node, env) for j in range(k)]
                return np.asarray(lanes, dtype=np.asarray(lanes[0]).dtype)
            case n.Iterate(k, g):
                return self.iterate(k, g, vals[0], node, env)
        if getattr(f, "transparent", False):  # a rewrite point (lift.rewrites) means its body `f`
            return self.call(f.f, vals, node, env)
        raise UnsupportedError(f"the interpreter has no rule for {type(f).__name__}", node=node)

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
    binding = unify(ptype, ArrayType(ptype.elem, n_len)) or {}
    return {v: ev.size(e) for v, e in binding.items()}


def call_userfun(f: n.UserFun, vals: list[Any], wide: dict[np.dtype, np.dtype]) -> Any:
    """A user function on one element, through its Python function."""
    if f.py_fn is None:
        raise UnsupportedError(f"user function {f.name} has a raw C body and no py_fn; the "
                               f"interpreter cannot run it", node=f,
                               hint="pass py_fn= to user_fun.c")
    return cast(f.py_fn(*vals), f.out_type, wide)
