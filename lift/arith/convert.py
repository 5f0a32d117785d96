"""Conversions of arithmetic expressions to OpenCL C and to z3."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lift.arith.expr import Arith, Cst, FloorDiv, Max, Min, Mod, Prod, Sum, Var, _negated
from lift.arith.ranges import prove_nonneg, prove_positive


def to_c(e: Arith, names: Mapping[str, str] | None = None) -> str:
    """OpenCL C for `e` (int arithmetic) with floor semantics for `//` and `%`.

    Plain `/` and `%` are emitted where the dividend is provably non-negative and the
    divisor positive; otherwise a floor-correct form is emitted."""
    return _c(e, names or {}, 0)


def _c(e: Arith, names: Mapping[str, str], ctx: int) -> str:
    match e:
        case Cst(v):
            return f"({v})" if v < 0 and ctx > 0 else str(v)
        case Var(name):
            return names.get(name, name)
        case Sum(terms):
            s = _c(terms[0], names, 1)
            for t in terms[1:]:
                neg = _negated(t)
                s += f" - {_c(neg, names, 2)}" if neg is not None else f" + {_c(t, names, 1)}"
            return f"({s})" if ctx > 1 else s
        case Prod(fs):
            s = "*".join(_c(f, names, 3) for f in fs)
            return f"({s})" if ctx > 2 else s
        case FloorDiv(a, b):
            if prove_nonneg(a) and prove_positive(b):
                s = f"{_c(a, names, 2)} / {_c(b, names, 3)}"
                return f"({s})" if ctx > 1 else s
            return f"lift_floordiv({_c(a, names, 0)}, {_c(b, names, 0)})"
        case Mod(a, b):
            if prove_nonneg(a) and prove_positive(b):
                s = f"{_c(a, names, 2)} % {_c(b, names, 3)}"
                return f"({s})" if ctx > 1 else s
            return f"lift_floormod({_c(a, names, 0)}, {_c(b, names, 0)})"
        case Min(a, b):
            return f"min({_c(a, names, 0)}, {_c(b, names, 0)})"
        case Max(a, b):
            return f"max({_c(a, names, 0)}, {_c(b, names, 0)})"
    raise TypeError(f"not an arithmetic expression: {e!r}")


# Helpers a kernel needs when `to_c` emits floor division of a possibly negative value.
C_HELPERS = """\
inline int lift_floordiv(int a, int b) { int q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
inline int lift_floormod(int a, int b) { int r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
"""


def to_z3(e: Arith, env: Mapping[str, Any] | None = None) -> Any:
    """A z3 integer term for `e`; variables come from `env` or become `z3.Int(name)`.

    Divisors are assumed positive (z3's Euclidean division then equals floor division)."""
    import z3

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
                out = go(fs[0])
                for f in fs[1:]:
                    out = out * go(f)
                return out
            case FloorDiv(a, b):
                return go(a) / go(b)
            case Mod(a, b):
                return go(a) % go(b)
            case Min(a, b):
                ga, gb = go(a), go(b)
                return z3.If(ga <= gb, ga, gb)
            case Max(a, b):
                ga, gb = go(a), go(b)
                return z3.If(ga >= gb, ga, gb)
        raise TypeError(f"not an arithmetic expression: {x!r}")

    return go(e)


def range_constraints_z3(vars_: set[Var] | list[Var], env: Mapping[str, Any] | None = None) -> list[Any]:
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
            from lift.arith.ops import free_vars

            todo.extend(free_vars(bound))
            zv, zb = to_z3(v, env), to_z3(bound, env)
            out.append(zv >= zb if is_lo else zv <= zb)
    return out
