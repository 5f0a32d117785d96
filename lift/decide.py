"""The policy: what `lift.compile` compiles, decided apart from the pipeline (`lift.compile.plan`).

    for decision in decide(expr, device, choices, plain=True, tuned=tuned_lookup()):
        ...  # lift.compile plans the first decision that plans, and builds it

`decide` gives the alternatives for one compilation, most preferred first, each a `Decision`:
the program to plan (its points placed) and the `Choices` to plan it with. A plain compile
(no choices, launch sizes, options or spaces) prefers, in order:

1. the tuning database's winner (through the one hook `lift.explore` registers:
   `register_tuned`; off with `tuned=None`, or when the environment sets `LIFTCL_USE_TUNED=0`);
   a stale winner is reported (`Tuned.stale`) and the rest below is compiled;
2. on a GPU, local-memory tiles and trees (`lift.rewrites.gpu_tiles.gpu_default`);
3. the default register blocks of nested map-reduces with constant sizes
   (`lift.rewrites.auto.default_points`), launched as a 2-D grid on a CPU (`grid_launch`), then
   with their first choices (`default_blocks`);
4. the program as written: a full reduction's default chunks (`lift.rewrites.defaults`), the
   automatic points `choices` name (`compile(expr, choices=prog.choices)` rebuilds `prog`), the
   device's vector widths (`device_widths`), a `lift.specialise.Specialiser` for symbolic sizes.

Every alternative but the last may fail to plan (a `LiftError`): the next one is planned. The
last is what `lift.compile` has always given: its error is the user's. Which alternative wins
is decided by planning it, never by a recursive `compile`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Protocol, TypeVar

from lift.choices import Choices, as_choices, is_launch, joint_fields
from lift.constraints import mapping_space
from lift.constraints.learn import Lesson, learn, taught
from lift.constraints.prefer import complete
from lift.constraints.space import best_mapping
from lift.devices import Device
from lift.devices.facts import narrow_target
from lift.errors import LiftError, NotSynchronisableError, RewritePointSkipped
from lift.ir.nodes import Node, UserFun
from lift.ir.paths import walk
from lift.lower import is_high_level
from lift.realise import Lowered, substitute_sizes
from lift.rewrites import VectorisePoint, is_auto, points
from lift.rewrites.auto import auto_space, default_points
from lift.rewrites.auto_colfold import ColFold, default_parts
from lift.rewrites.block_space import Registers, reduced_group
from lift.rewrites.choose import choose_open_tuning, complete_points
from lift.rewrites.chunks import ReduceChunks, safe_widths
from lift.rewrites.defaults import default_reduction, with_auto_points
from lift.rewrites.gpu_tiles import gpu_default, gpu_points
from lift.spaces import Spaces, fused_of, joint_space_of, points_applied, profile_of
from lift.typecheck import type_of
from lift.types import ArrayType, ScalarType
from lift.userfun.ctypes import calls_builtin


@dataclass(frozen=True)
class Tuned:
    """A tuning-database winner for one program, as the registered lookup finds it."""

    choices: Choices
    program: Node  # the program the choices are for: the automatic points placed as the tune placed them
    default: bool  # the winner is compile's own default of the program as written
    origin: str  # where the choices came from (`TunedChoices.origin`)
    stale: Callable[[BaseException], None]  # reports a winner that no longer builds
    transferred: bool = False  # a winner tuned at other sizes, valid at these (lift.explore.transfer)


class Lookup(Protocol):
    """The tuning database's lookup: the winner for `expr` on `device` at `sizes`, or None."""

    def __call__(self, expr: Node, device: Any, sizes: Mapping[str, int] | None = None) -> Tuned | None: ...


_TUNED: list[Lookup] = []  # the lookup `lift.explore` registers (one)


def register_tuned(lookup: Lookup) -> None:
    """Make `lookup` the tuning database `decide` asks (`lift.explore.reuse` registers its own)."""
    _TUNED[:] = [lookup]


