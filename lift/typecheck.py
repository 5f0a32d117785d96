"""Type checking (thesis 2.3.1.1, Fig. 2.8, 2.9, 2.12) with symbolic array sizes.

`type_of(expr)` computes and caches the type of an expression; `infer(f, arg_types)`
is the type rule of applying function `f`. Sizes are symbolic: a condition that holds
only for some sizes (a split of `N` by 4) is recorded as a `SizeCondition` on the call
(see `size_conditions`), checked by the interpreter and left to the constraint solver;
one that is provably false is a `LiftTypeError` at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from weakref import ref

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
from lift.errors import LiftTypeError, UnsupportedError, is_library_loc
from lift.gather import gather_type
from lift.ir.nodes import (
    AbstractMap,
    AbstractReduce,
    AsScalar,
    AsVector,
    At,
    Expr,
    FunCall,
    FunDecl,
    Gather,
    Get,
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
)
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
    from lift.ir.build import Deferred

    if isinstance(e, Deferred):
        raise LiftTypeError(f"{e!r} is a function without argument types", loc=e.loc,
                            hint="wrap the program in lift.fun([types...], lambda ...)")
    raise LiftTypeError(f"not a LIFT program: {e!r}")


class _Table:
    """A side table keyed by node identity (not structure: each call keeps its own size
    conditions, which name its source line); an entry lives as long as its node."""

    def __init__(self) -> None:
        self._d: dict[int, tuple[ref, Any]] = {}

    def get(self, e: Node) -> Any:
        hit = self._d.get(id(e))
        return hit[1] if hit is not None and hit[0]() is e else None

    def put(self, e: Node, value: Any) -> None:
        k, d = id(e), self._d
        d[k] = (ref(e, lambda _r: d.pop(k, None)), value)

    def __len__(self) -> int:
        return len(self._d)


# The types: a call -> (its type, the size conditions it recorded), computed once.
_TYPES = _Table()


def type_of(e: Expr) -> Type:
    """The type of expression `e`, computed once and kept in the side table."""
    if isinstance(e, Param):
        return e.ptype
    if isinstance(e, Literal):
        return e.ltype
    return _typed(e)[0]


def _typed(e: Expr) -> tuple[Type, tuple[SizeCondition, ...]]:
    got = _TYPES.get(e)
    if got is not None:
        return got
    if not isinstance(e, FunCall):
        raise LiftTypeError(f"not an expression: {e!r}")
    conds: list[SizeCondition] = []
    got = (infer(e.f, [type_of(a) for a in e.args], e, conds), tuple(conds))
    _TYPES.put(e, got)
    return got


def size_conditions(e: Node) -> list[SizeCondition]:
    """Every size condition recorded while typing the calls inside `e`."""
    from lift.ir.paths import walk

    typecheck(e)
    out: list[SizeCondition] = []
    for _, n in walk(e):
        if isinstance(n, FunCall):
            out.extend(_typed(n)[1])
    return out


def _err(msg: str, call: Node, **kw) -> LiftTypeError:
    f_loc = call.f.loc if isinstance(call, FunCall) else None
    user_f = f_loc is not None and not is_library_loc(f_loc)
    node = call.f if user_f and (call.loc is None or is_library_loc(call.loc)) else call
    return LiftTypeError(msg, node=node, **kw)


def _array(t: Type, call: Node, what: str) -> ArrayType:
    if not isinstance(t, ArrayType):
        raise _err(f"{what} expects an array, got {t}", call, got=t)
    return t


def _require(kind: str, a: Arith, b: Arith, call: Node, conds: list, reason: str, hint: str = "") -> None:
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


def infer(f: FunDecl, ts: list[Type], call: Node, conds: list | None = None) -> Type:
    """The result type of applying `f` to arguments of types `ts` (in `call`)."""
    conds = conds if conds is not None else []
    name = type(f).__name__
    if len(ts) != f.arity:
        raise _err(f"{_fname(f)} takes {f.arity} argument(s), got {len(ts)}", call,
                   expected=f.arity, got=len(ts))
    match f:
        case Lambda(params, body):
            for p, t in zip(params, ts):
                if not types_equal(p.ptype, t):
                    raise _err(f"lambda parameter {p.name} expects {p.ptype}, got {t}", call,
                               expected=p.ptype, got=t)
            return type_of(body)
        case UserFun(name=uname, in_types=ins, out_type=out):
            for k, (want, t) in enumerate(zip(ins, ts)):
                if not types_equal(want, t):
                    raise _err(f"user function {uname} expects {want} for argument {k}, got {t}",
                               call, expected=want, got=t)
            return out
        case AbstractMap(f=g):
            a = _array(ts[0], call, name.lower())
            return ArrayType(infer(g, [a.elem], call, conds), a.size)
        case AbstractReduce(f=g):
            init, x = ts
            a = _array(x, call, "reduce")
            r = infer(g, [init, a.elem], call, conds)
            if not types_equal(r, init):
                raise _err(f"reduce function must return the accumulator type {init}, returns {r}",
                           call, expected=init, got=r)
            return init
        case Zip(n):
            arrs = [_array(t, call, "zip") for t in ts]
            for a in arrs[1:]:
                if not prove_eq(a.size, arrs[0].size):
                    shown = " and ".join(str(t) for t in ts)
                    raise _err(f"zip expects arrays of equal length, got {shown}", call,
                               expected=arrs[0], got=a,
                               hint="split or pad one input so both lengths agree")
            return ArrayType(TupleType(tuple(a.elem for a in arrs)), arrs[0].size)
        case MakeTuple():
            return TupleType(tuple(ts))
        case Get(i):
            t = ts[0]
            if not isinstance(t, TupleType):
                raise _err(f"get({i}) expects a tuple, got {t}", call, got=t)
            if not 0 <= i < len(t.elems):
                raise _err(f"get({i}) out of range for {t}", call, got=t)
            return t.elems[i]
        case At(i):
            t = ts[0]
            if isinstance(t, VectorType):
                if not (isinstance(i, Cst) and 0 <= i.value < t.n):
                    raise _err(f"vector index {i} out of range for {t}", call, got=t)
                return t.scalar
            a = _array(t, call, "indexing")
            _require("nonneg", i, Cst(0), call, conds, f"index {i} >= 0")
            _require("less", i, a.size, call, conds, f"index {i} < {a.size}")
            return a.elem
        case Gather():
            return gather_type(ts, call)
        case Split(m):
            a = _array(ts[0], call, "split")
            _require("positive", m, Cst(0), call, conds, f"split size {m} > 0")
            _require("divides", m, a.size, call, conds, f"split({m}) needs {m} to divide {a.size}",
                     hint="pad the array or choose a split size that divides its length")
            return ArrayType(ArrayType(a.elem, m), exact_div(a.size, m))
        case Join():
            a = _array(ts[0], call, "join")
            inner = _array(a.elem, call, "join (of an array of arrays)")
            return ArrayType(inner.elem, inner.size * a.size)
        case Slide(size, step):
            a = _array(ts[0], call, "slide")
            _require("positive", size, Cst(0), call, conds, f"slide size {size} > 0")
            _require("positive", step, Cst(0), call, conds, f"slide step {step} > 0")
            _require("nonneg", a.size - size, Cst(0), call, conds,
                     f"slide({size}, {step}) needs at least {size} elements, the array has {a.size}")
            return ArrayType(ArrayType(a.elem, size), (a.size - size + step) // step)
        case Pad(left, right, value):
            a = _array(ts[0], call, "pad")
            b = base_type(a)
            if isinstance(b, (TupleType, VectorType)) or (
                isinstance(value, float) and b in (Int, Bool)
            ):
                raise _err(f"pad value {value!r} does not fit the element type {b}", call, got=b)
            n = left + a.size + right
            _require("positive", n, Cst(0), call, conds, f"padded length {n} > 0")
            return ArrayType(a.elem, n)
        case Transpose() | TransposeW():
            a = _array(ts[0], call, "transpose")
            inner = _array(a.elem, call, "transpose (of an array of arrays)")
            return ArrayType(ArrayType(inner.elem, a.size), inner.size)
        case Let(g) | ToGlobal(g) | ToLocal(g) | ToPrivate(g) | OclKernel(g):
            return infer(g, ts, call, conds)
        case Iterate(n, g):
            return _iterate(n, g, ts[0], call, conds)
        case AsVector(n):
            a = _array(ts[0], call, "as_vector")
            if not isinstance(a.elem, ScalarType):
                raise _err(f"as_vector({n}) expects an array of scalars, got {a}", call, got=a)
            _require("divides", Cst(n), a.size, call, conds, f"as_vector({n}) needs {n} to divide {a.size}")
            return ArrayType(VectorType(a.elem, n), exact_div(a.size, n))
        case AsScalar():
            a = _array(ts[0], call, "as_scalar")
            if not isinstance(a.elem, VectorType):
                raise _err(f"as_scalar expects an array of vectors, got {a}", call, got=a)
            return ArrayType(a.elem.scalar, a.size * a.elem.n)
        case Vectorise(g, n):
            scal = []
            for t in ts:
                if not (isinstance(t, VectorType) and t.n == n):
                    raise _err(f"vectorise(_, {n}) expects vectors of width {n}, got {t}", call, got=t)
                scal.append(t.scalar)
            r = infer(g, scal, call, conds)
            if not isinstance(r, ScalarType):
                raise _err(f"vectorise needs a scalar function, {g} returns {r}", call, got=r)
            return VectorType(r, n)
    if getattr(f, "transparent", False):  # a rewrite point (lift.rewrites): typed as its body `f`
        return infer(f.f, ts, call, conds)
    raise UnsupportedError(f"the type checker has no rule for {type(f).__name__} (see lift.ir.registry)",
                           node=call)


def _fname(f: FunDecl) -> str:
    return f.name if isinstance(f, UserFun) else type(f).__name__.lower()


def _iterate(n: int, g: FunDecl, t: Type, call: Node, conds: list) -> Type:
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
