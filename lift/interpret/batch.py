"""The batched evaluator: a map evaluates its body once over a batch axis (vmap style).

Evaluation happens at a depth `d`, the number of maps around the current node; `bs` holds their
lengths. A value at depth `d` has `d` leading batch axes, each of full length or 1 (broadcast:
the value does not depend on that map's element), then its own axes (array dimensions, then a
vector's lanes); tuples are Python tuples and arrays of tuples `Zipped`, both of batched values.
Layout patterns act on the axes after the batch axes and are numpy views; user functions run
through their numpy twins (lift.interpret.twins); a reduce is a left-to-right loop over its axis,
each step vectorised over the batch, or a built-in operator's numpy fold (lift.interpret.fold),
and a `reduce << map(g)` evaluates `g` a chunk of the reduced axis at a time, so the mapped array
is never materialised whole; a sum of products (`reduce(add) << map(mult) << zip(xs, ys)`) is a
contraction over the batch axes (lift.interpret.contract: BLAS in the precise mode, blocks in the
exact float32 order otherwise). What this evaluator cannot handle raises `NotBatchable`; the
element-wise evaluator (lift.interpret.element) then takes over, visibly (`Stats`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lift.arith import Arith, evaluate
from lift.errors import LiftTypeError, LiftValueError
from lift.interpret.contract import contract, contract_sequential, is_product
from lift.interpret.element import Element, NotBatchable, iterate_sizes
from lift.interpret.fold import LOOP_BATCH, fold
from lift.interpret.twins import call_twin, monoid
from lift.interpret.values import Zipped, dims_of, dt, pad_axis, slide_axis
from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Param
from lift.ir.registry import MAPS, REDUCES, RewritePoint, case, is_address, register, table
from lift.types import Int, ScalarType, Type, VectorType, base_type

log = logging.getLogger("lift.interpret")
CHUNK = 1 << 16  # elements of a mapped array a fused `reduce << map` materialises at once
LOOP_CHUNK = 1 << 20  # the same when the fold loops over the reduced axis, across a large batch


@dataclass
class Stats:
    """What the interpreter did: how many maps and reductions it evaluated element by element
    (`count`), and why (`fallbacks`, the first `keep` of them)."""

    fallbacks: list[str] = field(default_factory=list)
    count: int = 0
    keep: int = 100

    def fell_back(self, why: NotBatchable, node: Any) -> None:
        """Record (and log at debug level) that `node` is evaluated element by element."""
        where = getattr(node, "label", None) or type(getattr(node, "f", node)).__name__
        self.count += 1
        if len(self.fallbacks) < self.keep:
            self.fallbacks.append(f"{where}: {why.reason}")
        log.debug("element-wise evaluation of %s: %s", where, why.reason)


Env = dict[int, tuple[Any, int]]  # parameter id -> (value, the depth it was bound at)


class Batched:
    """Evaluate a program with every map batched (see the module docstring)."""

    def __init__(self, sizes: dict[str, int], wide: dict[np.dtype, np.dtype], stats: Stats) -> None:
        self.sizes, self.wide, self.stats = sizes, wide, stats
        self.precise = bool(wide)

    def size(self, e: Arith) -> int:
        return evaluate(e, self.sizes)

    def with_sizes(self, sizes: dict[str, int]) -> Batched:
        return self if not sizes else Batched({**self.sizes, **sizes}, self.wide, self.stats)

    def run(self, body: Expr, env: dict[int, Any]) -> Any:
        """`body` at depth 0."""
        return self.eval(body, {k: (v, 0) for k, v in env.items()}, ())

    def at_depth0(self, node: FunCall, f: n.AbstractMap | n.AbstractReduce, vals: list[Any],
                  env: dict[int, Any]) -> Any:
        """A map or reduce call of the element-wise evaluator, on its evaluated arguments."""
        benv = {k: (v, 0) for k, v in env.items()}
        if isinstance(f, MAPS):
            return self.map(f.f, vals[0], benv, ())
        return self.reduce_values(f.f, vals[0], vals[1], [], benv, ())

    # ------------------------------------------------------------------ expressions

    def eval(self, e: Expr, env: Env, bs: tuple[int, ...]) -> Any:
        # the three kinds of expression (the patterns are the functions: `call`)
        if isinstance(e, FunCall):
            red = unwrap(e.f)
            if isinstance(red, REDUCES) and len(e.args) == 2:
                return self.reduce(red.f, e.args[0], e.args[1], env, bs)
            return self.call(e.f, [self.eval(a, env, bs) for a in e.args], e, env, bs)
        if isinstance(e, Param):
            try:
                v, depth = env[e.id]
            except KeyError:
                raise LiftTypeError(f"parameter {e.name} is used outside its lambda", node=e) from None
            return lift(v, depth, len(bs))
        if isinstance(e, n.Literal):
            return self.constant(e.value, e.ltype, len(bs))
        raise LiftTypeError(f"cannot evaluate {e!r}", node=e)

    def constant(self, v: Any, t: Type, d: int) -> np.ndarray:
        b = base_type(t)
        lanes = (b.n,) if isinstance(b, VectorType) else ()
        scal = b.scalar if isinstance(b, VectorType) else b
        assert isinstance(scal, ScalarType)
        shape = (1,) * d + tuple(self.size(x) for x in dims_of(t)) + lanes
        return np.broadcast_to(np.asarray(v, dtype=dt(scal, self.wide)), shape)

    def call(self, f: FunDecl, vals: list[Any], node: Any, env: Env, bs: tuple[int, ...]) -> Any:
        """Apply `f` to batched values: the case `f`'s family registered (lift.ir.registry, stage
        "batched"); without one, `NotBatchable` (the element-wise evaluator takes over)."""
        rule = _CASES.get(type(f)) or case("batched", f)
        if rule is None:
            raise NotBatchable(f"no batched rule for {type(f).__name__}", node)
        return rule(self, f, vals, node, env, bs)

    # ------------------------------------------------------------------ map and reduce

    def map(self, g: FunDecl, xs: Any, env: Env, bs: tuple[int, ...]) -> Any:
        """`map(g)` over axis `len(bs)` of `xs`: `g` once, with that axis as a new batch axis."""
        d = len(bs)
        m = axis_len(xs, d)
        if m == 0:
            raise NotBatchable("map over an empty array")
        r = self.call(g, [element(xs, d)], None, env, bs + (m,))
        return widen_axis(r, d, m)

    def reduce(self, g: FunDecl, init_e: Expr, xs_e: Expr, env: Env, bs: tuple[int, ...]) -> Any:
        """`reduce(g) << (init, xs)`; when `xs` is `map(h) << ys`, `h` is fused into the fold."""
        init = self.eval(init_e, env, bs)
        pre: list[FunDecl] = []
        if isinstance(xs_e, FunCall) and len(xs_e.args) == 1:
            mapped = unwrap(xs_e.f)
            if isinstance(mapped, MAPS):
                pre, xs_e = [mapped.f], xs_e.args[0]
        return self.reduce_values(g, init, self.eval(xs_e, env, bs), pre, env, bs)

    def reduce_values(self, g: FunDecl, acc: Any, ys: Any, pre: list[FunDecl], env: Env,
                      bs: tuple[int, ...]) -> Any:
        """Fold `g` over `map(pre[-1]) << ... << map(pre[0]) << ys`, a chunk of elements at a time."""
        d = len(bs)
        op, h = monoid(g), None
        if op is None:
            op, h = accumulating(g)
        fns = pre + ([h] if h is not None else [])
        owned = bool(fns) and _twin_result(unwrap(fns[-1]))  # chunks are fresh twin results
        m = axis_len(ys, d)
        if m == 0:
            if fns:
                raise NotBatchable("map over an empty array")
            return acc
        if op == "add" and len(fns) == 1 and is_product(unwrap(fns[0])):  # a sum of products
            # precise: the order of a float64 sum is free, one matrix product; else in the fold's order
            r = contract(acc, ys, d) if self.precise else contract_sequential(acc, ys, d)
            if r is not None:
                return r
        batch = int(np.prod(bs, dtype=np.int64))
        step = max(1, CHUNK // max(1, batch))
        if batch >= LOOP_BATCH and 8 * _stored(ys) <= batch * m:
            # the fold loops over the reduced axis and reads ys many times: contiguous slices,
            # a few steps' worth of mapped elements at once (fewer, larger calls)
            ys = on_axes(ys, lambda a: _outer_first(a, d), 0)
            step = max(step, LOOP_CHUNK // batch)
        elif batch >= LOOP_BATCH:
            step = max(step, 16)  # as stored: inner loops along the reduced axis, not too short
        for k0 in range(0, m, step):
            part = on_axes(ys, lambda a, k0=k0: a[(slice(None),) * d + (slice(k0, k0 + step),)], 0)
            for fn in fns:
                part = self.map(fn, part, env, bs)
            if op is not None and isinstance(part, np.ndarray) and isinstance(acc, np.ndarray | np.generic):
                acc = fold(op, np.asarray(acc), part, d, precise=self.precise, owned=owned)
                continue
            acc = self.steps(g, acc, part, env, bs)
        return acc

    def steps(self, g: FunDecl, acc: Any, part: Any, env: Env, bs: tuple[int, ...]) -> Any:
        """`acc = g(acc, x)` for each element of `part` along axis `len(bs)`, in order. At the top
        level (no batch) a step is one element: the element-wise evaluator's Python functions are
        several times cheaper there than numpy twins on single values (the same semantics)."""
        d = len(bs)
        if d == 0:
            ev, plain = Element(self.sizes, self.wide), {k: v for k, (v, _) in env.items()}
            for j in range(axis_len(part, 0)):
                acc = ev.call(g, [acc, take(part, 0, j)], None, plain)
            return acc
        for j in range(axis_len(part, d)):
            acc = self.call(g, [acc, take(part, d, j)], None, env, bs)
        return acc


def _twin_result(f: FunDecl) -> bool:
    """`f`'s value is what a user function's twin returned (a fresh array): `f` is a user function
    or a lambda whose body calls one."""
    return isinstance(f, n.UserFun) or (isinstance(f, Lambda) and isinstance(f.body, FunCall)
                                        and isinstance(unwrap(f.body.f), n.UserFun))


def unwrap(f: FunDecl) -> FunDecl:
    """`f` without the wrappers that do not change its value (address spaces, rewrite points)."""
    while True:
        if is_address(f):
            f = f.f
        elif getattr(f, "transparent", False):
            inner = getattr(f, "f")  # noqa: B009 - a rewrite point's body (lift.rewrites.point)
            assert isinstance(inner, FunDecl)
            f = inner
        else:
            return f


def accumulating(g: FunDecl) -> tuple[str | None, FunDecl | None]:
    """`(acc, x) => op(acc, e)` (or `op(e, acc)` for add and mult) with `acc` not in `e`, and op a
    built-in: the fold `op` over `map(x => e)`, the same operations in the same order."""
    if not (isinstance(g, Lambda) and len(g.params) == 2):
        return None, None
    acc, x = g.params
    body = g.body
    if not (isinstance(body, FunCall) and len(body.args) == 2):
        return None, None
    op = monoid(body.f)
    if op is None:
        return None, None
    a, b = body.args
    if b == acc and op in ("add", "mult"):
        a, b = b, a
    if a != acc or _mentions(b, acc.id):
        return None, None
    return op, Lambda((x,), b)


def _mentions(e: Any, pid: int) -> bool:
    if isinstance(e, Param):
        return e.id == pid
    if isinstance(e, FunCall):
        return _mentions(e.f, pid) or any(_mentions(a, pid) for a in e.args)
    if isinstance(e, Lambda):
        return _mentions(e.body, pid)
    f = getattr(e, "f", None)
    return isinstance(f, FunDecl) and _mentions(f, pid)


# ---------------------------------------------------------------------- batched values


def lift(v: Any, depth: int, d: int) -> Any:
    """A value bound at `depth` seen at depth `d`: size-1 batch axes for the maps in between."""
    if depth == d:
        return v
    if isinstance(v, tuple):
        return tuple(lift(x, depth, d) for x in v)
    if isinstance(v, Zipped):
        return Zipped(tuple(lift(p, depth, d) for p in v.parts), v.ndim)
    a = np.asarray(v)
    return a.reshape(a.shape[:depth] + (1,) * (d - depth) + a.shape[depth:])


def axis_len(v: Any, ax: int) -> int:
    """The length of the array dimension at axis `ax`."""
    return axis_len(v.parts[0], ax) if isinstance(v, Zipped) else int(np.shape(v)[ax])


def on_axes(v: Any, fn: Any, dims: int) -> Any:
    """A layout function of the array axes, applied to every component of `v`."""
    if isinstance(v, Zipped):
        return Zipped(tuple(on_axes(p, fn, dims) for p in v.parts), v.ndim + dims)
    return fn(v)


def _stored(v: Any) -> int:
    """The number of elements `v`'s arrays store (broadcast axes count once)."""
    if isinstance(v, Zipped):
        return sum(_stored(p) for p in v.parts)
    a = np.asarray(v)
    return int(np.prod([k for k, st in zip(a.shape, a.strides) if st != 0], dtype=np.int64))


