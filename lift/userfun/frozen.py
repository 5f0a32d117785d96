"""The numbers a user function reads from outside its body are frozen when it is translated.

    SCALE = 2.0
    @user_fun
    def scale(x: Float) -> Float:
        return x * SCALE          # translated to `x * 2.0f` (C) and `x * 2.0` (numpy) here

Changing `SCALE` later does not change `scale`: its C body and numpy twin keep 2.0 (a user
function is a value: programs, caches and the tuning database key on its body). `lift.interpret`
and `lift.compile` warn (`UserFunGlobalChanged`) when a global or closure variable a user function
of the program read now has another value; define the user function again to use the new value.
"""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from lift.errors import UserFunGlobalChanged
from lift.ir.nodes import Node, UserFun
from lift.ir.paths import walk

_MISSING = object()


@dataclass(frozen=True, eq=False)
class Frozen:
    """The function `fn` read the numbers `values` ((name, value), ...) from outside its body."""

    fn: Callable[..., Any]
    values: tuple[tuple[str, Any], ...]

    def changed(self) -> list[tuple[str, Any, Any]]:
        """`(name, value read, value now)` for each name whose value is no longer the one read."""
        out = []
        for name, old in self.values:
            now = current(self.fn, name)
            if now is _MISSING or not _same(old, now):
                out.append((name, old, "<unbound>" if now is _MISSING else now))
        return out


def current(fn: Callable[..., Any], name: str) -> Any:
    """The value `name` has now in `fn`'s closure, globals or builtins (or `_MISSING`)."""
    code = fn.__code__
    for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
        if var == name:
            try:
                return cell.cell_contents
            except ValueError:  # an empty cell
                return _MISSING
    if name in fn.__globals__:
        return fn.__globals__[name]
    return getattr(builtins, name, _MISSING)


def remember(np_fn: Any, frozen: Frozen | None) -> None:
    """Record `frozen` on the numpy twin `np_fn` of the translation that read those values (a fresh
    function per translation; the C body holds the same values)."""
    if np_fn is not None and frozen is not None:
        np_fn.__liftcl_frozen__ = frozen


def frozen_of(f: UserFun) -> Frozen | None:
    """What user function `f` read from outside its body when it was translated, if known."""
    return getattr(f.np_fn, "__liftcl_frozen__", None)


def code_globals(fn: Callable[..., Any]) -> Frozen | None:
    """The numbers `fn` reads now from its closure or globals, by the names its code uses (for a
    traced function, whose body the translator never sees), or None when it reads none."""
    names: list[str] = []
    stack = [getattr(fn, "__code__", None)]
    while stack:
        code = stack.pop()
        if code is not None:
            names += [*code.co_names, *code.co_freevars]
            stack += [c for c in code.co_consts if hasattr(c, "co_names")]
    values = []
    for name in sorted(set(names)):
        v = current(fn, name)
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, (bool, int, float)) and not hasattr(builtins, name):
            values.append((name, v))
    return Frozen(fn, tuple(values)) if values else None


def _same(old: Any, now: Any) -> bool:
    """`now` is the number `old` was when translated (numpy scalars are read as Python numbers)."""
    if isinstance(now, np.generic):
        now = now.item()
    try:
        return type(old) is type(now) and bool(old == now) or (old != old and now != now)
    except Exception:  # noqa: BLE001 - a value without a plain truth (an array)
        return False


def _user_funs(program: Any) -> Iterator[UserFun]:
    seen: set[int] = set()
    stack = [n for _, n in walk(program)] if isinstance(program, Node) else []
    while stack:
        f = stack.pop()
        if isinstance(f, UserFun) and id(f) not in seen:
            seen.add(id(f))
            yield f
            stack.extend(f.deps)


def warn_changed(program: Any) -> None:
    """Warn `UserFunGlobalChanged` for each outside number a user function of `program` read when
    it was translated and that has another value now."""
    for f in _user_funs(program):
        frozen = frozen_of(f)
        if frozen is None:
            continue
        for name, old, now in frozen.changed():
            warnings.warn(UserFunGlobalChanged(
                f"user function {f.name} read {name} = {old!r} when it was translated; {name} is now {now!r}, "
                f"and {f.name} keeps {old!r} (user functions are values: define it again to use the new value)"),
                stacklevel=3)


__all__ = ["Frozen", "current", "code_globals", "remember", "frozen_of", "warn_changed"]
