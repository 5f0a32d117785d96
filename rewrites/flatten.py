"""The flattening rewrite point `flatten` (thesis 6.2.5.1, Listing 6.5, `joinSplitND`).

    map(map(f)) << x  ->  split(m) << nested(map(f)) << join << x        (x : [[T]m]n)

and likewise for a deeper nest of k maps (k - 1 joins, then k - 1 splits). It has no
structural parameter beyond `skip` and no tuning parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

from lift.ir.nodes import FunCall, FunDecl, Join, Map, Split, node
from lift.rules.terms import eta
from lift.types import ArrayType

from .point import Nested, RewritePoint, constructor
from .shapes import MAP, MAP_OF, match_shape


def _nest(call: Any) -> tuple[list[FunDecl], Any] | None:
    """The functions of a nest of directly nested maps `map(map(...(f)))` and the argument."""
    m = match_shape(MAP, call)
    if m is None:
        return None
    fs: list[FunDecl] = [call.f]
    g = eta(m["f"])
    while (inner := match_shape(MAP_OF, g)) is not None:
        fs.append(g)
        g = eta(inner["f"])
    return fs, m["x"]


@node
class Flatten(RewritePoint):
    """`flatten(map(map(f)))`: one map over the flattened array, split back (Listing 6.5)."""

    f: FunDecl
    kind: ClassVar[str] = "flatten"
    places_nested: ClassVar[bool] = True

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        found = _nest(call)
        if found is None or len(found[0]) < 2:
            return f"expects a nest of at least two maps, map(map(f)) << x, got {call}"
        maps, x = found
        sizes, t = [], x.type
        for _ in range(len(maps) - 1):
            if not (isinstance(t, ArrayType) and isinstance(t.elem, ArrayType)):
                return f"the argument {t} is not nested {len(maps)} deep"
            sizes.append(t.elem.size)
            t = t.elem
        flat = x
        for _ in sizes:
            flat = FunCall(Join(), (flat,))
        out = FunCall(nested(Map(eta(cast(Any, maps[-1]).f), label=maps[0].label, loc=maps[0].loc)), (flat,))
        for m in reversed(sizes):
            out = FunCall(Split(m), (out,))
        return out


flatten = constructor(Flatten, "flatten")

__all__ = ["Flatten", "flatten"]
