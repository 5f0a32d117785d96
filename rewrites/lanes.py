"""Lane-wise lifting of a map's element function, for the `vectorise` point (rewrites/vectorise.py).

A map computes each output element by a function of its element (or of a tuple of zipped
elements, or of a window of a `slide`); computing `w` consecutive outputs at once lifts that
function to `w` lanes: every scalar user function `uf` becomes `vectorise(uf, w)`, a scalar
literal becomes a vector literal, a scalar the function reads from outside (`a` in
`p => axpy(a, p.0, p.1)`) is broadcast into all lanes, and the element itself becomes a vector
(a tuple of vectors, or an array of vectors for a window). The lanes compute exactly what the
scalar function computes for each of the `w` elements (the same operations in the same order).

Windows: `map(g) << slide(n, 1) << x` (a stencil) groups `w` consecutive windows and transposes
them (`join << map(as_vector(w)) << transpose << split(w)`), so that window element `j` of the
group is the vector of `x[i + j .. i + j + w - 1]` (contiguous: one aligned load where
`i + j` is a multiple of `w`). Inside `g` the window may be indexed (`win[j]`), reduced
(`reduce(f, z) << win`, `reduce(f, z) << map(h) << win`) or mapped element-wise; a reduction over
a window of constant length (at most `UNROLL` elements) is unrolled into nested calls of the
lifted `f` (`f(f(f(z, win[0]), win[1]), win[2])`: the sequential order), so every window element
is read at a constant offset and the code generator can prove the offsets aligned or in bounds.
"""

from __future__ import annotations

import functools
from typing import Any, cast

import numpy as np

from lift.arith import Cst
from lift.ir.nodes import (
    AsScalar,
    AsVector,
    At,
    FunCall,
    FunDecl,
    Get,
    Join,
    Lambda,
    Literal,
    MakeTuple,
    Map,
    MapSeq,
    Param,
    Reduce,
    ReduceSeq,
    Slide,
    Split,
    Transpose,
    UserFun,
    Vectorise,
)
from lift.ir.paths import walk
from lift.ir.registry import case, register
from lift.rules.match import call, either, expr, fun, var
from lift.rules.terms import call as call_fun
from lift.rules.terms import constant, eta, length
from lift.rules.vector import VECTOR_SCALARS
from lift.typecheck import type_of
from lift.types import ArrayType, ScalarType, TupleType, VectorType
from lift.userfun import user_fun
from lift.userfun.ctypes import c_type

from .shapes import ZIP, match_shape

UNROLL = 16  # the longest window reduction unrolled

_MAPPED = call(either(Map(fun("h")), MapSeq(fun("h"))), expr("xs"))  # map(h) << xs, sequential or not
_SLIDE = call(Slide(var("size"), var("step")), expr("xs"))  # slide(size, step) << xs


@functools.cache
def broadcast(t: Any, w: int) -> UserFun:
    """`a => <a, .., a>`: a scalar in all `w` lanes of a vector."""
    return user_fun.c(f"bcast{w}_{c_type(t)}", ["a"], f"return ({c_type(VectorType(t, w))})(a);", [t],
                      VectorType(t, w), py=lambda a: np.full(w, a, dtype=np.asarray(a).dtype))


