"""IR -> OpenCL program and host plan: `generate(program) -> KernelSource`.

A program without `ocl_kernel` is one kernel writing the result. With `ocl_kernel`s, each
one is a kernel (named by the `ocl_kernel`'s label); the code between them may only arrange
data (layout functions, maps of them included, are views over the buffers the kernels
write), and a kernel whose result feeds another gets a temporary global buffer. An
`iterate` at the top level whose function has a parallel map is one kernel launch per
iteration (`lift.codegen.iterate.host_iterate`). Each kernel
has its own ND-range: the requested sizes that fit it (see `generate`), else the trip
counts of its parallel maps. The host traversal (`HostTraversal.steps`) yields the program's
buffers and kernel jobs in order; `build` takes each kernel job through the kernel stages
(`lift.codegen.stages`: allocated (`lift.allocation`), probed, synchronised (`lift.barriers`),
emitted (`lift.codegen.kernel`), assembled), each a function from a frozen record to the
next, and `link` makes the C unit and host plan of the buffers and kernels so collected.
Postcondition (`lift.codegen.verify`): every buffer a kernel touches is one of its arguments
and in `buffers`, every temporary is used, and the launches run in data-dependence order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from typing import cast

from lift.allocation import body_path
from lift.arith import C_HELPERS, Arith, Cst
from lift.barriers import insert_barriers
from lift.codegen.access import divisibility
from lift.codegen.c_ast import Decl, Unit, walk_stmts
from lift.codegen.iterate import host_iterate, staged_iterate, top_iterate
from lift.codegen.names import Funs, Names
from lift.codegen.printer import print_kernel, print_unit
from lift.codegen.stages import (
    KERNEL_STAGES,
    BarrierPass,
    Kernel,
    KernelContext,
    KernelJob,
    SizeReq,
    Sizes,
    buffer_spec,
    folded_fills,
    requested,
    run_stages,
)
from lift.codegen.stream import MACRO as STREAM_MACRO
from lift.codegen.stream import uses_stream
from lift.codegen.tails import folded_tails
from lift.codegen.verify import verify_generated
from lift.codegen.width import LONG_HELPERS
from lift.errors import LiftValueError, UnsupportedError
from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Node
from lift.ir.paths import Path, lambda_of, walk
from lift.ir.registry import has
from lift.layout import apply_view, arg_dests, is_layout_fun, memories, memory_view
from lift.lower import is_high_level, kernels, lower, verify_lowered
from lift.plan import BufferSpec, KernelSource
from lift.typecheck import size_conditions, typecheck
from lift.types import ArrayType, TupleType, Type, holds_array, size_names
from lift.userfun.ctypes import struct_decl, tuple_types
from lift.views import View

SizeArg = int | tuple[int, ...] | dict[str, "int | tuple[int, ...] | None"] | None


@dataclass(frozen=True)
class Generated:
    """The C AST of the program next to its `KernelSource` (tests inspect the AST)."""

    unit: Unit
    source: KernelSource


def generate(program: Node, *, local_size: SizeArg = None, global_size: SizeArg = None,
             stages: tuple[Callable, ...] = KERNEL_STAGES, wide: bool = False, tails: bool = False) -> KernelSource:
    """The OpenCL program and host plan for `program` (a lowered or high-level `fun`).

    Example: `generate(fun([Array(Float, N)], lambda x: map_glb(id) << x)).source` is one
    kernel with a strided `get_global_id(0)` loop.

    A size (an int or a tuple) applies to the kernels it fits: those with work-groups
    (map_wrg/map_lcl), or every parallel kernel when none has work-groups; the others keep
    their default ND-range. A dict gives sizes per kernel, keyed by kernel name (an
    `ocl_kernel`'s label): `local_size={"partial": 64}`. `wide`: 64-bit indices in every kernel
    whose indices the symbolic ranges cannot bound (`lift.codegen.width`; `Program` asks for it
    when a call's sizes pass the 32-bit limits). `tails`: a one-work-item kernel after a kernel
    of constant ND-range runs at that kernel's end, by its last work-item (`lift.codegen.tails`;
    `lift.compile` asks for it on CPU devices)."""
    return build(program, local_size=local_size, global_size=global_size, stages=stages, wide=wide,
                 tails=tails).source


def build(program: Node, *, local_size: SizeArg = None, global_size: SizeArg = None,
          barrier_pass: BarrierPass = insert_barriers, verify: bool = False,
          stages: tuple[Callable, ...] = KERNEL_STAGES, wide: bool = False, tails: bool = False) -> Generated:
    """Like `generate`, keeping the C AST; `barrier_pass` (a `lift.barriers` entry point) places
    barriers; with `verify`, every stage's checker runs on its output (`verify_lowered`,
    `verify_allocated` per kernel, `verify_generated`); `stages`: what each kernel goes through;
    `tails`: as in `generate`."""
    if not isinstance(program, Lambda):
        raise UnsupportedError("code generation needs a program made with lift.fun", node=program)
    typecheck(program)  # the type errors of a direct caller's program, before anything else
    if is_high_level(program):  # a direct caller's high-level program: the default lowering
        lowered = lower(program)  # (lift.compile hands over a mapped program, typed here once)
        if verify:
            verify_lowered(lowered, program)
        program = lowered  # typed on demand by the kernel stages, once (types live in a side table)
    ufs = {d.name for _, x in walk(program) if isinstance(x, n.UserFun) for d in (x, *_callees(x))}
    sizes = size_names(q.ptype for q in program.params)
    names = Names(ufs | set(sizes))
    ctx = KernelContext(program, names, Funs(names, frozenset(sizes)), tuple(sizes),
                        divisibility(size_conditions(program)), barrier_pass, verify=verify, wide=wide)
    global_req, local_req = _dims(global_size), _dims(local_size)
    buffers: list[BufferSpec] = []
    kernels: list[Kernel] = []
    for step in HostTraversal(program, names, global_req, local_req).steps():
        if isinstance(step, BufferSpec):
            buffers.append(step)
            continue
        done = run_stages(replace(ctx, buffers=tuple(buffers)), step, stages)
        buffers.extend(done.buffers)
        kernels.extend(done.kernels)
    kernels = folded_fills(kernels)
    if tails:
        kernels, counters = folded_tails(kernels, names)
        buffers.extend(counters)
    check_requests(kernels, global_req, local_req)
    gen = link(ctx, buffers, kernels)
    if verify:
        verify_generated(gen)
    return gen


def _dims(s: SizeArg) -> SizeReq:
    if isinstance(s, dict):
        return {name: _sizes(v) for name, v in s.items()}
    return _sizes(s)


def _sizes(s: int | tuple[int, ...] | None) -> Sizes:
    return (s,) if isinstance(s, int) else (tuple(s) if s is not None else None)


# ------------------------------------------------------------------------- program

HostStep = BufferSpec | KernelJob  # what the host traversal yields, in program order


class HostTraversal:
    """The host-level traversal: the program's buffers (inputs, outputs, temporaries between
    kernels) and kernel jobs, yielded in program order (`steps`). It draws C names from the
    program's name supply as it goes, so it is consumed step by step, each kernel job through
    the kernel stages before the next step is taken (`build`)."""

    def __init__(self, program: Lambda, names: Names, global_req: SizeReq, local_req: SizeReq) -> None:
        self.program = program
        self.names = names
        self.global_req, self.local_req = global_req, local_req  # one size, or one per kernel
        self.grouped = any(has("grouped", x) for _, x in walk(program))

    def steps(self) -> Iterator[HostStep]:
        """Every buffer and kernel job of the program, in order."""
        p = self.program
        env = {}
        for k, q in enumerate(p.params):
            env[q.id] = yield from self.input(k, q)
        out = memory_view(self.names("out"), p.body.type, "global")
        for m in memories(out):
            yield buffer_spec(m, "output")
        if kernels(p.body) or top_iterate(p.body):
            yield from self.host(p.body, (0,), env, out)
        else:
            yield self.job(self.names(p.label or "lift_kernel"), None, p.body, (0,), env, out)

    def input(self, k: int, q: n.Param) -> Generator[HostStep, None, View]:
        view = memory_view(self.names(q.name), q.ptype, "global")
        for m in memories(view):
            yield buffer_spec(m, "input", param=k)
        return view

    def host(self, e: Expr, path: Path, env: dict[int, View], dest: View | None) -> Generator[HostStep, None, View]:
        """Top-level code: kernels and the views between them; returns the view of `e`'s value."""
        match e:
            case n.Param():
                v = env[e.id]
            case FunCall(n.Iterate(), _) if top_iterate(e):
                return (yield from host_iterate(self, e, path, env, dest))
            case FunCall(_, (x,)) if (staged := staged_iterate(e)) is not None:  # launches per iteration
                q, body = staged
                env = {**env, q.id: (yield from self.host(x, path + (1,), env, None))}
                return (yield from host_iterate(self, body, path + (0, 0, 0), env, dest))
            case FunCall(n.OclKernel(g), args):
                views = []
                for k, a in enumerate(args):
                    views.append((yield from self.host(a, path + (k + 1,), env, None)))
                target = dest if dest is not None else (yield from self.temp(e.type))
                name = self.names(e.f.label or g.label or "lift_kernel")
                yield self.job(name, (g, path + (0, 0), tuple(views)), None, path, env, target)
                return target
            case FunCall(f, args) if (lam := lambda_of(f)) is not None:
                views = []
                for k, a in enumerate(args):
                    views.append((yield from self.host(a, path + (k + 1,), env, None)))
                bpath = body_path(f, path + (0,))
                env = {**env, **{q.id: v for q, v in zip(lam.params, views)}}
                return (yield from self.host(lam.body, bpath, env, dest))
            case FunCall(f, args) if is_layout_fun(f):
                types = [a.type for a in args]
                dests = arg_dests(f, dest, types) if dest is not None else None
                if dest is not None and dests is None:
                    raise UnsupportedError(f"{f} of a kernel's result cannot be written in place; "
                                           "move it into an ocl_kernel", node=e)
                views = []
                for k, (a, d) in enumerate(zip(args, cast("list[View | None] | None", dests) or [None] * len(args))):
                    views.append((yield from self.host(a, path + (k + 1,), env, d)))
                return dest if dest is not None else apply_view(f, views, types, env)
            case _:
                raise UnsupportedError(f"{e} computes outside every ocl_kernel; wrap it in ocl_kernel",
                                       node=e.f if isinstance(e, FunCall) else e)
        if dest is not None:
            raise UnsupportedError("the program returns (part of) an input unchanged; copy it in a "
                                   "kernel", node=e)
        return v

    def temp(self, t: Type) -> Generator[HostStep, None, View]:
        """A temporary global buffer between kernels; returns its view."""
        view = memory_view(self.names("tmp"), t, "global")
        self.names.reserve(m.name for m in memories(view))  # its components: no later temporary's names
        for m in memories(view):
            yield buffer_spec(m, "temp")
        return view

    def job(self, name: str, call: tuple[FunDecl, Path, tuple[View, ...]] | None, body: Expr | None, path: Path,
            env: dict[int, View], dest: View) -> KernelJob:
        """The job of one kernel: `body` at `path`, or `call` = (function, its path, argument
        views), with the launch sizes requested for it (`lift.codegen.stages.requested`)."""
        node = call[0] if call is not None else body
        assert node is not None
        gsize, lsize = requested(node, name, self.global_req, self.local_req, self.grouped)
        return KernelJob(name, call, body, path, env, dest, gsize, lsize)


