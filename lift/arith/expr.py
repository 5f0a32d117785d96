"""Symbolic integer arithmetic for array sizes and indices, kept in canonical form.

Every expression is built by the smart constructors (`add`, `mul`, `floordiv`, `mod`,
`min_`, `max_`) or the operators, which normalise it: sums and products become a
polynomial over *atoms* (variables, floor divisions, modulos, minima and maxima), with
like terms merged and a fixed order, so equivalent polynomial forms are equal values.
Division and modulo are simplified with range information (`lift.arith.ranged`):
`(4*i + j) // 4 == i` and `(4*i + j) % 4 == j` when `0 <= j < 4`.

Division is *floor* division and `%` the matching modulo (Python semantics); the C
printer emits code with the same meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, Union, cast

from lift.errors import LiftTypeError

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
        return show(self)

    def __repr__(self) -> str:
        return f"Arith({show(self)})"

    def __bool__(self) -> bool:
        raise TypeError("the truth of a symbolic size is unknown; use lift.arith.prove_* instead")


def _hashed(cls: Any) -> Any:
    """Cache the structural hash once per node; `==` gets an `is` fast path, and a
    constant equals the int of the same value (`Cst(3) == 3`, with the same hash)."""
    fields_eq = cls.__eq__

    def _hash(self: Any) -> int:
        h: int | None = self._h
        if h is None:
            if cls is Cst:
                h = hash(self.value)
            else:
                h = hash((cls.__name__,) + tuple(getattr(self, f) for f in cls._hfields))
            object.__setattr__(self, "_h", h)
        return h

    def _eq(self: Any, o: object) -> bool:
        if self is o:
            return True
        if isinstance(o, Integral) and not isinstance(o, bool):
            return cls is Cst and self.value == o
        return cast(bool, fields_eq(self, o))  # NotImplemented for another class

    cls.__hash__ = _hash
    cls.__eq__ = _eq
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


@dataclass(frozen=True, slots=True, eq=True, repr=False)
class _Binary(Arith):
    """The fields of an operation on two operands (`FloorDiv`, `Mod`, `Min`, `Max`)."""

    a: Arith
    b: Arith
    _h: int | None = field(default=None, init=False, compare=False, repr=False)
    _hfields = ("a", "b")


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class FloorDiv(_Binary):
    """`a // b`, floor division."""


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class ExactDiv(FloorDiv):
    """`a / b` where `b` divides `a` (an array length split into `b` chunks).

    A floor division that also folds: `b * (a / b) == a`. The divisibility is a size
    condition recorded by the type checker, not a fact this node proves."""


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class Mod(_Binary):
    """`a % b`, with the sign of `b` (floor modulo)."""


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class Min(_Binary):
    """`min(a, b)`."""


@_hashed
@dataclass(frozen=True, slots=True, eq=True, repr=False)
class Max(_Binary):
    """`max(a, b)`."""


ATOMS = (Var, FloorDiv, ExactDiv, Mod, Min, Max)


def as_arith(x: ArithLike) -> Arith:
    """An `Arith` from an int (or numpy integer), or the expression itself."""
    if isinstance(x, Arith):
        return x

    if isinstance(x, bool):
        raise LiftTypeError("a size cannot be a bool", got=x)
    try:
        return Cst(int(x.__index__()))
    except AttributeError:
        raise LiftTypeError(f"expected an integer or a symbolic size, got {x!r}", got=x) from None


def size(name: str) -> Var:
    """A symbolic array size: a positive integer variable."""
    return Var(name, Cst(1), None)


# ------------------------------------------------------------------- printing

def show(e: Arith, *, full: bool = False) -> str:
    """Python-like text for `e`; with `full`, variables also show their ranges."""
    return _show(e, 0, full)


def _show(e: Arith, ctx: int, full: bool) -> str:
    match e:
        case Cst(v):
            return f"({v})" if v < 0 and ctx > 0 else str(v)
        case Var(name, lo, hi):
            if not full:
                return name
            los = "" if lo is None else _show(lo, 0, True)
            his = "" if hi is None else _show(hi, 0, True)
            return f"{name}[{los}..{his}]"
        case Sum(terms):
            s = _show(terms[0], 0, full)
            for t in terms[1:]:
                neg = negated(t)
                s += f" - {_show(neg, 2, full)}" if neg is not None else f" + {_show(t, 1, full)}"
            return f"({s})" if ctx > 1 else s
        case Prod(fs):
            if isinstance(fs[0], Cst) and fs[0].value == -1:
                s = "-" + "*".join(_show(f, 3, full) for f in fs[1:])
                return f"({s})" if ctx > 0 else s
            s = "*".join(_show(f, 3, full) for f in fs)
            return f"({s})" if ctx > 2 else s
        case FloorDiv(a, b) | Mod(a, b):
            op = "/" if isinstance(e, ExactDiv) else "//" if isinstance(e, FloorDiv) else "%"
            s = f"{_show(a, 2, full)} {op} {_show(b, 3, full)}"
            return f"({s})" if ctx > 1 else s
        case Min(a, b) | Max(a, b):
            fn = "min" if isinstance(e, Min) else "max"
            return f"{fn}({_show(a, 0, full)}, {_show(b, 0, full)})"
    raise TypeError(f"not an arithmetic expression: {e!r}")


def negated(t: Arith) -> Arith | None:
    """`-t` when `t` is a term with a negative coefficient (for printing `a - t`), else None."""
    if isinstance(t, Cst) and t.value < 0:
        return Cst(-t.value)
    if isinstance(t, Prod) and isinstance(t.factors[0], Cst) and t.factors[0].value < 0:
        c = -t.factors[0].value
        rest = t.factors[1:]
        if c == 1:
            return rest[0] if len(rest) == 1 else Prod(rest)
        return Prod((Cst(c),) + rest)
    return None


# The constructors live in their own modules and import the classes above; importing
# them last lets the operator methods (and `lift.arith.expr.add` etc.) find them.
from lift.arith.algebra import add, mul  # noqa: E402
from lift.arith.ranged import exact_div, floordiv, max_, min_, mod  # noqa: E402

__all__ = [
    "Arith", "ArithLike", "Cst", "Var", "Sum", "Prod", "FloorDiv", "ExactDiv", "Mod", "Min", "Max", "ATOMS",
    "as_arith", "size", "show", "negated", "add", "mul", "floordiv", "exact_div", "mod", "min_", "max_",
]
