"""`reduce_atomic(f, z) << map(g) << xs` inside a kernel: the atomic combine of a multi-block reduction.

The map's loop computes each element into a private variable and combines it into the kernel's
result with an atomic read-modify-write, so no array of partial results and no second kernel is
needed; the result is pre-filled with `z` by a one-work-item launch before the kernel
(`KernelState.fills`, linked by `lift.codegen.generate`). The combination order is not
deterministic, so a float sum may differ from the sequential one in its last bits.

    { int gl = get_global_id(0);                  // map_glb: one element per work-item
      float v;  ... v = lane_sum8(acc); ...       // the element, in private memory
      lift_atomic_add_float(&out[0], v); }        // combined into the result

`Int` add, max_ and min_ use OpenCL's `atomic_add`, `atomic_max`, `atomic_min`; everything else
(float add, max, min, mult) a compare-and-swap loop on the bit pattern:

    uint old = as_uint(*p), seen;
    while ((seen = atomic_cmpxchg((volatile global uint*)p, old, as_uint(f(as_float(old), v)))) != old)
      old = seen;

Inside a `map_wrg` every work-item of a group computes the group's element (the code generator's
meaning of code outside `map_lcl`), so only local work-item 0 combines it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lift.allocation import LOOP_KINDS
from lift.codegen.access import write
from lift.codegen.args import Arg
from lift.codegen.c_ast import Assign, AtomicCombine, Block, CExpr, CRaw, CStmt
from lift.errors import UnsupportedError
from lift.ir import nodes as n
from lift.ir.paths import Path
from lift.ir.registry import is_loop
from lift.rules.terms import eta
from lift.types import ArrayType, ScalarType, Type
from lift.userfun.facts import operator
from lift.views import Access, View

if TYPE_CHECKING:
    from lift.codegen.kernel import KernelGen

NATIVE = {"add": "atomic_add", "max_": "atomic_max", "min_": "atomic_min"}  # 32-bit int atomics
GROUP_LEADER = "get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0"


def helper_source(cname: str, op: str, name: str, t: ScalarType) -> str:
    """The C helper `void cname(volatile global T* p, T v)` that combines `v` into `*p` atomically
    with the user function `op` (C name) that is the built-in `name`."""
    c = t.c_name
    if t.name == "Int" and name in NATIVE:
        return f"void {cname}(volatile global int* p, int v) {{\n  {NATIVE[name]}(p, v);\n}}\n"
    if t.name == "Int":
        return (f"void {cname}(volatile global int* p, int v) {{\n  int old = *p, seen;\n"
                f"  while ((seen = atomic_cmpxchg(p, old, {op}(old, v))) != old) old = seen;\n}}\n")
    return (f"void {cname}(volatile global {c}* p, {c} v) {{\n  uint old = as_uint(*p), seen;\n"
            f"  while ((seen = atomic_cmpxchg((volatile global uint*)p, old, as_uint({op}(as_{c}(old), v))))"
            " != old)\n    old = seen;\n}\n")


def helper(kg: KernelGen, f: n.FunDecl, t: Type) -> str:
    """The C name of the atomic helper for operator `f` on `t`, defined once per program."""
    assert isinstance(t, ScalarType)
    op = operator(eta(f))
    name = op.kind if op is not None and op.kind else "op"
    cop = kg.funs(f if isinstance(f, n.UserFun) else _user_fun(f))
    funs = kg.funs
    key = ("atomic", name, t.name, cop)
    if key not in funs.by_key:
        cname = funs.names(f"lift_atomic_{name.rstrip('_')}_{t.c_name}")
        funs.by_key[key] = cname
        funs.sources.append(helper_source(cname, cop, name, t))
    return funs.by_key[key]


def _user_fun(f: n.FunDecl) -> n.UserFun:
    g = eta(f)
    if not isinstance(g, n.UserFun):
        raise UnsupportedError(f"reduce_atomic needs a user function, got {f}", node=f)
    return g


def atomic(kg: KernelGen, f: n.ReduceAtomic, fpath: Path, args: list[Arg], env: dict[int, View],
           dest: View | None) -> View:
    """Generate `reduce_atomic(g, z) << map(h) << xs` (checked by `lift.allocation.check_atomic`)."""
    init, xa = args
    if dest is None or xa.expr is None or xa.path is None or not isinstance(xa.expr, n.FunCall):
        raise UnsupportedError("reduce_atomic must be the kernel's result, applied to a map", node=f)
    call, xp = xa.expr, xa.path
    m, (x,) = call.f, call.args
    out_t = call.type
    assert is_loop(m) and isinstance(out_t, ArrayType) and isinstance(x.type, ArrayType)
    t = init.type
    target = _lvalue(kg, dest, t)
    kg.state.fills.append((target, kg.read(kg.arg(init, env))))
    fn = helper(kg, f.f, t)
    xs = kg.arg(Arg(x.type, x, xp + (1,)), env)
    loop = kg.make_loop(m, LOOP_KINDS[type(m)], out_t.size, xp + (0,))
    elem = Arg(x.type.elem, view=Access(xs, loop.var))
    guard = GROUP_LEADER if loop.kind == "wrg" else None  # a map over work-groups: one work-item each

    def body() -> None:
        v = kg.declare(kg.alloc.buffers[xp])
        value = kg.apply(m.f, xp + (0, 0), [elem], out_t.elem, env, v, m.f, xp + (0, 0))
        kg.block.add(combine_stmt(fn, target, kg.read(value), guard, f"{f}: combined atomically"))

    kg.loop_body(loop, body)
    return dest


def combine_stmt(fn: str, target: CExpr, value: CExpr, guard: str | None, comment: str) -> CStmt:
    """The statement combining `value` into `target` atomically with helper `fn` (a hook that the
    mutation test replaces by a plain read-modify-write to show that the analysis sees the race)."""
    return AtomicCombine(fn, target, value, guard, comment)


def _lvalue(kg: KernelGen, dest: View, t: Type):
    """The C lvalue of the scalar destination `dest`."""
    scratch = Block()
    write(dest, CRaw("0"), t, scratch, kg.fresh, kg.use, "", kg.facts)
    if len(scratch.stmts) != 1 or not isinstance(scratch.stmts[0], Assign):
        raise UnsupportedError("reduce_atomic's destination is not one scalar in memory")
    return scratch.stmts[0].lhs


__all__ = ["atomic", "helper", "helper_source", "combine_stmt", "NATIVE", "GROUP_LEADER"]
