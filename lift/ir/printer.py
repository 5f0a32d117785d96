"""Print IR in LIFT notation: `join << map(map(f)) << split(4) << x`."""

from __future__ import annotations

from lift.ir.nodes import (
    AsScalar,
    AsVector,
    At,
    FunCall,
    FunDecl,
    Gather,
    Get,
    Iterate,
    Join,
    Lambda,
    Let,
    Literal,
    MakeTuple,
    Map,
    MapGlb,
    MapLcl,
    MapSeq,
    MapWrg,
    Node,
    OclKernel,
    Pad,
    Param,
    Reduce,
    ReduceAtomic,
    ReduceSeq,
    Slide,
    Split,
    ToGlobal,
    ToLocal,
    ToPrivate,
    Transpose,
    TransposeW,
    UserFun,
    Vectorise,
    Zip,
)

_NAMES = {
    Map: "map", MapSeq: "map_seq", MapGlb: "map_glb", MapWrg: "map_wrg", MapLcl: "map_lcl",
    Reduce: "reduce", ReduceSeq: "reduce_seq", ReduceAtomic: "reduce_atomic", ToGlobal: "to_global",
    ToLocal: "to_local",
    ToPrivate: "to_private", Let: "let", OclKernel: "ocl_kernel",
}


def show(n: Node) -> str:
    """LIFT notation for any node; parameters print as their names with a short id."""
    return _Printer().show(n)


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

    def show(self, n: Node) -> str:
        match n:
            case Param():
                return self.pname(n)
            case Literal(v, t):
                name = getattr(t, "name", None)  # vector and array literals: value(0.0, [Float]4)
                return repr(v) if name in ("Float", "Int", "Bool") else f"value({v!r}, {name or t})"
            case FunCall(f, (init, xs)) if isinstance(f, (Reduce, ReduceSeq, ReduceAtomic)):
                name = _NAMES[type(f)] + (f"[{f.label}]" if f.label else "")
                return f"{name}({self.fun(f.f)}, {self.init(init)}) << {self.show(xs)}"
            case FunCall(Zip(), args):
                return "zip(" + ", ".join(self.show(a) for a in args) + ")"
            case FunCall(MakeTuple(), args):
                return "tuple(" + ", ".join(self.show(a) for a in args) + ")"
            case FunCall(f, (x,)):
                return f"{self.callee(f)} << {self.show(x)}"
            case FunCall(f, args):
                return f"{self.callee(f)}(" + ", ".join(self.show(a) for a in args) + ")"
            case Lambda(params, body):
                ps = ", ".join(self.pname(p) for p in params)
                return f"({ps}) => {self.show(body)}"
            case _:
                return self.fun(n)

    def callee(self, f: Node) -> str:
        s = self.fun(f)
        return f"({s})" if isinstance(f, Lambda) and _eta(f) is None else s

    def init(self, e: Node) -> str:
        return repr(e.value) if isinstance(e, Literal) and hasattr(e.ltype, "name") else self.show(e)

    def fun(self, f: Node) -> str:
        lab = f"[{f.label}]" if f.label else ""
        match f:
            case Lambda(params, body):
                eta = _eta(f)
                if eta is not None:
                    return self.fun(eta)
                ps = ", ".join(self.pname(p) for p in params)
                return f"({ps}) => {self.show(body)}"
            case UserFun(name=name):
                return name
            case MapGlb(g, d) | MapWrg(g, d) | MapLcl(g, d):
                return f"{_NAMES[type(f)]}{lab}({self.fun(g)}{'' if d == 0 else f', dim={d}'})"
            case Map(g) | MapSeq(g) | Reduce(g) | ReduceSeq(g) | ReduceAtomic(g) | Let(g) | OclKernel(g):
                return f"{_NAMES[type(f)]}{lab}({self.fun(g)})"
            case ToGlobal(g) | ToLocal(g) | ToPrivate(g):
                return f"{_NAMES[type(f)]}{lab}({self.fun(g)})"
            case Zip(k):
                return f"zip{k}"
            case Get(i):
                return f"get({i})"
            case At(i):
                return f"at({i})"
            case Gather():
                return f"gather{lab}"
            case Split(k):
                return f"split{lab}({k})"
            case Join():
                return "join"
            case Slide(size, step):
                return f"slide{lab}({size}, {step})"
            case Pad(left, right, v):
                return f"pad{lab}({left}, {right}, {v!r})"
            case Transpose():
                return "transpose"
            case TransposeW():
                return "transpose_w"
            case AsVector(k):
                return f"as_vector{lab}({k})"
            case AsScalar():
                return "as_scalar"
            case Vectorise(g, k):
                return f"vectorise({self.fun(g)}, {k})"
            case Iterate(k, g):
                return f"iterate({k}, {self.fun(g)})"
        if getattr(f, "transparent", False):  # a rewrite point (lift.rewrites) prints itself
            return f.point_text(self.fun(f.f))
        if isinstance(f, FunDecl):  # a pattern the printer does not know (named by the stage refusing it)
            return type(f).__name__
        return self.show(f)


def _eta(f: Lambda):
    """`g` when `f` is `(p) => g << p` or `(p) => g(get(0) << p, ..., get(k) << p)`."""
    b = f.body
    if not isinstance(b, FunCall) or _mentions_any(b.f, f.params):
        return None
    if tuple(b.args) == tuple(f.params):
        return b.f
    if len(f.params) == 1 and len(b.args) > 1:
        p = f.params[0]
        for i, a in enumerate(b.args):
            if not (isinstance(a, FunCall) and a.f == Get(i) and a.args == (p,)):
                return None
        return b.f
    return None


def _mentions_any(n: Node, params) -> bool:
    from lift.ir.paths import walk

    ids = {p.id for p in params}
    return any(isinstance(m, Param) and m.id in ids for _, m in walk(n))
