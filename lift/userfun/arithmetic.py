"""Arithmetic in user functions: + - * / // % **, unary - + and not, with literal folding and promotion."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from lift.types import ArrayType, Bool, Int, TupleType, VectorType
from lift.userfun.ctypes import c_floor_op
from lift.userfun.emitter import Emitter
from lift.userfun.values import ADD, ATOM, MUL, UNARY, Val, numeric, scalar, val_type, wrap

_ARITH = {ast.Add: ("+", ADD), ast.Sub: ("-", ADD), ast.Mult: ("*", MUL), ast.Div: ("/", MUL)}
PYOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}


class Arithmetic(Emitter):
    """The arithmetic operators; `pow(a, b)` calls come here too."""

    def visit_BinOp(self, node: ast.BinOp) -> Val:  # noqa: N802
        return self._binop(node.op, self.expr(node.left), self.expr(node.right), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Val:  # noqa: N802
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            v = self._strong(v)
            if v.t != Bool:
                self.err(node, f"'not' needs a Bool, not {v.t}", expected=Bool, got=v.t)
            return Val(f"!{wrap(v, UNARY)}", Bool, f"_np.logical_not({v.np})", UNARY)
        if isinstance(node.op, ast.Invert):
            self.err(node, "bitwise operators (~) are not supported in user functions")
        if v.elems is not None or not (numeric(v.t) or isinstance(v.t, VectorType)):
            self.err(node, f"unary {'-' if isinstance(node.op, ast.USub) else '+'} needs a number, not "
                     f"{val_type(v)}")
        if isinstance(node.op, ast.UAdd):
            return v
        if v.py is not None:
            return self._fold(operator.neg, [v.py], node)
        v = self._strong(v)
        text = wrap(v, UNARY)
        return Val(f"-({text})" if text[0] in "-+" else f"-{text}", v.t, f"(-{v.np})", UNARY)

    def _binop(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        kind = type(op)
        if kind not in PYOPS:
            self.err(node, f"bitwise and matrix operators ({type(op).__name__}) are not supported in user "
                     "functions")
        for v in (a, b):
            if v.elems is not None or isinstance(v.t, (TupleType, ArrayType)) or v.t == Bool:
                self.err(node, f"arithmetic on {val_type(v)} values is not supported",
                         hint="use int(b) to compute with a Bool" if v.t == Bool else None)
        if a.py is not None and b.py is not None:
            return self._fold(PYOPS[kind], [a.py, b.py], node)
        if kind is ast.Pow:
            return self._pow(a, b, node)
        if a.weak and b.weak:
            a, b = self._strong(a), self._strong(b)
        t = self._join(a, b)
        if t is None:
            self.err(node, f"cannot combine {a.t} and {b.t} with {type(op).__name__}", got=(a.t, b.t))
        if kind is ast.Div and scalar(t) == Int:
            self.err(node, "Int / Int is ambiguous: Python's / gives a float, C's / truncates",
                     hint="use // for floor division, or float(a) / b for a Float result")
        if kind in (ast.FloorDiv, ast.Mod) and isinstance(t, VectorType):
            self.err(node, "// and % on vectors are not supported in user functions")
        x, y = self._elementwise(a, t, node), self._elementwise(b, t, node)
        rng = _range(kind, a, b) if t == Int else None
        if kind in _ARITH:
            sym, prec = _ARITH[kind]
            return Val(f"{wrap(x, prec)} {sym} {wrap(y, prec + 1)}", t, f"({x.np} {sym} {y.np})", prec, rng=rng)
        if y.py == 0 and t == Int:
            self.err(node, "integer division by zero")
        x, y = self._atomic(x), self._atomic(y)
        np_fn = "floor_divide" if kind is ast.FloorDiv else "remainder"
        positive = isinstance(y.py, (int, float)) and y.py > 0
        c = c_floor_op(kind is ast.FloorDiv, x.c, y.c, scalar(t), divisor_positive=positive)
        return Val(c, t, f"_np.{np_fn}({x.np}, {y.np})", ATOM, rng=rng)

    def _pow(self, a: Val, b: Val, node: ast.AST) -> Val:
        if isinstance(b.py, int) and not isinstance(b.py, bool):
            a, n = self._strong(a), b.py
            if scalar(a.t) == Int and (n < 0 or n > 8):
                self.err(node, f"Int ** {n} is not supported (negative or large exponent)",
                         hint="convert to float first: float(x) ** n")
            if n == 0:
                return self._coerce(self._const(1, node), a.t, node)
            if abs(n) <= 4 or scalar(a.t) == Int:
                x = self._atomic(a)
                chain = Val(" * ".join([x.c] * abs(n)), a.t, "(" + " * ".join([x.np] * abs(n)) + ")",
                            MUL if abs(n) > 1 else x.prec)
                if n > 0:
                    return chain
                one = self._typed_const(1.0, scalar(a.t), node)
                return Val(f"{one.c} / {wrap(chain, MUL + 1)}", a.t, f"({one.np} / {chain.np})", MUL)
        t = self._join(a, b)
        if t is None or scalar(t) == Int:
            self.err(node, f"{val_type(a)} ** {val_type(b)} is not supported", got=(a.t, b.t),
                     hint="Int ** Int needs a constant exponent; use float(x) for a Float power")
        return self._call("pow", "power", [a, b], t, node)



def _bounds(v: Val) -> tuple[int, int] | None:
    if isinstance(v.py, int) and not isinstance(v.py, bool):
        return v.py, v.py
    return v.rng


def _range(kind: type, a: Val, b: Val) -> tuple[int, int] | None:
    """The bounds of an Int result computed from loop variables and constants (None: unknown)."""
    ra, rb = _bounds(a), _bounds(b)
    if ra is None or rb is None:
        return None
    if kind is ast.Add:
        return ra[0] + rb[0], ra[1] + rb[1]
    if kind is ast.Sub:
        return ra[0] - rb[1], ra[1] - rb[0]
    if kind is ast.Mult:
        ps = [x * y for x in ra for y in rb]
        return min(ps), max(ps)
    if kind in (ast.FloorDiv, ast.Mod) and rb[0] == rb[1] and rb[0] > 0:
        d = rb[0]
        if kind is ast.FloorDiv:
            return ra[0] // d, ra[1] // d
        return (ra[0] % d, ra[1] % d) if ra[0] // d == ra[1] // d else (0, d - 1)
    return None
