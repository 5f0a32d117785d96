"""The user-function translator's state and helpers: emitting C and numpy lines, temporaries, type
conversions and constants, and the closed-world `generic_visit` that rejects every other construct."""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, NoReturn

from lift.errors import SourceLoc, UserFunError
from lift.types import Bool, Float, Int, ScalarType, TupleType, Type, VectorType
from lift.userfun import numpy_impl as npi
from lift.userfun.ctypes import INT_MAX, INT_MIN, c_literal, c_type, is_c_identifier
from lift.userfun.source import Source
from lift.userfun.values import ATOM, POSTFIX, RANK, UNARY, Val, adopt, join_types, numeric, scalar, wrap

_UNSUPPORTED = {
    "AsyncFor": "async for loops", "Break": "break statements",
    "Continue": "continue statements", "List": "lists", "Dict": "dicts", "Set": "sets",
    "ListComp": "list comprehensions", "DictComp": "dict comprehensions", "SetComp": "set comprehensions",
    "GeneratorExp": "generator expressions", "Lambda": "lambdas inside user functions",
    "NamedExpr": "assignment expressions (:=)", "Import": "imports", "ImportFrom": "imports",
    "Global": "global statements", "Nonlocal": "nonlocal statements", "Try": "try statements",
    "With": "with statements", "Raise": "raise statements", "Assert": "assert statements",
    "Delete": "del statements", "FunctionDef": "nested function definitions", "ClassDef": "class definitions",
    "JoinedStr": "f-strings", "Yield": "yield expressions", "YieldFrom": "yield expressions",
    "Await": "await expressions", "Starred": "starred expressions", "Slice": "slices",
    "Match": "match statements", "AnnAssign": "annotated assignments",
}


class Retype(Exception):  # noqa: N818 - control flow inside translate(), never escapes
    """A local (or the result) needs a wider type than its first assignment gave it: retranslate."""

    def __init__(self, key: str, t: Type, line: int | None = None) -> None:
        super().__init__(key)
        self.key, self.t, self.line = key, t, line


