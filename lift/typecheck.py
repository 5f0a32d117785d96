"""Type checking (thesis 2.3.1.1, Fig. 2.8, 2.9, 2.12) with symbolic array sizes.

`typed(program) -> Typed` is the stage: the program's type, every expression's type by path and
the size conditions. `type_of(expr)` is the type of one expression (a call's type is computed
once and memoised on the call); `infer(f, arg_types)` is the type rule of applying function `f`,
the case its family registered (lift.ir.registry), each rule below. Sizes are symbolic: a condition that holds
only for some sizes (a split of `N` by 4) is recorded as a `SizeCondition` on the call
(see `size_conditions`), checked by the interpreter and left to the constraint solver;
one that is provably false is a `LiftTypeError` at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

import lift.gather  # noqa: F401 - the gather family's module: its stages' cases register on import
from lift.arith import (
    Arith,
    Cst,
    evaluate,
    exact_div,
    free_vars,
    prove_divides,
    prove_eq,
    prove_lt,
    prove_nonneg,
    substitute,
)
from lift.errors import LiftTypeError, UnsupportedError, is_library_loc, nesting_guard
from lift.ir.build import Deferred
from lift.ir.nodes import (
    MAPS,
    PAD_MODES,
    REDUCES,
    AbstractMap,
    AbstractReduce,
    AsScalar,
    AsVector,
    At,
    Expr,
    FunCall,
    FunDecl,
    Get,
    Iota,
    Iterate,
    Join,
    Lambda,
    Let,
    Literal,
    MakeTuple,
    Node,
    OclKernel,
    Pad,
    Param,
    Slide,
    Split,
    ToGlobal,
    ToLocal,
    ToPrivate,
    Transpose,
    TransposeW,
    UserFun,
    Vectorise,
    Zip,
    memo_of,
    set_memo,
)
from lift.ir.paths import Path, walk
from lift.ir.registry import RewritePoint, case, register, table
from lift.types import (
    ArrayType,
    Bool,
    FunType,
    Int,
    ScalarType,
    TupleType,
    Type,
    VectorType,
    base_type,
    types_equal,
)


@dataclass(frozen=True, slots=True)
class SizeCondition:
    """A named condition on symbolic sizes: `kind` is divides, positive, nonneg or less."""

    kind: str
    a: Arith
    b: Arith
    node: Node
    reason: str

    def holds(self, sizes: dict[str, int]) -> bool:
        a, b = evaluate(self.a, sizes), evaluate(self.b, sizes)
        return {
            "divides": lambda: a != 0 and b % a == 0,
            "positive": lambda: a > 0,
            "nonneg": lambda: a >= 0,
            "less": lambda: a < b,
        }[self.kind]()

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class Typed:
    """The type checker's record of a program (STYLE 4: side tables, not fields on nodes): its
    type, the type of every expression by path (`lift.ir.paths`), and the size conditions its
    calls recorded (`SizeCondition`, in pre-order)."""

    program: Node
    type: Type
    types: Mapping[Path, Type]
    conditions: tuple[SizeCondition, ...]


def typed(e: Node) -> Typed:
    """Type check `e`: its `Typed` record (program -> types by path and size conditions)."""
    t = typecheck(e)
    types: dict[Path, Type] = {}
    conds: list[SizeCondition] = []
    for path, x in walk(e):
        if isinstance(x, Expr):
            types[path] = type_of(x)
            if isinstance(x, FunCall):
                conds.extend(_memo(x)[1])
    return Typed(e, t, MappingProxyType(types), tuple(conds))


@nesting_guard("typecheck")
def typecheck(e: Node) -> Type:
    """The type of a program: `FunType` for a lambda, else the expression's type."""
    if isinstance(e, Lambda):
        return FunType(tuple(p.ptype for p in e.params), type_of(e.body))
    if isinstance(e, Expr):
        return type_of(e)
    if isinstance(e, FunDecl):
        raise LiftTypeError(
            f"{e} is a function without argument types", node=e,
            hint="wrap the program in lift.fun([types...], lambda ...) or apply it to an expression",
        )
    if isinstance(e, Deferred):
        raise LiftTypeError(f"{e!r} is a function without argument types", loc=e.loc,
                            hint="wrap the program in lift.fun([types...], lambda ...)")
    raise LiftTypeError(f"not a LIFT program: {e!r}")


def type_of(e: Expr) -> Type:
    """The type of expression `e`, a pure function of its structure: computed once per call node
    and memoised on it (`lift.ir.nodes.Memo`, as the structural hash is); no global table."""
    if isinstance(e, Param):
        return e.ptype
    if isinstance(e, Literal):
        return e.ltype
    return _memo(e)[0]


