"""Range inference of Tensor Comprehensions (TC paper, section 3.1).

Index variables start at 0 (a `where v in lo:hi` clause says otherwise). Inference runs in rounds:
each round takes the accesses whose subscript has exactly one unresolved variable, asks that the
access stays in bounds for every value of the variables resolved before (universal quantification),
and gives the variable the largest range that does so, intersecting the ranges that several accesses
give in one round. For `O(i) = K(x) * I(i + x)` the first round gives `x` the range of `K` (`N`), the
second `i + x < M` for all `x < N`, so `i < M - N + 1`. A variable that no round resolves is an
error asking for a `where` clause. Ranges are `Size` arithmetic over the parameters' size names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeGuard

from lift.arith import Arith, Cst, as_arith
from lift.arith.ranged import min_
from lift.comprehension.syntax import Binary, Call, Expr, Name, Num, Pos, Statement, Ternary, Unary
from lift.errors import LiftTypeError, LiftValueError, UnsupportedError

BUILTINS = ("fmaxf", "fminf", "fmax", "fmin", "max", "min", "exp", "expf", "log", "logf", "tanh", "tanhf",
            "sqrt", "sqrtf", "fabs", "fabsf", "abs", "sigmoid")
SUPPORTED = ("subscripts affine in the index variables with non-negative integer coefficients "
             "(`i`, `h + kh`, `2 * i + kw`, `i + 1`), at most two variables per subscript, or an int "
             "tensor's element as a whole subscript (a gather: `X(I(i, k), j)`)")


@dataclass(frozen=True, slots=True)
class Affine:
    """`sum(coeffs[v] * v) + const`: a subscript; `coeffs` in the order the variables appear."""

    coeffs: tuple[tuple[str, int], ...]
    const: Arith

    @property
    def vars(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.coeffs)

    def coeff(self, v: str) -> int:
        return dict(self.coeffs).get(v, 0)

    def shifted(self, shifts: Mapping[str, Arith]) -> Affine:
        """The subscript with `v` replaced by `v + shifts[v]` (a `where v in lo:hi` with lo > 0)."""
        extra = sum((c * shifts[v] for v, c in self.coeffs if v in shifts), Cst(0))
        return Affine(self.coeffs, as_arith(self.const + extra))


def tc_error(cls: type, message: str, pos: Pos, hint: str | None = None) -> Exception:
    """An error of class `cls` naming the TC source line and column."""
    return cls(f"TC: {message} at {pos}", loc=pos.loc(), hint=hint)


@dataclass(frozen=True, slots=True)
class Scope:
    """What names mean in a function: tensor shapes, sizes, scalar parameters, constants."""

    shapes: Mapping[str, tuple[Arith, ...]]
    sizes: Mapping[str, Arith]
    scalars: Mapping[str, str]  # scalar parameter -> TC type
    constants: Mapping[str, int]  # int scalars fixed by the caller (partial evaluation)

    def constant(self, e: Expr) -> Arith | None:
        """`e` as size arithmetic when it names no index variable (sizes, constants, numbers)."""
        match e:
            case Num(value=v, is_float=False):
                return Cst(int(v))
            case Name(name=n) if n in self.constants:
                return Cst(int(self.constants[n]))
            case Name(name=n) if n in self.sizes:
                return self.sizes[n]
            case Binary(op=op, left=a, right=b) if op in "+-*/":
                x, y = self.constant(a), self.constant(b)
                if x is None or y is None:
                    return None
                return as_arith({"+": x + y, "-": x - y, "*": x * y, "/": x // y}[op])
        return None

    def affine(self, e: Expr, index_vars: set[str]) -> Affine:
        """A subscript as an `Affine` form, or an `UnsupportedError` naming what is not affine."""
        c = self.constant(e)
        if c is not None:
            return Affine((), c)
        match e:
            case Name(name=n) if n in index_vars:
                return Affine(((n, 1),), Cst(0))
            case Name(name=n) if n in self.scalars:
                raise tc_error(UnsupportedError, f"the scalar parameter {n!r} is used in a subscript", e.pos,
                               hint=f"fix it at translation: lift.tc(source, constants={{'{n}': 2}})")
            case Binary(op="+" | "-" as op, left=a, right=b):
                x, y = self.affine(a, index_vars), self.affine(b, index_vars)
                if op == "-" and y.coeffs:
                    raise tc_error(UnsupportedError, "a subscript subtracts an index variable", e.pos,
                                   hint="supported: " + SUPPORTED)
                coeffs = dict(x.coeffs)
                for v, coef in y.coeffs:
                    coeffs[v] = coeffs.get(v, 0) + coef
                const = x.const + y.const if op == "+" else x.const - y.const
                return Affine(tuple(coeffs.items()), as_arith(const))
            case Binary(op="*", left=a, right=b):
                x, y = self.affine(a, index_vars), self.affine(b, index_vars)
                if x.coeffs and y.coeffs:
                    raise tc_error(UnsupportedError, "a subscript multiplies two index variables", e.pos,
                                   hint="supported: " + SUPPORTED)
                k, f = (x, y) if not x.coeffs else (y, x)
                if not isinstance(k.const, Cst):
                    raise tc_error(UnsupportedError, f"a subscript coefficient must be an integer, got {k.const}",
                                   e.pos, hint="supported: " + SUPPORTED)
                m = int(k.const.value)
                return Affine(tuple((v, m * c) for v, c in f.coeffs), as_arith(f.const * m))
            case Call(name=n):
                raise tc_error(UnsupportedError, f"the data-dependent subscript {n}(...) (a gather) is "
                               "supported as a whole subscript only, not inside arithmetic", e.pos,
                               hint="supported: " + SUPPORTED)
        raise tc_error(UnsupportedError, "a subscript is not affine in the index variables", _pos(e),
                       hint="supported: " + SUPPORTED)


def _pos(e: Expr) -> Pos:
    return e.pos


def accesses(e: Expr, scope: Scope) -> list[Call]:
    """The tensor accesses in `e`, in order (built-in calls looked through)."""
    out: list[Call] = []
    match e:
        case Call(name=n, args=args) if n in scope.shapes or n not in BUILTINS:
            out.append(e)
        case Call(args=args):
            for a in args:
                out += accesses(a, scope)
        case Unary(arg=a):
            out += accesses(a, scope)
        case Binary(left=a, right=b):
            out += accesses(a, scope) + accesses(b, scope)
        case Ternary(cond=c, then=a, other=b):
            out += accesses(c, scope) + accesses(a, scope) + accesses(b, scope)
    return out


def index_vars(stmt: Statement, scope: Scope) -> list[str]:
    """The statement's index variables: the left-hand side's, then the others in order of appearance."""
    seen = [n.name for n in stmt.indices]
    for a in accesses(stmt.rhs, scope):
        for sub in a.args:
            for n in _names(sub):
                if n not in seen and n not in scope.sizes and n not in scope.constants and n not in scope.scalars:
                    seen.append(n)
    return seen


def _names(e: Expr) -> list[str]:
    match e:
        case Name(name=n):
            return [n]
        case Binary(left=a, right=b):
            return _names(a) + _names(b)
        case Unary(arg=a):
            return _names(a)
        case Call(args=args):
            return [n for a in args for n in _names(a)]
    return []


@dataclass(frozen=True, slots=True)
class Ranges:
    """A statement's index variables: `extents[v]` values from `starts[v]` (0 unless a where says)."""

    extents: Mapping[str, Arith]
    starts: Mapping[str, Arith]


