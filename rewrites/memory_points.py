"""Memory rewrite points: `materialise` (thesis 6.2.5.5, Listing 6.10) and
`privatise_accumulator` (6.2.5.9, Listing 6.14).

    materialise(f, mem)          f << x  ->  split_nd(..) << map(to_mem(id)) << join_nd(k) << f << x
                                 (f : T => [..[U]..]N, k dimensions of scalars U; the result of f
                                 is copied, element by element, into `mem`)
    privatise_accumulator(reduce(g, init), mem)
                                 reduce(g, init) << x  ->  to_mem(id) << reduce(g, to_private(id) << init) << x

Structural parameters: `mem` ("global", "local" or "private") and `width` (materialise: a
global copy moves vectors of up to `width` elements, 1: scalars) and `result_mem`
(privatise_accumulator). No tuning parameters. `materialise` is how a program asks for an
intermediate array in memory: a `map(to_mem(..))` under a `reduce` is never fused away
(`lift.rules.fusion.fuse_reduce_maps`), so this is, for example, im2col in a convolution.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from typing import Any, ClassVar

from lift.arith import prove_divides
from lift.ir import patterns as p
from lift.ir.nodes import FunCall, FunDecl, node
from lift.rules.vector import VECTOR_SCALARS
from lift.typecheck import type_of
from lift.types import ArrayType, ScalarType
from lift.userfun.builtins import id as copy

from .point import Nested, RewritePoint, constructor
from .shapes import REDUCE, match_shape

MEMS = ("global", "local", "private")
COPY_WIDTHS = (8, 4, 2, 1)  # upper bounds: a copy of N elements uses the widest dividing N
_TO = {"global": p.to_global, "local": p.to_local, "private": p.to_private}


def _to_mem(mem: str) -> Any:
    if mem not in _TO:
        raise ValueError(f"memory must be one of {', '.join(MEMS)}, got {mem!r}")
    return _TO[mem]


def copy_into(mem: str, x: Any, *, width: int = 1) -> Any | str:
    """`x` (an array of scalars, any depth) copied element by element into `mem`, same type;
    in global memory, with `width` > 1, `width` consecutive elements at a time (vectors: the
    widest of 8, 4, 2 not above `width` that divides the element count)."""
    t, dims = type_of(x), []
    while isinstance(t, ArrayType):
        dims.append(t.size)
        t = t.elem
    if not dims or not isinstance(t, ScalarType):
        return f"its result {type_of(x)} is not an array of scalars"
    flat = p.join_nd(len(dims)) << x if len(dims) > 1 else x
    total = functools.reduce(operator.mul, dims[1:], dims[0])
    w = next((v for v in (8, 4, 2) if v <= width and prove_divides(v, total)), 1)
    if mem == "global" and w > 1 and t in VECTOR_SCALARS:
        out = p.as_scalar << (p.map(_to_mem(mem)(p.vectorise(copy, w))) << (p.as_vector(w) << flat))
    else:
        out = p.map(_to_mem(mem)(copy)) << flat
    if len(dims) > 1:
        out = p.split_nd(*dims[1:]) << out
    return out


@node
class Materialise(RewritePoint):
    """`materialise(f, mem=None)`: write the result of `f` to memory `mem` (Listing 6.10)."""

    f: FunDecl
    mem: Any = None
    width: Any = None
    kind: ClassVar[str] = "materialise"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"mem": MEMS, "width": COPY_WIDTHS}
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        mem = params.get("mem") or self.mem or "global"
        if mem not in MEMS:
            return f"mem must be one of {', '.join(MEMS)}, got {mem!r}"
        width = params.get("width") or self.width or 1
        if width not in COPY_WIDTHS:
            return f"width must be one of {COPY_WIDTHS}, got {width!r}"
        return copy_into(mem, call, width=width)


@node
class PrivatiseAccumulator(RewritePoint):
    """`privatise_accumulator(reduce(g, init), result_mem=None)`: the accumulator starts as a private
    copy of `init`; the result is copied to `result_mem` (Listing 6.14)."""

    f: FunDecl
    result_mem: Any = None
    kind: ClassVar[str] = "privatise_accumulator"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        return {} if self.result_mem is not None else {"result_mem": MEMS}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        if match_shape(REDUCE, call) is None:
            return f"expects reduce(g, init) << x, got {call}"
        mem = params.get("result_mem") or self.result_mem or "global"
        if mem not in MEMS:
            return f"result_mem must be one of {', '.join(MEMS)}, got {mem!r}"
        init, xs = call.args
        t = type_of(init)
        if isinstance(t, ScalarType):
            priv = p.to_private(copy) << init
        else:
            priv = copy_into("private", init)
            if isinstance(priv, str):
                return f"the accumulator {t} is not a scalar or an array of scalars"
        red = FunCall(call.f, (priv, xs), label=call.label, loc=call.loc)
        if isinstance(t, ScalarType):
            return _to_mem(mem)(copy) << red
        return copy_into(mem, red)


materialise = constructor(Materialise, "materialise")
privatise_accumulator = constructor(PrivatiseAccumulator, "privatise_accumulator")

__all__ = ["Materialise", "PrivatiseAccumulator", "materialise", "privatise_accumulator", "copy_into", "MEMS"]