def tuned_lookup(use: bool = True) -> Lookup | None:
    """The registered lookup, or None: `use` False, none registered, or `LIFTCL_USE_TUNED=0`."""
    if not use or not _TUNED or os.environ.get("LIFTCL_USE_TUNED", "1") == "0":
        return None
    return _TUNED[0]


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


@dataclass(frozen=True)
class Decision:
    """One alternative of a compilation: plan `program` with `choices`."""

    program: Node  # what `plan` starts from: the program with the decided points placed
    choices: Choices  # what `plan` is given
    node: Node  # the program a call's sizes are checked against (when `choices.sizes` is None)
    spaces: Spaces | None = None  # the rewritten forms and spaces `plan` keeps
    origin: str = ""  # "": compile's own policy; else where the choices came from (the tuning database)
    fallible: bool = False  # a LiftError while planning it moves on to the next alternative
    stale: Callable[[BaseException], None] | None = None  # a tuned winner: any error is reported here
    quiet: bool = False  # `RewritePointSkipped` ignored (points the user did not write)
    specialise: bool = False  # the program specialises to its calls' sizes (`lift.specialise`)
    sizes: Mapping[str, int] | None = None  # a specialisation: `Program.choices` record these sizes


def decide(expr: Node, device: Any, choices: Choices | Mapping[str, Any] | None = None, *, plain: bool,
           spaces: Spaces | None = None, tuned: Lookup | None = None,
           specialise: bool = True) -> Iterator[Decision]:
    """The alternatives for compiling the normalised `expr`, most preferred first (see the module).
    `plain`: no choices, launch sizes, options or spaces were given; `tuned`: the tuning
    database's lookup (None: not asked); `specialise`: a plain compile of a program with
    symbolic sizes specialises to its calls' sizes."""
    profile = profile_of(device)
    if plain:
        found = tuned(expr, device) if tuned is not None else None
        if found is not None:
            yield from tuned_decisions(expr, device, found, specialise=specialise)
        if profile.kind == "gpu":  # local-memory tiles and trees (lift.rewrites.gpu_tiles)
            tiled = gpu_default(expr, profile)
            if tiled is not None:
                yield replace(as_given(tiled[0], device, as_choices(tiled[1])), fallible=True)
    default = default_reduction(expr, profile.kind) if choices is None and spaces is None else None
    if default is None and plain:
        yield from default_blocks(expr, device)
    if default is not None:  # a full reduction: parallel chunks, atomic combine (lift/rewrites/defaults.py)
        yield replace(as_given(default[0], device, default[1], spaces, placed=True), node=expr,
                      specialise=specialise and plain)
    else:
        yield replace(as_given(expr, device, as_choices(choices), spaces), specialise=specialise and plain)


def as_given(expr: Node, device: Any, choices: Choices, spaces: Spaces | None = None, *,
             placed: bool = False) -> Decision:
    """`expr` compiled with `choices` as given: the automatic points they name placed (unless
    `placed`), the device's vector widths for `vectorise` points they leave open."""
    search = expr if placed else _with_default_points(expr, choices)
    search = with_auto_points(expr, choices) if search is expr and not placed else search
    return Decision(search, device_widths(search, choices, profile_of(device)), node=expr, spaces=spaces)


def tuned_decisions(expr: Node, device: Any, found: Tuned, *, specialise: bool = True) -> Iterator[Decision]:
    """The alternatives of a tuning-database winner: its choices on the program it was tuned as,
    or (a default winner) compile's own default of `expr`, the database not asked again."""
    if found.default:
        for d in decide(expr, device, None, plain=True, specialise=specialise):
            yield replace(d, origin=found.origin, stale=found.stale)
        return
    d = as_given(found.program, device, found.choices, {})
    yield replace(d, origin=found.origin, stale=found.stale, quiet=True)


