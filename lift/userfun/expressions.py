"""Expressions in user functions: names and constants, math constants, indexing and swizzles, tuples,
comparisons, and/or and conditional expressions."""

from __future__ import annotations

import ast
import math
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

import numpy as np

from lift.arith.ops import as_int
from lift.types import ArrayType, Bool, Int, ScalarType, TupleType, Type, VectorType
from lift.userfun import numpy_impl as npi
from lift.userfun.arithmetic import PYOPS
from lift.userfun.calls import Calls
from lift.userfun.values import ADD, AND, EQ, OR, POSTFIX, REL, TERNARY, Val, numeric, scalar, val_type, wrap

_CMP = {ast.Lt: ("<", REL), ast.LtE: ("<=", REL), ast.Gt: (">", REL), ast.GtE: (">=", REL),
        ast.Eq: ("==", EQ), ast.NotEq: ("!=", EQ)}
_MATH_CONSTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan}
_SWIZZLE = {"x": 0, "y": 1, "z": 2, "w": 3}


class Expressions(Calls):
    """The expression visitors: each returns a `Val`."""

    def visit_Constant(self, node: ast.Constant) -> Val:  # noqa: N802
        if isinstance(node.value, (bool, int, float)):
            return self._const(node.value, node)
        self.err(node, f"{type(node.value).__name__} constants are not supported in user functions")

    def visit_Name(self, node: ast.Name) -> Val:  # noqa: N802
        name = node.id
        if name in self.locals:
            if self.assigned is None or name not in self.assigned:
                self.err(node, f"variable '{name}' is used before it is assigned on every path")
            return Val(self.cname[name], self.types[name], self.np_env[name], rng=self.loop_ranges.get(name))
        value = self._lookup(name, node)
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, (bool, int, float)):
            self.captured[name] = value  # frozen into the translation (lift.userfun.frozen)
            return self._const(value, node)
        self.err(node, f"'{name}' is a {type(value).__name__}; only numbers (and math) can be used from "
                 "outside a user function")

    def _lookup(self, name: str, node: ast.AST) -> Any:
        if name not in self.src.env:
            self.err(node, f"name '{name}' is not defined")
        return self.src.env[name]

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
        if isinstance(base.t, ArrayType) and base.elems is None:
            return self._array_index(base, index, node)
        if not isinstance(index.py, int) or isinstance(index.py, bool):
            self.err(node, "indices into tuples and vectors must be constant integers")
        return self._index(base, index.py, node)

    def _array_index(self, base: Val, index: Val, node: ast.AST) -> Val:
        """`w[i]` of an array parameter: a constant or a loop variable whose bounds fit the array."""
        t = base.t
        assert isinstance(t, ArrayType)
        n = as_int(t.size)
        index = self._strong(index)
        if index.t != Int:
            self.err(node, f"an array index must be an Int, not {index.t}")
        if isinstance(index.py, int):
            if not -n <= index.py < n:
                self.err(node, f"index {index.py} is out of range for {t}")
            index = self._const(index.py % n, node)
        elif index.rng is None:
            self.err(node, "an array index in a user function must be a constant or computed from loop "
                     "variables (so that it is checked against the array's size)")
        elif not (0 <= index.rng[0] and index.rng[1] < n):
            self.err(node, f"this index ranges over {index.rng[0]}..{index.rng[1]}, outside {t}")
        return Val(f"{wrap(base, POSTFIX)}[{index.c}]", t.elem, f"{base.np}[{index.np}]", POSTFIX)

    def _index(self, base: Val, i: int, node: ast.AST) -> Val:
        t = val_type(base)
        n = len(t.elems) if isinstance(t, TupleType) else t.n if isinstance(t, VectorType) else None
        if n is None:
            self.err(node, f"cannot index a value of type {t}")
        if not -n <= i < n:
            self.err(node, f"index {i} is out of range for {t}")
        i %= n
        if base.elems is not None:
            return base.elems[i]
        if isinstance(t, TupleType):
            return Val(f"{wrap(base, POSTFIX)}._{i}", t.elems[i], f"({base.np})[{i}]", POSTFIX)
        return Val(f"{wrap(base, POSTFIX)}.s{i:x}", scalar(t), f"({base.np})[..., {i}]", POSTFIX)

    def visit_Tuple(self, node: ast.Tuple) -> Val:  # noqa: N802
        elems = tuple(self.expr(e) for e in node.elts)
        t = TupleType(tuple(val_type(e) for e in elems))
        return Val("", t, "(" + "".join(e.np + ", " for e in elems) + ")", elems=elems)

    def visit_BoolOp(self, node: ast.BoolOp) -> Val:  # noqa: N802
        vals = [self._condition(node.values[0])]
        with self._no_hoist():
            vals += [self._condition(v) for v in node.values[1:]]
        if all(v.py is not None for v in vals):
            return self._fold(all if isinstance(node.op, ast.And) else any, [[v.py for v in vals]], node)
        unit = isinstance(node.op, ast.And)  # operands equal to the unit (True for and) drop out
        vals = [v for v in vals if v.py is None or bool(v.py) != unit]
        if len(vals) == 1 and vals[0].py is None:
            return vals[0]
        c_op, np_op = (" && ", "logical_and") if isinstance(node.op, ast.And) else (" || ", "logical_or")
        np_text = vals[-1].np
        for v in vals[-2::-1]:
            np_text = f"_np.{np_op}({v.np}, {np_text})"
        return Val(c_op.join(wrap(v, EQ) for v in vals), Bool, np_text,
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
        return Val(" && ".join(wrap(p, EQ) for p in parts), Bool, np_text, AND)

    def _compare(self, a: Val, op: ast.cmpop, b: Val, node: ast.AST) -> Val:
        if type(op) not in _CMP:
            self.err(node, f"'{type(op).__name__}' comparisons (is, in) are not supported in user functions")
        if a.py is not None and b.py is not None:
            return self._fold(PYOPS[type(op)], [a.py, b.py], node)
        t = self._join(a, b)
        sym, prec = _CMP[type(op)]
        if t is None or not (numeric(t) or (t == Bool and prec == EQ)):
            self.err(node, f"cannot compare {val_type(a)} and {val_type(b)} with {sym}",
                     got=(val_type(a), val_type(b)))
        a, b = self._coerce(a, t, node), self._coerce(b, t, node)
        if a.c == b.c and isinstance(t, ScalarType) and t.dtype.kind in "iub":
            return self._fold(PYOPS[type(op)], [0, 0], node)  # `x != x` of an Int: no C warning
        return Val(f"{wrap(a, ADD)} {sym} {wrap(b, ADD)}", Bool, f"({a.np} {sym} {b.np})", prec)

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
            c = f"{wrap(test, EQ)} ? {wrap(x, TERNARY + 1)} : {wrap(y, TERNARY + 1)}"
            return Val(c, t, npi.np_where(test.np, x.np, y.np, t), TERNARY)

        if a.weak and b.weak:
            return replace(select(t), weak=select)
        return select(t)

