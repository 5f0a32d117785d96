"""A parsed TC function, its statements resolved in order and range-inferred, as a `lift.fun` program.

Sizes named in the parameters' types become `Size`s (`float(M,K) A` is `[[Float]K]M`), scalar
parameters scalar parameters of the program, outputs its result (a tuple for several). An output read
before any statement defines it (`C(i,j) = b * C(i,j)` in sgemm) is an in-out tensor: it becomes a
parameter after the declared ones, of the shape the statements give it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, cast

from lift.arith import Arith, Cst
from lift.comprehension.ranges import BUILTINS, Ranges, Scope, accesses, infer, tc_error
from lift.comprehension.scalar import reducer, scalar_type
from lift.comprehension.syntax import Binary, Call, Expr, Function, Name, Statement
from lift.comprehension.translation import Inline, Materialised, Program, build_program, resolve, substitute
from lift.errors import LiftError, LiftTypeError, LiftValueError
from lift.ir.nodes import Lambda
from lift.ir.patterns import fun
from lift.types import Array, Size, Type


@dataclasses.dataclass
class _Pass:
    """One walk over the statements: versions so far, and what each name means now."""

    scope: Scope
    strict: bool
    hints: Mapping[str, tuple[Arith, ...]]
    outputs: tuple[str, ...]
    env: dict[str, str | Inline] = dataclasses.field(default_factory=dict)
    shapes: dict[str, tuple[Arith, ...]] = dataclasses.field(default_factory=dict)
    versions: list[Materialised] = dataclasses.field(default_factory=list)
    inouts: list[str] = dataclasses.field(default_factory=list)

    def run(self, stmts: tuple[Statement, ...]) -> None:
        for s in stmts:
            try:
                self.statement(s)
            except LiftError:
                if self.strict:
                    raise

    def key(self, name: str) -> str:
        n, key = 0, name
        while key in self.shapes or key in self.scope.shapes:
            n += 1
            key = f"{name}'{n}"
        return key

    def statement(self, s: Statement) -> None:
        lhs = [n.name for n in s.indices]
        if len(set(lhs)) != len(lhs):
            raise tc_error(LiftValueError, f"an index variable appears twice on the left of {s.tensor}", s.pos)
        if s.tensor in self.scope.scalars or (s.tensor in self.scope.shapes and s.tensor not in self.env):
            raise tc_error(LiftValueError, f"{s.tensor} is an input: a statement cannot assign it", s.pos,
                           hint="assign an output or a temporary")
        self._inout(s)
        scope = dataclasses.replace(self.scope, shapes={**self.scope.shapes, **self.shapes})
        rhs = resolve(s.rhs, self.env, scope)
        red = reducer(s.op)
        prev = None
        if red is not None and not s.op.endswith("!") and (self.strict or s.tensor in self.env):
            if s.tensor not in self.env:
                raise tc_error(LiftValueError, f"`{s.op}` combines with the previous value of {s.tensor}, "
                               "which no statement defines", s.pos, hint=f"initialise with `{s.op}!`")
            prev = resolve(Call(s.tensor, s.indices, s.pos), self.env, scope)
        stmt = dataclasses.replace(s, rhs=rhs)
        known = self._known(s.tensor)
        probe = stmt if prev is None else dataclasses.replace(stmt, rhs=_pair(rhs, prev))
        ranges = infer(probe, scope, known, strict=self.strict)
        if ranges is None:
            raise LiftValueError("unresolved")  # non-strict pass: skip the statement
        shape = tuple(ranges.extents[v] for v in lhs)
        if known is not None and self.strict and s.tensor in self.env and tuple(known) != shape:
            raise tc_error(LiftTypeError, f"{s.tensor} is redefined with the shape ({', '.join(map(str, shape))}),"
                           f" not ({', '.join(map(str, known))})", s.pos)
        for v in lhs:
            if ranges.starts.get(v, 0) != 0:
                raise tc_error(LiftValueError, f"the output variable {v} must start at 0", s.pos)
        pointwise = red is None and set(ranges.extents) == set(lhs)
        fused = self._epilogue(s.tensor, lhs, rhs) if pointwise else None
        if fused is not None:
            key = self.key(s.tensor)
            self.versions.append(fused(key))
            self.env[s.tensor] = key
            self.shapes[key] = shape
        elif pointwise:
            self.env[s.tensor] = Inline(tuple(lhs), rhs, shape, stmt)
        else:
            key = self.key(s.tensor)
            self.versions.append(Materialised(key, stmt, ranges, prev))
            self.env[s.tensor] = key
            self.shapes[key] = shape
        self.shapes[s.tensor] = shape

    def _epilogue(self, tensor: str, lhs: list[str], rhs: Expr) -> Callable[[str], Materialised] | None:
        """An in-place pointwise update of a reduction's result, read only at its own point
        (`out(i,j) = fmaxf(out(i,j), 0)`), as a new version: the reduction with the update applied
        to its value, so consumers read the updated tensor as a hand-written `relu(dot + b)` does."""
        base = self.env.get(tensor)
        m = next((v for v in self.versions if v.key == base), None)
        if m is None or m.epilogue is not None:
            return None
        point = tuple(Name(v, m.stmt.pos) for v in lhs)
        if any(a.name == base and tuple(a.args) != point for a in accesses(rhs, self.scope)):
            return None
        ren = {v: Name(n.name, n.pos) for v, n in zip(lhs, m.stmt.indices, strict=True)}
        epi = (m.key, substitute(rhs, ren))
        return lambda key: dataclasses.replace(m, key=key, epilogue=epi)

    def _known(self, tensor: str) -> tuple[Arith, ...] | None:
        target = self.env.get(tensor)
        if isinstance(target, Inline):
            return target.shape
        if isinstance(target, str):
            return self.shapes.get(target, self.scope.shapes.get(target))
        return self.hints.get(tensor)

    def _inout(self, s: Statement) -> None:
        """An output read before it is defined becomes an in-out parameter (sgemm's `C`)."""
        if s.tensor in self.env or s.tensor not in self.outputs:
            return
        reads = [a for a in accesses(s.rhs, self.scope) if a.name == s.tensor]
        if not reads:
            return
        if s.tensor not in self.hints:
            raise tc_error(LiftValueError, f"{s.tensor} is read before any statement defines it", reads[0].pos)
        self.inouts.append(s.tensor)
        self.scope = dataclasses.replace(self.scope, shapes={**self.scope.shapes, s.tensor: self.hints[s.tensor]})
        self.env[s.tensor] = s.tensor


def _pair(a: Expr, b: Expr) -> Expr:
    return Binary("+", a, b, cast(Any, getattr(a, "pos", None)))


def translate(fn: Function, constants: Mapping[str, int], fixed: Mapping[str, int] | None = None) -> Lambda:
    """The `lift.fun` program of one TC function; sizes named in `fixed` are those constants."""
    sizes: dict[str, Arith] = {}
    for p in fn.params:
        for d in p.dims or ():
            sizes.setdefault(d, Cst(int(fixed[d])) if fixed and d in fixed else Size(d))
    names = [p.name for p in fn.params]
    for p in fn.params:
        if names.count(p.name) > 1:
            raise tc_error(LiftValueError, f"the parameter {p.name} is declared twice", p.pos)
        if p.name in BUILTINS:  # `exp(i)` would call the built-in, never read the tensor
            raise tc_error(LiftValueError, f"the parameter {p.name!r} has the name of a TC built-in function",
                           p.pos, hint="rename it; built-ins: " + ", ".join(sorted(BUILTINS)))
    for o in fn.outputs:
        if o in BUILTINS:
            raise tc_error(LiftValueError, f"the output {o!r} has the name of a TC built-in function", fn.pos,
                           hint="rename it; built-ins: " + ", ".join(sorted(BUILTINS)))
    shapes = {p.name: tuple(sizes[d] for d in p.dims) for p in fn.params if p.dims is not None}
    scalars = {p.name: p.dtype for p in fn.params if p.dims is None and p.name not in constants}
    scope = Scope(shapes, sizes, scalars, dict(constants))
    first = _Pass(scope, False, {}, fn.outputs)
    first.run(fn.statements)
    final = _Pass(scope, True, first.shapes, fn.outputs)
    final.run(fn.statements)
    for o in fn.outputs:
        if o not in final.env:
            raise tc_error(LiftValueError, f"the output {o} is never assigned", fn.pos)
    outputs = [_materialise(final, o) for o in fn.outputs]
    prog = Program(dataclasses.replace(final.scope, shapes={**final.scope.shapes, **final.shapes}),
                   final.versions)
    params: list[tuple[str, Type]] = []
    for p in fn.params:
        if p.name in constants:
            continue
        t: Type = scalar_type(p.dtype, p.pos)
        for d in reversed(p.dims or ()):
            t = Array(t, sizes[d])
        params.append((p.name, t))
    for name in final.inouts:
        t = scalar_type("float", fn.pos)
        for dim in reversed(final.scope.shapes[name]):
            t = Array(t, dim)
        params.append((name, t))
    body = build_program(prog, outputs, params, list(scalars))
    return fun([t for _, t in params], body, name=fn.name)


def _materialise(p: _Pass, name: str) -> str:
    """The version key of an output; a pointwise (inlined) last version is computed here."""
    target = p.env[name]
    if isinstance(target, str):
        return target
    s = target.stmt
    stmt = dataclasses.replace(s, rhs=target.rhs, indices=tuple(Name(v, s.pos) for v in target.vars), wheres=())
    key = p.key(name)
    p.versions.append(Materialised(key, stmt, Ranges(dict(zip(target.vars, target.shape, strict=True)), {}), None))
    p.env[name] = key
    p.shapes[key] = target.shape
    p.scope = dataclasses.replace(p.scope, shapes={**p.scope.shapes, key: target.shape})
    return key
