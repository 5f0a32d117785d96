"""Algebraic facts of functions, derived from what they compute, never from their names.

A user function's translated body (its numpy twin, lift/userfun/numpy_impl.py: straight-line code,
control flow as `np.where`) is read as a *term* over its arguments; an IR lambda's body is read the
same way, each user function it calls inlined. Facts compare terms:

    operator(f)       the built-in binary operator `f` computes on its two arguments (`a + b`,
                      `b + a`, `a * b`, `x if x > y or x != x else y`, ...), or the laws its author vouched for
                      (`user_fun(..., associative=True, commutative=True, neutral=0.0)`)
    pair_operator(f)  the operator `f` computes on the components of its one pair argument
                      (`p[0] * p[1]`, `p[1] * p[0]`)
    fold_step(f)      `(op, g)` for a fold step `acc (+) g(x)` (or `g(x) (+) acc`, (+) commutative)
    is_identity(f)    `x => x`
    tuple_sums(f)     the width of a tuple of numeric scalars that `f` adds component by component
                      (`(a, b) => (a[0] + b[0], a[1] + b[1])`): a monoid with the neutral tuple of zeros
    selection(f)      the key component and direction of a tuple operator that keeps its first
                      argument unless the second's key is strictly less (greater): `(a, b) =>
                      b if b[1] < a[1] else a`, the arg-min step

Each replacement these facts allow keeps the exact float32 meaning: IEEE addition and multiplication
are commutative (bit for bit), so `b + a` is `a + b`; `max_`/`min_` (a comparison and a choice) are
only recognised in their own operand order.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, cast

from lift.errors import LiftError
from lift.ir.nodes import FunCall, FunDecl, Get, Lambda, Literal, Node, Param, UserFun
from lift.typecheck import type_of, typecheck
from lift.types import ScalarType, TupleType, Type, VectorType

Term = tuple[Any, ...]  # ("arg", i) | ("get", t, j) | ("bin", op, l, r) | ("cmp", op, l, r) | ("where", c, a, b)
#               ("neg", t) | ("call", name, *args) | ("const", value) | ("tuple", *components)


@dataclass(frozen=True)
class Laws:
    """What the author of a user function vouches for (`user_fun(..., associative=True, ...)`)."""

    associative: bool = False
    commutative: bool = False
    neutral: float | int | None = None


@dataclass(frozen=True)
class Operator:
    """An associative binary operator: a built-in (`fun`) or a user function vouched for."""

    fun: Any  # a GenericUserFun (built-in) or the vouched UserFun itself
    kind: str  # the built-in's kind ("add", "mult", "max_", "min_"; the kernels' atomics and the
    #            interpreter's numpy folds), "" for an operator its author vouched for
    commutative: bool
    neutral: float | int | None  # z with op(z, x) == x (None: any z is neutral, the idempotent max/min)
    idempotent: bool = False
    vouched: bool = False

    def on(self, t: Type) -> UserFun:
        """The operator's user function on two arguments of type `t`."""
        return self.fun if isinstance(self.fun, UserFun) else self.fun.specialise(t, t)

    def is_neutral(self, z: Node) -> bool:
        """Whether partial reductions may each start from `z`: any `z` for an idempotent operator
        (max, min), else the constant neutral element."""
        if self.idempotent:
            return True
        return isinstance(z, Literal) and self.neutral is not None and z.value == self.neutral

    @property
    def sums(self) -> bool:
        """Whether the operator is addition (the lanes of a vector accumulator are summed by `+`)."""
        return self.kind == "add"


def _builtin(name: str) -> Any:
    from lift.userfun import builtins

    return getattr(builtins, name)


def operators() -> tuple[Operator, ...]:
    """The built-in associative operators and their laws."""
    global _OPERATORS
    if _OPERATORS is None:
        _OPERATORS = (Operator(_builtin("add"), "add", True, 0), Operator(_builtin("mult"), "mult", True, 1),
                      Operator(_builtin("max_"), "max_", True, None, idempotent=True),
                      Operator(_builtin("min_"), "min_", True, None, idempotent=True))
    return _OPERATORS


_OPERATORS: tuple[Operator, ...] | None = None
_TERMS: dict[Any, Term | None] = {}
_FACTS: dict[tuple[str, Any], Any] = {}


# ------------------------------------------------------------------------------------- terms


def term(f: FunDecl) -> Term | None:
    """What `f` computes, as a term over its arguments (`("arg", i)`), or None when unknown."""
    try:
        key: Any = f
        hash(key)
    except TypeError:
        return None
    if key not in _TERMS:
        _TERMS[key] = _term(f)
    return _TERMS[key]