class _Lift:
    """Lifts an element function's body to `w` lanes; `elem` is the element parameter's id and
    `vec` its lifted replacement; `window` when the element is a slide's window; `ready` the ids of
    parameters that hold lanes already (a lifted reduction's accumulator)."""

    def __init__(self, w: int, elem: Param, vec: Param, window: bool, ready: frozenset[int] = frozenset()) -> None:
        self.w, self.elem, self.vec, self.window, self.ready = w, elem, vec, window, ready

    def lanewise(self, e: Any) -> bool:
        """Whether `e` depends on the element (or on lanes already lifted)."""
        return any(isinstance(m, Param) and (m.id == self.elem.id or m.id in self.ready) for _, m in walk(e))

    def go(self, e: Any) -> Any:  # noqa: PLR0911 - one case per form
        """The lifted expression, or a string saying why `e` cannot be lifted."""
        if isinstance(e, Param):
            if e.id == self.elem.id:
                return "the window is used whole" if self.window else self.vec
            if e.id in self.ready:
                return e
            t = type_of(e)
            if t in VECTOR_SCALARS:
                return FunCall(broadcast(t, self.w), (e,))
            return f"{e} of type {t} is read by the element function"
        if isinstance(e, Literal):
            return Literal(e.value, VectorType(e.ltype, self.w)) if e.ltype in VECTOR_SCALARS else \
                f"literal {e} is not a scalar"
        if not isinstance(e, FunCall):
            return f"{e} cannot be computed lane-wise"
        if not self.lanewise(e) and not constant(e) and type_of(e) in VECTOR_SCALARS:
            return FunCall(broadcast(type_of(e), self.w), (e,))  # the same in every lane: read once
        f = eta(e.f)
        lanes = case("lanes", f)
        out = lanes(self, f, e) if lanes is not None else None
        return f"{e.f} cannot be computed lane-wise" if out is None else out

    def outside(self, red: Any, args: tuple[Any, ...]) -> Any:
        """`reduce(f, z) [<< map(h)] << xs` over an array `xs` that is the same in every lane (MRI-Q:
        every voxel sums over all samples): a sequential fold of lane vectors, `f` lifted, `h`
        lifted with its element read once and broadcast where its lanes need it."""
        z, xs = args
        h = None
        if (m := match_shape(_MAPPED, xs)) is not None:
            h, xs = m["h"], m["xs"]
        if self.lanewise(xs):
            return "a reduction over an array that depends on the element"
        f = eta(red.f)
        if not (isinstance(f, UserFun) and _scalars(f.out_type) and all(_scalars(t) for t in f.in_types)):
            return "the reduction's operator is not a user function of scalars"
        init = self.go(z)
        if isinstance(init, str):
            return init
        xs_t = type_of(xs)
        if not isinstance(xs_t, ArrayType):
            raise AssertionError(f"lanes: a reduction over {xs_t}, not an array")
        acc, s = Param(type_of(init), "acc"), Param(xs_t.elem, "s")
        item = s if h is None else call_fun(h, [s])
        lifted = _Lift(self.w, self.elem, self.vec, self.window, self.ready | {acc.id}).go(item)
        if isinstance(lifted, str):
            return lifted
        step = Lambda((acc, s), FunCall(Vectorise(f, self.w), (acc, lifted)))
        return FunCall(ReduceSeq(step, label=red.label, loc=red.loc), (init, xs))

    def call(self, f: Any, args: tuple[Any, ...]) -> Any:
        got = [self.go(a) for a in args]
        bad = next((g for g in got if isinstance(g, str)), None)
        return bad if bad is not None else FunCall(f, tuple(got))

    def reduction(self, red: Any, args: tuple[Any, ...]) -> Any:
        """`reduce(f, z) [<< map(h)] << window`, unrolled in the sequential order."""
        z, xs = args
        h = None
        if (m := match_shape(_MAPPED, xs)) is not None:
            h, xs = eta(m["h"]), m["xs"]
        if not _is(xs, self.elem):
            return "a reduction of something other than the window"
        n = length(self.vec)
        if not (isinstance(n, Cst) and n.value <= UNROLL):
            return f"a window of {n} elements is not unrolled"
        f = eta(red.f)
        if not isinstance(f, UserFun) or (h is not None and not isinstance(h, UserFun)):
            return "the reduction's functions are not user functions"
        acc = self.go(z)
        if isinstance(acc, str):
            return acc
        for j in range(n.value):
            item: Any = FunCall(At(Cst(j)), (self.vec,))
            if h is not None:
                if h.out_type not in VECTOR_SCALARS or any(t not in VECTOR_SCALARS for t in h.in_types):
                    return f"{h.name} is not a function of scalars"
                item = FunCall(Vectorise(h, self.w), (item,))
            if f.out_type not in VECTOR_SCALARS or any(t not in VECTOR_SCALARS for t in f.in_types):
                return f"{f.name} is not a function of scalars"
            acc = FunCall(Vectorise(f, self.w), (acc, item))
        return acc


# The lane-wise forms of the element function's calls (`_Lift.go` dispatches on the function;
# None: not computed lane-wise), registered as the "lanes" stage's cases.
@register(UserFun, stage="lanes")
def _userfun_lanes(lift: _Lift, f: UserFun, e: FunCall) -> Any:
    if not (_scalars(f.out_type) and all(_scalars(t) for t in f.in_types)):
        return f"{f.name} is not a function of scalars"
    return lift.call(Vectorise(f, lift.w), e.args)


@register(Get, MakeTuple, stage="lanes")
def _tuple_lanes(lift: _Lift, f: FunDecl, e: FunCall) -> Any:
    return lift.call(f, e.args)  # a tuple's lanes are its components' lanes


@register(At, stage="lanes")
def _at_lanes(lift: _Lift, f: At, e: FunCall) -> Any:
    if lift.window and _is(e.args[0], lift.elem):
        return FunCall(At(f.index), (lift.vec,))
    return None


