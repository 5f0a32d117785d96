"""`iterate(k, g)` inside a kernel, within one work-item (`KernelGen` calls `iterate`).

Iteration 0 reads the argument and iteration k-1 writes the destination; the others
ping-pong between the two buffers `lift.allocation` gives the `iterate` (A and B,
`Allocated.pingpong`), two iterations per trip of a sequential loop, plus one more when k is
odd. The first and last iterations are generated with their lengths known statically (the
function specialised to them); in the loop, the length of `g`'s parameter is a C variable
(one for the steps reading A, one for those reading B, each bounded by the largest length it
takes), updated after each iteration:

    tmp_a <- g(x)                                         // iteration 0, length n0
    int len_a = n1; int len_b = 0;
    for (it = 0; it < (k - 2) / 2; it++) {
      tmp_b <- g(tmp_a); len_b = f(len_a); tmp_a <- g(tmp_b); len_a = f(len_b);
    }
    [tmp_b <- g(tmp_a); len_b = f(len_a);]                // when k - 2 is odd
    out <- g(tmp_a or tmp_b)                              // iteration k - 1, length n(k-1)

A parallel map inside `g` is refused by `lift.allocation` (the iterations would need barriers
across work-items); at the top level of a program, `lift.codegen.generate` launches one
kernel per iteration instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import TYPE_CHECKING, cast

from lift.allocation import Buffer, iterate_types, iterate_var, largest
from lift.arith import Arith, Cst, Var, to_c
from lift.codegen.args import Arg
from lift.codegen.c_ast import Assign, Block, Comment, CRaw, Decl, For
from lift.errors import UnsupportedError
from lift.ir import nodes as n
from lift.ir.nodes import Lambda, Node, Param
from lift.ir.paths import Path, lambda_of, transform_bottom_up, walk
from lift.ir.registry import is_parallel
from lift.layout import is_layout_fun
from lift.typecheck import subst_type, type_of
from lift.types import ArrayType, Type
from lift.views import View

if TYPE_CHECKING:
    from lift.codegen.generate import HostStep, HostTraversal
    from lift.codegen.kernel import KernelGen


def iterate(kg: KernelGen, f: n.Iterate, fpath: Path, args: list[Arg], out: Type, env: dict[int, View],
            dest: View | None, own: Buffer | None) -> View:
    """Generate `iterate(k, g) << a` into `dest` (or the memory of its own); returns the result's view."""
    (a,) = args
    xs = kg.arg(a, env)
    target = kg.declare(own) if own is not None else dest
    assert target is not None
    what = _short(f)
    if f.n == 0:
        kg.copy(xs, target, out, "iterate(0, _)")
        return target
    types = iterate_types(f, a.type)
    var = iterate_var(f)
    bufs = [kg.declare(b) for b in kg.alloc.pingpong.get(fpath, ())]

    def step(g: n.FunDecl, t: Type, src: View, dst: View, note: str, length: str | None = None) -> None:
        kg.block.add(Comment(f"{what}: {note}"))
        scoped(kg, lambda: kg.apply(g, fpath + (0,), [Arg(t, view=src)], t, env, dst, g, fpath + (0,)))
        if length is not None:  # g has a length variable: a lambda over an array (iterate_var)
            assert isinstance(g, Lambda)
            result = type_of(g.body)
            assert isinstance(result, ArrayType)
            kg.block.add(Assign(CRaw(length), CRaw(to_c(result.size)), "the next iteration's length"))

    def fixed(i: int) -> n.FunDecl:
        if var is None:
            return f.f
        g, t = f.f, types[i]
        assert isinstance(g, Lambda) and isinstance(t, ArrayType)  # iterate_var found the length
        return specialise(g, var, t.size)

    if f.n == 1:
        step(fixed(0), types[0], xs, target, "the only iteration")
        return target
    step(fixed(0), types[0], xs, bufs[0], "iteration 0")
    middle, last = f.n - 2, bufs[0]
    if middle:
        last = scoped(kg, lambda: _middle(kg, f, types, var, bufs, step, what))
    step(fixed(f.n - 1), types[f.n - 1], last, target, f"iteration {f.n - 1}")
    return target


def _middle(kg: KernelGen, f: n.Iterate, types: list[Type], var: Var | None, bufs: list[View], step,
            what: str) -> View:
    """Iterations 1 to k-2, A to B and B to A; returns the buffer holding the last result.

    With a length variable, the steps reading A and B each have a C variable for it (`len_a`,
    `len_b`), bounded by the largest length that step reads (the barrier analysis needs the
    bounds; one variable would carry the larger)."""
    middle = f.n - 2
    steps: list[tuple[n.FunDecl, Type, str | None]] = [(f.f, types[1], None), (f.f, types[2], None)]
    if var is not None:
        names = [kg.fresh("len_a"), kg.fresh("len_b")]
        g = f.f
        assert isinstance(g, Lambda)  # iterate_var found a length: a lambda over an array
        for k, held in enumerate((types[1:-1:2], types[2:-1:2])):
            if held:
                bound = largest(held)
                assert isinstance(bound, ArrayType)
                v = Var(names[k], Cst(1), bound.size)
                steps[k] = (specialise(g, var, v), subst_type(g.params[0].ptype, {var.name: v}), names[1 - k])
        kg.block.add(Decl("int", names[0], CRaw(to_c(cast(ArrayType, types[1]).size)), comment=f"length in {what}"))
        kg.block.add(Decl("int", names[1], CRaw("0")))
    (ga, ta, na), (gb, tb, nb) = steps
    if middle >= 2:
        trips = middle // 2
        loop = For(Var(kg.fresh("it"), Cst(0), Cst(trips - 1)), CRaw("0"), Cst(trips), CRaw("1"), Block(),
                   f"{what}: iterations 1 to {2 * trips}, two per trip", "seq")
        kg.loop_body(loop, lambda: (step(ga, ta, bufs[0], bufs[1], "A to B", na),
                                    step(gb, tb, bufs[1], bufs[0], "B to A", nb)))
    if middle % 2:
        step(ga, ta, bufs[0], bufs[1], f"iteration {f.n - 2}", na)
        return bufs[1]
    return bufs[0]


