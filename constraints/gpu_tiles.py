"""The GPU tiling space of a `gpu_tiles` point (rewrites/gpu_tiles.py) as named z3 constraints.

Variables: `tm`, `tn` (a work-group's tile of the output), `tk` (the k-tile staged in local
memory), `bm`, `bn` (a work-item's register tile), `vec` (scalars per load of the copies into
local memory: 4 is one float4 load and store). Constraints, each named by its kind:

- "tile divides size" (algorithmic): tm | M, tn | N, tk | K (no partial tiles);
- "register tile divides work-group tile" (algorithmic): bm | tm, bn | tn;
- "vector loads aligned" (algorithmic): vec | tk, vec | tm, vec | tn, so that every row a copy
  reads (a k-tile's row of A or B, or of B's tiles when B is given as [K][N]) is whole vectors,
  and with the tile-divides constraints every row stride (K, M, N) too: the code generator then
  proves the loads aligned (`((global float4*)p)[..]`; a padded window it cannot prove aligned,
  as in a convolution, is read with the pad conditions per vector or gathered);
- "local memory size" (hardware): (tm*tk + tn*tk + tm*tn) scalars (both k-tiles and the tile's
  accumulator) fit the device's local memory;
- "work-group size" (hardware): (tm/bm) * (tn/bn) work-items within the device's limit, and each
  dimension within its `max_work_item_sizes`;
- "launch configuration" (launch): at most `DEFAULT_LOCAL_DIM` work-items per dimension (the
  default 2-D work-group of `lift.codegen.kernel.cap`, which launches the kernel);
- "registers per work-item" (hardware): bm*bn accumulators + bm + bn operands within
  `registers_per_item(device)`, an estimate: 64 32-bit registers where the GPU has a register
  file of its own and dedicated local memory (an NVIDIA SM: 64K registers for up to 2048
  resident work-items; 64 keeps half of them resident), 32 where local memory is emulated in
  RAM (Mali Bifrost: 64 registers per thread at full occupancy), 256 on a CPU.

The first choice (`first`) prefers, in order: enough work-groups for the compute units, work-groups
of up to 256 work-items, larger register tiles, larger work-group tiles, longer k-tiles, vector
loads (fewer, wider memory instructions; coalesced either way).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping

import z3

from lift.devices import Device

from .limits import GPU_TILES_RLIMIT, limited
from .model import Constraint, Model
from .tuning import LOCAL_MEM

TILE_DIVIDES, BLOCK_DIVIDES = "tile divides size", "register tile divides work-group tile"
VECTOR_ALIGNED = "vector loads aligned"
WORK_GROUP, LAUNCH, REGISTERS = "work-group size", "launch configuration", "registers per work-item"
DEFAULT_LOCAL_DIM = 16  # lift.codegen.kernel.cap for a 2-D map_lcl nest
DEFAULT_LOCAL = 256  # lift.codegen.kernel.cap for a 1-D map_lcl
PREFERRED_GROUP = 256
VARS = ("tm", "tn", "tk", "bm", "bn", "vec")


def registers_per_item(device: Device) -> int:
    """The estimated 32-bit registers a work-item's register tile may use on `device` (see the module)."""
    if device.kind != "gpu":
        return 256
    return 32 if device.local_mem_emulated else 64



