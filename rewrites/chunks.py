"""The chunked-reduction rewrite point `reduce_chunks` (split_reduce + reduce_map_fusion + vectorise).

    reduce(f, z) << map(g) << x
      width 1:  reduce(f, z) << map(c => reduce_seq((acc, e) => f(acc, g(e)), z) << c) << split(T) << x
      width w:  reduce(f, z) << map(c => lane_sum << reduce_seq((acc, e) =>
                    vectorise(f, w)(acc, vectorise(g, w)(e)), <z>w) << c) << split(T) << as_vector(w) << x

`f` a built-in associative operator with neutral `z` (`map(g)` optional); `x` may be a zip of
arrays when `g` is `q => uf(q.0, .., q.k-1)` (each array is read as vectors). Each chunk is
reduced sequentially with `g` fused into the accumulation (no temporary array), so a chunk
per work-item reads contiguous memory, and with `w > 1` accumulates in a vector register
(the shape of the hand-written float8 dot), whose lanes are summed with constant lane
indices (`lane_sum`). The partial results, one per chunk, are reduced by `f`. Width
`w > 1` needs `f` to be `add` and `g` a scalar user function, or `f` a sum of tuples component by
component from the tuple of zeros (`rules.reduce.zero_tuple_sum`) and `g` a user function returning
the tuple or `q => (uf_0(q.i, ..), .., uf_k-1(..))` (`tuple_fun`): then one vector accumulator
per component, their lanes summed component by component (`tuple_lane_sum`). SRAD's statistics of
a 512^2 image (a sum and a sum of squares, the program's result) went from one sequential loop
to chunks of float8 pairs: kernel 0.280 -> 0.089 ms, call 0.333 -> 0.117 ms (Xeon, PoCL 3.0).
The tile size `T` (in elements of the vectorised array) is a tuning variable `T_label`.

`combine` says how the partial results are reduced: "kernel" (a `reduce` of the partials array,
which the mapping puts in a second kernel when the chunks are parallel) or "atomic"
(`reduce_atomic`: each chunk's partial is combined into the result with an OpenCL atomic as
soon as it is computed, one kernel; `f` add, mult, max_ or min_ on 32-bit Float or Int).

With `pad` (a structural choice, for sizes like 2176, 1000 or a prime that `T * w` may not
divide) the arrays are padded at the end with the reduction's initial value `z` up to a
multiple of `T * w` (`pad(0, r, z)`, r = (T*w - n % (T*w)) % (T*w)) unless that provably
divides the length: a neutral-element pad, used only where `z` is neutral for `f` and
`g(z, .., z) == z` (`g`'s Python meaning), so the padding changes nothing; reads past the end
become selects of `z`. With `tail` (a structural choice too, taking precedence over `pad`) the
chunks cover the first m = n - n % (T*w) elements (`take(m)`: whole vectors, no selects) and the
rest is a tail step, `reduce(f, z) << map(g) << pad(-m, 0)`, whose result is the initial value of
the reduction of the partials (one work-item, in a kernel of its own before it); it needs no
neutral pad. Without either, `split(T)` needs `T * w` to divide the length.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, ClassVar, cast

import numpy as np

from lift.arith import Cst, prove_divides
from lift.ir.nodes import (
    AsVector,
    Expr,
    FunCall,
    FunDecl,
    Get,
    Lambda,
    Literal,
    MakeTuple,
    Map,
    Pad,
    Reduce,
    ReduceAtomic,
    ReduceSeq,
    Split,
    UserFun,
    Vectorise,
    Zip,
    node,
)
from lift.rules.match import expr, var
from lift.rules.reduce import folds_in_order, is_monoid, zero_tuple_sum
from lift.rules.terms import call as call_fun
from lift.rules.terms import elem, eta, lam, length, refresh
from lift.rules.vector import VECTOR_SCALARS, WIDTHS
from lift.typecheck import type_of
from lift.types import ArrayType, ScalarType, TupleType, VectorType, types_equal
from lift.userfun import user_fun
from lift.userfun.ctypes import c_type
from lift.userfun.facts import operator, sums

from .argbest import vector_selection
from .lanes import zip_userfun
from .point import Nested, RewritePoint, constructor, size_param
from .shapes import MAP, REDUCE, ZIP, match_shape

AUTO_WIDTHS = (8, 16, 4, 1)
COMBINES = ("kernel", "atomic")  # how the partial results are reduced (the first: the default)
_AS_VECTOR = FunCall(AsVector(var("k")), (expr("x"),))  # as_vector(k) << x
# float16 `vload16`, `fma` and `mad` abort PoCL 3.0 (shared/notes/pocl-performance.md): width 16
# only for user functions that call none of these (the codegen loads through pointer casts)
_UNSAFE_16 = re.compile(r"\b(fma|mad|vload\d+|vstore\d+)\s*\(")


def safe_widths(funs: Any) -> tuple[int, ...]:
    """`AUTO_WIDTHS` without 16 when one of the user functions `funs` calls fma/mad/vload."""
    bad = any(_UNSAFE_16.search(getattr(f, "c_source", "") or "") for f in funs if f is not None)
    return tuple(w for w in AUTO_WIDTHS if not (bad and w == 16))


def reduce_parts(call: Any) -> tuple[FunDecl, Any, FunDecl | None, Any] | None:
    """`(f, z, g, x)` for `reduce(f, z) << map(g) << x` (`g` None without the map), or None."""
    red = match_shape(REDUCE, call)
    if red is None:
        return None
    f, z, xs = red["f"], red["z"], red["xs"]
    if (mapped := match_shape(MAP, xs)) is not None:
        return f, z, mapped["f"], mapped["x"]
    return f, z, None, xs


def zip_fun(g: FunDecl | None, x: Any) -> tuple[UserFun | None, tuple[Any, ...]] | None:
    """`(uf, arrays)` for a vectorisable element function: `g` a scalar user function (or none)
    over a scalar array, or `q => uf(q.0, .., q.k-1)` over `zip(a0, .., ak-1)`; else None."""
    xt = type_of(x)
    g = eta(g) if g is not None else None
    if g is None or isinstance(g, UserFun):
        if isinstance(xt, ArrayType) and xt.elem in VECTOR_SCALARS and (g is None or len(g.in_types) == 1):
            return g, (x,)
        return None
    found = zip_userfun(g, x)
    if found is None or any(not (isinstance(type_of(a), ArrayType)
                                 and cast(ArrayType, type_of(a)).elem in VECTOR_SCALARS)
                            for a in found[1]):
        return None
    return found


def tuple_fun(g: FunDecl | None, x: Any) -> tuple[tuple[tuple[UserFun, tuple[int, ...]], ...], tuple[Any, ...]] | None:
    """`(components, arrays)` of an element function building a tuple of scalar user functions of
    the element's scalars, `q => tuple(uf_0(q.i, ..), .., uf_k-1(q.j, ..))` over `zip(a_0, .., a_m-1)`
    or `v => tuple(uf_0(v), ..)` over one scalar array: each component `(uf_j, indices_j)`, the
    arrays `x` zips (or `x`); else None."""
    if not (isinstance(g, Lambda) and len(g.params) == 1 and isinstance(g.body, FunCall)
            and isinstance(g.body.f, MakeTuple) and g.body.args):
        return None
    q = g.params[0]
    zipped = match_shape(ZIP, x)
    arrays = tuple(zipped["xs"]) if zipped is not None else (x,)
    if any(not (isinstance(type_of(a), ArrayType) and cast(ArrayType, type_of(a)).elem in VECTOR_SCALARS)
           for a in arrays):
        return None
    comps = []
    for c in g.body.args:
        if not (isinstance(c, FunCall) and isinstance(c.f, UserFun) and isinstance(c.f.out_type, ScalarType)):
            return None
        idx = []
        for a in c.args:
            if zipped is None and a == q:
                idx.append(0)
            elif (zipped is not None and isinstance(a, FunCall) and isinstance(a.f, Get) and a.args == (q,)
                  and a.f.i < len(arrays)):
                idx.append(a.f.i)
            else:
                return None
        comps.append((c.f, tuple(idx)))
    return tuple(comps), arrays


VectorForm = tuple[UserFun | None, tuple[tuple[UserFun, tuple[int, ...]], ...] | None, tuple[Any, ...]]


def vector_form(f: FunDecl, z: Any, g: FunDecl | None, x: Any) -> VectorForm | str:
    """What `reduce(f, z) << map(g) << x` accumulates in vectors at a width above 1, or why it
    cannot (a phrase to follow "width w"): `(uf, None, arrays)` for `f` an addition, or a sum of
    tuples (`zero_tuple_sum`) whose `g` is a user function returning the tuple, `g` being `uf` of
    the arrays' scalars (`zip_fun`; None: no map); `(None, components, arrays)` for a sum of
    tuples whose `g` builds the tuple from scalar user functions (`tuple_fun`). `reduce_chunks`
    and the automatic placer's widths ask it."""
    pairs = zero_tuple_sum(f, z)
    if not (sums(f) or pairs):
        return f"needs the reduction to be an addition or a sum of tuples (got {f})"
    found = zip_fun(g, x)
    if found is None and pairs and (parts := tuple_fun(g, x)) is not None:
        return None, parts[0], parts[1]
    if found is None:
        return f"needs {g} over {type_of(x)} to be a scalar function of scalar arrays"
    if pairs and (found[0] is None or not types_equal(found[0].out_type, type_of(z))):
        return f"needs the tuple sum's element function to return {type_of(z)}"
    return found[0], None, found[1]


