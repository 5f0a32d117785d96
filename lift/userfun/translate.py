"""Python user functions to OpenCL C (and to numpy), from their `ast`; a closed world.

    translate(lambda acc, x: acc + x, [Float, Float], name="add").c_source
    == "float add(float acc, float x) {\n  return acc + x;\n}\n"

Every construct the translator does not know is a `UserFunError` naming it and the user's line.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import math
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

import numpy as np

from lift.errors import SourceLoc, UserFunError, user_loc
from lift.types import Bool, Double, Float, Int, ScalarType, TupleType, Type, VectorType
from lift.userfun import numpy_impl as npi
from lift.userfun.ctypes import (
    C_MATH,
    INT_MAX,
    INT_MIN,
    c_floor_op,
    c_literal,
    c_type,
    is_c_identifier,
    struct_decl,
    tuple_types,
)

__all__ = ["Translation", "translate", "translate_c", "c_type", "struct_decl", "infer_out_type"]

# C precedence levels (higher binds tighter).
TERNARY, OR, AND, EQ, REL, ADD, MUL, UNARY, POSTFIX, ATOM = 3, 4, 5, 9, 10, 12, 13, 14, 15, 16
_RANK = {"Int": 1, "Float": 2, "Double": 3}
_ARITH = {ast.Add: ("+", ADD), ast.Sub: ("-", ADD), ast.Mult: ("*", MUL), ast.Div: ("/", MUL)}
_PYOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_CMP = {ast.Lt: ("<", REL), ast.LtE: ("<=", REL), ast.Gt: (">", REL), ast.GtE: (">=", REL),
        ast.Eq: ("==", EQ), ast.NotEq: ("!=", EQ)}
_MATH_CONSTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan}
_SWIZZLE = {"x": 0, "y": 1, "z": 2, "w": 3}
_UNSUPPORTED = {
    "While": "while loops", "For": "for loops", "AsyncFor": "for loops", "Break": "break statements",
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
_RET = "<return>"


@dataclass(frozen=True)
class Translation:
    """A user function as OpenCL C: `c_source` defines `name`; `np_fn` is its numpy version (or None)."""

    name: str
    params: tuple[str, ...]
    in_types: tuple[Type, ...]
    out_type: Type
    c_source: str
    structs: tuple[TupleType, ...]
    np_fn: Callable[..., Any] | None = field(compare=False)


@dataclass(frozen=True)
class Val:
    """A translated expression: C text and precedence, numpy text, type; weak for Python literals."""

    c: str
    t: Type
    np: str
    prec: int = ATOM
    py: Any = None                                   # the value of a constant
    weak: Callable[[ScalarType], Val] | None = None  # the value at another scalar type (literals)
    elems: tuple[Val, ...] | None = None             # an unmaterialised tuple literal


@dataclass(frozen=True)
class _Source:
    """A user function's AST and the environment its free names resolve in."""

    fn: Callable[..., Any]
    node: ast.FunctionDef | ast.Lambda
    file: str
    params: tuple[str, ...]
    body: tuple[ast.stmt, ...]
    env: Mapping[str, Any]


class _Retype(Exception):  # noqa: N818 - control flow inside translate(), never escapes
    """A local (or the result) needs a wider type than its first assignment gave it: retranslate."""

    def __init__(self, key: str, t: Type) -> None:
        super().__init__(key)
        self.key, self.t = key, t


def translate(fn: Callable[..., Any], in_types: Sequence[Type], *, name: str,
              out_type: Type | None = None) -> Translation:
    """Translate the Python function or lambda `fn` over `in_types` into the C function `name`."""
    src = _source_of(fn)
    _check_signature(src, in_types, name, out_type)
    overrides: dict[str, Type] = {}
    for _ in range(64):
        try:
            return _Translator(src, tuple(in_types), out_type, name, overrides).run()
        except _Retype as r:
            overrides[r.key] = r.t
    raise AssertionError("user function type inference did not converge")  # pragma: no cover


def infer_out_type(fn: Callable[..., Any], in_types: Sequence[Type]) -> Type:
    """The result type of `fn` applied to `in_types`."""
    return translate(fn, in_types, name="user_fun").out_type


def translate_c(name: str, params: Sequence[str], body_c: str, in_types: Sequence[Type],
                out_type: Type) -> Translation:
    """A user function given as a raw OpenCL C body (`return a + b;`, or just an expression)."""
    loc = user_loc()
    for ident in (name, *params):
        if not is_c_identifier(ident):
            raise UserFunError(f"'{ident}' is not a usable C identifier (reserved or malformed)", loc=loc)
    if len(params) != len(in_types):
        raise UserFunError(f"user function '{name}' has {len(params)} parameters but {len(in_types)} "
                           "input types", loc=loc, expected=len(params), got=len(in_types))
    body = inspect.cleandoc(body_c)
    if ";" not in body and "return" not in body:
        body = f"return {body};"
    args = ", ".join(f"{c_type(t)} {p}" for p, t in zip(params, in_types))
    lines = "".join(f"  {line}\n" if line else "\n" for line in body.splitlines())
    source = f"{c_type(out_type)} {name}({args}) {{\n{lines}}}\n"
    return Translation(name, tuple(params), tuple(in_types), out_type, source,
                       tuple_types([*in_types, out_type]), None)


