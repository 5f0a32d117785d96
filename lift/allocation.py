"""Memory allocation (thesis 2.3.2.3, 4.4): address spaces and sizes of intermediate buffers.

Code generation writes every value into a *destination*: the kernel's output, a slice of an
enclosing map's destination, or memory of its own. This pass decides which expressions get
memory of their own (intermediates: arguments of a computation, reduce accumulators), in
which address space, and how big it is:

* the space is the nearest `to_global` / `to_local` / `to_private` on the value's result
  spine; without one, a scalar, vector or tuple is private and an array is global, except the
  result of a sequential map of a constant size of at most `PRIVATE_SCALARS` scalars, which one
  work-item makes and reads (a nested reduction's chunk partials): private (`small_private`);
* the size is the value's size times the trip counts of the enclosing loops that may run
  at once while the buffer is live, the multiplier rules of 4.4.2: global memory is
  multiplied by every enclosing loop, local memory by the enclosing `map_lcl` and sequential
  loops only when there is an enclosing `map_lcl`, private memory by nothing (it is reused
  by every iteration and work-item);
* a reduction accumulates in private memory (registers) when its accumulator has a constant
  size, a scalar, vector, tuple or small array (register blocking), unless its `init` says
  otherwise or a parallel map inside updates it;
* `iterate(k, g)` gets two ping-pong buffers (`Allocated.pingpong`) for the results of
  iterations 0 to k-2, in the space `g`'s result names (else global), each as big as the
  largest result it holds; buffers inside `g` are sized for its largest input;
* a user-function call that is the argument of another user-function call is inlined as a
  C expression and needs no memory; a map of layout patterns (`map(transpose)`) is a view
  and needs none either.

Stage `Mapped -> Allocated`. Postcondition (`verify_allocated`): every computed expression
either writes into its destination or has a `Buffer` (or, for a reduction with a constant
initial value, an accumulator), and every private buffer has a constant size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from lift.arith import Arith, Cst, Var, max_, prove_le
from lift.errors import LiftValueError, UnsupportedError
from lift.ir import nodes as n
from lift.ir.layoutfun import invertible, is_layout_map
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda
from lift.ir.paths import Path, lambda_of, walk
from lift.ir.registry import REGISTRY, has, is_address, is_loop, is_parallel, is_wrapper, kernel_table
from lift.rules.terms import eta
from lift.typecheck import subst_type, type_of, unify
from lift.types import ArrayType, ScalarType, Type, memory_names, scalar_count
from lift.userfun.facts import operator

LOOP_KINDS = {n.MapGlb: "glb", n.MapWrg: "wrg", n.MapLcl: "lcl", n.MapSeq: "seq", n.ReduceSeq: "seq"}
SPACES = {n.ToGlobal: "global", n.ToLocal: "local", n.ToPrivate: "private"}


@dataclass(frozen=True, slots=True)
class Loop:
    """A loop of the generated code: the node at `path`, `kind` glb/wrg/lcl/seq, `count` trips."""

    path: Path
    kind: str
    dim: int
    count: Arith


@dataclass(frozen=True, slots=True)
class Buffer:
    """Memory of its own for the value at `path` (one `type` per trip of each of `loops`)."""

    path: Path
    name: str
    space: str
    type: Type
    loops: tuple[Loop, ...] = ()
    role: str = "temp"  # "temp" or "acc"
    scope: tuple[Loop, ...] = field(default=(), compare=False)  # every enclosing loop

    @property
    def full_type(self) -> Type:
        """The buffer's type: one value per combination of the multiplied loops."""
        t = self.type
        for loop in reversed(self.loops):
            t = ArrayType(t, loop.count)
        return t

    @property
    def count(self) -> Arith:
        """Storage size in scalars."""
        return scalar_count(self.full_type)


@dataclass(frozen=True)
class Allocated:
    """Stage record: the intermediate buffers of one kernel body, by path."""

    body: Expr | FunDecl  # the kernel body, or the function `allocate_fun` allocated for
    buffers: Mapping[Path, Buffer]
    accs: Mapping[Path, Buffer]  # reduce accumulators, by the reduce call's path
    inline: frozenset[Path]
    spaces: Mapping[Path, str]  # the space each user-function call writes
    loops: Mapping[Path, Loop] = field(default_factory=dict)
    pingpong: Mapping[Path, tuple[Buffer, ...]] = field(default_factory=dict)  # by `iterate`'s path


