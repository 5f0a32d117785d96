"""Choosing what the user left open: rewrite points' structural parameters and tuning values.

`choose(expr, given, device)` is what `lift.compile` does with a program that has rewrite
points (thesis Algorithm 4, line 10: `solve(rp.structParams)`):

1. every point gets its structural parameters: the user's (`given[label]`), else the first
   value of each parameter's domain (`RewritePoint.structural()`, ordered by preference),
   and `skip=False`;
2. the points are applied (`apply_all`); the tile sizes they introduce are tuning variables
   (`T_label`, `TA_label`, ...);
3. each tuning variable not given (`given["T_R"] = 64`) is chosen by the constraint solver
   from the tuning space of the rewritten program (thesis 4.3: divisibility, ranges, device
   limits). With concrete input sizes the solver's choice is a valid value in the middle of
   the space; when a variable's constraints involve symbolic input sizes (`N`), no value but
   1 divides every size, so 1 is chosen (the program stays correct for every `N`).

The result never leaves a tuning variable undeclared, and `chosen` records every decision
(`{label: {param: value}}` for points, `{var: int}` for tuning values) for `Program.choices`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lift.arith import free_vars
from lift.constraints import tuning_space
from lift.constraints.tuning import collect_params, input_sizes
from lift.ir.nodes import Node
from lift.realise import substitute_sizes

from .apply import apply_all, points


def structural_choice(expr: Node, given: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """For each point label: the user's structural parameters, completed from the domains."""
    out: dict[str, dict[str, Any]] = {}
    for label, p in points(expr).items():
        mine = given.get(label, {})
        if mine is False or mine is True:
            mine = {"skip": not mine}
        full = {"skip": False}
        full.update({k: dom[0] for k, dom in p.structural().items() if dom and getattr(p, k, None) is None})
        full.update(dict(mine))
        out[label] = full
    return out


def tuning_vars(prog: Node, inputs: set[str]) -> set[str]:
    """Size variables of `prog`'s patterns that are not input sizes: the tuning variables to choose."""

    return set(collect_params(prog)) - inputs


def choose_tuning(prog: Node, names: set[str], given: Mapping[str, int], device: Any,
                  inputs: set[str]) -> dict[str, int]:
    """A value for each tuning variable in `names` (see the module docstring)."""

    fixed = {k: int(v) for k, v in given.items() if k in names}
    if set(fixed) == names:  # everything given: no space to build (the explorer's candidates)
        return fixed
    space = tuning_space(prog, device)
    symbolic = set()
    for c in space.constraints:
        used = {v.name for v in free_vars(c.pred.lhs) | free_vars(c.pred.rhs)} if c.pred else set()
        if used & inputs:
            symbolic |= used & names
    for k in space.params:
        p = space.params[k]
        bounds = [b for b in (p.lo, p.hi) if b is not None]
        if {v.name for b in bounds for v in free_vars(b)} & inputs:
            symbolic.add(k)
    out = {k: 1 for k in names if k in symbolic and k not in fixed}
    out.update(fixed)
    open_vars = [k for k in names if k not in out]
    # unbounded values (padding): the smallest valid one; bounded ones (tile sizes): the middle
    for k in [k for k in open_vars if k in space.params and space.params[k].hi is None]:
        out[k] = next((v for v in range(1, 257) if space.is_valid({**_known(out, space), k: v})), 1)
    rest = [k for k in open_vars if k not in out]
    if rest:

        space = tuning_space(substitute_sizes(prog, out), device) if out else space
        # several variables: more samples, so that each shows most of its values
        cands = space.sample(16 if len(rest) == 1 else 64, seed=0)
        if cands:
            pick = _middle(space, cands, sorted(rest))
            out.update({k: int(pick[k]) for k in rest if k in pick})
        out.update({k: 1 for k in rest if k not in out})
    return out


def _middle(space: Any, cands: list[dict[str, int]], names: list[str]) -> dict[str, int]:
    """A valid value in the middle for each variable of `names`, in name order: the middle of the
    values the samples `cands` show for it (the nearest one, smaller first, that still extends to
    a solution with those chosen before). With one variable, the median sample, as before; with
    several, sorting the samples by their tuple gave the first variable its middle and the others
    whatever that sample had (GESUMMV 2048^2: the second dot product got chunks of 256 vectors,
    one accumulator chain per row, where the first got 16. Zen 4, PoCL 3.0, interleaved medians:
    0.91 ms against 0.61 ms with 16 for both on a quiet machine; 5-8% when the VM's neighbours
    contend for memory bandwidth, in three spellings of the program)."""
    chosen: dict[str, int] = {}
    for k in names:
        values = sorted({c[k] for c in cands if k in c})
        mid = len(values) // 2
        for i in sorted(range(len(values)), key=lambda i: (abs(i - mid), i)):
            if not chosen or space.is_valid({**chosen, k: values[i]}):  # the first: a sample's, valid
                chosen[k] = values[i]
                break
        else:  # no sampled value goes with those chosen: the middle sample, a valid whole
            ordered = sorted(cands, key=lambda c: tuple(c.get(n, 1) for n in names))
            return dict(ordered[len(ordered) // 2])
    return chosen


def _known(values: Mapping[str, int], space: Any) -> dict[str, int]:
    return {k: v for k, v in values.items() if k in space.params}


def choose(expr: Node, given: Mapping[str, Any], device: Any = None) -> tuple[Node, dict[str, Any]]:
    """`expr` with its points applied and every tuning variable they introduced chosen;
    `given` holds the user's choices (point labels -> dicts, tuning names -> ints)."""

    structural = structural_choice(expr, {k: v for k, v in given.items() if not isinstance(v, int)})
    prog = apply_all(expr, structural)
    inputs = input_sizes(expr)
    names = tuning_vars(prog, inputs)
    chosen: dict[str, Any] = {k: dict(v) for k, v in structural.items()}
    if names:
        values = choose_tuning(prog, names, {k: v for k, v in given.items() if isinstance(v, int)}, device, inputs)
        prog = substitute_sizes(prog, values)
        chosen.update(values)
    return prog, chosen


def complete_points(expr: Node, choices: Any) -> Any:
    """A `lift.Choices` with every point's structural parameters completed from their domains."""
    if not points(expr):
        return choices
    return choices.replace(points=structural_choice(expr, choices.points))


def choose_open_tuning(expr: Node, pointed: Node, given: Mapping[str, int], device: Any) -> tuple[Node, dict[str, int]]:
    """`pointed` (the points of `expr` applied) with its open tuning variables chosen and substituted,
    and the values used (given ones included)."""

    inputs = input_sizes(expr)
    names = tuning_vars(pointed, inputs)
    if not names:
        return pointed, {}
    values = choose_tuning(pointed, names, given, device, inputs)
    return substitute_sizes(pointed, values), values


__all__ = ["choose", "complete_points", "choose_open_tuning", "structural_choice", "tuning_vars", "choose_tuning"]
