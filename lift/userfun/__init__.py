"""User functions: Python functions (translated to OpenCL C) and raw OpenCL C bodies.

    @user_fun
    def mult(a: Float, b: Float) -> Float:
        return a * b

    add = user_fun(lambda acc, x: acc + x, [Float, Float], Float, name="add")
    relu = user_fun(lambda x: x if x > 0 else 0.0)        # generic: typed where applied
    fma = user_fun.c("fma3", ["a", "b", "c"], "return a * b + c;", [Float] * 3, Float,
                     py=lambda a, b, c: a * b + c)         # raw C, with a Python twin

The body may use for loops over `range(...)` (bounds known when translating), array parameters of
constant size (a window: `w[i][j]`), `lift.select(c, a, b)`, and calls to other user functions or
plain Python helpers (C functions defined once in the kernel). Integer `//` and `%` are Python's
floor division and modulo; dividing an integer by zero gives 0 (in kernels as in the interpreter,
whose numpy gives 0). A function without source (REPL, `python -c`, stdin) is traced
(`lift.userfun.trace`).
"""

from __future__ import annotations

import inspect
import itertools
import typing
from collections.abc import Callable, Sequence
from typing import Any, cast

from lift.errors import SourceLoc, UserFunError, user_loc
from lift.ir.build import Deferred, apply
from lift.ir.nodes import Lambda, Param, UserFun, is_plain_value
from lift.types import ArrayType, Type
from lift.userfun.arrays import elements, scalar_twin
from lift.userfun.facts import Laws
from lift.userfun.trace import select
from lift.userfun.translate import Translation, translate, translate_c

_anon = itertools.count()


def _make(tr: Translation, py_fn: Callable | None, loc: SourceLoc | None, laws: Laws | None = None) -> Any:
    """The UserFun of a translation; for array parameters, a lambda passing their elements to it."""
    if tr.arrays and py_fn is not None:
        py_fn = scalar_twin(py_fn, tr.arrays)
    uf = UserFun(tr.name, tuple(tr.params), tuple(tr.in_types), tr.out_type, tr.c_source,
                 tuple(tr.structs), py_fn, tr.np_fn, deps=tuple(tr.deps), laws=laws, loc=loc)
    return _pass_elements(uf, tr.arrays) if tr.arrays else uf


def _pass_elements(uf: UserFun, types: tuple[Type, ...]) -> Any:
    """`(w, ...) => uf(w[0][0], ..., w[2][2], ...)`: each array argument passed element by element."""

    params = tuple(Param(t, p, loc=uf.loc) for p, t in zip(_array_param_names(uf, types), types))
    flat: list[Any] = []
    for x, t in zip(params, types):
        flat += elements(x, t) if isinstance(t, ArrayType) else [x]
    return Lambda(params, apply(uf, flat, loc=uf.loc), label=uf.name, loc=uf.loc)


def _array_param_names(uf: UserFun, types: tuple[Type, ...]) -> list[str]:
    py = getattr(uf.py_fn, "__liftcl_fn__", None)
    try:
        return list(inspect.signature(py).parameters)[:len(types)] if py else ["w"] * len(types)
    except (TypeError, ValueError):
        return ["w"] * len(types)


def _default_name(fn: Callable) -> str:
    name = getattr(fn, "__name__", "")
    return name if name.isidentifier() and name != "<lambda>" else f"uf{next(_anon)}"


def _annotations(fn: Callable) -> tuple[list[Type] | None, Type | None]:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - annotations that are not LIFT types
        hints = getattr(fn, "__annotations__", {})
    names = [p.name for p in inspect.signature(fn).parameters.values()]
    ins = [hints.get(n) for n in names]
    out = hints.get("return")
    if ins and all(isinstance(t, Type) for t in ins):
        return cast(list[Type], ins), out if isinstance(out, Type) else None
    return None, out if isinstance(out, Type) else None


class GenericUserFun(Deferred):
    """A user function without declared types: translated for the types it is applied to."""

    __slots__ = ("fn", "name", "out_type", "cache", "laws")

    def __init__(self, fn: Callable, name: str, out_type: Type | None, loc: SourceLoc | None,
                 laws: Laws | None = None):
        self.fn, self.name, self.out_type, self.laws = fn, name, out_type, laws
        self.cache: dict[tuple[Type, ...], UserFun] = {}
        super().__init__(self._specialise, name, loc=loc)

    def _specialise(self, types: tuple[Type, ...], label: str | None, loc: Any) -> UserFun:
        if types not in self.cache:
            tr = translate(self.fn, types, name=self.name, out_type=self.out_type)
            self.cache[types] = _make(tr, self.fn, self.loc, self.laws)
        uf = self.cache[types]
        if label is None or not isinstance(uf, UserFun):
            return uf
        return UserFun(**{**_fields(uf), "label": label, "loc": uf.loc})

    def __call__(self, *args: Any, label: str | None = None) -> Any:
        if args and label is None and all(is_plain_value(a) for a in args):
            return self.fn(*args)  # on numbers (one user function calling another, interpreted)
        trace = next((a for a in args if hasattr(a, "__liftcl_trace__")), None)
        if trace is not None and label is None:
            return trace.__liftcl_trace__(self, args)
        return super().__call__(*args, label=label)

    @property
    def arity(self) -> int:
        return len(inspect.signature(self.fn).parameters)

    def specialise(self, *types: Type) -> UserFun:
        """The user function for these argument types."""
        return self._specialise(tuple(types), None, None)


