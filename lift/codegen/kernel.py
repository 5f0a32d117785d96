"""IR -> C AST for one kernel: loops for maps and reductions, user-function calls, copies.

Every value is written into a destination view (destination passing); layout patterns only
build views (`lift.views`), so they never copy. A map becomes a loop whose body writes
element `i` of the destination: `map_glb`, `map_wrg`, `map_lcl` become the strided loops of
thesis Listing 2.3 (a single guarded trip when the ND-range provably covers the array),
`map_seq` and `reduce_seq` sequential loops; a reduction accumulates in a private variable
and the result is copied to the destination afterwards; `iterate` is a sequence of
applications over ping-pong buffers (`lift.codegen.iterate`). The traversal takes the cases of
`lift.allocation`'s (one table, `KERNEL_TABLE` at the end of this module, holds both walks' handler
of every family; the memory pass's side tables say which expression has memory of its own) and
emits the barriers of `lift.barriers` after the nodes they follow.

A map whose loop `lift.barriers` made uniform (`Synchronised.uniform`) runs up to its trip
count rounded up to a multiple of its stride, and its body in guarded parts split at its
barriers, so that every work-item reaches each barrier once per trip:

    for (int l_u = get_local_id(1); l_u < roundup(N); l_u += get_local_size(1)) {
      { int l = l_u; if (l < N) { stages before the barrier } }
      barrier(...);
      { int l = l_u; if (l < N) { stages after the barrier } }
    }

(a single guarded trip keeps its single trip, without the outer guard). Private variables
declared in one part are declared before the parts, so that later parts still see them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from lift.allocation import (
    KERNEL_RULES,
    LOOP_KINDS,
    Allocator,
    Buffer,
    KernelCase,
    body_path,
    concrete,
    install_kernel_cases,
    kernel_case,
)
from lift.arith import Arith, Cst, Var, min_, prove_eq, prove_le, to_c
from lift.barriers import Synchronised, Uniform
from lift.codegen.access import NO_FACTS, Facts, leaf_expr, write
from lift.codegen.args import Arg
from lift.codegen.atomic import atomic
from lift.codegen.c_ast import Assign, Barrier, Block, CCall, CExpr, Comment, CRaw, CStmt, CVar, Decl, For, unrolled
from lift.codegen.gather import bind
from lift.codegen.iterate import iterate
from lift.codegen.names import Funs
from lift.codegen.tasks import share_components
from lift.errors import NotSynchronisableError, UnsupportedError
from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl
from lift.ir.paths import Path, lambda_of
from lift.ir.registry import is_address, is_loop
from lift.layout import apply_view, arg_dests, expr_view, memories, memory_view
from lift.typecheck import infer
from lift.types import ArrayType, ScalarType, TupleType, Type, VectorType, holds_array, shape
from lift.userfun.ctypes import c_type
from lift.views import Access, ConstV, ExprV, Mem, Proj, View, resolve, storage_type

DEFAULT_LOCAL = 256  # the cap on a default work-group size (all its dimensions together)


def cap(count: Arith, ndims: int = 1) -> Arith:
    """The default work-group size in one of `ndims` local dimensions for `count` local iterations:
    `min(count, c)` with c = 2 ** (8 // ndims) (256, 16, 4), so that the whole work-group stays within
    DEFAULT_LOCAL work-items (a 2-D map_lcl nest of 256 x 256 fits no device)."""
    top = 1 << ((DEFAULT_LOCAL.bit_length() - 1) // max(ndims, 1))
    return Cst(min(count.value, top)) if isinstance(count, Cst) else min_(count, top)


_IDS = {"glb": ("get_global_id", "get_global_size"), "wrg": ("get_group_id", "get_num_groups"),
        "lcl": ("get_local_id", "get_local_size")}


@dataclass
class KernelState:
    """What one kernel's generation collects, besides its body."""

    uses: dict[str, Mem] = field(default_factory=dict)  # every memory touched, by name
    temps: list[tuple[Mem, Buffer]] = field(default_factory=list)  # global or symbolic local
    locals_: list[Decl] = field(default_factory=list)  # fixed-size local arrays
    parallel: dict[tuple[str, int], Arith] = field(default_factory=dict)  # (kind, dim) -> trip count
    barriers: list[tuple[str, str, str, tuple[str, ...]]] = field(default_factory=list)
    fills: list[tuple[CExpr, CExpr]] = field(default_factory=list)  # (target, value) before the kernel
    tasks: int = 0  # sequential result components, one work-item (and work-group) each (codegen/tasks.py)


@dataclass(frozen=True, slots=True)
class Application:
    """One application a family's handler generates (`KernelCase.emit`): the function `f` at path
    `fpath`, its `args` and result type `out`, the views `env` of the parameters in scope, the
    destination `dest` (None: memory of its own), the `node` whose family it is, its `key` path
    (its buffer, the barriers placed after it) and its own buffer `own` (None: none allocated)."""

    f: FunDecl
    fpath: Path
    args: list[Arg]
    out: Type
    env: dict[int, View]
    dest: View | None
    node: Any
    key: Path
    own: Buffer | None


class KernelGen:
    """Generate the body of one kernel into `self.body`."""

    def __init__(self, sync: Synchronised, funs: Funs, fresh: Callable[[str], str],
                 global_size: tuple[int, ...] | None, local_size: tuple[int, ...] | None,
                 *, facts: Facts = NO_FACTS, lcl_dims: int = 1) -> None:
        self.alloc = sync.allocated
        self.lcl_dims = lcl_dims  # the kernel's map_lcl dimensions, for the default work-group size
        self.facts = facts  # size variables' known divisors, for aligned vector accesses
        self.sync = sync
        self.funs = funs
        self.fresh = fresh
        self.gsize, self.lsize = global_size, local_size
        self.state = KernelState()
        self.body = Block()
        self.block = self.body
        self.loopvars: dict[Path, Var] = {}
        self.guards: list[_Guarded] = []  # the uniform loops being generated, innermost last

    # ------------------------------------------------------------------ helpers

    def use(self, m: Mem) -> None:
        self.state.uses.setdefault(m.name, m)

    def read(self, v: View) -> CExpr:
        return leaf_expr(bind(self, resolve(v)), self.use, self.facts)  # runtime indices declared first

    def write(self, dest: View, value: CExpr, t: Type, comment: str = "") -> None:
        write(dest, value, t, self.block, self.fresh, self.use, comment, self.facts)

    def copy(self, src: View, dest: View, t: Type, why: str) -> None:
        """Copy a value element by element (only where a destination cannot be written in place)."""
        if isinstance(t, ArrayType):
            var = Var(self.fresh("c"), Cst(0), t.size - 1)
            self.loop_body(For(var, CRaw("0"), t.size, CRaw("1"), Block(), f"copy ({why})", "seq",
                               unroll=unrolled(t.size)),
                           lambda: self.copy(Access(src, var), Access(dest, var), t.elem, why))
            return
        if isinstance(t, TupleType) and holds_array(t):  # component by component: no struct
            for k, et in enumerate(t.elems):
                self.copy(Proj(src, k), Proj(dest, k), et, why)
            return
        self.write(dest, self.read(src), t, why)

    def declare(self, buf: Buffer) -> View:
        """Declare the memory of `buf` and return its view at the current loop iterations."""
        view = memory_view(buf.name, buf.full_type, buf.space)
        for m in memories(view):
            self.declare_mem(m, buf)
        for loop in buf.loops:
            view = Access(view, self.loopvars[loop.path])
        return view

    def declare_mem(self, m: Mem, buf: Buffer) -> None:
        st = storage_type(m.type)
        elems: Arith = Cst(1)
        for d in shape(m.type):
            elems = elems * d
        size = elems if shape(m.type) else None
        if m.space == "private":
            self.block.add(Decl(c_type(st), m.name, size=size, comment=f"{buf.role} for {buf.type}"))
        elif m.space == "local" and isinstance(elems, Cst):
            self.state.locals_.append(Decl(c_type(st), m.name, space="local", size=elems,
                                           comment=f"{buf.role} for {buf.type}"))
        else:
            self.state.temps.append((m, buf))
        self.use(m)

    def loop_body(self, loop: For, fill: Callable[[], object]) -> None:
        self.block.add(loop)
        outer, self.block = self.block, loop.body
        try:
            fill()
        finally:
            self.block = outer

    def make_loop(self, f: FunDecl, kind: str, count: Arith, fpath: Path) -> For:
        dim = getattr(f, "dim", 0)
        prefix = {"glb": "gl", "wrg": "wg", "lcl": "l", "seq": "i"}[kind]
        var = Var(self.fresh(f"{prefix}_{f.label}" if f.label else prefix), Cst(0), count - 1)
        self.loopvars[fpath] = var
        comment = _describe(f)
        if kind == "seq":
            return For(var, CRaw("0"), count, CRaw("1"), Block(), comment, kind, unroll=unrolled(count))
        self.state.parallel.setdefault((kind, dim), count)
        ident, step = _IDS[kind]
        once, guard = self.single_trip(kind, dim, count)
        return For(var, CRaw(f"{ident}({dim})"), count, CRaw(f"{step}({dim})"), Block(), comment, kind,
                   once, guard)

    def single_trip(self, kind: str, dim: int, count: Arith) -> tuple[bool, bool]:
        """(no loop needed, guard needed): when the ND-range is known to cover `count`."""
        units = self.units(kind, dim)
        if units is None or not prove_le(count, units):
            return False, True
        return True, not prove_eq(count, units)

    def units(self, kind: str, dim: int) -> Arith | None:
        """The work-items (glb, lcl) or work-groups (wrg) of the launch in dimension `dim`: the
        requested sizes, else the defaults of ``lift.codegen.stages.ndrange`` (the first loop's trip count)."""
        g = self.gsize[dim] if self.gsize is not None and dim < len(self.gsize) else None
        loc = self.lsize[dim] if self.lsize is not None and dim < len(self.lsize) else None
        first = self.state.parallel.get((kind, dim))
        if kind == "lcl":
            if self.lsize is not None:
                return Cst(loc) if loc is not None else None
            return cap(first, self.lcl_dims) if first is not None else None
        if self.gsize is not None:  # explicit global size: work-items, or groups of the local size
            if g is None or (kind == "wrg" and not loc):
                return None
            if kind == "glb":
                return Cst(g)
            assert loc  # a work-group count needs the local size (checked above)
            return Cst(g // loc)
        if kind == "wrg" or first is None or loc is None:
            return first
        return (first + loc - 1) // loc * loc  # glb: the count rounded up to the local size

    def barrier_after(self, key: Path) -> None:
        for p in self.sync.after.get(key, ()):
            if self.guards:
                self.guards[-1].split(self, key)
            self.block.add(Barrier(p.fence, p.comment))
            self.state.barriers.append((p.fence, p.after, p.reason, p.buffers))
            if self.guards:
                self.guards[-1].resume(self)

    def uniform_body(self, loop: For, u: Uniform, fill: Callable[[], None]) -> None:
        """Generate a map's loop made uniform by `u`: the rounded-up loop, the body in guarded parts."""
        trip = Var(self.fresh(f"{loop.var.name}_u"), Cst(0), u.bound - 1)
        outer = For(trip, loop.init, u.bound, loop.step, Block(), f"{loop.comment} (uniform)", loop.kind,
                    loop.once, False)
        guarded = _Guarded(loop, outer, trip)

        def parts() -> None:
            guarded.resume(self)
            fill()

        self.guards.append(guarded)
        try:
            self.loop_body(outer, parts)
        finally:
            self.guards.pop()
        guarded.finish()

    # ------------------------------------------------------------- expressions

    def expr(self, e: Expr, path: Path, env: dict[int, View], dest: View | None) -> View:
        """Generate `e`; it writes into `dest` when given. Returns the view to read it."""
        match e:
            case n.Param():
                v = env[e.id]
            case n.Literal(value, t):
                v = ConstV(value, t)
            case FunCall(f, args) if path in self.alloc.inline:
                return ExprV(self.inline_call(e, path, env), e.type)
            case FunCall(f, args) if concrete(e):
                argv = [Arg(a.type, a, path + (k + 1,)) for k, a in enumerate(args)]
                return self.apply(f, path + (0,), argv, e.type, env, dest, e, path)
            case FunCall():
                v = self.view_of(e, env)
            case _:
                raise UnsupportedError(f"cannot generate code for {e!r}", node=e)
        if dest is not None:
            self.copy(v, dest, e.type, "value " + _short(e))
            return dest
        return v

    def arg(self, a: Arg, env: dict[int, View], dest: View | None = None) -> View:
        if a.view is not None:
            if dest is not None:
                self.copy(a.view, dest, a.type, "argument")
                return dest
            return a.view
        assert a.expr is not None and a.path is not None
        return self.expr(a.expr, a.path, env, dest)

    def view_of(self, e: Expr, env: dict[int, View]) -> View:
        """The view of an expression that computes nothing (layout functions of parameters)."""
        try:
            return expr_view(e, env)
        except UnsupportedError:
            raise UnsupportedError(f"{_short(e)} computes nothing the code generator can read", node=e) from None

    def inline_call(self, e: FunCall, path: Path, env: dict[int, View]) -> CExpr:
        f = e.f.f if is_address(e.f) else e.f  # to_private(uf) (lift.allocation's inlinable calls)
        args: list[CExpr] = []
        for k, a in enumerate(e.args):  # `uf_arg`, written out: one Python frame per nested call
            at_k = path + (k + 1,)
            if at_k in self.alloc.inline:
                c = self.inline_call(cast(FunCall, a), at_k, env)
            else:
                c = self.read(self.arg(Arg(a.type, a, at_k), env))
            args.append(self.shallow(c, a.type))
        return CCall(self.funs(f), tuple(args))

    def shallow(self, c: CExpr, t: Type) -> CExpr:
        """`c`, or a private variable declared with it when its calls nest `CALL_DEPTH` deep
        (hundreds of fused maps: OpenCL C compilers refuse 256 nested brackets)."""
        if call_depth(c) < CALL_DEPTH or not isinstance(t, ScalarType | VectorType | TupleType):
            return c
        name = self.fresh("deep")
        self.block.add(Decl(c_type(t), name, c, comment="a deep nest of calls, cut"))
        return CVar(name)

    def uf_arg(self, a: Arg, env: dict[int, View]) -> CExpr:
        if a.path is not None and a.path in self.alloc.inline:
            assert isinstance(a.expr, FunCall)
            return self.inline_call(a.expr, a.path, env)
        return self.read(self.arg(a, env))

    # --------------------------------------------------------------- functions

    def apply(self, f: FunDecl, fpath: Path, args: list[Arg], out: Type, env: dict[int, View],
              dest: View | None, node: Any, key: Path) -> View:
        """Generate `f` applied to `args`, writing into `dest` (or the memory of its own): the
        `emit` handler of `f`'s family in `lift.allocation.KERNEL_RULES` (the memory pass takes the
        same case, `Allocator.apply`), then the barriers placed after it."""
        own = self.alloc.buffers.get(key)
        app = Application(f, fpath, args, out, env, dest, node, key, own)
        result = KERNEL_RULES[kernel_case(f, node)].emit(self, app)
        self.barrier_after(key)
        return result

    # The handlers of the families (`KernelCase.emit`), one signature: the `Application` to generate.

    def on_lambda(self, app: Application) -> View:
        f = app.f
        views = [self.arg(a, app.env) for a in app.args]
        lam = lambda_of(f)
        assert lam is not None
        return self.expr(lam.body, body_path(f, app.fpath),
                         {**app.env, **{p.id: v for p, v in zip(lam.params, views)}}, app.dest)

    def on_userfun(self, app: Application) -> View:
        target = self.declare(app.own) if app.own is not None else app.dest
        assert target is not None, f"no destination for {app.f}"
        values = tuple(self.uf_arg(a, app.env) for a in app.args)
        self.write(target, CCall(self.funs(app.f), values), app.out, _describe(app.f))
        return target

    def on_layout(self, app: Application) -> View:
        return self.layout(app.f, app.args, app.env, app.dest)  # map(transpose), map(join): a view

    def on_reduce(self, app: Application) -> View:
        f = cast(n.ReduceSeq, app.f)  # the "reduce" case (kernel_case)
        return self.reduce(f.f, f, app.fpath, app.args, app.env, app.dest, app.key)

    def on_address(self, app: Application) -> View:
        f, fpath, own, dest = app.f, app.fpath, app.own, app.dest
        assert is_address(f)
        target = self.declare(own) if own is not None else dest
        result = self.apply(f.f, fpath + (0,), app.args, app.out, app.env, target, app.node, fpath + (0,))
        if own is not None and dest is not None:
            self.copy(result, dest, app.out, f"{_describe(f)} into the destination")
            return dest
        return result

    def on_let(self, app: Application) -> View:
        f = cast(n.Let, app.f)  # the "let" case (kernel_case)
        return self.apply(f.f, app.fpath + (0,), app.args, app.out, app.env, app.dest, app.node, app.key)

    def on_iterate(self, app: Application) -> View:
        f = cast(n.Iterate, app.f)  # the "iterate" case (kernel_case)
        return iterate(self, f, app.fpath, app.args, app.out, app.env, app.dest, app.own)

    def on_atomic(self, app: Application) -> View:
        f = cast(n.ReduceAtomic, app.f)  # the "atomic" case (kernel_case)
        return atomic(self, f, app.fpath, app.args, app.env, app.dest)

    def on_map(self, app: Application) -> View:
        f, fpath, out, env = app.f, app.fpath, app.out, app.env
        assert is_loop(f)
        (a,) = app.args
        xs = self.arg(a, env)
        target = self.declare(app.own) if app.own is not None else app.dest
        assert target is not None and isinstance(out, ArrayType) and isinstance(a.type, ArrayType)
        loop = self.make_loop(f, LOOP_KINDS[type(f)], out.size, fpath)
        i = loop.var
        el = Arg(a.type.elem, view=Access(xs, i))
        g = f.f

        def body() -> None:
            self.apply(g, fpath + (0,), [el], out.elem, env, Access(target, i), g, fpath + (0,))

        u = self.sync.uniform.get(fpath)
        if u is not None:
            self.uniform_body(loop, u, body)
        else:
            self.loop_body(loop, body)
        return target

    def reduce(self, g: FunDecl, f: FunDecl, fpath: Path, args: list[Arg], env: dict[int, View],
               dest: View | None, key: Path) -> View:
        init, xa = args
        xs = self.arg(xa, env)
        if key in self.alloc.accs:
            acc = self.declare(self.alloc.accs[key])
            self.copy(self.arg(init, env), acc, init.type, "initial value")
        else:
            acc = self.arg(init, env)
        assert isinstance(xa.type, ArrayType)
        loop = self.make_loop(f, "seq", xa.type.size, fpath)
        el = Arg(xa.type.elem, view=Access(xs, loop.var))
        self.loop_body(loop, lambda: self.apply(g, fpath + (0,), [Arg(init.type, view=acc), el], init.type,
                                                env, acc, g, fpath + (0,)))
        if dest is not None:
            self.copy(acc, dest, init.type, "reduction result")
            return dest
        return acc

    def scoped(self, note: Comment, fill: Callable[[], None]) -> None:
        """Generate into a nested C block (its declarations stay local to it)."""
        self.block.add(note)
        inner = Block()
        self.block.add(inner)
        outer, self.block = self.block, inner
        try:
            fill()
        finally:
            self.block = outer

    def layout(self, f: FunDecl, args: list[Arg], env: dict[int, View], dest: View | None) -> View:
        types = [a.type for a in args]
        dests = arg_dests(f, dest, types) if dest is not None else None
        if dest is not None and dests is not None:
            if isinstance(f, n.MakeTuple) and self.block is self.body and not self.guards \
                    and share_components(self, args, env, dests):
                return dest
            for a, d in zip(args, dests):
                self.arg(a, env, d)
            return dest
        v = apply_view(f, [self.arg(a, env) for a in args], types, env)
        if dest is not None:
            out = _layout_type(f, args)
            self.copy(v, dest, out, f"{f} cannot be written in place")
            return dest
        return v


@dataclass
class _Guarded:
    """A uniform loop being generated: its rounded-up loop `outer` (trip variable `trip`) and the
    guarded parts of the map's body (`loop`: the map's own loop, whose variable the body uses)."""

    loop: For
    outer: For
    trip: Var
    parts: list[For] = field(default_factory=list)

    def resume(self, kg: KernelGen) -> None:
        """Open the next guarded part: `{ int l = l_u; if (l < count) { ... } }`."""
        part = For(self.loop.var, CVar(self.trip.name), self.loop.bound, self.loop.step, Block(),
                   f"{self.loop.comment.split('(')[0]} if {self.loop.var.name} < {to_c(self.loop.bound)}",
                   self.loop.kind, once=True, guard=True)
        self.parts.append(part)
        self.outer.body.add(part)
        kg.block = part.body

    def split(self, kg: KernelGen, key: Path) -> None:
        """Close the current part for a barrier after the node at `key`; the barrier goes between parts."""
        if not self.parts or kg.block is not self.parts[-1].body:
            raise NotSynchronisableError(
                f"the barrier after the node at {key} cannot split the body of the uniform "
                f"{self.loop.comment}: it is not directly in the body",
                hint="choose sizes that make the loop's trip count a multiple of the work-group size")
        kg.block = self.outer.body

    def finish(self) -> None:
        """Drop empty parts; declare the parts' private variables before the parts."""
        empty = {id(part) for part in self.parts if not part.body.stmts}
        stmts = [s for s in self.outer.body.stmts if id(s) not in empty]
        decls: list[Decl] = []
        for part in self.parts:
            kept: list[CStmt] = []
            for s in part.body.stmts:
                if isinstance(s, Decl):
                    decls.append(Decl(s.ctype, s.name, None, s.space, s.size, s.comment))
                    if s.init is not None:
                        kept.append(Assign(CVar(s.name), s.init))
                else:
                    kept.append(s)
            part.body.stmts = kept
        self.outer.body.stmts = decls + stmts


def _layout_type(f: FunDecl, args: list[Arg]) -> Type:
    return infer(f, [a.type for a in args], f)


CALL_DEPTH = 64  # user-function calls nested in one C expression before a temporary cuts the nest


def call_depth(c: CExpr) -> int:
    """How deep the calls in `c` nest (a chain of fused maps nests one call per map)."""
    depth, level = 0, [c]
    while level:
        depth += 1
        level = [a for x in level if isinstance(x, CCall) for a in x.args]
    return depth - 1


def _describe(f: Any) -> str:
    """The IR node a loop or call comes from, in LIFT notation (labels included)."""
    text = str(f)
    return text if len(text) <= 70 else text[:67] + "..."


def _short(e: Any) -> str:
    text = str(e)
    return text if len(text) <= 50 else text[:47] + "..."


# The one table of the kernel traversal's cases: for every family of the registry's kernel column
# (`lift.allocation.kernel_case`), its memory allocation and its code generation. Adding a pattern's
# kernel case is an entry here (and its family in lift.ir.registry).
KERNEL_TABLE: tuple[KernelCase, ...] = (
    KernelCase("lambda", Allocator.on_lambda, KernelGen.on_lambda),
    KernelCase("userfun", Allocator.on_userfun, KernelGen.on_userfun),
    KernelCase("layout", Allocator.on_layout, KernelGen.on_layout),
    KernelCase("map", Allocator.on_map, KernelGen.on_map),
    KernelCase("reduce", Allocator.on_reduce, KernelGen.on_reduce),
    KernelCase("atomic", Allocator.on_atomic, KernelGen.on_atomic),
    KernelCase("address", Allocator.on_address, KernelGen.on_address),
    KernelCase("let", Allocator.on_let, KernelGen.on_let),
    KernelCase("iterate", Allocator.on_iterate, KernelGen.on_iterate),
)
install_kernel_cases(KERNEL_TABLE)

__all__ = ["KernelGen", "KernelState", "Application", "Arg", "KERNEL_TABLE"]