def _outer_first(a: np.ndarray, d: int) -> np.ndarray:
    """Axis `d` of `a` moved to the front (for `take(_, d, j)`), the slices made contiguous
    unless that would materialise broadcast axes."""
    moved = np.moveaxis(a, d, 0)
    if all(st != 0 or n == 1 for st, n in zip(moved.strides, moved.shape)):
        moved = np.ascontiguousarray(moved)
    return np.moveaxis(moved, 0, d)


def take(v: Any, ax: int, j: int) -> Any:
    """Element `j` of the array dimension at axis `ax` (that axis removed)."""
    if isinstance(v, Zipped):
        parts = tuple(take(p, ax, j) for p in v.parts)
        return parts if v.ndim == 1 else Zipped(parts, v.ndim - 1)
    return v[(slice(None),) * ax + (j,)]


def element(v: Any, d: int) -> Any:
    """An array value whose outer array axis (at `d`) has become a batch axis: its element."""
    if isinstance(v, Zipped):
        parts = tuple(element(p, d) for p in v.parts)
        return parts if v.ndim == 1 else Zipped(parts, v.ndim - 1)
    return v


def widen_axis(r: Any, d: int, m: int) -> Any:
    """The value of a map of length `m` from its body's value: batch axis `d` made full length."""
    if isinstance(r, tuple):
        return Zipped(tuple(widen_axis(x, d, m) for x in r), 1)
    if isinstance(r, Zipped):
        return Zipped(tuple(widen_axis(p, d, m) for p in r.parts), r.ndim + 1)
    a = np.asarray(r)
    if a.shape[d] == m:
        return a
    return np.broadcast_to(a, a.shape[:d] + (m,) + a.shape[d + 1:])


