"""Print IR in LIFT notation: `join << map(map(f)) << split(4) << x`.

How a function prints is its family's "show" case (lift.ir.registry), registered here for the
built-in patterns: `(printer, f, lab) -> str`, `lab` the node's label as `[A]` (or empty).
"""

from __future__ import annotations

from typing import Any

from lift.ir import nodes as n
from lift.ir.nodes import FunCall, FunDecl, Lambda, Literal, Node, Param
from lift.ir.paths import walk
from lift.ir.registry import RewritePoint, case, register

_NAMES = {
    n.Map: "map", n.MapSeq: "map_seq", n.MapGlb: "map_glb", n.MapWrg: "map_wrg", n.MapLcl: "map_lcl",
    n.Reduce: "reduce", n.ReduceSeq: "reduce_seq", n.ReduceAtomic: "reduce_atomic", n.ToGlobal: "to_global",
    n.ToLocal: "to_local", n.ToPrivate: "to_private", n.Let: "let", n.OclKernel: "ocl_kernel",
}


def show(e: Node) -> str:
    """LIFT notation for any node; parameters print as their names with a short id."""
    return _Printer().show(e)


class _Printer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.used: set[str] = set()

    def pname(self, p: Param) -> str:
        if p.id not in self.names:
            name, k = p.name, 1
            while name in self.used:
                k += 1
                name = f"{p.name}{k}"
            self.used.add(name)
            self.names[p.id] = name
        return self.names[p.id]

    def show(self, e: Node) -> str:
        if isinstance(e, FunCall):
            return self.call(e)
        if isinstance(e, Param):
            return self.pname(e)
        if isinstance(e, Literal):
            name = getattr(e.ltype, "name", None)  # vector and array literals: value(0.0, [Float]4)
            return repr(e.value) if name in ("Float", "Int", "Bool") else f"value({e.value!r}, {name or e.ltype})"
        if isinstance(e, Lambda):  # a program prints whole (a function inside prints eta-reduced)
            return self.lam(e)
        return self.fun(e)

    def lam(self, f: Lambda) -> str:
        return f"({', '.join(self.pname(q) for q in f.params)}) => {self.show(f.body)}"

    def call(self, e: FunCall) -> str:
        f, args = e.f, e.args
        if isinstance(f, n.AbstractReduce) and len(args) == 2:
            name = _NAMES[type(f)] + (f"[{f.label}]" if f.label else "")
            return f"{name}({self.fun(f.f)}, {self.init(args[0])}) << {self.show(args[1])}"
        if isinstance(f, n.Zip | n.MakeTuple):
            return ("zip(" if isinstance(f, n.Zip) else "tuple(") + ", ".join(self.show(a) for a in args) + ")"
        if len(args) == 1:
            return f"{self.callee(f)} << {self.show(args[0])}"
        return f"{self.callee(f)}(" + ", ".join(self.show(a) for a in args) + ")"

    def callee(self, f: Node) -> str:
        s = self.fun(f)
        return f"({s})" if isinstance(f, Lambda) and _eta(f) is None else s

    def init(self, e: Node) -> str:
        return repr(e.value) if isinstance(e, Literal) and hasattr(e.ltype, "name") else self.show(e)

    def fun(self, f: Node) -> str:
        rule = case("show", f)
        if rule is not None:
            return rule(self, f, f"[{f.label}]" if f.label else "")
        if isinstance(f, FunDecl):  # a pattern the printer does not know (named by the stage refusing it)
            return type(f).__name__
        return self.show(f)


# ------------------------------------------------------------ the cases (lift.ir.registry)


@register(Lambda, stage="show")
def _lambda(p: _Printer, f: Lambda, lab: str) -> str:
    eta = _eta(f)
    return p.fun(eta) if eta is not None else p.lam(f)


@register(n.UserFun, stage="show")
def _userfun(p: _Printer, f: n.UserFun, lab: str) -> str:
    return f.name


@register(n.MapGlb, n.MapWrg, n.MapLcl, stage="show")
def _parallel_map(p: _Printer, f: n.MapGlb | n.MapWrg | n.MapLcl, lab: str) -> str:
    return f"{_NAMES[type(f)]}{lab}({p.fun(f.f)}{'' if f.dim == 0 else f', dim={f.dim}'})"


@register(n.Map, n.MapSeq, *n.REDUCES, n.Let, *n.WRAPPERS, stage="show")
def _named(p: _Printer, f: Any, lab: str) -> str:
    """A pattern of one function: `name[label](f)`."""
    return f"{_NAMES[type(f)]}{lab}({p.fun(f.f)})"


@register(n.Zip, stage="show")
def _zip(p: _Printer, f: n.Zip, lab: str) -> str:
    return f"zip{f.n}"


@register(n.MakeTuple, stage="show")
def _tuple(p: _Printer, f: n.MakeTuple, lab: str) -> str:
    return "MakeTuple"


@register(n.Get, stage="show")
def _get(p: _Printer, f: n.Get, lab: str) -> str:
    return f"get({f.i})"


@register(n.At, stage="show")
def _at(p: _Printer, f: n.At, lab: str) -> str:
    return f"at({f.index})"


@register(n.Split, stage="show")
def _split(p: _Printer, f: n.Split, lab: str) -> str:
    return f"split{lab}({f.n})"


@register(n.Slide, stage="show")
def _slide(p: _Printer, f: n.Slide, lab: str) -> str:
    return f"slide{lab}({f.size}, {f.step})"


@register(n.Pad, stage="show")
def _pad(p: _Printer, f: n.Pad, lab: str) -> str:
    return f"pad{lab}({f.left}, {f.right}, {f.value!r})"


@register(n.AsVector, stage="show")
def _as_vector(p: _Printer, f: n.AsVector, lab: str) -> str:
    return f"as_vector{lab}({f.n})"


@register(n.Join, n.Transpose, n.TransposeW, n.AsScalar, stage="show")
def _bare(p: _Printer, f: FunDecl, lab: str) -> str:
    """A pattern without parameters, used bare: `join`, `transpose`, `transpose_w`, `as_scalar`."""
    return {n.Join: "join", n.Transpose: "transpose", n.TransposeW: "transpose_w", n.AsScalar: "as_scalar"}[type(f)]


@register(n.Vectorise, stage="show")
def _vectorise(p: _Printer, f: n.Vectorise, lab: str) -> str:
    return f"vectorise({p.fun(f.f)}, {f.n})"


@register(n.Iterate, stage="show")
def _iterate(p: _Printer, f: n.Iterate, lab: str) -> str:
    return f"iterate({f.n}, {p.fun(f.f)})"


@register(RewritePoint, stage="show")
def _point(p: _Printer, f: Any, lab: str) -> str:
    """A rewrite point (lift.rewrites) prints itself."""
    return f.point_text(p.fun(f.f))


def _eta(f: Lambda) -> FunDecl | None:
    """`g` when `f` is `(p) => g << p` or `(p) => g(get(0) << p, ..., get(k) << p)`."""
    b = f.body
    if not isinstance(b, FunCall) or _mentions_any(b.f, f.params):
        return None
    if tuple(b.args) == tuple(f.params):
        return b.f
    if len(f.params) == 1 and len(b.args) > 1:
        p = f.params[0]
        for i, a in enumerate(b.args):
            if not (isinstance(a, FunCall) and a.f == n.Get(i) and a.args == (p,)):
                return None
        return b.f
    return None


def _mentions_any(e: Node, params: tuple[Param, ...]) -> bool:
    ids = {p.id for p in params}
    return any(isinstance(m, Param) and m.id in ids for _, m in walk(e))