def check_requests(kernels: list[Kernel], global_req: SizeReq, local_req: SizeReq) -> None:
    """Every kernel named in a per-kernel size request exists."""
    names = {k.kdef.name for k in kernels}
    for what, req in (("global_size", global_req), ("local_size", local_req)):
        unknown = sorted(set(req) - names) if isinstance(req, dict) else []
        if unknown:
            raise LiftValueError(f"{what} names no kernel {', '.join(unknown)}; the kernels are "
                                 f"{', '.join(sorted(names))}", hint="label the ocl_kernel to name its kernel")


def link(ctx: KernelContext, buffers: list[BufferSpec], kernels: list[Kernel]) -> Generated:
    """The program's C unit and host plan from its buffers and kernels, in launch order."""
    program = ctx.program
    structs = [struct_decl(t) for t in _tuples(program)]
    helpers = LONG_HELPERS if any(k.kdef.index_type == "long" for k in kernels) else C_HELPERS
    helpers = helpers if _needs_helpers(kernels) else ""
    if any(uses_stream(k.kdef) for k in kernels):
        helpers = f"{STREAM_MACRO}\n\n{helpers}" if helpers else STREAM_MACRO
    unit = Unit(helpers, structs, ctx.funs.sources, [k.kdef for k in kernels])
    src = KernelSource(
        source=print_unit(unit), kernels=tuple(k.kdef.name for k in kernels),
        buffers=tuple(buffers), launches=tuple(k.launch for k in kernels),
        outputs=tuple(b.name for b in buffers if b.role == "output"), result_type=program.body.type,
        size_vars=ctx.sizes, param_types=tuple(q.ptype for q in program.params),
        barriers=tuple(b for k in kernels for b in k.barriers), memory_bytes=_memory(buffers, kernels),
        index_limits=tuple(dict.fromkeys(x for k in kernels for x in k.limits)))
    return Generated(unit, src)


