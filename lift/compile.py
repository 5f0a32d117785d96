"""The compilation pipeline, the one module that imports every stage.

`compile`: typecheck -> rewrite points (structural choices) -> parallel mapping and tuning
values (explicit choices, else the z3 model's choice) -> code generation -> `Program`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from lift.errors import LiftError, LiftTypeError, MappingFallback
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

    _check_args(expr, choices, local_size, global_size)
    typecheck(expr)
    structural, joint = _split_choices(choices or {})
    prog = _apply_points(expr, structural)
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
    return Program(plan, device=device, choices=recorded, node=expr, cache_dir=cache_dir, options=options)


def _check_args(expr: Any, choices: Any, local_size: Any, global_size: Any) -> None:
    """`LiftTypeError` for arguments of the wrong Python type (before any work)."""
    if not isinstance(expr, Node):
        raise LiftTypeError(f"compile needs a program made with lift.fun, got {expr!r}", got=expr)
    if choices is not None and not isinstance(choices, Mapping):
        raise LiftTypeError(f"choices must be a dict (or lift.Choices), got {choices!r}", got=choices)
    for what, s in (("local_size", local_size), ("global_size", global_size)):
        for one in (s.values() if isinstance(s, Mapping) else (s,)):
            dims = (one,) if isinstance(one, int) else one
            if dims is not None and not (isinstance(dims, tuple | list) and 1 <= len(dims) <= 3 and all(
                    isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims)):
                raise LiftTypeError(f"{what} must be an int >= 1, a tuple of 1 to 3 of them, or a dict of "
                                    f"them per kernel name, got {s!r}", got=s)


def _split_choices(choices: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Rewrite-point choices (dict values) apart from mapping codes and tuning values (ints)."""
    structural = {k: v for k, v in choices.items() if isinstance(v, Mapping)}
    joint = {k: v for k, v in choices.items() if not isinstance(v, Mapping)}
    return structural, joint


def _apply_points(expr: Node, structural: dict[str, Any]) -> Node:
    from lift.ir.paths import walk
    from lift.rewrites import apply_all
    from lift.rewrites.point import RewritePoint

    if any(isinstance(n, RewritePoint) for _, n in walk(expr)):
        return apply_all(expr, structural)
    return expr


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
