"""Barrier insertion with the memory-access graph (thesis 5.4, Algorithm 3).

Barriers are sufficient (every pair of accesses by different work-items of a group that
touch one element, one of them writing, is ordered by a barrier), reachable (every
work-item of the group reaches each barrier equally often) and necessary (only dependent
pairs get one, each barrier is the only one ordering some pair, and it goes where it is
hit least often among the most shared places).

The pass reads a probe of the kernel (`graph.Probe`: its accesses with their index
expressions, loops and barrier places, from code generation run with `candidates`),
builds the memory-access graph (`graph`), finds the dependent pairs (`dependence`: cheap
proofs, then z3 over the index expressions per work-item), their critical paths and
reachable points (`reachability`: a loop whose work-items run different numbers of iterations
is made uniform where that is valid), and places barriers (`placement`). Accesses of
different work-groups to one element of global memory cannot be ordered at all and are
rejected with `NotSynchronisableError`, as are dependences with no reachable place.

Stage `Allocated -> Synchronised`: `insert_barriers(root, alloc, probe)`.
Postcondition: every placement is reachable by all work-items of a group, and every
dependent pair of accesses has a placement on its critical path.
"""

from __future__ import annotations

from lift.allocation import Allocated
from lift.barriers.conservative import insert_barriers_conservative
from lift.barriers.dependence import Dependences, Pair, pairs
from lift.barriers.graph import MAG, Probe, build_mag, flatten
from lift.barriers.placement import Critical, Placer, placements
from lift.barriers.reachability import Reach, unreachable
from lift.barriers.records import (
    FENCES,
    PROBE_FENCE,
    Dependence,
    Placement,
    Synchronised,
    Uniform,
    candidates,
    probe_key,
)
from lift.barriers.threads import Threads
from lift.errors import NotSynchronisableError
from lift.ir.nodes import Node


def insert_barriers(root: Node, alloc: Allocated, probe: Probe | None = None) -> Synchronised:
    """The barriers of the kernel allocated in `alloc`, from the probe of its code.

    `root` is the node the paths start from (the program). Without a probe (a caller that
    cannot run code generation first) this falls back to `insert_barriers_conservative`."""
    if probe is None:
        return insert_barriers_conservative(root, alloc)
    analysis = Analysis(probe)
    analysis.check_groups(root)
    after, uniform = placements(root, analysis.placer, analysis.critical(root))
    return Synchronised(alloc, after, uniform)


class Analysis:
    """The MAG of one kernel and the questions Algorithm 3 asks about it."""

    def __init__(self, probe: Probe) -> None:
        self.probe = probe
        self.flat = flatten(probe.body)
        self.mag: MAG = build_mag(self.flat)
        threads = Threads(probe, self.flat)
        self.deps = Dependences(self.mag, threads)
        self.reach = Reach(self.flat, threads)
        self.placer = Placer(self.mag, self.reach)

    def dependent(self) -> list[Pair]:
        """Algorithm 3, line 11: the pairs of accesses that need a barrier."""
        return [p for p in pairs(self.mag) if self.deps.depends(p)]

    def critical(self, root: Node) -> list[Critical]:
        """Algorithm 3, lines 12-17: each dependent pair with the reachable points that order it."""
        out = []
        for p in self.dependent():
            dep = self.deps.describe(p)
            points, usable = self.placer.candidates(p)
            if not usable:
                loop, why, fix = self.reach.explain(points or (p.first,))
                err = unreachable(root, self.probe, self.flat, loop, str(dep), why, fix)
                raise self._located(err, p, "unreachable")
            out.append(Critical(p, dep, frozenset(usable)))
        return out

    def check_groups(self, root: Node) -> None:
        """Reject accesses of different work-groups to one element of global memory."""
        for p in pairs(self.mag):
            if p.backward or not self.deps.across_groups(p.first, p.second):
                continue
            dep = self.deps.describe(p)
            raise self._located(NotSynchronisableError(
                f"{dep.first} and {dep.second} touch the same elements of {dep.buffer} ({dep.space}) "
                "from different work-groups, and work-groups cannot synchronise",
                hint="put the producer and the consumer in separate ocl_kernel stages"), p, "groups")

    def _located(self, err: NotSynchronisableError, p: Pair, why: str) -> NotSynchronisableError:
        """`err` with `loops`: (why, the IR paths of the maps around the first access, and around the
        second), so that the mapping model can learn which maps must not be parallel
        (`lift.constraints.learn`)."""
        paths = [tuple((info.kind, info.path) for info in (self.flat.loops[k] for k in self.flat.leaves[a].loops)
                       if info.path is not None) for a in (p.first, p.second)]
        err.loops = (why, paths[0], paths[1])
        return err


__all__ = ["insert_barriers", "insert_barriers_conservative", "Synchronised", "Placement", "Uniform", "Dependence",
           "FENCES", "PROBE_FENCE", "candidates", "probe_key", "Probe", "Analysis"]
