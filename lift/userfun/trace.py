"""Tracing user functions whose source is not available (defined at the REPL, in `python -c`, in a
script read from stdin): the function is called once on symbolic values, as JAX does, and what it
computes is recorded as a straight-line Python function that the translator then turns into C and
numpy like any other.

    mult = user_fun(lambda a, b: a * b, [Float, Float], Float)      # typed at a `>>>` prompt: traced
    relu = user_fun(lambda x: lift.select(x > 0, x, 0.0))           # a conditional, traced

Tracing covers arithmetic (+ - * / // % **, unary - and abs), comparisons, `math` functions and
constants, `float`/`int`/`bool`/`abs`/`min`/`max`/`pow` of numbers, tuple and window indexing (`w[i][j]`
with Python ints, so Python `for` loops over `range(len(w))` unroll), calls to other user functions, and
`lift.select(c, a, b)` for conditionals. Python control flow on a traced value (`if x > 0:`, `and`, `or`,
`a if c else b`, `min(x, y)` of traced values) cannot be traced: it is a `UserFunError` naming the line.
"""

from __future__ import annotations

import ast
import builtins
import math
import types
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from lift.arith.ops import as_int
from lift.errors import SourceLoc, UserFunError
from lift.types import ArrayType, TupleType, Type, VectorType
from lift.userfun.source import Source

_OPS = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "truediv": ast.Div,
        "floordiv": ast.FloorDiv, "mod": ast.Mod, "pow": ast.Pow}
_CMPS = {"lt": ast.Lt, "le": ast.LtE, "gt": ast.Gt, "ge": ast.GtE, "eq": ast.Eq, "ne": ast.NotEq}
_NO_CONTROL = ("traced values cannot steer Python control flow (if, while, and, or, not, "
               "`a if c else b`, min/max of traced values)")


def select(cond: Any, a: Any, b: Any) -> Any:
    """`a` where `cond` holds, else `b`: a conditional that user functions can use whether they are
    translated from source or traced (`if` on a traced value cannot be traced). On numbers it is
    `a if cond else b`; on numpy arrays, `np.where`; in a user function, C's `cond ? a : b`."""
    if isinstance(cond, Traced) or isinstance(a, Traced) or isinstance(b, Traced):
        t = next(x for x in (cond, a, b) if isinstance(x, Traced))
        return t.tracer.op(ast.IfExp(test=t.tracer.expr(cond), body=t.tracer.expr(a),
                                     orelse=t.tracer.expr(b)))
    if isinstance(cond, np.ndarray) and cond.ndim > 0:
        return np.where(cond, a, b)
    return a if cond else b