def _term(f: FunDecl) -> Term | None:
    if isinstance(f, UserFun):
        return _twin_term(f)
    if isinstance(f, Lambda):
        return _ir_term(f.body, {p.id: ("arg", i) for i, p in enumerate(f.params)})
    return None


def _ir_term(e: Node, env: dict[int, Term]) -> Term | None:
    """The term of an IR expression whose free parameters `env` names."""
    if isinstance(e, Param):
        return env.get(e.id)
    if isinstance(e, Literal):
        return ("const", e.value) if isinstance(e.ltype, ScalarType) else None
    if not isinstance(e, FunCall):
        return None
    args = [_ir_term(a, env) for a in e.args]
    if any(a is None for a in args):
        return None
    if isinstance(e.f, Get) and len(args) == 1:
        return ("get", args[0], e.f.i)
    inner = term(e.f) if isinstance(e.f, UserFun | Lambda) else None
    return None if inner is None else _instantiate(inner, cast(list[tuple[Any, ...]], args))


def _instantiate(t: Term, args: list[Term]) -> Term:
    """`t` with `("arg", i)` replaced by `args[i]`."""
    if t[0] == "arg":
        return args[t[1]]
    return (t[0], *(_instantiate(x, args) if isinstance(x, tuple) else x for x in t[1:]))


_BINS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_CMPS = {ast.Gt: ">", ast.Lt: "<", ast.GtE: ">=", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}


def _twin_term(f: UserFun) -> Term | None:
    """The term of a translated user function, read from its numpy twin's source."""
    source = getattr(f.np_fn, "__liftcl_source__", None)
    if source is None or getattr(f.py_fn, "__liftcl_raw_c__", False):
        return None
    try:
        fn = ast.parse(source).body[0]
    except SyntaxError:
        return None
    if not (isinstance(fn, ast.FunctionDef) and len(fn.body) == 1 and isinstance(fn.body[0], ast.With)):
        return None
    args = {a.arg: ("arg", i) for i, a in enumerate(fn.args.args)}
    env: dict[str, Term | None] = dict(args)
    for st in fn.body[0].body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            name = st.targets[0].id
            env[name] = args[name] if name in args and _is_conversion(st.value) else _read(st.value, env)
        elif isinstance(st, ast.Return) and isinstance(st.value, ast.Call) and st.value.args:
            return _read(st.value.args[0], env)
        else:
            return None
    return None


def _is_conversion(v: ast.expr) -> bool:
    """`_h.arg(p, _IN[i])`, the twin's conversion of a parameter."""
    return isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "arg"


def _read(e: ast.expr, env: dict[str, Term | None]) -> Term | None:  # noqa: PLR0911 - one case per form
    if isinstance(e, ast.Name):
        return env.get(e.id)
    if isinstance(e, ast.BinOp) and type(e.op) in _BINS:
        return _node("bin", _BINS[type(e.op)], _read(e.left, env), _read(e.right, env))
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        return _node("neg", _read(e.operand, env))
    if isinstance(e, ast.Compare) and len(e.ops) == 1 and type(e.ops[0]) in _CMPS:
        return _node("cmp", _CMPS[type(e.ops[0])], _read(e.left, env), _read(e.comparators[0], env))
    if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, int):
        return _node("get", _read(e.value, env), e.slice.value)
    if isinstance(e, ast.Constant) and isinstance(e.value, int | float):
        return ("const", e.value)
    if isinstance(e, ast.Tuple):
        return _node("tuple", *(_read(x, env) for x in e.elts))
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name):
        if e.func.value.id != "_np" or e.keywords:
            return None
        if e.func.attr in ("float32", "float64", "int32", "int64") and len(e.args) == 1:
            inner = _read(e.args[0], env)
            return inner if inner is not None and inner[0] == "const" else None
        args = [_read(a, env) for a in e.args]
        if e.func.attr == "where" and len(args) == 3:
            return _node("where", *args)
        return _node("call", e.func.attr, *args)
    return None


def _node(kind: str, *parts: Any) -> Term | None:
    return None if any(p is None for p in parts) else (kind, *parts)


# ------------------------------------------------------------------------------------- facts


def _cached(kind: str, f: Any, make: Any) -> Any:
    try:
        key = (kind, f)
        hash(key)
    except TypeError:
        return make()
    if key not in _FACTS:
        _FACTS[key] = make()
    return _FACTS[key]


def _swap(t: Term) -> Term:
    """`t` with its two arguments exchanged."""
    return _instantiate(t, [("arg", 1), ("arg", 0)])


