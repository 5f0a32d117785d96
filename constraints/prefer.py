"""Completing a partial joint choice with preferences: the choice a seed of the tuner or the
default compile of a register-blocked program gets for what it leaves open.

Maps at the top of a kernel global (code 30), maps inside them sequential (0), work-groups of
`LOCAL` work-items and as many groups as the launch constraints allow (one work-item per
iteration). A 2-D grid of blocks (`grid`) gets groups one column block wide and `LOCAL` row
blocks tall: on a CPU device a group's work-items run one after another (dimension 0 fastest)
and then share their column strip's panel (BN x W scalars per step of k, the larger operand of a
block; a row block reads BM). On Zen 1 (PoCL), matmul 1024^3, packed 4 x 2 float8 blocks: the
block kernel ran 28.1 ms with 1 x 64 groups, 29.5 with PoCL's own choice, 30.3 with 64 x 1
(interleaved, 5 rounds); with B packed alone, 29.0 ms with 1 x 64 against 29.0-30.1 with 1 x 8,
1 x 16, 1 x 32, 1 x 128, 2 x 16 and 4 x 16 (7 rounds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import z3

from lift.arith import evaluate, substitute

from .limits import PREFER_RLIMIT, limited

LOCAL = 64  # preferred work-group size


def _exact_groups(space: Any, joint: dict[str, int]) -> dict[str, int]:
    """`joint` with each `map_glb` dimension launched with one work-item per iteration of its
    longest map (groups = iterations / local size, rounded up) where the model accepts it: the
    preference for many groups alone takes the most the launch constraints allow, up to twice
    the iterations (matmul 1024^3: 127 groups of one work-item over 64 column blocks, half of
    them idle behind the bounds check)."""
    out = dict(joint)
    for d in range(3):
        local, groups = f"local_size_{d}", f"groups_{d}"
        if local not in joint or groups not in joint:
            continue
        lengths = [evaluate(substitute(m.length, space.sizes or {})) for m in space.launch_maps()
                   if joint.get(m.label) == 30 + d]
        if not lengths:
            continue
        exact = -(-max(lengths) // joint[local])
        if exact != joint[groups] and space.model.is_valid({**out, groups: exact}):
            out[groups] = exact
    return out


Grid = bool | tuple[int, int]  # a 2-D grid of blocks; a pair: its work-group (dimension 0, dimension 1)


def complete(space: Any, partial: Mapping[str, int], grid: Grid = False) -> dict[str, int] | None:
    """A valid joint choice extending `partial`, preferring top-level maps global and the
    maps inside them sequential (with `grid`: the maps one level inside global in dimension 0,
    the top-level ones in dimension 1, in groups of 1 x `LOCAL` or of the pair `grid`), and
    launches of many work-items (groups of `LOCAL`);
    None if `partial` cannot be extended. Found by the concrete sampler in preference order
    (milliseconds); an optimising z3 query (~0.1-0.4 s) only when that finds nothing."""
    fast = _complete_fast(space, partial, grid)
    if fast is not None:
        return _exact_groups(space, fast)
    model = space.model
    s, _ = model.solver()
    opt = limited(z3.Optimize(), PREFER_RLIMIT)  # the same seeds however loaded the machine is
    opt.add(s.assertions())
    opt.add([model.vars[k] == int(v) for k, v in partial.items()])
    for lab, site in space.context.maps.items():
        if lab in model.vars:
            opt.add_soft(model.vars[lab] == _code(site, grid), 100)
    groups = [model.vars[f"groups_{d}"] for d in range(3) if f"groups_{d}" in model.vars]
    for k, v in _local_want(grid).items():
        if k in model.vars:
            opt.add_soft(model.vars[k] == v, 10)
    if groups:
        opt.maximize(z3.Sum(groups))
    if opt.check() != z3.sat:
        return None
    m = opt.model()
    return _exact_groups(space, {k: m.eval(model.vars[k], model_completion=True).as_long() for k in space.variables})


def _local_want(grid: Grid) -> dict[str, int]:
    """The preferred local sizes: `LOCAL` in every dimension, or with `grid` (column blocks in
    dimension 0, row blocks in dimension 1) groups of one column block and `LOCAL` row blocks,
    or the pair `grid` (the largest valid size below each is taken where it is not valid)."""
    if isinstance(grid, tuple):
        return {"local_size_0": grid[0], "local_size_1": grid[1]}
    if grid:
        return {"local_size_0": 1, "local_size_1": LOCAL}
    return {f"local_size_{d}": LOCAL for d in range(3)}


def _code(site: Any, grid: Grid) -> int:
    """The preferred mapping code of a map: top-level global (dimension 1 with `grid`), one level
    inside sequential (global in dimension 0 with `grid`), deeper sequential."""
    if grid:
        return 31 if not site.outer else 30 if len(site.outer) == 1 else 0
    return 0 if site.outer else 30


def _complete_fast(space: Any, partial: Mapping[str, int], grid: Grid = False) -> dict[str, int] | None:
    """`complete` by the concrete sampler: block rows ranked by the same penalties as the soft
    constraints (a map off its preferred code 100, a work-group size other than `LOCAL` 10),
    then preferred values first and as many groups as allowed (greedily, dimension by dimension)."""
    model = space.model
    want = {lab: _code(site, grid) for lab, site in space.context.maps.items() if lab in model.vars}
    want.update({k: v for k, v in _local_want(grid).items() if k in model.vars})

    def weight(k: str) -> int:
        return 10 if k.startswith("local_size_") else 100

    def row_cost(rows: Mapping[str, Any]) -> Any:
        cost = 0
        for k, col in rows.items():
            if k in want:
                cost = cost + weight(k) * (col != want[k])
        return cost + np.zeros(len(next(iter(rows.values()))), dtype=np.int64)

    def prefer(name: str, values: list[int]) -> list[int]:
        if name.startswith("local_size_") and name in want:  # else the largest below (32 of tmm's row blocks)
            return sorted(values, key=lambda v: (v != want[name], v > want[name], -v))
        if name in want:
            return sorted(values, key=lambda v: (v != want[name], v))
        return sorted(values, reverse=name.startswith("groups_"))

    sol = model.preferred({k: int(v) for k, v in partial.items()}, prefer, row_cost)
    return None if sol is None else {k: sol[k] for k in space.variables}


__all__ = ["complete", "LOCAL"]
