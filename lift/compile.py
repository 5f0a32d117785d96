"""The compilation pipeline, the one module that imports every stage.

`compile`: typecheck -> rewrite points (structural choices) -> parallel mapping and tuning
values (explicit choices, else the z3 model's choice) -> code generation -> `Program`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from lift.errors import LiftError, MappingFallback
from lift.ir.nodes import Node
from lift.lower import is_high_level, lower
from lift.program import Program
from lift.runtime import CacheDir
from lift.typecheck import typecheck

OneSize = int | tuple[int, ...] | None
SizeArg = OneSize | dict[str, OneSize]  # one size, or one per kernel name


def compile(expr: Node, device: Any = None, choices: Mapping[str, Any] | None = None,
            local_size: SizeArg = None, global_size: SizeArg = None, *, cache_dir: CacheDir = None,
            options: tuple[str, ...] = ()) -> Program:
    """Compile `expr` for `device` and build it: `lift.compile(dot)(x, y) == lift.interpret(dot, x, y)`.

    `choices` maps labels to decisions: a rewrite point's label to its structural parameters
    (`{"T": {"size": 64}}`), a map's label to a Table 5.2 code (`{"A": 30}`: map_glb(0)),
    a tuning parameter's name to its value (`{"T": 64}`). A high-level program without a
    mapping gets the z3 model's choice (`lift.constraints.choose_mapping`). `local_size` /
    `global_size`: one size for the kernels it fits, or a dict of sizes per kernel name."""
    from lift.codegen import generate  # lazily: the runtime imports without the code generator

    typecheck(expr)
    structural, joint = _split_choices(choices or {})
    prog, picked = _apply_points(expr, {**structural, **joint}, device)
    joint = {k: v for k, v in joint.items() if k not in picked}
    lowered, chosen = _lowered(prog, device, joint)
    try:
        plan = generate(lowered, local_size=local_size, global_size=global_size)
    except LiftError as err:
        if chosen is None or joint:
            raise
        try:  # the default lowering; if it fails too, the solver mapping's error is the one to see
            plan = generate(lower(prog), local_size=local_size, global_size=global_size)
        except LiftError:
            raise err from None
        _fallback(err)
        chosen = None
    recorded = dict(choices) if choices is not None else chosen
    if picked:  # what the solver chose for the rewrite points and their tuning values
        recorded = {**(recorded or {}), **picked}
    return Program(plan, device=device, choices=recorded, node=expr, cache_dir=cache_dir, options=options)


def _split_choices(choices: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Rewrite-point choices (dict values) apart from mapping codes and tuning values (ints)."""
    structural = {k: v for k, v in choices.items() if isinstance(v, Mapping)}
    joint = {k: v for k, v in choices.items() if not isinstance(v, Mapping)}
    return structural, joint


def _apply_points(expr: Node, given: dict[str, Any], device: Any) -> tuple[Node, dict[str, Any]]:
    """The points applied, with the structural and tuning values the user left open chosen."""
    from lift.ir.paths import walk
    from lift.rewrites.choose import choose
    from lift.rewrites.point import RewritePoint

    if any(isinstance(n, RewritePoint) for _, n in walk(expr)):
        return choose(expr, given, _profile(device))
    return expr, {}


def _lowered(expr: Node, device: Any, joint: dict[str, Any]) -> tuple[Node, dict[str, Any] | None]:
    """The program with its maps and reductions given OpenCL forms, and the mapping used."""
    if not is_high_level(expr):
        return expr, None
    from lift.constraints import choose_mapping, mapping_space

    profile = _profile(device)
    try:
        space = mapping_space(expr, profile)
        choice = {**choose_mapping(expr, profile), **joint} if not _has_mapping(space, joint) else joint
        return space.realise(choice), choice
    except LiftError as err:
        if joint:
            raise
        low = lower(expr)
        _fallback(err)
        return low, None


def _fallback(err: LiftError) -> None:
    warnings.warn(MappingFallback(f"the solver's mapping failed ({type(err).__name__}: "
                                  f"{str(err).splitlines()[0]}); using the default lowering"), stacklevel=4)


def _has_mapping(space: Any, joint: Mapping[str, Any]) -> bool:
    return any(k in space.context.maps for k in joint)


def _profile(device: Any) -> Any:
    from lift import devices

    if isinstance(device, devices.Device):
        return device
    try:
        return devices.current(device)
    except LiftError:
        return devices.profile("pocl-cpu")
