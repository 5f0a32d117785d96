"""A kernel boundary where no barrier placement exists: the result's copy through `pad`/`slide`.

A program whose result is a layout chain that cannot be written in place (`pad(l, r, v) <<
map(f) << x`: the padded array's elements are not those of `map(f)`'s output) computes the
chain's argument into a temporary and copies it through the layouts. When the computation is
parallel, the copy reads elements that other work-groups write, which no barrier orders. The
mapping model states the choice with a named constraint ("kernel boundary"): the boundary is
taken exactly when some map of the computation is parallel (a sequential computation runs on
one work-item, which copies its own writes). With the boundary, the computation is its own
`ocl_kernel` writing a global temporary and the copy is a second kernel,
`ocl_kernel(map_glb(map_seq(id))) << pad(l, r, v) << ocl_kernel(map_glb(f)) << x`, which reads
the temporary through the layouts (a view) after the first kernel has finished.

`result_chain(expr)` finds the chain; `add_boundary` states the constraint; `lift.realise`'s
`apply_boundary` realises it in a lowered program (this package builds no IR).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import z3

from lift.ir import nodes as n
from lift.ir.layoutfun import calls_userfun, is_layout_pattern
from lift.ir.nodes import FunCall, Lambda, Node
from lift.ir.registry import IN_PLACE
from lift.types import ArrayType, ScalarType, TupleType, Type, VectorType

from .context import Context
from .model import Constraint, Model

BOUNDARY = "kernel boundary"


def result_chain(expr: Node) -> int:
    """The length of the layout chain at the result of `expr` when it holds a layout that cannot be
    written in place over a computation with an array result; 0 otherwise."""
    if not isinstance(expr, Lambda) or not isinstance(expr.body.type, ArrayType):
        return 0
    k, cur, copied = 0, expr.body, False
    while isinstance(cur, FunCall) and len(cur.args) == 1 and _layout(cur.f):
        copied = copied or not _in_place(cur.f)
        k, cur = k + 1, cur.args[0]
    if not copied or not isinstance(cur, FunCall) or not calls_userfun(cur) or not _copyable(expr.body.type):
        return 0
    return k


def add_boundary(model: Model, ctx: Context, codes: Mapping[str, Any], chain: int) -> None:
    """The named constraint of the result's kernel boundary (a z3 Bool `kernel_boundary`)."""
    if not chain:
        return
    b = z3.Bool("kernel_boundary")
    parallel = z3.Or([c >= 10 for c in codes.values()]) if codes else z3.BoolVal(False)
    if len(ctx.stages) > 1:
        parallel = z3.BoolVal(True)  # the stages are kernels already: the copy is one more
    model.add(Constraint(BOUNDARY, tuple(codes), "the result is copied through a layout that cannot be "
                         "written in place; a parallel computation ends its kernel before the copy (work-"
                         "groups cannot synchronise), a sequential one copies its own writes",
                         b == parallel, family="mapping"))


def needs_boundary(ctx: Context, choice: Mapping[str, int], chain: int) -> bool:
    """What `add_boundary`'s constraint decides for `choice`."""
    return bool(chain) and (len(ctx.stages) > 1 or any(int(choice[m]) >= 10 for m in ctx.maps))


def _copyable(t: Type) -> bool:
    while isinstance(t, ArrayType):
        t = t.elem
    return isinstance(t, ScalarType | VectorType) or (
        isinstance(t, TupleType) and all(isinstance(e, ScalarType | VectorType) for e in t.elems))


def _layout(f: n.FunDecl) -> bool:
    return is_layout_pattern(f) or (isinstance(f, n.Map) and _layout(f.f))


def _in_place(f: n.FunDecl) -> bool:
    """A layout written in place: the registry's one-array invertible (\"reshape\") families, or a map of one."""
    return isinstance(f, IN_PLACE) or (isinstance(f, n.Map) and _in_place(f.f))


__all__ = ["BOUNDARY", "result_chain", "add_boundary", "needs_boundary"]
