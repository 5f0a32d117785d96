"""A TC function as a `lift.fun` program.

Statements are read in order. A pointwise statement (`=`, no reduction variable) is inlined into the
statements that read it (its subscripts substituted), as TC fuses producer-consumer chains; a
statement with a reduction becomes a nest of `map`s over its left-hand side's dimensions around a
`reduce` over its reduction variables, reading every tensor through a view (`access.view`):

    C(m,n) +=! A(m,k) * B(k,n)
    map(m => map(n => reduce(add, 0.0) << map(mult) << zip(m, n)) << transpose << B) << A

A statement without `!` combines the previous value (`C(i,j) += ...` is `add(C_ij, reduce(...))`).
A version read more than once (by several statements, or by one and as an output) is computed once
and bound with `let`; the computations in a `let`'s body are kernels of their own (lift.lower and the
mapping model's stages), so every reader runs after the kernel writing it has finished. A let-bound
version that is also an output is copied to the output by a computation of its own (`copied`), so no
kernel reads what other work-groups of the same kernel write (MLP3 returning O2, O3 and O4 raised
`NotSynchronisableError` with the copy in the consumer's kernel).
"""

from __future__ import annotations

import dataclasses
import inspect
import keyword
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from lift.arith import Arith
from lift.comprehension.access import Indexed, View, view
from lift.comprehension.ranges import Ranges, Scope, accesses, check_access, index_vars, is_gather, tc_error
from lift.comprehension.scalar import evaluate, literal, neutral, reducer
from lift.comprehension.syntax import Binary, Call, Expr, Name, Statement, Ternary, Unary
from lift.errors import LiftTypeError, LiftValueError, UnsupportedError
from lift.ir.build import elaborate
from lift.ir.nodes import Expr as IRExpr
from lift.ir.nodes import FunCall, Get, Lambda, UserFun
from lift.ir.patterns import join_nd, let, reduce
from lift.ir.patterns import map as lmap
from lift.ir.patterns import zip as lzip
from lift.types import ArrayType, Float, shape
from lift.userfun.builtins import id as builtin_id


@dataclass(frozen=True, slots=True)
class Materialised:
    """A tensor version computed by a statement with a reduction (or a returned pointwise one)."""

    key: str  # unique: "C", "C'1", ...
    stmt: Statement  # right-hand side resolved: accesses name versions' keys, pointwise ones inlined
    ranges: Ranges
    prev: Expr | None  # the previous value at the left-hand side's indices (`+=` without `!`), resolved
    # A pointwise in-place update fused as an epilogue (`O(b,o) = fmaxf(O(b,o), 0)` after the reduction
    # into O): (the version it updates, its right-hand side reading that version at these indices).
    epilogue: tuple[str, Expr] | None = None


@dataclass(frozen=True, slots=True)
class Inline:
    """A pointwise tensor version: its variables and resolved right-hand side, substituted at reads."""

    vars: tuple[str, ...]
    rhs: Expr
    shape: tuple[Arith, ...]
    stmt: Statement


@dataclass
class Program:
    """What `lift.fun` needs: parameter types and the ordered materialised versions."""

    scope: Scope
    versions: list[Materialised] = field(default_factory=list)


def substitute(e: Expr, subst: Mapping[str, Expr]) -> Expr:
    """`e` with the names in `subst` replaced (an inlined statement's variables by the reader's subscripts)."""
    if isinstance(e, Name):
        return subst.get(e.name, e)
    if isinstance(e, Call):
        return dataclasses.replace(e, args=tuple(substitute(a, subst) for a in e.args))
    return substitute_children(e, lambda x: substitute(x, subst))


