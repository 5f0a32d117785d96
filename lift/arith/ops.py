"""Traversals of arithmetic expressions: free variables, substitution, evaluation."""

from __future__ import annotations

from collections.abc import Mapping

from lift.arith.expr import (
    Arith,
    ArithLike,
    Cst,
    FloorDiv,
    Max,
    Min,
    Mod,
    Prod,
    Sum,
    Var,
    add,
    as_arith,
    floordiv,
    max_,
    min_,
    mod,
    mul,
)


def free_vars(e: Arith) -> set[Var]:
    """The variables `e` mentions (not those in the variables' ranges)."""
    match e:
        case Cst():
            return set()
        case Var():
            return {e}
        case Sum(xs) | Prod(xs):
            return set().union(*(free_vars(x) for x in xs))
        case FloorDiv(a, b) | Mod(a, b) | Min(a, b) | Max(a, b):
            return free_vars(a) | free_vars(b)
    raise TypeError(f"not an arithmetic expression: {e!r}")


def substitute(e: Arith, env: Mapping[str, ArithLike]) -> Arith:
    """Replace variables by name and re-simplify."""
    match e:
        case Cst():
            return e
        case Var(name):
            return as_arith(env[name]) if name in env else e
        case Sum(xs):
            out: Arith = Cst(0)
            for x in xs:
                out = add(out, substitute(x, env))
            return out
        case Prod(xs):
            out = Cst(1)
            for x in xs:
                out = mul(out, substitute(x, env))
            return out
        case FloorDiv(a, b):
            return floordiv(substitute(a, env), substitute(b, env))
        case Mod(a, b):
            return mod(substitute(a, env), substitute(b, env))
        case Min(a, b):
            return min_(substitute(a, env), substitute(b, env))
        case Max(a, b):
            return max_(substitute(a, env), substitute(b, env))
    raise TypeError(f"not an arithmetic expression: {e!r}")


def evaluate(e: ArithLike, env: Mapping[str, int] | None = None) -> int:
    """The integer value of `e` with every variable bound in `env` (by name)."""
    e = as_arith(e)
    env = env or {}
    match e:
        case Cst(v):
            return v
        case Var(name):
            try:
                return int(env[name])
            except KeyError:
                raise KeyError(f"size variable {name} has no value") from None
        case Sum(xs):
            return sum(evaluate(x, env) for x in xs)
        case Prod(xs):
            out = 1
            for x in xs:
                out *= evaluate(x, env)
            return out
        case FloorDiv(a, b):
            return evaluate(a, env) // evaluate(b, env)
        case Mod(a, b):
            return evaluate(a, env) % evaluate(b, env)
        case Min(a, b):
            return min(evaluate(a, env), evaluate(b, env))
        case Max(a, b):
            return max(evaluate(a, env), evaluate(b, env))
    raise TypeError(f"not an arithmetic expression: {e!r}")


def try_evaluate(e: ArithLike, env: Mapping[str, int] | None = None) -> int | None:
    """Like `evaluate`, but None when a variable is unbound."""
    try:
        return evaluate(e, env)
    except KeyError:
        return None