class Tracer:
    """Records one traced call: a straight-line body of assignments `_tN = expr`."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.body: list[ast.stmt] = []
        self.env: dict[str, Any] = {"math": math, **vars(builtins)}
        self.count = 0

    def expr(self, x: Any) -> ast.expr:
        """The AST of a traced value or a Python constant (tuples element-wise)."""
        if isinstance(x, Traced):
            return x.node
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, (bool, int, float)):
            return ast.UnaryOp(ast.USub(), ast.Constant(-x)) if not isinstance(x, bool) and x < 0 \
                else ast.Constant(x)
        if isinstance(x, tuple):
            return ast.Tuple([self.expr(e) for e in x], ast.Load())
        raise UserFunError(f"a traced user function used a {type(x).__name__} value ({x!r}); only "
                           "numbers, tuples and traced values can be computed with")

    def op(self, node: ast.expr, t: Type | None = None) -> Traced:
        """A new traced value: `node` bound to a fresh local."""
        name, self.count = f"_t{self.count}", self.count + 1
        self.body.append(ast.Assign([ast.Name(name, ast.Store())], node))
        return Traced(self, ast.Name(name, ast.Load()), t)

    def call(self, callee: Any, args: Sequence[Any]) -> Traced:
        name = f"_uf{len([k for k in self.env if k.startswith('_uf')])}"
        self.env[name] = callee
        return self.op(ast.Call(ast.Name(name, ast.Load()), [self.expr(a) for a in args], []))


class Traced:
    """A symbolic value in a traced user function."""

    __slots__ = ("tracer", "node", "t")

    def __init__(self, tracer: Tracer, node: ast.expr, t: Type | None = None) -> None:
        self.tracer, self.node, self.t = tracer, node, t

    def __liftcl_trace__(self, callee: Any, args: Sequence[Any]) -> Traced:  # a user function call
        return self.tracer.call(callee, args)

    def _bin(self, op: str, other: Any, flip: bool = False) -> Traced:
        a, b = self.tracer.expr(self), self.tracer.expr(other)
        return self.tracer.op(ast.BinOp(b, _OPS[op](), a) if flip else ast.BinOp(a, _OPS[op](), b))

    def _cmp(self, op: str, other: Any) -> Traced:
        return self.tracer.op(ast.Compare(self.node, [_CMPS[op]()], [self.tracer.expr(other)]))

    def __bool__(self) -> bool:
        raise _ControlFlow(_NO_CONTROL)

    def __getitem__(self, i: Any) -> Traced:
        if isinstance(i, Traced):
            raise _ControlFlow("a traced value cannot be used as an index")
        t = self.t
        elem = (t.elems[i] if isinstance(t, TupleType) else t.elem if isinstance(t, ArrayType)
                else None)
        return Traced(self.tracer, ast.Subscript(self.node, ast.Constant(int(i)), ast.Load()), elem)

    def __len__(self) -> int:
        if isinstance(self.t, ArrayType):
            return as_int(self.t.size)
        if isinstance(self.t, (TupleType, VectorType)):
            return len(self.t.elems) if isinstance(self.t, TupleType) else self.t.n
        raise _ControlFlow(f"len() of a traced {self.t}")

    def __iter__(self) -> Any:
        return iter([self[i] for i in range(len(self))])

    def __getattr__(self, name: str) -> Traced:
        if name in ("x", "y", "z", "w") and isinstance(self.t, VectorType):
            return Traced(self.tracer, ast.Attribute(self.node, name, ast.Load()), self.t.scalar)
        raise AttributeError(name)

    def __float__(self) -> float:
        raise _ControlFlow("a traced value cannot be converted to a Python float here (a math function "
                           "imported under another name, or a library call?)")

    __int__ = __index__ = __float__
    __hash__ = object.__hash__

    def __neg__(self) -> Traced:
        return self.tracer.op(ast.UnaryOp(ast.USub(), self.node))

    def __pos__(self) -> Traced:
        return self

    def __abs__(self) -> Traced:
        return self.tracer.op(ast.Call(ast.Name("abs", ast.Load()), [self.node], []))


def _binary(op: str, flip: bool) -> Callable[[Traced, Any], Traced]:
    return lambda self, other: self._bin(op, other, flip)


for _op in _OPS:
    setattr(Traced, f"__{_op}__", _binary(_op, False))
    setattr(Traced, f"__r{_op}__", _binary(_op, True))
for _c in _CMPS:
    setattr(Traced, f"__{_c}__", lambda self, other, c=_c: self._cmp(c, other))


class _ControlFlow(Exception):  # noqa: N818 - becomes a UserFunError naming the user's line
    pass


def _traced_callable(real: Callable[..., Any], name: str, module: str | None) -> Callable[..., Any]:
    """`real` (a math function or builtin) recording a call when given a traced value."""
    def f(*args: Any) -> Any:
        t = next((a for a in args if isinstance(a, Traced)), None)
        if t is None:
            return real(*args)
        if name in ("min", "max") or (name == "bool"):
            raise _ControlFlow(_NO_CONTROL if name != "bool" else "bool() of a traced value")
        func: ast.expr = ast.Name(name, ast.Load())
        if module:
            func = ast.Attribute(ast.Name(module, ast.Load()), name, ast.Load())
        return t.tracer.op(ast.Call(func, [t.tracer.expr(a) for a in args], []))
    return f


_MATH = types.SimpleNamespace(**{k: (_traced_callable(v, k, "math") if callable(v) else v)
                                 for k, v in vars(math).items() if not k.startswith("_")})
_BUILTINS = {**vars(builtins), **{k: _traced_callable(getattr(builtins, k), k, None)
                                  for k in ("float", "int", "bool", "abs", "min", "max", "pow")}}


def _rebind(value: Any) -> Any:
    if value is math:
        return _MATH
    if callable(value) and getattr(math, getattr(value, "__name__", ""), None) is value:
        return getattr(_MATH, cast(Any, value).__name__)
    return value


def trace(fn: Callable[..., Any], in_types: Sequence[Type]) -> Source:
    """The straight-line Source that `fn` computes on symbolic values of `in_types`."""
    code = fn.__code__
    loc = SourceLoc(code.co_filename, code.co_firstlineno, code.co_name)
    tracer = Tracer(fn)
    glob = {k: _rebind(v) for k, v in fn.__globals__.items()}
    glob["__builtins__"] = _BUILTINS
    cells = tuple(types.CellType(_rebind(c.cell_contents)) for c in fn.__closure__ or ())
    traced_fn = types.FunctionType(code, glob, fn.__name__, fn.__defaults__, cells or None)
    params = tuple(code.co_varnames[:code.co_argcount])
    args = [Traced(tracer, ast.Name(p, ast.Load()), t) for p, t in zip(params, in_types)]
    try:
        result = traced_fn(*args)
    except Exception as e:  # noqa: BLE001 - whatever the function did with a symbolic value
        raise UserFunError(f"user function '{code.co_name}' cannot be traced: {e}", loc=_where(e, code, loc),
                           hint="its source is not available (REPL, python -c, stdin), so it is traced: "
                                "use lift.select(c, a, b) for conditionals, or define it in a file"
                           ) from None
    ret = ast.Return(tracer.expr(result))
    body = [*tracer.body, ret]
    args_node = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], vararg=None,
                              kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    name = code.co_name if code.co_name.isidentifier() else "traced"
    node = ast.FunctionDef(name=name, args=args_node, body=body, decorator_list=[], returns=None)
    for n in ast.walk(node):
        n.lineno, n.end_lineno = code.co_firstlineno, code.co_firstlineno  # type: ignore[attr-defined]
        n.col_offset = n.end_col_offset = 0  # type: ignore[attr-defined]
    env = {**tracer.env, "select": select}
    return Source(fn, node, code.co_filename, params, tuple(body), env)


def _where(e: BaseException, code: types.CodeType, loc: SourceLoc) -> SourceLoc:
    """The line of the user's function where tracing failed."""
    tb, line = e.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code is code:
            line = tb.tb_lineno
        tb = tb.tb_next
    return SourceLoc(loc.file, line, loc.function) if line else loc
