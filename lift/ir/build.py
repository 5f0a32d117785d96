"""The front end: building IR from Python, as in `reduce(add, 0.0) << map(mult) << zip(x, y)`.

A pattern given a Python callable (or another pattern awaiting its argument types)
is a `Deferred` function: it becomes IR when applied to typed expressions, which is
when the parameter types of its lambdas are known. Everything built records the
user's source line.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from collections.abc import Callable, Sequence
from typing import Any, cast

from lift.arith import Arith, Cst, Var, as_arith
from lift.errors import LiftTypeError, LiftValueError, SourceLoc, user_loc
from lift.ir.nodes import At, Expr, FunCall, FunDecl, Get, Lambda, Literal, MakeTuple, Param
from lift.types import (
    ArrayType,
    Bool,
    Float,
    Int,
    ScalarType,
    TupleType,
    Type,
    VectorType,
    from_dtype,
)

Builder = Callable[[tuple[Type, ...], "str | None", "SourceLoc | None"], FunDecl]
FunLike = Any  # FunDecl | Deferred | Python callable


class Deferred:
    """A function whose IR is built once its argument types are known."""

    __slots__ = ("build", "text", "label", "loc", "_arity")

    def __init__(self, build: Builder, text: str, *, label: str | None = None,
                 loc: SourceLoc | None = None, arity: int | None = None) -> None:
        self.build = build
        self.text = text
        self.label = label
        self.loc = loc
        self._arity = arity

    def elaborate(self, types: Sequence[Type], loc: SourceLoc | None = None) -> FunDecl:
        """The IR function for arguments of these types (built at `loc` if it has none)."""
        return self.build(tuple(types), self.label, self.loc or loc or user_loc())

    def __call__(self, *args: Any, label: str | None = None) -> Any:
        if not args:
            return Deferred(self.build, self.text, label=label, loc=user_loc(), arity=self._arity)
        return apply(self, args, label=label)

    @property
    def arity(self) -> int | None:
        """The number of parameters, where it does not depend on the argument types."""
        return self._arity

    def direct(self, args: Sequence[Any], label: str | None) -> Expr | None:
        """The call built directly (not through a function), where a subclass can."""
        return None

    def __lshift__(self, other: Any) -> Any:
        return lshift(self, other)

    def __repr__(self) -> str:
        return self.text + (f"[{self.label}]" if self.label else "")


# ------------------------------------------------------------------- elaboration


def to_expr(v: Any, like: Type | None = None) -> Expr:
    """An expression from an `Expr` or a Python number (a literal)."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, tuple):
        return apply(MakeTuple(len(v), loc=user_loc()), [to_expr(x) for x in v])
    if isinstance(v, (bool, int, float)) or hasattr(v, "dtype"):
        return literal(v, like)
    if isinstance(v, (FunDecl, Deferred)) or callable(v):
        raise LiftTypeError(f"expected an expression, got the function {v!r}",
                            loc=user_loc(), hint="apply it to an argument with `<<`")
    raise LiftTypeError(f"expected a LIFT expression, got {v!r}", loc=user_loc())


def literal(v: Any, like: Type | None = None) -> Literal:
    """A literal of the scalar type `like` (or the natural type of `v`)."""
    s = like.scalar if isinstance(like, VectorType) else like
    if not isinstance(s, ScalarType):
        s = Bool if isinstance(v, bool) else Int if isinstance(v, int) else Float
        if hasattr(v, "dtype"):
            s = from_dtype(v.dtype)
    try:
        py = bool(v) if s == Bool else int(v) if s == Int else float(v)
    except (TypeError, ValueError, OverflowError) as err:
        raise LiftTypeError(f"{_shown(v)} is not a {s} value ({err})", loc=user_loc(), got=v) from None
    if s == Int and py != v:
        raise LiftTypeError(f"{_shown(v)} is not an Int", loc=user_loc())
    if s == Int and not -(2**31) <= py < 2**31:  # OpenCL's int: 32 bits
        raise LiftValueError(f"{_shown(v)} does not fit in an Int (32 bits: -2147483648 to 2147483647)",
                             loc=user_loc(), got=v, hint="use a Float (or Double) literal")
    return Literal(py, s, loc=user_loc())


