"""LIFT types (thesis 2.3.1.1): scalars, vectors, tuples and arrays with symbolic sizes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from lift.arith import Arith, ArithLike, Cst, as_arith, free_vars, prove_eq, size
from lift.arith.cnames import size_name_problem
from lift.errors import LiftTypeError, LiftValueError


class Type:
    """Base of LIFT types."""

    __slots__ = ()

    def __str__(self) -> str:
        return show_type(self)

    def __repr__(self) -> str:
        return show_type(self)


@dataclass(frozen=True, slots=True, repr=False)
class ScalarType(Type):
    """A scalar: `Float`, `Double`, `Int` or `Bool`."""

    name: str
    c_name: str = field(compare=False)
    dtype: np.dtype = field(compare=False)


@dataclass(frozen=True, slots=True, repr=False)
class VectorType(Type):
    """`<T>n`: an OpenCL vector of `n` scalars (n in 2, 3, 4, 8, 16)."""

    scalar: ScalarType
    n: int

    @property
    def c_name(self) -> str:
        return f"{self.scalar.c_name}{self.n}"


@dataclass(frozen=True, slots=True, repr=False)
class TupleType(Type):
    """`(T1, ..., Tk)`; in OpenCL C a struct."""

    elems: tuple[Type, ...]


@dataclass(frozen=True, slots=True, repr=False)
class ArrayType(Type):
    """`[T]n`: an array of `size` elements of type `elem`; `size` is symbolic."""

    elem: Type
    size: Arith


@dataclass(frozen=True, slots=True, repr=False)
class FunType(Type):
    """`(T1, ..., Tk) => U`: the type of a program (a lambda)."""

    ins: tuple[Type, ...]
    out: Type


Float = ScalarType("Float", "float", np.dtype(np.float32))
Double = ScalarType("Double", "double", np.dtype(np.float64))
Int = ScalarType("Int", "int", np.dtype(np.int32))
Bool = ScalarType("Bool", "bool", np.dtype(np.bool_))

SCALARS = (Float, Double, Int, Bool)
VECTOR_WIDTHS = (2, 3, 4, 8, 16)


def Array(elem: Type, n: ArithLike) -> ArrayType:  # noqa: N802 - public constructor
    """`[elem]n`; `n` is an int or a symbolic size such as `Size("N") // 4`."""
    if not isinstance(elem, Type):
        raise LiftTypeError(f"Array element must be a LIFT type, got {elem!r}", got=elem)
    return ArrayType(elem, as_arith(n))


def Tuple(*elems: Type) -> TupleType:  # noqa: N802 - public constructor
    """`(T1, ..., Tk)`."""
    for e in elems:
        if not isinstance(e, Type):
            raise LiftTypeError(f"Tuple element must be a LIFT type, got {e!r}", got=e)
    return TupleType(tuple(elems))


def Vector(scalar: ScalarType, n: int) -> VectorType:  # noqa: N802 - public constructor
    """`<scalar>n`, an OpenCL vector type."""
    if not isinstance(scalar, ScalarType):
        raise LiftTypeError(f"Vector element must be a scalar type, got {scalar!r}", got=scalar)
    if n not in VECTOR_WIDTHS:
        raise LiftValueError(f"OpenCL vectors have 2, 3, 4, 8 or 16 elements, not {n}", got=n)
    return VectorType(scalar, n)


def Size(name: str) -> Arith:  # noqa: N802 - public constructor
    """A symbolic array size (a positive integer), e.g. `N = Size("N")`. The name becomes a kernel
    parameter in OpenCL C, so it is an ASCII C identifier that no C or OpenCL C keyword, type or
    built-in has (LiftValueError otherwise: `Size("N+1")`, `Size("int")`, `Size("get_global_id")`)."""
    why = size_name_problem(name)
    if why is not None:
        raise LiftValueError(f"the size name {name!r} {why}", got=name,
                             hint="name sizes like C variables: N, M, rows, n_2")
    return size(name)


def show_type(t: Type) -> str:
    match t:
        case ScalarType(name):
            return name
        case VectorType(s, n):
            return f"<{s.name}>{n}"
        case TupleType(elems):
            return "(" + ", ".join(show_type(e) for e in elems) + ")"
        case FunType(ins, out):
            return "(" + ", ".join(show_type(e) for e in ins) + ") => " + show_type(out)
        case ArrayType(elem, n):
            n_s = str(n)
            return f"[{show_type(elem)}]{n_s if isinstance(n, Cst) or n_s.isidentifier() else '(' + n_s + ')'}"
    return object.__repr__(t)


def types_equal(a: Type, b: Type) -> bool:
    """Structural equality with sizes compared up to provable arithmetic equality."""
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return prove_eq(a.size, b.size) and types_equal(a.elem, b.elem)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.elems) == len(b.elems) and all(map(types_equal, a.elems, b.elems))
    return a == b


def base_type(t: Type) -> Type:
    """The innermost non-array type of `t`."""
    while isinstance(t, ArrayType):
        t = t.elem
    return t


def rewrap(t: Type, inner: Type) -> Type:
    """`t` with its base type replaced by `inner`."""
    return ArrayType(rewrap(t.elem, inner), t.size) if isinstance(t, ArrayType) else inner


def holds_array(t: Type) -> bool:
    """Whether `t` is an array or a tuple with an array inside (such tuples never become C structs)."""
    return isinstance(t, ArrayType) or (isinstance(t, TupleType) and any(holds_array(e) for e in t.elems))


def split_memory(t: Type, space: str) -> bool:
    """Whether a memory of type `t` in the address `space` is kept as one memory per component of its
    tuple base type (struct of arrays): arrays of tuples, tuples outside private memory, tuples
    holding arrays (`lift.layout.memory_view`)."""
    b = base_type(t)
    return isinstance(b, TupleType) and (isinstance(t, ArrayType) or space != "private" or holds_array(b))


def memory_names(name: str, t: Type, space: str) -> list[str]:
    """The C names of the memories a memory `name` of type `t` in `space` is kept as: `name`, or one
    per component, `name_0`, `name_1`, ... (recursively; `lift.layout.memory_view` makes them). A fresh
    name for anything else must avoid them all."""
    b = base_type(t)
    if not (split_memory(t, space) and isinstance(b, TupleType)):
        return [name]
    return [m for k, c in enumerate(b.elems) for m in memory_names(f"{name}_{k}", rewrap(t, c), space)]


def shape(t: Type) -> tuple[Arith, ...]:
    """The sizes of the array dimensions of `t`, outermost first."""
    out = []
    while isinstance(t, ArrayType):
        out.append(t.size)
        t = t.elem
    return tuple(out)


def size_names(types: Iterable[Type]) -> list[str]:
    """The names of the symbolic sizes in `types` (array lengths, nested and in tuples), each once,
    in order of first appearance (sorted within one size): `[[Float]M]N` -> `["N", "M"]`."""
    out: list[str] = []

    def visit(t: Type) -> None:
        if isinstance(t, ArrayType):
            out.extend(n for n in sorted(v.name for v in free_vars(t.size)) if n not in out)
            visit(t.elem)
        elif isinstance(t, TupleType):
            for e in t.elems:
                visit(e)

    for t in types:
        visit(t)
    return out


def scalar_count(t: Type) -> Arith:
    """The number of scalars in a value of type `t` (vectors: their lanes; tuples: every component)."""
    b = base_type(t)
    out: Arith = Cst(1)
    for d in shape(t):
        out = out * d
    if isinstance(b, VectorType):
        return out * b.n
    if isinstance(b, TupleType):
        return out * sum((scalar_count(e) for e in b.elems), Cst(0))
    return out


def scalar_bytes(t: Type) -> int:
    """The size in bytes of one scalar of `t`'s base type (4 where it has none)."""
    s = scalar_of(base_type(t))
    return s.dtype.itemsize if s is not None else 4


def scalar_of(t: Type) -> ScalarType | None:
    """The scalar type of a scalar or vector type; None otherwise."""
    if isinstance(t, ScalarType):
        return t
    if isinstance(t, VectorType):
        return t.scalar
    return None


def from_dtype(dtype: np.dtype) -> ScalarType:
    """The scalar type of a numpy dtype."""
    for s in SCALARS:
        if s.dtype == np.dtype(dtype):
            return s
    raise TypeError(f"no LIFT scalar type for numpy dtype {np.dtype(dtype)}")