def allocate(body: Expr, path: Path = (), *, dest_space: str | None = "global",
             names: Callable[[str], str] | None = None) -> Allocated:
    """Allocate the intermediates of a kernel body at `path` whose result goes to `dest_space`.

    `names` makes a fresh C name from a prefix (default: tmp0, tmp1, ...)."""
    a = Allocator(names or _counter())
    a.expr(body, path, (), dest_space)
    return Allocated(body, dict(a.buffers), dict(a.accs), frozenset(a.inline), dict(a.spaces), dict(a.loops),
                     dict(a.pingpong))


def allocate_fun(f: FunDecl, fpath: Path, arity: int, out: Type, *, dest_space: str = "global",
                 names: Callable[[str], str] | None = None) -> Allocated:
    """Allocate for function `f` (at `fpath`) applied to `arity` arguments that are already in memory."""
    a = Allocator(names or _counter())
    a.apply(f, fpath, [(None, None)] * arity, out, (), dest_space, f, fpath)
    body = f.body if isinstance(f, Lambda) else f
    return Allocated(body, dict(a.buffers), dict(a.accs), frozenset(a.inline), dict(a.spaces),
                     dict(a.loops), dict(a.pingpong))


def _counter() -> Callable[[str], str]:
    count = iter(range(1 << 30))
    return lambda prefix: f"{prefix}{next(count)}"


def multiplied(loops: tuple[Loop, ...], space: str) -> tuple[Loop, ...]:
    """The enclosing loops that multiply a buffer in `space` (thesis 4.4.2)."""
    if space == "global":
        return loops
    if space == "local" and any(lp.kind == "lcl" for lp in loops):
        return tuple(lp for lp in loops if lp.kind in ("lcl", "seq"))
    return ()


def concrete(e: FunDecl | Expr) -> bool:
    """Whether `e` runs code (contains a user function), as opposed to a pure layout view."""
    return any(isinstance(x, n.UserFun) for _, x in walk(e))


def result_space(e: Expr) -> str | None:
    """The space named by the nearest address-space wrapper on the result spine of `e`."""
    match e:
        case FunCall(w, _) if is_address(w):
            return SPACES[type(w)]
        case FunCall(n.ReduceSeq(), (init, _)):
            return result_space(init) if concrete(init) else "private"
        case FunCall(f, args) if has("in_args", f):
            spaces = [result_space(a) for a in args if concrete(a)]
            return spaces[0] if spaces else None
        case FunCall(f, _):
            return fun_space(f)
    return None


def fun_space(f: FunDecl) -> str | None:
    """The space the results of function `f` are written to, if a wrapper names it."""
    if is_address(f):
        return SPACES[type(f)]
    match f:
        case Lambda(_, body):
            return result_space(body)
        case n.AbstractMap(f=g) | n.Let(f=g):
            return fun_space(g)
        case _ if is_wrapper(f):  # ocl_kernel (the address spaces name their own)
            return fun_space(f.f)
    return None


def default_space(e: Expr) -> str:
    """The space of an intermediate value without a wrapper: arrays global, else private."""
    return result_space(e) or ("global" if isinstance(e.type, ArrayType) else "private")


PRIVATE_ACC_SCALARS = 16384  # the most scalars of an accumulator kept in private memory by default


def acc_space(t: Type, f: FunDecl) -> str:
    """Where a reduction without an address-space wrapper on its `init` accumulates: private
    memory (registers) when the accumulator has a constant size of at most `PRIVATE_ACC_SCALARS`
    scalars and `f` updates it within one work-item, else global memory. A CPU runtime puts a
    private array on its worker thread's stack, once per work-item of a group it runs at a time:
    PoCL 3.0 ran `col_fold`'s accumulator of a whole row at 65536 floats (256 KiB) and crashed
    (SIGSEGV) at 262144 (1 MiB); the limit, 64 KiB of floats, keeps a factor of 4 below what ran.
    In global memory each work-item's accumulator is a slice of its own, cached like a private
    one (ATAX 2048^2 folded, 8 KiB a work-item: 542 us global, 548 us private, interleaved)."""
    parallel = any(is_parallel(x) for _, x in walk(f))
    count = scalar_count(t)
    small = isinstance(count, Cst) and count.value <= PRIVATE_ACC_SCALARS
    return "private" if small and not parallel else "global"


