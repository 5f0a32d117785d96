"""The compilation pipeline, the one module that imports every stage.

    typecheck(expr)                                      typed (once; types are cached)
    normalise(expr)                                      one canonical spelling (lift.rules.normalise)
    pointed = rewritten(expr, choices)                   rewrite points applied (structural choices)
    mapped  = map_program(pointed, profile, choices)     mapping, tuning values, vectorisation, launch
    linked  = link(mapped)                               per kernel (KERNEL_STAGES): allocated ->
                                                         probed -> synchronised -> emitted ->
                                                         assembled; then the host plan (KernelSource)
    Program(linked)                                      built for the device

`choices` is a `lift.Choices` (a plain dict is converted once, at the edge). A high-level program
without a mapping gets the z3 model's (`lift.constraints.choose_mapping`); when the barrier pass
cannot synchronise that mapping, the model learns a named constraint and the solver chooses again
(`generate_first`). There is no fallback to the default lowering (`MappingFallback` is never
warned). `Program.choices` is the `Choices` actually used, so
`compile(expr, choices=prog.choices)` rebuilds the same program.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lift.choices import Choices, as_choices, is_launch, joint_fields
from lift.errors import LiftError, LiftTypeError, LiftValueError, NotSynchronisableError
from lift.ir.nodes import Node
from lift.lower import is_high_level, lower
from lift.plan import KernelSource
from lift.program import Program
from lift.rules.normalise import normalise
from lift.runtime import CacheDir
from lift.typecheck import typecheck
from lift.userfun.frozen import warn_changed

OneSize = int | tuple[int, ...] | None
SizeArg = OneSize | dict[str, OneSize]  # one size, or one per kernel name
Spaces = dict[Any, Any]  # one program's rewritten forms and spaces, kept by a caller compiling many choices


def serialised(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` run under `lift.constraints.model.Z3_LOCK` (z3 is not thread-safe): calls from
    several threads run one at a time, and a call inside another (a recursive compile) goes on."""
    @functools.wraps(fn)
    def run(*args: Any, **kw: Any) -> Any:
        from lift.constraints.model import Z3_LOCK  # lazily: `import lift` does not load z3

        with Z3_LOCK:
            return fn(*args, **kw)

    return run


@dataclass(frozen=True)
class Mapped:
    """A program with its maps given OpenCL forms, the choices that did it and their launch sizes."""

    program: Node
    choices: Choices
    global_size: SizeArg = None
    local_size: SizeArg = None


