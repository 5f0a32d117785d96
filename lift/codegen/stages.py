"""The stages of one kernel, each a function from one frozen record to the next.

    job          = KernelJob(...)                    what the host plan asks for: a body, its views
    allocated    = allocated(ctx, job)               lift.allocation: buffers for every intermediate
    probed       = probed(ctx, allocated)            code generated with every candidate barrier, read
                                                     back as accesses and index expressions
    synchronised = synchronised(ctx, probed)         lift.barriers: Algorithm 3 on the probe
    emitted      = emitted(ctx, synchronised)        lift.codegen.kernel: the kernel body (views built as
                                                     it walks), what it touches, fills, barriers
    kernel       = assembled(ctx, emitted)           parameters, ND-range, barrier report; the kernel,
                                                     its pre-fill launch and new buffers as fields

`KERNEL_STAGES` is that order; `lift.codegen.generate.build` runs it for every kernel job the
host traversal yields. Every stage reads the same `KernelContext` (frozen: the program, its
size variables and facts, the barrier pass, the program's buffers so far, and the two name
supplies that keep C names unique across the program) and returns a new record; nothing is
appended to a shared object. Views are built while code is generated (the probe and the
emitted body both walk them), so "viewed" is part of those two stages, not a record of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lift.allocation import Allocated, Buffer, allocate, allocate_fun, verify_allocated
from lift.arith import Arith, Cst
from lift.barriers import Synchronised, candidates
from lift.barriers.graph import Probe
from lift.codegen.access import Facts
from lift.codegen.barrier_probe import probe
from lift.codegen.c_ast import Assign, Block, CExpr, Decl, KernelDef, KParam
from lift.codegen.kernel import Arg, KernelGen, cap
from lift.codegen.names import Funs, Names
from lift.codegen.stream import streamed
from lift.codegen.unroll import short_loops_unrolled
from lift.codegen.width import decide, widen
from lift.errors import UnsupportedError
from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunDecl, Lambda, Node
from lift.ir.paths import Path, walk
from lift.ir.registry import has, is_parallel
from lift.plan import BarrierInfo, BufferSpec, KernelArg, Launch
from lift.types import ScalarType, Type, VectorType, base_type, scalar_count
from lift.userfun.ctypes import c_type
from lift.views import Mem, View

Sizes = tuple[int, ...] | None
SizeReq = Sizes | dict[str, Sizes]  # one size for the kernels it fits, or one per kernel name
BarrierPass = Callable[[Node, Allocated, Probe], Synchronised]
NDRange = tuple[tuple[Arith, ...], tuple[Arith, ...] | None]


@dataclass(frozen=True)
class KernelJob:
    """One kernel of the host plan: `body` at `path`, or `call` = (function, its path, argument
    views); `env` the views of the parameters in scope, `dest` the view of its result;
    `global_size` / `local_size` the launch sizes requested for it (None: the defaults)."""

    name: str
    call: tuple[FunDecl, Path, tuple[View, ...]] | None
    body: Expr | None
    path: Path
    env: dict[int, View]
    dest: View
    global_size: Sizes = None
    local_size: Sizes = None

    @property
    def node(self) -> Node:
        """The IR node the kernel comes from (named in its comment)."""
        if self.call is not None:
            return self.call[0]
        assert self.body is not None
        return self.body


@dataclass(frozen=True)
class KernelContext:
    """What every kernel stage reads. `names` and `funs` are the program's name supplies (one
    each, so that C names and user-function definitions are unique across its kernels);
    `buffers` are the program's buffers when the kernel is generated (its parameters come in
    their order); `wide`: 64-bit indices wherever symbolic sizes could need them."""

    program: Lambda
    names: Names
    funs: Funs
    sizes: tuple[str, ...]
    facts: Facts
    barrier_pass: BarrierPass
    buffers: tuple[BufferSpec, ...] = ()
    verify: bool = False
    wide: bool = False


@dataclass(frozen=True)
class AllocatedKernel:
    job: KernelJob
    alloc: Allocated


@dataclass(frozen=True)
class ProbedKernel:
    """The probe of the kernel, and its local size request completed to the dimensions it uses."""

    job: KernelJob
    alloc: Allocated
    trace: Probe
    local_size: Sizes


@dataclass(frozen=True)
class SynchronisedKernel:
    job: KernelJob
    sync: Synchronised
    local_size: Sizes


@dataclass(frozen=True)
class EmittedKernel:
    """The kernel's C body and what its generation collected, as fields: the memories it
    touches (`uses`), its global temporaries and fixed-size local arrays, the trip count of each
    parallel (kind, dimension), its barriers, reduce_atomic's initial values to pre-fill
    (`fills`: target, value) and its sequential result components (`tasks`, codegen/tasks.py)."""

    job: KernelJob
    body: Block
    uses: Mapping[str, Mem]
    temps: tuple[tuple[Mem, Buffer], ...]
    locals_: tuple[Decl, ...]
    parallel: Mapping[tuple[str, int], Arith]
    barriers: tuple[tuple[str, str, str, tuple[str, ...]], ...]
    fills: tuple[tuple[CExpr, CExpr], ...]
    tasks: int
    local_size: Sizes


@dataclass(frozen=True)
class Kernel:
    """A kernel as the host plan links it: its C definition, its launch, the barriers it has
    and the symbolic index maxima that must fit 32 bits (`lift.codegen.width`)."""

    kdef: KernelDef
    launch: Launch
    barriers: tuple[BarrierInfo, ...] = ()
    limits: tuple[Arith, ...] = ()
    fill: bool = False  # a reduce_atomic pre-fill (`_fill`): one work-item writing initial values


@dataclass(frozen=True)
class AssembledKernel:
    """The last kernel record: `kernels` to launch in order (a pre-fill launch, then the kernel)
    and the `buffers` the kernel adds to the program (its global temporaries)."""

    kernels: tuple[Kernel, ...]
    buffers: tuple[BufferSpec, ...]


def allocated(ctx: KernelContext, job: KernelJob) -> AllocatedKernel:
    """Memory: a buffer (address space, size) for every intermediate of the kernel."""
    if job.call is None:
        assert job.body is not None
        alloc = allocate(job.body, job.path, names=ctx.names)
    else:
        g, gpath, views = job.call
        alloc = allocate_fun(g, gpath, len(views), out_type(g), names=ctx.names)
    if ctx.verify:
        verify_allocated(alloc)
    return AllocatedKernel(job, alloc)


def probed(ctx: KernelContext, a: AllocatedKernel) -> ProbedKernel:
    """The kernel generated with a barrier at every candidate place, read back as accesses."""
    job = a.job
    gen = kernel_body(ctx, candidates(a.alloc), Names(ctx.names.taken), job, job.local_size)
    par = gen.state.parallel
    local = local_request(par, job.global_size, job.local_size)
    trace = probe(gen.body, gen.state.uses, gen.loopvars, *ndrange(par, job.global_size, local, job.node))
    return ProbedKernel(job, a.alloc, trace, local)


def synchronised(ctx: KernelContext, p: ProbedKernel) -> SynchronisedKernel:
    """Barriers: the barrier pass (Algorithm 3 by default) on the probe."""
    return SynchronisedKernel(p.job, ctx.barrier_pass(ctx.program, p.alloc, p.trace), p.local_size)


def emitted(ctx: KernelContext, s: SynchronisedKernel) -> EmittedKernel:
    """The kernel body with the chosen barriers."""
    gen = kernel_body(ctx, s.sync, ctx.names, s.job, s.local_size)
    st = gen.state
    return EmittedKernel(s.job, gen.body, dict(st.uses), tuple(st.temps), tuple(st.locals_), dict(st.parallel),
                         tuple(st.barriers), tuple(st.fills), st.tasks, s.local_size)


def assembled(ctx: KernelContext, e: EmittedKernel) -> AssembledKernel:
    """Parameters, launch sizes and barrier report: the kernel as the host plan links it, with
    its pre-fill launch (reduce_atomic's result) and the global temporaries it adds."""
    job, st = e.job, e
    known = {b.name for b in ctx.buffers}
    new = tuple({m.name: buffer_spec(m, "temp") for m, _ in st.temps if m.name not in known}.values())
    buffers = (*ctx.buffers, *new)
    params, args = [], []
    for b in buffers:
        if b.name in st.uses:
            params.append(KParam(_ctype(st.uses[b.name]), b.name, b.space, const=b.role == "input"))
            args.append(KernelArg("buffer", b.name))
    for v in ctx.sizes:
        params.append(KParam("int", v))
        args.append(KernelArg("size", v))
    kdef = KernelDef(job.name, params, Block(list(st.locals_) + e.body.stmts), _short(job.node))
    gsize, lsize = ndrange(st.parallel, job.global_size, e.local_size, job.node)
    if st.tasks and job.global_size is None and e.local_size is None and set(st.parallel) == {("glb", 0)}:
        lsize = (Cst(1),)  # one work-group per sequential result component (codegen/tasks.py)
    barriers = tuple(BarrierInfo(job.name, fence, after, reason, bufs) for fence, after, reason, bufs in st.barriers)
    extents = (*gsize, *(lsize or ()), *(b.count for b in buffers if b.name in st.uses))
    kdef, kargs, limits = _index_width(kdef, tuple(args), extents, ctx.sizes, ctx.wide)
    kdef = streamed(kdef, {b.name for b in buffers if b.role == "output"})
    kdef = short_loops_unrolled(kdef)
    kernel = Kernel(kdef, Launch(job.name, kargs, gsize, lsize), barriers, limits)
    if not st.fills:
        return AssembledKernel((kernel,), new)
    return AssembledKernel((_fill(ctx, job.name, kdef, kargs, st.fills), kernel), new)


Stage = Callable[[KernelContext, object], object]
KERNEL_STAGES: tuple[Callable, ...] = (allocated, probed, synchronised, emitted, assembled)


def run_stages(ctx: KernelContext, job: KernelJob, stages: tuple[Callable, ...] = KERNEL_STAGES) -> AssembledKernel:
    """`job` through `stages`, in order."""
    record: object = job
    for stage in stages:
        record = stage(ctx, record)
    assert isinstance(record, AssembledKernel), f"the last kernel stage returned {type(record).__name__}"
    return record


# ------------------------------------------------------------------ the body


def kernel_body(ctx: KernelContext, sync: Synchronised, names: Names, job: KernelJob, local_size: Sizes
                ) -> KernelGen:
    """A kernel body with the barriers of `sync` (`candidates`: a probe for `lift.barriers`)."""
    node = job.node
    lcl = {x.dim for _, x in walk(node) if isinstance(x, n.MapLcl)}
    kg = KernelGen(sync, ctx.funs, names, job.global_size, local_size, facts=ctx.facts, lcl_dims=len(lcl))
    if job.call is None:
        assert job.body is not None
        kg.expr(job.body, job.path, job.env, job.dest)
    else:
        g, gpath, views = job.call
        args = [Arg(_param_type(t), view=v) for v, t in zip(views, _param_types(g))]
        kg.apply(g, gpath, args, out_type(g), job.env, job.dest, g, gpath)
    return kg


def out_type(g: FunDecl) -> Type:
    """The result type of an `ocl_kernel`'s function."""
    if isinstance(g, Lambda):
        return g.body.type
    raise UnsupportedError("an ocl_kernel must wrap a lambda (ocl_kernel(lambda x: ...))", node=g)


def _param_types(g: FunDecl) -> list[Type | None]:
    if isinstance(g, Lambda):
        return [q.ptype for q in g.params]
    return [None] * g.arity


def _param_type(t: Type | None) -> Type:
    if t is None:
        raise UnsupportedError("an ocl_kernel must wrap a lambda (ocl_kernel(lambda x: ...))")
    return t


# ------------------------------------------------------------------ launch sizes


def requested(node: Node, name: str, global_req: SizeReq, local_req: SizeReq, grouped: bool
              ) -> tuple[Sizes, Sizes]:
    """The (global, local) sizes of kernel `name`: its entry of a per-kernel request (a dict),
    else one size for the kernels it fits: those with work-groups (map_wrg, map_lcl), or every
    parallel kernel when no kernel of the program (`grouped`) has work-groups."""
    parallel = [x for _, x in walk(node) if is_parallel(x)]
    fits = any(has("grouped", x) for x in parallel) or (bool(parallel) and not grouped)
    return _pick(global_req, name, fits), _pick(local_req, name, fits)


def _pick(req: SizeReq, name: str, fits: bool) -> Sizes:
    if isinstance(req, dict):
        return req.get(name)
    return req if fits else None


def local_request(par: Mapping[tuple[str, int], Arith], global_size: Sizes, local_size: Sizes) -> Sizes:
    """A local size given without a global one, completed with 1s to the dimensions the kernel uses."""
    if local_size is None or global_size is not None:
        return local_size
    ndim = max(max((d for _, d in par), default=0) + 1, len(local_size))
    return tuple(local_size) + (1,) * (ndim - len(local_size))


def ndrange(par: Mapping[tuple[str, int], Arith], global_size: Sizes, local_size: Sizes, node: Node | None = None
            ) -> NDRange:
    """The launch sizes: the requested ones, else the outer parallel trip counts rounded to the
    work-group size (`par`: (kind, dim) -> trip count; `local_size` completed by `local_request`;
    `node`: the kernel's IR, named by the error for a kernel that mixes the two forms)."""
    kinds = {k for k, _ in par}
    if "glb" in kinds and kinds & {"wrg", "lcl"}:
        raise UnsupportedError("a kernel mixes map_glb with map_wrg/map_lcl (global ids next to group and "
                               "local ids)", node=node,
                               hint="use one form in the kernel, or split it into ocl_kernel stages")
    ndim = max((d for _, d in par), default=0) + 1
    loc: tuple[Arith, ...] | None = tuple(Cst(x) for x in local_size) if local_size is not None else None
    if global_size is not None:
        return tuple(Cst(x) for x in global_size), loc
    if "glb" in kinds or not kinds:
        counts = tuple(par.get(("glb", d), Cst(1)) for d in range(ndim))
        if loc is None:
            return counts, None
        return tuple((c + lc - 1) // lc * lc for c, lc in zip(counts, loc)), loc
    if loc is None:
        lcl = len({d for k, d in par if k == "lcl"})
        loc = tuple(cap(par.get(("lcl", d), Cst(1)), lcl) for d in range(ndim))
    groups = tuple(par.get(("wrg", d), Cst(1)) for d in range(ndim))
    return tuple(gr * lc for gr, lc in zip(groups, loc)), loc


# ------------------------------------------------------------------ helpers


def _fill(ctx: KernelContext, name: str, kdef: KernelDef, args: tuple[KernelArg, ...],
          fills: tuple[tuple[CExpr, CExpr], ...]) -> Kernel:
    """A one-work-item kernel writing the initial values `fills` (target, value) of the atomic
    combinations in kernel `name` (`lift.codegen.atomic`), with its parameters."""
    body = Block([Assign(target, value, "reduce_atomic's initial value") for target, value in fills])
    fill_name = ctx.names(f"{name}_fill")
    fdef = KernelDef(fill_name, list(kdef.params), body, f"pre-fill for {name}", kdef.index_type)
    return Kernel(fdef, Launch(fill_name, args, (Cst(1),), None), fill=True)


def folded_fills(kernels: list[Kernel]) -> list[Kernel]:
    """The kernels with every pre-fill that follows a one-work-item kernel appended to that
    kernel's body: one launch instead of two (a call's launches cost tens of microseconds on a
    CPU runtime). Both run on one work-item, in order, so the fill reads what the kernel before
    it wrote (a reduction's sequential tail, its atomic combination's initial value) as it did."""
    out: list[Kernel] = []
    for k in kernels:
        prev = out[-1] if out else None
        if k.fill and prev is not None and single_item(prev) and agree(prev.kdef, k.kdef):
            out[-1] = _appended(prev, k)
        else:
            out.append(k)
    return out


def single_item(k: Kernel) -> bool:
    """The kernel runs on one work-item."""
    one = (Cst(1),)
    return all(g == Cst(1) for g in k.launch.global_size) and all(
        s == Cst(1) for s in k.launch.local_size or one)


def agree(a: KernelDef, b: KernelDef) -> bool:
    """The two kernels index alike and declare every parameter they share alike (one C type)."""
    theirs = {p.name: (p.ctype, p.qual) for p in b.params}
    return a.index_type == b.index_type and all(theirs.get(p.name, (p.ctype, p.qual)) == (p.ctype, p.qual)
                                                for p in a.params)


def merged(first: Kernel, then: Kernel, *extra: tuple[KParam, KernelArg]) -> Kernel:
    """One kernel (not a fill) that runs `first`'s statements (in a block of their own) and leaves
    `then`'s for the caller to place: `first`'s name, comment, launch range and barriers, the parameters of
    both (a shared one once, const where both only read it; buffers first) and the `extra` ones,
    with their launch arguments in that order, and the index limits of both."""
    params: dict[str, KParam] = {}
    args: dict[str, KernelArg] = {}
    pairs = [*zip(first.kdef.params, first.launch.args, strict=True),
             *zip(then.kdef.params, then.launch.args, strict=True), *extra]
    for p, a in pairs:
        held = params.get(p.name)
        params[p.name] = p if held is None else KParam(p.ctype, p.name, p.qual, held.const and p.const)
        args.setdefault(p.name, a)
    order = [name for name, p in params.items() if p.qual] + [name for name, p in params.items() if not p.qual]
    kdef = KernelDef(first.kdef.name, [params[x] for x in order], Block([Block(list(first.kdef.body.stmts))]),
                     first.kdef.comment, first.kdef.index_type)
    launch = Launch(first.launch.kernel, tuple(args[x] for x in order), first.launch.global_size,
                    first.launch.local_size)
    return Kernel(kdef, launch, first.barriers, tuple(dict.fromkeys((*first.limits, *then.limits))))


def _appended(first: Kernel, fill: Kernel) -> Kernel:
    """`first` then `fill`'s statements, in one kernel with both kernels' parameters."""
    out = merged(first, fill)
    out.kdef.body.stmts.extend(fill.kdef.body.stmts)
    return out


def _index_width(kdef: KernelDef, args: tuple[KernelArg, ...], extents: tuple[Arith, ...], sizes: tuple[str, ...],
                 wide: bool) -> tuple[KernelDef, tuple[KernelArg, ...], tuple[Arith, ...]]:
    """`kdef` and its launch arguments with 64-bit indices where needed (`wide`: also where only
    unbounded symbolic sizes could need them), and the run-time limits."""
    w = decide(kdef, extents, sizes)
    if not w.wide and not (wide and w.limits):
        return kdef, args, w.limits
    return widen(kdef), tuple(KernelArg(a.kind, a.name, "long") if a.kind == "size" else a for a in args), ()


def buffer_spec(m: Mem, role: str, param: int | None = None) -> BufferSpec:
    """The host plan's buffer for memory `m` (`role`: "input", "output" or "temp")."""
    scalar = _scalar(m.type)
    return BufferSpec(m.name, scalar, scalar_count(m.type), m.space, role, param, m.type)


def _scalar(t: Type) -> ScalarType:
    b = base_type(t)
    s = b.scalar if isinstance(b, VectorType) else b
    if not isinstance(s, ScalarType):
        raise UnsupportedError(f"a buffer of {t}")
    return s


def _ctype(m: Mem) -> str:
    return _scalar(m.type).c_name if m.space == "global" else c_type(base_type(m.type))


def _short(x: Node) -> str:
    text = str(x)
    return text if len(text) <= 100 else text[:97] + "..."


__all__ = ["KernelJob", "KernelContext", "AllocatedKernel", "ProbedKernel", "SynchronisedKernel", "EmittedKernel",
           "Kernel", "AssembledKernel", "KERNEL_STAGES", "run_stages", "allocated", "probed", "synchronised",
           "emitted", "assembled", "kernel_body", "out_type", "requested", "local_request", "ndrange", "buffer_spec",
           "SizeReq", "Sizes", "folded_fills", "single_item", "agree", "merged"]
