"""Tuning that transfers across sizes: a winner tuned at some sizes, used and proposed at others.

A tune of a program over symbolic sizes (`Size("N")`) stores its winner for the size bindings it
was tuned at (N = 4096). At other bindings of the same program (the same `program_hash`, device
and liftcl version) the stored winners are ranked by their distance to the new bindings (the sum
over the sizes of |log2(new / old)|: 8192 and 2048 are as near to 4096), and a winner is *valid*
at the new sizes when its choices, with the new sizes, satisfy the constraints there: its rewrite
points apply to the program (their size conditions hold) and its joint mapping/tuning/launch
choice is a solution of the z3 joint space of the rewritten program at those sizes
(`valid_at`). Two users:

- `lift.compile` (through `lift.explore.reuse.lookup`, asked by `lift.specialise` for a call's
  sizes): the exact sizes' winner, else the nearest valid winner (`nearest_valid`), else the
  default policy; `Program.choices.origin` names which ("nearest valid winner, tuned at N=4096").
- `lift.tune` at new sizes: the nearest valid winners are its first candidates after the default
  lowering (`Transferred`), measured and checked against the interpreter as any candidate is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lift.choices import Choices
from lift.errors import LiftError
from lift.ir.nodes import Node
from lift.spaces import apply_points, fused_of, joint_space_of, profile_of

from .database import TuningDB
from .evaluate import Evaluator, Record
from .points import is_default, joint, json_default
from .points import key as point_key

NEAREST = 4  # stored winners at other sizes considered, nearest first


@dataclass(frozen=True)
class Stored:
    """A winner stored at other sizes: its bindings, the tune's info and the winner entry."""

    sizes: dict[str, int]
    info: dict[str, Any]
    entry: dict[str, Any]
    distance: float

    def shown(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.sizes.items()))


def distance(a: Mapping[str, int], b: Mapping[str, int]) -> float:
    """The sum over the sizes of |log2(a / b)| (inf when they bind different names or a size is not positive)."""
    if set(a) != set(b) or any(int(v) <= 0 for v in (*a.values(), *b.values())):
        return math.inf
    return sum(abs(math.log2(int(a[k]) / int(b[k]))) for k in a)


def stored_near(db: TuningDB, user_program: str, device_key: str, sizes: Mapping[str, int],
                limit: int = NEAREST) -> list[Stored]:
    """The winners of `user_program` on `device_key` stored at other bindings of the same sizes
    than `sizes`, nearest first (newest first among equals), at most `limit`."""
    out: list[Stored] = []
    seen: set[str] = set()
    for text, info, entry in db.at_sizes(user_program, device_key):
        try:
            bound = {str(k): int(v) for k, v in json.loads(text).items()}
        except (ValueError, TypeError, AttributeError):
            continue
        d = distance(sizes, bound)
        if not bound or d == 0 or math.isinf(d) or text in seen:
            continue
        seen.add(text)
        out.append(Stored(bound, info, entry, d))
    out.sort(key=lambda s: s.distance)  # stable: the database's order among equals
    return out[:limit]


def moved(choices: Choices, sizes: Mapping[str, int]) -> Choices:
    """`choices` for the program specialised to `sizes` instead of the sizes they were tuned at."""
    return choices.replace(sizes=dict(sizes)) if choices.sizes is not None else choices


def valid_at(program: Node, choices: Choices, device: Any, spaces: dict | None = None) -> bool:
    """Whether `choices` (with their sizes) satisfy the constraints of `program` (its rewrite
    points placed) at those sizes: the points apply, and the joint choice is a solution of the
    z3 joint space of the rewritten program (see the module)."""
    try:
        applied = apply_points(program, choices.points, warn=False)
        space = joint_space_of(fused_of(applied, choices, spaces), profile_of(device), choices, spaces)
    except LiftError:
        return False
    given = joint(choices) if choices.mapping is not None else {**choices.tuning, **choices.launch}
    known = {}
    for k, v in given.items():
        if k in space.model.vars:
            known[k] = int(v)
        elif k in space.fixed:
            if int(space.fixed[k]) != int(v):
                return False
        elif space.mapping is not None and k in space.mapping:
            if int(space.mapping[k]) != int(v):
                return False
        else:
            return False  # a variable the space at these sizes does not have
    try:
        return space.is_valid(known)
    except (LiftError, KeyError):
        return False


def nearest_valid(expr: Node, device: Any, sizes: Mapping[str, int], db: TuningDB, user_program: str,
                  device_key: str, place: Any) -> tuple[Stored, Choices, Node] | None:
    """The nearest winner stored at other sizes whose choices are valid at `sizes` (`valid_at`):
    (the stored winner, its choices moved to `sizes`, the program they are for), or None. A
    winner that is compile's own default has nothing to transfer. `place(expr, sizes, auto)`
    gives the program the choices are for (the automatic points placed as `tune` placed them)."""
    for stored in stored_near(db, user_program, device_key, sizes):
        if json_default(stored.entry.get("candidate")):
            continue
        try:
            choices = moved(Choices.from_json(stored.entry["choices"]), sizes)
            program = place(expr, dict(sizes), bool(stored.info.get("auto", True)))
        except (LiftError, KeyError, TypeError, ValueError):
            continue
        if valid_at(program, choices, device):
            return stored, choices, program
    return None


def seed_points(pipe: Evaluator, db: TuningDB | None, user_program: str, device_key: str,
                sizes: Mapping[str, int], limit: int = NEAREST) -> list[Choices]:
    """The search points of the nearest winners stored at other sizes that are valid at `pipe`'s
    sizes (`valid_at`; the tune's first candidates after the default lowering)."""
    if db is None or not sizes:
        return []
    out: list[Choices] = []
    for stored in stored_near(db, user_program, device_key, sizes, limit):
        cand = stored.entry.get("candidate")
        if not cand or json_default(cand):
            continue
        try:
            point = moved(pipe.decode(cand), sizes)
        except (LiftError, KeyError, TypeError, ValueError):
            continue
        if is_default(point):
            continue
        # the constraints at these sizes decide, not the uniqueness constraints of this tune's space:
        # a winner of another tune (an exhaustive one) may be a kernel this space represents otherwise
        if valid_at(pipe.expr, point, pipe.device, pipe._spaces) and all(point_key(p) != point_key(point) for p in out):
            out.append(point)
    return out


class Transferred:
    """Proposes the winners transferred from other sizes (`seed_points`, untried ones, in order),
    then defers to `inner`."""

    def __init__(self, points: Sequence[Choices], inner: Any) -> None:
        self.points, self.inner = list(points), inner

    def propose(self, history: Sequence[Record]) -> Choices | None:
        tried = {point_key(r.candidate) for r in history}
        for p in self.points:
            if point_key(p) not in tried:
                return p
        return self.inner.propose(history)


__all__ = ["Stored", "Transferred", "distance", "stored_near", "moved", "valid_at", "nearest_valid", "seed_points",
           "NEAREST"]