class _Space:
    """Variables with finite domains and named constraints; the valid choices in preference order."""

    names: tuple[str, ...] = ()
    defaults: Mapping[str, int] = {}  # the value of a variable a choice leaves out

    def __init__(self, device: Device, domains: Mapping[str, tuple[int, ...]]) -> None:
        self.device = device
        self.domains = {k: tuple(domains[k]) for k in self.names}
        self.model = Model()
        self.vars = {k: self.model.var(k, self.domains[k]) for k in self.names}

    def _done(self) -> None:
        self._checker = limited(z3.Solver(), GPU_TILES_RLIMIT)
        self._checker.add(*(c.formula for c in self.model.constraints))

    @property
    def constraints(self) -> list[Constraint]:
        return self.model.constraints

    def is_valid(self, choice: Mapping[str, int]) -> bool:
        """Whether the full `choice` (every variable but those with a default) holds every constraint."""
        choice = {**self.defaults, **choice}
        if any(int(choice[k]) not in self.domains[k] for k in self.names):
            return False
        return self._checker.check(*(self.vars[k] == int(choice[k]) for k in self.names)) == z3.sat

    def violated(self, choice: Mapping[str, int]) -> tuple[Constraint, ...]:
        """The constraints `choice` breaks (the model's unsat core), empty when it is valid."""
        choice = {**self.defaults, **choice}
        return self.model.core({k: int(choice[k]) for k in self.names}) or ()

    def key(self, choice: dict[str, int]) -> tuple:
        """The preference order (smaller first)."""
        return ()

    def ordered(self) -> list[dict[str, int]]:
        """Every assignment of the domains, preferred first."""
        combos = [dict(zip(self.names, vals)) for vals in itertools.product(*(self.domains[k] for k in self.names))]
        return sorted(combos, key=self.key)

    def plausible(self, choice: dict[str, int]) -> bool:
        """A cheap necessary condition for validity, checked before z3 (which decides)."""
        return True

    def choices(self) -> Iterator[dict[str, int]]:
        """The valid choices, preferred first."""
        return (c for c in self.ordered() if self.plausible(c) and self.is_valid(c))

    def first(self) -> dict[str, int] | None:
        """The preferred valid choice, or None when the space is empty."""
        return next(self.choices(), None)