def _numeric(t: Type) -> bool:
    s = t.scalar if isinstance(t, VectorType) else t
    return isinstance(s, ScalarType) and s.dtype.kind in "fiu"


def _types(f: FunDecl) -> tuple[tuple[Type, ...], Type] | None:
    """`f`'s argument and result types (a lambda's from its parameters and typed body)."""
    if isinstance(f, UserFun):
        return tuple(f.in_types), f.out_type
    if isinstance(f, Lambda):

        try:
            typecheck(f)
            return tuple(p.ptype for p in f.params), type_of(f.body)
        except Exception:  # noqa: BLE001 - an ill-typed lambda has no facts
            return None
    return None


def _binary_type(f: FunDecl) -> Type | None:
    """`T` when `f` takes two arguments of type `T` and returns a `T`, else None."""
    typed = _types(f)
    if typed is None or len(typed[0]) != 2 or not typed[0][0] == typed[0][1] == typed[1]:
        return None
    return typed[1]


def operator(f: FunDecl) -> Operator | None:
    """The associative operator `f` is on its two arguments of one numeric type, or None."""
    return _cached("operator", f, lambda: _operator(f))


def _operator(f: FunDecl) -> Operator | None:
    t = _binary_type(f)
    if t is None:
        return None
    if not _numeric(t):
        return None
    laws = getattr(f, "laws", None)
    if isinstance(laws, Laws) and laws.associative:
        return Operator(f, "", laws.commutative, laws.neutral, vouched=True)
    mine = term(f)
    if mine is None:
        return None
    for op in operators():
        theirs = _builtin_term(op, t)
        if theirs is not None and (mine == theirs or (op.commutative and mine == _swap(theirs))):
            return op
    return None


def _builtin_term(op: Operator, t: Type) -> Term | None:
    """The term of built-in `op` on two arguments of type `t`, or None for a type it does not take."""
    try:
        return term(op.on(t))
    except LiftError:
        return None


def pair_operator(f: FunDecl) -> Operator | None:
    """The operator `f` computes on the two components of its one pair argument
    (`p => p[0] * p[1]`), or None."""
    return _cached("pair", f, lambda: _pair_operator(f))


def _pair_operator(f: FunDecl) -> Operator | None:

    typed = _types(f)
    if typed is None or len(typed[0]) != 1:
        return None
    (pt,), out = typed
    if not (isinstance(pt, TupleType) and len(pt.elems) == 2 and pt.elems[0] == pt.elems[1] == out
            and _numeric(out)):
        return None
    mine = term(f)
    if mine is None:
        return None
    comps = [("get", ("arg", 0), 0), ("get", ("arg", 0), 1)]
    for op in operators():
        theirs = _builtin_term(op, out)
        if theirs is None:
            continue
        if mine == _instantiate(theirs, comps) or (op.commutative and mine == _instantiate(theirs, comps[::-1])):
            return op
    return None


def fold_step(f: FunDecl) -> tuple[Operator, Term] | None:
    """`(op, g)` when `f(acc, x) = op(acc, g(x))` (or `op(g(x), acc)` with `op` commutative) for a
    built-in operator `op` and a term `g` of `("arg", 1)` alone; None otherwise."""
    return _cached("fold", f, lambda: _fold_step(f))


def _fold_step(f: FunDecl) -> tuple[Operator, Term] | None:
    typed = _types(f)
    if typed is None or len(typed[0]) != 2 or typed[0][0] != typed[1] or not _numeric(typed[1]):
        return None
    mine = term(f)
    if mine is None:
        return None
    for op in operators():
        theirs = _builtin_term(op, typed[1])
        if theirs is None or theirs[0] != "bin":  # a fold of max_/min_ keeps its comparison
            continue
        for acc_first in (True, False) if op.commutative else (True,):
            pattern = theirs if acc_first else _swap(theirs)
            g = _match_arg1(pattern, mine)
            if g is not None and not _mentions_arg(g, 0):
                return op, g
    return None


def _match_arg1(pattern: Term, t: Term) -> Term | None:
    """The sub-term of `t` at the place of `("arg", 1)` in `pattern`, when `t` is `pattern` with
    only that argument replaced."""
    if pattern == ("arg", 1):
        return t
    if not isinstance(t, tuple) or pattern[0] != t[0] or len(pattern) != len(t):
        return None
    if pattern[0] == "arg":
        return () if pattern == t else None
    found: Term | None = ()
    for p, x in zip(pattern[1:], t[1:]):
        if isinstance(p, tuple):
            sub = _match_arg1(p, x)
            if sub is None:
                return None
            found = sub if sub != () else found
        elif p != x:
            return None
    return found


