"""Contextual information for constraint generation (thesis Table 5.3).

`analyse(expr)` walks a program once and returns a `Context`: every *concrete* map (one
whose function applies a user function, i.e. writes memory; layout-only maps such as
`map(transpose)` are views and get no variable), its label, the maps enclosing it, whether
it is perfectly nested in its parent (fusable), the address spaces it reads and writes
(from `to_global`/`to_local`/`to_private`, parameters are global), the free private or
local variables it reads, and the stride of its input between consecutive iterations
(for the vectorisation check). It also lists the map nesting chains of every user-function
application, per kernel, and the local and private buffers with their accesses.

Labels: a map keeps its user label (`map(f, label="A")`); an unlabelled concrete map is
named `m<k>`, k its rank among the concrete maps in pre-order (`lift.ir.paths.walk`).
A label used twice gets `#2`, `#3`, ... on its later occurrences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import cast

from lift.arith import Arith, Cst, prove_eq
from lift.errors import UnsupportedError
from lift.ir import nodes as n
from lift.ir.layoutfun import writes_values
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Node
from lift.ir.paths import Path, at, lambda_of, walk
from lift.ir.registry import MAPS, RewritePoint, case, has, register, table, with_trait
from lift.lower import fused_tuple, kernels
from lift.typecheck import infer, typed
from lift.types import ArrayType, ScalarType, TupleType, Type, scalar_count

Mem = tuple[str, Path]  # (address space, the path of the node that creates the buffer)
Dim = tuple[Arith, Arith | None]  # (length, stride in elements; None: not affine)


@dataclass(frozen=True)
class Val:
    """What the analysis knows of a value: type, memories it lives in, layout."""

    type: Type
    mems: frozenset[Mem] = frozenset()
    dims: tuple[Dim, ...] | None = None
    parts: tuple[Val, ...] | None = None  # components of a tuple (or zipped arrays)
    level: int = 1 << 30  # map-nesting depth where a parameter was bound


@dataclass(frozen=True)
class MapSite:
    """A concrete map occurrence and its contextual facts."""

    label: str
    path: Path
    node: n.AbstractMap
    outer: tuple[str, ...]  # enclosing concrete maps, outermost first
    kernel: int
    perfect: bool  # perfectly nested in outer[-1]: `map(map(f))` or `map(x => map(f) << x)`
    length: Arith
    reads: frozenset[str]
    writes: frozenset[str]
    free: frozenset[str]  # address spaces of free variables its function reads
    stride: Arith | None  # input stride between iterations (elements), None if unknown
    scalar_elems: bool
    in_type: Type
    in_iterate: bool = False  # inside an `iterate` that a map encloses (one launch cannot sync iterations)

    @property
    def parent(self) -> str | None:
        return self.outer[-1] if self.outer else None

    def uses(self, space: str) -> bool:
        """Table 5.3 `usesPrivateMemory` / `usesLocalMemory`."""
        return space in self.reads or space in self.writes or space in self.free


@dataclass(frozen=True)
class Buffer:
    """A local or private buffer: where it is created and the chains of its accesses."""

    space: str
    origin: Path
    elems: Arith  # scalars written per user-function application
    chains: tuple[tuple[str, ...], ...]  # chains of the user-function sites accessing it
    writer_chains: tuple[tuple[str, ...], ...]

    @property
    def owner_chain(self) -> tuple[str, ...]:
        """The maps enclosing every access (their longest common prefix)."""
        pre = list(self.chains[0]) if self.chains else []
        for c in self.chains[1:]:
            k = 0
            while k < min(len(pre), len(c)) and pre[k] == c[k]:
                k += 1
            pre = pre[:k]
        return tuple(pre)


@dataclass(frozen=True)
class Context:
    """Table 5.3 for one program: maps, chains per kernel, buffers."""

    maps: dict[str, MapSite]
    chains: tuple[tuple[int, tuple[str, ...]], ...]  # (kernel, chain) of user-function sites
    buffers: tuple[Buffer, ...]
    kernels: tuple[int, ...]
    stages: tuple[Path, ...] = ()  # top-level computing calls, one kernel each (when no ocl_kernel)
    launches: tuple[tuple[int, ...], ...] = ()  # kernels launched as one (a result tuple's components)

    def launch_of(self, k: int) -> tuple[int, ...]:
        """The kernels launched together with kernel `k` (itself included)."""
        return next((g for g in self.launches if k in g), (k,))

    def nested(self, label: str) -> list[str]:
        """NestedMaps(m): every concrete map inside m."""
        return [m.label for m in self.maps.values() if label in m.outer]

    def kernel_chains(self, k: int) -> list[tuple[str, ...]]:
        """MapNestingChains of kernel k (distinct, in order)."""
        return list(dict.fromkeys(c for kk, c in self.chains if kk == k))


def analyse(expr: Node, *, stages: bool = True) -> Context:
    """The contextual facts of `expr` (typechecked first).

    With `stages` (and no `ocl_kernel` in the program), each computing call at the top level
    of the program is its own kernel, as the back end's staging does: `reduce(add) << map(mult)
    << zip(x, y)` is two kernels, so the map may be parallel while the reduction is not."""
    record = typed(expr)
    concrete = _concrete_maps(expr)
    w = _Walker(expr, _labels(expr, concrete), record.types)
    top = stages and not kernels(expr)
    if isinstance(expr, Lambda):
        w.lam(expr, (), [Val(p.ptype, frozenset({("global", ())}), _fresh_dims(p.ptype), level=0)
                         for p in expr.params], _Ctx(top=top))
    else:
        w.expr(cast(Expr, expr), (), _Ctx(top=top))
    return w.context()


# ----------------------------------------------------------------- labelling


def _has_userfun(node: Node) -> bool:
    """Whether `node` computes: a user function or a constant (`map(row => 1.0)` writes memory too;
    `lift.ir.layoutfun.writes_values`, so no map is left for the back end's default lowering)."""
    return writes_values(node)


def _concrete_maps(expr: Node) -> list[Path]:
    return [p for p, x in walk(expr) if isinstance(x, MAPS) and _has_userfun(x.f)]


def _labels(expr: Node, concrete: list[Path]) -> dict[Path, str]:
    out: dict[Path, str] = {}
    used: dict[str, int] = {}
    for k, p in enumerate(concrete):
        base = at(expr, p).label or f"m{k}"
        used[base] = used.get(base, 0) + 1
        out[p] = base if used[base] == 1 else f"{base}#{used[base]}"
    return out


# ------------------------------------------------------------------ walking


@dataclass(frozen=True)
class _Ctx:
    space: str = "global"
    origin: Path = ()
    chain: tuple[str, ...] = ()
    kernel: int = 0
    env: dict = field(default_factory=dict)
    top: bool = False  # at the top level of the program (staging into kernels)
    in_iterate: bool = False  # inside an `iterate` nested in a concrete map


class _Walker:
    """One pass over the program computing `Val`s and recording sites."""

    def __init__(self, root: Node, labels: dict[Path, str], types: Mapping[Path, Type]) -> None:
        self.root = root
        self.types = types  # the type checker's record (lift.typecheck.Typed.types)
        self.labels = labels
        self.sites: dict[str, MapSite] = {}
        self.chains: list[tuple[int, tuple[str, ...]]] = []
        self.access: dict[Mem, list[tuple[tuple[str, ...], bool, Arith]]] = {}
        self.free: dict[str, set[str]] = {}
        self.kernels = [0]
        self.stages: list[Path] = []
        self.launches: list[tuple[int, ...]] = []

    def context(self) -> Context:
        bufs = []
        for (space, origin), acc in self.access.items():
            if space in ("local", "private"):
                writes = tuple(c for c, w, _ in acc if w)
                elems = next((e for _, w, e in acc if w), Cst(1))
                bufs.append(Buffer(space, origin, elems, tuple(c for c, _, _ in acc), writes))
        maps = {k: replace(s, free=frozenset(self.free.get(k, ()))) for k, s in self.sites.items()}
        return Context(maps, tuple(dict.fromkeys(self.chains)), tuple(bufs), tuple(self.kernels),
                       tuple(self.stages), tuple(self.launches))

    def expr(self, e: Expr, path: Path, ctx: _Ctx) -> Val:
        # the three kinds of expression (the patterns are the functions: `fun`)
        if isinstance(e, FunCall):
            return self.top_call(e, path, ctx) if ctx.top else self.fun(
                e.f, path + (0,), [self.expr(a, path + (i + 1,), ctx) for i, a in enumerate(e.args)], ctx, e)
        if isinstance(e, n.Param):
            v = ctx.env.get(e.id) or Val(e.ptype)
            for m in ctx.chain[v.level:]:
                self.free.setdefault(m, set()).update(s for s, _ in v.mems)
            return v
        if isinstance(e, n.Literal):
            if ctx.chain:  # a map that makes a constant writes it like a user function would
                self.chains.append((ctx.kernel, ctx.chain))
            return Val(self.types[path])
        raise TypeError(f"not an expression: {e!r}")

    def top_call(self, e: FunCall, path: Path, ctx: _Ctx) -> Val:
        """A call at the top level of the program: a computing one is a stage (a kernel)."""
        if fused_tuple(e):
            return self.components(e, path, ctx)
        f, args = e.f, e.args
        whole = has("fuses_array", f)  # one kernel with its array argument (reduce_atomic)
        vals = [self.expr(a, path + (i + 1,), ctx) for i, a in enumerate(args[:1] if whole else args)]
        fctx = ctx
        # a lambda's or a let's (`let(v => body)`) body: its top-level computations are stages of their
        # own, as `lift.lower` stages them (a let-bound value read by a later computation is complete
        # only when its kernel has finished)
        if lambda_of(f) is None:
            fctx = replace(ctx, top=False)
            if _has_userfun(e if whole else f):
                self.stages.append(path)
                self.kernels.append(len(self.kernels))
                fctx = replace(fctx, kernel=self.kernels[-1])
        if whole:  # its initial value may be an earlier kernel's result
            vals.append(self.expr(args[1], path + (2,), fctx))
        return self.fun(f, path + (0,), vals, fctx, e)

    def components(self, e: FunCall, path: Path, ctx: _Ctx) -> Val:
        """A result tuple of independent computations (`lift.lower.fused_tuple`): one stage, one
        launch; each component a kernel of its own for the constraints that hold per kernel
        (a sequential component does not run under the other components' parallel maps,
        `lift.codegen.tasks`), the launch's for the global/work-group exclusivity."""
        self.stages.append(path)
        group = []
        vals = []
        for i, c in enumerate(e.args):
            assert isinstance(c, FunCall)
            cpath = path + (i + 1,)
            args = [self.expr(a, cpath + (j + 1,), ctx) for j, a in enumerate(c.args)]  # producers: stages
            self.kernels.append(len(self.kernels))
            group.append(self.kernels[-1])
            vals.append(self.fun(c.f, cpath + (0,), args, replace(ctx, top=False, kernel=self.kernels[-1]), c))
        self.launches.append(tuple(group))
        return self.fun(e.f, path + (0,), vals, replace(ctx, top=False), e)

    def lam(self, f: Lambda, path: Path, args: list[Val], ctx: _Ctx) -> Val:
        env = dict(ctx.env)
        for p, a in zip(f.params, args):
            env[p.id] = replace(a, level=len(ctx.chain))
        return self.expr(f.body, path + (0,), replace(ctx, env=env))

    def fun(self, f: FunDecl, path: Path, args: list[Val], ctx: _Ctx, call: Node) -> Val:
        """The value of `f` applied to `args`: the case its family registered (lift.ir.registry,
        stage "context")."""
        rule = _CASES.get(type(f)) or case("context", f)
        if rule is None:
            raise UnsupportedError(f"the constraint context has no rule for {type(f).__name__} "
                                   "(see lift.ir.registry)", node=call)
        return rule(self, f, path, args, ctx, call)

    def userfun(self, f: n.UserFun, args: list[Val], ctx: _Ctx) -> Val:
        chain = ctx.chain
        self.chains.append((ctx.kernel, chain))
        out: Mem = (ctx.space, ctx.origin)
        elems = scalar_count(f.out_type)
        for a in args:
            for m in _all_mems(a):
                self.access.setdefault(m, []).append((chain, False, elems))
        self.access.setdefault(out, []).append((chain, True, elems))
        return Val(f.out_type, frozenset({out}), _fresh_dims(f.out_type))

    def map(self, f: n.AbstractMap, path: Path, x: Val, ctx: _Ctx, call: Node) -> Val:
        t = infer(f, [x.type], call)
        label = self.labels.get(path)
        if label is None:  # a layout-only map: a view
            r = self.fun(f.f, path + (0,), [_elem(x)], ctx, call)
            outer = x.dims[0] if x.dims else None
            dims = (outer,) + r.dims if outer is not None and r.dims is not None else None
            return Val(t, r.mems | x.mems, dims)
        inner = replace(ctx, chain=ctx.chain + (label,))
        r = self.fun(f.f, path + (0,), [_elem(x)], inner, call)
        self.sites[label] = MapSite(
            label=label, path=path, node=f, outer=ctx.chain, kernel=ctx.kernel,
            perfect=bool(ctx.chain) and self._perfect(path), length=_length(x.type),
            reads=frozenset(s for s, _ in _all_mems(x)), writes=frozenset(s for s, _ in r.mems),
            free=frozenset(), stride=_stride(x), scalar_elems=_scalar_elems(x.type), in_type=x.type,
            in_iterate=ctx.in_iterate,
        )
        return Val(t, r.mems, _fresh_dims(t))

    def _perfect(self, path: Path) -> bool:
        """`path` is the whole function of the enclosing map (directly or as `x => m << x`)."""
        parent = at(self.root, path[:-1])
        if isinstance(parent, MAPS):
            return True
        if len(path) >= 3 and isinstance(parent, FunCall):
            lam, grand = at(self.root, path[:-2]), at(self.root, path[:-3])
            return (isinstance(lam, Lambda) and isinstance(grand, MAPS) and len(lam.params) == 1
                    and parent.args == (lam.params[0],))
        return False


# ------------------------------------------------------------------- layouts


def _length(t: Type) -> Arith:
    return t.size if isinstance(t, ArrayType) else Cst(1)


def _scalar_elems(t: Type) -> bool:
    return isinstance(t, ArrayType) and isinstance(t.elem, ScalarType)




def _fresh_dims(t: Type) -> tuple[Dim, ...] | None:
    """Row-major (length, stride) pairs of a fresh buffer of type `t`."""
    sizes: list[Arith] = []
    while isinstance(t, ArrayType):
        sizes.append(t.size)
        t = t.elem
    if isinstance(t, TupleType):
        return None
    dims: list[Dim] = []
    stride: Arith = Cst(1)
    for s in reversed(sizes):
        dims.append((s, stride))
        stride = stride * s
    return tuple(reversed(dims))


def _all_mems(v: Val) -> frozenset[Mem]:
    out = set(v.mems)
    for p in v.parts or ():
        out |= _all_mems(p)
    return frozenset(out)


def _stride(x: Val) -> Arith | None:
    """Stride of the outer dimension (all components agree), None if unknown."""
    if x.parts is not None:
        ss = [_stride(p) for p in x.parts]
        return ss[0] if ss and all(s is not None and prove_eq(s, cast(Arith, ss[0])) for s in ss) else None
    return x.dims[0][1] if x.dims else None


def _each(v: Val, t: Type, fn) -> Val:
    """Apply a layout function to the dims of `v` (of every component of a zip, each component
    typed as the layout makes it: `split(m) << zip(a, b)` has components `split(m) << a`, ..)."""
    if v.parts is not None:
        return Val(t, v.mems, None, tuple(_each(p, _component(t, i, p.type), fn) for i, p in enumerate(v.parts)),
                   v.level)
    return Val(t, v.mems, fn(v.dims) if v.dims is not None else None, None, v.level)


def _component(t: Type, i: int, otherwise: Type) -> Type:
    """The type of component `i` of an array of tuples `t` ([..[(T0, T1, ..)]..] -> [..[Ti]..]),
    `otherwise` when `t` holds no tuple."""
    return _tuple_part(t, i) or otherwise


def _tuple_part(t: Type, i: int) -> Type | None:
    if isinstance(t, ArrayType):
        inner = _tuple_part(t.elem, i)
        return None if inner is None else ArrayType(inner, t.size)
    if isinstance(t, TupleType) and i < len(t.elems):
        return t.elems[i]
    return None


def _elem(v: Val) -> Val:
    t = v.type.elem if isinstance(v.type, ArrayType) else v.type
    if v.parts is not None:
        return Val(t, v.mems, None, tuple(_elem(p) for p in v.parts), v.level)
    return Val(t, v.mems, v.dims[1:] if v.dims else None, None, v.level)


def _mul(s: Arith | None, m: Arith) -> Arith | None:
    return None if s is None else s * m


def _is_one(s: Arith | None) -> bool:
    return s is not None and s == Cst(1)


def _join(d: tuple[Dim, ...]) -> tuple[Dim, ...]:
    (a, s1), (b, s2) = d[0], d[1]
    ok = s1 is not None and s2 is not None and prove_eq(s1, b * s2)
    return ((a * b, s2 if ok else None),) + d[2:]


# ------------------------------------------------------------ the cases (lift.ir.registry)

_CASES = table("context")
Vals = list[Val]


@register(Lambda, stage="context")
def _lambda(w: _Walker, f: Lambda, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    return w.lam(f, path, args, ctx)


@register(n.UserFun, stage="context")
def _userfun(w: _Walker, f: n.UserFun, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    return w.userfun(f, args, ctx)


@register(*n.MAPS, stage="context")
def _map(w: _Walker, f: n.AbstractMap, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    return w.map(f, path, args[0], ctx, call)


@register(n.ReduceAtomic, stage="context")
def _reduce_atomic(w: _Walker, f: n.ReduceAtomic, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    """Its operator runs in its map's loop (lift.codegen.atomic)."""
    return Val(args[0].type, frozenset({(ctx.space, ctx.origin)}))


@register(n.Reduce, n.ReduceSeq, stage="context")
def _reduce(w: _Walker, f: n.AbstractReduce, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    acc = Val(args[0].type, frozenset({("private", path)}))
    w.fun(f.f, path + (0,), [acc, _elem(args[1])], ctx, call)
    return Val(args[0].type, frozenset({(ctx.space, ctx.origin)}))


_SPACES = {n.ToGlobal: "global", n.ToLocal: "local", n.ToPrivate: "private"}


@register(*n.ADDRESS_SPACES, stage="context")
def _address(w: _Walker, f: n.ToGlobal | n.ToLocal | n.ToPrivate, path: Path, args: Vals, ctx: _Ctx,
             call: Node) -> Val:
    return w.fun(f.f, path + (0,), args, replace(ctx, space=_SPACES[type(f)], origin=path), call)


@register(n.OclKernel, stage="context")
def _ocl_kernel(w: _Walker, f: n.OclKernel, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    w.kernels.append(len(w.kernels))
    inner = replace(ctx, space="global", origin=path, chain=(), kernel=w.kernels[-1])
    return w.fun(f.f, path + (0,), args, inner, call)


@register(n.Let, n.Vectorise, stage="context")
def _wrapped(w: _Walker, f: n.Let | n.Iterate | n.Vectorise, path: Path, args: Vals, ctx: _Ctx,
             call: Node) -> Val:
    r = w.fun(f.f, path + (0,), args, ctx, call)
    return replace(r, type=_type(f, args, call))


@register(n.Iterate, stage="context")
def _iterate(w: _Walker, f: n.Iterate, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    """Its function, wrapped; in a chain of maps, `in_iterate`."""
    return _wrapped(w, f, path, args, replace(ctx, in_iterate=True) if ctx.chain else ctx, call)


# The layout patterns: values with no memory access of their own.


def _type(f: FunDecl, args: Vals, call: Node) -> Type:
    return infer(f, [a.type for a in args], call)


def _mems(args: Vals) -> frozenset[Mem]:
    return frozenset().union(*[a.mems for a in args]) if args else frozenset()


@register(RewritePoint, *with_trait("opaque"), stage="context")  # a gather: its layout is data
def _opaque(w: _Walker, f: FunDecl, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    """A value of its type in its arguments' memories, its layout unknown."""
    return Val(_type(f, args, call), _mems(args))


@register(n.Zip, n.MakeTuple, stage="context")
def _combine(w: _Walker, f: n.Zip | n.MakeTuple, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    return Val(_type(f, args, call), _mems(args), None, tuple(args))


@register(n.Get, stage="context")
def _get(w: _Walker, f: n.Get, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    t = _type(f, args, call)
    parts = args[0].parts
    return parts[f.i] if parts is not None else Val(t, _mems(args))


@register(n.At, stage="context")
def _at(w: _Walker, f: n.At, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    return replace(_elem(args[0]), type=_type(f, args, call))


@register(n.Split, stage="context")
def _split(w: _Walker, f: n.Split, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    m = f.n
    return _each(args[0], _type(f, args, call), lambda d: ((d[0][0] // m, _mul(d[0][1], m)), (m, d[0][1])) + d[1:])


@register(n.Join, stage="context")
def _join_val(w: _Walker, f: n.Join, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    return _each(args[0], _type(f, args, call), _join)


@register(n.Transpose, n.TransposeW, stage="context")
def _transpose(w: _Walker, f: FunDecl, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    return _each(args[0], _type(f, args, call), lambda d: (d[1], d[0]) + d[2:])


@register(n.Slide, stage="context")
def _slide(w: _Walker, f: n.Slide, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    t = _type(f, args, call)
    n_out = _length(t)
    return _each(args[0], t, lambda d: ((n_out, _mul(d[0][1], f.step)), (f.size, d[0][1])) + d[1:])


@register(n.Pad, stage="context")
def _pad(w: _Walker, f: n.Pad, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    t = _type(f, args, call)
    n_out = _length(t)
    return _each(args[0], t, lambda d: ((n_out, None),) + d[1:])


@register(n.AsVector, stage="context")
def _as_vector(w: _Walker, f: n.AsVector, path: Path, args: Vals, ctx: _Ctx, call: Node) -> Val:
    t = _type(f, args, call)
    n_out = _length(t)
    return _each(args[0], t, lambda d: ((n_out, d[0][1] if _is_one(d[0][1]) else None),) + d[1:])