class TileSpace(_Space):
    """The tiling choices of one `gpu_tiles` nest of sizes (M, N, K) on `device`."""

    names = VARS
    defaults = {"vec": 1}  # a choice without `vec`: scalar copies (as the point's rewrite takes it)

    def __init__(self, sizes: tuple[int, int, int], device: Device, domains: Mapping[str, tuple[int, ...]],
                 elem_bytes: int = 4) -> None:
        super().__init__(device, {"vec": (1,), **domains})  # without `vec`: scalar copies
        self.sizes, self.elem_bytes = sizes, elem_bytes
        v, add = self.vars, self.model.add
        m, n, k = sizes
        for name, size in (("tm", m), ("tn", n), ("tk", k)):
            add(Constraint(TILE_DIVIDES, (name,), f"{name} divides {size}", size % v[name] == 0, family="algorithmic"))
        for blk, tile in (("bm", "tm"), ("bn", "tn")):
            add(Constraint(BLOCK_DIVIDES, (blk,), f"{blk} divides {tile}", v[tile] % v[blk] == 0,
                           family="algorithmic"))
        for tile in ("tk", "tm", "tn"):
            add(Constraint(VECTOR_ALIGNED, ("vec",), f"vec divides {tile}: the copies' rows are whole vectors",
                           v[tile] % v["vec"] == 0, family="algorithmic"))
        scalars = v["tm"] * v["tk"] + v["tn"] * v["tk"] + v["tm"] * v["tn"]
        add(Constraint(LOCAL_MEM, (), f"the k-tiles and the tile's accumulator ({elem_bytes}-byte scalars) fit in "
                       f"{device.local_mem_bytes} bytes of local memory",
                       elem_bytes * scalars <= device.local_mem_bytes, family="hardware"))
        lx, ly = v["tn"] / v["bn"], v["tm"] / v["bm"]
        add(Constraint(WORK_GROUP, (), f"a work-group has at most {device.max_work_group_size} work-items",
                       lx * ly <= device.max_work_group_size, family="hardware"))
        for d, size in ((0, lx), (1, ly)):
            add(Constraint(WORK_GROUP, (), f"dimension {d} has at most {device.max_work_item_sizes[d]} work-items",
                           size <= device.max_work_item_sizes[d], family="hardware"))
            add(Constraint(LAUNCH, (), f"dimension {d} of the default work-group has at most {DEFAULT_LOCAL_DIM} "
                           "work-items", size <= DEFAULT_LOCAL_DIM, family="launch"))
        budget = registers_per_item(device)
        add(Constraint(REGISTERS, (), f"a register tile (bm*bn accumulators, bm + bn operands) within {budget} "
                       "registers", v["bm"] * v["bn"] + v["bm"] + v["bn"] <= budget, family="hardware"))
        self._done()

    def plausible(self, c: dict[str, int]) -> bool:
        """The divisibility constraints, in Python (most assignments fail one; z3 then decides)."""
        m, n, k = self.sizes
        return (m % c["tm"] == 0 and n % c["tn"] == 0 and k % c["tk"] == 0 and c["tm"] % c["bm"] == 0
                and c["tn"] % c["bn"] == 0 and all(c[t] % c["vec"] == 0 for t in ("tk", "tm", "tn")))

    def key(self, c: dict[str, int]) -> tuple:
        """Enough work-groups for the compute units, groups of up to 256 work-items, larger register
        tiles, larger work-group tiles, longer k-tiles."""
        m, n, _ = self.sizes
        groups = (m // c["tm"]) * (n // c["tn"]) if m % c["tm"] == 0 and n % c["tn"] == 0 else 0
        items = (c["tm"] // c["bm"]) * (c["tn"] // c["bn"])
        return (-min(groups, max(self.device.compute_units, 1)), -min(items, PREFERRED_GROUP),
                -(c["bm"] * c["bn"]), -(c["tm"] * c["tn"]), -c["tk"], -c["vec"])


class ReduceSpace(_Space):
    """The choices of a `gpu_reduce` point over `length` elements: `local` work-items per group,
    `chunk` elements each. Constraints: "tile divides size" (local*chunk | length), "work-group
    size", "launch configuration" (at most `DEFAULT_LOCAL` work-items: the default 1-D group),
    "local memory size" (the tree's buffers: under 2*local scalars). With `whole` (a `gpu_rows`
    point: a work-group per row), local*chunk is the row's length and the largest group is first."""

    names = ("local", "chunk")

    def __init__(self, length: int, device: Device, domains: Mapping[str, tuple[int, ...]],
                 elem_bytes: int = 4, *, whole: bool = False) -> None:
        super().__init__(device, domains)
        self.length, self.elem_bytes, self.whole = length, elem_bytes, whole
        loc, chunk, add = self.vars["local"], self.vars["chunk"], self.model.add
        add(Constraint(TILE_DIVIDES, ("local", "chunk"), f"local x chunk divides {length}",
                       length % (loc * chunk) == 0, family="algorithmic"))
        if whole:  # gpu_rows: a work-group per row
            add(Constraint(TILE_DIVIDES, ("local", "chunk"), f"a work-group reduces a whole row of {length}",
                           loc * chunk == length, family="algorithmic"))
        add(Constraint(WORK_GROUP, (), f"a work-group has at most {device.max_work_group_size} work-items",
                       loc <= min(device.max_work_group_size, device.max_work_item_sizes[0]), family="hardware"))
        add(Constraint(LAUNCH, (), f"the default work-group has at most {DEFAULT_LOCAL} work-items",
                       loc <= DEFAULT_LOCAL, family="launch"))
        add(Constraint(LOCAL_MEM, (), f"the tree's buffers fit in {device.local_mem_bytes} bytes of local memory",
                       2 * elem_bytes * loc <= device.local_mem_bytes, family="hardware"))
        self._done()

    def key(self, c: dict[str, int]) -> tuple:
        """At least two work-groups per compute unit, then the longest chunks (fewer trees and
        atomics), then the largest groups; short arrays: the most work-groups."""
        if self.whole:
            return (-c["local"],)
        groups = self.length // (c["local"] * c["chunk"])
        full = groups >= 2 * max(self.device.compute_units, 1)
        return (not full, -c["chunk"] if full else -groups, -c["local"])


__all__ = ["TileSpace", "ReduceSpace", "registers_per_item", "TILE_DIVIDES", "BLOCK_DIVIDES", "VECTOR_ALIGNED",
           "WORK_GROUP",
           "LAUNCH", "REGISTERS"]