def _apply(g: FunDecl | None, e: Any) -> Any:
    return e if g is None else call_fun(g, [e])


@functools.cache
def lane_sum(t: Any, w: int) -> UserFun:
    """`v => v.s0 + .. + v.s(w-1)` (pairwise) for a vector of `w` lanes of the scalar type `t`
    (constant lanes: the codegen keeps a private vector in a register)."""
    lanes = [f"v.s{i:X}" for i in range(w)]
    while len(lanes) > 1:
        lanes = [f"({a} + {b})" for a, b in zip(lanes[::2], lanes[1::2])]
    name = f"lane_sum{w}_{c_type(t)}"
    return user_fun.c(name, ["v"], f"return {lanes[0]};", [VectorType(t, w)], t,
                      py_fn=lambda v: np.sum(np.asarray(v), axis=-1))


@functools.cache
def tuple_lane_sum(t: TupleType, w: int) -> UserFun:
    """`v => (lane_sum(v.0), .., lane_sum(v.k-1))` for a tuple of vectors of `w` lanes of the
    scalars of `t` (a tuple of sums accumulated in vectors: `reduce_chunks`)."""
    def sum_of(j: int) -> str:
        lanes = [f"v._{j}.s{i:X}" for i in range(w)]
        while len(lanes) > 1:
            lanes = [f"({a} + {b})" for a, b in zip(lanes[::2], lanes[1::2])]
        return lanes[0]

    body = f"{c_type(t)} r;\n" + "".join(f"r._{j} = {sum_of(j)};\n" for j in range(len(t.elems))) + "return r;"
    name = f"lane_sums{w}_" + "_".join(c_type(e) for e in t.elems)
    vt = TupleType(tuple(VectorType(cast(ScalarType, e), w) for e in t.elems))
    return user_fun.c(name, ["v"], body, [vt], t,
                      py_fn=lambda v: tuple(np.sum(np.asarray(c), axis=-1) for c in v))


