"""Thread configuration as tuning parameters: local sizes and group counts per dimension.

For a program with known sizes (its one kernel, or the kernel `kernel` of several),
`add_launch` declares `local_size_d` (powers of two within the device's per-dimension
limit) and `groups_d` for d = 0, 1, 2, and the
constraints tying them to the mapping: an unused dimension has one work-item and one
group; the work-group fits the device (hardware); a dimension used by `map_glb` launches at
most about twice as many work-items as its largest map has iterations; one used by
`map_wrg`/`map_lcl` has at most as many groups as a `map_wrg` has iterations and a local
size below twice a `map_lcl`'s iterations. The ND-range is `global = local * groups`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import z3

from lift.arith import Arith, substitute, to_z3
from lift.devices import Device

from .context import Context
from .mapping import DIMS, uses
from .model import Constraint, Model
from .tuning import PRIVATE_MEM, buffer_bytes, private_per_group

LAUNCH, WORK_GROUP = "launch configuration", "work-group size"
MAX_GROUPS = 1 << 12


def local_name(d: int) -> str:
    return f"local_size_{d}"


def groups_name(d: int) -> str:
    return f"groups_{d}"


def add_launch(model: Model, ctx: Context, device: Device, codes: Mapping[str, Any],
               sizes: Mapping[str, int], *, kernel: int | None = None) -> list[str]:
    """Declare the launch variables and constraints; their names. `kernel`: the context's kernel
    they size, in a program of several (its maps alone tie them to the mapping)."""
    names = []
    ls, ng = [], []
    for d in DIMS:
        top = min(device.max_work_item_sizes[d], device.max_work_group_size)
        ls.append(model.var(local_name(d), [1 << k for k in range(top.bit_length()) if 1 << k <= top]))
        ng.append(model.var(groups_name(d), range(1, MAX_GROUPS + 1)))
        names += [local_name(d), groups_name(d)]
    model.add(Constraint(WORK_GROUP, (), f"a work-group has at most {device.max_work_group_size} work-items",
                         ls[0] * ls[1] * ls[2] <= device.max_work_group_size, family="hardware"))
    _private_per_group(model, ctx, device, ls, sizes)
    maps = [m for m in ctx.maps.values() if kernel is None or m.kernel == kernel]
    labels = [m.label for m in maps]
    lens = {m.label: _z3(m.length, sizes) for m in maps}
    for d in DIMS:
        glb = [(codes[m.label] == 30 + d, lens[m.label]) for m in maps]
        wrg = [(codes[m.label] == 20 + d, lens[m.label]) for m in maps]
        lcl = [(codes[m.label] == 10 + d, lens[m.label]) for m in maps]
        g_used, w_used = uses(labels, codes, 30 + d), uses(labels, codes, 20 + d)  # shared with the mapping
        used = z3.Or(g_used, w_used, uses(labels, codes, 10 + d))
        model.add(_c(f"dimension {d} is unused: one work-item, one group",
                     z3.Implies(z3.Not(used), z3.And(ls[d] == 1, ng[d] == 1))))
        work = ls[d] * ng[d]  # one term shared by every map's bound
        model.add(_c(f"dimension {d} of map_glb launches at most twice its iterations",
                     z3.Implies(g_used, z3.Or([z3.And(c, work < 2 * n) for c, n in glb]))))
        model.add(_c(f"dimension {d}: groups no more than map_wrg iterations, local size below twice "
                     "map_lcl iterations",
                     z3.Implies(w_used, z3.And(z3.Or([z3.And(c, ng[d] <= n) for c, n in wrg]),
                                               z3.Or([z3.And(c, ls[d] < 2 * n) for c, n in lcl])))))
    return names


def _private_per_group(model: Model, ctx: Context, device: Device, ls: list, sizes: Mapping[str, int]) -> None:
    """The private arrays of a work-group's work-items fit where the device keeps them together."""

    limit, per_item = private_per_group(device), buffer_bytes(ctx, "private")
    if limit is None or per_item is None:
        return
    model.add(Constraint(PRIVATE_MEM, (), f"private buffers ({per_item} bytes per work-item) of a work-group "
                         f"fit in {limit} bytes (the worker thread's stack)",
                         _z3(per_item, sizes) * ls[0] * ls[1] * ls[2] <= limit, family="hardware"))


def _c(reason: str, f: Any) -> Constraint:
    return Constraint(LAUNCH, (), reason, f, family="launch")


def _z3(a: Arith, sizes: Mapping[str, int]) -> Any:
    return to_z3(substitute(a, sizes))


def ndrange(choice: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(global_size, local_size) of a choice with launch variables, trailing unit dims dropped."""
    if local_name(0) not in choice:
        return None
    ls = [int(choice[local_name(d)]) for d in DIMS]
    gs = [ls[d] * int(choice[groups_name(d)]) for d in DIMS]
    k = 3
    while k > 1 and gs[k - 1] == 1 and ls[k - 1] == 1:
        k -= 1
    return tuple(gs[:k]), tuple(ls[:k])