def resolve(e: Expr, env: Mapping[str, str | Inline], scope: Scope) -> Expr:
    """`e` reading tensors by version key, pointwise versions inlined."""
    match e:
        case Call(name=n, args=args) if n in env:
            args = tuple(resolve(a, env, scope) for a in args)
            target = env[n]
            if isinstance(target, Inline):
                if len(args) != len(target.vars):
                    raise tc_error(LiftTypeError, f"{n} has {len(target.vars)} dimension(s) but is accessed "
                                   f"with {len(args)} subscript(s)", e.pos)
                return substitute(target.rhs, dict(zip(target.vars, args, strict=True)))
            return dataclasses.replace(e, name=target, args=args)
        case Call(name=n, args=args) if n not in scope.shapes and e in accesses(e, scope):
            raise tc_error(LiftValueError, f"unknown tensor or function {n!r}", e.pos,
                           hint="tensors: " + ", ".join(sorted(k for k in env)) + "; functions: fmaxf, fminf, "
                           "exp, log, tanh, sqrt, fabs, sigmoid")
        case Call(args=args):
            return dataclasses.replace(e, args=tuple(resolve(a, env, scope) for a in args))
    return substitute_children(e, lambda x: resolve(x, env, scope))


def substitute_children(e: Expr, f: Callable[[Expr], Expr]) -> Expr:
    """`e` with `f` applied to its operands (a number, a name or a call: `e` itself)."""
    match e:
        case Binary(left=a, right=b):
            return dataclasses.replace(e, left=f(a), right=f(b))
        case Unary(arg=a):
            return dataclasses.replace(e, arg=f(a))
        case Ternary(cond=c, then=a, other=b):
            return dataclasses.replace(e, cond=f(c), then=f(a), other=f(b))
    return e