@node
class ReduceChunks(RewritePoint):
    """`reduce_chunks(reduce(f, z) << map(g), size=None, width=None)`: a sequential, fused (and,
    with `width`, vectorised) reduction per chunk of `size`, then a reduction of the partials."""

    f: FunDecl
    size: Any = None
    width: int | None = None
    combine: str | None = None
    pad: bool | None = None
    tail: bool | None = None
    kind: ClassVar[str] = "reduce_chunks"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        out: dict[str, tuple[Any, ...]] = {} if self.width is not None else {"width": AUTO_WIDTHS}
        if self.combine is None:
            out["combine"] = COMBINES
        if self.pad is None:
            out["pad"] = (False, True)
        if self.tail is None:
            out["tail"] = (False, True)
        return out

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        parts = reduce_parts(call)
        if parts is None:
            return f"expects reduce(f, z) << x, got {call}"
        f, z, g, x = parts
        ordered = not is_monoid(f, z)  # an arg-min step: the chunks folded in their order only
        if ordered and not folds_in_order(f, z):
            return f"{f} is not a known associative operator with neutral {z}"
        w = int(params.get("width") or self.width or 1)
        size = size_param(self.size, params, self.label or "T")
        tail = params.get("tail")
        init = z
        if (tail if tail is not None else self.tail) and not prove_divides(size * w, length(x)):
            if ordered:
                return f"the tail step is folded before the chunks: {f} is not commutative"
            if _whole(length(x), size * w) == Cst(0):
                return f"the array ({length(x)} elements) is shorter than one chunk ({size * w})"
            x, init = _tail_step(x, size * w, f, z, g)
        finish: Any = None
        if w == 1:
            elem_t = elem(x)
            step = lam([type_of(z), elem_t], lambda acc, e: FunCall(f, (acc, _apply(g, e))), ["acc", "e"])
            data = x
        elif ordered:  # an arg-min over positions in lanes (rewrites/argbest.py)
            if w not in WIDTHS:
                return f"width {w} is not one of {WIDTHS}"
            found_sel = vector_selection(f, z, g, x, w)
            if isinstance(found_sel, str):
                return f"width {w}: {found_sel}"
            data, elem_t, step, z_inner, finish = found_sel
        else:
            if w not in WIDTHS:
                return f"width {w} is not one of {WIDTHS}"
            form = vector_form(f, z, g, x)
            if isinstance(form, str):
                return f"width {w} {form}"
            uf, comps, arrays = form
            pairs = isinstance(type_of(z), TupleType)  # a tuple of sums: one vector accumulator per component
            vec = tuple(FunCall(AsVector(w), (a,)) for a in arrays)
            vt = tuple(VectorType(_scalar_elem(a), w) for a in arrays)
            data = FunCall(Zip(len(vec)), vec) if len(vec) > 1 else vec[0]
            elem_t = TupleType(vt) if len(vec) > 1 else vt[0]
            zt = type_of(z)
            acc_t = TupleType(tuple(VectorType(cast(ScalarType, t), w) for t in cast(TupleType, zt).elems)) \
                if pairs else VectorType(cast(ScalarType, zt), w)
            vf = Vectorise(eta(f), w)

            def body(acc: Any, e: Any) -> Any:
                args = tuple(FunCall(Get(i), (e,)) for i in range(len(vec))) if len(vec) > 1 else (e,)
                if comps is not None:  # (uf_0(..), .., uf_k-1(..)): each component vectorised
                    val = FunCall(MakeTuple(len(comps)), tuple(
                        FunCall(Vectorise(cf, w), tuple(args[i] for i in idx)) for cf, idx in comps))
                else:
                    val = FunCall(Vectorise(uf, w), args) if uf is not None else e
                return FunCall(vf, (acc, val))

            step = lam([acc_t, elem_t], body, ["acc", "e"])
            if pairs:
                zs = cast(FunCall, z).args
                z_inner = FunCall(MakeTuple(len(zs)), tuple(Literal(cast(Literal, a).value, t)
                                                            for a, t in zip(zs, cast(TupleType, acc_t).elems)))
                finish = tuple_lane_sum(cast(TupleType, zt), w)
            else:
                z_inner = Literal(z.value, acc_t)
        def per_chunk(c: Any) -> Any:
            if w == 1:
                return FunCall(ReduceSeq(step), (refresh(z), c))
            return FunCall(finish or lane_sum(type_of(z), w), (FunCall(ReduceSeq(step), (z_inner, c)),))

        combine = params.get("combine") or self.combine or "kernel"
        if combine not in COMBINES:
            return f"combine must be one of {', '.join(COMBINES)}, got {combine!r}"
        if combine == "atomic" and not atomic_ok(f, z):
            return f"{f} on {type_of(z)} has no atomic combine (add, mult, max_, min_ on Float or Int)"
        pad = params.get("pad")
        if (pad if pad is not None else self.pad) and init is z:
            data = _padded(data, size, f, z, g, x)
            if isinstance(data, str):
                return data
        chunk = lam([ArrayType(elem_t, size)], per_chunk, ["chunk"])
        partials = FunCall(Map(chunk, label=getattr(call.f, "label", None)), (FunCall(Split(size), (data,)),))
        final = ReduceAtomic if combine == "atomic" else Reduce
        return FunCall(final(f, label=call.f.label, loc=call.f.loc), (init, partials), loc=call.loc)