@serialised
def compile(expr: Node, device: Any = None, choices: Choices | Mapping[str, Any] | None = None,
            local_size: SizeArg = None, global_size: SizeArg = None, *, cache_dir: CacheDir = None,
            options: tuple[str, ...] = (), spaces: Spaces | None = None, specialise: bool = True) -> Program:
    """Compile `expr` for `device` and build it: `lift.compile(dot)(x, y) == lift.interpret(dot, x, y)`.

    `choices`: a `lift.Choices`, or a dict from labels to decisions: a rewrite point's label to
    its structural parameters (`{"T": {"size": 64}}`), a map's label to a Table 5.2 code
    (`{"A": 30}`: map_glb(0)), a tuning parameter's name to its value (`{"T": 64}`). A high-level
    program without a mapping gets the z3 model's choice. `local_size` / `global_size`: one size
    for the kernels it fits, or a dict of sizes per kernel name (they override the choices' launch
    sizes). `spaces`: a dict in which constraint spaces are kept between calls (`lift.tune`).
    `specialise` (with no choices, launch sizes or options, for a program with symbolic sizes): a
    call with new sizes compiles the program specialised to them, when the tuning database or the
    default points have something for those sizes, and runs it (`lift.specialise`;
    `Program.specialised(*arrays)`, `Program.specialisations`); False: calls run the generic program.
    Thread-safe: compiles from several threads run one at a time (z3 is not thread-safe)."""
    _check_args(expr, choices, local_size, global_size)
    warn_changed(expr)  # a global a user function read has changed since (lift.userfun.frozen)
    if not isinstance(specialise, bool):
        raise LiftTypeError(f"specialise must be True or False, got {specialise!r}", got=specialise)
    typecheck(expr)
    expr = normalise(expr)  # stage "normalised": one spelling for every spelling (lift.rules.normalise)
    plain = choices is None and local_size is None and global_size is None and not options and spaces is None
    if plain:
        from lift.explore.reuse import tuned_program  # lazily: the tuning database sits above compile

        tuned = tuned_program(expr, device, cache_dir)  # the best known choices (see lift.explore.reuse)
        if tuned is not None:
            return tuned
    if plain and profile_of(device).kind == "gpu":  # local-memory tiles and trees (lift.rewrites.gpu_tiles)
        from lift.rewrites.gpu_tiles import gpu_default

        tiled = gpu_default(expr, profile_of(device))
        try:
            if tiled is not None:
                return compile(tiled[0], device, choices=tiled[1], cache_dir=cache_dir)
        except LiftError:
            pass  # the points do not compile here: the defaults below
    from lift.rewrites.defaults import default_reduction, with_auto_points

    default = default_reduction(expr) if choices is None and spaces is None else None
    if default is None and plain:
        blocked = _default_blocks(expr, device, cache_dir)  # register blocks of nests (constant sizes)
        if blocked is not None:
            return blocked
    if default is not None:  # a full reduction: parallel chunks, atomic combine (lift/rewrites/defaults.py)
        choices = default[1]
    search = default[0] if default is not None else _with_default_points(expr, as_choices(choices))
    search = with_auto_points(expr, as_choices(choices)) if search is expr else search
    profile = profile_of(device)
    wanted = device_widths(search, as_choices(choices), profile)
    pointed, wanted, chosen = _open_choices(search, wanted, profile, spaces)
    plan, used = generate_first(pointed, profile, wanted, local_size, global_size, None if chosen else spaces)
    node = used.program if wanted.sizes is not None else expr  # a specialised program checks its own sizes
    done = used.choices.replace(tuning={**used.choices.tuning, **chosen}) if chosen else used.choices
    wide = (lambda: link(used, local_size, global_size, wide=True)) if plan.index_limits else None
    special = _specialiser(expr, device, cache_dir) if specialise and plain else None
    return Program(plan, device=device, choices=done, node=node, cache_dir=cache_dir, options=options, wide=wide,
                   specialiser=special, checks=used.program)


def _specialiser(expr: Node, device: Any, cache_dir: CacheDir) -> Any:
    """A `lift.specialise.Specialiser` for a program with symbolic sizes, else None."""
    from lift.explore.reuse import symbolic_sizes
    from lift.ir.nodes import Lambda
    from lift.specialise import Specialiser

    if not isinstance(expr, Lambda) or not symbolic_sizes(expr):
        return None
    return Specialiser(expr, device, cache_dir)


def _default_blocks(expr: Node, device: Any, cache_dir: CacheDir) -> Program | None:
    """`expr` with the automatic points `lift.compile` applies by default (`lift.rewrites.auto.
    default_points`: register blocks of nested map-reduces with constant sizes) compiled with their
    first valid choices, or None (none placed, or they do not compile: the program as written)."""
    from lift.errors import RewritePointSkipped
    from lift.rewrites import VectorisePoint, points
    from lift.rewrites.auto import auto_space, default_points

    placed = default_points(expr)
    if placed is expr:
        return None
    space = auto_space(placed)
    first = {lab: {k: v[0] for k, v in doms.items() if k != "skip"} for lab, doms in space.items()}
    for lab, p in points(placed).items():
        if isinstance(p, VectorisePoint) and lab in first:
            first[lab] = _map_width(first[lab], space[lab]["width"], _elem_bytes(p), device)
    if all(c.get("skip") for c in first.values()):
        return None  # nothing the program as written lacks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RewritePointSkipped)  # a point the user did not write
        blocks = any("along" in doms for doms in space.values())  # a block_nest point: a 2-D grid of blocks
        spaces: Spaces = {}  # the grid launch's rewriting and joint space, reused by its compile
        for choices in (_grid_launch(placed, first, device, spaces) if blocks else None, first):
            if choices is None:
                continue
            try:
                return compile(placed, device, choices=choices, cache_dir=cache_dir, spaces=spaces)
            except LiftError:
                continue
    return None


