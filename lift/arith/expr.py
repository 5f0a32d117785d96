"""Symbolic integer arithmetic for array sizes and indices, kept in canonical form.

Every expression is built by the smart constructors (`add`, `mul`, `floordiv`, `mod`,
`min_`, `max_`) or the operators, which normalise it: sums and products become a
polynomial over *atoms* (variables, floor divisions, modulos, minima and maxima), with
like terms merged and a fixed order, so equivalent polynomial forms are equal values.
Division and modulo are simplified with range information (`lift.arith.ranges`):
`(4*i + j) // 4 == i` and `(4*i + j) % 4 == j` when `0 <= j < 4`.

Division is *floor* division and `%` the matching modulo (Python semantics); the C
printer emits code with the same meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

ArithLike = Union["Arith", int]


class Arith:
    """Base of symbolic integer expressions; supports + - * // % and unary minus."""

    __slots__ = ()

    def __add__(self, o: ArithLike) -> Arith:
        return add(self, o)

    def __radd__(self, o: ArithLike) -> Arith:
        return add(o, self)

    def __sub__(self, o: ArithLike) -> Arith:
        return add(self, mul(-1, o))

    def __rsub__(self, o: ArithLike) -> Arith:
        return add(o, mul(-1, self))

    def __mul__(self, o: ArithLike) -> Arith:
        return mul(self, o)

    def __rmul__(self, o: ArithLike) -> Arith:
        return mul(o, self)

    def __floordiv__(self, o: ArithLike) -> Arith:
        return floordiv(self, o)

    def __rfloordiv__(self, o: ArithLike) -> Arith:
        return floordiv(o, self)

    def __mod__(self, o: ArithLike) -> Arith:
        return mod(self, o)

    def __rmod__(self, o: ArithLike) -> Arith:
        return mod(o, self)

    def __neg__(self) -> Arith:
        return mul(-1, self)

    def __pos__(self) -> Arith:
        return self

    @property
    def is_constant(self) -> bool:
        return isinstance(self, Cst)

    def __str__(self) -> str:
        return _show(self, 0)

    def __repr__(self) -> str:
        return f"Arith({_show(self, 0)})"

    def __bool__(self) -> bool:
        raise TypeError("the truth of a symbolic size is unknown; use lift.arith.prove_* instead")


def _hashed(cls):  # cache the structural hash once per node
    def __hash__(self) -> int:
        h = self._h
        if h is None:
            h = hash((cls.__name__,) + tuple(getattr(self, f) for f in cls._hfields))
            object.__setattr__(self, "_h", h)
        return h

    cls.__hash__ = __hash__
    return cls


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class Cst(Arith):
    """An integer constant."""

    value: int
    _h: int | None = field(default=None, init=False, compare=False, repr=False)
    _hfields = ("value",)

    def __index__(self) -> int:
        return self.value

    def __int__(self) -> int:
        return self.value


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class Var(Arith):
    """A variable with an inclusive range `lo <= v <= hi` (None: unbounded)."""

    name: str
    lo: Arith | None = None
    hi: Arith | None = None
    _h: int | None = field(default=None, init=False, compare=False, repr=False)
    _hfields = ("name", "lo", "hi")


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class Sum(Arith):
    """A canonical sum: at least two terms, constant last."""

    terms: tuple[Arith, ...]
    _h: int | None = field(default=None, init=False, compare=False, repr=False)
    _hfields = ("terms",)


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class Prod(Arith):
    """A canonical product: an optional constant coefficient first, then sorted atoms."""

    factors: tuple[Arith, ...]
    _h: int | None = field(default=None, init=False, compare=False, repr=False)
    _hfields = ("factors",)


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class FloorDiv(Arith):
    """`a // b`, floor division."""

    a: Arith
    b: Arith
    _h: int | None = field(default=None, init=False, compare=False, repr=False)
    _hfields = ("a", "b")


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class Mod(Arith):
    """`a % b`, with the sign of `b` (floor modulo)."""

    a: Arith
    b: Arith
    _h: int | None = field(default=None, init=False, compare=False, repr=False)
    _hfields = ("a", "b")


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class Min(Arith):
    a: Arith
    b: Arith
    _h: int | None = field(default=None, init=False, compare=False, repr=False)
    _hfields = ("a", "b")


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class Max(Arith):
    a: Arith
    b: Arith
    _h: int | None = field(default=None, init=False, compare=False, repr=False)
    _hfields = ("a", "b")


ATOMS = (Var, FloorDiv, Mod, Min, Max)


def as_arith(x: ArithLike) -> Arith:
    """An `Arith` from an int (or numpy integer), or the expression itself."""
    if isinstance(x, Arith):
        return x
    if isinstance(x, bool):
        raise TypeError("a size cannot be a bool")
    try:
        return Cst(int(x.__index__()))  # type: ignore[union-attr]
    except AttributeError:
        raise TypeError(f"expected an integer or a symbolic size, got {x!r}") from None


