"""The default lowering of a high-level program (used until the mapping solver decides).

`lower(program)`: every outermost `map` becomes `map_glb` (dimension 0), every other `map`
becomes `map_seq`, every `reduce` becomes `reduce_seq`; results go to global memory (the
code generator writes a program's result there). A `map` of layout patterns
(`map(transpose)`, `map(join)`) stays a `map`: it is a view, not a loop or a kernel. When the top level has several
computations and one of them is parallel (`map_glb`), each becomes an `ocl_kernel` stage, so
no kernel reads what other work-groups wrote; a `map_glb` reading a `map_glb` of the same
length element by element stays in one kernel, and sequential computations feeding
sequential ones stay together. A result tuple of independent computations (`(reduce(add) << a,
reduce(max_) << c)`) is one kernel with one output per component (`fused_tuple`): the code
generator runs each sequential component on a work-item of its own.

    map(f) << map(g) << x        ->  map_glb(f) << map_glb(g) << x              (one kernel)
    reduce(add, 0) << map(mult) << zip(x, y)
        ->  ocl_kernel(reduce_seq(add, 0)) << ocl_kernel(map_glb(mult)) << zip(x, y)

Postcondition (`verify_lowered`): no `Reduce` and no computing `Map` is left, and the
program type is unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import cast

from lift.errors import LiftValueError
from lift.ir import nodes as n
from lift.ir.layoutfun import computes, is_layout_pattern
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Node, Param
from lift.ir.paths import children, lambda_of, transform_bottom_up, walk, with_children
from lift.ir.registry import MAPS, REDUCES, case, has, is_parallel, register
from lift.rules.fusion import fuse_epilogues, fuse_reduce_maps
from lift.rules.terms import as_call, as_expr, as_fun, constant
from lift.typecheck import typecheck
from lift.types import FunType, types_equal


def unlowered(node: Node) -> bool:
    """Whether `node` is left for the default lowering: a `reduce`, or a `map` that computes (a map
    of layout patterns is a view); the registry's "unlowered" patterns that compute."""
    return has("unlowered", node) and computes(node)


def is_high_level(expr: Node) -> bool:
    """Whether `expr` has a `reduce`, or a `map` that computes (a map of layout patterns is a view)."""
    return any(unlowered(node) for _, node in walk(expr))


def lower(program: Lambda) -> Lambda:
    """`program` with maps and reductions mapped to OpenCL and split into kernel stages.

    A `map` under a `reduce` is first fused into the reduction's operator
    (`lift.rules.fusion.fuse_reduce_maps`) and an elementwise consumer into its producer's map
    (`lift.rules.fusion.fuse_epilogues`), so neither becomes a temporary array."""

    fused = fuse_reduce_maps(fuse_epilogues(program))
    assert isinstance(fused, Lambda)  # fusion rewrites the body, never the program's lambda
    program = fused
    body = _expr(program.body, nested=False)
    staged = _stages(body)
    if len(kernels(staged)) > 1:
        body = staged
    return dataclasses.replace(program, body=body)


def kernels(e: Node) -> list[n.OclKernel]:
    """The kernel stages of `e` (its `ocl_kernel`s, as `lower` makes them or a program states them)."""
    return [x for _, x in walk(e) if isinstance(x, n.OclKernel)]


# ------------------------------------------------------------------ mapping


def _expr(e: Expr, nested: bool) -> Expr:
    if not isinstance(e, FunCall):
        return e
    f = _fun(e.f, nested)
    return as_expr(with_children(e, (f, *(_expr(a, nested) for a in e.args))))


def _fun(f: FunDecl, nested: bool) -> FunDecl:
    """`f` lowered: its class's "lower" case (a map, a reduction, a lambda), else its function
    lowered (under a map or a reduction of any kind: nested)."""
    rule = case("lower", f)
    if rule is not None:
        return cast(FunDecl, rule(f, nested))
    cs = children(f)
    if cs and isinstance(cs[0], FunDecl):
        return as_fun(with_children(f, (_fun(cs[0], nested or isinstance(f, (*MAPS, *REDUCES))),)))
    return f


@register(n.Map, stage="lower")
def _lower_map(f: n.Map, nested: bool) -> FunDecl:
    if not computes(f.f):
        return f  # map(transpose), map(join): a view, not a loop
    return (n.MapSeq if nested else n.MapGlb)(_fun(f.f, True), label=f.label, loc=f.loc)


@register(n.Reduce, stage="lower")
def _lower_reduce(f: n.Reduce, nested: bool) -> FunDecl:
    return n.ReduceSeq(_fun(f.f, True), label=f.label, loc=f.loc)


@register(Lambda, stage="lower")
def _lower_lambda(f: Lambda, nested: bool) -> FunDecl:
    return as_fun(with_children(f, (_expr(f.body, nested),)))


# ------------------------------------------------------------------- stages


def _concrete(x: Node) -> bool:
    return any(isinstance(y, n.UserFun) for _, y in walk(x))


def _parallel(x: Node) -> bool:
    return any(is_parallel(y) for _, y in walk(x))