def _memo(e: Expr) -> tuple[Type, tuple[SizeCondition, ...]]:
    """A call's type and the size conditions it records, computed once (each call keeps its own
    conditions, which name its source line)."""
    got = memo_of(e)
    if got is not None:
        return cast(tuple[Type, tuple[SizeCondition, ...]], got)
    if not isinstance(e, FunCall):
        raise LiftTypeError(f"not an expression: {e!r}")
    conds: list[SizeCondition] = []
    ts: list[Type] = []
    for a in e.args:  # `type_of`, written out: one Python frame per nested call
        ts.append(a.ptype if isinstance(a, Param) else a.ltype if isinstance(a, Literal) else _memo(a)[0])
    got = (infer(e.f, ts, e, conds), tuple(conds))
    set_memo(e, got)
    return got


def size_conditions(e: Node) -> list[SizeCondition]:
    """Every size condition recorded while typing the calls inside `e`."""
    return list(typed(e).conditions)


def _err(msg: str, call: Node, **kw: Any) -> LiftTypeError:
    node = call
    if isinstance(call, FunCall) and call.f.loc is not None and not is_library_loc(call.f.loc) \
            and (call.loc is None or is_library_loc(call.loc)):
        node = call.f  # the user's own function, built where the call was not
    return LiftTypeError(msg, node=node, **kw)


def _array(t: Type, call: Node, what: str) -> ArrayType:
    if not isinstance(t, ArrayType):
        raise _err(f"{what} expects an array, got {t}", call, got=t)
    return t


def _require(kind: str, a: Arith, b: Arith, call: Node, conds: list[SizeCondition], reason: str,
             hint: str = "") -> None:
    """Record a size condition; raise if it is provably false."""
    proven = {
        "divides": lambda: prove_divides(a, b),
        "positive": lambda: prove_lt(0, a),
        "nonneg": lambda: prove_nonneg(a),
        "less": lambda: prove_lt(a, b),
    }[kind]()
    if proven:
        return
    cond = SizeCondition(kind, a, b, call, reason)
    if not (free_vars(a) | free_vars(b)):
        if not cond.holds({}):
            raise _err(reason + ", but it does not", call, hint=hint or None)
        return
    conds.append(cond)


_RULES = table("typecheck")


def infer(f: FunDecl, ts: list[Type], call: Node, conds: list[SizeCondition] | None = None) -> Type:
    """The result type of applying `f` to arguments of types `ts` (in `call`): the typing rule
    its family registered (lift.ir.registry)."""
    conds = conds if conds is not None else []
    if len(ts) != f.arity:
        raise _err(f"{_fname(f)} takes {f.arity} argument(s), got {len(ts)}", call,
                   expected=f.arity, got=len(ts))
    rule = _RULES.get(type(f)) or case("typecheck", f)
    if rule is None:
        raise UnsupportedError(f"the type checker has no rule for {type(f).__name__} (see lift.ir.registry)",
                               node=call)
    return cast(Type, rule(f, ts, call, conds))


# ------------------------------------------------------------ the typing rules (thesis Fig. 2.8)