def _shown(v: Any) -> str:
    text = repr(v) if not isinstance(v, int) or v.bit_length() < 4000 else f"an integer of {v.bit_length()} bits"
    return text if len(text) <= 60 else text[:40] + "..."


def elaborate(f: FunLike, types: Sequence[Type], what: str = "function",
              loc: SourceLoc | None = None) -> FunDecl:
    """The IR function for `f` applied to arguments of `types`.

    A function of k parameters given one k-tuple is applied to the tuple's components."""
    types = tuple(types)
    if isinstance(f, Deferred):
        if f.arity is None or f.arity == len(types):
            return f.elaborate(types, loc)
    if isinstance(f, (FunDecl, Deferred)):
        if f.arity == len(types):
            return cast(FunDecl, f)  # a Deferred of this arity elaborated above
        if _unpackable(types, cast(int, f.arity)):
            p = Param(types[0], "p", loc=f.loc or loc)
            return Lambda((p,), apply(f, [_get(p, i) for i in range(cast(int, f.arity))], loc=f.loc or loc),
                          loc=f.loc or loc)
        raise LiftTypeError(
            f"{f} takes {f.arity} argument(s) but is applied to {len(types)}: "
            + ", ".join(map(str, types)), node=f, expected=f.arity, got=len(types))
    if callable(f):
        return _python_lambda(f, types)
    raise LiftTypeError(f"expected a {what}, got {f!r}", loc=user_loc())


def _unpackable(types: tuple[Type, ...], arity: int) -> bool:
    return (len(types) == 1 and arity > 1 and isinstance(types[0], TupleType)
            and len(types[0].elems) == arity)


def _get(p: Expr, i: int) -> Expr:
    return FunCall(Get(i), (p,), loc=p.loc)


def _python_lambda(fn: Callable[..., Any], types: tuple[Type, ...]) -> Lambda:
    names = _param_names(fn)
    code = getattr(fn, "__code__", None)
    loc = SourceLoc(code.co_filename, code.co_firstlineno, code.co_name) if code else user_loc()
    if len(names) == len(types):
        params = tuple(Param(t, n, loc=loc) for n, t in zip(names, types))
        body = fn(*params)
    elif _unpackable(types, len(names)):
        p = Param(types[0], "p", loc=loc)
        params = (p,)
        body = fn(*[_get(p, i) for i in range(len(names))])
    else:
        raise LiftTypeError(
            f"lambda takes {len(names)} parameter(s) ({', '.join(names)}) but is applied to "
            f"{len(types)}: " + ", ".join(map(str, types)), loc=loc, expected=len(names), got=len(types))
    if isinstance(body, (FunDecl, Deferred)):
        body = apply(body, params)
    return Lambda(params, to_expr(body), loc=loc)


def arity_of(f: FunLike) -> int | None:
    """The number of parameters of a function, if known before its argument types."""
    if isinstance(f, (FunDecl, Deferred)):
        return f.arity
    if callable(f):
        return len(_param_names(f))
    return None


def _param_names(fn: Callable[..., Any]) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise LiftTypeError(f"cannot read the parameters of {fn!r}", loc=user_loc()) from None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in sig.parameters.values() if p.kind in kinds and p.default is p.empty]


# ------------------------------------------------------------------- application


def apply(f: FunLike, args: Sequence[Any], *, label: str | None = None,
          loc: SourceLoc | None = None) -> Expr:
    """`f(args)` as IR, type-checked now so errors point at this line."""
    loc = loc if loc is not None else user_loc()
    if isinstance(f, Composed):
        return apply(f.g, [apply(f.f, args, loc=loc)], label=label, loc=loc)
    if isinstance(f, Deferred):
        direct = f.direct(args, label)
        if direct is not None:
            return direct
    exprs = tuple(to_expr(a) for a in args)
    if isinstance(f, FunDecl) and f.arity > 1 and _unpackable(tuple(e.type for e in exprs), f.arity):
        exprs = tuple(_get(exprs[0], i) for i in range(f.arity))
    fir = elaborate(f, [e.type for e in exprs], loc=loc)
    if isinstance(fir, Lambda) and isinstance(f, Deferred) and _is_identity(fir):
        return exprs[0]
    if label is None:
        label = fir.label
    call = FunCall(fir, exprs, label=label, loc=loc)
    call.type  # noqa: B018 - type-check eagerly: errors belong to this line
    return call


