"""An access `T(e1, ..., er)` as a view of `T` whose dimensions follow the statement's loop order.

Each subscript is affine (`ranges.Affine`); the view is built from LIFT's patterns only:

    A(i, k)          A itself                         dims [i, k]
    B(k, n)          transpose << B                   dims [n, k]   (loop order m, n, k)
    I(h + kh)        slide(KH, 1) << I                dims [h, kh]
    I(2 * i + kw)    slide(2, 2) << I                 dims [i, kw]  (kw in 0:2)
    X(i + 1)         map(w => w[1]) << slide(2, 1)    dims [i]
    X(3, i)          X[3]                             dims [i]
    X(I(i, k), j)    map(r => gather(X, r)) << I      dims [i, k, j]  (a gather: `Indexed`)

so a statement's maps walk the same views a hand-written lambda would (`slide`, `transpose`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from lift.arith import Arith, Cst, as_arith
from lift.comprehension.ranges import SUPPORTED, Affine, tc_error
from lift.comprehension.syntax import Pos
from lift.errors import LiftTypeError, UnsupportedError
from lift.gather import gather
from lift.ir.nodes import Expr
from lift.ir.patterns import map, slide, take, transpose
from lift.types import ArrayType, Int, base_type


@dataclass(frozen=True, slots=True)
class View:
    """An expression whose dimensions are indexed by the loop variables `dims`, outermost first."""

    expr: Expr
    dims: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Indexed:
    """A data-dependent subscript: the elements of an int tensor's view (`I(i, k)`) index the
    dimension (a gather); its dimensions take the subscript's place."""

    view: View
    pos: Pos


def _gathered(x: Expr, d: int, ix: Indexed) -> Expr:
    """Dimension `d` of `x` read at the indices of `ix`: `map^(r-1)(row => gather(t, row)) << I`
    below `d` dimensions, `r` the rank of the index view."""
    idx, r = ix.view.expr, len(ix.view.dims)
    if r == 0:
        raise tc_error(UnsupportedError, "a data-dependent subscript whose index tensor is read at no index "
                       "variable", ix.pos, hint="supported: " + SUPPORTED)
    if base_type(idx.type) != Int:
        raise tc_error(LiftTypeError, f"a data-dependent subscript needs an int tensor, got {base_type(idx.type)}",
                       ix.pos)

    def table(t: Any) -> Expr:
        g: Any = gather(t)
        for _ in builtins.range(r - 1):
            g = map(g)
        return g(idx) if r == 1 else g << idx

    return at_depth(d, table, x)


def at_depth(d: int, f: Callable[[Any], Any], x: Expr) -> Expr:
    """`f` applied below `d` dimensions of `x`: `map^d(f) << x`."""
    if d == 0:
        return f(x)
    g: Any = f
    for _ in builtins.range(d - 1):
        g = map(g)
    return map(g) << x


def _pick(c: Arith) -> Callable[[Any], Any]:
    return lambda w: w[c]


def _single(x: Expr, d: int, a: int, c: Arith) -> Expr:
    """Dimension `d` of `x` indexed by `a * v + c`: a view whose dimension `d` is indexed by `v`."""
    if a == 1 and c == Cst(0):
        return x
    x = at_depth(d, slide(as_arith(c + 1), a), x)
    return at_depth(d + 1, _pick(c), x)


def view(x: Expr, subscripts: Sequence[Affine | Indexed], order: Sequence[str], extents: Mapping[str, Arith],
         pos: Pos) -> View:
    """`x` accessed with `subscripts`, as a `View` whose dims follow `order` (the loop order)."""
    rank = {v: k for k, v in enumerate(order)}
    dims: list[str] = []
    d = 0
    for aff in subscripts:
        if isinstance(aff, Indexed):
            x = _gathered(x, d, aff)
            dims += aff.view.dims
            d += len(aff.view.dims)
            continue
        vs = sorted(aff.vars, key=rank.__getitem__)
        if any(aff.coeff(v) <= 0 for v in vs):
            raise tc_error(UnsupportedError, "a subscript has a non-positive coefficient", pos,
                           hint="supported: " + SUPPORTED)
        if not vs:
            x = at_depth(d, _pick(aff.const), x)
        elif len(vs) == 1:
            x = _single(x, d, aff.coeff(vs[0]), aff.const)
            dims.append(vs[0])
            d += 1
        elif len(vs) == 2:
            u, w = vs
            a, b = aff.coeff(u), aff.coeff(w)
            size = as_arith(b * (extents[w] - 1) + aff.const + 1)
            x = at_depth(d, slide(size, a), x)
            x = _single(x, d + 1, b, aff.const)
            dims += [u, w]
            d += 2
        else:
            raise tc_error(UnsupportedError, f"a subscript uses {len(vs)} index variables "
                           f"({', '.join(vs)})", pos, hint="supported: " + SUPPORTED)
    if len(set(dims)) != len(dims):
        raise tc_error(UnsupportedError, "an index variable indexes two dimensions of one access "
                       "(a diagonal)", pos, hint="supported: " + SUPPORTED)
    return _fitted(_ordered(x, dims, rank), extents)


def _fitted(v: View, extents: Mapping[str, Arith]) -> View:
    """Each dimension cut to its variable's range where the access allows more (`take`): the
    range is the intersection over every access, so zipped views have equal lengths."""
    x = v.expr
    for d, var in enumerate(v.dims):
        t = x.type
        for _ in builtins.range(d):
            t = cast(ArrayType, t).elem
        assert isinstance(t, ArrayType)
        if as_arith(t.size) != as_arith(extents[var]):
            x = at_depth(d, take(extents[var]), x)
    return View(x, v.dims)


def _ordered(x: Expr, dims: list[str], rank: Mapping[str, int]) -> View:
    """Bubble the dimensions into loop order with `map^j(transpose)` swaps."""
    dims = list(dims)
    for end in builtins.range(len(dims) - 1, 0, -1):
        for j in builtins.range(end):
            if rank[dims[j]] > rank[dims[j + 1]]:
                x = at_depth(j, transpose, x)
                dims[j], dims[j + 1] = dims[j + 1], dims[j]
    return View(x, tuple(dims))
