"""All liftcl errors and warnings, and the source locations they point at.

Every error subclasses `LiftError` and the builtin exception it refines, carries
its facts as fields (`node`, `label`, `loc`, `expected`, `got`, `hint`) and
prints them::

    LiftTypeError: zip expects arrays of equal length, got [Float]N and [Float]M
      at examples/dot.py:12 in dot (label "Z")
        reduce(add, 0.0) << map(mult) << zip(x, y)
      hint: split or pad one input so both lengths agree
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

# Folders whose frames are library frames, not the user's: the package root and
# the three sibling folders installed into the `lift` namespace.
_LIB_DIRS = tuple(
    os.path.normcase(os.path.abspath(os.path.join(os.path.dirname(__file__), *p)))
    for p in [(), (os.pardir, "rules"), (os.pardir, "rewrites"), (os.pardir, "constraints")]
)


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """A line of user code: where an IR node was built."""

    file: str
    line: int
    function: str

    @property
    def text(self) -> str:
        return linecache.getline(self.file, self.line).strip()

    def __str__(self) -> str:
        return f"{_short(self.file)}:{self.line} in {self.function}"


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith(os.pardir + os.sep + os.pardir) else rel


def _is_library_frame(filename: str) -> bool:
    name = os.path.normcase(os.path.abspath(filename))
    return any(name.startswith(d + os.sep) for d in _LIB_DIRS) or name.startswith("<frozen")


def is_library_loc(loc: SourceLoc) -> bool:
    """Whether `loc` is a line of liftcl itself (a built-in user function, a rule), not the user's."""
    return _is_library_frame(loc.file)


def user_loc() -> SourceLoc | None:
    """The first stack frame outside liftcl (the user's line), or None."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if not _is_library_frame(frame.f_code.co_filename):
            return SourceLoc(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


class LiftError(Exception):
    """Base of every liftcl error; names the node, its label and the user's line."""

    def __init__(
        self,
        message: str,
        *,
        node: Any = None,
        label: str | None = None,
        loc: SourceLoc | None = None,
        expected: Any = None,
        got: Any = None,
        hint: str | None = None,
    ) -> None:
        if node is not None:
            label = label if label is not None else getattr(node, "label", None)
            loc = loc if loc is not None else getattr(node, "loc", None)
        if loc is None or is_library_loc(loc):  # the user's line, never one inside liftcl
            loc = user_loc()
        self.message = message
        self.node = node
        self.label = label
        self.loc = loc
        self.expected = expected
        self.got = got
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        lines = [self.message]
        where = []
        if self.loc is not None:
            where.append(f"at {self.loc}")
        if self.label is not None:
            where.append(f'(label "{self.label}")')
        if where:
            lines.append("  " + " ".join(where))
        if self.loc is not None and self.loc.text:
            lines.append("    " + self.loc.text)
        if self.node is not None:
            lines.append("  in " + _node_text(self.node))
        if self.hint:
            lines.append("  hint: " + self.hint)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._render()


def _node_text(node: Any) -> str:
    text = str(node)
    return text if len(text) <= 120 else text[:117] + "..."


class LiftTypeError(LiftError, TypeError):
    """A program or an argument does not have the type a pattern needs."""


class LiftValueError(LiftError, ValueError):
    """A value (a size, a parameter) is outside what a pattern accepts."""


class UnsupportedError(LiftError, NotImplementedError):
    """A construct the IR accepts but this stage cannot handle (yet)."""


class RewriteError(LiftError, ValueError):
    """A rule was applied where it does not match, or broke the type."""


class UnsatisfiableError(LiftError, ValueError):
    """A constraint model has no solution; `core` lists the conflicting constraints."""

    def __init__(self, message: str, *, core: tuple[Any, ...] = (), **kw: Any) -> None:
        self.core = tuple(core)
        if core and "hint" not in kw:
            kw["hint"] = "conflicting constraints: " + "; ".join(str(c) for c in core)
        super().__init__(message, **kw)


class NotSynchronisableError(LiftError, ValueError):
    """No barrier placement is reachable by every work-item of a group."""

    loops: tuple[Any, ...]  # set by lift.barriers: (why, paths around the first access, around the second)


class UserFunError(LiftError, ValueError):
    """A Python user function uses a construct that cannot become OpenCL C."""


class NestingError(UnsupportedError):
    """A program (or a TC expression) nests deeper than liftcl's passes go: Python's recursion limit."""


def nesting_guard(what: str) -> Callable[[F], F]:
    """Decorate a public entry point so that a program nested past Python's recursion limit (a
    thousand chained maps) is a `NestingError` naming `what`, never a raw `RecursionError`."""
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(*args: Any, **kw: Any) -> Any:
            try:
                return fn(*args, **kw)
            except RecursionError:
                pass  # raised below, out of the handler: the stack is unwound by then
            raise NestingError(f"{what}: the program nests deeper than liftcl goes (Python's recursion limit of "
                               f"{sys.getrecursionlimit()} frames)",
                               hint="build it in stages of a few hundred nested patterns, or use iterate(n, f) "
                                    "for a repeated step")
        return cast(F, guarded)
    return wrap


class DeviceError(LiftError, RuntimeError):
    """The OpenCL device rejected a program, or none is available."""

    build_log: str  # set by lift.runtime for a failed build
    verdict: Any  # set by lift.devices.advice for a device that failed the probe


class LiftWarning(UserWarning):
    """Base of liftcl warnings; each subclass is a stable id to filter on."""


class RewritePointSkipped(LiftWarning):
    """A rewrite point did not apply (label, line and reason in the message)."""

    label: str | None  # set by `lift.rewrites.apply.skipped`
    line: int | None
    reason: str
    loc: SourceLoc | None


class MappingFallback(LiftWarning):
    """Kept for the public API: `lift.compile` once used the default lowering when the solver's
    mapping could not be compiled. It no longer does (issue 14): what needed the fallback is a
    named constraint of the mapping model, so this warning is never raised."""


class UserFunGlobalChanged(LiftWarning):
    """A global (or closure) number a user function read when it was translated has changed since:
    the translation keeps the value it read (lift.userfun.frozen)."""


class DeviceSkipped(LiftWarning):
    """The default device choice skipped an attached device that cannot build (`.device`, `.reason`)."""

    device: str  # set by lift.devices.live
    platform: str
    reason: str
