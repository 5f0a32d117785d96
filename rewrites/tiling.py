"""Tiling rewrite points (thesis 6.2.3.2, 6.2.5.2, 6.2.5.3), built from `lift.rules`.

- `split_join` (Listing 6.2, one dimension): `map(f) -> join << nested(map(map(f))) << split(T)`.
- `split_reduce` (reduction tiling, Listing 6.7): `reduce(f, z) << map(g) << x ->
  reduce(final, z) << map(c => reduce(f, z) << map(g) << c) << split(T) << x` (`map(g)` optional).
- `ab_tile` (Listing 6.6): `map(a => map(b => f(a, b)) << B) << A ->
  map(join) << join << map(transpose) << map(ta => map(tb => nested(map(a => map(b => f(a, b))
  << copy_b(tb)) << copy_a(ta)) << split(TB) << B) << split(TA) << A`; the structural parameters
  `prefetch_a` / `prefetch_b` ("none", "private", "local", "global") choose whether each tile is
  first copied into that memory (`materialise`'s copy; "none": read where it is).

A tile size not chosen (`size=`, or `choices[label]["size"]`) is a tuning variable `T_label`
that the constraint solver (thesis 4.3) picks with the mapping.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, cast

from lift.ir.build import elaborate
from lift.ir.nodes import FunCall, FunDecl, Join, Lambda, Let, Map, Param, Split, Transpose, node
from lift.rules import map_fusion, partial_reduce, partial_reduce_split_join
from lift.rules import split_join as split_join_rule
from lift.rules.reduce import is_monoid
from lift.rules.terms import eta, mentions, substitute
from lift.types import ArrayType

from .memory_points import copy_into
from .point import Nested, RewritePoint, constructor, size_param, tuning_var, via_rule
from .shapes import MAP, REDUCE, match_shape


def map_call(call: Any) -> tuple[FunDecl, Any] | str:
    """`(f, x)` for `map(f) << x`, or why `call` is not one."""
    if (m := match_shape(MAP, call)) is not None:
        return m["f"], m["x"]
    return f"expects map(f) << x, got {call}"


@node
class SplitJoin(RewritePoint):
    """`split_join(map(f), size=None)`: tile a map into chunks of `size` elements (Listing 6.2)."""

    f: FunDecl
    size: Any = None
    kind: ClassVar[str] = "split_join"
    places_nested: ClassVar[bool] = True

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        m = map_call(call)
        if isinstance(m, str):
            return m
        out: Any = via_rule(split_join_rule, call, n=size_param(self.size, params, self.label or "T"))
        inner = out.args[0]  # join << (map(map(f)) << split(T) << x)
        return dataclasses.replace(out, args=(dataclasses.replace(inner, f=nested(inner.f)),))


@node
class SplitReduce(RewritePoint):
    """`split_reduce(reduce(f, z) << map(g), size=None, final=None)`: reduction tiling (Listing 6.7).

    `final` is the operator of the last reduction (thesis 6.2.5.3, "the final reduction
    operator"); without it `f` must be a known monoid with neutral `z` (add, mult, max, min)."""

    f: FunDecl
    size: Any = None
    final: Any = None
    kind: ClassVar[str] = "split_reduce"

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        red = match_shape(REDUCE, call)
        if red is None:
            return f"expects reduce(f, z) << x, got {call}"
        f, z, xs = red["f"], red["z"], red["xs"]
        final = params.get("final", self.final)
        if final is None and not is_monoid(f, z):
            return f"{f} is not a known associative operator with neutral {z}; give final="
        size = size_param(self.size, params, self.label or "T")
        assoc = final is not None
        if match_shape(MAP, xs) is not None:
            tiled: Any = dataclasses.replace(call, args=(z, via_rule(split_join_rule, xs, n=size)))
            tiled = via_rule(partial_reduce_split_join, tiled, associative=assoc)
            out = dataclasses.replace(tiled, args=(z, via_rule(map_fusion, tiled.args[1])))
        else:
            out = via_rule(partial_reduce, call, n=size, associative=assoc)
        if final is not None:
            t = z.type
            out = dataclasses.replace(out, f=dataclasses.replace(out.f, f=elaborate(final, [t, t])))
        return out


@node
class ABTile(RewritePoint):
    """`ab_tile(map(a => map(b => f(a, b)) << B), size_a=None, size_b=None)`: tile both arrays
    of a map nest over independent arrays A and B (Listing 6.6), each tile optionally prefetched
    (copied into `prefetch_a` / `prefetch_b` memory) before the nest reads it."""

    f: FunDecl
    size_a: Any = None
    size_b: Any = None
    prefetch_a: Any = None
    prefetch_b: Any = None
    kind: ClassVar[str] = "ab_tile"
    places_nested: ClassVar[bool] = True

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"prefetch_a": PREFETCH, "prefetch_b": PREFETCH}
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        outer = map_call(call)
        if isinstance(outer, str):
            return outer
        fa, a = outer
        fa = eta(fa)
        if not (isinstance(fa, Lambda) and len(fa.params) == 1):
            return f"expects map(a => map(g) << B) << A, got {call}"
        inner = map_call(fa.body)
        if isinstance(inner, str):
            return inner
        g, b = inner
        if mentions(b, fa.params):
            return "the inner array depends on the outer element: not independent arrays"
        lab = self.label or "T"
        ta = size_param(self.size_a, params, lab, "size_a") if self.size_a is not None or \
            params.get("size_a") is not None else tuning_var(lab, "TA")
        tb = size_param(self.size_b, params, lab, "size_b") if self.size_b is not None or \
            params.get("size_b") is not None else tuning_var(lab, "TB")
        at_t, bt_t = a.type, b.type
        if not (isinstance(at_t, ArrayType) and isinstance(bt_t, ArrayType)):
            return "expects arrays"
        tile_a, tile_b = Param(ArrayType(at_t.elem, ta), "tileA"), Param(ArrayType(bt_t.elem, tb), "tileB")
        read_a, read_b = _prefetch(params, self, "prefetch_a", tile_a), _prefetch(params, self, "prefetch_b", tile_b)
        for r in (read_a, read_b):
            if isinstance(r, str):
                return r
        ea = Param(at_t.elem, fa.params[0].name)
        pb = Param(tile_b.ptype, "tileB") if read_b is not tile_b else tile_b
        body_a = Lambda((ea,), _subst_param(fa, ea, pb))
        nest = FunCall(nested(Map(body_a)), (read_a,))
        if pb is not tile_b:  # the B tile copied once per tile pair, not once per row of A
            nest = FunCall(Let(Lambda((pb,), nest)), (read_b,))
        over_b = FunCall(Map(Lambda((tile_b,), nest)), (FunCall(Split(tb), (b,)),))
        over_a = FunCall(Map(Lambda((tile_a,), over_b)), (FunCall(Split(ta), (a,)),))
        swapped = FunCall(Map(Transpose()), (over_a,))
        return FunCall(Map(Join()), (FunCall(Join(), (swapped,)),))


