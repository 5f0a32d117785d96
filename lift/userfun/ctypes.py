"""C names of LIFT types, struct declarations for tuples, C literals and reserved words."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np

from lift.arith.cnames import C_BUILTINS, C_RESERVED, is_c_identifier  # noqa: F401 - re-exported
from lift.types import Bool, Double, Float, Int, ScalarType, TupleType, Type, VectorType

_CALLS = re.compile(r"\b(" + "|".join(sorted(C_BUILTINS, key=len, reverse=True)) + r")\s*\(")


def calls_builtin(c_source: str) -> bool:
    """Whether C source `c_source` calls an OpenCL builtin function (`sqrt(`, `fmax(`)."""
    return _CALLS.search(c_source) is not None


INT_MIN, INT_MAX = -(2**31), 2**31 - 1

# OpenCL math functions user functions may call (as math.f): name -> (arity, returns Bool).
C_MATH: dict[str, tuple[int, bool]] = {
    **{n: (1, False) for n in "sqrt exp exp2 log log2 log10 sin cos tan sinh cosh tanh asin acos atan fabs "
       "floor ceil trunc erf expm1 log1p cbrt".split()},
    **{n: (2, False) for n in "atan2 pow fmod copysign hypot".split()},
    **{n: (1, True) for n in "isnan isinf isfinite".split()},
}


def c_type(t: Type) -> str:
    """The OpenCL C spelling of a scalar, vector or tuple type: `float`, `float4`, `Tuple_float_int`."""
    if isinstance(t, ScalarType):
        return t.c_name
    if isinstance(t, VectorType):
        return t.c_name
    if isinstance(t, TupleType):
        return "Tuple_" + "_".join(_tuple_code(e) for e in t.elems)
    raise TypeError(f"user functions take and return scalars, vectors and tuples, not {t}")


def _tuple_code(t: Type) -> str:
    """An injective code for a tuple element: nested tuples carry their arity (`T2_float_int`)."""
    if isinstance(t, TupleType):
        return f"T{len(t.elems)}_" + "_".join(_tuple_code(e) for e in t.elems)
    return c_type(t)


def struct_decl(t: TupleType) -> str:
    """`typedef struct { float _0; int _1; } Tuple_float_int;` plus a newline."""
    fields = " ".join(f"{c_type(e)} _{i};" for i, e in enumerate(t.elems))
    return f"typedef struct {{ {fields} }} {c_type(t)};\n"


def tuple_types(types: Iterable[Type]) -> tuple[TupleType, ...]:
    """The tuple types inside `types`, innermost first, each once, in order of first appearance."""
    out: list[TupleType] = []

    def walk(t: Type) -> None:
        if isinstance(t, TupleType):
            for e in t.elems:
                walk(e)
            if t not in out:
                out.append(t)

    for t in types:
        walk(t)
    return tuple(out)


def c_literal(value: bool | int | float, t: ScalarType) -> str:
    """A C literal of scalar type `t` for a Python number (`1.0f`, `2`, `INFINITY`, `true`)."""
    if t == Bool:
        return "true" if value else "false"
    if t == Int:
        v: int | float = int(value)
        if not INT_MIN <= v <= INT_MAX:
            raise OverflowError(f"{v} does not fit in a 32-bit int")
        return "(-2147483647 - 1)" if v == INT_MIN else str(v)
    v = float(value)
    special = _special_float(v, t)
    if special is not None:
        return special
    if t == Float:
        with np.errstate(over="ignore"):
            f32 = np.float32(v)
        if math.isinf(f32):
            return _special_float(float(f32), t) or ""
        return _with_point(str(f32)) + "f"
    if t == Double:
        return _with_point(repr(v))
    raise TypeError(f"no literal of type {t}")


def _special_float(v: float, t: ScalarType) -> str | None:
    if math.isnan(v):
        text = "NAN"
    elif math.isinf(v):
        text = "INFINITY" if v > 0 else "-INFINITY"
    else:
        return None
    return text if t == Float else f"(double){text}" if v > 0 or math.isnan(v) else "-(double)INFINITY"


def _with_point(s: str) -> str:
    return s if any(ch in s for ch in ".eEn") else s + ".0"


def c_floor_op(is_div: bool, a: str, b: str, t: ScalarType, *, divisor_positive: bool = False) -> str:
    """Python's `a // b` or `a % b` (floor semantics) in C; `a` and `b` are names or literals.

    C's `/` and `%` truncate; the result is corrected when the remainder's sign differs from the
    divisor's. Floats follow CPython's float_divmod (`fmod`, then round the exact quotient).
    Integer division and modulo by zero give 0 (numpy's convention; C leaves it undefined).
    """
    if t != Int:
        return _c_float_floor_op(is_div, a, b, t, divisor_positive)
    r, zero = f"{a} % {b}", "0"
    wrong = f"{r} < {zero}" if divisor_positive else f"{r} != {zero} && ({r} < {zero}) != ({b} < {zero})"
    if not is_div:
        out = f"({wrong} ? {r} + {b} : {r})"
    else:
        quotient = f"{a} / {b}" if t == Int else f"round(({a} - {r}) / {b})"
        out = f"({quotient} - ({wrong}))"
    if not divisor_positive:  # x // 0 == x % 0 == 0, as numpy (and the interpreter) say
        return f"({b} == 0 ? 0 : {out})"
    return out


def _c_float_floor_op(is_div: bool, a: str, b: str, t: ScalarType, divisor_positive: bool) -> str:
    """Float `a // b` or `a % b` as numpy computes them (npy_divmod, npy_floor_divide): by zero,
    `a / b` (+-inf or NaN) and `fmod(a, b)` (NaN); else the quotient `(a - fmod(a, b)) / b`
    corrected as the remainder, snapped to the nearest integer, and signed zeros as numpy's."""
    zero, one, half = (c_literal(v, t) for v in (0.0, 1.0, 0.5))
    r = f"fmod({a}, {b})"
    neg_b = zero if divisor_positive else f"({b} < {zero})"
    wrong = f"({r} != {zero} && {neg_b} != ({r} < {zero}))"
    if not is_div:
        out = f"({r} != {zero} ? ({wrong} ? {r} + {b} : {r}) : copysign({zero}, {b}))"
        return out if divisor_positive else f"({b} == {zero} ? {r} : {out})"
    q = f"(({a} - {r}) / {b} - ({wrong} ? {one} : {zero}))"
    snapped = f"(floor({q}) + ({q} - floor({q}) > {half} ? {one} : {zero}))"
    out = f"({q} != {zero} ? {snapped} : copysign({zero}, {a} / {b}))"
    return out if divisor_positive else f"({b} == {zero} ? {a} / {b} : {out})"