def _grid_launch(placed: Node, first: dict[str, dict[str, Any]], device: Any, spaces: Spaces) -> Choices | None:
    """On a CPU device, the default points' `first` choices (register blocks) with the blocks
    launched as a 2-D grid in groups one column block wide (`lift.constraints.prefer.complete` with
    `grid`; the tuner's first seed): PoCL's own work-group for matmul 1024^3 is 64 x 64 blocks,
    whose work-items sweep every column panel of B per row block (block kernel 31.4-35.3 ms on
    Zen 1; groups of 1 x 64: 28.5-29.7 ms, interleaved). None on other devices, or when the space
    offers no such choice. The space is kept in `spaces`."""
    from lift.constraints.prefer import complete

    profile = profile_of(device)
    if profile.kind != "cpu":
        return None
    try:
        space = joint_space_of(rewritten(placed, Choices(points=first), spaces, warn=False), profile,
                               Choices(points=first, sizes={}), spaces)
    except LiftError:
        return None
    joint = complete(space, {}, grid=True)
    if joint is None or not any(is_launch(k) for k in joint):
        return None
    return Choices(points=first, **joint_fields(joint, space.context.maps), sizes={})


def _map_width(chosen: dict[str, Any], widths: tuple[int, ...], elem_bytes: int, device: Any) -> dict[str, Any]:
    """A default `vectorise` point's choice on `device`: on a CPU the widest offered width whose
    vectors of `elem_bytes`-byte scalars fit a cache line (float16: a line per work-item; on the
    2-core Zen 1 here a padded stencil over 2^24 floats ran 15.6 GB/s at 16 lanes, 9.9 at 8, 5.9
    as written), skipped on a GPU (consecutive work-items already read consecutive elements)."""
    dev = profile_of(device)
    if dev.kind != "cpu":
        return {"skip": True}
    fit = [w for w in widths if w * elem_bytes <= max(dev.cache_line_bytes or 64, 16)]
    return {**chosen, "width": max(fit)} if fit else {"skip": True}


def _elem_bytes(point: Any) -> int:
    """The size of a scalar the `vectorise` point's map computes (4 where it is not a scalar)."""
    from lift.typecheck import type_of
    from lift.types import ArrayType, ScalarType

    t = type_of(point.f.body) if hasattr(point.f, "body") else None
    return t.elem.dtype.itemsize if isinstance(t, ArrayType) and isinstance(t.elem, ScalarType) else 4


def _with_default_points(expr: Node, choices: Choices) -> Node:
    """`expr` with its default automatic points when `choices` (a `Program.choices` of a default
    compilation, or of one specialised to `choices.sizes`: `lift.specialise`) name them, so that
    `compile(expr, choices=prog.choices)` rebuilds `prog`."""
    from lift.constraints import substitute_sizes
    from lift.rewrites import is_auto, points
    from lift.rewrites.auto import default_points

    wanted = {lab for lab in choices.points if is_auto(lab)}
    if not wanted or wanted <= set(points(expr)):
        return expr
    placed = default_points(substitute_sizes(expr, dict(choices.sizes or {})))
    if not wanted <= set(points(placed)):  # a GPU default's tiles (lift.rewrites.gpu_tiles)
        from lift.rewrites.gpu_tiles import gpu_points

        placed = gpu_points(substitute_sizes(expr, dict(choices.sizes or {})))
    return placed if wanted <= set(points(placed)) else expr


