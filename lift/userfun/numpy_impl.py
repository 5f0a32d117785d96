"""The numpy side of a translated user function: text helpers, runtime helpers and the builder.

The translator emits straight-line numpy code (control flow becomes masks and `np.where`); `build`
turns it into a function over arrays. Tuples are Python tuples of arrays; a vector value has a
trailing axis of its width.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from lift.types import ScalarType, TupleType, Type, VectorType

# math function -> numpy function (None: no vectorised numpy equivalent).
NP_MATH: dict[str, str | None] = {
    "sqrt": "sqrt", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10",
    "sin": "sin", "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2", "pow": "power",
    "fabs": "abs", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "fmod": "fmod", "erf": None,
    "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "copysign": "copysign", "hypot": "hypot",
    "expm1": "expm1", "log1p": "log1p", "cbrt": "cbrt",
}


def np_dtype_name(t: ScalarType) -> str:
    """The numpy scalar constructor for a LIFT scalar, as text (`_np.float32`)."""
    return "_np." + ("bool_" if t.dtype.kind == "b" else t.dtype.name)


def np_literal(value: bool | int | float, t: ScalarType) -> str:
    """A typed numpy scalar literal, as text (`_np.float32(1.5)`)."""
    if t.dtype.kind == "b":
        text = repr(bool(value))
    elif t.dtype.kind == "i":
        text = repr(int(value))
    else:
        v = float(value)
        text = repr(v) if math.isfinite(v) else f'float("{v}")'
    return f"{np_dtype_name(t)}({text})"


def np_cast(text: str, t: ScalarType) -> str:
    """`text` converted to the dtype of `t`."""
    return f"_np.asarray({text}).astype({np_dtype_name(t)})"


def np_where(cond: str, a: str, b: str, t: Type) -> str:
    """A typed `np.where`: element-wise on tuples, the mask broadcast over a vector's last axis."""
    if isinstance(t, TupleType):
        parts = [np_where(cond, f"({a})[{i}]", f"({b})[{i}]", e) for i, e in enumerate(t.elems)]
        return "(" + ", ".join(parts) + ",)"
    if isinstance(t, VectorType):
        return f"_np.where(_np.asarray({cond})[..., None], {a}, {b})"
    return f"_np.where({cond}, {a}, {b})"


def arg(x: Any, t: Type) -> Any:
    """An argument converted to the representation of `t` (tuples of arrays of the right dtype)."""
    if isinstance(t, TupleType):
        return tuple(arg(e, et) for e, et in zip(x, t.elems))
    dtype = t.scalar.dtype if isinstance(t, VectorType) else cast(ScalarType, t).dtype
    return np.asarray(x, dtype=dtype)


def shape_of(args: Sequence[Any], types: Sequence[Type]) -> tuple[int, ...]:
    """The broadcast element shape of the arguments (a vector's last axis excluded)."""
    shapes: list[tuple[int, ...]] = []

    def walk(x: Any, t: Type) -> None:
        if isinstance(t, TupleType):
            for e, et in zip(x, t.elems):
                walk(e, et)
        else:
            s = np.shape(x)
            shapes.append(s[:-1] if isinstance(t, VectorType) else s)

    for x, t in zip(args, types):
        walk(x, t)
    return np.broadcast_shapes(*shapes) if shapes else ()


def finish(value: Any, t: Type, shape: tuple[int, ...], inputs: tuple = ()) -> Any:
    """The result as fresh arrays of the output type, broadcast to the element shape. An array the
    function computed itself (it owns its memory, which no input shares) is returned as it is."""
    if isinstance(t, TupleType):
        parts: list[Any] = []
        for v, et in zip(value, t.elems):  # a component may not share memory with another either
            parts.append(finish(v, et, shape, (inputs, tuple(parts))))
        return tuple(parts)
    if isinstance(t, VectorType):
        dtype, full = t.scalar.dtype, (*shape, t.n)
    else:
        dtype, full = cast(ScalarType, t).dtype, shape
    if _fresh(value, dtype, full, inputs):
        return value
    out = np.array(value, dtype=dtype)
    return out if out.shape == full else np.broadcast_to(out, full).copy()


def _fresh(value: Any, dtype: np.dtype, full: tuple[int, ...], inputs: tuple) -> bool:
    """`value` is a writeable array of `dtype` and shape `full` that owns its memory and shares
    none with the arrays in `inputs` (nested tuples)."""
    if not (type(value) is np.ndarray and value.base is None and value.flags.writeable
            and value.dtype == dtype and value.shape == full):
        return False
    stack = list(inputs)
    while stack:
        x = stack.pop()
        if isinstance(x, tuple):
            stack.extend(x)
        elif x is value or (isinstance(x, np.ndarray) and np.may_share_memory(x, value)):
            return False
    return True


def build(name: str, params: Sequence[str], in_types: Sequence[Type], out_type: Type,
          lines: Sequence[str], result: str, deps: dict[str, Any] | None = None) -> Callable[..., Any]:
    """Compile the emitted numpy lines into `name(*arrays)`; `result` is the text of the return value."""
    head = [f"def {name}({', '.join(params)}):", "    with _np.errstate(all='ignore'):"]
    head += [f"        {p} = _h.arg({p}, _IN[{i}])" for i, p in enumerate(params)]
    body = [f"        {line}" for line in lines]
    shape = f"_h.shape_of(({''.join(p + ', ' for p in params)}), _IN)"
    inputs = f"({''.join(p + ', ' for p in params)})"
    tail = [f"        return _h.finish({result}, _OUT, {shape}, {inputs})"]
    source = "\n".join(head + body + tail) + "\n"
    helpers = sys.modules[__name__]
    namespace: dict[str, Any] = {"_np": np, "_h": helpers, "_IN": tuple(in_types), "_OUT": out_type,
                                 **(deps or {})}
    exec(compile(source, f"<liftcl numpy {name}>", "exec"), namespace)
    fn = namespace[name]
    fn.__liftcl_source__ = source
    return fn
