"""Reachability: a barrier must be reached by every work-item of a group, as often by each.

A point is reachable when every loop around it runs the same number of iterations in
every work-item of a group: sequential loops and `map_wrg` loops always do (their bounds
do not depend on the local id); a `map_lcl` or `map_glb` loop does when z3 proves its trip
count equal for any two work-items of a group under the ND-range (e.g. `count` a multiple
of the work-group size). When a dependence has no reachable point on its critical path,
the program is rejected with `NotSynchronisableError` naming the loop and the sizes.
"""

from __future__ import annotations

import z3

from lift.barriers.graph import Flat, LoopInfo, Probe
from lift.barriers.threads import Copy, Threads
from lift.errors import NotSynchronisableError
from lift.ir.nodes import FunCall, Node
from lift.ir.paths import at


class Reach:
    """Which loops are uniform within a work-group, and so which points are reachable."""

    def __init__(self, flat: Flat, threads: Threads) -> None:
        self.flat = flat
        self.threads = threads
        self.cache: dict[int, bool] = {}

    def uniform(self, k: int) -> bool:
        """Whether loop `k` runs equally many iterations in every work-item of a group."""
        if k not in self.cache:
            self.cache[k] = self._uniform(self.flat.loops[k])
        return self.cache[k]

    def _uniform(self, info: LoopInfo) -> bool:
        if info.kind in ("seq", "wrg") or (info.once and not info.guard):
            return True
        t = self.threads
        c1 = t.copy("1")
        c2 = t.copy("2", group=c1.grp)
        return t.solve((c1, c2), self.trips(info, c1) != self.trips(info, c2)) == z3.unsat

    def trips(self, info: LoopInfo, c: Copy) -> z3.ArithRef:
        """The number of iterations work-item `c` runs of loop `info`."""
        start, step = self.threads.start_step(info, c)
        count = self.threads.term(info.count, {})
        runs = z3.IntVal(1) if info.once else (count - 1 - start) / step + 1
        return z3.If(start < count, runs, 0)

    def reachable(self, leaf: int) -> bool:
        """Whether every work-item of a group reaches the point at `leaf` equally often."""
        return all(self.uniform(k) for k in self.flat.leaves[leaf].loops)

    def blame(self, leaves: tuple[int, ...]) -> int | None:
        """The loop that keeps a barrier at `leaves` from being reachable (None: none does).

        The innermost non-uniform loop around the point with the fewest loops around it:
        the loop a barrier could not get out of."""
        for leaf in sorted(leaves, key=lambda x: len(self.flat.leaves[x].loops)):
            for k in reversed(self.flat.leaves[leaf].loops):
                if not self.uniform(k):
                    return k
        return None


def unreachable(root: Node, probe: Probe, flat: Flat, loop: int | None, what: str) -> NotSynchronisableError:
    """The error for a dependence (`what`) whose barrier would sit inside non-uniform `loop`."""
    if loop is None:
        return NotSynchronisableError(f"no place for a barrier between the accesses of {what}",
                                      hint="compute the value into a buffer of its own first")
    info = flat.loops[loop]
    node = at(root, info.path) if info.path is not None else None
    if isinstance(node, FunCall):
        node = node.f
    ls = probe.local_size[info.dim] if probe.local_size and info.dim < len(probe.local_size) else None
    group = f"work-groups of {ls} work-items" if ls is not None else "work-groups of the device's size"
    units = "get_local_size" if info.kind == "lcl" else "get_global_size"
    return NotSynchronisableError(
        f"the barrier for {what} would sit inside {info.comment}, a {info.kind} loop of {info.count} "
        f"iterations over {units}({info.dim}) ({group} in dimension {info.dim}); work-items run it a "
        "different number of times, so not all of them would reach the barrier",
        node=node,
        hint=f"choose sizes that make {info.count} a multiple of {units}({info.dim}), or move the "
             f"{info.kind} loop out of the synchronised code")


__all__ = ["Reach", "unreachable"]