def _whole(n: Any, block: Any) -> Any:
    """`n - n % block`: the elements that whole blocks cover."""
    return n - n % block


def _scalar_elem(a: Expr) -> ScalarType:
    """The element type of `a`, an array of scalars (`zip_fun` found it so)."""
    t = elem(a)
    assert isinstance(t, ScalarType), t
    return t


def _tail_step(x: Any, block: Any, f: FunDecl, z: Any, g: FunDecl | None) -> tuple[Any, Any]:
    """`(main, tail)` for a length `n` that `block` may not divide: `main` the first
    m = n - n % block elements of the array(s) `x` (`take(m)`), `tail` the reduction of the rest
    (`reduce(f, z) << map(g) << pad(-m, 0)`), the initial value of the reduction of the chunks."""
    n = length(x)
    m = _whole(n, block)

    def each(a: Any, left: Any, right: Any) -> Any:
        if (zipped := match_shape(ZIP, a)) is not None:
            return FunCall(a.f, tuple(each(b, left, right) for b in zipped["xs"]))
        return FunCall(Pad(left, right, z.value if isinstance(z, Literal) else 0), (a,))

    rest: Any = each(x, -m, Cst(0))
    if g is not None:
        rest = FunCall(Map(refresh(g)), (rest,))
    return each(x, Cst(0), m - n), FunCall(Reduce(f), (refresh(z), rest))


