"""Stage "realised": a program with a chosen mapping and tuning values applied (`realised`).

The constraint spaces (`lift.constraints`) state and solve what may be chosen; this module
builds the program a choice gives, in order (`realised`): the launch kernel and its twins
named (`named_kernel`, when launch variables size it), the maps lowered (`realise_traced`), the
"kernel boundary" taken (`apply_boundary`, where the model's constraint says so),
the tuning values substituted (`substitute_sizes`). `Space.realise` is `realised` for users.

Each concrete map becomes `map_seq`, `map_lcl(d)`, `map_wrg(d)` or `map_glb(d)` (keeping
its label and source line); a map with code 1 is fused into its parent as in thesis
5.3.1, `map(map(f)) -> split(n) << map(f) << join`; `reduce` becomes `reduce_seq`;
layout-only maps (views such as `map(transpose)`) stay `map`. Tuning values replace their
size variables everywhere (pattern parameters and types). A sequential map may be
vectorised (`vectorise={label: width}`): `map_seq(f) -> as_scalar << map_seq(vectorise(f, w))
<< as_vector(w)`, which the vectorisation check allows only where consecutive iterations read
consecutive scalars (thesis 5.2.1), else `RewriteError`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from lift.arith import Arith, Cst, prove_divides, substitute
from lift.constraints.boundary import needs_boundary, result_chain
from lift.constraints.context import Context, MapSite
from lift.constraints.launch import ndrange
from lift.constraints.mapping import FUSED, SEQ, describe
from lift.errors import RewriteError
from lift.ir import nodes as n
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Node, Param
from lift.ir.paths import Path, at, replace_at, walk
from lift.ir.registry import MAPS, case, is_address, register, with_trait
from lift.rules.terms import as_call, constant
from lift.types import ArrayType, ScalarType, TupleType, Type, VectorType

if TYPE_CHECKING:
    from lift.constraints.space import Space

_ARITH_FIELDS = {n.Split: ("n",), n.Slide: ("size", "step"), n.Pad: ("left", "right"), n.At: ("index",), n.Iota: ("n",)}


Lowered = tuple[tuple[Node, str], ...]  # each map object the lowering made, with its map site's label


def realised(space: Space, choice: Mapping[str, int], *, vectorise: Mapping[str, int] | None = None
             ) -> tuple[Node, Lowered]:
    """The program of `space` with `choice` applied (checked against the space first): the launch
    kernel and its twins named when the choice launches them, the maps lowered as its codes say
    (unless the space keeps the program as written), tuning values substituted; and each map
    object the lowering made with its map site's label (those that survive as objects in the
    program are the maps `lift.constraints.learn` can name)."""
    choice = space.checked(choice)
    env = dict(space.fixed)
    env.update({k: int(v) for k, v in choice.items() if k in space.params})
    codes = space.codes(choice)
    out = space.expr
    if space.launch_path is not None and ndrange(choice) is not None:  # sized by name: named
        out = named_kernel(out, space.launch_path, space.kernel_name(space.launch_path))
        for name, path in space.twins(codes):
            out = named_kernel(out, path, name)
    lowered: Lowered = ()
    if space.lower or vectorise:
        out, lowered = realise_traced(out, space.context, codes, vectorise, {**(space.sizes or {}), **env})
    return substitute_sizes(out, env), lowered


def named_kernel(expr: Node, path: tuple[int, ...], name: str) -> Node:
    """`expr` with the `ocl_kernel` call at `path` labelled `name` (a program launched with
    launch choices only: the others keep their kernels' names)."""
    call = as_call(at(expr, path))
    if call.f.label == name:
        return expr
    return replace_at(expr, path, dataclasses.replace(call, f=dataclasses.replace(call.f, label=name)))


def realise(expr: Node, ctx: Context, choice: Mapping[str, int],
            vectorise: Mapping[str, int] | None = None, sizes: Mapping[str, int] | None = None) -> Node:
    """`expr` with every concrete map lowered as `choice` says (see the module docstring)."""
    return realise_traced(expr, ctx, choice, vectorise, sizes)[0]


def realise_traced(expr: Node, ctx: Context, choice: Mapping[str, int],
                   vectorise: Mapping[str, int] | None = None, sizes: Mapping[str, int] | None = None
                   ) -> tuple[Node, Lowered]:
    """`realise`, and each map object it lowered with its map site's label (the origin of a map
    of the result: `lift.constraints.learn` names a barrier error's loops by it)."""
    missing = sorted(set(ctx.maps) - set(choice))
    if missing:
        raise KeyError(f"the choice has no code for map(s) {', '.join(missing)}")
    low = _Lowering(expr, ctx, choice, dict(vectorise or {}), dict(sizes or {}))
    out = low.expr_or_fun(expr, ())
    chain = result_chain(expr)
    if needs_boundary(ctx, choice, chain):  # the "kernel boundary" constraint (constraints/boundary.py)
        out = apply_boundary(out, chain, _kernel)
    return out, tuple(low.lowered)


class _Lowering:
    def __init__(self, root: Node, ctx: Context, choice: Mapping[str, int], vec: dict[str, int],
                 sizes: dict[str, int]) -> None:
        self.root, self.ctx, self.choice, self.vec, self.sizes = root, ctx, choice, vec, sizes
        self.by_path = {m.path: m for m in ctx.maps.values()}
        self.made: list[Lambda] = []  # lambdas built here (beta-reduced when applied)
        self.lowered: list[tuple[Node, str]] = []  # each lowered map, with its map site's label

    def built(self, f: Lambda) -> bool:
        """Whether `f` is this very lambda built by the lowering (not merely an equal one)."""
        return any(m is f for m in self.made)

    def remember(self, m: n.AbstractMap, label: str) -> n.AbstractMap:
        """`m`, recorded as the lowering of the map site `label`."""
        self.lowered.append((m, label))
        return m

    def expr_or_fun(self, e: Node, path: Path) -> Node:
        return self.expr(e, path) if isinstance(e, Expr) else self.fun(cast(FunDecl, e), path)

    def expr(self, e: Expr, path: Path) -> Expr:
        if not isinstance(e, FunCall):
            return e
        if len(self.ctx.stages) > 1 and path in self.ctx.stages and isinstance(e.f, n.MakeTuple):
            return self.tuple_kernel(e, path)
        f = self.fun(e.f, path + (0,))
        args = tuple(self.expr(a, path + (i + 1,)) for i, a in enumerate(e.args))
        if len(self.ctx.stages) > 1 and path in self.ctx.stages:
            return _kernel(dataclasses.replace(e, f=f, args=args))
        if isinstance(e.f, n.Get) and path == (0,) and isinstance(self.root, Lambda) and path + (1,) in self.ctx.stages:
            return _projected(e, args[0])
        if isinstance(f, Lambda) and self.built(f) and len(args) == 1:
            return _beta(f, args[0])
        return dataclasses.replace(e, f=f, args=args)

    def tuple_kernel(self, e: FunCall, path: Path) -> Expr:
        """A result tuple of independent computations (`lift.lower.fused_tuple`) as one kernel:
        `ocl_kernel((k0, ...) => tuple(c1', ..., ck')) << leaves`, the leaves being the
        components' (realised) arguments: inputs, views, and the kernels of their producers."""
        leaves: list[Expr] = []
        params: list[Param] = []
        comps: list[Expr] = []
        for i, c in enumerate(e.args):
            assert isinstance(c, FunCall)
            cpath = path + (i + 1,)
            f = self.fun(c.f, cpath + (0,))
            args = []
            for j, a in enumerate(c.args):
                if constant(a):
                    args.append(a)
                    continue
                leaves.append(self.expr(a, cpath + (j + 1,)))
                params.append(Param(a.type, f"k{len(params)}"))
                args.append(params[-1])
            call: Expr = FunCall(f, tuple(args), label=c.label, loc=c.loc)
            if isinstance(f, Lambda) and self.built(f) and len(args) == 1:
                call = _beta(f, args[0])
            comps.append(call)
        body = FunCall(e.f, tuple(comps), label=e.label, loc=e.loc)

        bound = {q.id for _, x in walk(body) if isinstance(x, Lambda) for q in x.params} | {q.id for q in params}
        free = list({x.id: x for _, x in walk(body) if isinstance(x, Param) and x.id not in bound}.values())
        extra = [Param(q.type, f"k{len(params) + k}") for k, q in enumerate(free)]
        body = as_call(_rename(body, {q.id: p for q, p in zip(free, extra)}))
        kernel = n.OclKernel(Lambda(tuple(params + extra), body), label=e.f.label, loc=e.loc)
        return FunCall(kernel, (*leaves, *free), loc=e.loc)

    def fun(self, f: FunDecl, path: Path) -> FunDecl:
        """`f` realised by its "realise" case (below); kept as it is where it has none."""
        rule = case("realise", f)
        return f if rule is None else cast(FunDecl, rule(self, f, path))

    def map(self, m: n.AbstractMap, path: Path) -> FunDecl:
        site = self.by_path.get(path)
        if site is None:  # a view: stays a `map`
            return dataclasses.replace(cast(Any, m), f=self.fun(m.f, path + (0,)))
        code = self.choice[site.label]
        if code == FUSED:
            raise RewriteError(f"map {site.label} is fused but its parent does not absorb it", node=m)
        lens, inner, inner_path = self._fused_chain(site)
        g = self.fun(inner.f, inner_path + (0,))
        new: FunDecl = self.remember(_lowered(m, code, g), site.label)
        if site.label in self.vec:
            new = self._vectorised(site, code, g, self.vec[site.label])
        if not lens:
            return new
        p = Param(site.in_type, "x")
        y: Expr = p
        for _ in lens:
            y = FunCall(n.Join(), (y,))
        out: Expr = FunCall(new, (y,))
        for k in reversed(lens):
            out = FunCall(n.Split(k), (out,))
        lam = Lambda((p,), out, label=m.label, loc=m.loc)
        self.made.append(lam)
        return lam

    def _fused_chain(self, site: MapSite) -> tuple[list[Arith], n.AbstractMap, Path]:
        """Lengths of the perfectly nested maps fused into `site`, and the innermost one."""
        lens: list[Arith] = []
        cur, cur_path = site.node, site.path
        while True:
            child = self._perfect_child(cur, cur_path)
            if child is None or self.choice[child.label] != FUSED:
                return lens, cur, cur_path
            lens.append(child.length)
            cur, cur_path = child.node, child.path

    def _perfect_child(self, m: n.AbstractMap, path: Path) -> MapSite | None:
        for p in (path + (0,), path + (0, 0, 0)):
            s = self.by_path.get(p)
            if s is not None and s.perfect:
                return s
        return None

    def _vectorised(self, site: MapSite, code: int, g: FunDecl, width: int) -> FunDecl:
        check_vectorisable(site, code, g, width, self.sizes)
        p = Param(site.in_type, "x")
        vec_f = cast(FunDecl, _vector_fun(g, width))  # not None: it raises without check=True
        body = FunCall(n.AsScalar(), (FunCall(self.remember(n.MapSeq(vec_f, label=site.node.label, loc=site.node.loc),
                                                       site.label),
                                              (FunCall(n.AsVector(width), (p,)),)),))
        lam = Lambda((p,), body, label=site.node.label, loc=site.node.loc)
        self.made.append(lam)
        return lam


# The "realise" stage: each function class's case (`_Lowering.fun`), registered per class.


@register(Lambda, stage="realise")
def _realise_lambda(low: _Lowering, f: Lambda, path: Path) -> FunDecl:
    """A lambda: its body realised."""
    return dataclasses.replace(f, body=low.expr(f.body, path + (0,)))


@register(*MAPS, stage="realise")
def _realise_map(low: _Lowering, f: n.AbstractMap, path: Path) -> FunDecl:
    """A map: lowered as its map site's code says (a view stays a `map`)."""
    return low.map(f, path)


@register(n.Reduce, stage="realise")
def _realise_reduce(low: _Lowering, f: n.Reduce, path: Path) -> FunDecl:
    """A reduce: `reduce_seq` of its function realised."""
    return n.ReduceSeq(low.fun(f.f, path + (0,)), label=f.label, loc=f.loc)


@register(*with_trait("realised"), stage="realise")
def _realise_wrapped(low: _Lowering, f: Any, path: Path) -> FunDecl:
    """A pattern the mapping keeps (the "realised" trait): its one function realised."""
    return cast(FunDecl, dataclasses.replace(f, f=low.fun(f.f, path + (0,))))


def _lowered(m: n.AbstractMap, code: int, g: FunDecl) -> n.AbstractMap:
    kw: dict[str, Any] = {"label": m.label, "loc": m.loc}
    if code == SEQ:
        return n.MapSeq(g, **kw)
    cls = {1: n.MapLcl, 2: n.MapWrg, 3: n.MapGlb}.get(code // 10)
    if cls is None or code % 10 > 2:
        raise RewriteError(f"{code} is not a Table 5.2 code", node=m)
    return cls(g, code % 10, **kw)


def _kernel(call: FunCall) -> Expr:
    """`ocl_kernel((k0, ...) => call') << (non-literal arguments, free parameters)`; a
    `reduce_atomic` keeps its array argument inside (computed by its kernel's map)."""

    whole = isinstance(call.f, n.ReduceAtomic)
    inside = call.args[1] if whole else call.f
    outside = [a for a in (call.args[:1] if whole else call.args) if not constant(a)]
    bound = {q.id for _, x in walk(inside) if isinstance(x, Lambda) for q in x.params}
    free = list({x.id: x for _, x in walk(inside) if isinstance(x, Param) and x.id not in bound}.values())
    params = [Param(a.type, f"k{i}") for i, a in enumerate([*outside, *free])]
    ren = {q.id: p for q, p in zip(free, params[len(outside):])}
    it = iter(params)
    if whole:
        init = call.args[0] if constant(call.args[0]) else next(it)
        body = dataclasses.replace(call, args=(init, _rename(call.args[1], ren)))
        kernel = n.OclKernel(Lambda(tuple(params), body), label=call.f.label, loc=call.loc)
        return FunCall(kernel, (*outside, *free), loc=call.loc)
    args = tuple(a if constant(a) else next(it) for a in call.args)
    body = FunCall(_rename(call.f, ren), args, label=call.label, loc=call.loc)
    kernel = n.OclKernel(Lambda(tuple(params), body), label=call.f.label, loc=call.loc)
    return FunCall(kernel, (*outside, *free), loc=call.loc)


def _projected(e: FunCall, kernel: Expr) -> Expr:
    """The program's result `get(i) << stage` as the stage's kernel writing component `i` only
    (`ocl_kernel(ks => get(i) << body) << args`; a component of a kernel's tuple result cannot
    be written in place by the host: the last stage of an arg-min's chunked reduction)."""
    if not (isinstance(kernel, FunCall) and isinstance(kernel.f, n.OclKernel) and isinstance(kernel.f.f, Lambda)):
        return dataclasses.replace(e, args=(kernel,))
    g = kernel.f.f
    inner = dataclasses.replace(g, body=FunCall(e.f, (g.body,), label=e.label, loc=e.loc))
    return dataclasses.replace(kernel, f=dataclasses.replace(kernel.f, f=inner))


def _rename(x: Any, ren: dict[int, Param]) -> Any:
    """`x` with parameters replaced by id."""
    if not ren:
        return x
    match x:
        case Param():
            return ren.get(x.id, x)
        case FunCall(f, args):
            return dataclasses.replace(x, f=_rename(f, ren), args=tuple(_rename(a, ren) for a in args))
        case Lambda(_, body):
            return dataclasses.replace(x, body=_rename(body, ren))
    g = getattr(x, "f", None)
    return dataclasses.replace(x, f=_rename(g, ren)) if isinstance(g, Node) else x


def _beta(lam: Lambda, arg: Expr) -> Expr:
    """`lam(arg)` with the (single-use) parameter replaced by `arg`."""
    p = lam.params[0]

    def go(e: Expr) -> Expr:
        if e == p:
            return arg
        if isinstance(e, FunCall):
            return dataclasses.replace(e, args=tuple(go(a) for a in e.args))
        return e

    return go(lam.body)


# -------------------------------------------------------------- vectorisation


def check_vectorisable(site: MapSite, code: int, g: FunDecl, width: int,
                       sizes: Mapping[str, int] | None = None) -> None:
    """Raise `RewriteError` unless `site` may become a vectorised `map_seq` of `width` lanes."""
    why = None
    if code != SEQ:
        why = f"it is {describe(code)}, only a sequential map is vectorised"
    elif not site.scalar_elems:
        why = f"its elements are not scalars ({site.in_type})"
    elif _vector_fun(g, width, check=True) is None:
        why = "its function is not a scalar user function"
    elif site.stride is None or site.stride != Cst(1):
        why = (f"consecutive iterations read elements {site.stride} apart, not contiguous"
               if site.stride is not None else "its input is not contiguous in memory")
    elif not prove_divides(width, substitute(site.length, sizes or {})):
        why = f"{width} does not divide its length {site.length}"
    if why is not None:
        raise RewriteError(f"map {site.label} cannot be vectorised by {width}: {why}", node=site.node)


def _vector_fun(g: FunDecl, width: int, check: bool = False) -> FunDecl | None:
    match g:
        case n.UserFun(in_types=ins, out_type=out) if len(ins) == 1 and all(
                isinstance(t, ScalarType) for t in (*ins, out)):
            return n.Vectorise(g, width)
        case _ if is_address(g):
            inner = _vector_fun(g.f, width, check)
            return None if inner is None else dataclasses.replace(g, f=inner)
    if check:
        return None
    raise RewriteError(f"cannot vectorise {g}", node=g)


# ------------------------------------------------------------ tuning values


def substitute_sizes(expr: Node, env: Mapping[str, int]) -> Node:
    """`expr` with size variables replaced by values in patterns and types."""
    if not env:
        return expr
    params: dict[int, Param] = {}

    def ty(t: Type) -> Type:
        match t:
            case ArrayType(elem, size):
                return ArrayType(ty(elem), substitute(size, env))
            case TupleType(elems):
                return TupleType(tuple(ty(x) for x in elems))
            case VectorType():
                return t
        return t

    def go(x: Any) -> Any:
        match x:
            case Param():
                if x.id not in params:
                    params[x.id] = dataclasses.replace(x, ptype=ty(x.ptype))
                return params[x.id]
            case FunCall(f, args):
                return dataclasses.replace(x, f=go(f), args=tuple(go(a) for a in args))
            case Lambda(ps, body):
                return dataclasses.replace(x, params=tuple(go(p) for p in ps), body=go(body))
        fields = _ARITH_FIELDS.get(type(x), ())
        if fields:
            return dataclasses.replace(x, **{k: substitute(getattr(x, k), env) for k in fields})
        g = getattr(x, "f", None)
        return dataclasses.replace(x, f=go(g)) if isinstance(g, Node) else x

    return go(expr)


def label_of(expr: Node, path: Path) -> str | None:
    """The label of the node at `path`."""
    return at(expr, path).label



def apply_boundary(low: Node, chain: int, stage: Any) -> Node:
    """`low` (a lowered program) with its result's computation and copy in two kernels; `stage`
    wraps a call as an `ocl_kernel`."""
    assert isinstance(low, Lambda)
    layouts: list[FunCall] = []
    cur = low.body
    for _ in range(chain):
        assert isinstance(cur, FunCall)
        layouts.append(cur)
        cur = cur.args[0]
    inner: Expr = cur if isinstance(cast(FunCall, cur).f, n.OclKernel) else stage(cur)
    for c in reversed(layouts):
        inner = dataclasses.replace(c, args=(inner,))
    p = n.Param(low.body.type, "r")
    copy = n.OclKernel(Lambda((p,), FunCall(_copy_fun(low.body.type, 0), (p,))), label="copy", loc=low.body.loc)
    return dataclasses.replace(low, body=FunCall(copy, (inner,), loc=low.body.loc))


def _copy_fun(t: Type, depth: int) -> Any:
    # imported here, not with the constraints: importing lift.userfun.builtins earlier changes the
    # order of fresh ids, and with it a z3 tie-break (tc-gconv's mapping in the golden corpus)
    from lift.userfun.builtins import id as identity

    if isinstance(t, ArrayType):
        g = _copy_fun(t.elem, depth + 1)
        return n.MapGlb(g, 0, label="copy") if depth == 0 else n.MapSeq(g)
    return identity.specialise(t)


__all__ = ["realised", "named_kernel", "realise", "realise_traced", "apply_boundary", "check_vectorisable",
           "substitute_sizes", "label_of", "Lowered"]
