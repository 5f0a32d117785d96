"""Statements in user functions (assignments, if/elif/else, return) and the finished `Translation`."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, cast

from lift.types import ArrayType, TupleType, Type
from lift.userfun import numpy_impl as npi
from lift.userfun.arrays import array_shape, flat_name, flat_types, indices, nested
from lift.userfun.ctypes import c_type, tuple_types
from lift.userfun.emitter import Retype
from lift.userfun.frozen import Frozen, remember
from lift.userfun.loops import Loops
from lift.userfun.values import Translation, Val, val_type

_RET = "<return>"


class Translator(Loops):
    """Translates one function body; statements emit C and numpy lines, expressions return `Val`s."""

    def run(self) -> Translation:
        self._block(self.src.body)
        if self.assigned is not None:
            last = self.src.body[-1]
            self.err(last, f"user function '{self.src.fn.__code__.co_name}' does not return a value on "
                     f"every path (control can reach its end after line {self._line_of(last)})")
        out = self.ret_type
        assert out is not None
        params, prologue, np_params, np_prologue = self._flat_params()
        in_types = flat_types(self.in_types)
        args = ", ".join(f"{c_type(t)} {p}" for p, t in zip(params, in_types))
        body = "".join(line + "\n" for line in prologue + self.lines)
        source = f"{c_type(out)} {self.name}({args}) {{\n{body}}}\n"
        structs = tuple_types([*in_types, out, *self.used, *(s for d in self.deps for s in d.structs)])
        arrays = self.in_types if any(isinstance(t, ArrayType) for t in self.in_types) else ()
        np_fn = self._np_fn(out, np_params, in_types, np_prologue)
        if self.captured:
            remember(np_fn, Frozen(self.src.fn, tuple(sorted(self.captured.items()))))
        return Translation(self.name, tuple(params), in_types, out, source, structs, np_fn, tuple(self.deps), arrays)

    def _flat_params(self) -> tuple[list[str], list[str], list[str], list[str]]:
        """C and numpy parameters, array parameters element by element, and the lines rebuilding them."""
        params, prologue, np_params, np_prologue = [], [], [], []
        for k, (p, t) in enumerate(zip(self.src.params, self.in_types)):
            cn = self.cname[p]
            if not isinstance(t, ArrayType):
                params.append(cn)
                np_params.append(f"a_{p}")
                continue
            dims, s = array_shape(t)
            base = cn
            while any(flat_name(base, i) in self.taken for i in indices(dims)):
                base += "_"
            params += [flat_name(base, i) for i in indices(dims)]
            np_params += [flat_name(f"f{k}", i) for i in indices(dims)]
            shape = "".join(f"[{d}]" for d in dims)
            prologue.append(f"  {c_type(s)} {cn}{shape} = "
                            f"{nested(dims, cast(Any, lambda i, b=base: flat_name(b, i)), '{', '}')};")
            np_prologue.append(f"a_{p} = {nested(dims, cast(Any, lambda i, k=k: flat_name(f'f{k}', i)), '[', ']')}")
        return params, prologue, np_params, np_prologue

    def _np_fn(self, out: Type, params: list[str], in_types: tuple[Type, ...],
               prologue: list[str]) -> Callable[..., Any] | None:
        if not self.np_ok or any(d.np_fn is None for d in self.deps):
            return None
        result = self.np_rets[-1][1]
        for mask, value in self.np_rets[-2::-1]:
            result = npi.np_where(mask or "True", value, result, out)
        deps = {f"_d_{d.name}": d.np_fn for d in self.deps}
        return npi.build(f"np_{self.name}", params, in_types, out, prologue + self.np_lines, result, deps)

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
        t = val_type(value)
        if not isinstance(t, TupleType) or len(t.elems) != len(target.elts):
            self.err(node, f"cannot unpack a value of type {t} into {len(target.elts)} names")
        if value.elems is None:
            value = self._atomic(value) if self.hoist else value
        for i, sub in enumerate(target.elts):
            part = value.elems[i] if value.elems is not None else self._index(value, i, node)
            self._store(sub, part, node)
        return None

    def _assign(self, name: str, value: Val, node: ast.AST) -> None:
        self.sincos.pop(self.cname.get(name, name), None)  # its sine and cosine are stale
        if isinstance(val_type(value), ArrayType):
            self.err(node, "arrays cannot be assigned to variables in user functions; index the parameter")
        if name in self.loop_ranges:
            self.err(node, f"the loop variable '{name}' is assigned inside its loop")
        current = self.types.get(name)
        t = current if current is not None else self.overrides.get(name, val_type(value))
        joined = self._join_to(t, value)
        if joined is None:
            self.err(node, f"variable '{name}' of type {t} is assigned a value of type {val_type(value)}",
                     expected=t, got=val_type(value))
        if joined != t:
            if name in self.src.params:
                self.err(node, f"parameter '{name}' of type {t} is assigned a value of type "
                         f"{val_type(value)}", expected=t, got=val_type(value))
            raise Retype(name, joined, getattr(node, "lineno", None))
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
        if self.loop_ranges:
            self.err(node, "return inside a for loop is not supported in user functions",
                     hint="assign the result to a variable in the loop and return it after the loop")
        value = self.expr(node.value)
        if self.out_type is not None:
            t = self.out_type
            if not self._fits(t, value):
                self.err(node, f"user function returns {val_type(value)} but its declared result type is {t}",
                         expected=t, got=val_type(value))
        else:
            t = self.ret_type or self.overrides.get(_RET) or val_type(value)
            joined = self._join_to(t, value)
            if joined is None:
                self.err(node, f"this return gives {val_type(value)} but another gives {t}",
                         expected=t, got=val_type(value))
            if joined != t:
                raise Retype(_RET, joined, getattr(node, "lineno", None))
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


