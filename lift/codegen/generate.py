"""IR -> OpenCL program and host plan: `generate(program) -> KernelSource`.

A program without `ocl_kernel` is one kernel writing the result. With `ocl_kernel`s, each
one is a kernel (named by the `ocl_kernel`'s label); the code between them may only arrange
data (layout functions, maps of them included, are views over the buffers the kernels
write), and a kernel whose result feeds another gets a temporary global buffer. An
`iterate` at the top level whose function has a parallel map is one kernel launch per
iteration (`lift.codegen.iterate.host_iterate`). Each kernel
has its own ND-range: the requested sizes that fit it (see `generate`), else the trip
counts of its parallel maps. Each kernel goes through the kernel stages
(`lift.codegen.stages`): allocated (`lift.memory`), probed, synchronised (`lift.barriers`),
emitted (`lift.codegen.kernel`), assembled; `finish` links them into the host plan.
Postcondition (`lift.codegen.verify`): every buffer a kernel touches is one of its arguments
and in `buffers`, every temporary is used, and the launches run in data-dependence order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lift.arith import C_HELPERS, Arith, Cst
from lift.barriers import Synchronised, insert_barriers
from lift.codegen.access import divisibility
from lift.codegen.c_ast import Block, KernelDef, KParam, Unit, walk_stmts
from lift.codegen.iterate import host_iterate, top_iterate
from lift.codegen.kernel import KernelGen, cap
from lift.codegen.names import Funs, Names
from lift.codegen.printer import print_unit
from lift.codegen.stages import KERNEL_STAGES, KernelJob, Stage, run_stages
from lift.codegen.stream import MACRO as STREAM_MACRO
from lift.codegen.stream import streamed, uses_stream
from lift.codegen.verify import verify_generated
from lift.codegen.width import LONG_HELPERS, decide, widen
from lift.errors import LiftValueError, UnsupportedError
from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Node
from lift.ir.paths import Path, walk
from lift.layout import apply_view, arg_dests, holds_array, is_layout_fun, memories, memory_view
from lift.lower import is_high_level, lower, verify_lowered
from lift.plan import BarrierInfo, BufferSpec, KernelArg, KernelSource, Launch
from lift.typecheck import size_conditions, typecheck
from lift.types import ArrayType, ScalarType, TupleType, Type, VectorType, base_type, scalar_count, size_names
from lift.userfun.ctypes import struct_decl, tuple_types
from lift.views import Mem, View

SizeArg = int | tuple[int, ...] | dict[str, "int | tuple[int, ...] | None"] | None
SizeReq = tuple[int, ...] | dict[str, "tuple[int, ...] | None"] | None  # normalised: tuples


@dataclass
class Generated:
    """The C AST of the program next to its `KernelSource` (tests inspect the AST)."""

    unit: Unit
    source: KernelSource


def generate(program: Node, *, local_size: SizeArg = None, global_size: SizeArg = None,
             stages: tuple[Stage, ...] = KERNEL_STAGES, wide: bool = False) -> KernelSource:
    """The OpenCL program and host plan for `program` (a lowered or high-level `fun`).

    Example: `generate(fun([Array(Float, N)], lambda x: map_glb(id) << x)).source` is one
    kernel with a strided `get_global_id(0)` loop.

    A size (an int or a tuple) applies to the kernels it fits: those with work-groups
    (map_wrg/map_lcl), or every parallel kernel when none has work-groups; the others keep
    their default ND-range. A dict gives sizes per kernel, keyed by kernel name (an
    `ocl_kernel`'s label): `local_size={"partial": 64}`. `wide`: 64-bit indices in every kernel
    whose indices the symbolic ranges cannot bound (`lift.codegen.width`; `Program` asks for it
    when a call's sizes pass the 32-bit limits)."""
    return build(program, local_size=local_size, global_size=global_size, stages=stages, wide=wide).source


def build(program: Node, *, local_size: SizeArg = None, global_size: SizeArg = None,
          barrier_pass=insert_barriers, verify: bool = False,
          stages: tuple[Stage, ...] = KERNEL_STAGES, wide: bool = False) -> Generated:
    """Like `generate`, keeping the C AST; `barrier_pass` (a `lift.barriers` entry point) places
    barriers; with `verify`, every stage's checker runs on its output (`verify_lowered`,
    `verify_allocated` per kernel, `verify_generated`); `stages`: what each kernel goes through."""
    if not isinstance(program, Lambda):
        raise UnsupportedError("code generation needs a program made with lift.fun", node=program)
    typecheck(program)  # the type errors of a direct caller's program, before anything else
    if is_high_level(program):  # a direct caller's high-level program: the default lowering
        lowered = lower(program)  # (lift.compile hands over a mapped program, typed here once)
        if verify:
            verify_lowered(lowered, program)
        program = lowered  # typed on demand by the kernel stages, once (types live in a side table)
    gen = _Program(program, _dims(local_size), _dims(global_size), barrier_pass, verify=verify, stages=stages)
    gen.wide = wide
    gen = gen.run()
    if verify:
        verify_generated(gen)
    return gen


def _dims(s: SizeArg) -> SizeReq:
    if isinstance(s, dict):
        return {name: _dims(v) for name, v in s.items()}  # type: ignore[misc]
    return (s,) if isinstance(s, int) else (tuple(s) if s is not None else None)


# ------------------------------------------------------------------------- program


@dataclass
class _Kernel:
    kdef: KernelDef
    launch: Launch
    barriers: list[BarrierInfo] = field(default_factory=list)
    limits: tuple[Arith, ...] = ()  # symbolic index maxima that must fit 32 bits (codegen/width.py)


class _Program:
    """The host-level traversal: inputs, kernels, temporaries, outputs."""

    def __init__(self, program: Lambda, lsize, gsize, barrier_pass=insert_barriers, *, verify: bool = False,
                 stages: tuple[Stage, ...] = KERNEL_STAGES) -> None:
        self.program = program
        self.stages = stages
        self.verify = verify
        self.local_req, self.global_req = lsize, gsize  # as requested: one size, or one per kernel
        self.lsize: tuple[int, ...] | None = None  # the sizes of the kernel being generated
        self.gsize: tuple[int, ...] | None = None
        self.grouped = any(isinstance(x, n.MapWrg | n.MapLcl) for _, x in walk(program))
        self.facts = divisibility(size_conditions(program))  # what the sizes may be assumed to satisfy
        self.barrier_pass = barrier_pass
        ufs = {d.name for _, x in walk(program) if isinstance(x, n.UserFun) for d in (x, *_callees(x))}
        self.sizes = size_names(q.ptype for q in program.params)
        self.names = Names(ufs | set(self.sizes))
        self.funs = Funs(self.names)
        self.buffers: list[BufferSpec] = []
        self.kernels: list[_Kernel] = []
        self.wide = False  # 64-bit indices wherever symbolic sizes could need them (generate(wide=))

    def run(self) -> Generated:
        p = self.program
        env = {q.id: self.input(k, q) for k, q in enumerate(p.params)}
        out_t = p.body.type
        out = memory_view(self.names("out"), out_t, "global")
        outputs = []
        for m in memories(out):
            self.buffers.append(_spec(m, "output"))
            outputs.append(m.name)
        if any(isinstance(x, n.OclKernel) for _, x in walk(p.body)) or top_iterate(p.body):
            self.host(p.body, (0,), env, out)
        else:
            self.kernel(self.names(p.label or "lift_kernel"), None, p.body, (0,), env, out)
        return self.finish(tuple(outputs), out_t)

    def input(self, k: int, q: n.Param) -> View:
        view = memory_view(self.names(q.name), q.ptype, "global")
        for m in memories(view):
            self.buffers.append(_spec(m, "input", param=k))
        return view

    # ------------------------------------------------------------- host level

    def host(self, e: Expr, path: Path, env: dict[int, View], dest: View | None) -> View:
        """Top-level code: kernels and the views between them."""
        match e:
            case n.Param():
                v = env[e.id]
            case FunCall(n.Iterate(), _) if top_iterate(e):
                return host_iterate(self, e, path, env, dest)
            case FunCall(n.OclKernel(Lambda((q,), FunCall(n.Iterate(), (arg,)) as body)), (x,)) \
                    if arg == q and top_iterate(body):  # a lowered stage: launches per iteration
                env = {**env, q.id: self.host(x, path + (1,), env, None)}
                return host_iterate(self, body, path + (0, 0, 0), env, dest)
            case FunCall(n.OclKernel(g), args):
                views = [self.host(a, path + (k + 1,), env, None) for k, a in enumerate(args)]
                target = dest if dest is not None else self.temp(e.type)
                name = self.names(e.f.label or g.label or "lift_kernel")
                self.kernel(name, (g, path + (0, 0), views), None, path, env, target)
                return target
            case FunCall(Lambda(params, body) | n.Let(f=Lambda(params, body)) as f, args):
                views = [self.host(a, path + (k + 1,), env, None) for k, a in enumerate(args)]
                bpath = path + (0, 0) if isinstance(f, Lambda) else path + (0, 0, 0)
                return self.host(body, bpath, {**env, **{q.id: v for q, v in zip(params, views)}}, dest)
            case FunCall(f, args) if is_layout_fun(f):
                types = [a.type for a in args]
                dests = arg_dests(f, dest, types) if dest is not None else None
                if dest is not None and dests is None:
                    raise UnsupportedError(f"{f} of a kernel's result cannot be written in place; "
                                           "move it into an ocl_kernel", node=e)
                views = [self.host(a, path + (k + 1,), env, d)
                         for k, (a, d) in enumerate(zip(args, dests or [None] * len(args)))]
                return dest if dest is not None else apply_view(f, views, types, env)
            case _:
                raise UnsupportedError(f"{e} computes outside every ocl_kernel; wrap it in ocl_kernel",
                                       node=e.f if isinstance(e, FunCall) else e)
        if dest is not None:
            raise UnsupportedError("the program returns (part of) an input unchanged; copy it in a "
                                   "kernel", node=e)
        return v

    def temp(self, t: Type) -> View:
        view = memory_view(self.names("tmp"), t, "global")
        for m in memories(view):
            self.buffers.append(_spec(m, "temp"))
        return view

    def kernel(self, name: str, call, body: Expr | None, path: Path, env: dict[int, View],
               dest: View) -> None:
        """One kernel through the kernel stages (`lift.codegen.stages`): `body` at `path`, or
        `call` = (function, its path, argument views)."""
        self.requested(name, call[0] if call else body)
        self.kernels.append(run_stages(self, KernelJob(name, call, body, path, env, dest), self.stages))

    def body(self, sync: Synchronised, names: Names, job: KernelJob) -> KernelGen:
        """Generate a kernel body with the barriers of `sync` (`candidates`: a probe for `lift.barriers`)."""
        node = job.call[0] if job.call is not None else job.body
        lcl = {x.dim for _, x in walk(node) if isinstance(x, n.MapLcl)}
        kg = KernelGen(sync, self.funs, names, self.gsize, self.lsize, facts=self.facts, lcl_dims=len(lcl))
        if job.call is None:
            kg.expr(job.body, job.path, job.env, job.dest)
        else:
            from lift.codegen.kernel import Arg

            g, gpath, views = job.call
            args = [Arg(_view_type(v, t), view=v) for v, t in zip(views, _param_types(g))]
            kg.apply(g, gpath, args, _out_type(g), job.env, job.dest, g, gpath)
        return kg

    @staticmethod
    def out_type(g: FunDecl) -> Type:
        return _out_type(g)

    def assemble(self, name: str, kg: KernelGen, node: Node) -> _Kernel:
        st = kg.state
        params, args = [], []
        known = {b.name for b in self.buffers}
        for m, _ in st.temps:
            if m.name not in known:
                self.buffers.append(_spec(m, "temp"))
                known.add(m.name)
        for b in self.buffers:
            if b.name in st.uses:
                params.append(KParam(_ctype(st.uses[b.name]), b.name, b.space, const=b.role == "input"))
                args.append(KernelArg("buffer", b.name))
        for v in self.sizes:
            params.append(KParam("int", v))
            args.append(KernelArg("size", v))
        body = Block(list(st.locals_) + kg.body.stmts)
        kdef = KernelDef(name, params, body, _short(node))
        gsize, lsize = self.ndrange(st.parallel, node)
        if st.tasks and self.gsize is None and self.lsize is None and set(st.parallel) == {("glb", 0)}:
            lsize = (Cst(1),)  # one work-group per sequential result component (codegen/tasks.py)
        barriers = [BarrierInfo(name, fence, after, reason, bufs) for fence, after, reason, bufs in st.barriers]
        kdef, args, limits = _index_width(kdef, args, (*gsize, *(lsize or ()),
                                                       *(b.count for b in self.buffers if b.name in st.uses)),
                                          self.sizes, self.wide)
        kdef = streamed(kdef, {b.name for b in self.buffers if b.role == "output"})
        if st.fills:  # reduce_atomic's result, pre-filled by a launch of its own before the kernel
            self.kernels.append(self.fill(name, kdef, args, st.fills))
        return _Kernel(kdef, Launch(name, tuple(args), gsize, lsize), barriers, limits)

    def fill(self, name: str, kdef: KernelDef, args: list[KernelArg], fills: list) -> _Kernel:
        """A one-work-item kernel writing the initial values `fills` (target, value) of the
        atomic combinations in kernel `name` (`lift.codegen.atomic`), with its parameters."""
        from lift.codegen.c_ast import Assign

        body = Block([Assign(target, value, "reduce_atomic's initial value") for target, value in fills])
        fill_name = self.names(f"{name}_fill")
        fdef = KernelDef(fill_name, list(kdef.params), body, f"pre-fill for {name}", kdef.index_type)
        return _Kernel(fdef, Launch(fill_name, tuple(args), (Cst(1),), None))

    def ndrange(self, par: dict[tuple[str, int], Arith], node: Node | None = None
                ) -> tuple[tuple[Arith, ...], tuple[Arith, ...] | None]:
        """Default sizes: the outer parallel trip counts, rounded to the work-group size (`node`:
        the kernel's IR, named by the error for a kernel that mixes the two forms)."""
        kinds = {k for k, _ in par}
        if "glb" in kinds and kinds & {"wrg", "lcl"}:
            raise UnsupportedError("a kernel mixes map_glb with map_wrg/map_lcl (global ids next to group and "
                                   "local ids)", node=node,
                                   hint="use one form in the kernel, or split it into ocl_kernel stages")
        ndim = max((d for _, d in par), default=0) + 1
        if self.lsize is not None and self.gsize is None:  # one size per dimension the kernel uses
            ndim = max(ndim, len(self.lsize))
            self.lsize = tuple(self.lsize) + (1,) * (ndim - len(self.lsize))
        if self.gsize is not None:
            g = tuple(Cst(x) for x in self.gsize)
            return g, (tuple(Cst(x) for x in self.lsize) if self.lsize is not None else None)
        if "glb" in kinds or not kinds:
            counts = tuple(par.get(("glb", d), Cst(1)) for d in range(ndim))
            if self.lsize is None:
                return counts, None
            loc = tuple(Cst(x) for x in self.lsize)
            return tuple((c + l - 1) // l * l for c, l in zip(counts, loc)), loc
        if self.lsize is not None:
            loc = tuple(Cst(x) for x in self.lsize)
        else:
            lcl = len({d for k, d in par if k == "lcl"})
            loc = tuple(cap(par.get(("lcl", d), Cst(1)), lcl) for d in range(ndim))
        groups = tuple(par.get(("wrg", d), Cst(1)) for d in range(ndim))
        return tuple(gr * lc for gr, lc in zip(groups, loc)), loc

    def requested(self, name: str, node: Node) -> None:
        """Set the sizes of kernel `name`: its entry of a per-kernel request, else one size for
        the kernels it fits: those with work-groups (map_wrg, map_lcl), or every parallel
        kernel when no kernel has work-groups. Other kernels keep their defaults."""
        kinds = {type(x) for _, x in walk(node) if isinstance(x, n.MapGlb | n.MapWrg | n.MapLcl)}
        fits = bool(kinds & {n.MapWrg, n.MapLcl}) or (bool(kinds) and not self.grouped)
        sizes = []
        for req in (self.global_req, self.local_req):
            sizes.append(req.get(name) if isinstance(req, dict) else req if fits else None)
        self.gsize, self.lsize = sizes

    def check_requests(self) -> None:
        """Every kernel named in a per-kernel size request exists."""
        names = {k.kdef.name for k in self.kernels}
        for what, req in (("global_size", self.global_req), ("local_size", self.local_req)):
            unknown = sorted(set(req) - names) if isinstance(req, dict) else []
            if unknown:
                raise LiftValueError(f"{what} names no kernel {', '.join(unknown)}; the kernels are "
                                     f"{', '.join(sorted(names))}", hint="label the ocl_kernel to name its kernel")

    def finish(self, outputs: tuple[str, ...], out_t: Type) -> Generated:
        self.check_requests()
        structs = [struct_decl(t) for t in _tuples(self.program)]
        helpers = LONG_HELPERS if any(k.kdef.index_type == "long" for k in self.kernels) else C_HELPERS
        helpers = helpers if _needs_helpers(self.kernels) else ""
        if any(uses_stream(k.kdef) for k in self.kernels):
            helpers = f"{STREAM_MACRO}\n\n{helpers}" if helpers else STREAM_MACRO
        unit = Unit(helpers, structs, self.funs.sources,
                    [k.kdef for k in self.kernels])
        memory = _memory(self.buffers, self.kernels)
        src = KernelSource(
            source=print_unit(unit), kernels=tuple(k.kdef.name for k in self.kernels),
            buffers=tuple(self.buffers), launches=tuple(k.launch for k in self.kernels),
            outputs=outputs, result_type=out_t, size_vars=tuple(self.sizes),
            param_types=tuple(q.ptype for q in self.program.params),
            barriers=tuple(b for k in self.kernels for b in k.barriers), memory_bytes=memory,
            index_limits=tuple(dict.fromkeys(x for k in self.kernels for x in k.limits)))
        return Generated(unit, src)


# ----------------------------------------------------------------------- helpers


def _index_width(kdef: KernelDef, args: list[KernelArg], extents: tuple[Arith, ...], sizes,
                 wide: bool = False) -> tuple:
    """`kdef` and its launch arguments with 64-bit indices where needed (`wide`: also where only
    unbounded symbolic sizes could need them), and the run-time limits."""
    w = decide(kdef, extents, sizes)
    if not w.wide and not (wide and w.limits):
        return kdef, args, w.limits
    return widen(kdef), [KernelArg(a.kind, a.name, "long") if a.kind == "size" else a for a in args], ()


def _spec(m: Mem, role: str, param: int | None = None) -> BufferSpec:
    scalar = _scalar(m.type)
    return BufferSpec(m.name, scalar, scalar_count(m.type), m.space, role, param, m.type)


def _scalar(t: Type) -> ScalarType:
    b = base_type(t)
    s = b.scalar if isinstance(b, VectorType) else b
    if not isinstance(s, ScalarType):
        raise UnsupportedError(f"a buffer of {t}")
    return s


def _ctype(m: Mem) -> str:
    return _scalar(m.type).c_name if m.space == "global" else _storage_c(m)


def _storage_c(m: Mem) -> str:
    from lift.userfun.ctypes import c_type

    return c_type(base_type(m.type))


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



def _needs_helpers(kernels: list[_Kernel]) -> bool:
    from lift.codegen.printer import print_kernel

    return any("lift_floor" in print_kernel(k.kdef) for k in kernels)


def _memory(buffers: list[BufferSpec], kernels: list[_Kernel]) -> dict[str, Arith]:
    out: dict[str, Arith] = {}
    for b in buffers:
        out[b.space] = out.get(b.space, Cst(0)) + b.count * b.scalar.dtype.itemsize
    private: Arith = Cst(0)
    local: Arith = out.get("local", Cst(0))
    from lift.codegen.c_ast import Decl

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


def _param_types(g: FunDecl) -> list[Type | None]:
    if isinstance(g, Lambda):
        return [q.ptype for q in g.params]
    return [None] * g.arity


def _view_type(v: View, t: Type | None) -> Type:
    if t is None:
        raise UnsupportedError("an ocl_kernel must wrap a lambda (ocl_kernel(lambda x: ...))")
    return t


def _out_type(g: FunDecl) -> Type:
    if isinstance(g, Lambda):
        return g.body.type
    raise UnsupportedError("an ocl_kernel must wrap a lambda (ocl_kernel(lambda x: ...))", node=g)


def _short(x: Node) -> str:
    text = str(x)
    return text if len(text) <= 100 else text[:97] + "..."


__all__ = ["generate", "build", "Generated", "Names", "Funs", "SizeArg"]
