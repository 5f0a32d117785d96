"""Calls in user functions: math functions, casts (float, int, bool), min, max, abs and pow."""

from __future__ import annotations

import ast
import builtins
import inspect
import math
from typing import Any

from lift.arith.ops import as_int
from lift.ir.nodes import UserFun
from lift.types import ArrayType, Bool, Double, Float, Int, ScalarType, Type, VectorType
from lift.userfun import numpy_impl as npi
from lift.userfun.arithmetic import Arithmetic
from lift.userfun.ctypes import C_MATH, c_type
from lift.userfun.trace import select
from lift.userfun.values import ADD, EQ, POSTFIX, UNARY, Val, numeric, scalar, val_type, wrap

_BUILTIN_NAMES = ("float", "int", "bool", "abs", "min", "max", "pow", "len")


class Calls(Arithmetic):
    """Calls to the builtins and math functions a user function may use."""

    def visit_Call(self, node: ast.Call) -> Val:  # noqa: N802
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            self.err(node, "keyword and starred arguments are not supported in user functions")
        if self._is_select(node.func):
            if len(node.args) != 3:
                self.err(node, "select(cond, a, b) takes three arguments")
            return self.visit_IfExp(ast.copy_location(ast.IfExp(*node.args), node))
        user = self._user_callee(node.func)
        args = [self.expr(a) for a in node.args]
        if user is not None:
            return self._user_call(user, args, node)
        kind, fname = self._callee(node.func)
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
        if fname == "len" and len(args) == 1 and isinstance(args[0].t, ArrayType):
            return self._const(as_int(args[0].t.size), node)
        self.err(node, f"{fname}() with {len(args)} argument(s) is not supported in user functions")

    def _callee(self, func: ast.expr) -> tuple[str, str]:
        if isinstance(func, ast.Attribute) and self._is_math(func.value):
            if func.attr in C_MATH:
                return "math", func.attr
            self.err(func, f"math.{func.attr} is not supported in user functions")
        if isinstance(func, ast.Name) and func.id not in self.locals and func.id in self.src.env:
            value = self.src.env[func.id]
            for name in ("float", "int", "bool", "abs", "min", "max", "pow", "len"):
                if value is getattr(builtins, name):
                    return "builtin", name
            for name in C_MATH:
                if value is getattr(math, name, None):
                    return "math", name
        if isinstance(func, ast.Name) and func.id not in self.locals and func.id == self.src.fn.__name__ \
                and not callable(self.src.env.get(func.id)):  # `@user_fun def f` calling f: not bound yet
            self.err(func, f"user function '{func.id}' calls itself; recursion is not supported in user functions",
                     hint="write the recursion as a for loop over range(...)")
        what = f"'{func.id}'" if isinstance(func, ast.Name) else ast.unparse(func)
        self.err(func, f"calls to unknown function {what} are not supported in user functions",
                 hint="user functions can call math functions, abs, min, max, pow, float, int and bool")

    def _is_select(self, func: ast.expr) -> bool:

        if isinstance(func, ast.Name) and func.id not in self.locals:
            return self.src.env.get(func.id) is select
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            mod = self.src.env.get(func.value.id)
            return inspect.ismodule(mod) and getattr(mod, func.attr, None) is select
        return False

    def _user_callee(self, func: ast.expr) -> Any:
        """The user function or plain Python helper a call names, or None (a builtin or math)."""
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and not self._is_math(func.value)
                and func.value.id not in self.locals and inspect.ismodule(self.src.env.get(func.value.id))):
            value = getattr(self.src.env[func.value.id], func.attr, None)  # module.function
        elif not isinstance(func, ast.Name) or func.id in self.locals or func.id not in self.src.env:
            return None
        else:
            value = self.src.env[func.id]
        if isinstance(value, UserFun) or hasattr(value, "specialise"):
            return value
        if inspect.isfunction(value) and value.__module__ != "math" and not any(
                value is getattr(builtins, b) for b in _BUILTIN_NAMES):
            return value
        if isinstance(func, ast.Attribute) and value is not None and not inspect.isbuiltin(value):
            self.err(func, f"{ast.unparse(func)} is not a function a user function can call")
        return None

    def _user_call(self, callee: Any, args: list[Val], node: ast.AST) -> Val:
        """A call to another user function or a translatable helper: a C function defined (once)
        before this one; in numpy, its numpy twin."""
        from lift.userfun.translate import translate  # translate imports this module

        if any(a.elems is not None for a in args):
            self.err(node, "tuple literals cannot be passed to a function; assign them to a variable first")
        args = [self._materialise(self._strong(a), node) for a in args]
        types = tuple(val_type(a) for a in args)
        if isinstance(callee, UserFun):
            uf = callee
            if len(uf.in_types) != len(args):
                self.err(node, f"{uf.name} takes {len(uf.in_types)} argument(s), not {len(args)}")
        elif (id(callee), types) in self.dep_cache:
            uf = self.dep_cache[id(callee), types]
        else:
            fn = getattr(callee, "fn", callee)
            base = getattr(callee, "name", None) or fn.__name__
            name = base if base.isidentifier() and base != "<lambda>" else "helper"
            taken = {d.name for d in self.deps} | {self.name}
            k = 0
            while name in taken or name in self.cname.values():
                k, name = k + 1, f"{base}_{k}"
            tr = translate(fn, types, name=name, out_type=getattr(callee, "out_type", None))
            uf = UserFun(tr.name, tr.params, tr.in_types, tr.out_type, tr.c_source, tr.structs,
                         fn, tr.np_fn, deps=tr.deps)
            if tr.arrays:
                self.err(node, "calls to functions taking arrays are not supported in user functions")
            self.dep_cache[id(callee), types] = uf
        clash = [d for d in self.deps if d.name == uf.name and d is not uf]
        if clash and (clash[0].c_source, clash[0].deps) != (uf.c_source, uf.deps):
            self.err(node, f"two different functions named {uf.name} are called; rename one")
        if not clash and uf not in self.deps:
            self.deps.append(uf)
        xs = [self._coerce(a, t, node) for a, t in zip(args, uf.in_types)]
        np_text = f"_d_{uf.name}({', '.join(x.np for x in xs)})"
        return Val(f"{uf.name}({', '.join(x.c for x in xs)})", uf.out_type, np_text, POSTFIX)

    def _math(self, fname: str, args: list[Val], node: ast.AST) -> Val:
        if all(a.py is not None and not isinstance(a.py, bool) for a in args):
            return self._fold(getattr(math, fname), [a.py for a in args], node)
        t = args[0].t if len(args) == 1 else self._join(args[0], args[1])
        if t is None or not (numeric(scalar(t)) and (isinstance(t, ScalarType) or scalar(t) != Int)):
            self.err(node, f"math.{fname} needs numbers, not {', '.join(str(val_type(a)) for a in args)}")
        if scalar(t) == Int:
            t = Float
        pred = C_MATH[fname][1]
        if pred and isinstance(t, VectorType):
            self.err(node, f"math.{fname} on vectors is not supported in user functions")
        if fname in ("sin", "cos") and len(args) == 1:
            both = self._sincos(args[0], t, node)
            if both is not None:
                return both[0] if fname == "sin" else both[1]
        return self._call(fname, npi.NP_MATH[fname], args, t, node, Bool if pred else None)

    def _sincos(self, x: Val, t: Type, node: ast.AST) -> tuple[Val, Val] | None:
        """`(sin x, cos x)` from one `sincos` call for a variable whose sine and cosine the function
        both takes (`trig_pairs`), in straight-line code at the function's top level; None otherwise.
        (PoCL's SLEEF sincos on float8: about half the time of sin and cos, MRI-Q's inner loop.)
        Reused until the variable is assigned again (`_assign` forgets it)."""
        if not (self.hoist and self.depth == 0 and x.c in self.trig_pairs and x.c not in self.loop_ranges):
            return None
        got = self.sincos.get(x.c)
        if got is None:
            s, c = self._c_temp(), self._c_temp()
            ct = c_type(t)
            self._line(f"{ct} {c}; {ct} {s} = sincos({self._coerce(x, t, node).c}, &{c});")
            got = (Val(s, t, self._np(f"_np.sin({x.np})")), Val(c, t, self._np(f"_np.cos({x.np})")))
            self.sincos[x.c] = got
        return got

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
            return v if zero is None else Val(f"{wrap(v, ADD)} != {zero.c}", Bool, f"({v.np} != 0)", EQ)
        t = Int if fname == "int" else (v.t if v.t == Double else Float)
        if v.t == t:
            return v
        return Val(f"({t.c_name}){wrap(v, UNARY)}", t, npi.np_cast(v.np, t), UNARY)

    def _minmax(self, fname: str, args: list[Val], node: ast.AST) -> Val:
        if all(a.py is not None for a in args):
            return self._fold(getattr(builtins, fname), [a.py for a in args], node)
        acc = args[0]
        for a in args[1:]:
            t = self._join(acc, a)
            if t is None or not numeric(scalar(t)):
                self.err(node, f"{fname}() of {val_type(acc)} and {val_type(a)} is not supported")
            is_int = scalar(t) == Int
            c_name = fname if is_int else "f" + fname
            np_name = ("minimum" if fname == "min" else "maximum") if is_int else c_name
            acc = self._call(c_name, np_name, [acc, a], t, node)
        return acc

    def _abs(self, v: Val, node: ast.AST) -> Val:
        if v.py is not None:
            return self._fold(abs, [v.py], node)
        v = self._strong(v)
        if not numeric(scalar(v.t)):
            self.err(node, f"abs() of a {v.t} is not supported")
        if scalar(v.t) != Int:
            return self._call("fabs", "abs", [v], v.t, node)
        call = f"abs({v.c})"  # OpenCL's integer abs returns an unsigned type
        c = f"(int){call}" if v.t == Int else f"convert_{c_type(v.t)}({call})"
        return Val(c, v.t, f"_np.abs({v.np})", UNARY if v.t == Int else POSTFIX)


