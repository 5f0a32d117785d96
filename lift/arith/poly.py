"""Polynomials over atoms: the canonical form behind sums and products.

A polynomial maps a monomial (a tuple of atoms sorted by `atom_key`, repeated for
powers) to a non-zero integer coefficient. `to_poly` / `from_poly` convert between
expressions and polynomials; `divide` splits a polynomial by a divisor exactly.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from math import gcd
from typing import Any, cast

from lift.arith.expr import Arith, Cst, ExactDiv, FloorDiv, Max, Min, Mod, Prod, Sum, Var, show

Monomial = tuple[Arith, ...]
Poly = dict[Monomial, int]

_ORDER = {Var: 0, FloorDiv: 1, ExactDiv: 1, Mod: 2, Min: 3, Max: 4}
_MAX_DIVISION_STEPS = 64


@lru_cache(maxsize=1 << 16)
def atom_key(a: Arith) -> tuple[int, str]:
    """A total order on atoms: by kind, then text (variables' ranges break ties)."""
    return (_ORDER.get(type(a), 9), show(a, full=True))


def mono_key(m: Monomial) -> tuple[Any, ...]:
    """A graded order on monomials: by degree, then by atoms, largest first."""
    return (len(m), tuple(atom_key(a) for a in reversed(m)))


def to_poly(e: Arith) -> Poly:
    """A fresh polynomial for `e` (the caller may mutate it)."""
    if isinstance(e, Cst):
        return {(): e.value} if e.value else {}
    if isinstance(e, Sum):
        out: Poly = {}
        for t in e.terms:
            acc(out, to_poly(t))
        return out
    if isinstance(e, Prod):
        out = {(): 1}
        for f in e.factors:
            out = poly_mul(out, to_poly(f))
        return out
    return {(e,): 1}


def acc(out: Poly, p: Poly, scale: int = 1) -> None:
    """out += scale * p, in place."""
    for m, c in p.items():
        v = out.get(m, 0) + c * scale
        if v:
            out[m] = v
        else:
            out.pop(m, None)


def mono_mul(m1: Monomial, m2: Monomial) -> Monomial:
    if not m1:
        return m2
    if not m2:
        return m1
    return tuple(sorted(m1 + m2, key=atom_key))


def poly_mul(p: Poly, q: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = mono_mul(m1, m2)
            v = out.get(m, 0) + c1 * c2
            if v:
                out[m] = v
            else:
                out.pop(m, None)
    return out


def from_poly(p: Poly) -> Arith:
    """The canonical expression of `p`: terms by monomial order, constant last."""
    terms: list[Arith] = []
    for m in sorted(p, key=lambda m: (len(m) == 0, [atom_key(a) for a in m])):
        c = p[m]
        if not m:
            terms.append(Cst(c))
        elif c == 1 and len(m) == 1:
            terms.append(m[0])
        else:
            terms.append(Prod(((Cst(c),) if c != 1 else ()) + m))
    if not terms:
        return Cst(0)
    return terms[0] if len(terms) == 1 else Sum(tuple(terms))


def remove(m: Monomial, sub: Monomial) -> Monomial | None:
    """m / sub as a monomial, or None if `sub` does not divide `m`."""
    if not sub:
        return m
    rest = list(m)
    for a in sub:
        if a not in rest:
            return None
        rest.remove(a)
    return tuple(rest)


def divide(p: Poly, d: Poly) -> tuple[Poly, Poly]:
    """(q, r) with p == q*d + r exactly, q taking every multiple of d's leading term.

    Coefficients are split with floor division, so for a positive constant `d` the
    coefficients of `r` lie in [0, d). For a divisor with several terms this is
    polynomial long division by the leading monomial (graded order)."""
    if not d:
        raise ZeroDivisionError("polynomial division by zero")
    lead = max(d, key=mono_key)
    lc = d[lead]
    q: Poly = {}
    r = dict(p)
    if len(d) == 1:
        for m, c in p.items():
            rest = remove(m, lead)
            qc = c // lc if rest is not None else 0
            if qc:
                q[cast(Monomial, rest)] = qc
                acc(r, {m: qc * lc}, -1)
        return q, r
    for _ in range(_MAX_DIVISION_STEPS):
        step = _next_step(r, lead, lc)
        if step is None:
            break
        rest, qc = step
        acc(q, {rest: qc})
        acc(r, poly_mul({rest: qc}, d), -1)
    return q, r


def _next_step(r: Poly, lead: Monomial, lc: int) -> tuple[Monomial, int] | None:
    for m in sorted(r, key=mono_key, reverse=True):
        rest = remove(m, lead)
        if rest is not None and r[m] // lc:
            return rest, r[m] // lc
    return None


def exact_quotient(p: Poly, d: Poly) -> Poly | None:
    """p / d when d divides p as polynomials, else None."""
    q, r = divide(p, d)
    return q if not r else None


def content(*ps: Poly) -> tuple[int, Monomial]:
    """The common factor of every term of the polynomials: (gcd of coefficients, atoms)."""
    g = 0
    common: Counter[Arith] | None = None
    for p in ps:
        for m, c in p.items():
            g = gcd(g, c)
            common = Counter(m) if common is None else common & Counter(m)
    atoms = sorted(common.elements(), key=atom_key) if common else []
    return g, tuple(atoms)


def scale_down(p: Poly, g: int, atoms: Monomial) -> Poly:
    """p / (g * atoms), for a common factor found by `content`."""
    out: Poly = {}
    for m, c in p.items():
        rest = remove(m, atoms)
        assert rest is not None and c % g == 0
        out[rest] = c // g
    return out