def default_blocks(expr: Node, device: Any) -> Iterator[Decision]:
    """`expr` with the automatic points `lift.compile` applies by default (`lift.rewrites.auto.
    default_points`: register blocks of nested map-reduces with constant sizes) and their first
    valid choices (blocks filling the vector registers of `device`: `block_space.Registers.of`):
    launched as a grid (`grid_launch`), then as the runtime launches them; nothing when none is
    placed or every one is skipped (the program as written lacks nothing)."""
    placed = default_points(expr)
    if placed is expr:
        return
    regs = Registers.of(profile_of(device))
    space = auto_space(placed, regs=regs)  # blocks for the device's registers
    first = {lab: {k: v[0] for k, v in doms.items() if k != "skip"} for lab, doms in space.items()}
    for lab, p in points(placed).items():
        if isinstance(p, VectorisePoint) and lab in first:
            first[lab] = _map_width(first[lab], space[lab]["width"], _elem_bytes(p), device, _calls_builtins(p))
        elif isinstance(p, ReduceChunks) and regs.lanes in space.get(lab, {}).get("width", ()):
            # a row's chunks fill the device's vectors, as the blocks do (16 lanes on AVX-512; the
            # offered widths leave out 16 where a user function cannot run 16 wide: `safe_widths`).
            # GEMV 2048^2 on a Xeon (family 6 model 207, PoCL 3.0 target icelake-client), kernel
            # medians of 7 interleaved rounds: 8 lanes x 16 per step 0.477 ms, 16 x 16 0.295 ms;
            # numpy 0.301 ms
            first[lab] = {**first[lab], "width": regs.lanes}
        elif isinstance(p, ColFold) and lab in first:
            # one accumulator of a whole row per work-item, kept in cache: a CPU's few cores
            # (rewrites/auto_colfold.py); elsewhere the two passes as written
            first[lab] = _fold_choice(first[lab], space[lab], regs.lanes, profile_of(device))
    if all(c.get("skip") for c in first.values()):
        return
    kept: Spaces = {}  # the grid launch's rewriting and joint space, reused by its plan
    if any("along" in doms for doms in space.values()):  # a block_nest point: a 2-D grid of blocks
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RewritePointSkipped)  # a point the user did not write
            grid = grid_launch(placed, first, device, kept)
        if grid is not None:
            yield replace(as_given(placed, device, grid, kept), fallible=True, quiet=True)
    yield replace(as_given(placed, device, as_choices(first), kept), fallible=True, quiet=True)


def grid_launch(placed: Node, first: dict[str, dict[str, Any]], device: Any, spaces: Spaces) -> Choices | None:
    """On a CPU device, the default points' `first` choices (register blocks) with the blocks
    launched as a 2-D grid in groups one column block wide (`lift.constraints.prefer.complete` with
    `grid`; the tuner's first seed): PoCL's own work-group for matmul 1024^3 is 64 x 64 blocks,
    whose work-items sweep every column panel of B per row block (block kernel 31.4-35.3 ms on
    Zen 1; groups of 1 x 64: 28.5-29.7 ms, interleaved). None on other devices, or when the space
    offers no such choice. The space is kept in `spaces`."""
    profile = profile_of(device)
    if profile.kind != "cpu":
        return None
    try:
        applied = points_applied(placed, Choices(points=first), spaces, warn=False)
        space = joint_space_of(fused_of(applied, Choices(points=first), spaces), profile,
                               Choices(points=first, sizes={}), spaces)
    except LiftError:
        return None
    # blocks of the reduced form share both operands' rows in square-ish groups (reduced_group)
    tile = next((reduced_group(c["rows"], c["cols"]) for c in first.values() if c.get("along") == "reduced"), None)
    joint = complete(space, {}, grid=tile or True)
    if joint is None or not any(is_launch(k) for k in joint):
        return None
    return Choices(points=first, **joint_fields(joint, space.context.maps), sizes={})