def _plumbing(f: FunDecl) -> bool:
    """Lambdas, lets and layout functions (maps of layout patterns included): they arrange data."""
    return (isinstance(f, (Lambda, n.Let)) or is_layout_pattern(f)
            or (isinstance(f, MAPS) and not computes(f.f)))


def _is_stage(e: Expr) -> bool:
    return isinstance(e, FunCall) and _concrete(e) and not _plumbing(e.f)


def _stages(e: Expr) -> Expr:
    """Top-level plumbing kept; every top-level computation wrapped as an `ocl_kernel`."""
    if not isinstance(e, FunCall):
        return e
    if _is_stage(e):
        return _kernel(e)
    if fused_tuple(e):
        return _kernel(e, components=True)
    f = e.f
    lam = lambda_of(f)  # a lambda's body, or a let's: top level too
    if lam is not None:
        new = dataclasses.replace(lam, body=_stages(lam.body))
        f = new if f is lam else as_fun(with_children(f, (new,)))
    return as_expr(with_children(e, (f, *(_stages(a) for a in e.args))))


def fused_tuple(e: Expr) -> bool:
    """Whether `e` is a tuple of at least two independent computations, one kernel in all:
    `tuple(c1, ..., ck)` whose components all compute (none is a parameter or a view of one)."""
    return (isinstance(e, FunCall) and isinstance(e.f, n.MakeTuple) and len(e.args) > 1
            and all(_is_stage(a) for a in e.args))


def _fusable(consumer: FunCall, producer: Expr) -> bool:
    if not _is_stage(producer):
        return False
    assert isinstance(producer, FunCall)
    if not _parallel(consumer) and not _parallel(producer):
        return True
    c, p = consumer.f, producer.f
    if has("fuses_array", c):  # reduce_atomic: its array is computed by its own kernel's map;
        return producer is consumer.args[1]  # its initial value by an earlier kernel
    return (isinstance(c, n.MapGlb) and isinstance(p, n.MapGlb) and c.dim == p.dim
            and len(consumer.args) == 1 and consumer.args[0] is producer)


def _kernel(stage: FunCall, components: bool = False) -> Expr:
    """`ocl_kernel((params) => stage') << leaves`: the stage with fusable producers inlined
    (`components`: `stage` is a `fused_tuple`, its components are inlined, each with its own)."""
    leaves: list[Expr] = []
    params: list[Param] = []

    def leaf(x: Expr) -> Param:
        for k, y in enumerate(leaves):
            if y is x:
                return params[k]
        p = Param(x.type, f"k{len(params)}")
        leaves.append(x)
        params.append(p)
        return p

    def inline(call: FunCall) -> Expr:
        args: list[Expr] = []
        for a in call.args:
            if constant(a):  # a literal, or a tuple of them (a reduction's initial value): in the kernel
                args.append(a)
            elif isinstance(a, FunCall) and _fusable(call, a):
                args.append(inline(a))
            else:
                args.append(leaf(a))
        return as_expr(with_children(call, (call.f, *args)))

    body: Expr
    if components:
        body = as_expr(with_children(stage, (stage.f, *(inline(as_call(a)) for a in stage.args))))
    else:
        body = inline(stage)
    free = _free_params(body, {p.id for p in params})
    body = _rename(body, {p.id: leaf(p) for p in free})
    lam = Lambda(tuple(params), body, loc=stage.loc)
    kernel = n.OclKernel(lam, label=stage.f.label, loc=stage.loc)
    return FunCall(kernel, tuple(_stages(x) for x in leaves), loc=stage.loc)


def _free_params(e: Expr, own: set[int]) -> list[Param]:
    bound = own | {p.id for _, x in walk(e) if isinstance(x, Lambda) for p in x.params}
    out: dict[int, Param] = {}
    for _, x in walk(e):
        if isinstance(x, Param) and x.id not in bound:
            out.setdefault(x.id, x)
    return list(out.values())


def _rename(e: Expr, mapping: dict[int, Param]) -> Expr:
    def swap(x: Node) -> Node:
        return mapping.get(x.id, x) if isinstance(x, Param) else x

    return as_expr(transform_bottom_up(e, swap))


def verify_lowered(program: Lambda, original: Lambda | None = None) -> None:
    """The postcondition of `lower`: no `reduce` and no computing `map` is left (a `map` of layout
    patterns is a view and may stay), and the program type is the original's."""

    left = [str(x)[:60] for _, x in walk(program) if unlowered(x)]
    problems = [f"{what} is not mapped to OpenCL" for what in left]
    if original is not None:
        before, after = cast(FunType, typecheck(original)), cast(FunType, typecheck(program))
        if not (types_equal(before.out, after.out) and len(before.ins) == len(after.ins)
                and all(map(types_equal, before.ins, after.ins))):
            problems.append(f"the type changed from {before} to {after}")
    if problems:
        raise LiftValueError("verify_lowered: " + "; ".join(problems))


__all__ = ["lower", "kernels", "is_high_level", "computes", "fused_tuple", "verify_lowered"]