def size(name: str) -> Var:
    """A symbolic array size: a positive integer variable."""
    return Var(name, Cst(1), None)


# ---------------------------------------------------------------- polynomials
# A polynomial maps a monomial (a sorted tuple of atoms, repeated for powers) to a
# non-zero integer coefficient.

Poly = dict[tuple[Arith, ...], int]


def _key(a: Arith) -> tuple[int, str]:
    order = {Var: 0, FloorDiv: 1, Mod: 2, Min: 3, Max: 4}
    return (order.get(type(a), 9), _show(a, 0))


def to_poly(e: Arith) -> Poly:
    if isinstance(e, Cst):
        return {(): e.value} if e.value else {}
    if isinstance(e, Sum):
        out: Poly = {}
        for t in e.terms:
            _acc(out, to_poly(t))
        return out
    if isinstance(e, Prod):
        out = {(): 1}
        for f in e.factors:
            out = _poly_mul(out, to_poly(f))
        return out
    return {(e,): 1}


def _acc(out: Poly, p: Poly, scale: int = 1) -> None:
    for m, c in p.items():
        v = out.get(m, 0) + c * scale
        if v:
            out[m] = v
        else:
            out.pop(m, None)


def _poly_mul(p: Poly, q: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            _acc(out, {tuple(sorted(m1 + m2, key=_key)): c1 * c2})
    return out


def from_poly(p: Poly) -> Arith:
    terms = []
    for m in sorted(p, key=lambda m: (len(m) == 0, [_key(a) for a in m])):
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


# ----------------------------------------------------------- smart constructors


def add(a: ArithLike, b: ArithLike) -> Arith:
    a, b = as_arith(a), as_arith(b)
    if isinstance(a, Cst) and isinstance(b, Cst):
        return Cst(a.value + b.value)
    p = to_poly(a)
    _acc(p, to_poly(b))
    return from_poly(_fold_divmod(p))


def _fold_divmod(p: Poly) -> Poly:
    """Rewrite `c*b*(a // b) + c*(a % b)` into `c*a` wherever both parts occur."""
    for m, c in list(p.items()):
        if len(m) != 1 or not isinstance(m[0], Mod) or m not in p:
            continue
        a, b = m[0].a, m[0].b
        quot = _poly_mul(to_poly(b), {(FloorDiv(a, b),): c})
        if all(p.get(qm) == qc for qm, qc in quot.items()):
            _acc(p, quot, -1)
            _acc(p, {m: c}, -1)
            _acc(p, to_poly(a), c)
    return p


def mul(a: ArithLike, b: ArithLike) -> Arith:
    a, b = as_arith(a), as_arith(b)
    if isinstance(a, Cst) and isinstance(b, Cst):
        return Cst(a.value * b.value)
    return from_poly(_poly_mul(to_poly(a), to_poly(b)))


def _split_divisible(p: Poly, d: Poly) -> tuple[Poly, Poly] | None:
    """Split p into (q, r) with p == q*d + r, r holding what d does not divide.

    Only monomial divisors `c * atoms` are handled; None otherwise."""
    if len(d) != 1:
        return None
    ((dm, dc),) = d.items()
    q: Poly = {}
    r: Poly = {}
    for m, c in p.items():
        rest = _remove(m, dm)
        if rest is None:
            r[m] = c
            continue
        qc, rc = divmod(c, dc)
        if qc:
            _acc(q, {rest: qc})
        if rc:
            _acc(r, {m: rc})
    return q, r


def _remove(m: tuple[Arith, ...], sub: tuple[Arith, ...]) -> tuple[Arith, ...] | None:
    rest = list(m)
    for a in sub:
        if a not in rest:
            return None
        rest.remove(a)
    return tuple(rest)


def _common_factor(a: Arith, b: Arith) -> int:
    """The gcd of every coefficient of `a` and of a positive constant divisor `b`."""
    if not isinstance(b, Cst) or b.value <= 1:
        return 1
    from math import gcd

    g = b.value
    for c in to_poly(a).values():
        g = gcd(g, c)
    return g


def _div_exact(a: Arith, g: int) -> Arith:
    return from_poly({m: c // g for m, c in to_poly(a).items()})


def floordiv(a: ArithLike, b: ArithLike) -> Arith:
    from lift.arith.ranges import prove_nonneg, prove_positive

    a, b = as_arith(a), as_arith(b)
    if isinstance(b, Cst) and b.value == 0:
        raise ZeroDivisionError(f"symbolic division of {a} by zero")
    if isinstance(a, Cst) and isinstance(b, Cst):
        return Cst(a.value // b.value)
    if b == Cst(1):
        return a
    if a == b and prove_positive(b):
        return Cst(1)
    if isinstance(a, FloorDiv) and prove_positive(a.b) and prove_positive(b):
        return floordiv(a.a, mul(a.b, b))
    g = _common_factor(a, b)
    if g > 1:
        return floordiv(_div_exact(a, g), _div_exact(b, g))
    split = _split_divisible(to_poly(a), to_poly(b)) if prove_positive(b) else None
    if split is None:
        return FloorDiv(a, b)
    q, r = split
    rest = from_poly(r)
    if not r:
        tail: Arith = Cst(0)
    elif prove_nonneg(rest) and prove_nonneg(add(add(b, -1), mul(-1, rest))):
        tail = Cst(0)  # 0 <= r < b
    elif prove_nonneg(add(rest, b)) and prove_nonneg(add(-1, mul(-1, rest))):
        tail = Cst(-1)  # -b <= r < 0
    else:
        tail = FloorDiv(rest, b)
    return add(from_poly(q), tail)


def mod(a: ArithLike, b: ArithLike) -> Arith:
    from lift.arith.ranges import prove_nonneg, prove_positive

    a, b = as_arith(a), as_arith(b)
    if isinstance(b, Cst) and b.value == 0:
        raise ZeroDivisionError(f"symbolic modulo of {a} by zero")
    if isinstance(a, Cst) and isinstance(b, Cst):
        return Cst(a.value % b.value)
    if b in (Cst(1), Cst(-1)):
        return Cst(0)
    if a == b:
        return Cst(0)
    g = _common_factor(a, b)
    if g > 1:
        return mul(g, mod(_div_exact(a, g), _div_exact(b, g)))
    split = _split_divisible(to_poly(a), to_poly(b)) if prove_positive(b) else None
    if split is None:
        return Mod(a, b)
    _, r = split
    rest = from_poly(r)
    if not r:
        return Cst(0)
    if prove_nonneg(rest) and prove_nonneg(add(add(b, -1), mul(-1, rest))):
        return rest
    if isinstance(rest, Mod) and rest.b == b:
        return rest
    return Mod(rest, b)


def min_(a: ArithLike, b: ArithLike) -> Arith:
    from lift.arith.ranges import prove_nonneg

    a, b = as_arith(a), as_arith(b)
    if isinstance(a, Cst) and isinstance(b, Cst):
        return Cst(min(a.value, b.value))
    diff = add(b, mul(-1, a))
    if prove_nonneg(diff):
        return a
    if prove_nonneg(mul(-1, diff)):
        return b
    return Min(*sorted((a, b), key=_key))


def max_(a: ArithLike, b: ArithLike) -> Arith:
    from lift.arith.ranges import prove_nonneg

    a, b = as_arith(a), as_arith(b)
    if isinstance(a, Cst) and isinstance(b, Cst):
        return Cst(max(a.value, b.value))
    diff = add(b, mul(-1, a))
    if prove_nonneg(diff):
        return b
    if prove_nonneg(mul(-1, diff)):
        return a
    return Max(*sorted((a, b), key=_key))


# ------------------------------------------------------------------- printing

_PREC = {Sum: 1, Prod: 2, FloorDiv: 2, Mod: 2}


def _show(e: Arith, ctx: int) -> str:
    match e:
        case Cst(v):
            s = str(v)
            return f"({s})" if v < 0 and ctx > 0 else s
        case Var(name):
            return name
        case Sum(terms):
            s = _show(terms[0], 0)
            for t in terms[1:]:
                neg = _negated(t)
                s += f" - {_show(neg, 2)}" if neg is not None else f" + {_show(t, 1)}"
            return f"({s})" if ctx > 1 else s
        case Prod(fs):
            if isinstance(fs[0], Cst) and fs[0].value == -1:
                s = "-" + "*".join(_show(f, 3) for f in fs[1:])
                return f"({s})" if ctx > 0 else s
            s = "*".join(_show(f, 3) for f in fs)
            return f"({s})" if ctx > 2 else s
        case FloorDiv(a, b):
            s = f"{_show(a, 2)} // {_show(b, 3)}"
            return f"({s})" if ctx > 1 else s
        case Mod(a, b):
            s = f"{_show(a, 2)} % {_show(b, 3)}"
            return f"({s})" if ctx > 1 else s
        case Min(a, b):
            return f"min({_show(a, 0)}, {_show(b, 0)})"
        case Max(a, b):
            return f"max({_show(a, 0)}, {_show(b, 0)})"
    raise TypeError(f"not an arithmetic expression: {e!r}")


def _negated(t: Arith) -> Arith | None:
    if isinstance(t, Cst) and t.value < 0:
        return Cst(-t.value)
    if isinstance(t, Prod) and isinstance(t.factors[0], Cst) and t.factors[0].value < 0:
        c = -t.factors[0].value
        rest = t.factors[1:]
        if c == 1:
            return rest[0] if len(rest) == 1 else Prod(rest)
        return Prod((Cst(c),) + rest)
    return None
