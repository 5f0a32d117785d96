"""Uniqueness constraints (thesis 7.2.1): one candidate per distinct kernel, not many.

The tuner's joint space (`joint_space(..., unique=True)`, what `lift.tune` searches unless its
effort is "exhaustive") adds two families of named constraints to the mapping and tuning model:

- "sequential tile" (`tile_constraints`): a tuning parameter whose only effect is the trip
  counts of loops (the maps whose length mentions it, found from the program's map sites) is
  fixed to one value whenever every one of those maps runs sequentially (code 0, or fused into a
  sequential parent): the loops then visit the same elements in the same order whatever the tile
  size, so the kernels differ only in loop bounds, not in memory access or parallelism. The
  value is the smallest one the model allows with those maps sequential (`canonical_value`).
- "symmetric dimension" (`dimension_constraints`): OpenCL's dimensions 1 and 2 are
  interchangeable (dimension 0 is the one consecutive work-items share), so of a mapping and
  the one with dimensions 1 and 2 swapped only the one where the first map (in pre-order) of a
  kernel using either uses dimension 1 is kept. Only where the device allows as many
  work-items in dimension 1 as in 2 (else the two are not the same launch).

Both keep at least one mapping of every class (the representative satisfies everything the
others did), so the solver's optimum and every kernel the space could produce stay reachable up
to those equivalences. `lift.explore.unique` de-duplicates what the constraints cannot see
(candidates whose rewritten program and choices, or planned source, equal one measured).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import z3

from lift.arith import free_vars

from .context import Context
from .mapping import SEQ, effective_codes
from .model import Constraint, Model, code_in

SEQUENTIAL_TILE = "sequential tile"
SYMMETRIC_DIMENSION = "symmetric dimension"
SCAN_LIMIT = 256  # values of a tuning parameter scanned for its canonical value


def sized_maps(ctx: Context, name: str) -> list[str]:
    """The labels of the maps whose trip count mentions the tuning parameter `name`."""
    return [m.label for m in ctx.maps.values() if any(v.name == name for v in free_vars(m.length))]


def canonical_value(model: Model, name: str, sequential: Any) -> int | None:
    """The largest value of `name` the model allows when `sequential` holds (the fewest tiles:
    the loops closest to the program as written); None when no solution has `sequential` (or z3
    cannot tell within its limits)."""
    s, _ = model.solver()
    s.add(sequential)
    v = model.vars[name]
    for value in model.domains[name][::-1][:SCAN_LIMIT]:
        s.push()
        s.add(v == value)
        got = s.check()
        s.pop()
        if got == z3.sat:
            return value
        if got == z3.unknown:
            return None
    return None


def tile_constraints(model: Model, ctx: Context, params: Mapping[str, Any],
                     codes: Mapping[str, Any]) -> Iterator[Constraint]:
    """The "sequential tile" constraints of the tuning parameters `params` (see the module)."""
    eff = effective_codes(ctx, dict(codes))
    for name in sorted(params):
        if name not in model.vars:
            continue
        sites = sized_maps(ctx, name)
        if not sites:  # it sizes no loop of ours (a vector width, a buffer): it may change the kernel
            continue
        sequential = z3.And([eff[m] == SEQ for m in sites])
        value = canonical_value(model, name, sequential)
        if value is None:
            continue
        yield Constraint(SEQUENTIAL_TILE, tuple(sites),
                         f"{name} sizes only the loops {', '.join(sites)}: with all of them sequential it "
                         f"cannot change the kernel's accesses, fixed to {value} (7.2.1)",
                         z3.Implies(sequential, model.vars[name] == value), family="uniqueness")


def _dim(codes: Mapping[str, Any], label: str, d: int) -> Any:
    return code_in(codes[label], (10 + d, 20 + d, 30 + d))


def dimension_constraints(ctx: Context, codes: Mapping[str, Any], device: Any) -> Iterator[Constraint]:
    """The "symmetric dimension" constraints, one per kernel (see the module)."""
    sizes = tuple(getattr(device, "max_work_item_sizes", ()) or ())
    if len(sizes) < 3 or sizes[1] != sizes[2]:
        return
    for k in ctx.kernels:
        order = [m.label for m in sorted(ctx.maps.values(), key=lambda s: s.path) if m.kernel == k]
        if len(order) < 2:
            continue
        parts = []
        for i, lab in enumerate(order):  # the first map on dimension 1 or 2 is on 1
            before = [z3.Not(z3.Or(_dim(codes, p, 1), _dim(codes, p, 2))) for p in order[:i]]
            parts.append(z3.Not(z3.And(*before, _dim(codes, lab, 2))))
        yield Constraint(SYMMETRIC_DIMENSION, tuple(order),
                         f"dimensions 1 and 2 are interchangeable: the first of {', '.join(order)} "
                         "on either uses dimension 1 (7.2.1)", z3.And(parts), family="uniqueness")


def add_unique(model: Model, ctx: Context, params: Mapping[str, Any], codes: Mapping[str, Any] | None,
               device: Any) -> list[Constraint]:
    """Add the uniqueness constraints to `model` (a joint space's, with its map `codes`); the
    constraints added."""
    if not codes:
        return []
    added = list(dimension_constraints(ctx, codes, device))
    for c in added:
        model.add(c)
    tiles = list(tile_constraints(model, ctx, params, codes))
    for c in tiles:
        model.add(c)
    return added + tiles


__all__ = ["add_unique", "tile_constraints", "dimension_constraints", "sized_maps", "canonical_value",
           "SEQUENTIAL_TILE", "SYMMETRIC_DIMENSION"]
