"""C names for a program: fresh identifiers and one definition per user function (and per width
of a vectorised one, or of a vectorised lambda: a C function over vector types), mangled when
names repeat."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

from lift.arith.cnames import OPENCL_FUNCTIONS, OPENCL_NAMES
from lift.errors import UnsupportedError
from lift.ir import nodes as n
from lift.ir.nodes import FunDecl
from lift.ir.paths import lambda_of
from lift.types import ScalarType, TupleType, Type, VectorType
from lift.userfun.ctypes import C_RESERVED, c_literal, c_type


class Names:
    """Fresh C identifiers, never a reserved word, a user-function name or a size variable."""

    def __init__(self, reserved: set[str]) -> None:
        self.reserved = C_RESERVED | OPENCL_FUNCTIONS | OPENCL_NAMES  # what C or OpenCL C already names
        self.taken = set(reserved) | self.reserved

    def __call__(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"  # ASCII: a label may be any text
        if base[0].isdigit() or base.startswith("__"):
            base = "v_" + base.lstrip("_")
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def reserve(self, names: Iterable[str]) -> None:
        """Never hand out `names` (the component memories of a struct of arrays, `lift.types.memory_names`)."""
        self.taken.update(names)


class Funs:
    """User functions by C name: one definition per (name, types), mangled when names repeat."""

    def __init__(self, names: Names, avoid: frozenset[str] = frozenset()) -> None:
        self.names = names
        self.avoid = avoid  # names a user function keeps only renamed: the size parameters
        self.by_key: dict[tuple, str] = {}
        self.sources: list[str] = []
        self.used: set[str] = set()

    def __call__(self, f: FunDecl) -> str:
        if isinstance(f, n.Vectorise):
            return self.vectorised(f)
        assert isinstance(f, n.UserFun), f
        key = (f.name, f.c_source, f.deps)
        if key not in self.by_key:
            source = f.c_source
            for d in f.deps:  # the functions it calls, defined (once) before it
                dname = self(d)
                if dname != d.name:
                    source = re.sub(rf"\b{re.escape(d.name)}\s*\(", f"{dname}(", source)
            first = f.name not in self.used and f.name not in self.names.reserved | self.avoid
            cname = f.name if first else self.names(f.name)
            self.used.add(f.name)
            self.by_key[key] = cname
            self.sources.append(_rename(source, f.name, cname))
        return self.by_key[key]

    def vectorised(self, v: n.Vectorise) -> str:
        g = v.f
        if isinstance(g, n.Lambda):
            return self.vector_lambda(g, v)
        if not isinstance(g, n.UserFun):
            raise UnsupportedError(f"vectorise supports a user function or a lambda, not {g}", node=v)
        key = ("vec", g.name, g.c_source, v.n)
        if key not in self.by_key:
            cname = self.names(f"{g.name}_v{v.n}")
            self.by_key[key] = cname
            src, deps = _vector_source(g, v.n, cname)
            for d in deps:  # the functions it calls, at vector types: defined before it
                dname = self(d)
                if dname != d.name:
                    src = re.sub(rf"\b{re.escape(d.name)}\s*\(", f"{dname}(", src)
            self.sources.append(src)
        return self.by_key[key]


    def vector_lambda(self, g: n.Lambda, v: n.Vectorise) -> str:
        """A C function for `vectorise((a, b) => body, n)`: the body over `floatN` lanes, each
        user-function call the vectorised version of that function (scalars widened)."""
        key = ("veclam", g, v.n)
        if key not in self.by_key:
            cname = self.names(f"{v.label or 'lambda'}_v{v.n}")
            names = {p.id: self.names(p.name or "a") for p in g.params}
            params = ", ".join(f"{_vec_c(p.ptype, v.n)} {names[p.id]}" for p in g.params)
            lines: list[str] = []
            body = self.lane_expr(g.body, names, v, lines)
            stmts = "".join(f"    {x}\n" for x in [*lines, f"return {body};"])
            self.sources.append(f"{_vec_c(g.body.type, v.n)} {cname}({params}) {{\n{stmts}}}\n")
            self.by_key[key] = cname
        return self.by_key[key]

    def lane_expr(self, e: n.Expr, names: dict[int, str], v: n.Vectorise, lines: list[str]) -> str:
        """The C of a vectorised lambda's body: parameters, scalar literals (broadcast), calls, and
        lambdas or lets applied to values (bound to local variables declared in `lines`)."""
        match e:
            case n.Param() if e.id in names:
                return names[e.id]
            case n.Literal(value, t) if isinstance(t, ScalarType):
                return f"(({_vec_c(t, v.n)})({c_literal(value, t)}))"
            case n.FunCall(n.UserFun() as f, args):
                fname = self.vectorised(n.Vectorise(f, v.n))
                return f"{fname}({', '.join(self.lane_expr(a, names, v, lines) for a in args)})"
            case n.FunCall(f, args) if (lam := lambda_of(f)) is not None:  # a lambda, or a let's
                inner = {**names}
                for p, a in zip(lam.params, args):
                    inner[p.id] = self.names(p.name or "t")
                    lines.append(f"{_vec_c(p.ptype, v.n)} {inner[p.id]} = {self.lane_expr(a, names, v, lines)};")
                return self.lane_expr(lam.body, inner, v, lines)
        raise UnsupportedError(f"vectorise of a lambda supports user-function calls on the lanes, "
                               f"parameters and scalar literals, not {e}", node=v)


def _vec_c(t: Type, width: int) -> str:
    if not isinstance(t, ScalarType):
        raise UnsupportedError(f"vectorise needs scalar lanes, got {t}")
    return c_type(VectorType(t, width))


def _rename(src: str, old: str, new: str) -> str:
    if old == new:
        return src
    return re.sub(rf"\b{re.escape(old)}\s*\(", f"{new}(", src, count=1)


def _widened(t: Type, width: int) -> Type:
    """A scalar as a vector of `width` lanes, a tuple of scalars as a tuple of such vectors."""
    if isinstance(t, ScalarType):
        return VectorType(t, width)
    scalars = [e for e in t.elems if isinstance(e, ScalarType)] if isinstance(t, TupleType) else []
    if isinstance(t, TupleType) and len(scalars) == len(t.elems):
        return TupleType(tuple(VectorType(e, width) for e in scalars))
    return t


def _vector_source(g: n.UserFun, width: int, cname: str) -> tuple[str, tuple[n.UserFun, ...]]:
    """The C of `g` over vectors: re-translated from Python, else its scalar types widened."""
    vt = tuple(_widened(t, width) for t in g.in_types)
    out = _widened(g.out_type, width)
    if g.py_fn is not None and not getattr(g.py_fn, "__liftcl_raw_c__", False):
        try:
            translate = sys.modules["lift.userfun.translate"].translate
            tr = translate(g.py_fn, vt, name=cname, out_type=out)
            return tr.c_source, tr.deps
        except Exception:  # noqa: BLE001 - fall back to widening the scalar source
            pass
    src = _rename(g.c_source, g.name, cname)
    for t in {t for t in (*g.in_types, g.out_type) if isinstance(t, TupleType)}:
        # a tuple of scalars is a tuple of vectors (its struct's name names its types)
        src = re.sub(rf"\b{re.escape(c_type(t))}\b", c_type(_widened(t, width)), src)
    for s in {t for t in (*g.in_types, g.out_type) if isinstance(t, ScalarType)}:
        src = re.sub(rf"\b{s.c_name}\b", f"{s.c_name}{width}", src)
    return src, ()


__all__ = ["Names", "Funs"]
