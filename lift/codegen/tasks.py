"""A kernel's result tuple of independent computations: one work-item per sequential component.

A program may return a tuple whose components have different lengths and kinds: `(reduce(add)
<< zip(a, b), reduce(max_) << c)` (lowered as one kernel: `lift.lower.fused_tuple`). Each
component writes its own output buffer. A parallel component (one with `map_glb`, `map_wrg` or
`map_lcl`) is generated as usual, its loops spread over the kernel's ND-range; the sequential
components are shared out among the work-items, one component each, so that they run at the
same time and no component is computed by every work-item:

    for (int task = get_global_id(0); task < 2; task += get_global_size(0)) {
      if (task == 0) { acc = 0.0f; for (...) acc = add(acc, ...); out_0[0] = acc; }
      if (task == 1) { acc_1 = -INFINITY; for (...) acc_1 = max_(acc_1, c[i]); out_1[0] = acc_1; }
    }

A kernel with only sequential components is launched with one work-item per component in
work-groups of one (`KernelState.tasks`), so that a CPU device runs them on different cores.
When parallel components use dimensions 1 or 2, the tasks go to the work-items whose ids in
those dimensions are 0; likewise a `map_glb` component that uses fewer dimensions than another
runs on the work-items whose ids are 0 in the dimensions it does not use (a component with
work-groups is not guarded: a guard that splits a work-group would split its barriers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from lift.allocation import concrete
from lift.arith import Cst, Var
from lift.codegen.c_ast import Block, CRaw, For, If
from lift.ir import nodes as n
from lift.ir.paths import walk
from lift.ir.registry import has, is_parallel
from lift.views import View

if TYPE_CHECKING:
    from lift.codegen.kernel import Arg, KernelGen

def parallel_dims(x: n.Node) -> set[int]:
    """The ND-range dimensions the parallel maps in `x` use (empty: `x` is sequential)."""
    return {y.dim for _, y in walk(x) if is_parallel(y)}


def share_components(kg: KernelGen, args: list[Arg], env: dict, dests: list[View]) -> bool:
    """Generate a kernel-level result tuple `args` into `dests` with one work-item per sequential
    component (module docstring); False (nothing generated) when there is nothing to share out:
    a single component, or parallel components that all use the same dimensions."""
    exprs = [a.expr if a.expr is not None and concrete(a.expr) else None for a in args]
    dims = [parallel_dims(x) if x is not None else None for x in exprs]
    seq = [k for k, d in enumerate(dims) if d == set()]
    every = set().union(*(d for d in dims if d))
    if len(args) < 2 or (not seq and all(d is None or d == every for d in dims)):
        return False
    for k, (a, d) in enumerate(zip(args, dests)):
        if k not in seq:
            missing = every - cast(set[int], dims[k]) if dims[k] and _global_only(exprs[k]) else set()
            _guarded(kg, sorted(missing), "its work-items of the dimensions it does not use",
                     lambda a=a, d=d: kg.arg(a, env, d))
    if not seq:
        return True
    if not kg.state.parallel:  # only sequential work: one work-item per component
        kg.state.parallel[("glb", 0)] = Cst(len(seq))
        kg.state.tasks = len(seq)
    task = Var(kg.fresh("task"), Cst(0), Cst(len(seq) - 1))
    loop = For(task, CRaw("get_global_id(0)"), Cst(len(seq)), CRaw("get_global_size(0)"), Block(),
               "the result tuple's sequential components, one work-item each", "glb")

    def dispatch() -> None:
        kg.block.add(loop)
        for j, k in enumerate(seq):
            part = If(CRaw(f"{task.name} == {j}"), Block(), f"result component {k}")
            loop.body.add(part)
            kg.block = part.body
            kg.arg(args[k], env, dests[k])

    _guarded(kg, sorted(every - {0}), "the work-items of the first row and layer", dispatch)
    return True


def _global_only(x: n.Node | None) -> bool:
    return x is not None and not any(has("grouped", y) for _, y in walk(x))


def _guarded(kg: KernelGen, dims: list[int], why: str, fill) -> None:
    """`fill()` under `if (get_global_id(d) == 0 && ...)` for each of `dims` (none: unguarded)."""
    outer = kg.block
    if dims:
        part = If(CRaw(" && ".join(f"get_global_id({d}) == 0" for d in dims)), Block(), why)
        outer.add(part)
        kg.block = part.body
    try:
        fill()
    finally:
        kg.block = outer


__all__ = ["share_components", "parallel_dims"]