def _open_choices(expr: Node, wanted: Choices, profile: Any, spaces: Spaces | None) -> tuple[Node, Choices, dict]:
    """The points applied with what the user left open chosen (`lift.rewrites.choose`): structural
    parameters from their domains, tile sizes by the tuning model; `wanted` without the tuning values
    so decided (they are substituted), and those values, for `Program.choices`."""
    from lift.rewrites.choose import choose_open_tuning, complete_points

    wanted = complete_points(expr, wanted)
    pointed = rewritten(expr, wanted, spaces)
    if pointed is expr:
        return pointed, wanted, {}
    pointed, chosen = choose_open_tuning(expr, pointed, dict(wanted.tuning), profile)
    rest = {k: v for k, v in wanted.tuning.items() if k not in chosen}
    return pointed, wanted.replace(tuning=rest), chosen


def _check_args(expr: Any, choices: Any, local_size: Any, global_size: Any) -> None:
    """`LiftTypeError` for arguments of the wrong Python type (before any work)."""
    if not isinstance(expr, Node):
        raise LiftTypeError(f"compile needs a program made with lift.fun, got {expr!r}", got=expr)
    if choices is not None and not isinstance(choices, Mapping | Choices):
        raise LiftTypeError(f"choices must be a dict (or lift.Choices), got {choices!r}", got=choices)
    for what, s in (("local_size", local_size), ("global_size", global_size)):
        for one in (s.values() if isinstance(s, Mapping) else (s,)):
            dims = (one,) if isinstance(one, int) else one
            if dims is not None and not (isinstance(dims, tuple | list) and 1 <= len(dims) <= 3 and all(
                    isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims)):
                raise LiftTypeError(f"{what} must be an int >= 1, a tuple of 1 to 3 of them, or a dict of "
                                    f"them per kernel name, got {s!r}", got=s)


def apply_points(expr: Node, points: Mapping[str, Mapping[str, Any]], *, warn: bool = True) -> Node:
    """Stage "points applied": every rewrite point of `expr` applied with its structural choice."""
    from lift.ir.paths import walk
    from lift.rewrites import apply_all
    from lift.rewrites.point import RewritePoint

    if any(isinstance(n, RewritePoint) for _, n in walk(expr)):
        return apply_all(expr, {k: dict(v) for k, v in points.items()}, warn=warn)
    return expr


def device_widths(expr: Node, choices: Choices, device: Any) -> Choices:
    """`choices` with the device's vector width for each `vectorise` point given none (skipped
    when the device prefers scalars or a width the point does not offer; 8, not 16, for user
    functions that PoCL 3.0 cannot run 16 wide)."""
    from lift.ir.nodes import UserFun
    from lift.ir.paths import walk
    from lift.rewrites import VectorisePoint, points
    from lift.rewrites.chunks import safe_widths

    if not any(isinstance(n, VectorisePoint) for _, n in walk(expr)):
        return choices
    out = {k: dict(v) for k, v in choices.points.items()}
    for label, p in points(expr).items():
        if isinstance(p, VectorisePoint) and p.width is None and "width" not in out.get(label, {}):
            w = device.preferred_vector_width
            if w == 16 and 16 not in safe_widths([n for _, n in walk(p) if isinstance(n, UserFun)]):
                w = 8
            width = {"width": w} if w in p.structural()["width"] else {"skip": True}
            out[label] = {**width, **out.get(label, {})}
    return choices.replace(points=out)


def rewritten(expr: Node, choices: Choices, spaces: Spaces | None = None, *, warn: bool = True) -> Node:
    """`apply_points` with `choices.points`, kept in `spaces` (one program's) when given."""
    return _kept(spaces, ("points", _points_key(choices)), lambda: apply_points(expr, choices.points, warn=warn))


