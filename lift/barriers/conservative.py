"""The conservative barrier pass (kept to compare against the memory-access-graph pass).

Rule: a buffer in local or global memory that is produced cooperatively by a `map_lcl` (its
elements written by several work-items of a group) and read afterwards in the same kernel
gets `barrier(fence)` right after its producer (read after write); when that happens inside
a sequential or work-group loop, a second barrier follows the consumer, so the next
iteration cannot overwrite data other work-items are still reading (write after read).
A barrier must be reached by every work-item of the group: one that would sit inside a
`map_lcl` or `map_glb` loop (work-items run different trip counts) is rejected with
`NotSynchronisableError`. Work-groups cannot synchronise, so a buffer produced by
`map_glb` or `map_wrg` and read in the same kernel is rejected too, unless the consumer
is the same kind of map reading element `i` in iteration `i` (the same work-item wrote it).

Stage `Allocated -> Synchronised`; `insert_barriers_conservative` is the entry point (it takes
the same arguments as `lift.barriers.insert_barriers` and ignores the probe).
Postcondition: every placement is reachable by all work-items of a work-group.
"""

from __future__ import annotations

from lift.allocation import Allocated, Buffer
from lift.barriers.records import FENCES, Placement, Synchronised
from lift.errors import NotSynchronisableError
from lift.ir import nodes as n
from lift.ir.layoutfun import is_layout_pattern
from lift.ir.nodes import FunCall, Node
from lift.ir.paths import Path, at, walk
from lift.ir.registry import is_address, is_parallel

_PARALLEL: dict[type, str] = {n.MapGlb: "glb", n.MapWrg: "wrg", n.MapLcl: "lcl"}


def insert_barriers_conservative(root: Node, alloc: Allocated, probe: object = None) -> Synchronised:
    """The conservative barrier placement for the kernel body allocated in `alloc`.

    `root` is the node the allocation's paths start from (the program); `probe` is unused."""
    after: dict[Path, list[Placement]] = {}
    for buf in alloc.buffers.values():
        for p in _placements(root, buf):
            after.setdefault(p.path, []).append(p)
    return Synchronised(alloc, {k: tuple(v) for k, v in after.items()})


def _placements(root: Node, buf: Buffer) -> list[Placement]:
    if buf.space not in FENCES:
        return []
    producer = at(root, buf.path)
    kinds = {_PARALLEL[type(x)] for _, x in walk(producer) if type(x) in _PARALLEL}
    if not kinds or _elementwise(root, buf.path, producer):
        return []
    if kinds & {"glb", "wrg"}:
        raise NotSynchronisableError(
            f"{_show(producer)} writes {buf.name} ({buf.space}) from several work-groups and the same "
            "kernel reads it; work-groups cannot synchronise", node=_node(producer),
            hint="put the producer and the consumer in separate ocl_kernel stages")
    divergent = [lp for lp in buf.scope if lp.kind in ("lcl", "glb")]
    if divergent:
        raise NotSynchronisableError(
            f"the barrier after {_show(producer)} would sit inside a {divergent[-1].kind} loop, which "
            "work-items run for different trip counts, so not all of them would reach it",
            node=_node(at(root, divergent[-1].path)),
            hint="move the map_lcl out of the enclosing parallel loop")
    fence = FENCES[buf.space]
    what = f"{_show(producer)} writes {buf.name} ({buf.space})"
    out = [Placement(buf.path, fence, _show(producer), what + ", read by other work-items", (buf.name,))]
    if any(lp.kind in ("seq", "wrg") for lp in buf.scope) and len(buf.path) > 0:
        consumer = _consumer(root, buf.path)
        out.append(Placement(consumer, fence, _show(at(root, consumer)),
                             f"the next iteration overwrites {buf.name}", (buf.name,)))
    return out


def _consumer(root: Node, path: Path) -> Path:
    """The nearest enclosing call that computes with the value at `path` (layouts only rearrange)."""
    up = path[:-1]
    while len(up) > 1:
        parent = at(root, up)
        if not (isinstance(parent, FunCall) and is_layout_pattern(parent.f)):
            break
        if not up[-1] >= 1:
            break
        up = up[:-1]
    return up


def _elementwise(root: Node, path: Path, producer: Node) -> bool:
    """Whether the consumer is the same kind of map reading element i in iteration i."""
    if not path or path[-1] != 1:
        return False
    consumer = at(root, path[:-1])
    inner = producer
    while isinstance(inner, FunCall) and is_address(inner.f):
        inner = FunCall(inner.f.f, inner.args)
    if not (isinstance(consumer, FunCall) and isinstance(inner, FunCall)):
        return False
    fc, fp = consumer.f, inner.f
    if type(fc) not in _PARALLEL or type(fp) is not type(fc):
        return False
    assert is_parallel(fc) and is_parallel(fp)
    return fc.dim == fp.dim and len(consumer.args) == 1


def _node(x: Node) -> Node:
    return x.f if isinstance(x, FunCall) else x


def _show(x: Node) -> str:
    f = _node(x)
    text = str(f)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["insert_barriers_conservative"]
