"""Interpreter values: arguments in and results out, and the helpers every evaluator shares.

Values: a scalar is a numpy scalar (or a 0-d array); a vector is a 1-D array of its lanes; an
array of scalars, vectors or arrays is one ndarray (vectors as a trailing axis); an array whose
elements contain tuples is a `Zipped` structure of arrays (one per tuple component); a tuple is a
Python tuple. The batched evaluator (lift.interpret.batch) puts `d` batch axes in front of every
array of a value; the layout helpers here take the axis (`ax`) their array dimension starts at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lift.arith import Arith, Var, evaluate, free_vars
from lift.errors import LiftTypeError, LiftValueError
from lift.ir.nodes import Node
from lift.typecheck import SizeCondition, size_conditions
from lift.types import ArrayType, ScalarType, TupleType, Type, VectorType, base_type


@dataclass(frozen=True)
class Zipped:
    """An array of tuples as one array value per component; `ndim` array dims are shared."""

    parts: tuple[Any, ...]
    ndim: int


# ------------------------------------------------------------------ arguments


def arguments(types: list[Type], args: tuple, where: Node | None,
              names: list[str] | None = None) -> tuple[dict[str, int], list[Any]]:
    """`(sizes, values)`: the arguments of a program taking `types`, checked as both the interpreter
    and a compiled `Program` check them (arity, lengths binding the sizes, dtypes, then every
    array's or scalar's exact shape: `np.array([2.0])` is no `Float`; no empty arrays); errors
    name argument `k` (`names[k]` when given)."""
    if len(args) != len(types):
        raise LiftTypeError(f"the program takes {len(types)} argument(s), got {len(args)}",
                            node=where, expected=len(types), got=len(args))
    sizes = bind_sizes(types, args, where, names)
    whats = names or [f"argument {k}" for k in range(len(types))]
    return sizes, [_checked(a, t, what, where, sizes) for a, t, what in zip(args, types, whats)]


def _checked(a: Any, t: Type, what: str, where: Node | None, sizes: dict[str, int]) -> Any:
    """`to_value(a, t)` with the shape of every scalar, vector and array leaf checked."""
    if isinstance(t, TupleType):
        return tuple(_checked(x, et, f"{what}[{k}]", where, sizes) for k, (x, et) in enumerate(zip(a, t.elems)))
    b = base_type(t)
    if isinstance(t, ArrayType) and isinstance(b, TupleType):
        parts = tuple(_checked(x, rewrap(t, ct), f"{what}[{k}]", where, sizes)
                      for k, (x, ct) in enumerate(zip(a, b.elems)))
        return Zipped(parts, len(dims_of(t)))
    value = to_value(a, t, what, where)
    want = leaf_shape(t, sizes)
    if np.shape(value) != want:
        raise LiftTypeError(f"{what} has shape {np.shape(value)}, the program expects {t} = shape {want}",
                            node=where, expected=want, got=np.shape(value))
    return value


def leaf_shape(t: Type, sizes: dict[str, int]) -> tuple[int, ...]:
    """The numpy shape of a value of type `t` (no tuples): array dims, then vector lanes."""
    dims = tuple(evaluate(d, sizes) for d in dims_of(t))
    b = base_type(t)
    return dims + (b.n,) if isinstance(b, VectorType) else dims


def leaves(value: Any) -> list[np.ndarray]:
    """The scalar, vector and array leaves of an argument value, in order (tuple components first
    to last, the components of an array of tuples likewise)."""
    if isinstance(value, tuple):
        return [x for v in value for x in leaves(v)]
    if isinstance(value, Zipped):
        return [x for v in value.parts for x in leaves(v)]
    return [np.asarray(value)]


def bind_sizes(types: list[Type], args: tuple, where: Node | None, names: list[str] | None = None) -> dict[str, int]:
    """Size variables from argument shapes; equations with one unknown are solved."""
    eqs: list[tuple[Arith, int, str]] = []
    for k, (t, a) in enumerate(zip(types, args)):
        _collect(t, a, names[k] if names else f"argument {k}", eqs, where)
    sizes: dict[str, int] = {}
    progress = True
    while progress:
        progress = False
        for e, v, what in eqs:
            unknown = [x for x in free_vars(e) if x.name not in sizes]
            if not unknown:
                if evaluate(e, sizes) != v:
                    raise LiftTypeError(f"{what} has length {v}, the program expects {e} = "
                                        f"{evaluate(e, sizes)}", node=where, expected=e, got=v)
            elif len(unknown) == 1:
                sizes[unknown[0].name] = _solve(e, unknown[0], v, sizes, what, where)
                progress = True
    for e, _, what in eqs:
        missing = [x.name for x in free_vars(e) if x.name not in sizes]
        if missing:
            raise LiftTypeError(f"cannot determine {', '.join(missing)} from the length of {what}",
                                node=where)
    return sizes


def _solve(e: Arith, x: Var, v: int, sizes: dict, what: str, where: Node | None) -> int:
    env0, env1 = dict(sizes, **{x.name: 0}), dict(sizes, **{x.name: 1})
    b = evaluate(e, env0)
    a = evaluate(e, env1) - b
    if a != 0 and (v - b) % a == 0 and evaluate(e, dict(sizes, **{x.name: (v - b) // a})) == v:
        r = (v - b) // a
        if r >= 1:
            return r
    for r in range(1, v + 2):  # non-linear in x (e.g. x // 2): search small values
        if evaluate(e, dict(sizes, **{x.name: r})) == v:
            return r
    raise LiftTypeError(f"{what} has length {v}, which no value of {x.name} makes equal to {e}",
                        node=where, expected=e, got=v)


def _collect(t: Type, a: Any, what: str, eqs: list, where: Node | None) -> None:
    if isinstance(t, TupleType):
        if not isinstance(a, tuple) or len(a) != len(t.elems):
            raise LiftTypeError(f"{what} must be a tuple of {len(t.elems)} values for {t}", node=where,
                                expected=t, got=type(a).__name__)
        for k, (et, ea) in enumerate(zip(t.elems, a)):
            _collect(et, ea, f"{what}[{k}]", eqs, where)
        return
    dims = dims_of(t)
    if not dims:
        return
    b = base_type(t)
    if isinstance(b, TupleType):
        comps = b.elems
        if not isinstance(a, tuple) or len(a) != len(comps):
            raise LiftTypeError(f"{what} must be a tuple of {len(comps)} arrays for {t}", node=where)
        for k, (ct, ca) in enumerate(zip(comps, a)):
            _collect(rewrap(t, ct), ca, f"{what}[{k}]", eqs, where)
        return
    arr = np.asarray(a)
    extra = 1 if isinstance(base_type(t), VectorType) else 0
    if arr.ndim != len(dims) + extra:
        raise LiftTypeError(f"{what} has {arr.ndim} dimension(s), the program expects {t}", node=where,
                            expected=t, got=arr.shape)
    for d, size in zip(dims, arr.shape):
        if size == 0 and free_vars(d):
            raise LiftValueError(f"{what} is empty (shape {arr.shape}): empty arrays are not supported, "
                                 f"every size ({d}) is at least 1", node=where, expected=t, got=arr.shape,
                                 hint="test for an empty input before the call (numpy's answer: the "
                                      "reduction's initial value, or an empty array for a map)")
        eqs.append((d, size, what))


def dims_of(t: Type) -> list[Arith]:
    out = []
    while isinstance(t, ArrayType):
        out.append(t.size)
        t = t.elem
    return out


def rewrap(t: Type, inner: Type) -> Type:
    if isinstance(t, ArrayType):
        return ArrayType(rewrap(t.elem, inner), t.size)
    return inner


def to_value(a: Any, t: Type, what: str, where: Node | None = None) -> Any:
    """A numpy argument as an interpreter value of type `t` (dtypes must match)."""
    if isinstance(t, TupleType):
        return tuple(to_value(x, et, f"{what}[{k}]", where) for k, (x, et) in enumerate(zip(a, t.elems)))
    b = base_type(t)
    if isinstance(t, ArrayType) and isinstance(b, TupleType):
        parts = tuple(to_value(x, rewrap(t, ct), f"{what}[{k}]", where)
                      for k, (x, ct) in enumerate(zip(a, b.elems)))
        return Zipped(parts, len(dims_of(t)))
    scal = b.scalar if isinstance(b, VectorType) else b
    assert isinstance(scal, ScalarType)
    arr = np.asarray(a)
    if arr.dtype != scal.dtype:
        if isinstance(t, ScalarType) and np.ndim(a) == 0 and not hasattr(a, "dtype"):
            return scal.dtype.type(a)  # a Python number for a scalar parameter
        raise LiftTypeError(f"{what} has dtype {arr.dtype}, the program expects {t} ({scal.dtype})",
                            node=where, expected=scal.dtype, got=arr.dtype,
                            hint=f"convert it with .astype(np.{scal.dtype})")
    return arr[()] if arr.ndim == 0 else arr


def to_numpy(v: Any, args: tuple = ()) -> Any:
    """An interpreter value as numpy: arrays of tuples become tuples of arrays, 0-d arrays numpy
    scalars; never a view of (or the same object as) one of the caller's `args`."""
    if isinstance(v, Zipped):
        return tuple(to_numpy(p, args) for p in v.parts)
    if isinstance(v, tuple):
        return tuple(to_numpy(x, args) for x in v)
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return v[()]
        if any(np.may_share_memory(v, a) for a in _arrays(args)):
            return np.array(v, order="C", copy=True)
        return np.ascontiguousarray(v)
    return v


