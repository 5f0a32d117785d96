"""Constraints learnt from the barrier pass: a sequential stage where no barrier placement exists.

The mapping model (`lift.constraints.mapping`) states what the thesis states before code
exists. Whether a mapping can be synchronised is decided exactly by the barrier pass
(`lift.barriers`, Algorithm 3) on the generated code: two accesses to one element of global
memory from different work-groups cannot be ordered, and a barrier inside a loop that
work-items run different numbers of times cannot be reached. When the solver's mapping meets
either, the pass's error names the loops around the two accesses (`err.loops`); `learn` maps
them back to the model's map variables (through the maps the lowering reports, `realise_traced`)
and states a named constraint ("no barrier placement") over the maps that enclose one access but
not both (or,
when those are all sequential and the pass still cannot tell the work-items apart, over the
maps that enclose both):

* different work-groups: none of them distributes work over work-groups (`map_glb`, `map_wrg`);
  a `map_lcl` stays possible (its work-group can synchronise with a barrier);
* an unreachable barrier: none of them is parallel.

The solver then chooses again with the constraint (`lift.compile` does this a few times), so the
program compiles with a sequential stage, or work-group-local parallelism, chosen among all the
mappings that avoid the conflict rather than with a fixed fallback. A `Lesson` is a value: the
caller keeps the lessons of one compilation and passes them back in (`taught` adds them to a
space built afresh), so nothing a compilation learns outlives it or changes another's result.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import z3

from lift.ir.nodes import FunCall, Node
from lift.ir.paths import at

from .mapping import effective_codes
from .model import Constraint, Model
from .space import Space

NO_BARRIER = "no barrier placement"

Lowered = Sequence[tuple[Node, str]]  # each map object `realise` lowered, with its map site's label


@dataclass(frozen=True)
class Lesson:
    """What a barrier error taught: the maps `labels` must not be parallel (`bound` 10) or must not
    distribute work over work-groups (`bound` 20), for the reason `reason`."""

    labels: tuple[str, ...]
    bound: int
    reason: str

    def constraint(self, space: Space) -> Constraint | None:
        """The named constraint in `space`'s variables, or None when `space` lacks one of the maps."""
        if not set(self.labels) <= set(space.model.vars):
            return None
        eff = effective_codes(space.context, {m: space.model.vars[m] for m in space.context.maps})
        formula = z3.And([_allowed(eff[x], self.bound) for x in self.labels])
        return Constraint(NO_BARRIER, self.labels, self.reason, formula, family="mapping")


def learn(err: Exception, low: Node, lowered: Lowered, choice: dict[str, int]) -> Lesson | None:
    """The lesson that `err` (a `NotSynchronisableError` of the barrier pass for the program `low`,
    realised from `choice`; `lowered`: the map objects the realisation made, with their labels)
    teaches, or None when the error does not name maps of the model."""
    why, first, second = getattr(err, "loops", (None, (), ()))
    if why is None:
        return None
    a, b = _labels(low, first, lowered), _labels(low, second, lowered)
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
    return Lesson(tuple(rest), bound, reason)


def taught(space: Space, lessons: Iterable[Lesson]) -> Space:
    """`space` with the constraints of `lessons` added (in order; those naming maps it lacks left
    out): a copy, `space` itself unchanged (it may be kept by a caller: `lift.spaces.kept`)."""
    new = [c for lesson in lessons if (c := lesson.constraint(space)) is not None]
    if not new:
        return space
    model = Model()
    model.vars, model.domains = dict(space.model.vars), dict(space.model.domains)
    model.constraints = [*space.model.constraints, *new]
    return replace(space, model=model)


def _allowed(e: Any, bound: int) -> Any:
    return e < 10 if bound == 10 else z3.Or(e < 20)


def _code(label: str, choice: dict[str, int]) -> int:
    return int(choice[label])


def _labels(low: Node, loops: tuple, lowered: Lowered) -> list[str] | None:
    out = []
    for _kind, path in loops:
        try:
            node = at(low, path)
        except (IndexError, KeyError, TypeError, AttributeError):
            return None
        node = node.f if isinstance(node, FunCall) else node
        label = next((name for m, name in lowered if m is node), None)  # this very object, lowered
        if label is not None:
            out.append(label)
    return out


__all__ = ["NO_BARRIER", "Lesson", "learn", "taught"]
