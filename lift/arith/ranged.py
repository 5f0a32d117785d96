"""Range-aware constructors: floor division, modulo, minimum and maximum.

Each normalises its result using the variables' ranges (`lift.arith.ranges`):
  (4*i + j) // 4 -> i  and  (4*i + j) % 4 -> j        when 0 <= j <= 3
  (i*N + j) // N -> i  and  (i*N + j) % N -> j        when 0 <= j <= N - 1
  (x % (b*c)) // c -> (x // c) % b    when b, c > 0
  (x // a) // c -> x // (a*c)         when c > 0 (any a != 0)
  (x % (b*c)) % c -> x % c            (any b)
  (f*x) // (f*y) -> x // y,  (f*x) % (f*y) -> f*(x % y)   when f > 0
  min(a, b) -> a                      when a <= b provably
Negative constant (or provably negative) divisors are turned positive first.
Every rule holds for all values in range (floor semantics), and the property tests
in tests/test_arith.py check it against plain evaluation, z3 and OpenCL.
"""

from __future__ import annotations

from functools import lru_cache

from lift.arith.algebra import add, mul
from lift.arith.expr import Arith, ArithLike, Cst, ExactDiv, FloorDiv, Max, Min, Mod, as_arith
from lift.arith.poly import Poly, atom_key, content, divide, exact_quotient, from_poly, scale_down, to_poly
from lift.arith.ranges import prove_le, prove_lt, prove_nonneg, prove_positive