def infer(stmt: Statement, scope: Scope, known_lhs: tuple[Arith, ...] | None = None,
          *, strict: bool = True) -> Ranges | None:
    """The ranges of a statement's index variables (None when not `strict` and some stay unresolved)."""
    ivars = index_vars(stmt, scope)
    extents: dict[str, Arith] = {}
    starts: dict[str, Arith] = {}
    for w in stmt.wheres:
        if w.var not in ivars:
            raise tc_error(LiftValueError, f"`where {w.var} in ...` names no index variable of the statement",
                           w.pos)
        lo, hi = scope.constant(w.lo), scope.constant(w.hi)
        if lo is None or hi is None:
            raise tc_error(UnsupportedError, f"the range of {w.var} must be sizes or integers", w.pos)
        extents[w.var], starts[w.var] = as_arith(hi - lo), lo
    constraints = _constraints(stmt, scope, set(ivars), starts)
    unresolved = [v for v in ivars if v not in extents]
    while unresolved:
        found: dict[str, Arith] = {}
        for aff, size in constraints:
            free = [v for v in aff.vars if v not in extents]
            if len(free) != 1:
                continue
            v = free[0]
            rest = aff.const + sum((c * (extents[u] - 1) for u, c in aff.coeffs if u != v), Cst(0))
            ext = as_arith((size - rest - 1) // aff.coeff(v) + 1)
            found[v] = as_arith(min_(found[v], ext)) if v in found else ext
        if not found:
            break
        extents.update(found)
        unresolved = [v for v in unresolved if v not in found]
    for k, n in enumerate(stmt.indices):
        if n.name in unresolved and known_lhs is not None:
            extents[n.name] = known_lhs[k]
            unresolved.remove(n.name)
    if unresolved:
        if not strict:
            return None
        v = unresolved[0]
        where = next(p for p in _var_positions(stmt, v))
        raise tc_error(LiftValueError, f"cannot infer the range of the index variable {v!r}: no access "
                       "bounds it alone once the others are known", where,
                       hint=f"add `where {v} in 0:N` to the statement (N a size or an integer)")
    return Ranges(extents, starts)


def _constraints(stmt: Statement, scope: Scope, ivars: set[str],
                 starts: Mapping[str, Arith]) -> list[tuple[Affine, Arith]]:
    """(subscript, dimension size) of every access to a tensor of known shape."""
    out: list[tuple[Affine, Arith]] = []
    for a in accesses(stmt.rhs, scope):
        _access_constraints(a, scope, ivars, starts, out)
    return out


def _access_constraints(a: Call, scope: Scope, ivars: set[str], starts: Mapping[str, Arith],
                        out: list[tuple[Affine, Arith]]) -> None:
    """The constraints of access `a`; a gathered subscript (`X(I(i, k), j)`) bounds nothing in `X`
    (its value is data), but its own access `I(i, k)` bounds `i` and `k`."""
    shape = check_access(a, scope)
    if shape is None:
        return
    for sub, size in zip(a.args, shape, strict=True):
        if is_gather(sub, scope):
            _access_constraints(sub, scope, ivars, starts, out)
            continue
        aff = scope.affine(sub, ivars).shifted(starts)
        if aff.vars:
            out.append((aff, size))


def is_gather(sub: Expr, scope: Scope) -> TypeGuard[Call]:
    """Whether a subscript is a data-dependent index: an access to an int tensor (`I(i, k)`)."""
    return isinstance(sub, Call) and sub.name in scope.shapes and sub.name not in BUILTINS


def check_access(a: Call, scope: Scope) -> tuple[Arith, ...] | None:
    """The shape of the accessed tensor after checking the access's rank (None: not yet known)."""
    if a.name not in scope.shapes:
        return None
    shape = scope.shapes[a.name]
    if len(a.args) != len(shape):
        raise tc_error(LiftTypeError, f"{a.name} has {len(shape)} dimension(s) but is accessed with "
                       f"{len(a.args)} subscript(s)", a.pos)
    return shape


def _var_positions(stmt: Statement, v: str) -> list[Pos]:
    out = [n.pos for n in stmt.indices if n.name == v]
    stack: list[Expr] = [stmt.rhs]
    while stack:
        e = stack.pop()
        match e:
            case Name(name=n) if n == v:
                out.append(e.pos)
            case Call(args=args):
                stack += list(args)
            case Binary(left=a, right=b):
                stack += [b, a]
            case Unary(arg=a):
                stack.append(a)
            case Ternary(cond=c, then=a, other=b):
                stack += [b, a, c]
    return out or [stmt.pos]
