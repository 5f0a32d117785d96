"""Binding rules: introducing and inlining `let` (thesis Fig. 2.11), eta-expansion, and
splitting a program into OpenCL kernels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Let, Map, OclKernel, Param
from lift.ir.paths import Path
from lift.rules.match import PVar, call
from lift.rules.rule import REQUIRED, Rule
from lift.rules.terms import abstract, as_expr, elem, liftable, meta, substitute

e_call = PVar("e", FunCall)


def _valid(e: Expr, arg: Sequence[int] | None, top_level: bool = False) -> bool:
    return arg is None or tuple(arg) in liftable(e, top_level=top_level)


def _let_intro(e: Expr, arg: Path) -> Expr:
    f, s = abstract(e, tuple(arg))
    return FunCall(Let(f), (s,), **meta(e))


let_intro = Rule(
    "let_intro", law="e -> let(v => e[s := v]) << s   (s the sub-expression of e at `arg`)",
    lhs=e_call, params={"arg": REQUIRED},
    where=lambda e, arg: _valid(e, arg), rhs=_let_intro,
    suggest=lambda e: {"arg": liftable(e)},
    doc="Evaluates s once, before e, and binds it to v; s must not use parameters bound in e.",
)


def _one_param(f: object) -> bool:
    return isinstance(f, Lambda) and len(f.params) == 1


def _let_inline(f: Lambda, e: Expr) -> Expr:
    return as_expr(substitute(f.body, {f.params[0].id: e}))


let_inline = Rule(
    "let_inline", law="let(v => body) << e -> body[v := e]",
    lhs=call(Let(cast(Any, PVar("f", Lambda, _one_param))), PVar("e", Expr)), rhs=_let_inline,
    doc="Substitutes the bound expression for the variable (each copy with fresh binders).",
)


def _not_lambda(g: object) -> bool:
    return isinstance(g, FunDecl) and not isinstance(g, Lambda)


def _eta_expand(g: FunDecl, x: Expr, matched: FunCall) -> Expr:
    r = Param(elem(x), "elem")
    inner = Lambda((r,), FunCall(g, (r,)))
    return FunCall(Map(inner, **meta(matched.f)), (x,), **meta(matched))


eta_expand = Rule(
    "eta_expand", law="map(g) << x -> map(r => g << r) << x",
    lhs=call(Map(cast(Any, PVar("g", FunDecl, _not_lambda))), PVar("x", Expr)),
    where=lambda g: g.arity == 1, rhs=_eta_expand,
    doc="Names the element, so that rules about calls (split_join, vectorise) reach a nested map.",
)


def _kernel_intro(e: Expr, arg: Path) -> Expr:
    f, s = abstract(e, tuple(arg), "input")
    return FunCall(OclKernel(f), (s,), **meta(e))


ocl_kernel_intro = Rule(
    "ocl_kernel_intro", law="e -> ocl_kernel(v => e[s := v]) << s   (s at `arg`, outside lambdas)",
    lhs=e_call, params={"arg": REQUIRED},
    where=lambda e, arg: _valid(e, arg, top_level=True), rhs=_kernel_intro,
    suggest=lambda e: {"arg": liftable(e, top_level=True)},
    doc="Splits a program: s is computed first (by earlier kernels), then e runs as its own kernel.",
)

RULES = (let_intro, let_inline, eta_expand, ocl_kernel_intro)
