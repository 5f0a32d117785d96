"""The memory-access graph (thesis 5.4.1) of one kernel, built from a probe of its code.

A probe is the kernel's loop structure with, in program order, every access to local or
global memory (`Acc`: produce = write, consume = read, the buffer, its space and its index
range) and every place the code generator can put a barrier (`Point`: right after the IR
node at `key`). The probe comes from code generation run once with a candidate barrier
after every node (`lift.barriers.records.candidates`), so the accesses, index expressions
and loops are exactly those of the generated kernel.

The MAG has a vertex per access and an edge per pair of accesses that follow each other in
the control flow: the next access in program order, and, for every loop, the back edge from
the last access of its body to the first (write-after-read across iterations). An edge
holds the points of the code between its two accesses; a barrier at one of them orders the
two accesses. Whether a point is reachable by every work-item is decided per loop in
`lift.barriers.reachability`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lift.arith import Arith, Var
from lift.ir.paths import Path

# ---------------------------------------------------------------------- probe


@dataclass(frozen=True, slots=True)
class Acc:
    """One memory access: `width` consecutive elements of `mem` from index `lo`."""

    mem: str
    space: str  # "local" or "global"
    write: bool
    lo: Arith
    width: int
    text: str  # the access in C, e.g. "tmp[l]"
    where: str  # the statement's comment (the user function or the copy it belongs to)
    when: tuple[tuple[Arith, bool, Arith | None], ...] = ()  # padding: only if each 0 <= c < hi


@dataclass(frozen=True, slots=True)
class Point:
    """A place for a barrier: right after the code of the IR node at `key`."""

    key: Path


@dataclass(frozen=True, slots=True)
class LoopInfo:
    """A loop of the kernel: `kind` glb/wrg/lcl/seq in dimension `dim`, `count` iterations in all.

    A parallel loop starts at the work-item's id and strides by the number of work-items;
    `once`: the ND-range covers the loop, so each work-item runs at most one iteration
    (`guard`: only when its id is below `count`)."""

    var: Var
    kind: str
    dim: int
    count: Arith
    once: bool
    guard: bool
    comment: str
    path: Path | None = None  # the IR node of the map or reduction


@dataclass(frozen=True, slots=True)
class Loop:
    info: LoopInfo
    body: tuple[Item, ...]


Item = Acc | Point | Loop


@dataclass(frozen=True)
class Probe:
    """A kernel's accesses, barrier places and loops, and its ND-range (sizes per dimension).

    `local_size` None: the OpenCL implementation chooses the work-group size."""

    body: tuple[Item, ...]
    global_size: tuple[Arith, ...]
    local_size: tuple[Arith, ...] | None


# ------------------------------------------------------------------- flattening


@dataclass(frozen=True, slots=True)
class Leaf:
    """An access or a point in program order, inside the loops `loops` (outermost first)."""

    item: Acc | Point
    loops: tuple[int, ...]


@dataclass(frozen=True)
class Flat:
    """The probe as leaves in program order; `spans[l]` = the leaves of loop `l` (first, last + 1)."""

    leaves: tuple[Leaf, ...]
    loops: tuple[LoopInfo, ...]
    spans: tuple[tuple[int, int], ...]

    def acc(self, leaf: int) -> Acc:
        """The access at leaf `leaf` (an `AssertionError` for a point)."""
        item = self.leaves[leaf].item
        assert isinstance(item, Acc), f"leaf {leaf} is a barrier point, not an access"
        return item


def flatten(body: tuple[Item, ...]) -> Flat:
    """The leaves of a probe body in program order, with their enclosing loops."""
    leaves: list[Leaf] = []
    loops: list[LoopInfo] = []
    spans: list[tuple[int, int]] = []

    def visit(items: tuple[Item, ...], outer: tuple[int, ...]) -> None:
        for x in items:
            if isinstance(x, Loop):
                k = len(loops)
                loops.append(x.info)
                spans.append((len(leaves), -1))
                visit(x.body, outer + (k,))
                spans[k] = (spans[k][0], len(leaves))
            else:
                leaves.append(Leaf(x, outer))

    visit(body, ())
    return Flat(tuple(leaves), tuple(loops), tuple(spans))


# ---------------------------------------------------------------------- the MAG


@dataclass(frozen=True, slots=True)
class Edge:
    """Control flow from access `src` to access `dst` (leaf indices) through `points`.

    `back` is the loop whose back edge this is (None: the next access in program order)."""

    src: int
    dst: int
    points: tuple[int, ...]
    back: int | None = None


@dataclass(frozen=True)
class MAG:
    """Vertices (the leaf indices of the accesses) and edges of the memory-access graph."""

    flat: Flat
    vertices: tuple[int, ...]
    edges: tuple[Edge, ...]

    def access(self, v: int) -> Acc:
        item = self.flat.leaves[v].item
        assert isinstance(item, Acc)
        return item

    def forward(self, src: int) -> Edge | None:
        """The edge from `src` to the next access in program order."""
        return next((e for e in self.edges if e.src == src and e.back is None), None)

    def back_edge(self, loop: int) -> Edge | None:
        return next((e for e in self.edges if e.back == loop), None)


def build_mag(flat: Flat) -> MAG:
    """The memory-access graph of a flattened probe (Algorithm 3, lines 1-2)."""
    accs = tuple(i for i, leaf in enumerate(flat.leaves) if isinstance(leaf.item, Acc))
    edges = [Edge(u, v, _points(flat, range(u + 1, v))) for u, v in zip(accs, accs[1:])]
    for k, (lo, hi) in enumerate(flat.spans):
        inside = [i for i in accs if lo <= i < hi]
        if inside:
            first, last = inside[0], inside[-1]
            gap = list(range(last + 1, hi)) + list(range(lo, first))
            edges.append(Edge(last, first, _points(flat, gap), back=k))
    return MAG(flat, accs, tuple(edges))


def _points(flat: Flat, indices) -> tuple[int, ...]:
    return tuple(i for i in indices if isinstance(flat.leaves[i].item, Point))


def common_loops(flat: Flat, a: int, b: int) -> tuple[int, ...]:
    """The loops enclosing both leaves, outermost first."""
    out = []
    for x, y in zip(flat.leaves[a].loops, flat.leaves[b].loops):
        if x != y:
            break
        out.append(x)
    return tuple(out)


def critical_path(mag: MAG, a1: int, a2: int, backward: bool) -> tuple[Edge, ...]:
    """The shortest control-flow path from access `a1` to access `a2` as MAG edges.

    Forward: through the accesses between them in the same iteration. Backward (`a2` is
    not after `a1`): to the end of the innermost loop enclosing both, around its back edge
    and on to `a2` in the next iteration."""
    if not backward:
        return tuple(_chain(mag, a1, a2))
    loop = common_loops(mag.flat, a1, a2)[-1]
    back = mag.back_edge(loop)
    assert back is not None
    return (*_chain(mag, a1, back.src), back, *_chain(mag, back.dst, a2))


def _chain(mag: MAG, a: int, b: int) -> Iterator[Edge]:
    while a < b:
        e = mag.forward(a)
        assert e is not None
        yield e
        a = e.dst


def on_route(flat: Flat, point: int, a1: int, a2: int) -> bool:
    """Whether every instance pair of (a1, a2) has an instance of `point` between them.

    True for points in the loops that enclose both accesses or only one of them; a point
    inside another loop between them (which might run no iteration) does not count."""
    common = common_loops(flat, a1, a2)
    loops = flat.leaves[point].loops
    if loops[:len(common)] != common:
        return False
    rest = loops[len(common):]
    return any(rest == own[len(common):len(common) + len(rest)]
               for own in (flat.leaves[a1].loops, flat.leaves[a2].loops))


def route_points(mag: MAG, a1: int, a2: int, backward: bool) -> tuple[int, ...]:
    """The points of the critical path from `a1` to `a2` where a barrier orders the two accesses."""
    seen: dict[int, None] = {}
    for e in critical_path(mag, a1, a2, backward):
        for p in e.points:
            if on_route(mag.flat, p, a1, a2):
                seen[p] = None
    return tuple(seen)


__all__ = ["Acc", "Point", "LoopInfo", "Loop", "Item", "Probe", "Leaf", "Flat", "flatten", "Edge", "MAG",
           "build_mag", "common_loops", "critical_path", "on_route", "route_points"]
