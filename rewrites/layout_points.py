"""Layout rewrite points: `interchange_maps` (thesis 6.2.5.7, Listing 6.12), `optimise_data_layout`
(6.2.5.6, Listing 6.11, any n) and `pad_extra_nd` (6.2.5.10, Listing 6.15, any k).

    interchange_maps(map(a => map(b => f(a, b)) << B)) << A
        ->  transpose_w << nested(map(b => map(a => f(a, b)) << A)) << B        (f concrete)
    optimise_data_layout(v => f << g << v) << x                                  (g : T => [..]M, concrete)
        ->  f << split_nd(M) << join_nd(n+1) << transpose_nd(order^-1) << transpose_w_nd(order)
              << split_nd(F1, .., Fn) << join_nd << g << x
    pad_extra_nd(f, k) << x                                                      (f : [T]N => [U]M)
        ->  map_nd(k-1, take(M_k)) ..  take(M_1) << f << pad_nd(k, 0, P) << x    (f depaddable)

`interchange_maps` has no parameters; `optimise_data_layout(.., n)` has the structural parameter
`order` (a permutation of the n+1 dimensions of the reordered write; the identity keeps it) and
the tuning parameters `F_label` (n = 1) or `F1_label` .. `Fn_label` (the reordering factors);
`pad_extra_nd` has the tuning parameters `P_label` (`P0_label` .. `Pk-1_label` for k > 1): zeros appended to each padded
dimension so that more tile sizes divide it. A depaddable `f` is a chain of `map(..)`, `join`,
`split` and `slide` over its argument (restrictions 3 and 4 of 6.2.5.10), applied to the
argument directly: the padding stays at the right edge and is cut off by `take`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, ClassVar, cast

from lift.ir import nodes as n
from lift.ir import patterns as p
from lift.ir.nodes import FunCall, FunDecl, Lambda, Param, node
from lift.ir.registry import has
from lift.lower import computes
from lift.rules.terms import call as apply_fun
from lift.rules.terms import eta, mentions, substitute
from lift.typecheck import type_of
from lift.types import ArrayType, shape

from .memory_points import copy_into
from .point import Nested, RewritePoint, constructor, tuning_var
from .tiling import map_call


@node
class InterchangeMaps(RewritePoint):
    """`interchange_maps(map(a => map(b => f(a, b)) << B))`: swap the loops over A and B (Listing 6.12)."""

    f: FunDecl
    kind: ClassVar[str] = "interchange_maps"
    places_nested: ClassVar[bool] = True

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        outer = map_call(call)
        fa = eta(outer[0]) if not isinstance(outer, str) else None
        if isinstance(outer, str) or not (isinstance(fa, Lambda) and len(fa.params) == 1):
            return f"expects map(a => map(f) << B) << A, got {call}"
        inner = map_call(fa.body)
        if isinstance(inner, str):
            return f"expects map(a => map(f) << B) << A; the outer map's body is {fa.body}"
        g, b = inner
        if mentions(b, fa.params):
            return "the inner array depends on the outer element: the maps are not over independent arrays"
        if not computes(g):
            return "the inner function does not compute (transpose_w needs a concrete write)"
        a = outer[1]
        eb = Param(cast(Any, type_of(b)).elem, "b")
        ea = Param(cast(Any, type_of(a)).elem, fa.params[0].name)

        body_a = substitute(apply_fun(g, [eb]), {fa.params[0].id: ea})
        swapped = FunCall(nested(n.Map(Lambda((eb,), FunCall(n.Map(Lambda((ea,), body_a)), (a,))),
                                       label=call.f.label, loc=call.f.loc)), (b,))
        return p.transpose_w << swapped


@node
class OptimiseDataLayout(RewritePoint):
    """`optimise_data_layout(v => f << g << v, n=1, order=None, factor=None)`: reorder the write of g
    and the read of f (Listing 6.11): g's result, flattened, is split into n+1 dimensions by the
    factors and written in the dimension order `order`; f reads it back in the original order."""

    f: FunDecl
    order: Any = None
    factor: Any = None
    n: int = 1
    kind: ClassVar[str] = "optimise_data_layout"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        if self.order is not None:
            return {}
        k = int(self.n) + 1 if isinstance(self.n, int) and self.n >= 1 else 2
        perms = sorted(itertools.permutations(range(k)), key=lambda o: o == tuple(range(k)))
        return {"order": tuple(perms)}  # the identity (no reordering) last

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        if not isinstance(call, FunCall):
            return f"expects f << g << x, got {call}"
        hits = [i for i, a in enumerate(call.args) if isinstance(a, FunCall) and computes(a)]
        if len(hits) != 1 or not computes(call.f):
            return "expects a computing f applied to the result of a computing g (f << g << x)"
        g_call = call.args[hits[0]]
        dims = shape(type_of(g_call))
        if not dims:
            return f"the result of g is not an array ({type_of(g_call)})"
        k = self.n
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            return f"n must be a positive number of reordering factors, got {k!r}"
        order = tuple(params.get("order") or self.order or (1, 0) + tuple(range(2, k + 1)))
        if sorted(order) != list(range(k + 1)):
            return f"order must be a permutation of 0..{k}, got {order}"
        if order == tuple(range(k + 1)):
            return call
        factors = _factors(params.get("factor", self.factor), k, self.label or "L")
        if isinstance(factors, str):
            return factors
        flat = p.join_nd(len(dims)) << g_call if len(dims) > 1 else g_call
        written = _transpose_w_nd(order) << (p.split_nd(*factors) << flat)
        inverse = tuple(order.index(d) for d in range(k + 1))
        read = p.join_nd(k + 1) << (p.transpose_nd(*inverse) << written)
        if len(dims) > 1:
            read = p.split_nd(*dims[1:]) << read
        args = tuple(read if i == hits[0] else a for i, a in enumerate(call.args))
        return FunCall(call.f, args, label=call.label, loc=call.loc)


def _factors(given: Any, k: int, label: str) -> list[Any] | str:
    """The k reordering factors: given (one value for k = 1, a sequence of k) or tuning variables
    (`F_label`, or `F1_label` .. `Fk_label`)."""
    if given is None:
        return [tuning_var(label, "F")] if k == 1 else [tuning_var(label, f"F{i + 1}") for i in range(k)]
    vals = list(given) if isinstance(given, tuple | list) else [given]
    if len(vals) != k:
        return f"factor needs {k} value(s), got {given!r}"
    return vals


def _transpose_w_nd(order: tuple[int, ...]) -> Any:
    """The write-side `transpose_nd(*order)`: adjacent swaps by `transpose_w` under maps."""
    cur, g = list(range(len(order))), None
    for i in range(len(order)):
        j = cur.index(order[i])
        while j > i:
            step: Any = p.transpose_w
            for _ in range(j - 1):
                step = p.map(step)
            g = step if g is None else step << g
            cur[j - 1], cur[j] = cur[j], cur[j - 1]
            j -= 1
    return g


def depaddable(call: Any) -> tuple[Param | None, str]:
    """`(x, "")` when `call` is a chain of map/join/split/slide applied to a parameter `x`,
    else `(None, why not)`."""
    cur = call
    while isinstance(cur, FunCall):
        if not has("keeps_order", cur.f) or len(cur.args) != 1:
            return None, f"{type(cur.f).__name__.lower()} may reorder or reduce the padded dimension"
        cur = cur.args[0]
    if not isinstance(cur, Param):
        return None, "the function does not apply a map/join/split/slide chain to its argument"
    return cur, ""


@node
class PadExtraND(RewritePoint):
    """`pad_extra_nd(f, k=1)`: pad the k outer dimensions of f's argument with zeros and cut
    the extra results off (Listing 6.15; `pad`: one value or one per dimension)."""

    f: FunDecl
    k: int = 1
    pad: Any = None
    kind: ClassVar[str] = "pad_extra_nd"

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        x, why = depaddable(call)
        if x is None:
            return why
        k = self.k
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            return f"k must be a positive number of dimensions, got {k!r}"
        xt, out_t = type_of(x), type_of(call)
        in_dims, out_dims = shape(xt), shape(out_t)
        if len(in_dims) < k or len(out_dims) < k:
            return f"expects arrays of {k} dimension(s), got {xt} => {out_t}"
        lab = self.label or "P"
        given = params.get("pad", self.pad)
        pads = [tuning_var(lab, "P") if k == 1 else tuning_var(lab, f"P{i}") for i in range(k)] \
            if given is None else list(given if isinstance(given, tuple | list) else (given,) * k)
        if len(pads) != k:
            return f"pad needs {k} values (one per padded dimension), got {given!r}"
        zero = 0.0 if _scalar(xt) in ("float", "double") else 0
        padded = p.pad_nd(k, 0, tuple(pads) if k > 1 else pads[0], zero) << x

        body = substitute(call, {x.id: padded})
        out = p.take(out_dims[0]) << body
        for d in range(1, k):  # cut each padded dimension back to f's result size
            out = p.map_nd(d, p.take(out_dims[d])) << out
        return copy_into("global", out)  # depadding: the kept elements copied (Listing 6.15, line 17)


def _scalar(t: Any) -> str:
    while isinstance(t, ArrayType):
        t = t.elem
    return str(t).lower()


interchange_maps = constructor(InterchangeMaps, "interchange_maps")
optimise_data_layout = constructor(OptimiseDataLayout, "optimise_data_layout")
pad_extra_nd = constructor(PadExtraND, "pad_extra_nd")

__all__ = ["InterchangeMaps", "OptimiseDataLayout", "PadExtraND", "interchange_maps", "optimise_data_layout",
           "pad_extra_nd", "depaddable"]
