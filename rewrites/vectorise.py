"""The vectorisation rewrite point `vectorise` (thesis 2.3.2.1, the `vectorise` rule, as a point).

    map(f) << x              ->  as_scalar << map(vectorise(f, w)) << as_vector(w) << x
    map(f) << zip(a, b, ..)  ->  as_scalar << map(q => vectorise(f, w)(q.0, q.1, ..))
                                 << zip(as_vector(w) << a, as_vector(w) << b, ..)

`f` a scalar user function; the structural parameter is the width `w` (2, 4, 8 or 16). Other
element functions (a lambda of scalar user functions reading scalars from outside, a zip's
components, or a stencil's window `map(g) << slide(n, 1) << x`) are lifted lane by lane
(rewrites/lanes.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

from lift.ir.nodes import (
    AsScalar,
    AsVector,
    FunCall,
    FunDecl,
    Get,
    Lambda,
    Map,
    Param,
    Vectorise,
    node,
)
from lift.ir.paths import walk
from lift.ir.registry import REDUCES
from lift.rules import vectorise as vectorise_rule
from lift.rules.terms import eta
from lift.rules.vector import VECTOR_SCALARS, WIDTHS
from lift.types import ArrayType, TupleType, VectorType

from .lanes import lifted_map, zip_userfun
from .point import Nested, RewritePoint, constructor
from .shapes import MAP, match_shape


@node
class VectorisePoint(RewritePoint):
    """`vectorise(map(f), width=None)`: a map of a scalar function over vectors of `width` lanes."""

    f: FunDecl
    width: int | None = None
    kind: ClassVar[str] = "vectorise"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        return {} if self.width is not None else {"width": (8, 4, 16, 2)}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        w = int(params.get("width") or self.width or 8)
        if w not in WIDTHS:
            return f"width {w} is not one of {WIDTHS}"
        m = match_shape(MAP, call)
        if m is None:
            return f"expects map(f) << x, got {call}"
        f, x = m["f"], m["x"]
        zipped = zip_userfun(f, x)
        if zipped is None and _reduces(f):  # `vectorise(lambda)` cannot hold a reduction: lifted lane-wise
            lifted = lifted_map(call, w)
            return lifted if not isinstance(lifted, str) else f"map({eta(f)}) cannot be vectorised by {w}: {lifted}"
        if zipped is None:
            out = vectorise_rule(call, n=w)
            if out is not None:
                return out
            lifted = lifted_map(call, w)  # a lambda of user functions, broadcast scalars, a window
            return lifted if not isinstance(lifted, str) else f"map({eta(f)}) cannot be vectorised by {w}: {lifted}"
        uf, arrays = zipped
        if any(not (isinstance(a.type, ArrayType) and a.type.elem in VECTOR_SCALARS) for a in arrays) or \
                uf.out_type not in VECTOR_SCALARS:
            return "the zipped arrays and the function result must be scalars"
        vecs = tuple(FunCall(AsVector(w), (a,)) for a in arrays)
        q = Param(_tuple_of(vecs), "q")
        body = FunCall(Vectorise(uf, w), tuple(FunCall(Get(i), (q,)) for i in range(len(vecs))))
        mapped = FunCall(Map(Lambda((q,), body), label=call.f.label, loc=call.f.loc),
                         (FunCall(cast(FunCall, x).f, vecs),))
        return FunCall(AsScalar(), (mapped,))


def _reduces(f: FunDecl) -> bool:
    """Whether the element function `f` reduces an array (the code generator's `vectorise` of a
    lambda computes user-function calls only: rewrites/lanes.py lifts reductions)."""
    return isinstance(f, Lambda) and any(isinstance(m, REDUCES) for _, m in walk(f))


def _tuple_of(vecs: tuple[Any, ...]) -> Any:

    return TupleType(tuple(VectorType(v.args[0].type.elem, v.f.n) for v in vecs))


vectorise = constructor(VectorisePoint, "vectorise")

__all__ = ["VectorisePoint", "vectorise"]