def scoped(kg: KernelGen, fill):
    """Generate into a nested C block (its declarations stay local to it); returns what `fill` does."""
    inner = Block()
    kg.block.add(inner)
    outer, kg.block = kg.block, inner
    try:
        return fill()
    finally:
        kg.block = outer


# ------------------------------------------------------------------ top level


def top_iterate(e: Node) -> bool:
    """Whether `e`, at the top level of a program, reaches an `iterate` whose function has a
    parallel map through host-level plumbing (lambdas, lets, layout functions): that `iterate`
    becomes one kernel launch per iteration (`host_iterate`)."""
    if not isinstance(e, n.FunCall):
        return False
    f = e.f
    if isinstance(f, n.Iterate):
        return any(is_parallel(x) for _, x in walk(f.f))
    if staged_iterate(e) is not None:
        return True
    lam = lambda_of(f)
    inner = [lam.body] if lam is not None else []
    if inner or is_layout_fun(f):
        return any(top_iterate(x) for x in (*inner, *e.args))
    return False


def staged_iterate(e: Node) -> tuple[n.Param, n.FunCall] | None:
    """`(q, body)` when `e` is a lowered stage of one top-level iterate (`top_iterate(body)`),
    `ocl_kernel(q => iterate(k, g) << q) << x`: launched once per iteration; else None."""
    if not (isinstance(e, n.FunCall) and isinstance(e.f, n.OclKernel) and isinstance(e.f.f, Lambda)
            and len(e.args) == 1):
        return None
    lam = e.f.f
    body = lam.body
    if isinstance(body, n.FunCall) and isinstance(body.f, n.Iterate) and body.args == lam.params and top_iterate(body):
        return lam.params[0], body
    return None


def host_iterate(host: HostTraversal, e: n.FunCall, path: Path, env: dict[int, View], dest: View | None
                 ) -> Generator[HostStep, None, View]:
    """`iterate(k, g) << x` at the top level, `g` with a parallel map: every iteration needs
    all work-items' results of the one before (a global barrier), so each is a kernel launch,
    `g` specialised to that iteration's length; the launches ping-pong between two temporary
    global buffers, the first reads `x` and the last writes the destination. Yields the host
    steps (`lift.codegen.generate.HostTraversal.steps`); returns the view of the result."""
    it = cast(n.Iterate, e.f)  # a call top_iterate accepts
    (x,) = e.args
    if not isinstance(it.f, Lambda) or it.n == 0:
        raise UnsupportedError("a top-level iterate with a parallel map needs a count >= 1 and a lambda "
                               "(iterate(k, lambda a: map_glb(f) << a))", node=it)
    cur = yield from host.host(x, path + (1,), env, None)
    types = iterate_types(it, x.type)
    var = iterate_var(it)
    bufs = []
    for held in (types[1:-1:2], types[2:-1:2]):
        if held:
            bufs.append((yield from host.temp(largest(held))))
    label = it.label or e.label or "iterate"
    for i in range(it.n):
        g = specialise(it.f, var, cast(ArrayType, types[i]).size) if var is not None else it.f
        if i < it.n - 1:
            target = bufs[i % 2]
        else:
            target = dest if dest is not None else (yield from host.temp(types[it.n]))
        yield host.job(host.names(f"{label}_{i}"), (g, path + (0, 0), (cur,)), None, path, env, target)
        cur = target
    return cur


def specialise(g: Lambda, var: Var, size: Arith) -> Lambda:
    """`g` with its length variable `var` replaced by `size` in every parameter type (the body
    is rebuilt, so its types are inferred again)."""
    env = {var.name: size}
    fresh: dict[int, Param] = {}

    def param(p: Param) -> Param:
        t = subst_type(p.ptype, env)
        if t == p.ptype:
            return p
        if p.id not in fresh:
            fresh[p.id] = Param(t, p.name, label=p.label, loc=p.loc)
        return fresh[p.id]

    def fix(x: Node) -> Node:
        if isinstance(x, Param):
            return param(x)
        if isinstance(x, Lambda):
            params = tuple(param(p) for p in x.params)
            if any(p is not q for p, q in zip(params, x.params)):
                return dataclasses.replace(x, params=params)
        return x

    out = transform_bottom_up(g, fix)
    assert isinstance(out, Lambda)
    return out


def _short(x: object) -> str:
    text = str(x)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["iterate", "specialise"]
