"""The reference interpreter: the semantics of every pattern, on numpy values.

Values: a scalar is a numpy scalar; a vector is a 1-D array of its lanes; an array of
scalars, vectors or arrays is one ndarray (vectors as a trailing axis); an array whose
elements contain tuples is a `Zipped` structure of arrays (one per tuple component);
a tuple is a Python tuple. Layout patterns (split, join, slide, transpose, ...) are
numpy views. The OpenCL patterns mean the same as their high-level forms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lift.arith import Arith, Var, evaluate, free_vars
from lift.errors import LiftTypeError, LiftValueError, UnsupportedError
from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Node
from lift.typecheck import size_conditions, typecheck, unify
from lift.types import ArrayType, ScalarType, TupleType, Type, VectorType, base_type


@dataclass(frozen=True)
class Zipped:
    """An array of tuples as one array value per component; `ndim` array dims are shared."""

    parts: tuple[Any, ...]
    ndim: int


def interpret(program: Node, *args: Any, precise: bool = False) -> Any:
    """Run `program` on numpy arguments; sizes are bound from the argument shapes.

    With `precise`, Float values are carried in float64 (arguments, literals, user-function
    results): a reference for judging float32 results computed in another order (a reduction
    split into chunks rounds differently from the sequential one)."""
    typecheck(program)
    if isinstance(program, Lambda):
        if len(args) != len(program.params):
            raise LiftTypeError(f"the program takes {len(program.params)} argument(s), got {len(args)}",
                                node=program)
        sizes = bind_sizes([p.ptype for p in program.params], args, program)
        vals = [to_value(a, p.ptype, f"argument {k}", program) for k, (a, p) in enumerate(zip(args, program.params))]
        if precise:
            vals = [_widen(v) for v in vals]
        env = {p.id: v for p, v in zip(program.params, vals)}
        body = program.body
    elif isinstance(program, Expr):
        if args:
            raise LiftTypeError("an expression takes no arguments; wrap it in lift.fun", node=program)
        sizes, env, body = {}, {}, program
    else:
        raise LiftTypeError(f"cannot interpret {program!r}", node=program)
    _check_conditions(program, sizes)
    return to_numpy(_Interp(sizes, WIDE if precise else {}).eval(body, env))


# ------------------------------------------------------------------ arguments


def bind_sizes(types: list[Type], args: tuple, where: Node) -> dict[str, int]:
    """Size variables from argument shapes; equations with one unknown are solved."""
    eqs: list[tuple[Arith, int, str]] = []
    for k, (t, a) in enumerate(zip(types, args)):
        _collect(t, a, f"argument {k}", eqs, where)
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


def _solve(e: Arith, x: Var, v: int, sizes: dict, what: str, where: Node) -> int:
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


def _collect(t: Type, a: Any, what: str, eqs: list, where: Node) -> None:
    if isinstance(t, TupleType):
        if not isinstance(a, tuple) or len(a) != len(t.elems):
            raise LiftTypeError(f"{what} must be a tuple of {len(t.elems)} values for {t}", node=where,
                                expected=t, got=type(a).__name__)
        for k, (et, ea) in enumerate(zip(t.elems, a)):
            _collect(et, ea, f"{what}[{k}]", eqs, where)
        return
    dims = _dims(t)
    if not dims:
        return
    if isinstance(base_type(t), TupleType):
        comps = base_type(t).elems  # type: ignore[union-attr]
        if not isinstance(a, tuple) or len(a) != len(comps):
            raise LiftTypeError(f"{what} must be a tuple of {len(comps)} arrays for {t}", node=where)
        for k, (ct, ca) in enumerate(zip(comps, a)):
            _collect(_rewrap(t, ct), ca, f"{what}[{k}]", eqs, where)
        return
    arr = np.asarray(a)
    extra = 1 if isinstance(base_type(t), VectorType) else 0
    if arr.ndim != len(dims) + extra:
        raise LiftTypeError(f"{what} has {arr.ndim} dimension(s), the program expects {t}", node=where,
                            expected=t, got=arr.shape)
    for d, size in zip(dims, arr.shape):
        eqs.append((d, size, what))


def _dims(t: Type) -> list[Arith]:
    out = []
    while isinstance(t, ArrayType):
        out.append(t.size)
        t = t.elem
    return out


def _rewrap(t: Type, inner: Type) -> Type:
    if isinstance(t, ArrayType):
        return ArrayType(_rewrap(t.elem, inner), t.size)
    return inner


def to_value(a: Any, t: Type, what: str, where: Node | None = None) -> Any:
    """A numpy argument as an interpreter value of type `t` (dtypes must match)."""
    if isinstance(t, TupleType):
        return tuple(to_value(x, et, f"{what}[{k}]", where) for k, (x, et) in enumerate(zip(a, t.elems)))
    b = base_type(t)
    if isinstance(t, ArrayType) and isinstance(b, TupleType):
        parts = tuple(to_value(x, _rewrap(t, ct), f"{what}[{k}]", where)
                      for k, (x, ct) in enumerate(zip(a, b.elems)))
        return Zipped(parts, len(_dims(t)))
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


def to_numpy(v: Any) -> Any:
    """An interpreter value as numpy: arrays of tuples become tuples of arrays."""
    if isinstance(v, Zipped):
        return tuple(to_numpy(p) for p in v.parts)
    if isinstance(v, tuple):
        return tuple(to_numpy(x) for x in v)
    if isinstance(v, np.ndarray):
        return np.ascontiguousarray(v)
    return v


def _check_conditions(program: Node, sizes: dict[str, int]) -> None:
    for c in size_conditions(program):
        try:
            ok = c.holds(sizes)
        except KeyError:
            continue  # a size introduced inside the program (iterate) is checked when bound
        except ZeroDivisionError:
            ok = False
        if not ok:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(sizes.items()) if not k.startswith("_"))
            raise LiftValueError(f"{c.reason}, which fails for {shown}", node=c.node)


# ---------------------------------------------------------------- evaluation


class _NotBatchable(Exception):
    pass


class _Interp:
    def __init__(self, sizes: dict[str, int], wide: dict[np.dtype, np.dtype]) -> None:
        self.sizes, self.wide = sizes, wide

    def size(self, e: Arith) -> int:
        return evaluate(e, self.sizes)

    def constant(self, v: Any, t: Type) -> Any:
        """A literal: a scalar, or `v` broadcast to a vector or array type (`value(0.0, [Float]4)`)."""
        if isinstance(t, ScalarType):
            return _dt(t, self.wide).type(v)
        b = base_type(t)
        lanes = (b.n,) if isinstance(b, VectorType) else ()
        scal = b.scalar if isinstance(b, VectorType) else b
        return np.full(tuple(self.size(d) for d in _dims(t)) + lanes, v, dtype=_dt(scal, self.wide))

    def eval(self, e: Expr, env: dict[int, Any]) -> Any:
        match e:
            case n.Param():
                try:
                    return env[e.id]
                except KeyError:
                    raise LiftTypeError(f"parameter {e.name} is used outside its lambda", node=e) from None
            case n.Literal(v, t):
                return self.constant(v, t)
            case FunCall(f, args):
                return self.call(f, [self.eval(a, env) for a in args], e, env)
        raise LiftTypeError(f"cannot evaluate {e!r}", node=e)

    def call(self, f: FunDecl, vals: list[Any], node: FunCall | None, env: dict[int, Any]) -> Any:
        """Apply `f` to values; `node` is the call in the program, for errors (or None)."""
        match f:
            case Lambda(params, body):
                return self.eval(body, {**env, **{p.id: v for p, v in zip(params, vals)}})
            case n.UserFun():
                return _call_userfun(f, vals, self.wide)
            case n.AbstractMap(f=g):
                return self.map(g, vals[0], node, env)
            case n.AbstractReduce(f=g):
                acc, xs = vals
                for i in range(length(xs)):
                    acc = self.call(g, [acc, index0(xs, i)], node, env)
                return acc
            case n.Zip():
                return Zipped(tuple(vals), 1)
            case n.MakeTuple():
                return tuple(vals)
            case n.Get(i):
                return vals[0][i]
            case n.At(i):
                k = self.size(i)
                x = vals[0]
                if not 0 <= k < length(x):
                    raise LiftValueError(f"index {k} out of range for length {length(x)}", node=node)
                return index0(x, k)
            case n.Split(m) | n.AsVector(m):
                m = self.size(m) if isinstance(m, Arith) else m
                return axis_op(vals[0], lambda a: a.reshape((a.shape[0] // m, m) + a.shape[1:]), +1)
            case n.Join() | n.AsScalar():
                return axis_op(vals[0], lambda a: a.reshape((a.shape[0] * a.shape[1],) + a.shape[2:]), -1)
            case n.Slide(size, step):
                sz, st = self.size(size), self.size(step)
                return axis_op(vals[0], lambda a: _slide(a, sz, st), +1)
            case n.Pad(left, right, value):
                lo, hi = self.size(left), self.size(right)
                return axis_op(vals[0], lambda a: _pad(a, lo, hi, value), 0)
            case n.Transpose() | n.TransposeW():
                return axis_op(vals[0], lambda a: np.swapaxes(a, 0, 1), 0)
            case n.Let(g) | n.ToGlobal(g) | n.ToLocal(g) | n.ToPrivate(g) | n.OclKernel(g):
                return self.call(g, vals, node, env)
            case n.Vectorise(g, k):
                lanes = [self.call(g, [v[j] for v in vals], node, env) for j in range(k)]
                return np.asarray(lanes, dtype=np.asarray(lanes[0]).dtype)
            case n.Iterate(k, g):
                return self.iterate(k, g, vals[0], node, env)
        if getattr(f, "transparent", False):  # a rewrite point (lift.rewrites) means its body `f`
            return self.call(f.f, vals, node, env)
        raise UnsupportedError(f"the interpreter has no rule for {type(f).__name__}", node=node)

    def map(self, g: FunDecl, xs: Any, node: FunCall | None, env: dict[int, Any]) -> Any:
        try:
            return self._batched_map(g, xs, env)
        except _NotBatchable:
            pass
        items = [self.call(g, [index0(xs, i)], node, env) for i in range(length(xs))]
        if not items:
            raise LiftValueError("map over an empty array", node=node)
        return stack(items)

    def _batched_map(self, g: FunDecl, xs: Any, env: dict[int, Any]) -> Any:
        """`map(g)` at once, when `g` is element-wise user functions with numpy versions."""
        if length(xs) == 0:
            raise _NotBatchable
        if isinstance(g, n.UserFun):
            if g.np_fn is None or not isinstance(xs, np.ndarray):
                raise _NotBatchable
            return _cast_batch(g.np_fn(xs), g.out_type, length(xs), self.wide)
        if isinstance(g, Lambda) and len(g.params) == 1:
            r = _Batched(env, {g.params[0].id: xs}, self.wide).eval(g.body)
            return _cast_batch(r, g.body.type, length(xs), self.wide)
        raise _NotBatchable

    def iterate(self, k: int, g: FunDecl, x: Any, node: FunCall, env: dict[int, Any]) -> Any:
        for _ in range(k):
            if isinstance(g, Lambda):
                ptype = g.params[0].ptype
                got = ArrayType(ptype.elem, length(x)) if isinstance(ptype, ArrayType) else ptype
                binding = unify(ptype, got) or {}
                inner = _Interp({**self.sizes, **{v: self.size(e) for v, e in binding.items()}}, self.wide)
                x = inner.call(g, [x], node, env)
            else:
                x = self.call(g, [x], node, env)
        return x


class _Batched:
    """Evaluate an element-wise body for all elements at once (or give up)."""

    def __init__(self, env: dict[int, Any], batched: dict[int, Any], wide: dict[np.dtype, np.dtype]) -> None:
        self.env, self.batched, self.wide = env, batched, wide

    def eval(self, e: Expr) -> Any:
        match e:
            case n.Param():
                if e.id in self.batched:
                    return self.batched[e.id]
                v = self.env.get(e.id)
                if v is None or not np.isscalar(v):
                    raise _NotBatchable
                return v
            case n.Literal(v, t) if isinstance(t, ScalarType):
                return _dt(t, self.wide).type(v)
            case FunCall(n.Get(i), (x,)):
                v = self.eval(x)
                if isinstance(v, Zipped) and v.ndim == 1:
                    return v.parts[i]
                raise _NotBatchable
            case FunCall(n.UserFun() as uf, args) if uf.np_fn is not None:
                vals = [self.eval(a) for a in args]
                if any(isinstance(v, Zipped) for v in vals):
                    raise _NotBatchable
                return uf.np_fn(*vals)
        raise _NotBatchable


def _call_userfun(f: n.UserFun, vals: list[Any], wide: dict[np.dtype, np.dtype]) -> Any:
    if f.py_fn is None:
        raise UnsupportedError(f"user function {f.name} has a raw C body and no py_fn; the "
                               f"interpreter cannot run it", node=f,
                               hint="pass py_fn= to user_fun.c")
    return cast(f.py_fn(*vals), f.out_type, wide)


WIDE = {np.dtype(np.float32): np.dtype(np.float64)}  # `interpret(..., precise=True)`


def _dt(s: ScalarType, wide: dict[np.dtype, np.dtype]) -> np.dtype:
    return wide.get(s.dtype, s.dtype)


def _widen(v: Any) -> Any:
    """An argument value with its float32 parts in float64."""
    if isinstance(v, Zipped):
        return Zipped(tuple(_widen(p) for p in v.parts), v.ndim)
    if isinstance(v, tuple):
        return tuple(_widen(x) for x in v)
    a = np.asarray(v)
    if a.dtype != np.float32:
        return v
    return a.astype(np.float64) if a.ndim else np.float64(v)


def cast(v: Any, t: Type, wide: dict[np.dtype, np.dtype] | None = None) -> Any:
    """A user-function result as a value of type `t`."""
    wide = wide or {}
    if isinstance(t, ScalarType):
        return _dt(t, wide).type(v)
    if isinstance(t, VectorType):
        return np.asarray(v, dtype=_dt(t.scalar, wide))
    if isinstance(t, TupleType):
        return tuple(cast(x, et, wide) for x, et in zip(v, t.elems))
    return v


def _cast_batch(v: Any, t: Type, count: int, wide: dict[np.dtype, np.dtype]) -> Any:
    if isinstance(t, TupleType):
        if not isinstance(v, tuple):
            raise _NotBatchable
        return Zipped(tuple(_cast_batch(x, et, count, wide) for x, et in zip(v, t.elems)), 1)
    if isinstance(v, Zipped) or isinstance(t, ArrayType):
        raise _NotBatchable
    scal = t.scalar if isinstance(t, VectorType) else t
    lanes = (t.n,) if isinstance(t, VectorType) else ()
    arr = np.asarray(v, dtype=_dt(scal, wide))
    return np.ascontiguousarray(np.broadcast_to(arr, (count,) + lanes))


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


def _slide(a: np.ndarray, size: int, step: int) -> np.ndarray:
    w = np.lib.stride_tricks.sliding_window_view(a, size, axis=0)
    return np.moveaxis(w, -1, 1)[::step]


def _pad(a: np.ndarray, left: int, right: int, value: Any) -> np.ndarray:
    if left < 0:
        a = a[-left:]
    if right < 0:
        a = a[: a.shape[0] + right]
    widths = [(max(left, 0), max(right, 0))] + [(0, 0)] * (a.ndim - 1)
    return np.pad(a, widths, mode="constant", constant_values=np.asarray(value, dtype=a.dtype))