def _is_identity(f: Lambda) -> bool:
    return len(f.params) == 1 and f.body is f.params[0]


def lshift(left: FunLike, right: Any) -> Any:
    """`g << x` applies `g`; `g << f` composes (`(g << f) << x` is `g(f(x))`)."""
    if isinstance(right, Expr):
        return apply(left, [right])
    if isinstance(right, (FunDecl, Deferred)) or callable(right):
        return compose(left, right)
    return apply(left, [right])


class Composed(Deferred):
    """`g << f`: applied to arguments it is `g(f(args))`; elsewhere a lambda."""

    __slots__ = ("g", "f")

    def __init__(self, g: FunLike, f: FunLike, label: str | None = None,
                 loc: SourceLoc | None = None) -> None:
        self.g, self.f = g, f

        def build(types: tuple[Type, ...], lab: str | None, at: SourceLoc | None) -> FunDecl:
            params = tuple(Param(t, "x", loc=at) for t in types)
            body = apply(g, [apply(f, params, loc=at)], loc=at)
            return Lambda(params, body, label=lab, loc=at)

        super().__init__(build, f"{_text(g)} << {_text(f)}", label=label,
                         loc=loc if loc is not None else user_loc())

    def __call__(self, *args: Any, label: str | None = None) -> Any:
        if not args:
            return Composed(self.g, self.f, label, user_loc())
        return apply(self, args, label=label)


def compose(g: FunLike, f: FunLike) -> Deferred:
    """`g << f`: a function applying `f`, then `g`."""
    return Composed(g, f)


def call_fundecl(f: FunDecl, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """`f(x, y)` applies an IR function; `f(label="A")` relabels it."""
    label = kw.pop("label", None)
    if kw:
        raise TypeError(f"unexpected keyword arguments {sorted(kw)}")
    if not args:
        return dataclasses.replace(f, label=label, loc=user_loc())
    return apply(f, args, label=label)


def _text(f: FunLike) -> str:
    if isinstance(f, (Deferred, FunDecl)):
        return str(f)
    return getattr(f, "__name__", "f")


# ---------------------------------------------------------------------- sugar


def index(e: Expr, i: Any) -> Expr:
    """`e[i]`: a tuple component, an array element or a vector lane."""
    t = e.type
    if isinstance(t, TupleType):
        if not isinstance(i, int):
            raise LiftTypeError(f"tuple index must be an int, got {i!r}", node=e, loc=user_loc())
        return apply(Get(i), [e])
    if isinstance(t, (ArrayType, VectorType)):
        return apply(At(as_arith(i)), [e])
    raise LiftTypeError(f"cannot index a value of type {t}", node=e, loc=user_loc())


def arith_op(op: str, a: Any, b: Any = None) -> Expr:
    """`a + b`, `a * b`, ... on scalar or vector expressions, as built-in user functions."""
    from lift.userfun.builtins import OPERATORS  # lift.userfun builds on this module

    like = a.type if isinstance(a, Expr) else b.type
    args = [to_expr(a, like)] + ([] if b is None else [to_expr(b, like)])
    return apply(OPERATORS[op], args)


_fresh = itertools.count()


def fresh_size(hint: str = "n") -> Var:
    """A fresh positive size variable."""
    return Var(f"_{hint}{next(_fresh)}", Cst(1), None)


def generalise_outer(t: Type) -> Type:
    """`t` with its outer array length replaced by a fresh size variable."""
    if isinstance(t, ArrayType):
        return ArrayType(t.elem, fresh_size("it"))
    return t


def as_size(v: Any, what: str) -> Arith:
    try:
        return as_arith(v)
    except TypeError:
        raise LiftTypeError(f"{what} must be an int or a symbolic size, got {v!r}",
                            loc=user_loc()) from None