class Emitter(ast.NodeVisitor):
    """Translates one function body: the state and helpers the expression and statement visitors share."""

    def __init__(self, src: Source, in_types: tuple[Type, ...], out_type: Type | None, name: str,
                 overrides: Mapping[str, Type]) -> None:
        self.src, self.in_types, self.out_type, self.name = src, in_types, out_type, name
        self.overrides = overrides
        self.locals = set(src.params) | assigned_names(src.body)
        names = {n.id for s in src.body for n in ast.walk(s) if isinstance(n, ast.Name)}
        self.taken = names | set(src.params)
        self.cname = self._c_names()
        self.types: dict[str, Type] = dict(zip(src.params, in_types))
        self.declared = set(src.params)
        self.assigned: set[str] | None = set(src.params)   # None: this path has returned
        self.ret_type: Type | None = out_type
        self.lines: list[str] = []
        self.depth, self.hoist, self.decl_at, self.counter, self.c_counter = 0, True, 0, 0, 0
        self.used: list[Type] = []
        self.np_ok = True
        self.np_lines: list[str] = []
        self.np_env = {p: f"a_{p}" for p in src.params}
        self.np_mask: str | None = None
        self.np_rets: list[tuple[str | None, str]] = []
        self.np_indent = 0
        self.loop_ranges: dict[str, tuple[int, int]] = {}  # enclosing loops' variables and their bounds
        self.deps: list[Any] = []                          # the user functions it calls
        self.captured: dict[str, Any] = {}                 # the numbers it read from outside, by name
        self.dep_cache: dict[tuple[int, tuple[Type, ...]], Any] = {}
        self.trig_pairs = {self.cname[x] for x in _trig_pairs(src.body) if x in self.cname}
        self.sincos: dict[str, tuple[Val, Val]] = {}       # (sin, cos) of a variable, by its C name

    def _c_names(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for n in sorted(self.locals):
            c, k = n, 0
            while not is_c_identifier(c) or c in self.taken - {n} or c in out.values():
                c, k = f"v{k}_{n}" if n.isascii() else f"v{k}", k + 1
            out[n] = c
        return out

    def err(self, node: ast.AST | None, message: str, **kw: Any) -> NoReturn:
        line = getattr(node, "lineno", None) or self.src.node.lineno
        raise UserFunError(message, loc=SourceLoc(self.src.file, line, self.src.fn.__code__.co_name), **kw)

    def generic_visit(self, node: ast.AST) -> NoReturn:
        kind = type(node).__name__
        what = _UNSUPPORTED.get(kind, f"{kind} nodes")
        self.err(node, f"{what} are not supported in user functions",
                 hint="user functions support arithmetic, comparisons, if/else, for loops over range, "
                      "local variables, tuples, math functions and calls to other user functions")

    def _line_of(self, node: ast.AST) -> int:
        return getattr(node, "lineno", self.src.node.lineno)

    # ------------------------------------------------------------ emission helpers

    def _line(self, text: str) -> None:
        self.lines.append("  " * (self.depth + 1) + text)

    def _np(self, value: str, prefix: str = "t") -> str:
        name, self.counter = f"{prefix}{self.counter}", self.counter + 1
        self.np_lines.append("    " * self.np_indent + f"{name} = {value}")
        return name

    @contextmanager
    def _no_hoist(self) -> Iterator[None]:
        saved, self.hoist = self.hoist, False
        try:
            yield
        finally:
            self.hoist = saved

    def _c_temp(self) -> str:
        while True:
            name, self.c_counter = f"_t{self.c_counter}", self.c_counter + 1
            if name not in self.taken:
                return name

    def _temp(self, v: Val) -> Val:
        """`v` in a fresh C local (and numpy name)."""
        name = self._c_temp()
        self.used.append(v.t)
        self._line(f"{c_type(v.t)} {name} = {v.c};")
        return Val(name, v.t, self._np(v.np))

    def _atomic(self, v: Val) -> Val:
        """`v` as a name or literal (hoisted when allowed), so that it can be repeated in C text."""
        if v.py is not None or re.fullmatch(r"[A-Za-z_][\w.]*", v.c):
            return v
        return self._temp(v) if self.hoist else replace(v, c=wrap(v, ATOM), prec=ATOM)

    def _materialise(self, v: Val, node: ast.AST) -> Val:
        """A tuple literal as a struct local; other values unchanged."""
        if v.elems is None:
            return v
        if not self.hoist:
            self.err(node, "tuple construction inside a conditional expression is not supported",
                     hint="build the tuple in an if statement instead")
        name = self._c_temp()
        self.used.append(v.t)
        self._line(f"{c_type(v.t)} {name};")
        self._fill(name, v)
        return Val(name, v.t, self._np(v.np))

    def _fill(self, target: str, v: Val) -> None:
        for i, e in enumerate(v.elems or ()):
            if e.elems is not None:
                self._fill(f"{target}._{i}", e)
            else:
                self._line(f"{target}._{i} = {e.c};")

    # ------------------------------------------------------------ types and conversions

    def _join(self, a: Val, b: Val) -> Type | None:
        if a.weak and b.weak:
            return Float if Float in (a.t, b.t) else Int
        if a.weak:
            a, b = b, a
        return self._join_to(a.t, b)

    def _join_to(self, t: Type, v: Val) -> Type | None:
        if v.elems is not None:
            if not isinstance(t, TupleType) or len(t.elems) != len(v.elems):
                return None
            parts = [self._join_to(te, e) for te, e in zip(t.elems, v.elems)]
            joined = [p for p in parts if p is not None]
            return TupleType(tuple(joined)) if len(joined) == len(parts) else None
        if v.weak:
            return adopt(t, v.t)
        return t if isinstance(t, TupleType) and t == v.t else join_types(t, v.t)

    def _fits(self, t: Type, v: Val) -> bool:
        """Whether `v` is of type `t`, a literal being allowed to take `t`."""
        if v.elems is not None:
            return isinstance(t, TupleType) and len(t.elems) == len(v.elems) and all(
                self._fits(te, e) for te, e in zip(t.elems, v.elems))
        return adopt(t, v.t) == t if v.weak else v.t == t

    def _strong(self, v: Val) -> Val:
        if not v.weak:
            return v
        assert isinstance(v.t, ScalarType), v.t  # a weak value is a Python literal
        return v.weak(v.t)

    def _coerce(self, v: Val, t: Type, node: ast.AST) -> Val:
        """`v` converted to type `t` (literal typing, numeric promotion, scalar splat)."""
        if v.elems is not None:
            assert isinstance(t, TupleType)
            elems = tuple(self._coerce(e, et, node) for e, et in zip(v.elems, t.elems))
            return replace(v, t=t, elems=elems, np="(" + "".join(e.np + ", " for e in elems) + ")")
        if v.weak:
            v = v.weak(scalar(t))
        if v.t == t:
            return v
        if numeric(v.t) and numeric(t) and RANK[v.t.name] <= RANK[t.name]:
            return Val(f"({t.c_name}){wrap(v, UNARY)}", t, npi.np_cast(v.np, t), UNARY)
        if isinstance(t, VectorType) and isinstance(v.t, VectorType) and join_types(t, v.t) == t:
            # lanes of another scalar type: OpenCL converts vectors with convert_T (a cast is an error)
            return Val(f"convert_{t.c_name}({v.c})", t, npi.np_cast(v.np, t.scalar), POSTFIX)
        if isinstance(t, VectorType) and join_types(t, v.t) == t:
            s = self._coerce(v, t.scalar, node)
            return Val(f"({t.c_name})({s.c})", t, f"_np.asarray({s.np})[..., None]", POSTFIX)
        self.err(node, f"cannot convert a value of type {v.t} to {t}", expected=t, got=v.t)

    def _elementwise(self, v: Val, t: Type, node: ast.AST) -> Val:
        """An operand of an element-wise operation of type `t` (a scalar stays scalar next to a vector)."""
        if isinstance(t, VectorType) and not isinstance(self._strong(v).t, VectorType):
            s = self._coerce(v, t.scalar, node)
            return replace(s, np=f"_np.asarray({s.np})[..., None]") if s.py is None else s
        return self._coerce(v, t, node)

    def _const(self, value: Any, node: ast.AST) -> Val:
        """A Python constant: Bool, or a weak Int or Float that takes the type of its context."""
        if isinstance(value, bool):
            return self._typed_const(value, Bool, node)
        weak: Callable[[ScalarType], Val] = lambda t: self._typed_const(value, t, node)  # noqa: E731
        if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
            return Val("", Int, "", py=value, weak=weak)  # fine as a Float; an error as an Int
        kind = Int if isinstance(value, int) else Float
        return replace(self._typed_const(value, kind, node), py=value, weak=weak)

    def _typed_const(self, value: Any, t: ScalarType, node: ast.AST) -> Val:
        if t == Int and not isinstance(value, int):
            self.err(node, f"the float {value!r} is used where an Int is needed", expected=Int, got=Float)
        try:
            text = c_literal(value, t)
        except OverflowError as e:
            self.err(node, f"constant {value!r}: {e}")
        prec = UNARY if text[0] == "-" else ATOM
        return Val(text, t, npi.np_literal(value, t), prec, py=value)

    def _fold(self, fn: Callable[..., Any], args: Sequence[Any], node: ast.AST) -> Val:
        try:
            value = fn(*args)
        except (ArithmeticError, ValueError) as e:
            self.err(node, f"evaluating this constant expression fails in Python: {e}")
        if not isinstance(value, (bool, int, float)):
            self.err(node, f"this constant expression gives a {type(value).__name__}")
        return self._const(value, node)

    # ------------------------------------------------------------ shared by the visitors

    def _condition(self, node: ast.expr) -> Val:
        v = self._strong(self.expr(node))
        if v.t != Bool:
            self.err(node, f"a condition must be a Bool, not {v.t}", expected=Bool, got=v.t,
                     hint="compare explicitly (x != 0) or use bool(x)")
        return v

    def expr(self, node: ast.expr) -> Val:
        v = self.visit(node)
        assert isinstance(v, Val)
        return v

    def _is_math(self, node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and node.id not in self.locals
                and self.src.env.get(node.id) is math)

    def _call(self, c_name: str, np_name: str | None, args: Sequence[Val], t: Type, node: ast.AST,
              out: Type | None = None) -> Val:
        xs = [self._coerce(a, t, node) for a in args]
        if np_name is None:
            self.np_ok = False
        np_text = f"_np.{np_name}({', '.join(x.np for x in xs)})"
        return Val(f"{c_name}({', '.join(x.c for x in xs)})", out or t, np_text, POSTFIX)


def _trig_pairs(body: Sequence[ast.stmt]) -> set[str]:
    """The variables whose sine and cosine the function body both takes (`math.sin(a)`, `cos(a)`)
    in its top-level statements (not inside an if or a loop)."""
    seen: dict[str, set[str]] = {"sin": set(), "cos": set()}
    for stmt in body:
        if isinstance(stmt, ast.If | ast.For | ast.While):
            continue
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call) and len(n.args) == 1 and isinstance(n.args[0], ast.Name):
                f = n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id if isinstance(n.func, ast.Name) \
                    else None
                if f in seen:
                    seen[f].add(n.args[0].id)
    return seen["sin"] & seen["cos"]


def assigned_names(body: Sequence[ast.stmt]) -> set[str]:
    """The names a function body assigns to (its locals)."""
    out: set[str] = set()
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out
