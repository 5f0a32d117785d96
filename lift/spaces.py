"""One program's rewritten forms and constraint spaces, kept between compilations of many choices.

    spaces: Spaces = {}
    applied = points_applied(expr, choices, spaces)            # stage "points applied", kept
    fused = fused_of(applied, choices, spaces)                 # stages "recomputed" and "fused", kept
    space = joint_space_of(fused, profile, choices, spaces)    # its joint mapping/tuning/launch space

`lift.decide` (the policy) and `lift.compile` (the pipeline) both read them, and the tuner
(`lift.explore.evaluate.Evaluator`) shares one `spaces` dict between its candidates, so a
program is rewritten and its space built once per structural choice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from lift import devices
from lift.choices import Choices
from lift.constraints import joint_space
from lift.errors import LiftError
from lift.ir.nodes import Node
from lift.ir.paths import walk
from lift.rewrites import apply_all
from lift.rewrites.point import RewritePoint
from lift.rules.prepare import prepared

T = TypeVar("T")
Spaces = dict[Any, Any]  # one program's rewritten forms and spaces, kept by a caller compiling many choices


def apply_points(expr: Node, points: Mapping[str, Mapping[str, Any]], *, warn: bool = True) -> Node:
    """Stage "points applied": every rewrite point of `expr` applied with its structural choice."""
    if any(isinstance(n, RewritePoint) for _, n in walk(expr)):
        return apply_all(expr, {k: dict(v) for k, v in points.items()}, warn=warn)
    return expr


def points_applied(expr: Node, choices: Choices, spaces: Spaces | None = None, *, warn: bool = True) -> Node:
    """`apply_points` with `choices.points`, kept in `spaces` (one program's) when given."""
    return kept(spaces, ("points", points_key(choices)), lambda: apply_points(expr, choices.points, warn=warn))


def fused_of(applied: Node, choices: Choices, spaces: Spaces | None = None) -> Node:
    """Stages "recomputed" and "fused" (`lift.rules.prepare.prepared`: recompute_layouts, then
    fuse_epilogues and fuse_reduce_maps) of the program `applied` that `choices.points` made: the
    program its constraint space is stated over; kept in `spaces` (one program's) when given."""
    return kept(spaces, ("fused", points_key(choices)), lambda: prepared(applied))


def joint_space_of(fused: Node, profile: devices.Device, choices: Choices, spaces: Spaces | None = None, *,
                   unique: bool = False) -> Any:
    """The joint mapping/tuning space (with launch variables when `choices.sizes` are known) of the
    program `fused` that `choices.points` made, after the stages "recomputed" and "fused"
    (`fused_of`); kept in `spaces` (one
    program's) when given. `unique`: the tuner's space, with the uniqueness constraints
    (lift.constraints.unique)."""
    key: tuple[str, ...] = ("space", points_key(choices), profile.key, repr(sorted((choices.sizes or {}).items())))
    key = (*key, "unique") if unique else key
    return kept(spaces, key, lambda: joint_space(fused, profile, sizes=choices.sizes, unique=unique,
                                                        rewritten=True))


def points_key(choices: Choices) -> str:
    """The key of `choices`' structural part (what `points_applied` keeps a program under)."""
    return Choices(points=choices.points).key()


def kept(spaces: Spaces | None, key: Any, make: Callable[[], T]) -> T:
    """`make()`, or what it gave (or raised) before for `key` in `spaces`."""
    if spaces is None:
        return make()
    if key not in spaces:
        try:
            spaces[key] = make()
        except LiftError as err:
            spaces[key] = err
    got = spaces[key]
    if isinstance(got, LiftError):
        raise got
    return cast(T, got)


def profile_of(device: Any) -> devices.Device:
    """The `lift.devices.Device` whose limits constrain a compilation for `device`."""
    if isinstance(device, devices.Device):
        return device
    try:
        return devices.current(device)
    except LiftError:
        return devices.profile("pocl-cpu")


__all__ = ["Spaces", "apply_points", "points_applied", "fused_of", "joint_space_of", "points_key", "kept", "profile_of"]
