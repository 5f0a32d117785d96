"""User functions on whole batches: their numpy twins (lift.userfun), widened for `precise`.

A user function's numpy twin (`UserFun.np_fn`, built by lift.userfun.numpy_impl) evaluates it on
arrays by broadcasting. In the precise mode Float is carried in float64; the twin converts its
arguments to its declared dtypes, so it is rebuilt from its own source with Float read as Double
(`_np.float32` is float64 there). Built-in associative operators are recognised here too.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from lift.interpret.element import NotBatchable
from lift.interpret.values import Zipped
from lift.ir.nodes import UserFun
from lift.types import Double, Float, ScalarType, TupleType, Type, VectorType

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
        return VectorType(widen_type(t.scalar), t.n)  # type: ignore[arg-type]
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
    from lift.userfun import builtins

    if len(f.in_types) != 2 or not f.in_types[0] == f.in_types[1] == f.out_type:
        return None
    t = f.out_type
    scal = t.scalar if isinstance(t, VectorType) else t
    if not isinstance(scal, ScalarType) or scal.dtype.kind not in "fiu":
        return None
    for name in ("add", "mult", "max_", "min_"):
        try:
            if getattr(builtins, name).specialise(*f.in_types) == f:
                return name
        except Exception:  # noqa: BLE001 - a type the built-in does not take
            continue
    return _binary_op(f)


_OPS = {ast.Add: "add", ast.Mult: "mult"}


def _binary_op(f: UserFun) -> str | None:
    """`add` or `mult` when `f`'s numpy twin computes just `a + b` or `a * b` (either order: both
    are commutative in IEEE arithmetic) of its two parameters, as a user's own `lambda x, y: x * y`
    does: the same operation on the same dtype as the built-in's."""
    source = getattr(f.np_fn, "__liftcl_source__", None)
    if source is None or len(f.in_types) != 2:
        return None
    fn = ast.parse(source).body[0]
    if not (isinstance(fn, ast.FunctionDef) and len(fn.body) == 1 and isinstance(fn.body[0], ast.With)):
        return None
    params = {a.arg for a in fn.args.args}
    names: dict[str, ast.expr] = {}
    for st in fn.body[0].body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            if st.targets[0].id in names:
                return None  # assigned twice: keep the recognition simple
            if not _is_arg_conversion(st):
                names[st.targets[0].id] = st.value
        elif isinstance(st, ast.Return) and isinstance(st.value, ast.Call) and st.value.args:
            v = _resolve(st.value.args[0], names)
            if (isinstance(v, ast.BinOp) and type(v.op) in _OPS
                    and {getattr(_resolve(v.left, names), "id", None),
                         getattr(_resolve(v.right, names), "id", None)} == params):
                return _OPS[type(v.op)]
            return None
        else:
            return None
    return None


def _resolve(e: ast.expr, names: dict[str, ast.expr]) -> ast.expr:
    """`e` with the twin's (single-assignment) names replaced by what they were assigned."""
    seen: set[str] = set()
    while isinstance(e, ast.Name) and e.id in names and e.id not in seen:
        seen.add(e.id)
        e = names[e.id]
    return e


def _is_arg_conversion(s: ast.Assign) -> bool:
    """`p = _h.arg(p, _IN[i])`, the twin's conversion of a parameter."""
    v = s.value
    return isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "arg"
