"""Range analysis: symbolic lower and upper bounds, and proofs of sign and order.

`lower(e)` and `upper(e)` eliminate one atom at a time, the atom whose range depends
on the most others first, replacing it by the end of its range that makes `e` smallest
(or largest). A coefficient of unknown sign, a square, or an unbounded atom give up
(None), so every answer is sound; "cannot prove" is never "false".
"""

from __future__ import annotations

from functools import lru_cache

from lift.arith.expr import (
    Arith,
    ArithLike,
    Cst,
    FloorDiv,
    Max,
    Min,
    Mod,
    Var,
    add,
    as_arith,
    from_poly,
    mul,
    to_poly,
)

_MAX_DEPTH = 48


def lower(e: ArithLike) -> Arith | None:
    """A lower bound of `e` free of ranged atoms where possible; None if unbounded."""
    return _extreme(as_arith(e), False, 0)


def upper(e: ArithLike) -> Arith | None:
    """An upper bound of `e`; None if unbounded or unknown."""
    return _extreme(as_arith(e), True, 0)


@lru_cache(maxsize=65536)
def prove_nonneg(e: Arith) -> bool:
    """True only if `e >= 0` for every value of its variables within their ranges."""
    lo = _extreme(e, False, 0)
    return isinstance(lo, Cst) and lo.value >= 0


def prove_positive(e: ArithLike) -> bool:
    return prove_nonneg(add(e, -1))


def prove_le(a: ArithLike, b: ArithLike) -> bool:
    """True only if `a <= b` provably."""
    return prove_nonneg(add(b, mul(-1, a)))


def prove_lt(a: ArithLike, b: ArithLike) -> bool:
    return prove_nonneg(add(add(b, -1), mul(-1, a)))


def prove_eq(a: ArithLike, b: ArithLike) -> bool:
    """True only if `a == b` provably (canonical forms agree, or both orders hold)."""
    a, b = as_arith(a), as_arith(b)
    return a == b or (prove_le(a, b) and prove_le(b, a))


def prove_divides(d: ArithLike, n: ArithLike) -> bool:
    """True only if `d` divides `n` for all values of the variables."""
    d, n = as_arith(d), as_arith(n)
    if isinstance(d, Cst) and d.value == 0:
        return False
    from lift.arith.expr import mod

    return mod(n, d) == Cst(0)


def _atoms(e: Arith) -> set[Arith]:
    return {a for m in to_poly(e) for a in m}


@lru_cache(maxsize=65536)
def _rank(a: Arith) -> int:
    """How deep the ranges of `a` reach into other atoms (eliminate higher first)."""
    inner: list[Arith] = []
    match a:
        case Var(_, lo, hi):
            inner = [x for x in (lo, hi) if x is not None]
        case FloorDiv(x, y) | Mod(x, y) | Min(x, y) | Max(x, y):
            inner = [x, y]
    ranks = [_rank(b) for x in inner for b in _atoms(x)]
    return 1 + max(ranks, default=0)


def _extreme(e: Arith, maximise: bool, depth: int) -> Arith | None:
    if isinstance(e, Cst):
        return e
    if depth > _MAX_DEPTH:
        return None
    p = to_poly(e)
    atoms = {a for m in p for a in m}
    v = max(atoms, key=lambda a: (_rank(a), str(a)))
    c1: dict = {}
    c0: dict = {}
    for m, c in p.items():
        k = m.count(v)
        if k == 0:
            c0[m] = c
        elif k == 1:
            rest = list(m)
            rest.remove(v)
            c1[tuple(rest)] = c
        else:
            return None  # a power of an atom: monotonicity unknown
    coef = from_poly(c1)
    if isinstance(coef, Cst):
        positive = coef.value > 0
    else:
        lo = _extreme(coef, False, depth + 1)
        if isinstance(lo, Cst) and lo.value >= 0:
            positive = True
        else:
            hi = _extreme(coef, True, depth + 1)
            if isinstance(hi, Cst) and hi.value <= 0:
                positive = False
            else:
                return None
    bound = _atom_bound(v, maximise == positive, depth + 1)
    if bound is None:
        return None
    return _extreme(add(mul(coef, bound), from_poly(c0)), maximise, depth + 1)


def _atom_bound(a: Arith, want_upper: bool, depth: int) -> Arith | None:
    match a:
        case Var(_, lo, hi):
            return hi if want_upper else lo
        case Mod(_, b):
            if not _positive(b, depth):
                return None
            return add(b, -1) if want_upper else Cst(0)
        case FloorDiv(x, b):
            if not _positive(b, depth):
                return None
            bx = _extreme(x, want_upper, depth + 1)
            if bx is None:
                return None
            if isinstance(bx, Cst) and isinstance(b, Cst):
                return Cst(bx.value // b.value)
            if want_upper:  # x <= bx  ==>  x // b <= bx // b  <=  bx / lo(b) when bx >= 0
                lb = _extreme(b, False, depth + 1)
                if isinstance(bx, Cst) and isinstance(lb, Cst) and bx.value >= 0:
                    return Cst(bx.value // lb.value)
                return FloorDiv(bx, b) if bx != x else None
            if isinstance(bx, Cst) and bx.value >= 0:
                return Cst(0)
            return FloorDiv(bx, b) if bx != x else None
        case Min(x, y):
            if want_upper:
                bs = [_extreme(t, True, depth + 1) for t in (x, y)]
                known = [b for b in bs if b is not None]
                return _pick(known, min) if known else None
            bs = [_extreme(t, False, depth + 1) for t in (x, y)]
            return None if None in bs else _pick(bs, min)
        case Max(x, y):
            if not want_upper:
                bs = [_extreme(t, False, depth + 1) for t in (x, y)]
                known = [b for b in bs if b is not None]
                return _pick(known, max) if known else None
            bs = [_extreme(t, True, depth + 1) for t in (x, y)]
            return None if None in bs else _pick(bs, max)
    return None


def _pick(bounds: list[Arith], fn) -> Arith:
    if all(isinstance(b, Cst) for b in bounds):
        return Cst(fn(b.value for b in bounds))  # type: ignore[union-attr]
    return bounds[0] if len(bounds) == 1 else (Min if fn is min else Max)(bounds[0], bounds[1])


def _positive(b: Arith, depth: int) -> bool:
    lo = _extreme(b, False, depth + 1)
    return isinstance(lo, Cst) and lo.value > 0
