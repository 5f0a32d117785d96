"""Sequential tails run by the last work-item: one launch where a reduction took two.

A full reduction on a CPU is two kernels: a few hundred work-items each reduce a chunk into a
partial result, then one work-item combines the partials (`reduce_seq` over them, and whatever
the program computes from the result). On PoCL the second launch costs 5-10 microseconds of a
call, more than the combine, so the one-work-item kernel is better run inside the kernel before
it, by whichever work-item finishes last:

    kernel void lift_kernel(..., global int* restrict lift_done) {
      { ... each work-item writes its partial results ... }
      if (atomic_inc(lift_done) + 1 == (int)(get_global_size(0) * ...)) {  // the last one
        lift_done[0] = 0;                                 // zero for the next launch
        ... the one-work-item kernel's statements ...     // every partial, in order
      }
    }

The counter is a buffer of one int (`BufferSpec` role "counter") that the runtime allocates
zeroed, once per lane; the last work-item resets it, so it is zero before every launch. Every
work-item counts itself after all its writes, so the one that brings the count to the number
of work-items runs after every write of the kernel: the tail reads what it read as a kernel of
its own and computes it in the same order (the same result, bit for bit).

Each work-item counts itself, with no barrier: a barrier at the end of the kernel (each
group's work-item 0 counting the group) made PoCL 3.0 run a 2^20-element arg-min 2.5x slower,
and counting each work-item stays cheap because only kernels of at most `MAX_ITEMS` work-items
take a tail.

Only for CPU devices (`lift.compile` asks for it by the device profile): on a CPU runtime the
work-items share coherent memory and the atomic orders each one's writes before it; GPUs keep
their two launches. A first kernel qualifies when its ND-range is constant (a range that is 0
at run time would skip the launch and its tail with it) and at most `MAX_ITEMS`; a tail when it
runs on one work-item, has no barrier or local memory of its own and calls no work-item
function (inside the first kernel those would name the last work-item).
"""

from __future__ import annotations

from dataclasses import replace
from math import prod
from typing import cast

from lift.arith import Cst
from lift.codegen.c_ast import Assign, Barrier, Block, CIndex, CInt, CRaw, Decl, If, KParam, walk_stmts
from lift.codegen.names import Names
from lift.codegen.printer import print_kernel
from lift.codegen.stages import Kernel, agree, merged, single_item
from lift.plan import COUNTER_ROLE, BufferSpec, KernelArg
from lift.types import Int

_WORK_ITEM_FUNCTIONS = ("get_global_id", "get_local_id", "get_group_id", "get_global_size", "get_local_size",
                        "get_num_groups", "get_global_offset", "get_work_dim")
MAX_ITEMS = 4096  # work-items of a kernel that takes a tail (each counts itself with an atomic)


def folded_tails(kernels: list[Kernel], names: Names) -> tuple[list[Kernel], list[BufferSpec]]:
    """`kernels` with every one-work-item kernel that follows a kernel of constant ND-range (at
    most `MAX_ITEMS` work-items) run at that kernel's end by its last work-item, and the counter
    buffers that adds."""
    out: list[Kernel] = []
    counters: list[BufferSpec] = []
    for k in kernels:
        prev = out[-1] if out else None
        if prev is not None and _head(prev) and _tail(k) and agree(prev.kdef, k.kdef):
            counter = names("lift_done")
            counters.append(BufferSpec(counter, Int, Cst(1), "global", COUNTER_ROLE, None, Int))
            out[-1] = _folded(prev, k, counter)
        else:
            out.append(k)
    return out, counters


def _head(k: Kernel) -> bool:
    """A kernel of several work-items, at most `MAX_ITEMS`, whose ND-range is known before any call."""
    sizes = (*k.launch.global_size, *(k.launch.local_size or ()))
    if single_item(k) or not all(isinstance(s, Cst) and s.value >= 1 for s in sizes):
        return False
    return prod(cast(Cst, s).value for s in k.launch.global_size) <= MAX_ITEMS


def _tail(k: Kernel) -> bool:
    """A kernel of one work-item that runs the same anywhere: no barrier, no local memory, no
    work-item function."""
    if not single_item(k) or k.barriers or any(p.qual == "local" for p in k.kdef.params):
        return False
    if any(isinstance(s, Barrier) or isinstance(s, Decl) and s.space == "local" for s in walk_stmts(k.kdef.body)):
        return False
    text = print_kernel(k.kdef)
    return not any(f in text for f in _WORK_ITEM_FUNCTIONS)


def _folded(first: Kernel, tail: Kernel, counter: str) -> Kernel:
    """`first`, then `tail`'s statements run by the last of `first`'s work-items to finish."""
    out = merged(first, tail, (KParam("int", counter, "global"), KernelArg("buffer", counter)))
    items = " * ".join(f"get_global_size({d})" for d in range(3))
    last = CRaw(f"atomic_inc({counter}) + 1 == (int)({items})")
    out.kdef.body.stmts.append(
        If(last, Block([Assign(CIndex(counter, Cst(0)), CInt(Cst(0)), "zero for the next launch"),
                        *tail.kdef.body.stmts]),
           f"the last work-item to finish runs {tail.kdef.name}"))
    return replace(out, fill=first.fill)


__all__ = ["folded_tails"]