def atomic_ok(f: FunDecl, z: Any) -> bool:
    """Whether `reduce_atomic(f, z)` can be generated (`lift.allocation.check_atomic`'s operator and type)."""
    t = type_of(z)
    op = operator(eta(f))
    return op is not None and op.commutative and isinstance(t, ScalarType) and t.name in ("Float", "Int")


def _padded(data: Any, block: Any, f: FunDecl, z: Any, g: FunDecl | None, x: Any) -> Any:
    """`data` (an array, as_vector of one, or a zip of them) padded at the end with `z` up to a
    multiple of `block` elements (vectors of as_vector's scalars), unless `block` provably divides its
    length; or why not."""
    total = length(data)
    if prove_divides(block, total):
        return data
    if not (isinstance(z, Literal) and is_monoid(f, z) and _neutral_image(g, z, x)):
        return f"the chunks may not divide the length {total} and padding with {z} is not neutral for {g}"

    def pad(a: Any) -> Any:
        if (vectors := match_shape(_AS_VECTOR, a)) is not None:  # pad the scalars, then view as vectors
            n = length(vectors["x"])
            return FunCall(a.f, (FunCall(Pad(Cst(0), _rest(n, block * vectors["k"]), z.value), (vectors["x"],)),))
        return FunCall(Pad(Cst(0), _rest(length(a), block), z.value), (a,))

    if (zipped := match_shape(ZIP, data)) is not None:
        return FunCall(data.f, tuple(pad(a) for a in zipped["xs"]))
    return pad(data)


def _rest(n: Any, block: Any) -> Any:
    """`(block - n % block) % block`: how many elements make `n` a multiple of `block`."""
    return (block - n % block) % block


def _neutral_image(g: FunDecl | None, z: Literal, x: Any) -> bool:
    """Whether `g` maps padding (`z` in every array of `x`) to `z`: then padded elements change nothing."""
    if g is None:
        return True
    found = zip_fun(g, x)
    if found is None:
        return False
    uf, arrays = found
    if uf is None or uf.py_fn is None:
        return False
    try:
        return bool(float(uf.py_fn(*([z.value] * len(arrays)))) == float(z.value))
    except Exception:  # noqa: BLE001 - a function the check cannot evaluate: do not pad
        return False


reduce_chunks = constructor(ReduceChunks, "reduce_chunks")

__all__ = ["ReduceChunks", "reduce_chunks", "reduce_parts", "safe_widths", "vector_form", "atomic_ok", "AUTO_WIDTHS",
           "COMBINES"]