def named(name: str, body: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A one-parameter Python function whose parameter is called `name` (what `print` shows)."""
    def fn(*args: Any) -> Any:
        return body(*args)

    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(_pyname(name), inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    return fn


def eta(f: Callable[[Any], Any], src: IRExpr) -> Any:
    """`p => g(p[0], ..., p[n-1])` over a zip of n is `g`; a lambda otherwise (as built)."""
    lam = elaborate(f, [cast(ArrayType, src.type).elem])
    if isinstance(lam, Lambda) and len(lam.params) == 1 and isinstance(lam.body, FunCall):
        g, args, p = lam.body.f, lam.body.args, lam.params[0]
        if isinstance(g, UserFun) and len(args) == 1 and args[0] is p:
            return g
        if isinstance(g, UserFun) and all(isinstance(a, FunCall) and a.f == Get(i) and a.args[0] is p
                                          for i, a in enumerate(args)) and len(args) > 1:
            return g
    return lam


class Statement2IR:
    """One materialised version as IR, given the IR of the versions it reads."""

    def __init__(self, m: Materialised, scope: Scope, values: Mapping[str, IRExpr],
                 scalars: Mapping[str, IRExpr]) -> None:
        self.m, self.scope, self.values, self.scalars = m, scope, values, scalars
        self.out_vars = [n.name for n in m.stmt.indices]
        self.red_vars = [v for v in index_vars(m.stmt, scope) if v not in self.out_vars]
        self.order = self.out_vars + self.red_vars
        self.rhs_leaves: list[Call] = accesses(m.stmt.rhs, scope)
        self.prev_leaves: list[Call] = [] if m.prev is None else accesses(m.prev, scope)
        self.epi_leaves: list[Call] = [] if m.epilogue is None else [
            a for a in accesses(m.epilogue[1], scope) if a.name != m.epilogue[0]]

    def build(self) -> IRExpr:
        views = []
        for a in self.rhs_leaves + self.prev_leaves + self.epi_leaves:
            views.append(self.access(a))
        return self.nest(self.out_vars, views)

    def access(self, a: Call) -> View:
        """The view of access `a`, its gathered subscripts (`X(I(i, k), j)`) read through gathers."""
        check_access(a, self.scope)
        subs = [Indexed(self.access(s), s.pos) if is_gather(s, self.scope)
                else self.scope.affine(s, set(self.order)).shifted(self.m.ranges.starts) for s in a.args]
        return view(self.values[a.name], subs, self.order, self.m.ranges.extents, a.pos)

    def nest(self, vars_: list[str], views: list[View]) -> IRExpr:
        if not vars_:
            return self.reduction(views)
        v = vars_[0]
        part = [k for k, w in enumerate(views) if w.dims and w.dims[0] == v]
        if not part:
            raise tc_error(UnsupportedError, f"the output variable {v!r} indexes no tensor on the right",
                           self.m.stmt.pos, hint="a broadcast needs an input along it")
        src = views[part[0]].expr if len(part) == 1 else lzip(*[views[k].expr for k in part])

        def body(p: Any) -> Any:
            new = list(views)
            for j, k in enumerate(part):
                new[k] = View(p if len(part) == 1 else p[j], views[k].dims[1:])
            return self.nest(vars_[1:], new)

        return lmap(named(v, body)) << src

    def reduction(self, views: list[View]) -> IRExpr:
        n, k = len(self.rhs_leaves), len(self.rhs_leaves) + len(self.prev_leaves)
        rhs_views, prev_views, epi_views = views[:n], views[n:k], views[k:]
        value = self.combined(rhs_views, prev_views)
        if self.m.epilogue is None:
            return value
        base, rhs = self.m.epilogue
        by_call = {id(a): w.expr for a, w in zip(self.epi_leaves, epi_views, strict=True)}
        out = evaluate(rhs, lambda c: value if c.name == base else by_call[id(c)], self._name)
        return out if isinstance(out, IRExpr) else literal(out, Float, rhs.pos)

    def combined(self, rhs_views: list[View], prev_views: list[View]) -> IRExpr:
        """The statement's value at one output point: the reduction, combined with the previous value."""
        red = reducer(self.m.stmt.op)
        if not self.red_vars:
            value = self.element(self.m.stmt.rhs, self.rhs_leaves, rhs_views)
        else:
            if red is None:
                raise tc_error(LiftValueError, f"`=` with the reduction variable(s) {', '.join(self.red_vars)}",
                               self.m.stmt.pos, hint="reduce with +=!, *=!, max=! or min=! (or +=, ... to "
                               "combine with the previous value)")
            value = self.reduce_over(self.red_vars, rhs_views, red)
        if self.m.prev is None or red is None:
            return value
        return red[0](self.element(self.m.prev, self.prev_leaves, prev_views), value)

    def reduce_over(self, rvars: list[str], views: list[View], red: tuple[Any, float]) -> IRExpr:
        carrying = [k for k, w in enumerate(views) if w.dims]
        if carrying and all(len(views[k].dims) == len(rvars) for k in carrying):
            flat = [views[k].expr if len(rvars) == 1 else join_nd(len(rvars)) << views[k].expr for k in carrying]

            def leaf(parts: list[Any]) -> IRExpr:
                now = [View(parts[carrying.index(k)], ()) if k in carrying else w for k, w in enumerate(views)]
                return self.element(self.m.stmt.rhs, self.rhs_leaves, now)

            return self._reduce(flat, leaf, red)
        v = rvars[0]
        part = [k for k, w in enumerate(views) if w.dims and w.dims[0] == v]
        if not part:
            raise tc_error(UnsupportedError, f"the reduction variable {v!r} indexes no tensor", self.m.stmt.pos)

        def inner(parts: list[Any]) -> IRExpr:
            now = [View(parts[part.index(k)], w.dims[1:]) if k in part else w for k, w in enumerate(views)]
            return self.reduce_over(rvars[1:], now, red)

        return self._reduce([views[k].expr for k in part], inner, red)

    def _reduce(self, xs: list[IRExpr], elem: Callable[[list[Any]], IRExpr], red: tuple[Any, float]) -> IRExpr:
        src = xs[0] if len(xs) == 1 else lzip(*xs)

        def body(p: Any) -> Any:
            return elem([p] if len(xs) == 1 else [p[j] for j in range(len(xs))])

        f = eta(named("_".join(self.red_vars), body), src)
        init = neutral(red[1], f.out_type if isinstance(f, UserFun) else f.body.type)
        if isinstance(f, Lambda) and f.body is f.params[0]:
            return reduce(red[0], init) << src
        return reduce(red[0], init) << (lmap(f) << src)

    def element(self, e: Expr, leaves: list[Call], views: list[View]) -> IRExpr:
        by_call = {id(a): w.expr for a, w in zip(leaves, views, strict=True)}
        out = evaluate(e, lambda c: by_call[id(c)], self._name)
        return out if isinstance(out, IRExpr) else literal(out, Float, e.pos)  # `C(i) = 0`: a Float

    def _name(self, n: Name) -> Any:
        if n.name in self.scalars:
            return self.scalars[n.name]
        if n.name in self.scope.constants:
            return self.scope.constants[n.name]
        raise tc_error(UnsupportedError, f"{n.name!r} is used as a value: an index variable's value is not "
                       "available in the IR (only its use as a subscript)", n.pos)


def build_program(prog: Program, outputs: list[str], params: list[tuple[str, Any]],
                  scalars: list[str]) -> Callable[..., Any]:
    """The Python body `lift.fun` elaborates: builds the versions in order, returns the outputs."""
    def body(*args: Any) -> Any:
        values: dict[str, IRExpr] = {}
        scal: dict[str, IRExpr] = {}
        for (name, _), a in zip(params, args, strict=True):
            (scal if name in scalars else values)[name] = a
        return chain(0, values, scal)

    def chain(k: int, values: dict[str, IRExpr], scal: dict[str, IRExpr]) -> Any:
        if k == len(prog.versions):
            outs = [copied(values[o]) if uses.get(o, 0) > 1 else values[o] for o in outputs]
            return outs[0] if len(outs) == 1 else tuple(outs)
        m = prog.versions[k]
        e = Statement2IR(m, prog.scope, values, scal).build()
        if uses.get(m.key, 0) > 1:
            return let(named(m.key.replace("'", "_"), lambda t: chain(k + 1, {**values, m.key: t}, scal))) << e
        return chain(k + 1, {**values, m.key: e}, scal)

    uses = reads(prog, outputs)

    pynames: list[str] = []
    for n, _ in params:
        name = _pyname(n)
        while name in pynames:
            name += "_"
        pynames.append(name)
    body.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in pynames])
    return body


