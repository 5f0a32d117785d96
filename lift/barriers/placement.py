"""Barrier placement on the memory-access graph (thesis Algorithm 3, lines 10-30).

1. Every pair of dependent accesses (`lift.barriers.dependence`) gets its critical path:
   the shortest control flow between them in the MAG. The places where a barrier orders
   the pair are the reachable points of that path (points of the path's edges, in the
   loops around the accesses); when there is none, the points that become reachable when
   their loop is made uniform (`Reach.uniformisable`); none of either means
   `NotSynchronisableError`.
2. The weight of a point is the number of critical paths through it.
3. Each critical path not yet ordered by a chosen barrier gets one on its point of largest
   weight; ties go to the point hit least often (fewest loops that may iterate around it),
   then to the later point in the control flow.
4. Duplicates are removed: a barrier whose paths are all ordered by other chosen barriers
   goes, the most often hit first. Each remaining barrier is the only one on some path.
5. The fence of a barrier covers the address spaces of the dependences it orders.
6. A chosen barrier that is not reachable makes its loop uniform (`Synchronised.uniform`),
   which its record (`Placement.uniform`, `BarrierInfo.reason`) says.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from lift.arith import Cst
from lift.barriers.dependence import Pair
from lift.barriers.graph import MAG, Flat, LoopInfo, Point, route_points
from lift.barriers.reachability import Reach
from lift.barriers.records import Dependence, Placement, Uniform, fence_for
from lift.ir.nodes import FunCall, Node
from lift.ir.paths import Path, at


@dataclass(frozen=True)
class Critical:
    """A dependent pair, its dependence record and the points that order it."""

    pair: Pair
    dependence: Dependence
    points: frozenset[int]


class Placer:
    """Chooses barrier points for the critical paths of one kernel."""

    def __init__(self, mag: MAG, reach: Reach) -> None:
        self.mag = mag
        self.flat = mag.flat
        self.reach = reach
        keys = Counter(self.key(i) for i, leaf in enumerate(self.flat.leaves) if isinstance(leaf.item, Point))
        self.unique = {k for k, n in keys.items() if n == 1}
        self.slot = _slots(self.flat)

    def key(self, leaf: int) -> Path:
        item = self.flat.leaves[leaf].item
        assert isinstance(item, Point)
        return item.key

    def candidates(self, p: Pair) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(every point of the critical path that orders `p`, the usable ones among them): the
        reachable points, or when there are none, those reachable once their loop is uniform."""
        pts = tuple(x for x in route_points(self.mag, p.first, p.second, p.backward) if self.key(x) in self.unique)
        reachable = tuple(x for x in pts if self.reach.reachable(x))
        return pts, reachable or tuple(x for x in pts if self.reach.uniformisable(x) is not None)

    def uniform(self, leaf: int) -> Uniform | None:
        """How the loop around a chosen point is made uniform (None: the point is reachable as it is)."""
        if self.reach.reachable(leaf):
            return None
        k = self.reach.uniformisable(leaf)
        assert k is not None, "an unreachable point was chosen"
        return self.reach.uniform_loop(k)

    def hits(self, leaf: int) -> int:
        """How many loops around a point may run more than one iteration."""
        return sum(1 for k in self.flat.leaves[leaf].loops if not _single(self.flat.loops[k]))

    def choose(self, paths: list[Critical]) -> list[int]:
        """Algorithm 3: a barrier on the most shared point of each path, then duplicates removed."""
        weight = Counter(x for c in paths for x in c.points)
        chosen: list[int] = []
        for c in paths:
            if not c.points & set(chosen):
                chosen.append(max(c.points, key=lambda x: (weight[x], -self.hits(x), self.slot[x], -x)))
        for x in sorted(chosen, key=lambda x: (self.hits(x), -weight[x], -x), reverse=True):
            rest = set(chosen) - {x}
            if all(c.points & rest for c in paths):
                chosen.remove(x)
        return sorted(chosen)


def placements(root: Node, placer: Placer, paths: list[Critical]
               ) -> tuple[dict[Path, tuple[Placement, ...]], dict[Path, Uniform]]:
    """The chosen barriers as placements after IR nodes, each with the dependences it orders,
    and the loops made uniform for them, by the IR path of their map."""
    out: dict[Path, tuple[Placement, ...]] = {}
    uniform: dict[Path, Uniform] = {}
    for x in placer.choose(paths):
        deps = tuple(dict.fromkeys(c.dependence for c in paths if x in c.points))
        key = placer.key(x)
        reason = "; ".join(str(d) for d in deps)
        u = placer.uniform(x)
        if u is not None:
            uniform[u.path] = u
            reason = f"{reason}; {u.note}"
        buffers = tuple(dict.fromkeys(d.buffer for d in deps))
        fence = fence_for({d.space for d in deps})
        out[key] = (Placement(key, fence, _show(at(root, key)), reason, buffers, deps, u.note if u else ""),)
    return out, uniform


def _slots(flat: Flat) -> dict[int, int]:
    """Each point's place in the code: the first of the points right next to it in the same loops.

    Consecutive points mark the same place (after a node and after the nodes that end with
    it); the earliest, the innermost node, names the place best."""
    out: dict[int, int] = {}
    for i, leaf in enumerate(flat.leaves):
        if not isinstance(leaf.item, Point):
            continue
        prev = flat.leaves[i - 1] if i else None
        same = prev is not None and isinstance(prev.item, Point) and prev.loops == leaf.loops
        out[i] = out[i - 1] if same else i
    return out


def _single(info: LoopInfo) -> bool:
    return (info.once and not info.guard) or info.count == Cst(1)


def _show(x: Node) -> str:
    f = x.f if isinstance(x, FunCall) else x
    text = str(f)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["Critical", "Placer", "placements"]
