"""IR -> OpenCL program and host plan: `generate(program) -> KernelSource`.

A program without `ocl_kernel` is one kernel writing the result. With `ocl_kernel`s, each
one is a kernel; the code between them may only arrange data (layout patterns are views
over the buffers the kernels write), and a kernel whose result feeds another gets a
temporary global buffer. Stage `Synchronised -> KernelSource`, run once per kernel:
allocate (`lift.memory`), place barriers (`lift.barriers`), generate (`lift.codegen.kernel`).
Postcondition: every buffer a kernel touches is one of its arguments and in `buffers`, and
the launches run in data-dependence order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lift.arith import C_HELPERS, Arith, Cst, free_vars, min_
from lift.barriers import insert_barriers
from lift.codegen.cast import Block, KernelDef, KParam, Unit, walk_stmts
from lift.codegen.kernel import KernelGen
from lift.codegen.printer import print_unit
from lift.errors import UnsupportedError
from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Node
from lift.ir.paths import Path, walk
from lift.memory import allocate, allocate_fun, scalar_count
from lift.plan import BarrierInfo, BufferSpec, KernelArg, KernelSource, Launch
from lift.typecheck import typecheck
from lift.types import ScalarType, TupleType, Type, VectorType, base_type
from lift.userfun.ctypes import C_RESERVED, struct_decl, tuple_types
from lift.views import Mem, View, dest_views, layout_view, memories, memory_view

DEFAULT_LOCAL = 256  # the cap on a default work-group size


@dataclass
class Generated:
    """The C AST of the program next to its `KernelSource` (tests inspect the AST)."""

    unit: Unit
    source: KernelSource


def generate(program: Node, *, local_size: tuple[int, ...] | None = None,
             global_size: tuple[int, ...] | None = None) -> KernelSource:
    """The OpenCL program and host plan for `program` (a lowered or high-level `fun`).

    Example: `generate(fun([Array(Float, N)], lambda x: map_glb(id) << x)).source` is one
    kernel with a strided `get_global_id(0)` loop."""
    return build(program, local_size=local_size, global_size=global_size).source


def build(program: Node, *, local_size: tuple[int, ...] | None = None,
          global_size: tuple[int, ...] | None = None) -> Generated:
    """Like `generate`, keeping the C AST."""
    if not isinstance(program, Lambda):
        raise UnsupportedError("code generation needs a program made with lift.fun", node=program)
    typecheck(program)
    if any(type(x) in (n.Map, n.Reduce) for _, x in walk(program)):
        from lift.lower import lower

        program = lower(program)
        typecheck(program)
    return _Program(program, _dims(local_size), _dims(global_size)).run()


def _dims(s) -> tuple[int, ...] | None:
    return (s,) if isinstance(s, int) else (tuple(s) if s is not None else None)


# --------------------------------------------------------------------------- names


class Names:
    """Fresh C identifiers, never a reserved word, a user-function name or a size variable."""

    def __init__(self, reserved: set[str]) -> None:
        self.taken = set(reserved) | set(C_RESERVED)

    def __call__(self, hint: str) -> str:
        base = re.sub(r"\W", "_", hint) or "v"
        if base[0].isdigit() or base.startswith("__"):
            base = "v_" + base.lstrip("_")
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name


class Funs:
    """User functions by C name: one definition per (name, types), mangled when names repeat."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self.by_key: dict[tuple, str] = {}
        self.sources: list[str] = []
        self.used: set[str] = set()

    def __call__(self, f: FunDecl) -> str:
        if isinstance(f, n.Vectorise):
            return self.vectorised(f)
        assert isinstance(f, n.UserFun), f
        key = (f.name, f.c_source)
        if key not in self.by_key:
            first = f.name not in self.used and f.name not in C_RESERVED
            cname = f.name if first else self.names(f.name)
            self.used.add(f.name)
            self.by_key[key] = cname
            self.sources.append(_rename(f.c_source, f.name, cname))
        return self.by_key[key]

    def vectorised(self, v: n.Vectorise) -> str:
        g = v.f
        if not isinstance(g, n.UserFun):
            raise UnsupportedError("vectorise supports a user function, not a lambda, for now", node=v)
        key = ("vec", g.name, g.c_source, v.n)
        if key not in self.by_key:
            cname = self.names(f"{g.name}_v{v.n}")
            self.by_key[key] = cname
            self.sources.append(_vector_source(g, v.n, cname))
        return self.by_key[key]