def generate_first(pointed: Node, profile: Any, choices: Choices, local_size: SizeArg, global_size: SizeArg,
                   spaces: Spaces | None) -> tuple[KernelSource, Mapped]:
    """Stages "mapped" and "generated". With the solver's mapping (no mapping in `choices`), a
    mapping the barrier pass cannot synchronise teaches the model a named constraint
    (`lift.constraints.learn`: "no barrier placement") and the solver chooses again, at most
    `LEARN_ROUNDS` times; there is no fallback to another lowering."""
    for _ in range(LEARN_ROUNDS):
        mapped = map_program(pointed, profile, choices, spaces)
        try:
            return link(mapped, local_size, global_size), mapped
        except NotSynchronisableError as err:
            if not _learnt(err, pointed, profile, choices, mapped, spaces):
                raise
    mapped = map_program(pointed, profile, choices, spaces)
    return link(mapped, local_size, global_size), mapped


LEARN_ROUNDS = 8


def _learnt(err: NotSynchronisableError, pointed: Node, profile: Any, choices: Choices, mapped: Mapped,
            spaces: Spaces | None) -> bool:
    """Whether `err` taught the solver's spaces a constraint (only for the solver's own mapping)."""
    if choices.mapping is not None or not is_high_level(pointed) or not mapped.choices.mapping:
        return False
    if any(k in mapped.choices.mapping for k in choices.tuning):  # a map code given by label: explicit
        return False
    from lift.constraints import mapping_space
    from lift.constraints.learn import learn

    joint = joint_space_of(pointed, profile, choices, spaces)
    solver = mapping_space(pointed, profile)  # the space `choose_mapping` solves
    return learn(err, mapped.program, [joint, solver], dict(mapped.choices.mapping)) is not None


def link(mapped: Mapped, local_size: SizeArg = None, global_size: SizeArg = None, *,
         wide: bool = False) -> KernelSource:
    """Stage "linked": each kernel through the kernel stages, then the host plan (buffers,
    launches in order, sizes). Explicit sizes override the choices' launch sizes. `wide`: 64-bit
    indices wherever the symbolic sizes could need them (the plan a `Program` switches to when a
    call's sizes pass its 32-bit limits)."""
    from lift.codegen import generate  # lazily: the runtime imports without the code generator
    from lift.codegen.stages import allocated, assembled, emitted, probed, synchronised

    return generate(mapped.program, stages=(allocated, probed, synchronised, emitted, assembled),
                    local_size=local_size if local_size is not None else mapped.local_size,
                    global_size=global_size if global_size is not None else mapped.global_size, wide=wide)


def map_program(expr: Node, profile: Any, choices: Choices, spaces: Spaces | None = None) -> Mapped:
    """Stage "mapped": maps and reductions given OpenCL forms by `choices` (mapping, tuning values,
    vectorisation, launch sizes; specialised to `choices.sizes` when given)."""
    if choices.sizes is None and not is_high_level(expr):
        return Mapped(expr, choices)
    if choices.mapping is not None and not choices.mapping and is_high_level(expr):
        return Mapped(lower(expr), choices)  # the empty mapping: the default lowering
    from lift.constraints import choose_mapping, substitute_sizes

    space = joint_space_of(expr, profile, choices, spaces)
    maps = space.context.maps
    given = {**(choices.mapping or {}), **choices.tuning}
    _check_mapping(choices.mapping, maps, expr)
    _check_launch(choices, space, expr)
    mapping = {k: v for k, v in given.items() if k in maps}
    missing = sorted(set(maps) - set(mapping)) if mapping else []
    if missing:
        raise LiftValueError(f"the mapping gives no code for the maps {', '.join(missing)}", node=expr,
                             hint="give a Table 5.2 code for every map, or none for the solver's mapping")
    if space.mapping is not None:  # a lowered program: the mapping as written (lift.constraints.joint_space)
        _check_written(mapping, space.mapping, expr)
        mapping = dict(space.mapping)
    if not mapping and choices.mapping is None and maps:
        mapping = choose_mapping(expr, profile)
    used = choices.replace(mapping=mapping if maps or choices.mapping is not None else None,
                           tuning={k: v for k, v in given.items() if k not in maps})
    joint = {**(mapping if space.mapping is None else {}), **used.tuning, **used.launch}
    low = space.realise(joint, vectorise=dict(used.vectorise) or None)
    low = substitute_sizes(low, dict(used.sizes or {}))
    nd = space.ndrange(joint) if used.launch else None
    if nd is not None and space.launch_kernel is not None:  # one kernel of several: sized by name
        nd = ({space.launch_kernel: nd[0]}, {space.launch_kernel: nd[1]})
    return Mapped(low, used, *(nd or (None, None)))


