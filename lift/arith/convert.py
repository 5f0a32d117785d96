"""Conversions of arithmetic expressions to OpenCL C and to z3."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import z3

from lift.arith.expr import Arith, Cst, FloorDiv, Max, Min, Mod, Prod, Sum, Var, negated
from lift.arith.ops import free_vars
from lift.arith.ranges import prove_nonneg, prove_positive

# Contexts of a C subexpression, from loosest to tightest: 0 top level or function
# argument, 1 operand of `+` (or left of `-`), 2 right of `-`, 3 left operand of
# `*`, `/`, `%`, 4 right operand of those. A sum needs parentheses from 2 on, a
# product or quotient only at 4 (C's multiplicative operators associate left).
_TOP, _ADD, _SUB, _MUL_L, _MUL_R = range(5)


def to_c(e: Arith, names: Mapping[str, str] | None = None) -> str:
    """OpenCL C for `e` (int arithmetic) with floor semantics for `//` and `%`.

    Plain `/` and `%` are emitted where the dividend is provably non-negative and the
    divisor positive; otherwise the `lift_floordiv` / `lift_floormod` helpers of
    `C_HELPERS`, which the kernel source must include. Example:
    `to_c((i + 1) // 4) == "(i + 1) / 4"` for `i >= 0`."""
    return _c(e, names or {}, _TOP)


def _c(e: Arith, names: Mapping[str, str], ctx: int) -> str:
    match e:
        case Cst(v):
            return f"({v})" if v < 0 and ctx in (_SUB, _MUL_R) else str(v)
        case Var(name):
            return names.get(name, name)
        case Sum(terms):
            return _c_sum(terms, names, ctx)
        case Prod(fs):
            if isinstance(fs[0], Cst) and fs[0].value == -1:
                s = "-" + "*".join(_c(f, names, _MUL_R) for f in fs[1:])
            else:
                s = _c(fs[0], names, _MUL_L) + "".join("*" + _c(f, names, _MUL_R) for f in fs[1:])
            return f"({s})" if ctx >= _MUL_R else s
        case FloorDiv(a, b) | Mod(a, b):
            return _c_divmod(e, a, b, names, ctx)
        case Min(a, b) | Max(a, b):
            fn = "min" if isinstance(e, Min) else "max"
            return f"{fn}({_c(a, names, _TOP)}, {_c(b, names, _TOP)})"
    raise TypeError(f"not an arithmetic expression: {e!r}")


def _c_sum(terms: tuple[Arith, ...], names: Mapping[str, str], ctx: int) -> str:
    s = _c(terms[0], names, _ADD)
    for t in terms[1:]:
        neg = negated(t)
        s += f" - {_c(neg, names, _SUB)}" if neg is not None else f" + {_c(t, names, _ADD)}"
    return f"({s})" if ctx >= _SUB else s


def _c_divmod(e: Arith, a: Arith, b: Arith, names: Mapping[str, str], ctx: int) -> str:
    div = isinstance(e, FloorDiv)
    if prove_nonneg(a) and prove_positive(b):
        s = f"{_c(a, names, _MUL_L)} {'/' if div else '%'} {_c(b, names, _MUL_R)}"
        return f"({s})" if ctx >= _MUL_R else s
    fn = "lift_floordiv" if div else "lift_floormod"
    return f"{fn}({_c(a, names, _TOP)}, {_c(b, names, _TOP)})"


# Helpers a kernel needs when `to_c` emits floor division of a possibly negative value.
C_HELPERS = """\
inline int lift_floordiv(int a, int b) {
  int q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline int lift_floormod(int a, int b) {
  int r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
"""


def to_z3(e: Arith, env: Mapping[str, Any] | None = None) -> Any:
    """A z3 integer term for `e`; variables come from `env` or become `z3.Int(name)`.

    `//` and `%` have floor semantics for divisors of either sign: z3's own division is
    Euclidean, which agrees for positive divisors, and is used where the divisor is
    provably positive (sizes); otherwise the term branches on the divisor's sign."""

    env = dict(env or {})

    def go(x: Arith) -> Any:
        match x:
            case Cst(v):
                return z3.IntVal(v)
            case Var(name):
                if name not in env:
                    env[name] = z3.Int(name)
                return env[name]
            case Sum(ts):
                return z3.Sum([go(t) for t in ts])
            case Prod(fs):
                return z3.Product([go(f) for f in fs])
            case FloorDiv(a, b):
                return _z3_floordiv(go(a), go(b), b)
            case Mod(a, b):
                ga, gb = go(a), go(b)
                return ga % gb if _positive_divisor(b) else ga - gb * _z3_floordiv(ga, gb, b)
            case Min(a, b):
                ga, gb = go(a), go(b)
                return z3.If(ga <= gb, ga, gb)
            case Max(a, b):
                ga, gb = go(a), go(b)
                return z3.If(ga >= gb, ga, gb)
        raise TypeError(f"not an arithmetic expression: {x!r}")

    return go(e)


def _positive_divisor(b: Arith) -> bool:
    """Is `b` provably positive (then z3's own `/` and `%` are floor division and modulo)?"""
    return (isinstance(b, Cst) and b.value > 0) or prove_positive(b)


def _z3_floordiv(ga: Any, gb: Any, b: Arith) -> Any:

    if _positive_divisor(b):
        return ga / gb
    return z3.If(gb > 0, ga / gb, (-ga) / (-gb))  # floor(a/b) == floor(-a/-b)


def range_constraints_z3(vars_: Iterable[Var], env: Mapping[str, Any] | None = None) -> list[Any]:
    """z3 facts `lo <= v <= hi` for the given variables (and the variables in their bounds)."""

    out = []
    seen: set[str] = set()
    todo = list(vars_)
    env = dict(env or {})
    while todo:
        v = todo.pop()
        if v.name in seen:
            continue
        seen.add(v.name)
        for bound, is_lo in ((v.lo, True), (v.hi, False)):
            if bound is None:
                continue
            todo.extend(free_vars(bound))
            zv, zb = to_z3(v, env), to_z3(bound, env)
            out.append(zv >= zb if is_lo else zv <= zb)
    return out
