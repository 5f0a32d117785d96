"""Keys and row formats of the tuning database (database.py).

- `measure_key`: what a candidate's measurement depends on (the program's canonical hash, the
  argument shapes and dtypes, the device key, the liftcl version); `tuning_key` adds the objective.
- `encode_choices` / `stored_key`: the one place that says how choices are stored as JSON (a
  search point: `Choices.to_json()`, or the older `{"structural", "joint", "vectorise",
  "default"}` form of rows written before issue 24, read alike: lift.explore.points).
- `check_record` / `check_entry`: a stored candidate's record and a winner entry, validated
  (ValueError when malformed); `rank`: a winner's order for an objective.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from lift.choices import Choices
from lift.errors import LiftError
from lift.ir.alpha import canonical
from lift.ir.nodes import Node, UserFun
from lift.ir.paths import walk
from lift.version import __version__

from .points import is_legacy, json_key

VERSION = 2  # of the database's layout and keys


def program_hash(expr: Node) -> str:
    """sha256 of the canonical (alpha-normalised) program and its user functions' C bodies."""
    canon = canonical(expr)
    funs = sorted({f"{n.name}:{n.c_source}" for _, n in walk(canon) if isinstance(n, UserFun)})
    text = str(canon) + "\0" + "\0".join(funs) + "\0" + _points_text(canon)
    return hashlib.sha256(text.encode()).hexdigest()


def _points_text(expr: Node) -> str:
    """The rewrite points' parameters (printed with the program, listed again for safety)."""
    return ";".join(f"{type(n).__name__}{sorted(cast(Any, n).fixed().items())!r}" for _, n in walk(expr)
                    if getattr(n, "transparent", False))


def shapes_key(arrays: Sequence[Any]) -> str:
    """The argument shapes and dtypes, e.g. `float32[1048576],float32[1048576]`."""
    def one(a: Any) -> str:
        if isinstance(a, tuple):
            return "(" + ",".join(one(x) for x in a) + ")"
        arr = np.asarray(a)
        return f"{arr.dtype}{list(arr.shape)}"

    return ",".join(one(a) for a in arrays)


def liftcl_version() -> str:
    """The liftcl version (part of every key: a new compiler measures again)."""
    return str(__version__)


def measure_key(expr: Node, arrays: Sequence[Any], device_key: str) -> str:
    """The key of what a candidate's measurement depends on: program, shapes, device, version."""
    parts = [program_hash(expr), shapes_key(arrays), device_key, liftcl_version(), str(VERSION)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def tuning_key(expr: Node, arrays: Sequence[Any], device_key: str, objective: str) -> str:
    """The database key of a tuning problem: the measurement key and the objective."""
    return objective_key(measure_key(expr, arrays, device_key), objective)


def objective_key(mkey: str, objective: str) -> str:
    """The tuning key of a measurement key and an objective."""
    return hashlib.sha256(f"{mkey}\n{objective}".encode()).hexdigest()


# ------------------------------------------------------------------------ choices


def encode_choices(choices: Any) -> dict[str, Any]:
    """The JSON form of choices, a `lift.Choices` (a search point or a program's) or a plain dict
    (the one place that says how choices are stored)."""
    return dict(choices.to_json()) if hasattr(choices, "to_json") else dict(choices)


def stored_key(d: Any) -> str:
    """The key (`lift.explore.points.key`) of the search point stored as `d`, in either form;
    ValueError when `d` is neither."""
    if not isinstance(d, Mapping):
        raise ValueError(f"choices are an object, not {type(d).__name__}")
    if not is_legacy(d):
        try:
            return json_key(d)
        except (LiftError, TypeError, ValueError, AttributeError) as err:
            raise ValueError(f"choices: {str(err).splitlines()[0][:200]}") from None
    structural, joint, vec = d.get("structural", {}), d.get("joint", {}), d.get("vectorise", {})
    if not isinstance(structural, Mapping) or not all(
            isinstance(k, str) and isinstance(v, Mapping) for k, v in structural.items()):
        raise ValueError("structural choices are {label: {parameter: value}}")
    for name, m in (("joint", joint), ("vectorise", vec)):
        if not isinstance(m, Mapping) or not all(isinstance(k, str) and _is_int(v) for k, v in m.items()):
            raise ValueError(f"{name} choices are {{name: integer}}")
    if not isinstance(d.get("default", False), bool):
        raise ValueError("default is true or false")
    return json_key(d)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def check_record(d: Any) -> dict[str, Any]:
    """A candidate's measurement (`Record.to_json()`), validated; ValueError when malformed."""
    if not isinstance(d, Mapping) or not isinstance(d.get("ok"), bool):
        raise ValueError("a record is an object with ok: true or false")
    stored_key(d.get("choices"))
    if not (_number(d.get("time")) and _number(d.get("memory"))):
        raise ValueError("time and memory are numbers")
    if d["ok"] and (d.get("time") is None or d.get("memory") is None):
        raise ValueError("a correct candidate has a time and a memory")
    return dict(d)


def check_entry(d: Any) -> dict[str, Any]:
    """A winner entry (its `lift.Choices` as JSON, the search's candidate, time, memory, candidates,
    pareto), validated."""
    if not isinstance(d, Mapping):
        raise ValueError("an entry is an object")
    try:
        Choices.from_json(d.get("choices"))
    except (LiftError, TypeError, ValueError, AttributeError) as err:
        raise ValueError(f"choices: {str(err).splitlines()[0][:200]}") from None
    if "candidate" in d:
        stored_key(d["candidate"])
    if not (_number(d.get("time")) and _number(d.get("memory"))):
        raise ValueError("time and memory are numbers")
    if not isinstance(d.get("pareto", []), list):
        raise ValueError("pareto is a list")
    return dict(d)


def rank(entry: Mapping[str, Any], objective: str) -> tuple[float, float]:
    """An entry's order for `objective` (smaller is better; memory first for "memory")."""
    t, m = float(entry.get("time") or float("inf")), float(entry.get("memory") or float("inf"))
    return (m, t) if objective == "memory" else (t, m)