def _rename(src: str, old: str, new: str) -> str:
    if old == new:
        return src
    return re.sub(rf"\b{re.escape(old)}\s*\(", f"{new}(", src, count=1)


def _vector_source(g: n.UserFun, width: int, cname: str) -> str:
    """The C of `g` over vectors: re-translated from Python, else its scalar types widened."""
    vt = tuple(VectorType(t, width) if isinstance(t, ScalarType) else t for t in g.in_types)
    out = VectorType(g.out_type, width) if isinstance(g.out_type, ScalarType) else g.out_type
    if g.py_fn is not None:
        try:
            import sys

            translate = sys.modules["lift.userfun.translate"].translate
            return translate(g.py_fn, vt, name=cname, out_type=out).c_source
        except Exception:  # noqa: BLE001 - fall back to widening the scalar source
            pass
    src = _rename(g.c_source, g.name, cname)
    for s in {t for t in (*g.in_types, g.out_type) if isinstance(t, ScalarType)}:
        src = re.sub(rf"\b{s.c_name}\b", f"{s.c_name}{width}", src)
    return src


# ------------------------------------------------------------------------- program


@dataclass
class _Kernel:
    kdef: KernelDef
    launch: Launch
    barriers: list[BarrierInfo] = field(default_factory=list)


class _Program:
    """The host-level traversal: inputs, kernels, temporaries, outputs."""

    def __init__(self, program: Lambda, lsize, gsize) -> None:
        self.program = program
        self.lsize, self.gsize = lsize, gsize
        ufs = {x.name for _, x in walk(program) if isinstance(x, n.UserFun)}
        self.sizes = _size_vars(program)
        self.names = Names(ufs | set(self.sizes))
        self.funs = Funs(self.names)
        self.buffers: list[BufferSpec] = []
        self.kernels: list[_Kernel] = []

    def run(self) -> Generated:
        p = self.program
        env = {q.id: self.input(k, q) for k, q in enumerate(p.params)}
        out_t = p.body.type
        out = memory_view(self.names("out"), out_t, "global")
        outputs = []
        for m in memories(out):
            self.buffers.append(_spec(m, "output"))
            outputs.append(m.name)
        if any(isinstance(x, n.OclKernel) for _, x in walk(p.body)):
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
            case FunCall(n.OclKernel(g), args):
                views = [self.host(a, path + (k + 1,), env, None) for k, a in enumerate(args)]
                target = dest if dest is not None else self.temp(e.type)
                self.kernel(self.names(g.label or "lift_kernel"), (g, path + (0, 0), views), None, path, env, target)
                return target
            case FunCall(Lambda(params, body) | n.Let(f=Lambda(params, body)) as f, args):
                views = [self.host(a, path + (k + 1,), env, None) for k, a in enumerate(args)]
                bpath = path + (0, 0) if isinstance(f, Lambda) else path + (0, 0, 0)
                return self.host(body, bpath, {**env, **{q.id: v for q, v in zip(params, views)}}, dest)
            case FunCall(f, args) if isinstance(f, n.LAYOUT):
                types = [a.type for a in args]
                dests = dest_views(f, dest, types) if dest is not None else None
                if dest is not None and dests is None:
                    raise UnsupportedError(f"{f} of a kernel's result cannot be written in place; "
                                           "move it into an ocl_kernel", node=e)
                views = [self.host(a, path + (k + 1,), env, d)
                         for k, (a, d) in enumerate(zip(args, dests or [None] * len(args)))]
                return dest if dest is not None else layout_view(f, views, types)
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
        """Generate one kernel: `body` at `path`, or `call` = (function, its path, argument views)."""
        if call is None:
            alloc = allocate(body, path, names=self.names)
        else:
            g, gpath, views = call
            alloc = allocate_fun(g, gpath, len(views), _out_type(g), names=self.names)
        sync = insert_barriers(self.program, alloc)
        kg = KernelGen(sync, self.funs, self.names, self.gsize, self.lsize)
        if call is None:
            kg.expr(body, path, env, dest)
        else:
            from lift.codegen.kernel import Arg

            g, gpath, views = call
            args = [Arg(_view_type(v, t), view=v) for v, t in zip(views, _param_types(g))]
            kg.apply(g, gpath, args, _out_type(g), env, dest, g, gpath)
        self.kernels.append(self.assemble(name, kg, g if call else body))

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
        gsize, lsize = self.ndrange(st.parallel)
        barriers = [BarrierInfo(name, fence, after, reason, bufs) for fence, after, reason, bufs in st.barriers]
        return _Kernel(kdef, Launch(name, tuple(args), gsize, lsize), barriers)

    def ndrange(self, par: dict[tuple[str, int], Arith]) -> tuple[tuple[Arith, ...], tuple[Arith, ...] | None]:
        """Default sizes: the outer parallel trip counts, rounded to the work-group size."""
        kinds = {k for k, _ in par}
        if "glb" in kinds and kinds & {"wrg", "lcl"}:
            raise UnsupportedError("a kernel mixes map_glb with map_wrg/map_lcl")
        ndim = max((d for _, d in par), default=0) + 1
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
            loc = tuple(_cap(par.get(("lcl", d), Cst(1))) for d in range(ndim))
        groups = tuple(par.get(("wrg", d), Cst(1)) for d in range(ndim))
        return tuple(gr * lc for gr, lc in zip(groups, loc)), loc

    def finish(self, outputs: tuple[str, ...], out_t: Type) -> Generated:
        structs = [struct_decl(t) for t in _tuples(self.program)]
        unit = Unit(C_HELPERS if _needs_helpers(self.kernels) else "", structs, self.funs.sources,
                    [k.kdef for k in self.kernels])
        memory = _memory(self.buffers, self.kernels)
        src = KernelSource(
            source=print_unit(unit), kernels=tuple(k.kdef.name for k in self.kernels),
            buffers=tuple(self.buffers), launches=tuple(k.launch for k in self.kernels),
            outputs=outputs, result_type=out_t, size_vars=tuple(self.sizes),
            param_types=tuple(q.ptype for q in self.program.params),
            barriers=tuple(b for k in self.kernels for b in k.barriers), memory_bytes=memory)
        return Generated(unit, src)


