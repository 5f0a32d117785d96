"""`lift.compile` reuses what tuning found: the best known choices from the tuning database.

`compile(expr)` (with no explicit choices, launch sizes or build options) asks `tuned_program`
for the stored winner of `expr` on the device. The key is the program as the user wrote it
(`program_hash`), the device key, the liftcl version, and the size bindings: `compile` has
no arguments, so only a program whose parameter types are concrete (no symbolic `Size`)
can match, namely a tune of the same program, whose size bindings were `{}`; a winner
tuned for `N = 4096` is never used for a program over a symbolic `N`, since its kernels are
specialised to that size; a call of such a program with `N = 4096` asks again with those
bindings (`lift.specialise`: the program specialises to the sizes of its calls). The
objective "time" is preferred, then "pareto". The program is rebuilt from the stored
`lift.Choices`; its `choices` are a `TunedChoices` (equal to them, the same JSON) whose
`origin` says where they came from. The lookup is off while `tune` runs (its candidates are
compiled with their own choices), and when the environment sets `LIFTCL_USE_TUNED=0`.
"""

from __future__ import annotations

import functools
import json
import os
import warnings
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import fields
from typing import Any, TypeVar

from lift.choices import Choices
from lift.errors import LiftError
from lift.ir.nodes import Lambda, Node

from .database import TuningDatabaseWarning, TuningDB, default_path
from .dbkeys import program_hash

_OFF: ContextVar[bool] = ContextVar("lift_tuned_lookup_off", default=False)
F = TypeVar("F", bound=Callable[..., Any])


def without_lookup(fn: F) -> F:
    """Run `fn` with `lift.compile`'s tuning-database lookup off."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        token = _OFF.set(True)
        try:
            return fn(*args, **kw)
        finally:
            _OFF.reset(token)

    return wrapper  # type: ignore[return-value]


def symbolic_sizes(expr: Lambda) -> set[str]:
    """The names of the symbolic sizes in the program's parameter types."""
    from lift.types import size_names

    return set(size_names(p.ptype for p in expr.params))


def tuned_program(expr: Node, device: Any = None, cache_dir: Any = None,
                  sizes: Mapping[str, int] | None = None) -> Any | None:
    """The compiled winner stored for `expr` on `device`, or None (no database, no match, symbolic sizes).
    With `sizes` (the bindings of a call of a program with symbolic sizes: `lift.specialise`), the
    winner a tune of `expr` found for those bindings (`lift.tune(expr, *arrays)` with arrays of
    those sizes), specialised to them."""
    if _OFF.get() or os.environ.get("LIFTCL_USE_TUNED", "1") == "0":
        return None
    symbolic = symbolic_sizes(expr) if isinstance(expr, Lambda) else set()
    if not isinstance(expr, Lambda) or not symbolic <= set(sizes or {}):
        return None
    bound = {k: int(sizes[k]) for k in sorted(symbolic)} if sizes else {}
    path = default_path()
    if not path.is_file():
        return None
    from lift.explore.tune import _device

    try:
        dev = _device(device)
    except LiftError:
        return None
    found = TuningDB(path).find(program_hash(expr), json.dumps(bound, sort_keys=True), dev.key)
    if found is None:
        return None
    info, entry = found
    token = _OFF.set(True)
    try:
        choices = Choices.from_json(entry["choices"])
        prog = _build(expr, bool(info.get("auto", True)), choices, device, cache_dir, bound)
    except Exception as err:  # noqa: BLE001 - a stale entry: compile as if there were none
        warnings.warn(TuningDatabaseWarning(f"the tuned choices stored in {path} no longer build "
                                            f"({type(err).__name__}: {err}); compiling without them"), stacklevel=3)
        return None
    finally:
        _OFF.reset(token)
    t = entry.get("time")
    shown = f", {t * 1e3:.3f} ms" if isinstance(t, (int, float)) else ""
    prog.choices = TunedChoices.of(prog.choices, f"tuning database {path} "
                                   f"(objective {info.get('objective', 'time')}{shown})")
    return prog


class TunedChoices(Choices):
    """The `lift.Choices` of a program `lift.compile` rebuilt from the tuning database: equal to
    (and with the JSON form of) the plain record; `origin` says where they came from."""

    origin: str = ""

    @staticmethod
    def of(choices: Choices, origin: str) -> TunedChoices:
        """`choices` with where they came from."""
        out = TunedChoices(**{f.name: getattr(choices, f.name) for f in fields(Choices)})
        object.__setattr__(out, "origin", origin)
        return out


def _build(expr: Lambda, auto: bool, choices: Choices, device: Any, cache_dir: Any,
           sizes: dict[str, int]) -> Any:
    from lift.rewrites import auto_points

    from .evaluate import Evaluator

    search = auto_points(expr, sizes) if auto else expr  # placed as `tune` placed them for these sizes
    pipe = Evaluator(search, (), device, sizes)
    pipe.cache_dir = cache_dir
    return pipe.compile(choices)
