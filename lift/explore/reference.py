"""The interpreter's result that every candidate is checked against, computed within the budget.

`Reference(expr, arrays)` starts the interpretation at once in a forked child process (the
program's user functions are Python closures, which do not pickle for a spawned one), so it
runs while the first candidate is generated and built, and a tune can stop waiting at its
budget's end: `get(0, until)` is the result (`get(1, until)` the float64 one, computed after
it when asked for: only when a candidate differs), or None when it is not there by `until` (a
`time.perf_counter()` instant). `close()` kills the child. Where fork is not available the
interpretation runs in this process when first asked for, as before.
"""

from __future__ import annotations

import importlib
import math
import multiprocessing
import time
from collections.abc import Sequence
from typing import Any

from lift.errors import LiftError


def _interpreter() -> Any:
    """The `lift.interpret` package, its `interpret` read at each call (a test may replace it)."""
    return importlib.import_module("lift.interpret")

def _interpret(conn: Any, other: Any, expr: Any, arrays: Sequence[Any]) -> None:
    """The child: the result, then the float64 one only when asked for it. It closes its copy of
    the parent's end first, so a parent that dies (even by SIGKILL) ends it: its next send or
    receive fails."""
    other.close()
    try:
        conn.send(("ok", _interpreter().interpret(expr, *arrays)))
        if conn.recv() == "precise":
            conn.send(("ok", _interpreter().interpret(expr, *arrays, precise=True)))
    except (EOFError, BrokenPipeError):
        pass  # the parent no longer wants it (or is gone)
    except Exception as err:  # noqa: BLE001 - sent to the parent, which raises it
        try:
            conn.send(("error", err))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            conn.send(("error", LiftError(f"{type(err).__name__}: {err}")))
    finally:
        conn.close()


class Reference:
    """The interpreter's result (index 0) and its float64 variant (index 1) of one problem."""

    def __init__(self, expr: Any, arrays: Sequence[Any]) -> None:
        self.expr, self.arrays = expr, tuple(arrays)
        self.values: list[Any] = []
        self.seconds: float | None = None  # how long the result took (None: not there yet)
        self._t0 = time.perf_counter()
        self._proc: Any = None
        self._conn: Any = None
        self._asked = False
        if "fork" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("fork")
            parent, child = ctx.Pipe()
            self._proc = ctx.Process(target=_interpret, args=(child, parent, self.expr, self.arrays),
                                     daemon=True)
            self._proc.start()
            child.close()
            self._conn = parent

    def get(self, index: int, until: float = math.inf) -> Any | None:
        """Result `index` (0: as the semantics rounds, 1: float64), waiting until the instant
        `until` at most; None when it is not there by then. Raises the interpreter's error."""
        if self._proc is None:
            self._inline(index)
        if index == 1 and len(self.values) == 1 and self._conn is not None and not self._asked:
            self._conn.send("precise")
            self._asked = True
        while len(self.values) <= index and self._conn is not None:
            left = until - time.perf_counter()  # past `until`, only what has already arrived
            if not self._conn.poll(None if math.isinf(left) else max(left, 0.0)):
                return None
            try:
                status, value = self._conn.recv()
            except (EOFError, OSError):
                self._conn = None
                raise LiftError("the reference interpretation died (out of memory?)") from None
            if status != "ok":
                self.close()
                raise value
            self.values.append(value)
            if len(self.values) == 1:
                self.seconds = time.perf_counter() - self._t0
        return self.values[index] if len(self.values) > index else None

    def _inline(self, index: int) -> None:
        while len(self.values) <= index:
            self.values.append(_interpreter().interpret(self.expr, *self.arrays, precise=len(self.values) == 1))
            if len(self.values) == 1:
                self.seconds = time.perf_counter() - self._t0

    def close(self) -> None:
        """Stop the interpretation (what was received is kept)."""
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
        if self._proc is not None:
            self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


__all__ = ["Reference"]
