"""What the user-function translator produces: `Translation` (a C function) and `Val` (an expression),
with the typing rules and C precedences that values are combined by."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard, cast

from lift.types import Float, Int, ScalarType, TupleType, Type, VectorType

# C precedence levels (higher binds tighter).
TERNARY, OR, AND, EQ, REL, ADD, MUL, UNARY, POSTFIX, ATOM = 3, 4, 5, 9, 10, 12, 13, 14, 15, 16
RANK = {"Int": 1, "Float": 2, "Double": 3}


@dataclass(frozen=True)
class Translation:
    """A user function as OpenCL C: `c_source` defines `name`; `np_fn` is its numpy version (or None)."""

    name: str
    params: tuple[str, ...]
    in_types: tuple[Type, ...]
    out_type: Type
    c_source: str
    structs: tuple[TupleType, ...]
    np_fn: Callable[..., Any] | None = field(compare=False)
    deps: tuple[Any, ...] = ()                        # the UserFuns it calls, defined before it in C
    arrays: tuple[Type, ...] = ()         # array parameters, passed element by element


@dataclass(frozen=True)
class Val:
    """A translated expression: C text and precedence, numpy text, type; weak for Python literals."""

    c: str
    t: Type
    np: str
    prec: int = ATOM
    py: Any = None                                   # the value of a constant
    weak: Callable[[ScalarType], Val] | None = None  # the value at another scalar type (literals)
    elems: tuple[Val, ...] | None = None             # an unmaterialised tuple literal
    rng: tuple[int, int] | None = None               # a loop-uniform Int's bounds (loop variables)


def numeric(t: Type) -> TypeGuard[ScalarType]:
    """Whether `t` is Int, Float or Double."""
    return isinstance(t, ScalarType) and t.name in RANK


def join_types(a: Type, b: Type) -> Type | None:
    """The common type of two (strong) types: numeric promotion, scalar-to-vector widening."""
    if a == b:
        return a
    if numeric(a) and numeric(b):
        return a if RANK[a.name] >= RANK[b.name] else b
    if isinstance(a, VectorType) and isinstance(b, VectorType) and a.n == b.n:  # float8 * int8: float8
        s = join_types(a.scalar, b.scalar)
        return None if s is None else (a if s == a.scalar else b)
    for v, s in ((a, b), (b, a)):
        if isinstance(v, VectorType) and numeric(s) and RANK[s.name] <= RANK.get(v.scalar.name, 0):
            return v
    return None


def adopt(t: Type, kind: Type) -> Type | None:
    """The type a Python literal of `kind` (Int or Float) takes next to a value of type `t`."""
    s = t.scalar if isinstance(t, VectorType) else t
    if not numeric(s):
        return None
    if kind == Float and s == Int:
        return Float if isinstance(t, ScalarType) else None
    return t


def val_type(v: Val) -> Type:
    """The type of `v` (a tuple literal's from its elements, a literal's its own)."""
    if v.elems is not None:
        return TupleType(tuple(val_type(e) for e in v.elems))
    return v.t


def scalar(t: Type) -> ScalarType:
    """The element type of a vector; a scalar type itself."""
    return t.scalar if isinstance(t, VectorType) else cast(ScalarType, t)


def wrap(v: Val, prec: int) -> str:
    """The C text of `v`, parenthesised unless it binds at least as tightly as `prec`."""
    return v.c if v.prec >= prec else f"({v.c})"