def floordiv(a: ArithLike, b: ArithLike) -> Arith:
    """a // b (floor). Example: `(4*i + j) // 4 == i` when `0 <= j <= 3`."""
    a, b = as_arith(a), as_arith(b)
    if isinstance(b, Cst):
        if b.value == 0:
            raise ZeroDivisionError(f"symbolic division of {a} by zero")
        if isinstance(a, Cst):
            return Cst(a.value // b.value)
        if b.value == 1:
            return a
        if b.value < 0:
            return floordiv(mul(-1, a), -b.value)
        return _floordiv_pos(a, b)
    if prove_positive(b):
        return _floordiv_pos(a, b)
    if prove_positive(mul(-1, b)):
        return floordiv(mul(-1, a), mul(-1, b))
    return Cst(1) if a == b else FloorDiv(a, b)


@lru_cache(maxsize=1 << 16)
def _floordiv_pos(a: Arith, b: Arith) -> Arith:
    pa, pb = to_poly(a), to_poly(b)
    q, r = divide(pa, pb)
    if q:
        return add(from_poly(q), _floordiv_pos(from_poly(r), b))
    factor = _common(pa, pb)
    if factor is not None:
        _, a1, b1 = factor
        return floordiv(a1, b1)
    small = _small_quotient(a, b)
    if small is not None:
        return Cst(small)
    match a:
        case FloorDiv(x, c):  # floor(floor(y) / b) == floor(y / b) for b > 0, any real y
            return floordiv(x, mul(c, b))
        case Mod(x, m):
            k = exact_quotient(to_poly(m), pb)
            if k is not None and prove_positive(from_poly(k)):
                return mod(floordiv(x, b), from_poly(k))
    return FloorDiv(a, b)


def mod(a: ArithLike, b: ArithLike) -> Arith:
    """a % b (floor modulo, the sign of b). Example: `(4*i + j) % 4 == j` when `0 <= j <= 3`."""
    a, b = as_arith(a), as_arith(b)
    if isinstance(b, Cst):
        if b.value == 0:
            raise ZeroDivisionError(f"symbolic modulo of {a} by zero")
        if isinstance(a, Cst):
            return Cst(a.value % b.value)
        if b.value in (1, -1):
            return Cst(0)
        if b.value < 0:
            return mul(-1, mod(mul(-1, a), -b.value))
        return _mod_pos(a, b)
    if prove_positive(b):
        return _mod_pos(a, b)
    if prove_positive(mul(-1, b)):
        return mul(-1, mod(mul(-1, a), mul(-1, b)))
    return Cst(0) if a == b else Mod(a, b)


@lru_cache(maxsize=1 << 16)
def _mod_pos(a: Arith, b: Arith) -> Arith:
    pa, pb = to_poly(a), to_poly(b)
    q, r = divide(pa, pb)
    if not r:
        return Cst(0)
    if q:
        return _mod_pos(from_poly(r), b)
    factor = _common(pa, pb)
    if factor is not None:
        f, a1, b1 = factor
        return mul(f, mod(a1, b1))
    small = _small_quotient(a, b)
    if small is not None:
        return add(a, mul(-small, b))  # a - (a // b)*b
    if isinstance(a, Mod) and exact_quotient(to_poly(a.b), pb) is not None:
        return a if a.b == b else mod(a.a, b)  # b divides a.b: (x % (k*b)) % b == x % b
    return Mod(a, b)


def _small_quotient(a: Arith, b: Arith) -> int | None:
    """a // b when provably 0 (0 <= a < b) or -1 (-b <= a < 0), else None."""
    if prove_nonneg(a):
        return 0 if prove_lt(a, b) else None
    if prove_lt(a, 0) and prove_nonneg(add(a, b)):
        return -1
    return None


def _common(pa: Poly, pb: Poly) -> tuple[Arith, Arith, Arith] | None:
    """(f, a / f, b / f) for the largest provably positive common factor f > 1 of a and b."""
    g, atoms = content(pa, pb)
    if g <= 0 or (g == 1 and not atoms):
        return None
    if atoms and not prove_positive(from_poly({atoms: 1})):
        if g == 1:
            return None
        atoms = ()
    f = from_poly({atoms: g})
    return f, from_poly(scale_down(pa, g, atoms)), from_poly(scale_down(pb, g, atoms))


def min_(a: ArithLike, b: ArithLike) -> Arith:
    """min(a, b). Example: `min_(N, N + 1) == N`."""
    return _extremum(a, b, smaller=True)


def max_(a: ArithLike, b: ArithLike) -> Arith:
    """max(a, b). Example: `max_(N, 1) == N` for a size N."""
    return _extremum(a, b, smaller=False)


def _extremum(a: ArithLike, b: ArithLike, smaller: bool) -> Arith:
    """min(a, b) (`smaller`) or max(a, b): folded for constants, the provably smaller (larger)
    operand where one is, else a `Min` (`Max`) of the operands in canonical order."""
    a, b = as_arith(a), as_arith(b)
    if isinstance(a, Cst) and isinstance(b, Cst):
        return Cst(min(a.value, b.value) if smaller else max(a.value, b.value))
    if prove_le(a, b):
        return a if smaller else b
    if prove_le(b, a):
        return b if smaller else a
    return (Min if smaller else Max)(*sorted((a, b), key=atom_key))


def exact_div(a: ArithLike, b: ArithLike) -> Arith:
    """`a / b` for a `b` that divides `a` (checked where both are constants).

    Example: `exact_div(N, 4) * 4 == N`; `exact_div(exact_div(N, 4), 2) == exact_div(N, 8)`."""
    a, b = as_arith(a), as_arith(b)
    if b == 0:
        raise ZeroDivisionError(f"symbolic division of {a} by zero")
    if isinstance(a, Cst) and isinstance(b, Cst):
        if a.value % b.value:
            raise ValueError(f"{b} does not divide {a}")
        return Cst(a.value // b.value)
    if b == 1:
        return a
    if isinstance(a, ExactDiv):
        return exact_div(a.a, mul(a.b, b))
    pa, pb = to_poly(a), to_poly(b)
    if all(c < 0 for c in pa.values()) or all(c < 0 for c in pb.values()):
        sign_a, sign_b = (-1 if all(c < 0 for c in pa.values()) else 1), (-1 if all(c < 0 for c in pb.values()) else 1)
        return mul(sign_a * sign_b, exact_div(mul(sign_a, a), mul(sign_b, b)))
    q = exact_quotient(pa, pb)
    if q is not None:
        return from_poly(q)
    g, atoms = content(pa, pb)
    if g > 1 or atoms:
        return exact_div(from_poly(scale_down(pa, g, atoms)), from_poly(scale_down(pb, g, atoms)))
    return ExactDiv(a, b)
