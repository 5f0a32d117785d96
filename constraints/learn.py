"""Constraints learnt from the barrier pass: a sequential stage where no barrier placement exists.

The mapping model (`lift.constraints.mapping`) states what the thesis states before code
exists. Whether a mapping can be synchronised is decided exactly by the barrier pass
(`lift.barriers`, Algorithm 3) on the generated code: two accesses to one element of global
memory from different work-groups cannot be ordered, and a barrier inside a loop that
work-items run different numbers of times cannot be reached. When the solver's mapping meets
either, the pass's error names the loops around the two accesses (`err.loops`); `learn` maps
them back to the model's map variables (`lift.constraints.realise.origin`) and adds a named
constraint ("no barrier placement") over the maps that enclose one access but not both (or,
when those are all sequential and the pass still cannot tell the work-items apart, over the
maps that enclose both):

* different work-groups: none of them distributes work over work-groups (`map_glb`, `map_wrg`);
  a `map_lcl` stays possible (its work-group can synchronise with a barrier);
* an unreachable barrier: none of them is parallel.

The solver then chooses again with the constraint (`lift.compile` does this a few times), so the
program compiles with a sequential stage, or work-group-local parallelism, chosen among all the
mappings that avoid the conflict rather than with a fixed fallback. The constraint stays in the
space (cached per program object), so later compilations and the tuner's samples respect it.
"""

from __future__ import annotations

from typing import Any

import z3

from lift.ir.nodes import FunCall, Node
from lift.ir.paths import at

from .mapping import effective_codes
from .model import Constraint
from .realise import origin
from .space import Space

NO_BARRIER = "no barrier placement"


def learn(err: Exception, low: Node, spaces: list[Space], choice: dict[str, int]) -> Constraint | None:
    """Add to every space in `spaces` the constraint that `err` (a `NotSynchronisableError` of the
    barrier pass for the program `low`, realised from `choice`) teaches; the constraint, or None
    when the error does not name maps of the model or teaches nothing new."""
    why, first, second = getattr(err, "loops", (None, (), ()))
    if why is None or not spaces:
        return None
    a, b = _labels(low, first), _labels(low, second)
    if a is None or b is None:
        return None
    rest = [x for x in dict.fromkeys(a + b) if not (x in a and x in b)]
    bound = 20 if why == "groups" else 10
    rest = [x for x in rest if x in choice and _code(x, choice) >= bound]
    if not rest:  # the pass could not tell the accesses' work-items apart: the shared maps, then
        rest = [x for x in dict.fromkeys(a + b) if x in choice and _code(x, choice) >= bound]
    if not rest:
        return None
    what = "distribute work over work-groups" if bound == 20 else "be parallel"
    reason = (f"{', '.join(rest)} must not {what}: the barrier pass found no barrier placement for the "
              f"solver's mapping ({str(err).splitlines()[0][:160]})")
    made = None
    for space in spaces:
        if not set(rest) <= set(space.model.vars):
            continue
        eff = effective_codes(space.context, {m: space.model.vars[m] for m in space.context.maps})
        formula = z3.And([_allowed(eff[x], bound) for x in rest])
        made = Constraint(NO_BARRIER, tuple(rest), reason, formula, family="mapping")
        space.model.add(made)
    return made


def _allowed(e: Any, bound: int) -> Any:
    return e < 10 if bound == 10 else z3.Or(e < 20)


def _code(label: str, choice: dict[str, int]) -> int:
    return int(choice[label])


def _labels(low: Node, loops: tuple) -> list[str] | None:
    out = []
    for _kind, path in loops:
        try:
            node = at(low, path)
        except (IndexError, KeyError, TypeError, AttributeError):
            return None
        node = node.f if isinstance(node, FunCall) else node
        label = origin(node)
        if label is not None:
            out.append(label)
    return out


__all__ = ["NO_BARRIER", "learn"]
