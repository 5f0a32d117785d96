"""Fusion rewrite points: `recompute_producer` (AKG's producer fused into a stencil through
overlapped tiles, as recomputed halos).

    recompute_producer(x => map(g) << slide(n, s) << pad(l, r, v) << map(f) << x)
        ->  x => map(w => g(map(f) << w)) << slide(n, s) << pad(l, r, v) << x

(the point wraps a function holding both the stencil and its producer: every such stencil in it
is rewritten)
The elementwise producer `map(f)` that the stencil `map(g)` reads through its layouts (slide,
pad, split, transpose, join and maps of them) is recomputed per window inside the stencil's
map, into private memory when the window has a constant size, so no temporary array and no
second kernel are needed; a `pad` is crossed only when `f(v) == v`
(`lift.rules.recompute.stencil_fused`). Whether it pays depends on the device (on the CPU
device the temporary is often cheaper: see rules/recompute.py), so it is a point: its
`skip` is the tuner's choice. No other structural or tuning parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from lift.ir.alpha import substitute
from lift.ir.nodes import FunCall, FunDecl, Lambda, node
from lift.ir.paths import transform_bottom_up
from lift.rules.recompute import stencil_fused

from .point import Nested, RewritePoint, constructor


@node
class RecomputeProducer(RewritePoint):
    """`recompute_producer(x => stencil << layouts << map(f) << x)`: each stencil in the function
    recomputes its elementwise producer per window."""

    f: FunDecl
    kind: ClassVar[str] = "recompute_producer"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        return {}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        body = call
        if isinstance(call, FunCall) and isinstance(call.f, Lambda) and len(call.f.params) == len(call.args):
            body = substitute(call.f.body, {q.id: a for q, a in zip(call.f.params, call.args)})

        def visit(e: Any) -> Any:
            fused = stencil_fused(e)
            return e if fused is None else fused

        out = transform_bottom_up(body, visit)
        if out is body:
            return ("expects a function holding map(g) << layouts << map(f) << x, a slide among the layouts, "
                    f"f elementwise and keeping any padding value; got {call}")
        return out


recompute_producer = constructor(RecomputeProducer, "recompute_producer")

__all__ = ["RecomputeProducer", "recompute_producer"]
