"""Traversals of arithmetic expressions: free variables, substitution, evaluation."""

from __future__ import annotations

from collections.abc import Mapping

from lift.arith.expr import (
    Arith,
    ArithLike,
    Cst,
    ExactDiv,
    FloorDiv,
    Max,
    Min,
    Mod,
    Prod,
    Sum,
    Var,
    add,
    as_arith,
    exact_div,
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
    """Replace variables by name and re-simplify; the ranges of other variables follow.

    Example: with `k = Var("k", 0, N - 1)`, `substitute(k // 8, {"N": 8}) == 0`."""
    memo: dict[Arith, Arith] = {}
    return _subst(e, {k: as_arith(v) for k, v in env.items()}, memo)


def _subst(e: Arith, env: Mapping[str, Arith], memo: dict[Arith, Arith]) -> Arith:
    if isinstance(e, Cst):
        return e
    done = memo.get(e)
    if done is None:
        done = memo[e] = _subst_node(e, env, memo)
    return done


def _subst_node(e: Arith, env: Mapping[str, Arith], memo: dict[Arith, Arith]) -> Arith:
    def go(x: Arith) -> Arith:
        return _subst(x, env, memo)

    match e:
        case Var(name, lo, hi):
            if name in env:
                return env[name]
            lo2 = None if lo is None else go(lo)
            hi2 = None if hi is None else go(hi)
            return e if lo2 == lo and hi2 == hi else Var(name, lo2, hi2)
        case Sum(xs):
            out: Arith = Cst(0)
            for x in xs:
                out = add(out, go(x))
            return out
        case Prod(xs):
            out = Cst(1)
            for x in xs:
                out = mul(out, go(x))
            return out
        case ExactDiv(a, b):
            try:
                return exact_div(go(a), go(b))
            except ValueError:  # values that break the divisibility condition
                return floordiv(go(a), go(b))
        case FloorDiv(a, b):
            return floordiv(go(a), go(b))
        case Mod(a, b):
            return mod(go(a), go(b))
        case Min(a, b):
            return min_(go(a), go(b))
        case Max(a, b):
            return max_(go(a), go(b))
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


def as_int(e: ArithLike) -> int:
    """The value of a constant size, as `int(e)`; a `TypeError` for a symbolic one (as `int(Var)`)."""
    e = as_arith(e)
    if not isinstance(e, Cst):
        raise TypeError(f"the size {e} is symbolic, not an integer")
    return e.value