PRIVATE_SCALARS = 64  # the most scalars of a sequential map's result kept in private memory by default


def small_private(t: Type, f: FunDecl) -> bool:
    """Whether a sequential map's result of type `t`, with no address-space wrapper, goes to
    private memory rather than global: its size is a constant of at most `PRIVATE_SCALARS`
    scalars and no parallel loop inside the map's function `f` writes it. Such a result is made
    and read by one work-item (a nested reduction's chunk partials): in global memory each
    work-item wrote and read back its own slice (GEMV's 8 partials per row, `tmp[8*gl + i]`)."""
    return acc_space(t, f) == "private" and cast(Cst, scalar_count(t)).value <= PRIVATE_SCALARS


def verify_allocated(alloc: Allocated) -> None:
    """The postcondition of `allocate`: every buffer has a known space and a unique name, private
    buffers have constant sizes and are multiplied by no loop, and reduction accumulators live
    in private or global memory; raise listing every violation."""
    bufs = [*alloc.buffers.values(), *alloc.accs.values()]
    names = [b.name for b in bufs]
    problems = [f"{b.name} is in unknown space {b.space}" for b in bufs if b.space not in SPACES.values()]
    problems += [f"{x} names two buffers" for x in sorted({x for x in names if names.count(x) > 1})]
    for b in bufs:
        if b.space == "private" and (not isinstance(b.count, Cst) or b.loops):
            problems.append(f"private {b.name} has size {b.count} over loops {[lp.kind for lp in b.loops]}")
    problems += [f"accumulator {b.name} is in {b.space} memory" for b in alloc.accs.values()
                 if b.space not in ("private", "global")]
    problems += [f"{p} is both inlined and given memory" for p in alloc.inline if p in alloc.buffers]
    if problems:
        raise LiftValueError("verify_allocated: " + "; ".join(problems))



def iterate_var(f: n.Iterate):
    """The length variable of `iterate`'s function (its parameter's outer length), if any."""
    g = f.f
    if isinstance(g, Lambda) and len(g.params) == 1 and isinstance(g.params[0].ptype, ArrayType):
        size = g.params[0].ptype.size
        return size if isinstance(size, Var) else None
    return None


def iterate_types(f: n.Iterate, t: Type) -> list[Type]:
    """The types of `iterate(k, g)`'s values: the argument's `t`, then each iteration's result."""
    out = [t]
    g = f.f
    for _ in range(f.n):
        if isinstance(g, Lambda) and len(g.params) == 1:
            binding = unify(g.params[0].ptype, out[-1]) or {}
            out.append(subst_type(type_of(g.body), binding))
        else:
            out.append(t)
    return out


def largest(types: list[Type]) -> Type:
    """The type among `types` (arrays differing in their outer length) with the largest length."""
    best = types[0]
    for t in types[1:]:
        if not (isinstance(t, ArrayType) and isinstance(best, ArrayType)):
            continue
        if prove_le(best.size, t.size):
            best = t
        elif not prove_le(t.size, best.size):
            best = ArrayType(best.elem, max_(best.size, t.size))
    return best


def check_iterate(f: n.Iterate, node: n.Node) -> None:
    """Inside a kernel, `iterate`'s function must run within one work-item (no parallel map)."""
    par = [x for _, x in walk(f.f) if is_parallel(x)]
    if par:
        kind = type(par[0]).__name__
        raise UnsupportedError(
            f"iterate inside a kernel with a parallel map ({kind}) in its function is not supported: "
            "each iteration would need a barrier across work-items between iterations", node=node,
            hint="use map_seq inside iterate, or put a map_glb iterate at the top level of the program "
                 "(one kernel launch per iteration)")