# ----------------------------------------------------------------------- helpers


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


def _cap(count: Arith) -> Arith:
    return Cst(min(count.value, DEFAULT_LOCAL)) if isinstance(count, Cst) else min_(count, DEFAULT_LOCAL)


def _size_vars(p: Lambda) -> list[str]:
    out: list[str] = []

    def visit(t: Type) -> None:
        from lift.types import ArrayType

        if isinstance(t, ArrayType):
            for v in sorted(free_vars(t.size), key=lambda x: x.name):
                if v.name not in out:
                    out.append(v.name)
            visit(t.elem)
        elif isinstance(t, TupleType):
            for e in t.elems:
                visit(e)

    for q in p.params:
        visit(q.ptype)
    return out


def _tuples(p: Lambda) -> tuple[TupleType, ...]:
    types: list[Type] = [q.ptype for q in p.params]
    for _, x in walk(p):
        if isinstance(x, Expr):
            types.append(x.type)
        elif isinstance(x, n.UserFun):
            types.extend((*x.in_types, x.out_type))
    return tuple_types(types)


def _needs_helpers(kernels: list[_Kernel]) -> bool:
    from lift.codegen.printer import print_kernel

    return any("lift_floor" in print_kernel(k.kdef) for k in kernels)


def _memory(buffers: list[BufferSpec], kernels: list[_Kernel]) -> dict[str, Arith]:
    out: dict[str, Arith] = {}
    for b in buffers:
        out[b.space] = out.get(b.space, Cst(0)) + b.count * b.scalar.dtype.itemsize
    private: Arith = Cst(0)
    local: Arith = out.get("local", Cst(0))
    from lift.codegen.cast import Decl

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


__all__ = ["generate", "build", "Generated", "Names", "Funs"]
