"""Loops in user functions: `for i in range(a, b, s)` with bounds known when the function is translated
(constants, `len` of an array parameter) or given by an enclosing loop's variable.

In C the loop is a C `for`; in the numpy twin it is a Python `for` over the same range, run once for all
elements at once (the bounds are the same for every element), with the variables the body assigns
carried from one iteration to the next. A loop variable is an Int whose bounds are known, so indexing
an array parameter with it is checked when translating. `while` loops are refused: their trip count
may depend on the data, which the numpy twin cannot run for all elements at once.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any, cast

from lift.types import Int
from lift.userfun.emitter import assigned_names
from lift.userfun.expressions import Expressions
from lift.userfun.values import Val

MAX_TRIPS = 1 << 20  # iterations of one loop (the numpy twin runs them in Python)


class Loops(Expressions):
    """`for` statements (and the refusal of `while`)."""

    def visit_While(self, node: ast.While) -> None:  # noqa: N802
        self.err(node, "while loops are not supported in user functions: their trip count can depend "
                 "on the data", hint="use a for loop over range(n) with a constant bound, and an if "
                                     "inside it for an early stop")

    def visit_For(self, node: ast.For) -> None:  # noqa: N802
        if node.orelse:
            self.err(node, "for ... else is not supported in user functions")
        if not isinstance(node.target, ast.Name):
            self.err(node, "a for loop in a user function needs a single loop variable")
        name = node.target.id
        if name in self.loop_ranges or name in self.src.params:
            self.err(node, f"the loop variable '{name}' is already a parameter or an enclosing loop's "
                     "variable")
        if name in assigned_names(node.body):
            self.err(node, f"the loop variable '{name}' is assigned inside the loop")
        start, stop, step, rng, trips = self._range(node.iter)
        if self.types.get(name, Int) != Int:
            self.err(node, f"variable '{name}' of type {self.types[name]} is used as a loop variable")
        if self.overrides.get(name, Int) != Int:  # assigned a wider value after the loop
            self.err(node, f"the loop variable '{name}' (an Int) is assigned a {self.overrides[name]} elsewhere "
                     "in the function", hint="give the loop variable or the other variable another name")
        if trips == 0:
            return  # the body never runs
        if self.depth == 0:
            self.decl_at = len(self.lines)
        cn = self.cname[name]
        if name not in self.declared:
            self._declare(cn, "int")
            self.types[name] = Int
            self.declared.add(name)
        cmp = "<" if step > 0 else ">"
        self._line(f"for ({cn} = {start.c}; {cn} {cmp} {stop.c}; {cn} += {step}) {{")
        self._loop_body(node, name, (start, stop, step), rng, trips)
        self._line("}")

    def _loop_body(self, node: ast.For, name: str, bounds: tuple[Val, Val, int], rng: tuple[int, int],
                   trips: int | None) -> None:
        assert self.assigned is not None
        inner = {f.target.id for s in node.body for f in ast.walk(s)
                 if isinstance(f, ast.For) and isinstance(f.target, ast.Name)}
        carried = sorted(assigned_names(node.body) - {name} - inner)
        before = set(self.assigned)
        carriers = {}
        for k in carried:
            carriers[k] = self._np(self.np_env.get(k, "None"), f"L_{k}_")
            self.np_env[k] = carriers[k]
        start, stop, step = bounds
        iv, self.counter = f"i{self.counter}", self.counter + 1
        self.np_lines.append("    " * self.np_indent + f"for {iv} in range({start.np}, {stop.np}, {step}):")
        self.np_indent += 1
        self.np_env[name] = iv
        self.loop_ranges[name] = rng
        self.assigned.add(name)
        self.depth += 1
        cast(Any, self)._block(node.body)  # the translator this mixin is part of
        self.depth -= 1
        inside = self.assigned
        assert inside is not None, "returns inside loops are refused"
        for k, carrier in carriers.items():
            if self.np_env.get(k) != carrier:
                self.np_lines.append("    " * self.np_indent + f"{carrier} = {self.np_env[k]}")
            self.np_env[k] = carrier
        self.np_indent -= 1
        del self.loop_ranges[name]
        self.np_env.pop(name, None)
        runs = trips is not None and trips > 0
        self.assigned = (inside if runs else before) - {name}

    def _range(self, it: ast.expr) -> tuple[Val, Val, int, tuple[int, int], int | None]:
        """The bounds of `range(...)`, the loop variable's bounds and the trip count (None: unknown)."""
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id not in self.locals
                and self.src.env.get(it.func.id) is builtins.range) or it.keywords:
            self.err(it, "a for loop in a user function iterates over range(...) only",
                     hint="for i in range(n), range(a, b) or range(a, b, step)")
        if not 1 <= len(it.args) <= 3:
            self.err(it, "range takes 1 to 3 arguments")
        vals = [self._strong(self.expr(a)) for a in it.args]
        for a, v in zip(it.args, vals):
            if v.t != Int or (not isinstance(v.py, int) and v.rng is None):
                self.err(a, "range bounds in a user function must be Ints known when it is translated "
                         "(constants, len(...) of an array parameter) or an enclosing loop's variable",
                         hint="the numpy twin runs the loop once for all elements, so its bounds cannot "
                              "depend on the data")
        zero, one = self._const(0, it), self._const(1, it)
        start, stop, stepv = (zero, vals[0], one) if len(vals) == 1 else (*vals[:2], vals[2] if len(vals) == 3
                                                                          else one)
        step = stepv.py
        if not isinstance(step, int) or step == 0:
            self.err(it, "the step of range must be a non-zero constant")
        lo_a, hi_a = _bounds(start)
        lo_b, hi_b = _bounds(stop)
        if isinstance(start.py, int) and isinstance(stop.py, int):
            r = range(start.py, stop.py, step)
            if len(r) > MAX_TRIPS:
                self.err(it, f"a loop of {len(r)} iterations is too long for a user function")
            return start, stop, step, (min(r[0], r[-1]), max(r[0], r[-1])) if r else (0, 0), len(r)
        rng = (lo_a, hi_b - 1) if step > 0 else (lo_b + 1, hi_a)
        return start, stop, step, rng, None

    def _declare(self, cn: str, ctype: str) -> None:
        """Declare a C local before the statement being translated."""
        if self.depth == 0:
            self._line(f"{ctype} {cn};")
        else:
            self.lines.insert(self.decl_at, f"  {ctype} {cn};")
            self.decl_at += 1


def _bounds(v: Val) -> tuple[int, int]:
    if isinstance(v.py, int):
        return v.py, v.py
    assert v.rng is not None
    return v.rng
