"""An instance of the left-hand side of every rule, for property tests (`lift.testing`).

`BUILDERS[name](draw, a, b)` builds, from two input arrays `a` and `b` of the same type,
an expression containing the left-hand side of the rule `name`, with random functions,
operators and sizes (hypothesis `draw`). Imported by `lift.testing` only: it needs hypothesis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from lift.arith.ops import as_int
from lift.ir.nodes import Expr
from lift.ir.patterns import (
    as_scalar,
    as_vector,
    join,
    let,
    map,
    pad,
    reduce,
    slide,
    split,
    transpose,
    vectorise,
)
from lift.rules.terms import elem, length
from lift.testing import (
    BINARY,
    Draw,
    divisors,
    element_fun,
    folds,
    monoids,
    prefix_1d,
    prefix_2d,
    unary_funs,
    zipped,
)
from lift.types import ArrayType

Builder = Callable[[Draw, Expr, Expr], Expr]


def _s(e: Expr) -> Any:
    t = e.type
    while hasattr(t, "elem"):
        t = t.elem
    return t


def _n(e: Expr) -> int:
    return as_int(length(e))


def _even(e: Expr) -> Expr:
    return e if _n(e) % 2 == 0 else pad(0, 1, 0) << e


def _one_d(draw: Draw, a: Expr, b: Expr) -> tuple[Expr, Expr]:
    x = prefix_1d(draw, a, b)
    return x, map(draw(unary_funs(_s(x)))) << x


def _any_map(draw: Draw, a: Expr, b: Expr) -> Expr:
    """`map(f) << x` over a 1-D or a 2-D array."""
    x = draw(st.sampled_from((prefix_1d, prefix_2d)))(draw, a, b)
    return map(element_fun(draw, x.type.elem)) << x


def _split_join_id(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = prefix_2d(draw, a, b)
    row = elem(x)
    assert isinstance(row, ArrayType), row  # prefix_2d: a 2-D array
    return split(row.size) << join << x


def _join_split_id(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = prefix_1d(draw, a, b)
    return join << split(draw(st.sampled_from(divisors(_n(x))))) << x


def _slide_tiling(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = prefix_1d(draw, a, b)
    size = draw(st.integers(1, min(3, _n(x))))
    return slide(size, draw(st.integers(1, 2))) << x


def _map_fusion(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = draw(st.sampled_from((prefix_1d, prefix_2d)))(draw, a, b)
    t = x.type.elem
    if hasattr(t, "elem"):
        inner = map(map(draw(unary_funs(_s(x))))) << x
        return map(element_fun(draw, t)) << inner
    return map(element_fun(draw, t)) << map(element_fun(draw, t)) << x


def _map_fission(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = draw(st.sampled_from((prefix_1d, prefix_2d)))(draw, a, b)
    s = _s(x)
    f, g = draw(unary_funs(s)), draw(unary_funs(s))
    if hasattr(x.type.elem, "elem"):
        op, z = draw(folds(s))
        return map(lambda r: reduce(op, z) << map(g) << r) << x
    op = draw(st.sampled_from(BINARY))
    return map(draw(st.sampled_from((lambda v: f(g(v)), lambda v: op(g(v), f(v)))))) << x


def _reduce_of_map(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = prefix_1d(draw, a, b)
    op, z = draw(folds(_s(x)))
    return reduce(op, z) << map(draw(unary_funs(_s(x)))) << x


def _zip_map_fusion(draw: Draw, a: Expr, b: Expr) -> Expr:
    x, y = _one_d(draw, a, b)
    f = draw(unary_funs(_s(x)))
    left, right = map(f) << x, draw(st.sampled_from((y, map(f) << y)))
    return zipped(*draw(st.permutations((left, right))))


def _reduce(draw: Draw, a: Expr, b: Expr, *, assoc: bool) -> Expr:
    x = prefix_1d(draw, a, b)
    op, z = draw(monoids(_s(x)) if assoc else folds(_s(x)))
    return reduce(op, z) << x


def _reduce_join(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = prefix_2d(draw, a, b)
    op, z = draw(monoids(_s(x)))
    return reduce(op, z) << join << x


def _map_map_interchange(draw: Draw, a: Expr, b: Expr) -> Expr:
    x, y = _one_d(draw, a, b)
    op = draw(st.sampled_from(BINARY))
    ys = draw(st.sampled_from((y, x)))
    return map(lambda u: map(lambda v: op(u, v)) << ys) << x


def _map_map(draw: Draw, a: Expr, b: Expr) -> Expr:
    return map(map(draw(unary_funs(_s(a))))) << prefix_2d(draw, a, b)


def _map_reduce(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = prefix_2d(draw, a, b)
    op, z = draw(folds(_s(x)))
    return map(lambda r: reduce(op, z) << r) << x


def _transposes(draw: Draw, a: Expr, b: Expr) -> Expr:
    return transpose << transpose << prefix_2d(draw, a, b)


def _vectorise(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = _even(prefix_1d(draw, a, b))
    return map(element_fun(draw, _s(x))) << x


def _vector_ids(draw: Draw, a: Expr, b: Expr, *, scalar_first: bool) -> Expr:
    x = _even(prefix_1d(draw, a, b))
    k = draw(st.sampled_from([w for w in (2, 4) if _n(x) % w == 0]))
    if scalar_first:
        return as_scalar << as_vector(k) << x
    vecs = map(vectorise(draw(unary_funs(_s(x))), k)) << as_vector(k) << x
    return as_scalar << as_vector(k) << as_scalar << vecs


def _memory(draw: Draw, a: Expr, b: Expr) -> Expr:
    if draw(st.booleans()):
        return _any_map(draw, a, b)
    return _reduce(draw, a, b, assoc=False)


def _partial_reduce_join(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = prefix_2d(draw, a, b)
    op, z = draw(monoids(_s(x)))
    return reduce(op, z) << map(lambda c: reduce(op, z) << c) << x


def _eta_expand(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = prefix_2d(draw, a, b)
    f = draw(unary_funs(_s(x)))
    return map(draw(st.sampled_from((map(f), map(f) << map(f))))) << x


def _chain(draw: Draw, a: Expr, b: Expr) -> Expr:
    x = prefix_1d(draw, a, b)
    return map(draw(unary_funs(_s(x)))) << map(draw(unary_funs(_s(x)))) << x


def _let_inline(draw: Draw, a: Expr, b: Expr) -> Expr:
    x, y = _one_d(draw, a, b)
    op = draw(st.sampled_from(BINARY))
    body = draw(st.sampled_from((
        lambda v: map(lambda p: op(p[0], p[1])) << zipped(v, v),
        lambda v: map(draw(unary_funs(_s(x)))) << v,
    )))
    return let(body) << y


BUILDERS: dict[str, Builder] = {
    "split_join": _any_map,
    "join_split_id": _join_split_id,
    "split_join_id": _split_join_id,
    "slide_tiling": _slide_tiling,
    "map_fusion": _map_fusion,
    "map_row_fusion": _map_fusion,
    "map_fission": _map_fission,
    "reduce_map_fusion": _reduce_of_map,
    "zip_map_fusion": _zip_map_fusion,
    "partial_reduce": lambda draw, a, b: _reduce(draw, a, b, assoc=True),
    "partial_reduce_split_join": _reduce_join,
    "map_map_interchange": _map_map_interchange,
    "transpose_both_sides": _map_map,
    "map_reduce_interchange": _map_reduce,
    "transpose_transpose_id": _transposes,
    "vectorise": _vectorise,
    "as_vector_as_scalar_id": lambda draw, a, b: _vector_ids(draw, a, b, scalar_first=False),
    "as_scalar_as_vector_id": lambda draw, a, b: _vector_ids(draw, a, b, scalar_first=True),
    "map_to_glb": _any_map,
    "map_to_wrg": _any_map,
    "map_to_lcl": _any_map,
    "map_to_seq": _any_map,
    "reduce_to_seq": lambda draw, a, b: _reduce(draw, a, b, assoc=False),
    "to_private_memory": _memory,
    "to_local_memory": _memory,
    "to_global_memory": _memory,
    "add_copy": _any_map,
    "let_intro": _chain,
    "let_inline": _let_inline,
    "eta_expand": _eta_expand,
    "ocl_kernel_intro": _chain,
    "partial_reduce_join": _partial_reduce_join,
}