# ---------------------------------------------------------------- finding the source


def _source_of(fn: Callable[..., Any]) -> _Source:
    """The AST of `fn` (a def or a lambda, found in its file) and its free-name environment."""
    code = getattr(fn, "__code__", None)
    if code is None or not inspect.isfunction(fn):
        raise UserFunError(f"user functions must be Python functions or lambdas, not {type(fn).__name__}",
                           hint="write the body in OpenCL C with user_fun.c(...)")
    loc = SourceLoc(code.co_filename, code.co_firstlineno, code.co_name)
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    try:
        tree = ast.parse("".join(lines)) if lines else None
    except SyntaxError:
        tree = None
    node = _find_node(tree, code) if tree is not None else None
    if node is None:
        raise UserFunError(f"the source of user function '{code.co_name}' is not available (defined in exec, "
                           "eval or an interactive prompt?)", loc=loc,
                           hint="define it in a file, or write the body in OpenCL C with user_fun.c(...)")
    env = dict(vars(builtins))
    env.update(fn.__globals__)
    for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            env[var] = cell.cell_contents
        except ValueError:  # an empty cell
            env.pop(var, None)
    args = node.args
    params = tuple(a.arg for a in args.posonlyargs + args.args)
    if isinstance(node, ast.Lambda):
        body: tuple[ast.stmt, ...] = (ast.copy_location(ast.Return(value=node.body), node.body),)
    else:
        body = tuple(node.body)
    return _Source(fn, node, code.co_filename, params, body, env)


def _find_node(tree: ast.AST, code: Any) -> ast.FunctionDef | ast.Lambda | None:
    """The def or lambda in `tree` that compiled to `code` (several lambdas on a line: by column)."""
    first = code.co_firstlineno
    if code.co_name != "<lambda>":
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef) and n.name == code.co_name:
                if min([n.lineno] + [d.lineno for d in n.decorator_list]) == first:
                    return n
        return None
    names = code.co_varnames[: code.co_argcount]
    cands = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == first
             and tuple(a.arg for a in n.args.posonlyargs + n.args.args) == names]
    spots = [(p[0], p[2], p[1], p[3]) for p in code.co_positions()
             if None not in p and (p[0], p[2]) != (p[1], p[3])]

    def inside(n: ast.Lambda) -> bool:
        b = n.body
        lo, hi = (b.lineno, b.col_offset), (b.end_lineno, b.end_col_offset)
        return all(lo <= (l0, c0) and (l1, c1) <= hi for l0, c0, l1, c1 in spots)

    fits = [n for n in cands if inside(n)]
    fits.sort(key=lambda n: (n.body.end_lineno or 0, n.body.end_col_offset or 0))  # innermost first
    return fits[0] if fits else (cands[0] if len(cands) == 1 else None)


def _check_signature(src: _Source, in_types: Sequence[Type], name: str, out_type: Type | None) -> None:
    node, code = src.node, src.fn.__code__
    loc = SourceLoc(src.file, node.lineno, code.co_name)
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        raise UserFunError("user functions take positional parameters only (no *args, **kwargs or "
                           "keyword-only parameters)", loc=loc)
    if len(src.params) != len(in_types):
        raise UserFunError(f"user function '{code.co_name}' has {len(src.params)} parameters but "
                           f"{len(in_types)} input types were given", loc=loc,
                           expected=len(src.params), got=len(in_types))
    if not is_c_identifier(name):
        raise UserFunError(f"'{name}' is not a usable C function name", loc=loc)
    for t in [*in_types] + ([out_type] if out_type is not None else []):
        if not isinstance(t, (ScalarType, VectorType, TupleType)):
            raise UserFunError(f"user functions take and return scalars, vectors and tuples, not {t}",
                               loc=loc)


# ---------------------------------------------------------------- typing rules


def _numeric(t: Type) -> bool:
    return isinstance(t, ScalarType) and t.name in _RANK


def _join_types(a: Type, b: Type) -> Type | None:
    """The common type of two (strong) types: numeric promotion, scalar-to-vector widening."""
    if a == b:
        return a
    if _numeric(a) and _numeric(b):
        return a if _RANK[a.name] >= _RANK[b.name] else b  # type: ignore[attr-defined]
    for v, s in ((a, b), (b, a)):
        if isinstance(v, VectorType) and _numeric(s) and _RANK[s.name] <= _RANK.get(v.scalar.name, 0):  # type: ignore[attr-defined]
            return v
    return None


