"""Range analysis: symbolic lower and upper bounds, and proofs of sign and order.

`lower(e)` and `upper(e)` eliminate one atom at a time, the atom whose range depends
on the most others first, replacing it by the end of its range that makes `e` smallest
(or largest); `e` must be monotone in the atom (a coefficient of known sign, or a power
of a non-negative atom). Each step is an inequality that holds at every point within
the ranges, so every answer is sound; "cannot prove" is never "false".
"""

from __future__ import annotations

from functools import lru_cache

from lift.arith.algebra import add, mul
from lift.arith.expr import Arith, ArithLike, Cst, ExactDiv, FloorDiv, Max, Min, Mod, Var, as_arith
from lift.arith.poly import Poly, atom_key, from_poly, to_poly

# lift.arith.ranged (floordiv, mod, min_, max_) imports this module: they are imported where used.

_MAX_DEPTH = 32


def lower(e: ArithLike) -> Arith | None:
    """A lower bound of `e`, constant where possible; None if none is known.

    Example: `lower(k) == 0` and `upper(k) == N - 1` for `k = Var("k", 0, N - 1)`."""
    return _public(as_arith(e), False)


def upper(e: ArithLike) -> Arith | None:
    """An upper bound of `e`, constant where possible; None if none is known."""
    return _public(as_arith(e), True)


@lru_cache(maxsize=1 << 14)
def _public(e: Arith, maximise: bool) -> Arith | None:
    b = _extreme(e, maximise, 0)
    return b if isinstance(b, Cst) or b != e else None


def prove_nonneg(e: ArithLike) -> bool:
    """True only if `e >= 0` for every value of its variables within their ranges."""
    return _nonneg(as_arith(e))


@lru_cache(maxsize=1 << 16)
def _nonneg(e: Arith) -> bool:
    lo = _extreme(e, False, 0)
    return isinstance(lo, Cst) and lo.value >= 0


def prove_positive(e: ArithLike) -> bool:
    """True only if `e >= 1` provably."""
    return _nonneg(add(e, -1))


def prove_le(a: ArithLike, b: ArithLike) -> bool:
    """True only if `a <= b` provably."""
    return _nonneg(add(b, mul(-1, a)))


def prove_lt(a: ArithLike, b: ArithLike) -> bool:
    """True only if `a < b` provably."""
    return _nonneg(add(add(b, -1), mul(-1, a)))


def prove_eq(a: ArithLike, b: ArithLike) -> bool:
    """True only if `a == b` provably (canonical forms agree, or both orders hold)."""
    a, b = as_arith(a), as_arith(b)
    return a == b or (prove_le(a, b) and prove_le(b, a))


def prove_divides(d: ArithLike, n: ArithLike) -> bool:
    """True only if `d` divides `n` for all values of the variables (d != 0)."""
    from lift.arith.ranged import mod

    d, n = as_arith(d), as_arith(n)
    if isinstance(d, Cst) and d.value == 0:
        return False
    if not (prove_positive(d) or prove_positive(mul(-1, d))):
        return False  # d might be zero somewhere
    return mod(n, d) == Cst(0)


def _atoms(e: Arith) -> set[Arith]:
    return {a for m in to_poly(e) for a in m}


@lru_cache(maxsize=1 << 16)
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


def _extreme(e: Arith, maximise: bool, depth: int) -> Arith:
    """A bound of `e` (an upper one if `maximise`), `e` itself when nothing is known."""
    if isinstance(e, Cst) or depth > _MAX_DEPTH:
        return e
    p = to_poly(e)
    atoms = sorted({a for m in p for a in m}, key=lambda a: (-_rank(a), atom_key(a)))
    for v in atoms:
        bound = _eliminate(p, v, maximise, depth)
        if bound is not None:
            return _extreme(bound, maximise, depth + 1)
    return e


def _eliminate(p: Poly, v: Arith, maximise: bool, depth: int) -> Arith | None:
    """`p` with atom `v` replaced by an end of its range; None if not monotone in `v`."""
    const: Poly = {}
    powers: dict[int, Poly] = {}
    for m, c in p.items():
        k = m.count(v)
        if k == 0:
            const[m] = c
        else:
            rest = tuple(a for a in m if a != v)
            powers.setdefault(k, {})[rest] = c
    coefs = {k: from_poly(q) for k, q in powers.items()}
    signs = {_sign(c, depth) for c in coefs.values()}
    if 0 in signs or len(signs) != 1:
        return None
    if max(coefs) > 1 and not _is_nonneg(v, depth):
        return None  # a power of an atom that may be negative: not monotone
    want_upper = maximise == (signs == {1})
    options = [b for b in _atom_bounds(v, want_upper, depth + 1) if b != v]
    if not options:
        return None
    bound = _choose(options, {a for m in const for a in m}, want_upper, depth)
    total = from_poly(const)
    for k, coef in coefs.items():
        total = add(total, mul(coef, _power(bound, k)))
    return total


