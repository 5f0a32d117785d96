"""The scalar side of a comprehension: right-hand sides as IR calls of user functions.

`a * A(i,k) * B(k,j)` becomes `mult(mult(a, A_ik), B_kj)`, with `lift.add`, `lift.mult`, `lift.max_`,
`lift.min_` for the arithmetic and the reductions (`+=`, `*=`, `max=`, `min=`) and a user function,
translated to OpenCL C like any other, for each TC built-in (`fmaxf`, `exp`, `tanh`, `sqrt`, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from lift.comprehension.ranges import BUILTINS, tc_error
from lift.comprehension.syntax import Binary, Call, Expr, Name, Num, Pos, Ternary, Unary
from lift.errors import LiftTypeError, LiftValueError, UnsupportedError
from lift.ir.build import arith_op, to_expr
from lift.ir.nodes import Expr as IRExpr
from lift.types import Double, Float, Int, ScalarType, Type
from lift.userfun import user_fun
from lift.userfun.builtins import add, max_, min_, mult

exp = user_fun(lambda x: math.exp(x), name="tc_exp")
log = user_fun(lambda x: math.log(x), name="tc_log")
tanh = user_fun(lambda x: math.tanh(x), name="tc_tanh")
sqrt = user_fun(lambda x: math.sqrt(x), name="tc_sqrt")
fabs = user_fun(lambda x: abs(x), name="tc_fabs")
sigmoid = user_fun(lambda x: 1.0 / (1.0 + math.exp(-x)), name="tc_sigmoid")
lt = user_fun(lambda x, y: x < y, name="tc_lt")
le = user_fun(lambda x, y: x <= y, name="tc_le")
gt = user_fun(lambda x, y: x > y, name="tc_gt")
ge = user_fun(lambda x, y: x >= y, name="tc_ge")
eq = user_fun(lambda x, y: x == y, name="tc_eq")
ne = user_fun(lambda x, y: x != y, name="tc_ne")
select = user_fun(lambda c, a, b: a if c else b, name="tc_select")

FUNCTIONS: dict[str, Any] = {
    "fmaxf": max_, "fmax": max_, "max": max_, "fminf": min_, "fmin": min_, "min": min_,
    "exp": exp, "expf": exp, "log": log, "logf": log, "tanh": tanh, "tanhf": tanh,
    "sqrt": sqrt, "sqrtf": sqrt, "fabs": fabs, "fabsf": fabs, "abs": fabs, "sigmoid": sigmoid,
}
assert set(FUNCTIONS) == set(BUILTINS)
COMPARE = {"<": lt, "<=": le, ">": gt, ">=": ge, "==": eq, "!=": ne}
ARITH = {"+": "add", "-": "sub", "*": "mult", "/": "div"}
# reduction operator -> (combining built-in, neutral element)
REDUCERS: dict[str, tuple[Any, float]] = {
    "+": (add, 0.0), "*": (mult, 1.0), "max": (max_, -math.inf), "min": (min_, math.inf)}
TYPES: dict[str, ScalarType] = {"float": Float, "double": Double, "int": Int, "half": Float,
                                "int32": Int, "int64": Int}

Value = Any  # an IR expression or a Python number


def reducer(op: str) -> tuple[Any, float] | None:
    """The combining function and neutral element of `+=`, `max=!`, ...; None for `=`."""
    base = op.rstrip("!").rstrip("=")
    return REDUCERS.get(base) if op != "=" else None


def scalar_type(dtype: str, pos: Pos) -> ScalarType:
    """The LIFT scalar type of a TC type name."""
    if dtype not in TYPES:
        raise tc_error(UnsupportedError, f"the type {dtype!r} is not supported", pos,
                       hint="supported: " + ", ".join(TYPES))
    return TYPES[dtype]


def neutral(value: float, t: Type) -> IRExpr:
    """The neutral element as a literal of type `t`."""
    if t == Int and math.isinf(value):
        value = -(2**31) if value < 0 else 2**31 - 1
    return to_expr(int(value) if t == Int else value, t)


def evaluate(e: Expr, leaf: Callable[[Call], Value], names: Callable[[Name], Value]) -> Value:
    """The IR of a right-hand side; `leaf` gives each tensor access's scalar, `names` each scalar name."""
    match e:
        case Num(value=v):
            return v
        case Name():
            return names(e)
        case Call(name=n, args=args) if n in FUNCTIONS:
            vals = [evaluate(a, leaf, names) for a in args]
            return _call(FUNCTIONS[n], vals, e.pos)
        case Call():
            return leaf(e)
        case Unary(op="-", arg=a):
            v = evaluate(a, leaf, names)
            return -v if not isinstance(v, IRExpr) else arith_op("neg", v)
        case Binary(op=op, left=a, right=b) if op in ARITH or op in COMPARE:
            x, y = evaluate(a, leaf, names), evaluate(b, leaf, names)
            if not isinstance(x, IRExpr) and not isinstance(y, IRExpr):
                return _fold(op, x, y, e.pos)
            if op in ARITH:
                return arith_op(ARITH[op], _floatish(x, y, e.pos), _floatish(y, x, e.pos))
            return _call(COMPARE[op], [x, y], e.pos)
        case Ternary(cond=c, then=a, other=b):
            test = evaluate(c, leaf, names)
            if not isinstance(test, IRExpr):  # a constant condition (`3 > 0 ? x : y`) picks its branch here
                return evaluate(a if test else b, leaf, names)
            return _call(select, [test, evaluate(a, leaf, names), evaluate(b, leaf, names)], e.pos)
    raise tc_error(UnsupportedError, f"the construct {type(e).__name__} ({getattr(e, 'op', '')}) is not "
                   "supported in a right-hand side", e.pos,
                   hint="supported: numbers, + - * /, comparisons, c ? a : b, " + ", ".join(sorted(FUNCTIONS)))


def _floatish(v: Value, other: Value, pos: Pos) -> Value:
    """A Python number next to a Float expression becomes a Float literal (`fmaxf(x, 0)`)."""
    if isinstance(v, IRExpr) or not isinstance(other, IRExpr):
        return v
    return literal(v, other.type, pos)


def literal(v: Any, t: Type, pos: Pos) -> IRExpr:
    """The IR literal of the number `v` at type `t`; a `LiftValueError` at the TC line when it does not
    fit (`3000000000` as an `int`, an integer past a float's range)."""
    try:
        return to_expr(float(v) if t == Float and not isinstance(v, float) else v, t)
    except (OverflowError, ValueError) as err:
        why = getattr(err, "message", None) or f"the number {str(v)[:40]} does not fit in a {t} ({err})"
        raise tc_error(LiftValueError, why, pos) from None


def _fold(op: str, x: Any, y: Any, pos: Pos) -> Any:
    if op == "/" and y == 0:
        raise tc_error(LiftTypeError, "division by zero in a constant", pos)
    ops: dict[str, Callable[[Any, Any], Any]] = {
        "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
        "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
    try:
        return ops[op](x, y)  # only `op`: `3 > 0` computed no `3 / 0`
    except OverflowError as err:
        raise tc_error(LiftValueError, f"the constant {op} overflows ({err})", pos) from None


def _call(f: Any, vals: list[Value], pos: Pos) -> IRExpr:
    like = next((v for v in vals if isinstance(v, IRExpr) and v.type != to_expr(True).type), None)
    if like is None:
        raise tc_error(UnsupportedError, "a built-in function of constants only", pos,
                       hint="compute the constant by hand")
    args = [v if isinstance(v, IRExpr) else literal(v, like.type, pos) for v in vals]
    return f(*args)
