"""User functions on whole batches: their numpy twins (lift.userfun), widened for `precise`.

A user function's numpy twin (`UserFun.np_fn`, built by lift.userfun.numpy_impl) evaluates it on
arrays by broadcasting. In the precise mode Float is carried in float64; the twin converts its
arguments to its declared dtypes, so it is rebuilt from its own source with Float read as Double
(`_np.float32` is float64 there). Built-in associative operators are recognised here too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lift.interpret.element import NotBatchable
from lift.interpret.values import Zipped
from lift.ir.nodes import UserFun
from lift.types import Double, Float, TupleType, Type, VectorType
from lift.userfun.facts import operator

_WIDE_TWINS: dict[UserFun, Any] = {}
_MONOIDS: dict[UserFun, str | None] = {}


def call_twin(f: UserFun, vals: list[Any], wide: dict[np.dtype, np.dtype]) -> Any:
    """`f` applied to batched arguments (broadcast against each other), through its numpy twin."""
    if any(isinstance(v, Zipped) for v in vals):
        raise NotBatchable(f"user function {f.name} applied to an array of tuples", f)
    return twin(f, bool(wide))(*vals)


def twin(f: UserFun, precise: bool) -> Any:
    """The numpy twin of `f`; with `precise`, the one that computes Float in float64."""
    if f.np_fn is None:
        raise NotBatchable(f"user function {f.name} has no numpy twin", f)
    if not precise or not any(_has_float(t) for t in (*f.in_types, f.out_type)):
        return f.np_fn
    if f not in _WIDE_TWINS:
        _WIDE_TWINS[f] = _widened(f)
    fn = _WIDE_TWINS[f]
    if fn is None:
        raise NotBatchable(f"user function {f.name} has no float64 numpy twin", f)
    return fn


def _has_float(t: Type) -> bool:
    if isinstance(t, TupleType):
        return any(_has_float(e) for e in t.elems)
    return (t.scalar if isinstance(t, VectorType) else t) == Float


def widen_type(t: Type) -> Type:
    """`t` with Float read as Double."""
    if isinstance(t, TupleType):
        return TupleType(tuple(widen_type(e) for e in t.elems))
    if isinstance(t, VectorType):
        return VectorType(Double if t.scalar == Float else t.scalar, t.n)
    return Double if t == Float else t


class _WideNumpy:
    """numpy, except that `float32` is float64 (the precise twin's dtype for Float)."""

    float32 = np.float64

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


def _widened(f: UserFun) -> Any:
    source = getattr(f.np_fn, "__liftcl_source__", None)
    if source is None:
        return None
    name = f.np_fn.__name__
    namespace = {k: v for k, v in f.np_fn.__globals__.items() if not k.startswith("__")}
    namespace.update({"_np": _WideNumpy(), "_IN": tuple(widen_type(t) for t in f.in_types),
                      "_OUT": widen_type(f.out_type)})
    for dep in getattr(f, "deps", ()):  # the user functions it calls: their float64 twins
        try:
            namespace[f"_d_{dep.name}"] = twin(dep, True)
        except NotBatchable:
            return None
    exec(compile(source, f"<liftcl numpy {name}, float64>", "exec"), namespace)  # noqa: S102
    return namespace[name]


def monoid(f: Any) -> str | None:
    """`add`, `mult`, `max_` or `min_` when `f` is that built-in on one numeric scalar or vector type."""
    if not isinstance(f, UserFun):
        return None
    if f not in _MONOIDS:
        _MONOIDS[f] = _monoid(f)
    return _MONOIDS[f]


def _monoid(f: UserFun) -> str | None:
    """The kind of built-in operator `f` computes, by its body (`lift.userfun.facts`: a user's own
    `lambda x, y: y * x` is `mult`, the same operation on the same dtype as the built-in's)."""
    op = operator(f)
    return (op.kind or None) if op is not None else None