def _adopt(t: Type, kind: Type) -> Type | None:
    """The type a Python literal of `kind` (Int or Float) takes next to a value of type `t`."""
    s = t.scalar if isinstance(t, VectorType) else t
    if not _numeric(s):
        return None
    if kind == Float and s == Int:
        return Float if isinstance(t, ScalarType) else None
    return t


def _default(v: Val) -> Type:
    if v.elems is not None:
        return TupleType(tuple(_default(e) for e in v.elems))
    return v.t


def _scalar(t: Type) -> ScalarType:
    return t.scalar if isinstance(t, VectorType) else t  # type: ignore[return-value]


def _wrap(v: Val, prec: int) -> str:
    return v.c if v.prec >= prec else f"({v.c})"


# ---------------------------------------------------------------- the translator


class _Translator(ast.NodeVisitor):
    """Translates one function body; statements emit C and numpy lines, expressions return `Val`s."""

    def __init__(self, src: _Source, in_types: tuple[Type, ...], out_type: Type | None, name: str,
                 overrides: Mapping[str, Type]) -> None:
        self.src, self.in_types, self.out_type, self.name = src, in_types, out_type, name
        self.overrides = overrides
        self.locals = set(src.params) | _assigned_names(src.body)
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
                 hint="user functions support arithmetic, comparisons, if/else, local variables, tuples "
                      "and math functions")

    def run(self) -> Translation:
        self._block(self.src.body)
        if self.assigned is not None:
            last = self.src.body[-1]
            self.err(last, f"user function '{self.src.fn.__code__.co_name}' does not return a value on "
                     f"every path (control can reach its end after line {self._line_of(last)})")
        out = self.ret_type
        assert out is not None
        params = tuple(self.cname[p] for p in self.src.params)
        args = ", ".join(f"{c_type(t)} {p}" for p, t in zip(params, self.in_types))
        body = "".join(line + "\n" for line in self.lines)
        source = f"{c_type(out)} {self.name}({args}) {{\n{body}}}\n"
        structs = tuple_types([*self.in_types, out, *self.used])
        return Translation(self.name, params, self.in_types, out, source, structs, self._np_fn(out))

    def _line_of(self, node: ast.AST) -> int:
        return getattr(node, "lineno", self.src.node.lineno)

    def _np_fn(self, out: Type) -> Callable[..., Any] | None:
        if not self.np_ok:
            return None
        result = self.np_rets[-1][1]
        for mask, value in self.np_rets[-2::-1]:
            result = npi.np_where(mask or "True", value, result, out)
        params = [f"a_{p}" for p in self.src.params]
        return npi.build(f"np_{self.name}", params, self.in_types, out, self.np_lines, result)

    # ------------------------------------------------------------ emission helpers

    def _line(self, text: str) -> None:
        self.lines.append("  " * (self.depth + 1) + text)

    def _np(self, value: str, prefix: str = "t") -> str:
        name, self.counter = f"{prefix}{self.counter}", self.counter + 1
        self.np_lines.append(f"{name} = {value}")
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
        return self._temp(v) if self.hoist else replace(v, c=_wrap(v, ATOM), prec=ATOM)

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
            return None if None in parts else TupleType(tuple(parts))  # type: ignore[arg-type]
        if v.weak:
            return _adopt(t, v.t)
        return t if isinstance(t, TupleType) and t == v.t else _join_types(t, v.t)

    def _fits(self, t: Type, v: Val) -> bool:
        """Whether `v` is of type `t`, a literal being allowed to take `t`."""
        if v.elems is not None:
            return isinstance(t, TupleType) and len(t.elems) == len(v.elems) and all(
                self._fits(te, e) for te, e in zip(t.elems, v.elems))
        return _adopt(t, v.t) == t if v.weak else v.t == t

    def _strong(self, v: Val) -> Val:
        return v.weak(v.t) if v.weak else v  # type: ignore[arg-type]

    def _coerce(self, v: Val, t: Type, node: ast.AST) -> Val:
        """`v` converted to type `t` (literal typing, numeric promotion, scalar splat)."""
        if v.elems is not None:
            assert isinstance(t, TupleType)
            elems = tuple(self._coerce(e, et, node) for e, et in zip(v.elems, t.elems))
            return replace(v, t=t, elems=elems, np="(" + "".join(e.np + ", " for e in elems) + ")")
        if v.weak:
            v = v.weak(_scalar(t))
        if v.t == t:
            return v
        if _numeric(v.t) and _numeric(t) and _RANK[v.t.name] <= _RANK[t.name]:  # type: ignore[attr-defined]
            return Val(f"({t.c_name}){_wrap(v, UNARY)}", t, npi.np_cast(v.np, t), UNARY)  # type: ignore[attr-defined]
        if isinstance(t, VectorType) and _join_types(t, v.t) == t:
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

    # ------------------------------------------------------------ statements

    def _block(self, stmts: Sequence[ast.stmt]) -> None:
        for s in stmts:
            if self.assigned is None:
                return  # unreachable code after a return
            self.hoist = True
            self.visit(s)

    def visit_Pass(self, node: ast.Pass) -> None:  # noqa: N802
        return None

    def visit_Expr(self, node: ast.Expr) -> None:  # noqa: N802
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring
        self.expr(node.value)
        self.err(node, "expression statements (values that are neither assigned nor returned) are not "
                 "supported in user functions")

    def visit_Assign(self, node: ast.Assign) -> None:  # noqa: N802
        if len(node.targets) != 1:
            self.err(node, "chained assignments (a = b = ...) are not supported in user functions")
        target = node.targets[0]
        value = self.expr(node.value)
        if isinstance(target, ast.Tuple) and value.elems is not None:
            targets = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
            if targets & {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}:
                value = replace(value, elems=tuple(
                    e if e.py is not None else self._temp(self._strong(e)) if e.elems is None
                    else self._materialise(e, node) for e in value.elems))
        self._store(target, value, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:  # noqa: N802
        if not isinstance(node.target, ast.Name):
            self.err(node, "augmented assignment to anything but a variable is not supported")
        current = self.visit_Name(ast.copy_location(ast.Name(node.target.id, ast.Load()), node))
        self._store(node.target, self._binop(node.op, current, self.expr(node.value), node), node)

    def _store(self, target: ast.expr, value: Val, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            return self._assign(target.id, value, node)
        if not isinstance(target, ast.Tuple):
            what = {"Subscript": "subscripts", "Attribute": "attributes"}.get(type(target).__name__, "this")
            self.err(node, f"assignment to {what} is not supported in user functions")
        t = _default(value)
        if not isinstance(t, TupleType) or len(t.elems) != len(target.elts):
            self.err(node, f"cannot unpack a value of type {t} into {len(target.elts)} names")
        if value.elems is None:
            value = self._atomic(value) if self.hoist else value
        for i, sub in enumerate(target.elts):
            part = value.elems[i] if value.elems is not None else self._index(value, i, node)
            self._store(sub, part, node)
        return None

    def _assign(self, name: str, value: Val, node: ast.AST) -> None:
        current = self.types.get(name)
        t = current if current is not None else self.overrides.get(name, _default(value))
        joined = self._join_to(t, value)
        if joined is None:
            self.err(node, f"variable '{name}' of type {t} is assigned a value of type {_default(value)}",
                     expected=t, got=_default(value))
        if joined != t:
            if name in self.src.params:
                self.err(node, f"parameter '{name}' of type {t} is assigned a value of type "
                         f"{_default(value)}", expected=t, got=_default(value))
            raise _Retype(name, joined)
        v = self._materialise(self._coerce(value, t, node), node)
        cn = self.cname[name]
        if name in self.declared:
            self._line(f"{cn} = {v.c};")
        elif self.depth == 0:
            self._line(f"{c_type(t)} {cn} = {v.c};")
        else:
            self.lines.insert(self.decl_at, f"  {c_type(t)} {cn};")
            self.decl_at += 1
            self._line(f"{cn} = {v.c};")
        self.used.append(t)
        self.types[name] = t
        self.declared.add(name)
        assert self.assigned is not None
        self.assigned.add(name)
        self.np_env[name] = self._np(v.np, f"v_{name}_")

    def visit_Return(self, node: ast.Return) -> None:  # noqa: N802
        if node.value is None:
            self.err(node, "user functions must return a value")
        value = self.expr(node.value)
        if self.out_type is not None:
            t = self.out_type
            if not self._fits(t, value):
                self.err(node, f"user function returns {_default(value)} but its declared result type is {t}",
                         expected=t, got=_default(value))
        else:
            t = self.ret_type or self.overrides.get(_RET) or _default(value)
            joined = self._join_to(t, value)
            if joined is None:
                self.err(node, f"this return gives {_default(value)} but another gives {t}",
                         expected=t, got=_default(value))
            if joined != t:
                raise _Retype(_RET, joined)
        self.ret_type = t
        v = self._materialise(self._coerce(value, t, node), node)
        self._line(f"return {v.c};")
        self.np_rets.append((self.np_mask, self._np(v.np, "r")))
        self.assigned = None

    def visit_If(self, node: ast.If, elif_: bool = False) -> None:  # noqa: N802
        if self.depth == 0 and not elif_:
            self.decl_at = len(self.lines)
        if elif_:
            with self._no_hoist():
                test = self._condition(node.test)
        else:
            test = self._condition(node.test)
        head = "} else if" if elif_ else "if"
        self._line(f"{head} ({test.c}) {{")
        cond = self._np(test.np, "c")
        outer = (self.assigned, dict(self.np_env), self.np_mask)
        m_then = self._np(f"_np.logical_and({outer[2]}, {cond})", "m") if outer[2] else cond
        m_else = self._np(f"_np.logical_not({cond})" if not outer[2]
                          else f"_np.logical_and({outer[2]}, _np.logical_not({cond}))", "m")
        self.np_mask, self.assigned = m_then, set(outer[0] or ())
        self.depth += 1
        self._block(node.body)
        self.depth -= 1
        then = (self.assigned, self.np_env, self.np_mask)
        self.assigned, self.np_env, self.np_mask = set(outer[0] or ()), dict(outer[1]), m_else
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            self.visit_If(node.orelse[0], elif_=True)
        else:
            if node.orelse:
                self._line("} else {")
                self.depth += 1
                self._block(node.orelse)
                self.depth -= 1
            self._line("}")
        self._merge(cond, outer[2], (m_then, m_else), then, (self.assigned, self.np_env, self.np_mask))

    def _merge(self, cond: str, mask: str | None, starts: tuple[str, str], then: tuple[Any, Any, Any],
               other: tuple[Any, Any, Any]) -> None:
        """Join the two paths of an if: definitely assigned names, numpy values (np.where) and masks."""
        (a_t, env_t, m_t), (a_e, env_e, m_e) = then, other
        if a_t is None or a_e is None:
            self.assigned, self.np_env, self.np_mask = (a_e, env_e, m_e) if a_t is None else then
            return
        self.assigned = a_t & a_e
        self.np_env = {}
        for k in sorted(env_t.keys() | env_e.keys()):
            x, y = env_t.get(k), env_e.get(k)
            same = x == y or x is None or y is None
            self.np_env[k] = (x or y) if same else self._np(npi.np_where(cond, x, y, self.types[k]))
        self.np_mask = mask if (m_t, m_e) == starts else self._np(f"_np.logical_or({m_t}, {m_e})", "m")

    def _condition(self, node: ast.expr) -> Val:
        v = self._strong(self.expr(node))
        if v.t != Bool:
            self.err(node, f"a condition must be a Bool, not {v.t}", expected=Bool, got=v.t,
                     hint="compare explicitly (x != 0) or use bool(x)")
        return v

    # ------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> Val:
        v = self.visit(node)
        assert isinstance(v, Val)
        return v

    def visit_Constant(self, node: ast.Constant) -> Val:  # noqa: N802
        if isinstance(node.value, (bool, int, float)):
            return self._const(node.value, node)
        self.err(node, f"{type(node.value).__name__} constants are not supported in user functions")

    def visit_Name(self, node: ast.Name) -> Val:  # noqa: N802
        name = node.id
        if name in self.locals:
            if self.assigned is None or name not in self.assigned:
                self.err(node, f"variable '{name}' is used before it is assigned on every path")
            return Val(self.cname[name], self.types[name], self.np_env[name])
        value = self._lookup(name, node)
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, (bool, int, float)):
            return self._const(value, node)
        self.err(node, f"'{name}' is a {type(value).__name__}; only numbers (and math) can be used from "
                 "outside a user function")

    def _lookup(self, name: str, node: ast.AST) -> Any:
        if name not in self.src.env:
            self.err(node, f"name '{name}' is not defined")
        return self.src.env[name]

    def _is_math(self, node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and node.id not in self.locals
                and self.src.env.get(node.id) is math)

    def visit_Attribute(self, node: ast.Attribute) -> Val:  # noqa: N802
        if self._is_math(node.value):
            if node.attr in _MATH_CONSTS:
                return self._const(_MATH_CONSTS[node.attr], node)
            self.err(node, f"math.{node.attr} is not supported as a value in user functions")
        base = self._strong(self.expr(node.value))
        if isinstance(base.t, VectorType) and node.attr in _SWIZZLE and _SWIZZLE[node.attr] < base.t.n:
            return self._index(base, _SWIZZLE[node.attr], node)
        self.err(node, f"attribute access (.{node.attr}) is not supported in user functions")

    def visit_Subscript(self, node: ast.Subscript) -> Val:  # noqa: N802
        base = self.expr(node.value)
        if isinstance(node.slice, ast.Slice):
            self.err(node, "slices are not supported in user functions")
        index = self.expr(node.slice)
        if not isinstance(index.py, int) or isinstance(index.py, bool):
            self.err(node, "indices into tuples and vectors must be constant integers")
        return self._index(base, index.py, node)

    def _index(self, base: Val, i: int, node: ast.AST) -> Val:
        t = _default(base)
        n = len(t.elems) if isinstance(t, TupleType) else t.n if isinstance(t, VectorType) else None
        if n is None:
            self.err(node, f"cannot index a value of type {t}")
        if not -n <= i < n:
            self.err(node, f"index {i} is out of range for {t}")
        i %= n
        if base.elems is not None:
            return base.elems[i]
        if isinstance(t, TupleType):
            return Val(f"{_wrap(base, POSTFIX)}._{i}", t.elems[i], f"({base.np})[{i}]", POSTFIX)
        return Val(f"{_wrap(base, POSTFIX)}.s{i:x}", _scalar(t), f"({base.np})[..., {i}]", POSTFIX)

    def visit_Tuple(self, node: ast.Tuple) -> Val:  # noqa: N802
        elems = tuple(self.expr(e) for e in node.elts)
        t = TupleType(tuple(_default(e) for e in elems))
        return Val("", t, "(" + "".join(e.np + ", " for e in elems) + ")", elems=elems)

    def visit_BinOp(self, node: ast.BinOp) -> Val:  # noqa: N802
        return self._binop(node.op, self.expr(node.left), self.expr(node.right), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Val:  # noqa: N802
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            v = self._strong(v)
            if v.t != Bool:
                self.err(node, f"'not' needs a Bool, not {v.t}", expected=Bool, got=v.t)
            return Val(f"!{_wrap(v, UNARY)}", Bool, f"_np.logical_not({v.np})", UNARY)
        if isinstance(node.op, ast.Invert):
            self.err(node, "bitwise operators (~) are not supported in user functions")
        if v.elems is not None or not (_numeric(v.t) or isinstance(v.t, VectorType)):
            self.err(node, f"unary {'-' if isinstance(node.op, ast.USub) else '+'} needs a number, not "
                     f"{_default(v)}")
        if isinstance(node.op, ast.UAdd):
            return v
        if v.py is not None:
            return self._fold(operator.neg, [v.py], node)
        v = self._strong(v)
        text = _wrap(v, UNARY)
        return Val(f"-({text})" if text[0] in "-+" else f"-{text}", v.t, f"(-{v.np})", UNARY)

    def visit_BoolOp(self, node: ast.BoolOp) -> Val:  # noqa: N802
        vals = [self._condition(node.values[0])]
        with self._no_hoist():
            vals += [self._condition(v) for v in node.values[1:]]
        if all(v.py is not None for v in vals):
            return self._fold(all if isinstance(node.op, ast.And) else any, [[v.py for v in vals]], node)
        c_op, np_op = (" && ", "logical_and") if isinstance(node.op, ast.And) else (" || ", "logical_or")
        np_text = vals[-1].np
        for v in vals[-2::-1]:
            np_text = f"_np.{np_op}({v.np}, {np_text})"
        return Val(c_op.join(_wrap(v, EQ) for v in vals), Bool, np_text,
                   AND if isinstance(node.op, ast.And) else OR)

    def visit_Compare(self, node: ast.Compare) -> Val:  # noqa: N802
        left = self.expr(node.left)
        parts: list[Val] = []
        for i, (op, right_node) in enumerate(zip(node.ops, node.comparators)):
            with self._no_hoist() if i else nullcontext():  # later operands are evaluated conditionally
                right = self.expr(right_node)
                if i + 1 < len(node.ops) and right.py is None:
                    right = self._atomic(self._strong(right))
                parts.append(self._compare(left, op, right, node))
            left = right
        if len(parts) == 1:
            return parts[0]
        np_text = parts[-1].np
        for p in parts[-2::-1]:
            np_text = f"_np.logical_and({p.np}, {np_text})"
        return Val(" && ".join(_wrap(p, EQ) for p in parts), Bool, np_text, AND)

    def _compare(self, a: Val, op: ast.cmpop, b: Val, node: ast.AST) -> Val:
        if type(op) not in _CMP:
            self.err(node, f"'{type(op).__name__}' comparisons (is, in) are not supported in user functions")
        if a.py is not None and b.py is not None:
            return self._fold(_PYOPS[type(op)], [a.py, b.py], node)
        t = self._join(a, b)
        sym, prec = _CMP[type(op)]
        if t is None or not (_numeric(t) or (t == Bool and prec == EQ)):
            self.err(node, f"cannot compare {_default(a)} and {_default(b)} with {sym}",
                     got=(_default(a), _default(b)))
        a, b = self._coerce(a, t, node), self._coerce(b, t, node)
        return Val(f"{_wrap(a, ADD)} {sym} {_wrap(b, ADD)}", Bool, f"({a.np} {sym} {b.np})", prec)

    def visit_IfExp(self, node: ast.IfExp) -> Val:  # noqa: N802
        test = self._condition(node.test)
        with self._no_hoist():
            a, b = self.expr(node.body), self.expr(node.orelse)
        if test.py is not None:  # a constant condition
            return a if test.py else b
        if a.elems is not None or b.elems is not None:
            self.err(node, "tuple construction inside a conditional expression is not supported",
                     hint="build the tuple in an if statement instead")
        t = self._join(a, b)
        if t is None:
            self.err(node, f"the branches of this conditional have types {a.t} and {b.t}", got=(a.t, b.t))

        def select(t: Type) -> Val:
            x, y = self._coerce(a, t, node), self._coerce(b, t, node)
            c = f"{_wrap(test, EQ)} ? {_wrap(x, TERNARY + 1)} : {_wrap(y, TERNARY + 1)}"
            return Val(c, t, npi.np_where(test.np, x.np, y.np, t), TERNARY)

        if a.weak and b.weak:
            return replace(select(t), weak=select)
        return select(t)

    # ------------------------------------------------------------ arithmetic

    def _binop(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        kind = type(op)
        if kind not in _PYOPS:
            self.err(node, f"bitwise and matrix operators ({type(op).__name__}) are not supported in user "
                     "functions")
        for v in (a, b):
            if v.elems is not None or isinstance(v.t, TupleType) or v.t == Bool:
                self.err(node, f"arithmetic on {_default(v)} values is not supported",
                         hint="use int(b) to compute with a Bool" if v.t == Bool else None)
        if a.py is not None and b.py is not None:
            return self._fold(_PYOPS[kind], [a.py, b.py], node)
        if kind is ast.Pow:
            return self._pow(a, b, node)
        if a.weak and b.weak:
            a, b = self._strong(a), self._strong(b)
        t = self._join(a, b)
        if t is None:
            self.err(node, f"cannot combine {a.t} and {b.t} with {type(op).__name__}", got=(a.t, b.t))
        if kind is ast.Div and _scalar(t) == Int:
            self.err(node, "Int / Int is ambiguous: Python's / gives a float, C's / truncates",
                     hint="use // for floor division, or float(a) / b for a Float result")
        if kind in (ast.FloorDiv, ast.Mod) and isinstance(t, VectorType):
            self.err(node, "// and % on vectors are not supported in user functions")
        x, y = self._elementwise(a, t, node), self._elementwise(b, t, node)
        if kind in _ARITH:
            sym, prec = _ARITH[kind]
            return Val(f"{_wrap(x, prec)} {sym} {_wrap(y, prec + 1)}", t, f"({x.np} {sym} {y.np})", prec)
        if y.py == 0 and t == Int:
            self.err(node, "integer division by zero")
        x, y = self._atomic(x), self._atomic(y)
        np_fn = "floor_divide" if kind is ast.FloorDiv else "remainder"
        positive = isinstance(y.py, (int, float)) and y.py > 0
        c = c_floor_op(kind is ast.FloorDiv, x.c, y.c, _scalar(t), divisor_positive=positive)
        return Val(c, t, f"_np.{np_fn}({x.np}, {y.np})", ATOM)

    def _pow(self, a: Val, b: Val, node: ast.AST) -> Val:
        if isinstance(b.py, int) and not isinstance(b.py, bool):
            a, n = self._strong(a), b.py
            if _scalar(a.t) == Int and (n < 0 or n > 8):
                self.err(node, f"Int ** {n} is not supported (negative or large exponent)",
                         hint="convert to float first: float(x) ** n")
            if n == 0:
                return self._coerce(self._const(1, node), a.t, node)
            if abs(n) <= 4 or _scalar(a.t) == Int:
                x = self._atomic(a)
                chain = Val(" * ".join([x.c] * abs(n)), a.t, "(" + " * ".join([x.np] * abs(n)) + ")",
                            MUL if abs(n) > 1 else x.prec)
                if n > 0:
                    return chain
                one = self._typed_const(1.0, _scalar(a.t), node)
                return Val(f"{one.c} / {_wrap(chain, MUL + 1)}", a.t, f"({one.np} / {chain.np})", MUL)
        t = self._join(a, b)
        if t is None or _scalar(t) == Int:
            self.err(node, f"{_default(a)} ** {_default(b)} is not supported", got=(a.t, b.t),
                     hint="Int ** Int needs a constant exponent; use float(x) for a Float power")
        return self._call("pow", "power", [a, b], t, node)

    # ------------------------------------------------------------ calls

    def visit_Call(self, node: ast.Call) -> Val:  # noqa: N802
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            self.err(node, "keyword and starred arguments are not supported in user functions")
        kind, fname = self._callee(node.func)
        args = [self.expr(a) for a in node.args]
        if kind == "math":
            arity, _ = C_MATH[fname]
            if len(args) != arity:
                self.err(node, f"math.{fname} takes {arity} argument(s) here, not {len(args)}")
            return self._math(fname, args, node)
        if fname in ("float", "int", "bool"):
            return self._cast(fname, args, node)
        if fname == "pow" and len(args) == 2:
            return self._binop(ast.Pow(), args[0], args[1], node)
        if fname in ("min", "max") and len(args) >= 2:
            return self._minmax(fname, args, node)
        if fname == "abs" and len(args) == 1:
            return self._abs(args[0], node)
        self.err(node, f"{fname}() with {len(args)} argument(s) is not supported in user functions")

    def _callee(self, func: ast.expr) -> tuple[str, str]:
        if isinstance(func, ast.Attribute) and self._is_math(func.value):
            if func.attr in C_MATH:
                return "math", func.attr
            self.err(func, f"math.{func.attr} is not supported in user functions")
        if isinstance(func, ast.Name) and func.id not in self.locals and func.id in self.src.env:
            value = self.src.env[func.id]
            for name in ("float", "int", "bool", "abs", "min", "max", "pow"):
                if value is getattr(builtins, name):
                    return "builtin", name
            for name in C_MATH:
                if value is getattr(math, name, None):
                    return "math", name
        what = f"'{func.id}'" if isinstance(func, ast.Name) else ast.unparse(func)
        self.err(func, f"calls to unknown function {what} are not supported in user functions",
                 hint="user functions can call math functions, abs, min, max, pow, float, int and bool")

    def _call(self, c_name: str, np_name: str | None, args: Sequence[Val], t: Type, node: ast.AST,
              out: Type | None = None) -> Val:
        xs = [self._coerce(a, t, node) for a in args]
        if np_name is None:
            self.np_ok = False
        np_text = f"_np.{np_name}({', '.join(x.np for x in xs)})"
        return Val(f"{c_name}({', '.join(x.c for x in xs)})", out or t, np_text, POSTFIX)

    def _math(self, fname: str, args: list[Val], node: ast.AST) -> Val:
        if all(a.py is not None and not isinstance(a.py, bool) for a in args):
            return self._fold(getattr(math, fname), [a.py for a in args], node)
        t = args[0].t if len(args) == 1 else self._join(args[0], args[1])
        if t is None or not (_numeric(_scalar(t)) and (isinstance(t, ScalarType) or _scalar(t) != Int)):
            self.err(node, f"math.{fname} needs numbers, not {', '.join(str(_default(a)) for a in args)}")
        if _scalar(t) == Int:
            t = Float
        pred = C_MATH[fname][1]
        if pred and isinstance(t, VectorType):
            self.err(node, f"math.{fname} on vectors is not supported in user functions")
        return self._call(fname, npi.NP_MATH[fname], args, t, node, Bool if pred else None)

    def _cast(self, fname: str, args: list[Val], node: ast.AST) -> Val:
        if len(args) != 1:
            self.err(node, f"{fname}() takes one argument in user functions")
        v = args[0]
        if v.py is not None:
            return self._fold(getattr(builtins, fname), [v.py], node)
        v = self._strong(v)
        if not isinstance(v.t, ScalarType):
            self.err(node, f"{fname}() of a {v.t} is not supported")
        if fname == "bool":
            zero = self._typed_const(0, v.t, node) if v.t != Bool else None
            return v if zero is None else Val(f"{_wrap(v, ADD)} != {zero.c}", Bool, f"({v.np} != 0)", EQ)
        t = Int if fname == "int" else (v.t if v.t == Double else Float)
        if v.t == t:
            return v
        return Val(f"({t.c_name}){_wrap(v, UNARY)}", t, npi.np_cast(v.np, t), UNARY)

    def _minmax(self, fname: str, args: list[Val], node: ast.AST) -> Val:
        if all(a.py is not None for a in args):
            return self._fold(getattr(builtins, fname), [a.py for a in args], node)
        acc = args[0]
        for a in args[1:]:
            t = self._join(acc, a)
            if t is None or not _numeric(_scalar(t)):
                self.err(node, f"{fname}() of {_default(acc)} and {_default(a)} is not supported")
            is_int = _scalar(t) == Int
            c_name = fname if is_int else "f" + fname
            np_name = ("minimum" if fname == "min" else "maximum") if is_int else c_name
            acc = self._call(c_name, np_name, [acc, a], t, node)
        return acc

    def _abs(self, v: Val, node: ast.AST) -> Val:
        if v.py is not None:
            return self._fold(abs, [v.py], node)
        v = self._strong(v)
        if not _numeric(_scalar(v.t)):
            self.err(node, f"abs() of a {v.t} is not supported")
        if _scalar(v.t) != Int:
            return self._call("fabs", "abs", [v], v.t, node)
        call = f"abs({v.c})"  # OpenCL's integer abs returns an unsigned type
        c = f"(int){call}" if v.t == Int else f"convert_{c_type(v.t)}({call})"
        return Val(c, v.t, f"_np.abs({v.np})", UNARY if v.t == Int else POSTFIX)


def _assigned_names(body: Sequence[ast.stmt]) -> set[str]:
    """The names a function body assigns to (its locals)."""
    out: set[str] = set()
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out