def _fields(uf: UserFun) -> dict:
    return {k: getattr(uf, k) for k in ("name", "params", "in_types", "out_type", "c_source",
                                        "structs", "py_fn", "np_fn", "deps", "laws")}


class _UserFunFactory:
    """`user_fun(fn, in_types=None, out_type=None, name=None, *, associative=False,
    commutative=False, neutral=None)`; also `user_fun.c(...)`.

    `associative=True` (with `commutative=` and `neutral=`, the value z with f(z, x) == x) vouches
    for an operator whose body the compiler cannot prove to be one (lift.userfun.facts): reductions
    by it may then be split into chunks and combined in any order. Functions computing addition,
    multiplication, max or min are recognised by their bodies and need no vouching;
    `lift.testing.assert_vouched(f)` checks a vouched function on random inputs."""

    def __call__(self, fn: Callable | None = None, in_types: Sequence[Type] | None = None,
                 out_type: Type | None = None, name: str | None = None, *, associative: bool = False,
                 commutative: bool = False, neutral: float | int | None = None) -> Any:
        laws = _laws(associative, commutative, neutral)
        if fn is None:
            return lambda f: self(f, in_types, out_type, name, associative=associative, commutative=commutative,
                                  neutral=neutral)
        if not callable(fn):
            raise UserFunError(f"user_fun needs a Python function, got {fn!r}", loc=user_loc())
        loc = _loc_of(fn)
        name = name or _default_name(fn)
        if not name.isidentifier():
            raise UserFunError(f"user function name {name!r} is not a C identifier", loc=loc)
        if in_types is None:
            in_types, ann_out = _annotations(fn)
            out_type = out_type or ann_out
        if in_types is None:
            return GenericUserFun(fn, name, out_type, loc, laws)
        tr = translate(fn, tuple(in_types), name=name, out_type=out_type)
        return _make(tr, fn, loc, laws)

    def c(self, name: str, params: Sequence[str], body_c: str, in_types: Sequence[Type],
          out_type: Type, py: Callable | None = None, *, py_fn: Callable | None = None,
          associative: bool = False, commutative: bool = False, neutral: float | int | None = None) -> UserFun:
        """A user function with a raw OpenCL C body and `py`, its Python twin for the interpreter.

        `py` takes and returns Python/numpy scalars (tuples for tuple types); the interpreter calls it
        element by element. It is not translated: the C body is the kernel's meaning and `py` the
        interpreter's, so keep them in agreement (tests compare the two). Without `py` the program
        can be compiled but not interpreted. `py_fn=` is the older name of `py`."""
        twin = py if py is not None else py_fn
        if twin is not None and not callable(twin):
            raise UserFunError(f"user_fun.c: py must be callable, got {twin!r}", loc=user_loc())
        tr = translate_c(name, tuple(params), body_c, tuple(in_types), out_type)
        return _make(tr, None if twin is None else _raw_twin(twin), user_loc(),
                     _laws(associative, commutative, neutral))


def _laws(associative: bool, commutative: bool, neutral: float | int | None) -> Laws | None:
    """The laws a user vouches for, or None; `UserFunError` for laws without associativity."""
    if not associative:
        if commutative or neutral is not None:
            raise UserFunError("commutative= and neutral= describe an associative operator: pass "
                               "associative=True too", loc=user_loc())
        return None
    return Laws(True, bool(commutative), neutral)


def _raw_twin(fn: Callable) -> Callable:
    """`fn` marked as the twin of a raw C body (never re-translated to C, e.g. when vectorised)."""
    def twin(*args: Any) -> Any:
        return fn(*args)

    twin.__liftcl_raw_c__ = True  # type: ignore[attr-defined]
    twin.__wrapped__ = fn  # type: ignore[attr-defined]
    return twin


def _loc_of(fn: Callable) -> SourceLoc | None:
    code = getattr(fn, "__code__", None)
    if code is None:
        return user_loc()
    return SourceLoc(code.co_filename, code.co_firstlineno, code.co_name)


user_fun = _UserFunFactory()

__all__ = ["user_fun", "select", "GenericUserFun", "UserFun"]