@register(Reduce, ReduceSeq, stage="lanes")
def _reduce_lanes(lift: _Lift, f: FunDecl, e: FunCall) -> Any:
    return lift.reduction(f, e.args) if lift.window else lift.outside(f, e.args)


def _scalars(t: Any) -> bool:
    """A scalar a vector holds, or a tuple of such scalars."""
    return t in VECTOR_SCALARS or (isinstance(t, TupleType) and bool(t.elems) and all(x in VECTOR_SCALARS
                                                                                    for x in t.elems))


def _is(e: Any, p: Param) -> bool:
    return isinstance(e, Param) and e.id == p.id


def lifted_map(call: FunCall, w: int) -> Any:
    """`map(g) << x` computed `w` elements at a time (see the module docstring), or why not:
    `x` a scalar array, a zip of scalar arrays, or `slide(n, 1) << ..` of a scalar array."""
    g, x = cast(Any, call.f).f, call.args[0]
    if not (isinstance(g, Lambda) and len(g.params) == 1):
        return f"map({g}) has no element parameter"
    xt = type_of(x)
    if not isinstance(xt, ArrayType):
        return f"map over {xt}"
    elem = g.params[0]
    if match_shape(_SLIDE, x) is not None:
        return _lifted_windows(call, g, cast(FunCall, x), w)
    et = xt.elem
    if et in VECTOR_SCALARS:
        vt: Any = VectorType(et, w)
        data: Any = FunCall(AsVector(w), (x,))
    elif isinstance(et, TupleType) and (zipped := match_shape(ZIP, x)) is not None and \
            all(t in VECTOR_SCALARS for t in et.elems):
        vt = TupleType(tuple(VectorType(cast(ScalarType, t), w) for t in et.elems))
        data = FunCall(cast(FunCall, x).f, tuple(FunCall(AsVector(w), (a,)) for a in zipped["xs"]))
    else:
        return f"elements of type {et} are not scalars or a zip of scalars"
    return _rebuilt(call, g, elem, Param(vt, elem.name), data, w, window=False)


def _lifted_windows(call: FunCall, g: Lambda, x: FunCall, w: int) -> Any:
    size, step = cast(Any, x.f).size, cast(Any, x.f).step
    if step != Cst(1) or not isinstance(size, Cst):
        return f"slide({size}, {step}): only constant windows of step 1 are vectorised"
    st = type_of(x.args[0])
    if not (isinstance(st, ArrayType) and st.elem in VECTOR_SCALARS):
        return f"slide over {st}: not a scalar array"
    vec = Param(ArrayType(VectorType(st.elem, w), size), "ws")
    grp = Param(ArrayType(ArrayType(st.elem, size), Cst(w)), "grp")
    group = Lambda((grp,), FunCall(Join(), (FunCall(Map(AsVector(w)), (FunCall(Transpose(), (grp,)),)),)))
    data = FunCall(Map(group), (FunCall(Split(Cst(w)), (x,)),))
    return _rebuilt(call, g, g.params[0], vec, data, w, window=True)


def _rebuilt(call: FunCall, g: Lambda, elem: Param, vec: Param, data: Any, w: int, window: bool) -> Any:

    body = _Lift(w, elem, vec, window).go(g.body)
    if isinstance(body, str):
        return body
    out_t = type_of(g.body)
    if not (out_t in VECTOR_SCALARS or isinstance(out_t, TupleType) and all(t in VECTOR_SCALARS for t in out_t.elems)):
        return f"the element function returns {out_t}, not a scalar (or a tuple of scalars)"
    mapped = FunCall(Map(Lambda((vec,), body), label=call.f.label, loc=call.f.loc), (data,), loc=call.loc)
    return FunCall(AsScalar(), (mapped,), loc=call.loc)


__all__ = ["lifted_map", "broadcast", "UNROLL"]


def zip_userfun(f: FunDecl, x: Any) -> tuple[UserFun, tuple[Any, ...]] | None:
    """`(uf, arrays)` when `f` is `q => uf(get(0, q), .., get(k-1, q))` and `x` zips `arrays`."""
    if match_shape(ZIP, x) is None:
        return None
    if not (isinstance(f, Lambda) and len(f.params) == 1 and isinstance(f.body, FunCall)):
        return None
    uf, q = f.body.f, f.params[0]
    if not isinstance(uf, UserFun) or len(f.body.args) != len(x.args):
        return None
    for i, a in enumerate(f.body.args):
        if not (isinstance(a, FunCall) and a.f == Get(i) and a.args == (q,)):
            return None
    return uf, tuple(x.args)
