"""The reference interpreter: the semantics of every pattern, on numpy values.

    lift.interpret(dot, x, y)                  # float32, reductions left to right
    lift.interpret(dot, x, y, precise=True)    # Float carried in float64: a reference for tuning

Values are described in lift.interpret.values. A program is evaluated by the batched evaluator
(lift.interpret.batch: every map once over a batch axis, user functions through their numpy
twins); what it cannot handle is evaluated element by element (lift.interpret.element), which
`stats` records. `batched=False` evaluates everything element by element (the plain semantics,
against which the batched evaluator is property-tested). The OpenCL patterns mean the same as
their high-level forms. The result never shares memory with the arguments.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lift.errors import LiftTypeError, nesting_guard
from lift.interpret.batch import Batched, Stats
from lift.interpret.element import Element, NotBatchable
from lift.interpret.values import (
    WIDE,
    Zipped,
    arguments,
    bind_sizes,
    cast,
    check_conditions,
    index0,
    leaf_shape,
    leaves,
    length,
    stack,
    to_numpy,
    to_value,
    widen,
)
from lift.ir.nodes import Expr, Lambda, Node
from lift.typecheck import typed
from lift.userfun.frozen import warn_changed

__all__ = ["interpret", "Stats", "Zipped", "arguments", "bind_sizes", "check_conditions", "leaf_shape",
           "leaves", "to_value", "to_numpy", "cast", "length", "index0",
           "stack", "WIDE"]


@nesting_guard("interpret")
def interpret(program: Node, *args: Any, precise: bool = False, batched: bool = True,
              stats: Stats | None = None) -> Any:
    """Run `program` on numpy arguments; sizes are bound from the argument shapes.

    With `precise`, Float values are carried in float64 (arguments, literals, user-function
    results): a reference for judging float32 results computed in another order (a reduction
    split into chunks rounds differently from the sequential one). With `batched=False`, every
    map is evaluated element by element. `stats` (a `Stats`) collects what the batched evaluator
    left to the element-wise one."""
    record = typed(program)
    warn_changed(program)
    if isinstance(program, Lambda):
        sizes, vals = arguments([p.ptype for p in program.params], args, program)
        if precise:
            vals = [widen(v) for v in vals]
        env = {p.id: v for p, v in zip(program.params, vals)}
        body = program.body
    elif isinstance(program, Expr):
        if args:
            raise LiftTypeError("an expression takes no arguments; wrap it in lift.fun", node=program)
        sizes, env, body = {}, {}, program
    else:
        raise LiftTypeError(f"cannot interpret {program!r}", node=program)
    check_conditions(program, sizes, record.conditions)
    wide = WIDE if precise else {}
    with np.errstate(all="ignore"):
        return to_numpy(_evaluate(body, env, sizes, wide, batched, stats or Stats()), args)


def _evaluate(body: Expr, env: dict[int, Any], sizes: dict[str, int], wide: dict, batched: bool,
              stats: Stats) -> Any:
    if not batched:
        return Element(sizes, wide).eval(body, env)
    fast = Batched(sizes, wide, stats)
    try:
        return fast.run(body, env)
    except NotBatchable as why:
        stats.fell_back(why, body)
    return Element(sizes, wide, fast).eval(body, env)