def _mentions_arg(t: Any, i: int) -> bool:
    if not isinstance(t, tuple):
        return False
    if t and t[0] == "arg":
        return t[1] == i
    return any(_mentions_arg(x, i) for x in t[1:])


def pair_call(f: FunDecl) -> UserFun | None:
    """`uf` when `f` is `p => uf(p.0, p.1)` (how `map(uf) << zip(a, b)` is built), else None."""
    if not (isinstance(f, Lambda) and len(f.params) == 1 and isinstance(f.body, FunCall)):
        return None
    q, uf = f.params[0], f.body.f
    if not (isinstance(uf, UserFun) and len(f.body.args) == 2 and all(
            isinstance(a, FunCall) and a.f == Get(i) and a.args == (q,) for i, a in enumerate(f.body.args))):
        return None
    return uf


def is_identity(f: FunDecl) -> bool:
    """Whether `f` returns its one argument unchanged."""
    typed = _types(f)
    return typed is not None and len(typed[0]) == 1 and typed[0][0] == typed[1] and term(f) == ("arg", 0)


def sums(f: FunDecl) -> bool:
    """Whether `f` is addition on its two arguments (whatever it is called)."""
    op = operator(f)
    return op is not None and op.sums


def tuple_sums(f: FunDecl) -> int | None:
    """The number of components when `f` adds two tuples of numeric scalars component by component
    (`(a, b) => (a[0] + b[0], .., a[k-1] + b[k-1])`, each sum in either order), else None. Such an
    `f` is associative and commutative (IEEE addition is commutative bit for bit) with the neutral
    tuple of zeros, and its lanes may be summed component by component."""
    return _cached("tuple_sums", f, lambda: _tuple_sums(f))


def _tuple_sums(f: FunDecl) -> int | None:
    t = _binary_type(f)
    if t is None:
        return None
    if not (isinstance(t, TupleType) and t.elems and all(isinstance(e, ScalarType) and _numeric(e) for e in t.elems)):
        return None
    mine = term(f)
    if mine is None or mine[0] != "tuple" or len(mine) != 1 + len(t.elems):
        return None
    for j, comp in enumerate(mine[1:]):
        a, b = ("get", ("arg", 0), j), ("get", ("arg", 1), j)
        if comp not in (("bin", "+", a, b), ("bin", "+", b, a)):
            return None
    return len(t.elems)


def commutes(f: FunDecl) -> bool:
    """Whether `f(a, b) == f(b, a)` exactly (a commutative operator)."""
    op = operator(f)
    return op is not None and op.commutative


@dataclass(frozen=True)
class Selection:
    """A tuple operator `(a, b) => b if b[key] < a[key] else a` (`least`; `>` for the greatest):
    the arg-min (arg-max) step, keeping the first of equal keys.

    It is no monoid on all tuples (a NaN key kept as `a` is never replaced, a NaN `b` never
    chosen: `op(op(1, NaN), 0) = 0` but `op(1, op(NaN, 0)) = 1`), but a fold from an initial value
    `z` whose key is not NaN only ever holds non-NaN keys, and on those the operator is the
    first-minimum, associative: chunks each folded from `z` and their partial results folded in
    their order from `z` give exactly the fold of the whole array. It is not commutative (ties keep
    the earlier element), so the chunks' order must be kept (no atomic combine, no tail first)."""

    key: int
    least: bool


def selection(f: FunDecl) -> Selection | None:
    """The `Selection` `f` computes on two tuples of its result type, or None."""
    return _cached("selection", f, lambda: _selection(f))


def _selection(f: FunDecl) -> Selection | None:
    t = _binary_type(f)
    if t is None:
        return None
    if not isinstance(t, TupleType):
        return None
    mine = term(f)
    if mine is None or mine[0] != "tuple" or len(mine) != 1 + len(t.elems):
        return None
    comps = mine[1:]
    cond = comps[0][1] if comps[0][0] == "where" else None
    want = tuple(("where", cond, ("get", ("arg", 1), i), ("get", ("arg", 0), i)) for i in range(len(t.elems)))
    if cond is None or comps != want or cond[0] != "cmp":
        return None
    for key, kt in enumerate(t.elems):
        if not (isinstance(kt, ScalarType) and _numeric(kt)):
            continue
        mine_k, acc_k = ("get", ("arg", 1), key), ("get", ("arg", 0), key)
        if cond in (("cmp", "<", mine_k, acc_k), ("cmp", ">", acc_k, mine_k)):
            return Selection(key, True)
        if cond in (("cmp", ">", mine_k, acc_k), ("cmp", "<", acc_k, mine_k)):
            return Selection(key, False)
    return None