# ----------------------------------------------------------------------- helpers


def _tuples(p: Lambda) -> tuple[TupleType, ...]:
    """The tuple types that need a C struct: those of scalars, vectors and such tuples.

    Arrays of tuples are stored as one array per component, and a tuple holding an array
    (`zip` of `split` arrays) is only ever read component by component, so neither needs a
    struct of its own; the element tuples inside them may."""
    types: list[Type] = [q.ptype for q in p.params]
    for _, x in walk(p):
        if isinstance(x, Expr):
            types.append(x.type)
        elif isinstance(x, n.UserFun):
            types.extend((*x.in_types, x.out_type, *x.structs, *_callee_structs(x)))
    return tuple_types(t for t in _struct_parts(types))


def _callees(f: n.UserFun) -> list[n.UserFun]:
    """The user functions `f` calls, directly or not."""
    return [c for d in f.deps for c in (d, *_callees(d))]


def _callee_structs(f: n.UserFun) -> list[Type]:
    """The tuple types of the user functions `f` calls (their structs come before `f`'s C)."""
    return [t for d in f.deps for t in (*d.in_types, d.out_type, *d.structs, *_callee_structs(d))]


def _struct_parts(types: list[Type]):
    """The array-free parts of `types`: arrays are looked through, tuples holding arrays split."""
    for t in types:
        if isinstance(t, ArrayType):
            yield from _struct_parts([t.elem])
        elif isinstance(t, TupleType) and holds_array(t):
            yield from _struct_parts(list(t.elems))
        else:
            yield t



