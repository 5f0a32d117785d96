"""Lane arithmetic: an index of the form `w*i + lane` (0 <= lane < w) under `//` and `%`.

A vector of `w` lanes read through a view (`as_vector(w)`) indexes its scalar source with
`w*i + lane`. Divisions and remainders of that index by a multiple of `w` split exactly:

    (a + lane) // d  ==  a // d            when w | a and w | d (d > 0)
    (a + lane) %  d  ==  a %  d + lane

so `lane_free` moves the lane out of every `//` and `%` it can; what is left shows whether
the lanes are consecutive (a vector load) and whether a condition is the same for every lane.
"""

from __future__ import annotations

from lift.arith.expr import (
    Arith,
    Cst,
    FloorDiv,
    Max,
    Min,
    Mod,
    Prod,
    Sum,
    Var,
    add,
    floordiv,
    max_,
    min_,
    mod,
    mul,
)
from lift.arith.ops import free_vars
from lift.arith.ranges import prove_divides, prove_positive


def lane_free(e: Arith, lane: Var, width: int) -> Arith:
    """`e` with `lane` (a variable in [0, width)) moved out of every `//` and `%` where the
    rules of the module docstring prove it; unchanged where they do not."""
    if lane not in free_vars(e):
        return e
    match e:
        case Sum(xs):
            out: Arith = Cst(0)
            for x in xs:
                out = add(out, lane_free(x, lane, width))
            return out
        case Prod(xs):
            out = Cst(1)
            for x in xs:
                out = mul(out, lane_free(x, lane, width))
            return out
        case FloorDiv(a, b):
            a2, b2 = lane_free(a, lane, width), lane_free(b, lane, width)
            rest = _rest(a2, b2, lane, width)
            return floordiv(a2 if rest is None else rest, b2)
        case Mod(a, b):
            a2, b2 = lane_free(a, lane, width), lane_free(b, lane, width)
            rest = _rest(a2, b2, lane, width)
            return mod(a2, b2) if rest is None else add(mod(rest, b2), lane)
        case Min(a, b):
            return min_(lane_free(a, lane, width), lane_free(b, lane, width))
        case Max(a, b):
            return max_(lane_free(a, lane, width), lane_free(b, lane, width))
    return e


def _rest(a: Arith, d: Arith, lane: Var, width: int) -> Arith | None:
    """`a - lane` when `a` is `rest + lane` with `width` dividing `rest` and `d > 0`, else None."""
    if lane in free_vars(d) or not prove_positive(d) or not prove_divides(width, d):
        return None
    rest = add(a, mul(-1, lane))
    if lane in free_vars(rest) or not prove_divides(width, rest):
        return None
    return rest


__all__ = ["lane_free"]
