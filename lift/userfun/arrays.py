"""Array parameters of user functions: a window such as `[[Float]3]3` (from `slide_nd`) of constant
sizes is passed to the C function element by element and rebuilt there as a private C array, so the
IR only ever calls user functions on scalars:

    @user_fun
    def box(w: Array(Array(Float, 3), 3)) -> Float:
        s = 0.0
        for i in range(len(w)):
            for j in range(3):
                s += w[i][j]
        return s

is the C function `float box(float w_0_0, ..., float w_2_2)` that starts with
`float w[3][3] = {{w_0_0, w_0_1, w_0_2}, ...};`, and `box` applied to a window `x` is the IR
`(w => box(w[0][0], ..., w[2][2]))(x)`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from lift.arith import Cst
from lift.errors import UserFunError
from lift.types import ArrayType, ScalarType, Type

MAX_ELEMENTS = 1024  # elements of one array parameter (they become C function parameters)


def array_shape(t: ArrayType, *, loc: Any = None) -> tuple[tuple[int, ...], ScalarType]:
    """The constant dimensions of a nested array of scalars, and its scalar type."""
    dims: list[int] = []
    u: Type = t
    while isinstance(u, ArrayType):
        if not isinstance(u.size, Cst):
            raise UserFunError(f"user functions take arrays of constant size, not {t}", loc=loc,
                               hint="a window from slide_nd(2, 3, 1) has constant sizes")
        dims.append(int(u.size))
        u = u.elem
    if not isinstance(u, ScalarType):
        raise UserFunError(f"user functions take arrays of scalars, not {t}", loc=loc)
    n = 1
    for d in dims:
        n *= d
    if n > MAX_ELEMENTS:
        raise UserFunError(f"an array parameter of {n} elements is too large for a user function "
                           f"(at most {MAX_ELEMENTS})", loc=loc)
    return tuple(dims), u


def indices(dims: Sequence[int]) -> list[tuple[int, ...]]:
    """Every index of an array of these dimensions, in row-major order."""
    return list(itertools.product(*(range(d) for d in dims)))


def flat_name(base: str, idx: tuple[int, ...]) -> str:
    """The name of one element's parameter: `w_1_2`."""
    return base + "".join(f"_{i}" for i in idx)


def nested(dims: Sequence[int], leaf: Callable[[tuple[int, ...]], str], open_: str, close: str,
           prefix: tuple[int, ...] = ()) -> str:
    """The elements as nested brackets (C braces or Python lists)."""
    if len(prefix) == len(dims):
        return leaf(prefix)
    parts = [nested(dims, leaf, open_, close, (*prefix, i)) for i in range(dims[len(prefix)])]
    return open_ + ", ".join(parts) + close


def flat_types(in_types: Sequence[Type]) -> tuple[Type, ...]:
    """The parameter types with each array replaced by its elements."""
    out: list[Type] = []
    for t in in_types:
        if isinstance(t, ArrayType):
            dims, s = array_shape(t)
            out += [s] * len(indices(dims))
        else:
            out.append(t)
    return tuple(out)


def nest_args(args: Sequence[Any], in_types: Sequence[Type]) -> list[Any]:
    """Flat arguments (one per element) regrouped into nested lists, one per array parameter."""
    it = iter(args)
    out: list[Any] = []
    for t in in_types:
        if isinstance(t, ArrayType):
            dims, _ = array_shape(t)
            flat = [next(it) for _ in indices(dims)]
            out.append(_regroup(flat, dims))
        else:
            out.append(next(it))
    return out


def _regroup(flat: list[Any], dims: Sequence[int]) -> list[Any]:
    if len(dims) == 1:
        return flat
    step = len(flat) // dims[0]
    return [_regroup(flat[i * step:(i + 1) * step], dims[1:]) for i in range(dims[0])]


def elements(x: Any, t: ArrayType) -> list[Any]:
    """The IR reads `x[i][j]` of every element of the array expression `x`, in row-major order."""
    dims, _ = array_shape(t)
    out = []
    for idx in indices(dims):
        e = x
        for i in idx:
            e = e[i]
        out.append(e)
    return out


def scalar_twin(fn: Callable[..., Any], in_types: Sequence[Type]) -> Callable[..., Any]:
    """`fn` called with flat arguments: each array parameter's elements regrouped into lists."""
    def twin(*args: Any) -> Any:
        return fn(*nest_args(args, in_types))

    twin.__liftcl_fn__ = fn  # type: ignore[attr-defined]
    return twin
