"""Sums and products of canonical expressions, folding matching division and modulo.

`add` and `mul` work on polynomials (`lift.arith.poly`). After each, the identity
`b*(a // b) + a % b == a` is applied wherever it merges or cancels terms:
`3*(k // 3) + k % 3 -> k`, `k - 3*(k // 3) -> k % 3` and `k - k % 3 -> 3*(k // 3)`;
the quotient is the canonical one, so `4*M*(i // (4*M)) + 4*((i // 4) % M) -> 4*(i // 4)`.
"""

from __future__ import annotations

from typing import cast

from lift.arith.expr import Arith, ArithLike, Cst, ExactDiv, FloorDiv, Mod, as_arith
from lift.arith.poly import (
    Monomial,
    Poly,
    acc,
    atom_key,
    content,
    from_poly,
    poly_mul,
    remove,
    scale_down,
    to_poly,
)

_MAX_FOLDS = 8


def add(a: ArithLike, b: ArithLike) -> Arith:
    """a + b in canonical form. Example: `(N + 1) + (N - 1) == 2*N`."""
    a, b = as_arith(a), as_arith(b)
    if isinstance(a, Cst) and isinstance(b, Cst):
        return Cst(a.value + b.value)
    p = to_poly(a)
    acc(p, to_poly(b))
    return from_poly(fold_divmod(fold_exact(p)))


def mul(a: ArithLike, b: ArithLike) -> Arith:
    """a * b in canonical form. Example: `(N + 1)*(N - 1) == N*N - 1`."""
    a, b = as_arith(a), as_arith(b)
    if isinstance(a, Cst) and isinstance(b, Cst):
        return Cst(a.value * b.value)
    return from_poly(fold_divmod(fold_exact(poly_mul(to_poly(a), to_poly(b)))))


def fold_exact(p: Poly) -> Poly:
    """Apply `c*g*(a / (g*k)) == c*(a / k)` in place: a term's factor in common with an exact
    divisor cancels (`4*(N / 4) == N`, `2*(N / 4) == N / 2`)."""
    for _ in range(_MAX_FOLDS):
        hit = next(((m, c, f) for m, c in p.items() for f in m if isinstance(f, ExactDiv)
                    and _common(remove(m, (f,)), c, f.b) != (1, ())), None)
        if hit is None:
            break
        m, c, f = hit
        rest = {remove(m, (f,)): c}
        g, atoms = _common(remove(m, (f,)), c, f.b)
        quot = exact_div(f.a, from_poly(scale_down(to_poly(f.b), g, atoms)))
        acc(p, {m: c}, -1)
        acc(p, poly_mul(scale_down(cast(Poly, rest), g, atoms), to_poly(quot)))  # f in m: rest is a monomial
    return p


def _common(rest: Monomial | None, c: int, b: Arith) -> tuple[int, Monomial]:
    """The common factor of the term `c*rest` and the divisor `b` (positive gcd)."""
    g, atoms = content(cast(Poly, {rest: c}), to_poly(b))
    return abs(g), atoms


def fold_divmod(p: Poly) -> Poly:
    """Apply `c*b*(a // b) == c*a - c*(a % b)` in place where it merges or cancels terms."""
    for _ in range(_MAX_FOLDS):
        if not _fold_once(p):
            break
    return p


def _fold_once(p: Poly) -> bool:
    atoms = {a for m in p for a in m if isinstance(a, (FloorDiv, Mod))}
    has_div = any(isinstance(a, FloorDiv) for a in atoms)
    for f in sorted(atoms, key=atom_key):
        if isinstance(f, FloorDiv) and _fold_quotient(p, f):
            return True
        if isinstance(f, Mod) and _fold_remainder(p, f, has_div):
            return True
    return False


def _fold_quotient(p: Poly, f: FloorDiv) -> bool:
    """c*b*(a // b) - c*a -> -c*(a % b): the multiple of b cancels against a."""
    quot = poly_mul(to_poly(f.b), {(f,): 1})
    c = _multiple(p, quot)
    pa = to_poly(f.a)
    if c is None or not _contains(p, pa, -c):
        return False
    acc(p, quot, -c)
    acc(p, pa, c)
    acc(p, to_poly(mod(f.a, f.b)), -c)
    return True


def _fold_remainder(p: Poly, f: Mod, has_div: bool) -> bool:
    """k*(a % b) + k*b*(a // b) -> k*a, and k*(a % b) - k*a -> -k*b*(a // b)."""
    k = p.get((f,))
    if k is None:
        return False
    pa = to_poly(f.a)
    merge = 0
    if has_div:
        quot = poly_mul(to_poly(f.b), to_poly(floordiv(f.a, f.b)))
        c = _multiple(p, quot)
        if c is not None and (c > 0) == (k > 0):
            merge = k if abs(k) <= abs(c) else c
    if merge:  # s*(a % b) + s*b*(a // b) == s*a
        acc(p, quot, -merge)
        acc(p, {(f,): merge}, -1)
        acc(p, pa, merge)
        return True
    if not _contains(p, pa, -k):
        return False
    acc(p, pa, k)
    acc(p, {(f,): k}, -1)
    acc(p, poly_mul(to_poly(f.b), to_poly(floordiv(f.a, f.b))), -k)
    return True


def _multiple(p: Poly, q: Poly) -> int | None:
    """The c with c*q contained term by term in p, or None."""
    if not q:
        return None
    m0, q0 = next(iter(q.items()))
    k = p.get(m0)
    if k is None or k % q0:
        return None
    c = k // q0
    return c if all(p.get(m) == c * qc for m, qc in q.items()) else None


def _contains(p: Poly, pa: Poly, c: int) -> bool:
    """Does p hold c * (each non-constant term of pa)?"""
    terms = [m for m in pa if m]
    return bool(terms) and all(p.get(m) == c * pa[m] for m in terms)


# Last: lift.arith.ranged imports this module (its simplifications add and multiply).
from lift.arith.ranged import exact_div, floordiv, mod  # noqa: E402
