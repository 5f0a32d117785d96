"""`lift.compile` reuses what tuning found: the best known choices from the tuning database.

`lookup` is the hook `lift.decide` asks (`register_tuned`, done when `lift.explore` is imported):
`compile(expr)` (with no explicit choices, launch sizes or build options) plans the stored
winner of `expr` on the device first. The key is the program as the user wrote it
(`program_hash`), the device key, the liftcl version, and the size bindings: `compile` has
no arguments, so only a program whose parameter types are concrete (no symbolic `Size`)
can match, namely a tune of the same program, whose size bindings were `{}`; a winner
tuned for `N = 4096` is never used for a program over a symbolic `N`, since its kernels are
specialised to that size; a call of such a program with `N = 4096` asks again with those
bindings (`lift.specialise`: the program specialises to the sizes of its calls). The
objective "time" is preferred, then "pareto". The program is planned from the stored
`lift.Choices`; its `choices` are a `TunedChoices` (equal to them, the same JSON) whose
`origin` says where they came from. `lift.tune` compiles its candidates and its default
without the lookup (`compile(..., tuned=False)`), and the environment turns it off with
`LIFTCL_USE_TUNED=0`.

Order of preference at a call's sizes (lift.specialise): the winner tuned at exactly those sizes,
else the nearest winner tuned at other sizes of the same program whose choices the constraints
prove valid at these (`lift.explore.transfer.nearest_valid`: its `origin` reads "nearest valid
winner, tuned at N=4096 ..."), else compile's default policy.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import warnings
from collections.abc import Mapping
from typing import Any

from lift import devices
from lift.choices import Choices
from lift.compile import first_built
from lift.decide import Tuned, TunedChoices, register_tuned, tuned_decisions, tuned_lookup
from lift.errors import LiftError
from lift.ir.nodes import Lambda, Node
from lift.program import Program
from lift.rewrites import auto_points
from lift.specialise import symbolic_sizes

from .database import TuningDatabaseWarning, TuningDB, default_path
from .dbkeys import program_hash
from .points import json_default
from .transfer import nearest_valid

log = logging.getLogger("lift.explore.reuse")


def lookup(expr: Node, device: Any = None, sizes: Mapping[str, int] | None = None) -> Tuned | None:
    """The winner stored for `expr` on `device`, or None (no database, no match, symbolic sizes).
    With `sizes` (the bindings of a call of a program with symbolic sizes: `lift.specialise`), the
    winner a tune of `expr` found for those bindings (`lift.tune(expr, *arrays)` with arrays of
    those sizes), for the program specialised to them."""
    symbolic = symbolic_sizes(expr) if isinstance(expr, Lambda) else set()
    if not isinstance(expr, Lambda) or not symbolic <= set(sizes or {}):
        return None
    bound = {k: int(sizes[k]) for k in sorted(symbolic)} if sizes else {}
    path = default_path()
    if not path.is_file():
        return None
    try:
        dev = device if isinstance(device, devices.Device) else devices.current(device)
    except LiftError:
        return None
    try:  # the database's promise: a bad row is skipped (warned), never raised into a compile
        found = TuningDB(path).find(program_hash(expr), json.dumps(bound, sort_keys=True), dev.key)
    except (ValueError, TypeError, RecursionError, sqlite3.Error, OSError) as err:
        _unreadable(path, err, 4)
        return None
    if found is None:
        return _transferred(expr, dev, bound, path) if bound else None
    info, entry = found

    def stale(err: BaseException) -> None:
        warnings.warn(TuningDatabaseWarning(f"the tuned choices stored in {path} no longer build "
                                            f"({type(err).__name__}: {err}); compiling without them"), stacklevel=4)

    t = entry.get("time")
    shown = f", {t * 1e3:.3f} ms" if isinstance(t, (int, float)) else ""
    origin = f"tuning database {path} (objective {info.get('objective', 'time')}{shown})"
    auto = bool(info.get("auto", True))
    try:
        choices = Choices.from_json(entry["choices"])
        # a default winner of a tune with automatic points is compile's own default of the program as written
        default = auto and json_default(entry.get("candidate"))
        program = auto_points(expr, bound) if auto and not default else expr  # placed as `tune` placed them
    except Exception as err:  # noqa: BLE001 - a stale entry: compile as if there were none
        stale(err)
        return None
    return Tuned(choices, program, default, origin, stale)


def _unreadable(path: Any, err: BaseException, stacklevel: int) -> None:
    """Warn that the tuning database at `path` could not be read (the compile goes on without it)."""
    warnings.warn(TuningDatabaseWarning(f"the tuning database {path} could not be read "
                                        f"({type(err).__name__}: {str(err)[:200]}); compiling without it"),
                  stacklevel=stacklevel)


def _transferred(expr: Lambda, dev: Any, bound: dict[str, int], path: Any) -> Tuned | None:
    """The nearest winner of `expr` tuned at other sizes that the constraints prove valid at
    `bound` (lift.explore.transfer), as a `Tuned` whose origin says so; None when there is none."""
    try:
        found = nearest_valid(expr, dev, bound, TuningDB(path), program_hash(expr), dev.key, _placed)
    except (ValueError, TypeError, RecursionError, sqlite3.Error, OSError) as err:
        _unreadable(path, err, 5)
        return None
    if found is None:
        return None
    stored, choices, program = found
    t = stored.entry.get("time")
    shown = f", {t * 1e3:.3f} ms there" if isinstance(t, (int, float)) else ""
    origin = f"nearest valid winner, tuned at {stored.shown()} (tuning database {path}{shown})"

    def failed(err: BaseException) -> None:  # valid by the constraints, yet it did not build: the default
        log.debug("the winner tuned at %s does not build at %s: %s", stored.shown(), bound, err)

    return Tuned(choices, program, False, origin, failed, transferred=True)


def _placed(expr: Lambda, sizes: dict[str, int], auto: bool) -> Node:
    """The program a stored winner's choices are for: the automatic points placed as `tune` placed them."""
    return auto_points(expr, sizes) if auto else expr


def tuned_program(expr: Node, device: Any = None, cache_dir: Any = None,
                  sizes: Mapping[str, int] | None = None) -> Program | None:
    """The compiled winner stored for `expr` on `device` (see `lookup`), or None (none, or it no
    longer builds: warned); what `lift.compile(expr)` builds first."""
    found = lookup(expr, device, sizes) if tuned_lookup() is not None else None
    if found is None:
        return None
    return first_built(tuned_decisions(expr, device, found), device, cache_dir=cache_dir, lookup=tuned_lookup())


register_tuned(lookup)

__all__ = ["lookup", "tuned_program", "TunedChoices", "symbolic_sizes"]
