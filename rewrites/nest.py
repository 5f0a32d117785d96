"""The shared pieces of the nested map-reduce points (`block_nest`: rewrites/auto_nest.py, its
`"pad"` layout: rewrites/auto_conv.py, and the GPU tiles: rewrites/gpu_tiles.py): the parts of a
nest, its operands' shapes, the copies that change their layout, and the register blocks the
points build (`block`: vectors along the reduced dimension, `block_out`: along the output, with a
fused epilogue `fused_store`). Each builds IR only; what to build is the points' choice.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from lift.arith import Cst, as_arith, evaluate
from lift.ir import nodes as n
from lift.ir.build import elaborate
from lift.ir.nodes import FunCall, FunDecl, Lambda, Literal, Param, UserFun
from lift.ir.paths import walk
from lift.rules.reduce import is_monoid
from lift.rules.terms import eta, free_ids, lam, substitute
from lift.rules.vector import VECTOR_SCALARS
from lift.typecheck import type_of
from lift.types import ArrayType, ScalarType, TupleType, VectorType
from lift.userfun import user_fun
from lift.userfun.builtins import id as copy
from lift.userfun.ctypes import c_type
from lift.userfun.facts import operator

from .blocking import update
from .chunks import lane_sum, zip_fun
from .nested import nest_reduction
from .shapes import TRANSPOSE, match_shape


def nest_parts(call: Any) -> tuple[Lambda, Any, Any, Any, Any, Any] | str:
    """`(outer lambda, A, B, reduce call, f, user function g)` of a map-map-reduce nest, or why not."""
    found = nest_reduction(call)
    if isinstance(found, str):
        return found
    fa, a, _, b, r_call, xs = found
    f, z = r_call.f.f, r_call.args[0]
    if not is_monoid(f, z) or not isinstance(z, Literal):
        return f"{f} is not a known associative operator with a constant neutral {z}"
    g = r_call.args[1].f.f if r_call.args[1] is not xs else None
    found_g = zip_fun(g, xs)
    if found_g is None or not isinstance(found_g[0], UserFun) or len(found_g[0].in_types) != 2:
        return "the reduced elements are not a scalar user function of the pair (map(g) << zip(ra, rb))"
    return fa, a, b, r_call, f, found_g[0]


def array_of(t: Any) -> ArrayType:
    """`t` as an array type (the operands of a nest that `nest_parts` accepted are arrays of rows)."""
    if not isinstance(t, ArrayType):
        raise AssertionError(f"block_nest: expected an array, got {t}")
    return t


def rows_of(x: Any) -> tuple[Any, Any] | None:
    """`(K, N)` for an array of rows `[[T]K]N` of scalars, else None."""
    t = type_of(x)
    if isinstance(t, ArrayType) and isinstance(t.elem, ArrayType) and t.elem.elem in VECTOR_SCALARS:
        return t.elem.size, t.size
    return None


def known_size(size: Any, known: Mapping[str, int]) -> int | None:
    """`size` as an int given the `known` sizes, or None."""
    try:
        return int(evaluate(as_arith(size), dict(known)))
    except Exception:  # noqa: BLE001 - symbolic
        return None


def divides(k: int, size: Any, known: Mapping[str, int]) -> bool:
    """False only when `size` (evaluated with the `known` input sizes) is a constant that `k` does
    not divide (a symbolic size becomes a size condition of the program, checked when called)."""
    v = known_size(size, known) if k != 1 else None
    return v is None or v % k == 0


def copied(x: Any) -> Any:
    """`transpose << y` materialised in its own kernel (contiguous rows), else `x` itself."""
    columns = match_shape(TRANSPOSE, x)
    if columns is None:
        return x
    inner = array_of(type_of(columns["x"]))
    q = Param(inner, "t")
    cols = inner.size  # the length of a row of the transposed array
    flat = FunCall(n.Join(), (FunCall(n.Transpose(), (q,)),))
    ident = elaborate(copy, [array_of(inner.elem).elem])
    body = FunCall(n.Split(cols), (FunCall(n.Map(n.ToGlobal(ident)), (flat,)),))
    return FunCall(n.OclKernel(Lambda((q,), body)), (columns["x"],))


def gathered(x: Any) -> Any:
    """`x` (an array of rows) materialised in its own kernel when it is a view of something (conv's
    windows: im2col), else `x` itself."""
    if isinstance(x, Param):
        return x
    t = array_of(type_of(x))
    q = Param(t, "v")
    rows = FunCall(n.Map(n.Map(n.ToGlobal(elaborate(copy, [array_of(t.elem).elem])))), (q,))
    return FunCall(n.OclKernel(Lambda((q,), rows)), (x,))


def block(rows_a: Param, rows_b: Param, f: FunDecl, g: UserFun, z: Literal, bm: int, bn: int, w: int) -> Any:
    """The BM x BN outputs of `rows_a` x `rows_b` in a private accumulator (see the module)."""
    s_t = g.out_type if operator(eta(f)) is None else cast(Any, eta(f)).in_types[0]

    def vec(x: Param) -> Any:
        rows = x if w == 1 else FunCall(n.Map(n.AsVector(w)), (x,))
        return FunCall(n.Transpose(), (rows,))

    lane = VectorType(cast(ScalarType, s_t), w) if w > 1 else s_t
    ta, tb = (VectorType(t.elem.elem, w) if w > 1 else t.elem.elem for t in cast(Any, (rows_a.ptype, rows_b.ptype)))
    acc_t = ArrayType(ArrayType(lane, Cst(bn)), Cst(bm))
    pair_t = TupleType((ArrayType(ta, Cst(bm)), ArrayType(tb, Cst(bn))))

    def step(acc: Param, ab: Param) -> Any:
        def per_row(ra: Param) -> Any:
            def per_col(c: Param) -> Any:
                return update(f, g, w, FunCall(n.Get(0), (c,)), FunCall(n.Get(1), (ra,)), FunCall(n.Get(1), (c,)))

            cols = FunCall(n.Zip(2), (FunCall(n.Get(0), (ra,)), FunCall(n.Get(1), (ab,))))
            return FunCall(n.MapSeq(lam([TupleType((lane, tb))], per_col, ["c"])), (cols,))

        rows = FunCall(n.Zip(2), (acc, FunCall(n.Get(0), (ab,))))
        return FunCall(n.MapSeq(lam([TupleType((ArrayType(lane, Cst(bn)), ta))], per_row, ["ra"])), (rows,))

    op = lam([acc_t, pair_t], step, ["acc", "ab"])
    init = Literal(z.value, acc_t)
    acc = FunCall(n.ReduceSeq(op), (init, FunCall(n.Zip(2), (vec(rows_a), vec(rows_b)))))
    post = lane_sum(s_t, w) if w > 1 else elaborate(copy, [s_t])
    return FunCall(n.ToGlobal(n.MapSeq(n.MapSeq(post))), (acc,))


def own_kernel(body: Any, params: tuple[Param, ...] = (), args: tuple[Any, ...] = ()) -> FunCall:
    """`ocl_kernel((params, ..) => body) << (args, ..)`, the parameters `body` uses free besides
    `params` passed as further arguments (in order of their ids)."""
    found: dict[int, Param] = {}
    free = free_ids(body) - {p.id for p in params}
    for _, m in walk(body):
        if isinstance(m, Param) and m.id in free:
            found.setdefault(m.id, m)
    outer = sorted(found.values(), key=lambda m: m.id)
    inner = tuple(Param(m.ptype, m.name) for m in outer)
    body = substitute(body, {m.id: q for m, q in zip(outer, inner)})
    return FunCall(n.OclKernel(Lambda((*params, *inner), body)), (*args, *outer))


@functools.cache
def broadcast(t: Any, w: int) -> UserFun:
    """`a => <a, .., a>`: a scalar in all `w` lanes of a vector."""
    return user_fun.c(f"bcast{w}_{c_type(t)}", ["a"], f"return ({c_type(VectorType(t, w))})(a);", [t],
                      VectorType(t, w), py=lambda a: np.full(w, a, dtype=np.asarray(a).dtype))


def block_out(a_cols: Any, cols_x: Param, f: FunDecl, g: UserFun, z: Literal, sizes: tuple[int, int, int],
              epi: BlockEpilogue | None = None) -> Any:
    """BM rows of A read step by step (`a_cols`: [[T]BM]K, `transpose` of the rows or a packed
    panel) times BN * W columns of X ([[U]BN*W]K, rows contiguous): a private [[<S>W]BN]BM
    accumulator along the output dimension, A's scalars broadcast into W lanes; stored as they are, or
    through the epilogue `epi` (`fused_store`)."""
    bm, bn, w = sizes
    t, u = cast(Any, type_of(a_cols)).elem.elem, cast(Any, cols_x.ptype).elem.elem
    s_t = cast(Any, eta(f)).in_types[0]
    lane, ub = VectorType(s_t, w), ArrayType(VectorType(u, w), Cst(bn))
    acc_t = ArrayType(ArrayType(lane, Cst(bn)), Cst(bm))
    spread = broadcast(t, w)

    def step(acc: Param, ab: Param) -> Any:
        def per_row(ra: Param) -> Any:
            a = FunCall(spread, (FunCall(n.Get(1), (ra,)),))

            def per_col(c: Param) -> Any:
                return update(f, g, w, FunCall(n.Get(0), (c,)), a, FunCall(n.Get(1), (c,)))

            cols = FunCall(n.Zip(2), (FunCall(n.Get(0), (ra,)), FunCall(n.Get(1), (ab,))))
            return FunCall(n.MapSeq(lam([TupleType((lane, VectorType(u, w)))], per_col, ["c"])), (cols,))

        rows = FunCall(n.Zip(2), (acc, FunCall(n.Get(0), (ab,))))
        return FunCall(n.MapSeq(lam([TupleType((ArrayType(lane, Cst(bn)), t))], per_row, ["ra"])), (rows,))

    op = lam([acc_t, TupleType((ArrayType(t, Cst(bm)), ub))], step, ["acc", "ab"])
    xs = FunCall(n.Zip(2), (a_cols, FunCall(n.Map(n.AsVector(w)), (cols_x,))))
    acc = FunCall(n.ReduceSeq(op), (Literal(z.value, acc_t), xs))
    if epi is None:
        out = FunCall(n.ToGlobal(n.MapSeq(n.MapSeq(n.Vectorise(elaborate(copy, [s_t]), w)))), (acc,))
    else:
        out = fused_store(acc, epi, w)
    return FunCall(n.Map(n.AsScalar()), (out,))  # vector stores, read back as scalars


@dataclass(frozen=True)
class NestBlocks:
    """What the register blocks of a map-map-reduce nest (`nest_parts`) are built from: the nest's
    `call` (the blocks' outer map keeps its label and location), its reduce call `r_call` (whose
    neutral element the accumulators start from), the reduction `f`, the user function `g` of the
    pair, and the block `sizes` (rows, cols, width)."""

    call: Any
    r_call: Any
    f: FunDecl
    g: UserFun
    sizes: tuple[int, int, int]


@dataclass(frozen=True)
class BlockEpilogue:
    """An epilogue (`Fusable`) at one register block: per leaf its kind, its value (a scalar's
    expression), its part of the block's rows (`rows`: [BM] scalars for "row", [BM][BN*W] for
    "both", else None) and of its columns (`cols`: [BN*W] for "col", else None)."""

    fun: Lambda
    kinds: tuple[str, ...]
    values: tuple[Any, ...]
    rows: tuple[Any, ...]
    cols: tuple[Any, ...]


def fused_store(acc: Any, epi: BlockEpilogue, w: int) -> Any:
    """`epi.fun` applied lane-wise to the block's accumulators ([[<S>W]BN]BM) and the leaves, the
    results stored to global memory: one pass over the output, no temporary. The accumulators'
    rows are zipped with the leaves read by row, each row's vectors with the leaves read by
    column; scalars (a leaf's, or a row's) are broadcast into the W lanes."""
    rows, at_row = [acc], {}  # leaf -> its place in a row's tuple
    for j, kind in enumerate(epi.kinds):
        if kind in ("both", "row"):
            at_row[j] = len(rows)
            rows.append(FunCall(n.Map(n.AsVector(w)), (epi.rows[j],)) if kind == "both" else epi.rows[j])

    def per_row(ra: Param) -> Any:
        of_row = _component(ra, len(rows))
        cols, at_col = [of_row(0)], {}  # leaf -> its place in a column's tuple
        for j, kind in enumerate(epi.kinds):
            if kind in ("both", "col"):
                at_col[j] = len(cols)
                cols.append(of_row(at_row[j]) if kind == "both" else FunCall(n.AsVector(w), (epi.cols[j],)))

        def per_col(rc: Param) -> Any:
            of_col = _component(rc, len(cols))
            args = [of_col(0)]
            for j, kind in enumerate(epi.kinds):
                if kind in ("both", "col"):
                    args.append(of_col(at_col[j]))
                else:
                    v = epi.values[j] if kind == "scalar" else of_row(at_row[j])
                    args.append(FunCall(broadcast(type_of(v), w), (v,)))
            return FunCall(n.Vectorise(epi.fun, w), tuple(args))

        return FunCall(n.MapSeq(lam([_elem_of(cols)], per_col, ["rc"])), (_zipped(cols),))

    return FunCall(n.ToGlobal(n.MapSeq(lam([_elem_of(rows)], per_row, ["ra"]))), (_zipped(rows),))


def _zipped(arrays: list[Any]) -> Any:
    """`zip(arrays..)`, or the one array."""
    return FunCall(n.Zip(len(arrays)), tuple(arrays)) if len(arrays) > 1 else arrays[0]


def _elem_of(arrays: list[Any]) -> Any:
    """The element type of `_zipped(arrays)`."""
    elems = tuple(array_of(type_of(x)).elem for x in arrays)
    return TupleType(elems) if len(elems) > 1 else elems[0]


def _component(p: Param, count: int) -> Any:
    """`i => get(i) << p` for an element of `count` zipped arrays (`p` itself for one)."""
    return (lambda i: FunCall(n.Get(i), (p,))) if count > 1 else (lambda i: p)


__all__ = ["nest_parts", "array_of", "rows_of", "known_size", "divides", "copied", "gathered", "block", "own_kernel",
           "broadcast", "block_out", "BlockEpilogue", "fused_store"]
