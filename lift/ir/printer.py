"""Print IR in LIFT notation: `join << map(map(f)) << split(4) << x`.

How a function prints is its family's "show" case (lift.ir.registry), registered here for the
built-in patterns: `(printer, f, lab) -> str`, `lab` the node's label as `[A]` (or empty).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

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
        if not args and f.arity == 0:  # a generated array: iota(N)
            return self.fun(f)
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
            return cast(str, rule(self, f, f"[{f.label}]" if f.label else ""))
        if isinstance(f, FunDecl):  # a pattern the printer does not know (named by the stage refusing it)
            return type(f).__name__
        return self.show(f)


# ------------------------------------------------------------ the cases (lift.ir.registry)


@register(Lambda, stage="show")
def _lambda(p: _Printer, f: Lambda, lab: str) -> str:
    eta = _eta(f)
    return p.fun(eta) if eta is not None else p.lam(f)


@register(n.MapGlb, n.MapWrg, n.MapLcl, stage="show")
def _parallel_map(p: _Printer, f: n.MapGlb | n.MapWrg | n.MapLcl, lab: str) -> str:
    return f"{_NAMES[type(f)]}{lab}({p.fun(f.f)}{'' if f.dim == 0 else f', dim={f.dim}'})"


@register(n.Map, n.MapSeq, *n.REDUCES, n.Let, *n.WRAPPERS, stage="show")
def _named(p: _Printer, f: Any, lab: str) -> str:
    """A pattern of one function: `name[label](f)`."""
    return f"{_NAMES[type(f)]}{lab}({p.fun(f.f)})"


Show = Callable[[_Printer, Any, str], str]
_TEXTS: dict[type, Show] = {  # the other patterns: their parameters in line
    n.UserFun: lambda p, f, lab: f.name,
    n.Zip: lambda p, f, lab: f"zip{f.n}",
    n.MakeTuple: lambda p, f, lab: "MakeTuple",
    n.Get: lambda p, f, lab: f"get({f.i})",
    n.At: lambda p, f, lab: f"at({f.index})",
    n.Iota: lambda p, f, lab: f"iota{lab}({f.n})",
    n.Split: lambda p, f, lab: f"split{lab}({f.n})",
    n.Slide: lambda p, f, lab: f"slide{lab}({f.size}, {f.step})",
    n.Pad: lambda p, f, lab: (f"pad{lab}({f.left}, {f.right}, {f.value!r})" if f.mode == "constant"
                              else f"pad{lab}({f.left}, {f.right}, mode={f.mode!r})"),
    n.AsVector: lambda p, f, lab: f"as_vector{lab}({f.n})",
    n.Join: lambda p, f, lab: "join",
    n.Transpose: lambda p, f, lab: "transpose",
    n.TransposeW: lambda p, f, lab: "transpose_w",
    n.AsScalar: lambda p, f, lab: "as_scalar",
    n.Vectorise: lambda p, f, lab: f"vectorise({p.fun(f.f)}, {f.n})",
    n.Iterate: lambda p, f, lab: f"iterate({f.n}, {p.fun(f.f)})",
}
for _cls, _text in _TEXTS.items():
    register(_cls, stage="show")(_text)


@register(RewritePoint, stage="show")
def _point(p: _Printer, f: Any, lab: str) -> str:
    """A rewrite point (lift.rewrites) prints itself."""
    return cast(str, f.point_text(p.fun(f.f)))


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