def _needs_helpers(kernels: list[Kernel]) -> bool:
    return any("lift_floor" in print_kernel(k.kdef) for k in kernels)


def _memory(buffers: list[BufferSpec], kernels: list[Kernel]) -> dict[str, Arith]:
    out: dict[str, Arith] = {}
    for b in buffers:
        out[b.space] = out.get(b.space, Cst(0)) + b.count * b.scalar.dtype.itemsize
    private: Arith = Cst(0)
    local: Arith = out.get("local", Cst(0))
    for k in kernels:
        for s in walk_stmts(k.kdef.body):
            if isinstance(s, Decl) and s.size is not None:
                if s.space == "local":
                    local = local + s.size * _decl_bytes(s.ctype)
                elif s.space == "private":
                    private = private + s.size * _decl_bytes(s.ctype)
    if local != Cst(0):
        out["local"] = local
    if private != Cst(0):
        out["private"] = private
    return out


def _decl_bytes(ctype: str) -> int:
    m = re.fullmatch(r"(float|double|int|bool)(\d*)", ctype)
    if m is None:
        return 4
    base = {"float": 4, "double": 8, "int": 4, "bool": 1}[m.group(1)]
    return base * int(m.group(2) or 1)


__all__ = ["generate", "build", "link", "check_requests", "Generated", "HostTraversal", "HostStep", "Names", "Funs",
           "SizeArg"]