def _arrays(args: Any) -> list[np.ndarray]:
    if isinstance(args, (tuple, list)):
        return [a for x in args for a in _arrays(x)]
    return [args] if isinstance(args, np.ndarray) else []


def check_conditions(program: Node, sizes: dict[str, int], conditions: Sequence[SizeCondition] | None = None) -> None:
    """The size conditions of `program` (or the given `conditions`) hold for `sizes`, else a
    `LiftValueError` naming the condition's node."""
    for c in size_conditions(program) if conditions is None else conditions:
        try:
            ok = c.holds(sizes)
        except KeyError:
            continue  # a size introduced inside the program (iterate) is checked when bound
        except ZeroDivisionError:
            ok = False
        if not ok:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(sizes.items()) if not k.startswith("_"))
            raise LiftValueError(f"{c.reason}, which fails for {shown}", node=c.node)



WIDE = {np.dtype(np.float32): np.dtype(np.float64)}  # `interpret(..., precise=True)`


def dt(s: ScalarType, wide: dict[np.dtype, np.dtype]) -> np.dtype:
    return wide.get(s.dtype, s.dtype)


def widen(v: Any) -> Any:
    """An argument value with its float32 parts in float64."""
    if isinstance(v, Zipped):
        return Zipped(tuple(widen(p) for p in v.parts), v.ndim)
    if isinstance(v, tuple):
        return tuple(widen(x) for x in v)
    a = np.asarray(v)
    if a.dtype != np.float32:
        return v
    return a.astype(np.float64) if a.ndim else np.float64(v)