def _choose(options: list[Arith], context: set[Arith], want_upper: bool, depth: int) -> Arith:
    """One bound of several (no search, to stay linear): the first that shares atoms with
    the rest of the expression (it may cancel), else the tightest constant one."""
    if len(options) == 1:
        return options[0]
    for b in options:
        if context & _atoms(b):
            return b
    ends = [_extreme(b, want_upper, depth + 1) for b in options]
    consts = [x.value for x in ends if isinstance(x, Cst)]
    if consts:
        return Cst(min(consts) if want_upper else max(consts))
    return options[0]


def _power(x: Arith, k: int) -> Arith:
    out = x
    for _ in range(k - 1):
        out = mul(out, x)
    return out


def _sign(c: Arith, depth: int) -> int:
    """1 if c >= 0 provably, -1 if c <= 0 provably, else 0."""
    if isinstance(c, Cst):
        return 1 if c.value >= 0 else -1
    if _is_nonneg(c, depth):
        return 1
    hi = _extreme(c, True, depth + 1)
    return -1 if isinstance(hi, Cst) and hi.value <= 0 else 0


def _is_nonneg(c: Arith, depth: int) -> bool:
    lo = _extreme(c, False, depth + 1)
    return isinstance(lo, Cst) and lo.value >= 0


def _positive(b: Arith, depth: int) -> bool:
    lo = _extreme(b, False, depth + 1)
    return isinstance(lo, Cst) and lo.value > 0


def _atom_bounds(a: Arith, want_upper: bool, depth: int) -> list[Arith]:
    """Expressions bounding atom `a` from above (or below) at every point in range."""
    match a:
        case Var(_, lo, hi):
            bound = hi if want_upper else lo
            return [] if bound is None else [bound]
        case Mod(x, b):
            return _mod_bounds(x, b, want_upper, depth)
        case ExactDiv(x, b) if not want_upper:  # a multiple of b: x / b >= ceil(lo(x) / b)
            return _div_bounds(add(x, add(b, -1)), b, False, depth)
        case FloorDiv(x, b):
            return _div_bounds(x, b, want_upper, depth)
        case Min(x, y):
            return [x, y] if want_upper else _both(x, y, False, depth)
        case Max(x, y):
            return _both(x, y, True, depth) if want_upper else [x, y]
    return []


def _mod_bounds(x: Arith, b: Arith, want_upper: bool, depth: int) -> list[Arith]:
    if _positive(b, depth):  # 0 <= x % b <= b - 1, and x % b <= x when x >= 0
        if not want_upper:
            return [Cst(0)]
        top = add(b, -1)
        if not _is_nonneg(x, depth):
            return [top]
        ux = _extreme(x, True, depth + 1)
        if isinstance(top, Cst) and isinstance(ux, Cst):
            return [Cst(min(top.value, ux.value))]
        return [top, x]
    if _positive(mul(-1, b), depth):  # b + 1 <= x % b <= 0
        return [Cst(0)] if want_upper else [add(b, 1)]
    return []


def _div_bounds(x: Arith, b: Arith, want_upper: bool, depth: int) -> list[Arith]:
    """x // b is monotone in x for b > 0; constant ends also use the range of b."""
    if not _positive(b, depth):
        return []
    bx = _extreme(x, want_upper, depth + 1)
    if bx == x:
        return []
    if isinstance(b, Cst) or not isinstance(bx, Cst):
        from lift.arith.ranged import floordiv

        return [floordiv(bx, b)]
    lb = _extreme(b, False, depth + 1)
    ub = _extreme(b, True, depth + 1)
    assert isinstance(lb, Cst)
    v = bx.value
    if want_upper:  # v >= 0: largest at the smallest b; v < 0: at most -1
        return [Cst(v // lb.value if v >= 0 else (v // ub.value if isinstance(ub, Cst) else -1))]
    if v >= 0:  # smallest at the largest b
        return [Cst(v // ub.value if isinstance(ub, Cst) else 0)]
    return [Cst(v // lb.value)]


def _both(x: Arith, y: Arith, want_upper: bool, depth: int) -> list[Arith]:
    """max(x, y) <= max(ux, uy), min(x, y) >= min(lx, ly)."""
    bx, by = _extreme(x, want_upper, depth + 1), _extreme(y, want_upper, depth + 1)
    if isinstance(bx, Cst) and isinstance(by, Cst):
        return [Cst(max(bx.value, by.value) if want_upper else min(bx.value, by.value))]
    if bx == x and by == y:
        return []
    from lift.arith.ranged import max_, min_

    return [max_(bx, by) if want_upper else min_(bx, by)]