def _check_mapping(mapping: Mapping[str, int] | None, maps: Mapping[str, Any], expr: Node) -> None:
    """`LiftValueError` naming the labels of an explicit mapping that are not maps of `expr`."""
    unknown = sorted(set(mapping or {}) - set(maps))
    if unknown:
        raise LiftValueError(f"the mapping names {', '.join(unknown)}, which are not maps of the program; "
                             f"its maps are {', '.join(sorted(maps)) or 'none'}", node=expr)


def _check_written(mapping: Mapping[str, int], written: Mapping[str, int], expr: Node) -> None:
    """`LiftValueError` for codes that differ from those of a lowered program's maps as written."""
    other = sorted(k for k, v in mapping.items() if written.get(k) != v)
    if other:
        raise LiftValueError(f"the maps {', '.join(other)} are written as OpenCL maps; the mapping cannot change "
                             "them", node=expr, hint="give no mapping for a lowered program, or its codes as written")


def _check_launch(choices: Choices, space: Any, expr: Node) -> None:
    """`LiftValueError` for launch variables the space does not have (no sizes, or a program of
    several kernels whose deepest is no ocl_kernel of its own) or gives only in part."""
    if not choices.launch:
        return
    have = sorted(k for k in space.variables if is_launch(k))
    unknown = sorted(set(choices.launch) - set(have))
    if unknown:
        why = ("the program has no sizes (give Choices(sizes=...))" if not choices.sizes
               else "of its several kernels, none is an ocl_kernel of its own that launch variables can size")
        raise LiftValueError(f"the launch choices {', '.join(unknown)} are not variables of this program's space: "
                             f"{why}", node=expr, hint="pass local_size= / global_size= to lift.compile, "
                             "one size or a dict of sizes per kernel name")
    missing = sorted(set(have) - set(choices.launch))
    if missing:
        raise LiftValueError(f"the launch choices give no value for {', '.join(missing)}", node=expr,
                             hint=f"give all of {', '.join(have)} (global size = local_size_d x groups_d)")


def joint_space_of(pointed: Node, profile: Any, choices: Choices, spaces: Spaces | None = None) -> Any:
    """The joint mapping/tuning space (with launch variables when `choices.sizes` are known) of the
    program `pointed` that `choices.points` made; kept in `spaces` (one program's) when given."""
    from lift.constraints import joint_space

    key = ("space", _points_key(choices), profile.key, repr(sorted((choices.sizes or {}).items())))
    return _kept(spaces, key, lambda: joint_space(pointed, profile, sizes=choices.sizes))


def _points_key(choices: Choices) -> str:
    return Choices(points=choices.points).key()


def _kept(spaces: Spaces | None, key: Any, make: Any) -> Any:
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
    return got


def profile_of(device: Any) -> Any:
    """The `lift.devices.Device` whose limits constrain a compilation for `device`."""
    from lift import devices

    if isinstance(device, devices.Device):
        return device
    try:
        return devices.current(device)
    except LiftError:
        return devices.profile("pocl-cpu")