def cast(v: Any, t: Type, wide: dict[np.dtype, np.dtype] | None = None) -> Any:
    """A user-function result as a value of type `t`."""
    wide = wide or {}
    if isinstance(t, ScalarType):
        return dt(t, wide).type(v)
    if isinstance(t, VectorType):
        return np.asarray(v, dtype=dt(t.scalar, wide))
    if isinstance(t, TupleType):
        return tuple(cast(x, et, wide) for x, et in zip(v, t.elems))
    return v


# ----------------------------------------------------------- value helpers


def length(v: Any) -> int:
    """The outer length of an array value."""
    return length(v.parts[0]) if isinstance(v, Zipped) else int(v.shape[0])


def index0(v: Any, i: int) -> Any:
    """Element `i` of an array value."""
    if isinstance(v, Zipped):
        parts = tuple(index0(p, i) for p in v.parts)
        return parts if v.ndim == 1 else Zipped(parts, v.ndim - 1)
    return v[i]


def axis_op(v: Any, fn: Any, dims: int) -> Any:
    """Apply a layout function of the outer axes to every component of `v`."""
    if isinstance(v, Zipped):
        return Zipped(tuple(axis_op(p, fn, dims) for p in v.parts), v.ndim + dims)
    return fn(v)


def stack(items: list[Any]) -> Any:
    """An array value from its (non-empty list of) elements."""
    first = items[0]
    if isinstance(first, tuple):
        return Zipped(tuple(stack([it[k] for it in items]) for k in range(len(first))), 1)
    if isinstance(first, Zipped):
        parts = tuple(stack([it.parts[k] for it in items]) for k in range(len(first.parts)))
        return Zipped(parts, first.ndim + 1)
    return np.stack([np.asarray(it) for it in items])


def slide_axis(a: np.ndarray, size: int, step: int, ax: int = 0) -> np.ndarray:
    """Windows of `size` every `step` along axis `ax`; the window is the axis after it (a view)."""
    w = np.lib.stride_tricks.sliding_window_view(a, size, axis=ax)
    w = np.moveaxis(w, -1, ax + 1)
    return w[(slice(None),) * ax + (slice(None, None, step),)]


_NUMPY_MODES: dict[str, Any] = {"clamp": "edge", "mirror": "symmetric", "wrap": "wrap"}


def pad_axis(a: np.ndarray, left: int, right: int, value: Any, ax: int = 0, mode: str = "constant") -> np.ndarray:
    """`left` and `right` copies of `value` around axis `ax` (negative amounts truncate), or
    elements of `a` at a boundary `mode` (numpy.pad's edge, symmetric or wrap)."""
    if mode != "constant":
        widths = [(0, 0)] * a.ndim
        widths[ax] = (left, right)
        return np.pad(a, widths, mode=_NUMPY_MODES[mode])
    lo, hi = max(-left, 0), a.shape[ax] - max(-right, 0)
    a = a[(slice(None),) * ax + (slice(lo, hi),)]
    widths = [(0, 0)] * a.ndim
    widths[ax] = (max(left, 0), max(right, 0))
    return np.pad(a, widths, mode="constant", constant_values=np.asarray(value, dtype=a.dtype))