def _map_width(chosen: dict[str, Any], widths: tuple[int, ...], elem_bytes: int, device: Any,
               builtins: bool = False) -> dict[str, Any]:
    """A default `vectorise` point's choice on `device`: on a CPU the widest offered width whose
    vectors of `elem_bytes`-byte scalars fit a cache line (float16: a line per work-item; on the
    2-core Zen 1 here a padded stencil over 2^24 floats ran 15.6 GB/s at 16 lanes, 9.9 at 8, 5.9
    as written), skipped on a GPU (consecutive work-items already read consecutive elements).
    A function that calls OpenCL builtins (`builtins`) gets at most 8 lanes where PoCL compiles
    for a CPU without AVX-512 (`lift.devices.facts.narrow_target`)."""
    dev = profile_of(device)
    if dev.kind != "cpu":
        return {"skip": True}
    fit = [w for w in widths if w * elem_bytes <= max(dev.cache_line_bytes or 64, 16)]
    if builtins and narrow_target(dev.version):
        fit = [w for w in fit if w <= 8]
    return {**chosen, "width": max(fit)} if fit else {"skip": True}


def _fold_choice(chosen: dict[str, Any], offered: Mapping[str, tuple[Any, ...]], lanes: int,
                 device: Device) -> dict[str, Any]:
    """A default `col_fold` point's choice on `device`: on a CPU the device's vector lanes where
    offered and parts for its compute units (`auto_colfold.default_parts`); skipped on other
    devices, and where the rows split in no more than one part."""
    parts = default_parts(offered.get("parts", ()), device.compute_units or 1)
    if device.kind != "cpu" or parts is None:
        return {"skip": True}
    return {**chosen, "parts": parts, **({"width": lanes} if lanes in offered.get("width", ()) else {})}


def _calls_builtins(point: VectorisePoint) -> bool:
    """Whether a user function the `vectorise` point's map applies calls an OpenCL builtin."""
    return any(isinstance(u, UserFun) and calls_builtin(u.c_source) for _, u in walk(point.f))


def _elem_bytes(point: VectorisePoint) -> int:
    """The size of a scalar the `vectorise` point's map computes (4 where it is not a scalar)."""
    t = type_of(point.f.body) if hasattr(point.f, "body") else None
    return t.elem.dtype.itemsize if isinstance(t, ArrayType) and isinstance(t.elem, ScalarType) else 4


def _with_default_points(expr: Node, choices: Choices) -> Node:
    """`expr` with its default automatic points when `choices` (a `Program.choices` of a default
    compilation, or of one specialised to `choices.sizes`: `lift.specialise`) name them, so that
    `compile(expr, choices=prog.choices)` rebuilds `prog`."""
    wanted = {lab for lab in choices.points if is_auto(lab)}
    if not wanted or wanted <= set(points(expr)):
        return expr
    placed = default_points(substitute_sizes(expr, dict(choices.sizes or {})))
    if not wanted <= set(points(placed)):  # a GPU default's tiles (lift.rewrites.gpu_tiles)
        placed = gpu_points(substitute_sizes(expr, dict(choices.sizes or {})))
    return placed if wanted <= set(points(placed)) else expr


def device_widths(expr: Node, choices: Choices, device: Device) -> Choices:
    """`choices` with the device's vector width for each `vectorise` point given none (skipped
    when the device prefers scalars or a width the point does not offer; 8, not 16, for user
    functions that PoCL 3.0 cannot run 16 wide)."""
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


# ------------------------------------------------------------ what a plan leaves open


@dataclass(frozen=True)
class Completed:
    """A program's choices with what they left open decided, but for the mapping (`completed`)."""

    program: Node  # the program with its points applied and the open tuning values substituted
    choices: Choices  # the points' structural parameters completed; the tuning values not substituted
    chosen: Mapping[str, int]  # the tuning values substituted into `program` (recorded in Program.choices)
    spaces: Spaces  # where `program`'s rewritten forms and spaces are kept while it is planned


def completed(expr: Node, profile: Device, choices: Choices, spaces: Spaces | None = None, *,
              choose_open: bool = True) -> Completed:
    """The structural parameters `choices` leave open completed from their domains (`complete_points`),
    the points applied (stage "points applied", kept in `spaces`) and, with `choose_open`, the open
    tuning values chosen by the tuning model and substituted (`choose_open_tuning`). The forms and
    spaces of the program are kept in `spaces`, or (a program whose tuning values were substituted,
    or no `spaces`) in a dict of this plan's own."""
    wanted = complete_points(expr, choices)
    applied = points_applied(expr, wanted, spaces)  # stage "points applied"
    chosen: dict[str, int] = {}
    if choose_open and applied is not expr:
        applied, chosen = choose_open_tuning(expr, applied, dict(wanted.tuning), profile)
        wanted = wanted.replace(tuning={k: v for k, v in wanted.tuning.items() if k not in chosen})
    return Completed(applied, wanted, chosen, {} if chosen or spaces is None else spaces)