def check_atomic(f: n.ReduceAtomic, init: Expr, x: Expr, loops: tuple, dest: str | None, node: n.Node) -> None:
    """`UnsupportedError` unless `reduce_atomic(g, init) << x` can be generated: `g` a built-in
    commutative operator on a 32-bit scalar, `init` a literal or an input of the kernel (the
    result is pre-filled with it by a launch before the kernel), `x` a map's result, and the result the kernel's own (no
    enclosing loop: it is complete only when the kernel ends)."""
    g = f.f
    why = None
    t = init.type
    op = operator(eta(g))
    if op is None or not op.commutative:  # associative and commutative: any combining order
        why = f"{g} is not a commutative associative operator (an addition, product, max or min, or vouched for)"
    elif not (isinstance(t, ScalarType) and t.name in ("Float", "Int")):
        why = f"atomics combine 32-bit Float or Int values, not {t}"
    elif concrete(init):
        why = "its initial value must be a literal or an earlier kernel's result (the result is pre-filled with it)"
    elif not (isinstance(x, FunCall) and is_loop(x.f)
              and len(x.args) == 1):
        why = f"its array must be computed by a lowered map, got {str(x)[:60]}"
    elif loops or dest != "global":
        why = "its result must be the kernel's result in global memory (it is complete only when the kernel ends)"
    if why is not None:
        raise UnsupportedError(f"reduce_atomic cannot be generated: {why}", node=node)


def _inlinable(a: Expr) -> bool:
    """A call the C of a user-function argument nests: a user function's (a scalar or a vectorised
    one: the kernel traversal's "userfun" case), also in private memory (`to_private(uf)`)."""
    return isinstance(a, FunCall) and (
        _emits_userfun(a.f) or (is_address(a.f) and fun_space(a.f) == "private" and isinstance(a.f.f, n.UserFun)))


def _emits_userfun(f: FunDecl) -> bool:
    entry = REGISTRY.get(type(f))
    return entry is not None and entry.emit == "userfun"


# ------------------------------------------------------------ the kernel traversal

# What the kernel traversal does with each function node, and what it rejects (an
# `UnsupportedError` naming the node, with the reason): the `kernel` column of the per-pattern
# registry (lift.ir.registry), a family name per node class. Memory allocation
# (`Allocator.apply`) and kernel generation (`lift.codegen.kernel.KernelGen.apply`) both take
# `f`'s family from `kernel_case` and call that family's handler in `KERNEL_RULES`, and descend
# with `body_path`, so they cannot take different cases or paths.
KERNEL_CASES, KERNEL_REFUSED = kernel_table()

Site = tuple[Expr | None, Path | None]  # an argument and its path (None: an element of an enclosing loop)


@dataclass(frozen=True, slots=True)
class KernelCase:
    """One family of the kernel traversal and what its two walks do with it: `allocate` (an
    `Allocator` handler: memory for its intermediates) and `emit` (a `KernelGen` handler: its C,
    lift.codegen.kernel, given the `Application` to generate). The families' cases are one table,
    `lift.codegen.kernel.KERNEL_TABLE` (where both walks are visible), so adding a pattern's
    kernel case is one entry there."""

    family: str
    allocate: Callable[..., None]
    emit: Callable[..., Any]


KERNEL_RULES: dict[str, KernelCase] = {}  # family -> its handlers (`install_kernel_cases`)


def install_kernel_cases(cases: tuple[KernelCase, ...]) -> None:
    """Hang the handlers of `cases` on their families (lift.codegen.kernel does, once, when it is
    imported); every family of the registry's kernel column needs exactly one."""
    table = {c.family: c for c in cases}
    families = set(KERNEL_CASES.values())
    if len(table) != len(cases) or set(table) != families:
        raise LiftValueError(f"kernel cases for {sorted(table)}, the registry's families are {sorted(families)}")
    KERNEL_RULES.clear()
    KERNEL_RULES.update(table)


