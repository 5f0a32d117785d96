"""Arg-min and arg-max over positions in vector lanes: the `reduce_chunks` point's vector width for
an arg-min/arg-max step (`lift.userfun.facts.selection`).

    reduce(f, z) << zip(.., iota(n), .., x, ..)     f keeps its accumulator unless the element's
                                                     key (a component of x) is strictly better

Each chunk is read as vectors of `w` elements (`as_vector(w)` of every zipped array, the positions
`iota` included): lane `l` folds elements `l, l + w, ..` with the step lane by lane (`lane_step`: a
mask of the strictly better keys picks every component, what `f` computes in each lane), then the
lanes are combined into the chunk's first best (`lane_best`: the better key, on equal keys the
smaller position). Lane `l`'s result is the first best of its elements, so the chunk's first best is
the lane result with the best key and, among equal keys, the smallest position: the position
component makes the lane order irrelevant. A lane that selected nothing holds `z`, whose key no
selected element equals (an element replaces `z` only with a strictly better key) and no key is
NaN (`folds_in_order` asks that of `z`; a NaN element is never selected), so the comparison is a
total order on what the lanes hold. The chunks' results are folded in order by `f` as before.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from lift.ir.nodes import AsVector, FunCall, Literal, MakeTuple, Zip
from lift.rules.terms import eta, lam
from lift.typecheck import type_of
from lift.types import Float, Int, ScalarType, TupleType, Type, VectorType
from lift.userfun import user_fun
from lift.userfun.ctypes import c_type
from lift.userfun.facts import Selection, selection

from .shapes import IOTA, TUPLE, ZIP, match_shape

Found = tuple[Any, ...]  # (data, element type, step, initial value, lane combine)


def vector_selection(f: Any, z: Any, g: Any, x: Any, w: int) -> Found | str:
    """The chunk pieces of `reduce(f, z) << x` in `w` lanes (the module), or why not."""
    sel = selection(eta(f))
    if sel is None or g is not None:
        return f"{f} is no arg-min/arg-max step of the zipped elements"
    if match_shape(ZIP, x) is None:
        return "expects the elements zipped with their positions, zip(.., iota(n), ..)"
    pos = next((i for i, a in enumerate(x.args) if match_shape(IOTA, a) is not None), None)
    t = type_of(z)
    if pos is None or pos == sel.key:
        return "expects one zipped array to be the positions iota(n), another the key"
    if not (isinstance(t, TupleType) and all(e in (Float, Int) for e in t.elems)):
        return f"the lanes take 32-bit Float and Int components, got {t}"
    if (z_tuple := match_shape(TUPLE, z)) is None or not all(isinstance(a, Literal) for a in z_tuple["xs"]):
        return f"the initial value {z} is not a tuple of literals"
    vt = _vectors(t, w)
    data = FunCall(Zip(len(x.args)), tuple(FunCall(AsVector(w), (a,)) for a in x.args))
    step = lam([vt, vt], lambda acc, e: FunCall(lane_step(t, sel, w), (acc, e)), ["acc", "e"])
    lits = [a for a in z.args if isinstance(a, Literal)]  # all of them (checked above)
    init = FunCall(MakeTuple(len(z.args)), tuple(Literal(a.value, VectorType(_scalar(a.ltype), w)) for a in lits))
    return data, vt, step, init, lane_best(t, sel, pos, w)


def _vectors(t: TupleType, w: int) -> TupleType:
    """The tuple of `w`-lane vectors of `t`'s scalar components (the lanes' accumulator)."""
    return TupleType(tuple(VectorType(_scalar(e), w) for e in t.elems))


def _scalar(t: Type) -> ScalarType:
    """`t` as a scalar type (the lanes take Float and Int components)."""
    if not isinstance(t, ScalarType):
        raise AssertionError(f"argbest: expected a scalar, got {t}")
    return t


def _better(sel: Selection) -> str:
    return "<" if sel.least else ">"


@functools.cache
def lane_step(t: TupleType, sel: Selection, w: int) -> Any:
    """`(acc, e) => e` in the lanes where `e`'s key is strictly better, else `acc` (lane by lane)."""
    vt = _vectors(t, w)
    k, op = sel.key, _better(sel)
    lines = [f"{c_type(VectorType(Int, w))} m = e._{k} {op} acc._{k};", f"{c_type(vt)} r;"]
    lines += [f"r._{i} = m ? e._{i} : acc._{i};" for i in range(len(t.elems))]

    def py(acc: Any, e: Any) -> Any:
        m = (np.asarray(e[k]) < np.asarray(acc[k])) if sel.least else (np.asarray(e[k]) > np.asarray(acc[k]))
        return tuple(np.where(m, e[i], acc[i]).astype(np.asarray(acc[i]).dtype) for i in range(len(t.elems)))

    name = f"lane_{'min' if sel.least else 'max'}{k}_{c_type(vt)}"
    return user_fun.c(name, ["acc", "e"], "\n".join(lines + ["return r;"]), [vt, vt], vt, py=py)


@functools.cache
def lane_best(t: TupleType, sel: Selection, pos: int, w: int) -> Any:
    """The lanes combined: the best key, on equal keys the smaller position (the module)."""
    vt = _vectors(t, w)
    k, op, n = sel.key, _better(sel), len(t.elems)
    lines = [f"{c_type(t)} r;"] + [f"r._{i} = v._{i}.s0;" for i in range(n)]
    for lane in range(1, w):
        s = f"s{lane:X}"
        take = " ".join(f"r._{i} = v._{i}.{s};" for i in range(n))
        lines.append(f"if (v._{k}.{s} {op} r._{k} || (v._{k}.{s} == r._{k} && v._{pos}.{s} < r._{pos})) {{ {take} }}")

    def py(v: Any) -> Any:
        best = 0
        for lane in range(1, w):
            key, cur = v[k][lane], v[k][best]
            if (key < cur if sel.least else key > cur) or (key == cur and v[pos][lane] < v[pos][best]):
                best = lane
        return tuple(np.asarray(v[i][best]).item() for i in range(n))

    name = f"lane_{'argmin' if sel.least else 'argmax'}{k}_{pos}_{c_type(vt)}"
    return user_fun.c(name, ["v"], "\n".join(lines + ["return r;"]), [vt], t, py=py)


__all__ = ["vector_selection", "lane_step", "lane_best"]