PREFETCH = ("none", "private", "local", "global")


def _prefetch(params: Mapping[str, Any], point: Any, name: str, tile: Param) -> Any:
    """`tile`, or its copy into the memory chosen by `name` ("none": the tile itself)."""

    mem = params.get(name) or getattr(point, name) or "none"
    if mem not in PREFETCH:
        return f"{name} must be one of {', '.join(PREFETCH)}, got {mem!r}"
    if mem == "none":
        return tile
    out = copy_into(mem, tile)
    return f"{name}: the tile {tile.type} cannot be copied ({out})" if isinstance(out, str) else out


def _subst_param(fa: Lambda, ea: Param, tile_b: Any) -> Any:
    """The body of `fa` with its parameter renamed to `ea` and its inner array `tile_b`."""

    body = substitute(fa.body, {fa.params[0].id: ea})
    return dataclasses.replace(cast(Any, body), args=(tile_b,))


split_join = constructor(SplitJoin, "split_join")
split_reduce = constructor(SplitReduce, "split_reduce")
ab_tile = constructor(ABTile, "ab_tile")
tile = split_join
tile_reduce = split_reduce

__all__ = ["SplitJoin", "SplitReduce", "ABTile", "split_join", "split_reduce", "ab_tile", "tile",
           "tile_reduce"]
