"""Reachability: a barrier must be reached by every work-item of a group, as often by each.

A point is reachable when every loop around it runs the same number of iterations in
every work-item of a group: sequential loops and `map_wrg` loops always do (their bounds
do not depend on the local id); a `map_lcl` or `map_glb` loop does when z3 proves its trip
count equal for any two work-items of a group under the ND-range (e.g. `count` a multiple
of the work-group size). A point that is not reachable may still take a barrier when its
loop can be made uniform (`Reach.uniformisable`): every work-item runs the loop up to the
trip count rounded up to a multiple of the loop's stride, and the body, guarded by
`iteration < count`, is split at the barrier into guarded parts (`lift.barriers.records.Uniform`,
emitted by `lift.codegen.kernel`). That is valid when

* the point is directly in the body of the loop (between two of its IR stages), not inside a
  loop nested in it (the guard could not be split there: a divergent inner loop would need to
  be uniform as well, and a sequential one would need guards inside it);
* no other loop around the point is divergent;
* the loop is a `map_lcl` or `map_glb` whose stride (the work-group size or the global size
  in its dimension) is a constant known when the code is generated, or a single guarded trip
  (`once`: nothing to round). A stride the compiler only derives from the program's sizes
  (the default work-group size `min(M, 256)`) is not rounded up: request the sizes instead.

Every work-item then reaches each barrier once per trip, and work-items at the same trip are
in the same iteration of the loop, which is what the dependence analysis assumes. When a
dependence has no reachable point on its critical path, even so, the program is rejected with
`NotSynchronisableError` naming the loop and the sizes.
"""

from __future__ import annotations

import z3

from lift.arith import Arith, Cst
from lift.barriers.graph import Flat, LoopInfo, Probe
from lift.barriers.records import Uniform
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

    def divergent(self, leaf: int) -> list[int]:
        """The loops around the point at `leaf` that work-items run a different number of times."""
        return [k for k in self.flat.leaves[leaf].loops if not self.uniform(k)]

    def uniformisable(self, leaf: int) -> int | None:
        """The loop that, made uniform, makes the point at `leaf` reachable (None: there is none).

        The only divergent loop around the point, with the point directly in its body, and a
        stride to round its bound up to (see the module's docstring)."""
        div = self.divergent(leaf)
        if len(div) != 1 or self.flat.leaves[leaf].loops[-1] != div[0]:
            return None
        return div[0] if self.uniform_loop(div[0]) is not None else None

    def uniform_loop(self, k: int) -> Uniform | None:
        """How loop `k` is made uniform, or None when its kind or stride does not allow it."""
        info = self.flat.loops[k]
        if info.kind not in ("lcl", "glb") or info.path is None:
            return None
        if info.once:
            bound = info.count
        else:
            stride = self.stride(info)
            if stride is None:
                return None
            bound = (info.count + stride - 1) // stride * stride
        return Uniform(info.path, info.kind, info.dim, info.count, bound, info.once, info.comment)

    def stride(self, info: LoopInfo) -> Arith | None:
        """The constant number of work-items a parallel loop strides by (None: not a constant)."""
        sizes = self.threads.local_size if info.kind == "lcl" else self.threads.global_size
        s = sizes[info.dim] if sizes is not None and info.dim < len(sizes) else None
        return s if isinstance(s, Cst) and s.value >= 1 else None

    def why_not(self, leaf: int, k: int) -> tuple[str, str]:
        """Why loop `k` cannot be made uniform for a barrier at `leaf`, and what to do about it."""
        info = self.flat.loops[k]
        loops = self.flat.leaves[leaf].loops
        inner = list(loops[loops.index(k) + 1:]) if k in loops else []
        if inner:
            what = "divergent " if any(not self.uniform(j) for j in inner) else ""
            return (f"it cannot be made uniform either: the barrier would sit inside the {what}nested "
                    f"{self.flat.loops[inner[0]].comment}, not between two stages of its body", "")
        outer = [j for j in self.divergent(leaf) if j != k]
        if outer:
            return f"it cannot be made uniform either: {self.flat.loops[outer[0]].comment} around it diverges too", ""
        if info.kind in ("lcl", "glb") and not info.once and self.stride(info) is None:
            sizes = self.threads.local_size if info.kind == "lcl" else self.threads.global_size
            stride = sizes[info.dim] if sizes is not None and info.dim < len(sizes) else "chosen by the device"
            space = "local" if info.kind == "lcl" else "global"
            return (f"it cannot be made uniform either: its stride ({stride}) is not a constant to round its "
                    "bound up to", f"request a constant {space} size so that the loop can be made uniform")
        return "it cannot be made uniform either", ""

    def explain(self, leaves: tuple[int, ...]) -> tuple[int | None, str, str]:
        """The loop to blame for `leaves` (see `blame`), why it cannot be made uniform, and a hint."""
        k = self.blame(leaves)
        if k is None:
            return None, "", ""
        leaf = min((x for x in leaves if k in self.flat.leaves[x].loops),
                   key=lambda x: len(self.flat.leaves[x].loops))
        return (k, *self.why_not(leaf, k))

    def blame(self, leaves: tuple[int, ...]) -> int | None:
        """The loop that keeps a barrier at `leaves` from being reachable (None: none does).

        The innermost non-uniform loop around the point with the fewest loops around it:
        the loop a barrier could not get out of."""
        for leaf in sorted(leaves, key=lambda x: len(self.flat.leaves[x].loops)):
            for k in reversed(self.flat.leaves[leaf].loops):
                if not self.uniform(k):
                    return k
        return None


def unreachable(root: Node, probe: Probe, flat: Flat, loop: int | None, what: str,
                why: str = "", fix: str = "") -> NotSynchronisableError:
    """The error for a dependence (`what`) whose barrier would sit inside non-uniform `loop`
    (`why`: why the loop cannot be made uniform; `fix`: how it could be)."""
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
        f"different number of times, so not all of them would reach the barrier{'; ' + why if why else ''}",
        node=node,
        hint=f"choose sizes that make {info.count} a multiple of {units}({info.dim}), or move the "
             f"{info.kind} loop out of the synchronised code" + (f", or {fix}" if fix else ""))


__all__ = ["Reach", "unreachable"]