@register(Lambda, stage="typecheck")
def _lambda(f: Lambda, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    for p, t in zip(f.params, ts):
        if not types_equal(p.ptype, t):
            raise _err(f"lambda parameter {p.name} expects {p.ptype}, got {t}", call, expected=p.ptype, got=t)
    return type_of(f.body)


@register(UserFun, stage="typecheck")
def _userfun(f: UserFun, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    for k, (want, t) in enumerate(zip(f.in_types, ts)):
        if not types_equal(want, t):
            raise _err(f"user function {f.name} expects {want} for argument {k}, got {t}",
                       call, expected=want, got=t)
    return f.out_type


@register(*MAPS, stage="typecheck")
def _map(f: AbstractMap, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    a = _array(ts[0], call, type(f).__name__.lower())
    return ArrayType(infer(f.f, [a.elem], call, conds), a.size)


@register(*REDUCES, stage="typecheck")
def _reduce(f: AbstractReduce, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    init, x = ts
    a = _array(x, call, "reduce")
    r = infer(f.f, [init, a.elem], call, conds)
    if not types_equal(r, init):
        raise _err(f"reduce function must return the accumulator type {init}, returns {r}",
                   call, expected=init, got=r)
    return init


@register(Zip, stage="typecheck")
def _zip(f: Zip, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    arrs = [_array(t, call, "zip") for t in ts]
    for a in arrs[1:]:
        if not prove_eq(a.size, arrs[0].size):
            shown = " and ".join(str(t) for t in ts)
            raise _err(f"zip expects arrays of equal length, got {shown}", call, expected=arrs[0], got=a,
                       hint="split or pad one input so both lengths agree")
    return ArrayType(TupleType(tuple(a.elem for a in arrs)), arrs[0].size)


@register(MakeTuple, stage="typecheck")
def _tuple(f: MakeTuple, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    return TupleType(tuple(ts))


@register(Get, stage="typecheck")
def _get(f: Get, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    t, i = ts[0], f.i
    if not isinstance(t, TupleType):
        raise _err(f"get({i}) expects a tuple, got {t}", call, got=t)
    if not 0 <= i < len(t.elems):
        raise _err(f"get({i}) out of range for {t}", call, got=t)
    return t.elems[i]


@register(At, stage="typecheck")
def _at(f: At, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    t, i = ts[0], f.index
    if isinstance(t, VectorType):
        if not (isinstance(i, Cst) and 0 <= i.value < t.n):
            raise _err(f"vector index {i} out of range for {t}", call, got=t)
        return t.scalar
    a = _array(t, call, "indexing")
    _require("nonneg", i, Cst(0), call, conds, f"index {i} >= 0")
    _require("less", i, a.size, call, conds, f"index {i} < {a.size}")
    return a.elem


@register(Split, stage="typecheck")
def _split(f: Split, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    a, m = _array(ts[0], call, "split"), f.n
    _require("positive", m, Cst(0), call, conds, f"split size {m} > 0")
    _require("divides", m, a.size, call, conds, f"split({m}) needs {m} to divide {a.size}",
             hint="pad the array or choose a split size that divides its length")
    return ArrayType(ArrayType(a.elem, m), exact_div(a.size, m))


@register(Join, stage="typecheck")
def _join(f: Join, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    a = _array(ts[0], call, "join")
    inner = _array(a.elem, call, "join (of an array of arrays)")
    return ArrayType(inner.elem, inner.size * a.size)


@register(Slide, stage="typecheck")
def _slide(f: Slide, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    a, size, step = _array(ts[0], call, "slide"), f.size, f.step
    _require("positive", size, Cst(0), call, conds, f"slide size {size} > 0")
    _require("positive", step, Cst(0), call, conds, f"slide step {step} > 0")
    _require("nonneg", a.size - size, Cst(0), call, conds,
             f"slide({size}, {step}) needs at least {size} elements, the array has {a.size}")
    return ArrayType(ArrayType(a.elem, size), (a.size - size + step) // step)


@register(Iota, stage="typecheck")
def _iota(f: Iota, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    _require("positive", f.n, Cst(0), call, conds, f"iota length {f.n} > 0")
    return ArrayType(Int, f.n)


@register(Pad, stage="typecheck")
def _pad(f: Pad, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    a = _array(ts[0], call, "pad")
    if f.mode != "constant":  # the array's own elements, re-indexed: any element type
        if f.mode not in PAD_MODES:
            raise _err(f"unknown pad mode {f.mode!r} (one of {', '.join(PAD_MODES)})", call)
        for side, amount in (("left", f.left), ("right", f.right)):
            _require("nonneg", amount, Cst(0), call, conds, f"pad mode {f.mode!r} needs {side} amount {amount} >= 0")
        _require("positive", a.size, Cst(0), call, conds, f"pad mode {f.mode!r} needs a non-empty array")
        return ArrayType(a.elem, f.left + a.size + f.right)
    b, value = base_type(a), f.value
    if isinstance(b, (TupleType, VectorType)) or (isinstance(value, float) and b in (Int, Bool)):
        raise _err(f"pad value {value!r} does not fit the element type {b}", call, got=b)
    n = f.left + a.size + f.right
    _require("positive", n, Cst(0), call, conds, f"padded length {n} > 0")
    return ArrayType(a.elem, n)


@register(Transpose, TransposeW, stage="typecheck")
def _transpose(f: FunDecl, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    a = _array(ts[0], call, "transpose")
    inner = _array(a.elem, call, "transpose (of an array of arrays)")
    return ArrayType(ArrayType(inner.elem, a.size), inner.size)


@register(Let, ToGlobal, ToLocal, ToPrivate, OclKernel, RewritePoint, stage="typecheck")
def _wrapped(f: Any, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    """A function wrapping `f.f` (let, address spaces, ocl_kernel, a rewrite point): typed as it."""
    return infer(f.f, ts, call, conds)


@register(Iterate, stage="typecheck")
def _iterate_rule(f: Iterate, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    return _iterate(f.n, f.f, ts[0], call, conds)


@register(AsVector, stage="typecheck")
def _as_vector(f: AsVector, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    a, k = _array(ts[0], call, "as_vector"), f.n
    if not isinstance(a.elem, ScalarType):
        raise _err(f"as_vector({k}) expects an array of scalars, got {a}", call, got=a)
    _require("divides", Cst(k), a.size, call, conds, f"as_vector({k}) needs {k} to divide {a.size}")
    return ArrayType(VectorType(a.elem, k), exact_div(a.size, k))


@register(AsScalar, stage="typecheck")
def _as_scalar(f: AsScalar, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    a = _array(ts[0], call, "as_scalar")
    vecs = [e for e in a.elem.elems if isinstance(e, VectorType)] if isinstance(a.elem, TupleType) else []
    if isinstance(a.elem, TupleType) and a.elem.elems and len(vecs) == len(a.elem.elems) \
            and len({e.n for e in vecs}) == 1:
        w = vecs[0].n
        return ArrayType(TupleType(tuple(e.scalar for e in vecs)), a.size * w)
    if not isinstance(a.elem, VectorType):
        raise _err(f"as_scalar expects an array of vectors (or of tuples of vectors), got {a}", call, got=a)
    return ArrayType(a.elem.scalar, a.size * a.elem.n)


@register(Vectorise, stage="typecheck")
def _vectorise(f: Vectorise, ts: list[Type], call: Node, conds: list[SizeCondition]) -> Type:
    scal: list[Type] = []
    for t in ts:
        lanes = _lanes_of(t, f.n)
        if lanes is None:
            raise _err(f"vectorise(_, {f.n}) expects vectors (or tuples of vectors) of width {f.n}, got {t}",
                       call, got=t)
        scal.append(lanes)
    r = infer(f.f, scal, call, conds)
    if isinstance(r, ScalarType):
        return VectorType(r, f.n)
    scalars = [e for e in r.elems if isinstance(e, ScalarType)] if isinstance(r, TupleType) else []
    if isinstance(r, TupleType) and len(scalars) == len(r.elems):
        return TupleType(tuple(VectorType(e, f.n) for e in scalars))
    raise _err(f"vectorise needs a function of scalars (or tuples of scalars), {f.f} returns {r}", call, got=r)


def _lanes_of(t: Type, n: int) -> Type | None:
    """The scalar (tuple of scalars) type of one lane of `t`, a vector (a tuple of vectors) of
    width `n`; None for another type."""
    if isinstance(t, VectorType) and t.n == n:
        return t.scalar
    vecs = [e for e in t.elems if isinstance(e, VectorType) and e.n == n] if isinstance(t, TupleType) else []
    if isinstance(t, TupleType) and t.elems and len(vecs) == len(t.elems):
        return TupleType(tuple(e.scalar for e in vecs))
    return None


def _fname(f: FunDecl) -> str:
    return f.name if isinstance(f, UserFun) else type(f).__name__.lower()


def _iterate(n: int, g: FunDecl, t: Type, call: Node, conds: list[SizeCondition]) -> Type:
    """Apply the size function of `g` `n` times; `g` may change one array length."""
    if n < 0:
        raise _err(f"iterate count must be >= 0, got {n}", call)
    if not isinstance(g, Lambda) or len(g.params) != 1:
        out = infer(g, [t], call, conds)
        if not types_equal(out, t):
            raise _err(f"iterate needs a function from {t} to itself, got {out}", call)
        return t
    p = g.params[0].ptype
    binding = unify(p, t)
    if binding is None:
        raise _err(f"iterate function expects {p}, got {t}", call, expected=p, got=t)
    out_t = type_of(g.body)
    cur = t
    for _ in range(n):
        binding = unify(p, cur)
        if binding is None:
            raise _err(f"iterate function expects {p}, got {cur}", call, expected=p, got=cur)
        cur = subst_type(out_t, binding)
    return cur


def unify(pattern: Type, t: Type) -> dict[str, Arith] | None:
    """Bind the size variables of `pattern` so that it equals `t`; None if impossible."""
    env: dict[str, Arith] = {}

    def go(p: Type, x: Type) -> bool:
        if isinstance(p, ArrayType) and isinstance(x, ArrayType):
            fv = free_vars(p.size)
            if len(fv) == 1 and p.size == next(iter(fv)):
                v = next(iter(fv)).name
                if v in env and not prove_eq(env[v], x.size):
                    return False
                env[v] = x.size
            elif not prove_eq(substitute(p.size, env), x.size):
                return False
            return go(p.elem, x.elem)
        if isinstance(p, TupleType) and isinstance(x, TupleType):
            return len(p.elems) == len(x.elems) and all(go(a, b) for a, b in zip(p.elems, x.elems))
        return p == x

    return env if go(pattern, t) else None


def subst_type(t: Type, env: dict[str, Arith]) -> Type:
    """`t` with size variables replaced."""
    match t:
        case ArrayType(elem, n):
            return ArrayType(subst_type(elem, env), substitute(n, env))
        case TupleType(elems):
            return TupleType(tuple(subst_type(e, env) for e in elems))
    return t