# ------------------------------------------------------------ the cases (lift.ir.registry)

_CASES = table("batched")
Vals = list[Any]
Dims = tuple[int, ...]


@register(Lambda, stage="batched")
def _lambda(ev: Batched, f: Lambda, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    d = len(bs)
    return ev.eval(f.body, {**env, **{p.id: (v, d) for p, v in zip(f.params, vals)}}, bs)


@register(n.UserFun, stage="batched")
def _userfun(ev: Batched, f: n.UserFun, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    return call_twin(f, vals, ev.wide)


@register(*n.MAPS, stage="batched")
def _map(ev: Batched, f: n.AbstractMap, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    return ev.map(f.f, vals[0], env, bs)


@register(*n.REDUCES, stage="batched")
def _reduce(ev: Batched, f: n.AbstractReduce, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    return ev.reduce_values(f.f, vals[0], vals[1], [], env, bs)


@register(n.Zip, stage="batched")
def _zip(ev: Batched, f: n.Zip, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    return Zipped(tuple(vals), 1)


@register(n.MakeTuple, stage="batched")
def _tuple(ev: Batched, f: n.MakeTuple, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    return tuple(vals)


@register(n.Get, stage="batched")
def _get(ev: Batched, f: n.Get, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    if not isinstance(vals[0], tuple):
        raise NotBatchable("get of a value that is not a tuple", node)
    return vals[0][f.i]


@register(n.Let, *n.WRAPPERS, RewritePoint, stage="batched")
def _wrapped(ev: Batched, f: Any, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    """let, the address spaces, ocl_kernel and a rewrite point mean their function `f.f`."""
    return ev.call(f.f, vals, node, env, bs)


@register(n.Vectorise, stage="batched")
def _vectorise(ev: Batched, f: n.Vectorise, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    d, k = len(bs), f.n
    r = ev.call(f.f, vals, node, env, bs + (k,))
    if not isinstance(r, np.ndarray) or r.ndim != d + 1:
        raise NotBatchable("vectorise of a function that does not return a scalar", node)
    return widen_axis(r, d, k)


@register(n.Iterate, stage="batched")
def _iterate(ev: Batched, f: n.Iterate, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    d, x = len(bs), vals[0]
    for _ in range(f.n):
        outer = axis_len(x, d) if isinstance(x, Zipped) or np.ndim(x) > d else None
        x = ev.with_sizes(iterate_sizes(f.f, outer, ev)).call(f.f, [x], node, env, bs)
    return x


# The layout patterns act on the array axes of their argument (from axis `d`, after the batch
# axes): views where numpy allows.


@register(n.At, stage="batched")
def _at(ev: Batched, f: n.At, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    x, d = vals[0], len(bs)
    k, m = ev.size(f.index), axis_len(x, d)
    if not 0 <= k < m:
        raise LiftValueError(f"index {k} out of range for length {m}", node=node)
    return take(x, d, k)


@register(n.Split, n.AsVector, stage="batched")
def _split(ev: Batched, f: n.Split | n.AsVector, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    d = len(bs)
    m = ev.size(f.n) if isinstance(f.n, Arith) else f.n
    return on_axes(vals[0], lambda a: a.reshape(a.shape[:d] + (a.shape[d] // m, m) + a.shape[d + 1:]), 1)


@register(n.Join, n.AsScalar, stage="batched")
def _join(ev: Batched, f: n.Join | n.AsScalar, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    d = len(bs)
    return on_axes(vals[0], lambda a: a.reshape(a.shape[:d] + (a.shape[d] * a.shape[d + 1],) + a.shape[d + 2:]), -1)


@register(n.Slide, stage="batched")
def _slide(ev: Batched, f: n.Slide, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    d, sz, st = len(bs), ev.size(f.size), ev.size(f.step)
    return on_axes(vals[0], lambda a: slide_axis(a, sz, st, d), 1)


@register(n.Iota, stage="batched")
def _iota(ev: Batched, f: n.Iota, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    return np.arange(ev.size(f.n), dtype=dt(Int, ev.wide)).reshape((1,) * len(bs) + (-1,))


@register(n.Pad, stage="batched")
def _pad(ev: Batched, f: n.Pad, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    d, lo, hi = len(bs), ev.size(f.left), ev.size(f.right)
    return on_axes(vals[0], lambda a: pad_axis(a, lo, hi, f.value, d, f.mode), 0)


@register(n.Transpose, n.TransposeW, stage="batched")
def _transpose(ev: Batched, f: FunDecl, vals: Vals, node: Any, env: Env, bs: Dims) -> Any:
    d = len(bs)
    return on_axes(vals[0], lambda a: np.swapaxes(a, d, d + 1), 0)