def copied(x: IRExpr) -> IRExpr:
    """`map^r(id) << x`: a let-bound version that is also an output, copied to the output by a
    computation of its own (a kernel after the one computing it, so no kernel reads what other
    work-groups of the same kernel write)."""
    g: Any = builtin_id
    for _ in range(len(shape(x.type)) - 1):
        g = lmap(g)
    return lmap(g) << x


def reads(prog: Program, outputs: list[str]) -> dict[str, int]:
    """How many times each version is read: by the statements (their accesses and gathered
    subscripts) and as an output."""
    out: dict[str, int] = {}

    def count(e: Expr | None) -> None:
        stack = [] if e is None else accesses(e, prog.scope)
        while stack:
            a = stack.pop()
            out[a.name] = out.get(a.name, 0) + 1
            stack += [s for s in a.args if is_gather(s, prog.scope)]

    for m in prog.versions:
        count(m.stmt.rhs)
        count(m.prev)
        if m.epilogue is not None:
            count(m.epilogue[1])
            out[m.epilogue[0]] = out.get(m.epilogue[0], 0) - 1  # the version it updates, read in place
    for o in outputs:
        out[o] = out.get(o, 0) + 1
    return out


def _pyname(n: str) -> str:
    """A Python parameter name for the TC tensor `n` (TC allows `2LUT`; Python does not)."""
    if not n.isidentifier():
        return "t_" + n
    return n + "_" if keyword.iskeyword(n) else n