def kernel_case(f: FunDecl, node: n.Node | None = None) -> str:
    """The case of the kernel traversal that handles `f`: "lambda" (a lambda or a let of one),
    "userfun", "layout" (layout patterns and maps of them: views), "map", "reduce", "address"
    (to_global/local/private), "let", "iterate"; an `UnsupportedError` for anything else."""
    if lambda_of(f) is not None:
        return "lambda"
    if is_layout_map(f):
        return "layout"
    entry = REGISTRY.get(type(f))  # live: a family defined after this module's tables counts too
    if entry is not None and entry.emit is not None and isinstance(f, FunDecl):
        return entry.emit
    why = ((entry.refusal("kernel") if entry is not None and isinstance(f, FunDecl) else None)
           or f"code generation does not support {type(f).__name__} yet")
    raise UnsupportedError(why, node=node if node is not None else f)


def lambda_body(f: FunDecl) -> Expr:
    """The body of a "lambda" case: a lambda's, or the lambda's of a let."""
    lam = lambda_of(f)
    assert lam is not None, f"{f} is not a lambda case"
    return lam.body


def body_path(f: FunDecl, fpath: Path) -> Path:
    """The path of a "lambda" case's body, from the function's path."""
    return fpath + (0,) if isinstance(f, Lambda) else fpath + (0, 0)


