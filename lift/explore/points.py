"""The tuner's search points: `lift.Choices`, as the strategies propose them and `lift.compile.plan` plans them.

    p = pipe.point({"auto_b0": {...}}, {"m0": 30, "m1": 0, "local_size_0": 64, "groups_0": 8})
    key(p)                     # the tuning database's key of the point
    pipe.planned(p)            # lift.compile.plan of the point (lift.explore.evaluate)

A point is the `Choices` of one program the tune searches (its rewrite points, automatic ones
included): `points` (every point's structural parameters), a joint mapping/tuning/launch choice
of the constraint space those points give, sorted into `mapping`, `tuning` and `launch` by that
space's maps (`lift.choices.joint_fields`; `Evaluator.point` sorts it), `vectorise`, and the
tuned `sizes`.

The default lowering, `lift.compile`'s own program (every point skipped, the solver's mapping,
open tuning values chosen as compile chooses them; measured first and kept unless something
beats it), is the one point whose `mapping` is None: `default_point(structural)`, tested by
`is_default`. Every other point fixes its mapping (a dict, empty for a program without maps)
and carries the tuned sizes.

Keys and rows: `key(point)` is the tuning database's key of a point, the same string as when
search points were a class of their own (`Candidate`, before issue 24): the canonical JSON of
`{"structural", "joint", "vectorise", "default"}` (`legacy_json`), so rows stored before keep
their keys. Rows are written as `Choices.to_json()`; `decode` reads both forms (the older one
needs the map labels of the points' space to sort its joint choice), and `json_key` /
`json_default` read a stored point's key and default flag from either form without a space.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from lift.choices import Choices, joint_fields

Structural = Mapping[str, Mapping[str, Any]]  # rewrite-point label -> structural parameters
_AUTO_MAP = re.compile(r"m\d+")  # the labels of maps the automatic points and normalisation name


def all_skipped(structural: Structural) -> dict[str, dict[str, Any]]:
    """Every point skipped."""
    return {k: {"skip": True} for k in structural}


def default_point(structural: Structural) -> Choices:
    """The default lowering of a program whose points have the domains `structural` (see the module)."""
    return Choices(points=all_skipped(structural))


def point(structural: Structural, joint: Mapping[str, int], vectorise: Mapping[str, int] | None = None, *,
          maps: Iterable[str], sizes: Mapping[str, int] | None = None) -> Choices:
    """The (non-default) point of `structural` point parameters and a `joint` mapping/tuning/launch
    choice, sorted by `maps`, the map labels of the space the points give (`Evaluator.point` passes
    the space's), with the tuned `sizes`."""
    return Choices(points=structural, **joint_fields(joint, maps), vectorise=vectorise or {}, sizes=sizes)


def is_default(point: Choices) -> bool:
    """Whether `point` is the default lowering (its mapping left to `lift.compile`)."""
    return point.mapping is None


def joint(point: Choices) -> dict[str, int]:
    """The point's joint choice: its mapping, tuning and launch variables together."""
    return {**(point.mapping or {}), **point.tuning, **point.launch}


def legacy_json(point: Choices) -> dict[str, Any]:
    """The point in the older JSON form (`{"structural", "joint", "vectorise", "default"}`), the form its key reads."""
    return {"structural": {k: {p: list(v) if isinstance(v, tuple) else v for p, v in ps.items()}
                           for k, ps in point.points.items()},
            "joint": joint(point), "vectorise": dict(point.vectorise), "default": is_default(point)}


def key(point: Choices) -> str:
    """The point's key: for de-duplication and the tuning database (unchanged since points were `Candidate`s)."""
    return json.dumps(legacy_json(point), sort_keys=True)


def describe(point: Choices) -> str:
    """The point for people: "default lowering", else its point parameters, joint values and vector widths."""
    if is_default(point):
        return "default lowering"
    parts = [f"{k}:{','.join(f'{p}={v}' for p, v in ps.items())}" for k, ps in point.points.items()]
    parts += [f"{k}={v}" for k, v in joint(point).items()]
    parts += [f"vec {k}={v}" for k, v in point.vectorise.items()]
    return " ".join(parts)


# ------------------------------------------------------------------ stored forms


def is_legacy(d: Mapping[str, Any]) -> bool:
    """Whether a stored point is in the older form (no `Choices` "format")."""
    return "format" not in d


def json_key(d: Mapping[str, Any]) -> str:
    """The key of a stored point (either form), without its space."""
    if is_legacy(d):
        return json.dumps({"structural": {k: dict(v) for k, v in d.get("structural", {}).items()},
                           "joint": {k: int(v) for k, v in d.get("joint", {}).items()},
                           "vectorise": {k: int(v) for k, v in d.get("vectorise", {}).items()},
                           "default": bool(d.get("default", False))}, sort_keys=True)
    return key(Choices.from_json(d))


def json_default(d: Mapping[str, Any] | None) -> bool:
    """Whether a stored point (either form; None: no point) is the default lowering."""
    if not d:
        return False
    return bool(d.get("default", False)) if is_legacy(d) else d.get("mapping") is None


def decode(d: Mapping[str, Any], maps: Callable[[Structural], Iterable[str]] | None = None,
           sizes: Mapping[str, int] | None = None) -> Choices:
    """The point stored as `d`. The older form's joint choice is sorted by `maps(structural)`,
    the map labels of the space its points give, and gets `sizes` (the tuned sizes) unless it is
    the default lowering. Without `maps` (a replay of recorded measurements, which never plans a
    point: only its key and features count), the labels automatic points and normalisation give
    maps (`m<d>`) are taken for the maps."""
    if not is_legacy(d):
        return Choices.from_json(d)
    structural = {k: dict(v) for k, v in d.get("structural", {}).items()}
    if d.get("default", False):
        return Choices(points=structural)
    given = {k: int(v) for k, v in d.get("joint", {}).items()}
    labels = maps(structural) if maps is not None else [k for k in given if _AUTO_MAP.fullmatch(k)]
    return point(structural, given, {k: int(v) for k, v in d.get("vectorise", {}).items()}, maps=labels,
                 sizes=sizes)


__all__ = ["all_skipped", "default_point", "point", "is_default", "joint", "key", "legacy_json", "describe", "decode",
           "json_key", "json_default", "is_legacy"]