def solver_mapped(applied: Node, profile: Device, choices: Choices, spaces: Spaces,
                  lessons: tuple[Lesson, ...] = ()) -> Choices:
    """`choices` with the solver's mapping (`lift.constraints.space.best_mapping`, respecting the
    constraints `lessons` state) for a high-level program whose maps they give no code (neither a
    mapping nor codes by label among the tuning values); else `choices` as they are."""
    if choices.mapping is not None or not is_high_level(applied):
        return choices
    fused = fused_of(applied, choices, spaces)  # stages "recomputed" and "fused"
    solver = taught(mapping_space(fused, profile, rewritten=True), lessons)
    maps = solver.context.maps
    if not maps or any(k in maps for k in choices.tuning):
        return choices
    return choices.replace(mapping=best_mapping(solver))


@dataclass(frozen=True)
class Unsynchronised:
    """A mapping the barrier pass could not synchronise: its error, the mapped program, each map
    object the lowering made with its label, and the mapping."""

    error: NotSynchronisableError
    program: Node
    lowered: Lowered
    mapping: Mapping[str, int]


T = TypeVar("T")
Attempt = Callable[[Choices, tuple[Lesson, ...]], T | Unsynchronised]
LEARN_ROUNDS = 8


def learnt(applied: Node, profile: Device, choices: Choices, spaces: Spaces, attempt: Attempt[T]) -> T:
    """`attempt(complete, lessons)` (lift.compile: stages "mapped" and "linked") with the solver's
    mapping (`solver_mapped`) where `choices` give none. A mapping the barrier pass cannot
    synchronise teaches a named constraint (`lesson_of`: "no barrier placement") and the solver
    chooses again, at most `LEARN_ROUNDS` times; there is no fallback to another lowering. The
    lessons are this call's values (`lift.constraints.learn.Lesson`), added to the spaces it
    builds; no space outlives them."""
    lessons: tuple[Lesson, ...] = ()
    for _ in range(LEARN_ROUNDS):
        got = attempt(solver_mapped(applied, profile, choices, spaces, lessons), lessons)
        if not isinstance(got, Unsynchronised):
            return got
        lesson = lesson_of(got, applied, profile, choices, spaces)
        if lesson is None:
            raise got.error
        lessons = (*lessons, lesson)
    got = attempt(solver_mapped(applied, profile, choices, spaces, lessons), lessons)
    if isinstance(got, Unsynchronised):
        raise got.error
    return got


def lesson_of(failed: Unsynchronised, applied: Node, profile: Device, choices: Choices,
              spaces: Spaces) -> Lesson | None:
    """The lesson `failed` teaches the solver's spaces (only for the solver's own mapping), or None."""
    if choices.mapping is not None or not is_high_level(applied) or not failed.mapping:
        return None
    if any(k in failed.mapping for k in choices.tuning):  # a map code given by label: explicit
        return None
    lesson = learn(failed.error, failed.program, failed.lowered, dict(failed.mapping))
    if lesson is None:
        return None
    fused = fused_of(applied, choices, spaces)
    joint = joint_space_of(fused, profile, choices, spaces)
    solver = mapping_space(fused, profile, rewritten=True)  # the space `solver_mapped` solves
    return lesson if any(lesson.constraint(s) is not None for s in (joint, solver)) else None


__all__ = ["decide", "Decision", "Tuned", "Lookup", "TunedChoices", "register_tuned", "tuned_lookup",
           "as_given", "tuned_decisions", "default_blocks", "grid_launch", "device_widths", "Completed", "completed",
           "solver_mapped", "Unsynchronised", "learnt", "lesson_of", "LEARN_ROUNDS"]