class Allocator:
    """Memory allocation's top-down walk of a kernel (its cases: `kernel_case`, handled by the
    `on_<family>` methods through `KERNEL_RULES`); the code generator takes the same cases."""

    def __init__(self, names: Callable[[str], str]) -> None:
        self.names = names
        self.buffers: dict[Path, Buffer] = {}
        self.accs: dict[Path, Buffer] = {}
        self.inline: set[Path] = set()
        self.spaces: dict[Path, str] = {}
        self.loops: dict[Path, Loop] = {}
        self.pingpong: dict[Path, tuple[Buffer, ...]] = {}
        self.bounds: dict[str, Arith] = {}  # iterate's length variables -> their largest value

    def new(self, path: Path, t: Type, space: str, loops: tuple[Loop, ...], node: n.Node,
            role: str = "temp") -> Buffer:
        name = self.names("acc" if role == "acc" else "tmp")
        if self.bounds:  # inside iterate: the largest size of each iteration's length
            t = subst_type(t, self.bounds)
        buf = Buffer(path, name, space, t, multiplied(loops, space), role, loops)
        reserve = getattr(self.names, "reserve", None)
        if reserve is not None:  # a tuple array's components (`tmp_0`, `tmp_1`): no temporary's names
            reserve(memory_names(name, buf.full_type, space))
        if space == "private" and not isinstance(buf.count, Cst):
            raise UnsupportedError(f"private memory for {t} needs a constant size, got {buf.count}",
                                   node=node, hint="use to_local or to_global for arrays of symbolic size")
        return buf

    def expr(self, e: Expr, path: Path, loops: tuple[Loop, ...], dest: str | None) -> None:
        """Allocate for `e`, which writes into a destination in space `dest` (None: none)."""
        if not isinstance(e, FunCall) or not concrete(e):
            return  # a parameter, a literal or a view: read in place (copied if there is a dest)
        args: list[Site] = [(a, path + (k + 1,)) for k, a in enumerate(e.args)]
        self.apply(e.f, path + (0,), args, e.type, loops, dest, e, path)

    def apply(self, f: FunDecl, fpath: Path, args: list[Site], out: Type, loops: tuple[Loop, ...],
              dest: str | None, node: n.Node, key: Path) -> None:
        """Allocate for `f` applied to `args` (None: an element of an enclosing loop): the
        `allocate` handler of `f`'s family in `KERNEL_RULES`."""
        KERNEL_RULES[kernel_case(f, node)].allocate(self, f, fpath, args, out, loops, dest, node, key)

    # The handlers of the families (`KernelCase.allocate`), one signature:
    # (f, its path, args, result type, enclosing loops, destination space, node, key path).

    def on_lambda(self, f: FunDecl, fpath: Path, args: list[Site], out: Type, loops: tuple[Loop, ...],
                  dest: str | None, node: n.Node, key: Path) -> None:
        for a, p in args:
            self.arg(a, p, loops)
        self.expr(lambda_body(f), body_path(f, fpath), loops, dest)

    def on_userfun(self, f: FunDecl, fpath: Path, args: list[Site], out: Type, loops: tuple[Loop, ...],
                   dest: str | None, node: n.Node, key: Path) -> None:
        for a, p in args:
            self.uf_arg(a, p, loops)
        self.spaces[key] = dest or self.own(key, out, None, loops, node)

    def on_layout(self, f: FunDecl, fpath: Path, args: list[Site], out: Type, loops: tuple[Loop, ...],
                  dest: str | None, node: n.Node, key: Path) -> None:
        """A layout function (a view: no loop, no memory): arguments written through its
        destination when it is invertible."""
        through = dest if invertible(f) else None
        for a, p in args:
            if a is not None and p is not None:
                self.expr(a, p, loops, through)

    def on_address(self, f: FunDecl, fpath: Path, args: list[Site], out: Type, loops: tuple[Loop, ...],
                   dest: str | None, node: n.Node, key: Path) -> None:
        assert is_address(f)
        space = SPACES[type(f)]
        if dest != space:
            self.own(key, out, space, loops, node)
        self.apply(f.f, fpath + (0,), args, out, loops, space, node, fpath + (0,))

    def on_let(self, f: n.Let, fpath: Path, args: list[Site], out: Type, loops: tuple[Loop, ...],
               dest: str | None, node: n.Node, key: Path) -> None:
        self.apply(f.f, fpath + (0,), args, out, loops, dest, node, key)

    def own(self, key: Path, t: Type, space: str | None, loops: tuple[Loop, ...], node: n.Node) -> str:
        """Give the value at `key` memory of its own; returns its space."""
        if space is None:
            space = default_space(node) if isinstance(node, FunCall) else None
        if space is None:
            space = "global" if isinstance(t, ArrayType) else "private"
        self.buffers[key] = self.new(key, t, space, loops, node)
        return space

    def arg(self, a: Expr | None, p: Path | None, loops: tuple[Loop, ...]) -> None:
        if a is not None and p is not None:
            self.expr(a, p, loops, None)

    def uf_arg(self, a: Expr | None, p: Path | None, loops: tuple[Loop, ...]) -> None:
        """A user-function argument: an inlined call, or a value with memory of its own."""
        if a is None or p is None:
            return
        if not _inlinable(a):
            self.expr(a, p, loops, None)
            return
        self.inline.add(p)
        self.spaces[p] = "private"
        assert isinstance(a, FunCall)  # _inlinable
        for k, b in enumerate(a.args):
            self.uf_arg(b, p + (k + 1,), loops)

    def on_map(self, f: FunDecl, fpath: Path, args: list[Site], out: Type, loops: tuple[Loop, ...],
               dest: str | None, node: n.Node, key: Path) -> None:
        assert is_loop(f)
        (x, xp), = args
        self.arg(x, xp, loops)
        kind = LOOP_KINDS[type(f)]
        if dest is None:
            space = default_space(node) if isinstance(node, FunCall) else None
            private = any(is_address(x) and SPACES[type(x)] == "private" for _, x in walk(f))
            if kind != "seq" and space == "private" and not private:
                space = "global"  # a parallel map of reductions: private accumulators, a shared result
            elif (kind == "seq" and space == "global" and isinstance(node, FunCall) and result_space(node) is None
                  and small_private(out, f)):
                space = "private"  # a few values one work-item makes and reads: registers, not a round trip
            dest = self.own(key, out, space, loops, node)
        if kind != "seq" and (dest == "private" or (dest == "local" and kind != "lcl")):
            raise UnsupportedError(f"{type(f).__name__} cannot write {dest} memory: other work-items "
                                   "would not see the result", node=f)
        assert isinstance(out, ArrayType)
        loop = Loop(fpath, kind, getattr(f, "dim", 0), out.size)
        self.loops[fpath] = loop
        self.apply(f.f, fpath + (0,), [(None, None)], out.elem, loops + (loop,), dest, f, fpath + (0,))

    def on_reduce(self, f: n.ReduceSeq, fpath: Path, args: list[Site], out: Type, loops: tuple[Loop, ...],
                  dest: str | None, node: n.Node, key: Path) -> None:
        g = f.f
        (init, ip), (x, xp) = args
        assert init is not None and ip is not None and x is not None and isinstance(x.type, ArrayType)
        self.arg(x, xp, loops)
        if concrete(init):
            self.expr(init, ip, loops, None)
        if ip in self.buffers:
            space = self.buffers[ip].space
        else:
            space = acc_space(init.type, g)
            self.accs[key] = self.new(key, init.type, space, loops, node, role="acc")
        loop = Loop(fpath, "seq", 0, x.type.size)
        self.loops[fpath] = loop
        none = (None, None)
        self.apply(g, fpath + (0,), [none, none], init.type, loops + (loop,), space, g, fpath + (0,))

    def on_atomic(self, f: n.ReduceAtomic, fpath: Path, args: list[Site], out: Type, loops: tuple[Loop, ...],
                  dest: str | None, node: n.Node, key: Path) -> None:
        """`reduce_atomic(f, z) << map(g) << xs` (`lift.codegen.atomic`): the map's loop, each element
        computed into private memory of its own (at the map call's path) and combined into the
        destination, which must be the kernel's global result."""
        (init, _), (x, xp) = args
        assert init is not None and x is not None and xp is not None
        check_atomic(f, init, x, loops, dest, node)
        assert isinstance(x, FunCall) and isinstance(x.type, ArrayType)  # a map's result (check_atomic)
        m, (xs,) = x.f, x.args
        assert is_loop(m)
        self.arg(xs, xp + (1,), loops)
        self.buffers[xp] = self.new(xp, x.type.elem, "private", loops, node)
        loop = Loop(xp + (0,), LOOP_KINDS[type(m)], getattr(m, "dim", 0), x.type.size)
        self.loops[xp + (0,)] = loop
        self.apply(m.f, xp + (0, 0), [(None, None)], x.type.elem, loops + (loop,), "private", m, xp + (0, 0))

    def on_iterate(self, f: n.Iterate, fpath: Path, args: list[Site], out: Type, loops: tuple[Loop, ...],
                   dest: str | None, node: n.Node, key: Path) -> None:
        """`iterate(k, g)`: the first iteration reads the argument, the last writes the destination;
        the others ping-pong between two buffers (`Allocated.pingpong`, by the `iterate`'s path),
        each as big as the largest value it holds. Sizes inside `g` are bounded by the largest input."""
        (x, xp), = args
        if x is None:
            raise UnsupportedError("iterate needs a named argument here; write (lambda a: iterate(k, g) << a)",
                                   node=node)
        self.arg(x, xp, loops)
        check_iterate(f, node)
        types = iterate_types(f, x.type)
        if dest is None:
            dest = self.own(key, out, None, loops, node)
        if f.n == 0:
            return  # a copy of the argument
        space = fun_space(f.f) or ("global" if isinstance(out, ArrayType) else "private")
        held = (types[1:-1:2], types[2:-1:2])  # A holds the results of iterations 0, 2, ...; B of 1, 3, ...
        self.pingpong[fpath] = tuple(self.new(fpath, largest(h), space, loops, node) for h in held if h)
        var = iterate_var(f)
        if var is not None:  # the argument is an array of length `var` (iterate_var)
            bound = largest(types[:-1])
            assert isinstance(bound, ArrayType)
            self.bounds[var.name] = bound.size
        self.apply(f.f, fpath + (0,), [(None, None)], out, loops, space if f.n > 1 else dest, f, fpath + (0,))


__all__ = ["iterate_var", "iterate_types", "largest", "check_iterate",
           "Loop", "Buffer", "Allocated", "allocate", "verify_allocated", "multiplied", "concrete", "result_space",
           "acc_space", "default_space", "small_private", "PRIVATE_SCALARS", "PRIVATE_ACC_SCALARS",
           "LOOP_KINDS", "SPACES", "KERNEL_CASES", "KERNEL_REFUSED", "kernel_case",
           "lambda_body", "body_path", "check_atomic", "Allocator", "KernelCase", "KERNEL_RULES",
           "install_kernel_cases", "Site"]
