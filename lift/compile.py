"""The compilation pipeline, the one module that imports every stage.

    typed      = typecheck(expr)                           the types (kept by the type checker)
    normal     = normalise(expr)                           one canonical spelling (lift.rules.normalise)
    decisions  = decide(normal, device, choices, ...)      the policy: what to plan (lift.decide)
    planned    = plan(program, device, choices):           the first decision that plans:
      done     = completed(program, profile, choices)        lift.decide: what the choices leave open
        wanted = complete_points(program, choices)           open structural parameters completed
        applied = points_applied(program, wanted)            stage "points applied" (apply_all)
        applied = choose_open_tuning(...)                    open tuning values chosen and substituted
      learnt(applied, ..., attempt):                         lift.decide: in order, again with each lesson:
        complete = solver_mapped(applied, ..., lessons)      the solver's mapping (best_mapping of
                                                             taught(mapping_space(fused, ...), lessons))
        mapped_and_linked(applied, complete, ...):           the pipeline on complete choices:
          mapped = map_program(applied, profile, complete)   mapping, tuning values, vectorisation, launch:
                   fused = fused_of(applied, ...)            stages "recomputed" and "fused"
                                                             (lift.rules.prepare: recompute_layouts,
                                                             fuse_epilogues, fuse_reduce_maps)
                   joint_space_of(fused, ...)                the z3 model of `fused` (constraints/:
                                                             analyse, mapping, tuning, launch; no IR built)
                   low = realised(space, choice)             stage "realised" (lift/realise.py): the
                                                             launch kernel named (named_kernel), maps
                                                             lowered (realise_traced), kernel boundaries
                                                             (apply_boundary), tuning values substituted
                   substitute_sizes(low, choices.sizes)
          linked = link(mapped)                              per kernel (KERNEL_STAGES): allocated ->
                                                             probed -> synchronised -> emitted ->
                                                             assembled; then the host plan (KernelSource)
        lesson = lesson_of(Unsynchronised(err, ...))         a NotSynchronisableError of the solver's
                                                             mapping (constraints.learn.learn): a
                                                             `Lesson` kept by the call
    program    = built(planned, device, ...)               the `Program`, built for the device

`choices` is a `lift.Choices` (a plain dict is converted once, at the edge). A high-level program
without a mapping gets the z3 model's (`lift.constraints.choose_mapping`); when the barrier pass
cannot synchronise that mapping, the call learns a named constraint (a `Lesson` it keeps and
passes back in: no space or cache outlives a compile) and the solver chooses again
(`lift.decide.learnt`): the pipeline itself (`mapped_and_linked`) runs on complete choices.
There is no fallback to the default lowering (`MappingFallback` is never warned).
`Program.choices` is the `Choices` actually used, so
`compile(expr, choices=prog.choices)` rebuilds the same program. The tuner
(`lift.explore.evaluate.Evaluator`) proposes `Choices` and runs the same `plan`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from lift.choices import Choices, is_launch
from lift.codegen import generate
from lift.codegen.stages import allocated, assembled, emitted, probed, synchronised
from lift.constraints.learn import Lesson
from lift.constraints.model import Z3_LOCK
from lift.decide import (
    LEARN_ROUNDS,
    Decision,
    Lookup,
    TunedChoices,
    Unsynchronised,
    completed,
    decide,
    learnt,
    tuned_lookup,
)
from lift.errors import (
    LiftError,
    LiftTypeError,
    LiftValueError,
    NotSynchronisableError,
    RewritePointSkipped,
    nesting_guard,
)
from lift.ir.nodes import Lambda, Node
from lift.lower import is_high_level, lower
from lift.plan import KernelSource
from lift.program import Program
from lift.realise import realised, substitute_sizes
from lift.rules.normalise import normalise
from lift.runtime import CacheDir
from lift.spaces import Spaces, apply_points, fused_of, joint_space_of, points_applied, profile_of
from lift.specialise import Specialiser, symbolic_sizes
from lift.typecheck import typecheck
from lift.userfun.frozen import warn_changed

OneSize = int | tuple[int, ...] | None
SizeArg = OneSize | dict[str, OneSize]  # one size, or one per kernel name


def serialised(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` run under `lift.constraints.model.Z3_LOCK` (z3 is not thread-safe): calls from
    several threads run one at a time, and a call inside another (a compile in a tune) goes on."""
    @functools.wraps(fn)
    @nesting_guard(fn.__name__)  # a thousand nested maps: a NestingError, never a RecursionError
    def run(*args: Any, **kw: Any) -> Any:
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
    lowered: tuple[tuple[Node, str], ...] = field(default=(), compare=False, repr=False)  # each map object
    # the mapping lowered, with its map's label (`lift.constraints.learn` names a barrier error's loops by it)
    lessons: tuple[Lesson, ...] = field(default=(), compare=False)  # what the solver's mapping respects
    # (learnt from the barrier pass by `mapped_and_linked`, in order)
    tails: bool = False  # for a CPU: one-work-item kernels run by the last work-item of the kernel before
    # (`lift.codegen.tails`)


@dataclass(frozen=True)
class Planned:
    """What `plan` made of a program: its linked source, the choices used (`Program.choices`:
    the tuning values chosen included) and the mapped program the source was generated from."""

    source: KernelSource
    choices: Choices
    mapped: Mapped
    local_size: SizeArg = None
    global_size: SizeArg = None

    def widened(self) -> KernelSource:
        """The same program linked with 64-bit indices (for sizes past `source.index_limits`)."""
        return link(self.mapped, self.local_size, self.global_size, wide=True)


@serialised
def compile(expr: Node, device: Any = None, choices: Choices | Mapping[str, Any] | None = None,
            local_size: SizeArg = None, global_size: SizeArg = None, *, cache_dir: CacheDir = None,
            options: tuple[str, ...] = (), spaces: Spaces | None = None, specialise: bool = True,
            tuned: bool = True) -> Program:
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
    `tuned` (with no choices, launch sizes or options): the tuning database's winner for `expr`
    is used when there is one (`lift.decide`; `LIFTCL_USE_TUNED=0` in the environment: never).
    At a call's sizes the order of preference is: the winner tuned at exactly those sizes, else
    the nearest winner of the same program tuned at other sizes whose choices the constraints
    prove valid at these (`lift.explore.transfer`), else the default policy;
    `Program.choices.origin` says which ("nearest valid winner, tuned at N=4096 ...").
    Thread-safe: compiles from several threads run one at a time (z3 is not thread-safe)."""
    _check_args(expr, choices, local_size, global_size)
    warn_changed(expr)  # a global a user function read has changed since (lift.userfun.frozen)
    if not isinstance(specialise, bool):
        raise LiftTypeError(f"specialise must be True or False, got {specialise!r}", got=specialise)
    typecheck(expr)  # stage "typed"
    normal = normalise(expr)  # stage "normalised": one spelling for every spelling (lift.rules.normalise)
    plain = choices is None and local_size is None and global_size is None and not options and spaces is None
    lookup = tuned_lookup(tuned)
    decisions = decide(normal, device, choices, plain=plain, spaces=spaces, tuned=lookup, specialise=specialise)
    program = first_built(decisions, device, local_size, global_size, cache_dir=cache_dir, options=options,
                          lookup=lookup)
    assert program is not None  # decide's last decision is not fallible: its error is raised
    return program


def first_built(decisions: Iterable[Decision], device: Any, local_size: SizeArg = None, global_size: SizeArg = None,
                *, cache_dir: CacheDir = None, options: tuple[str, ...] = (), lookup: Lookup | None = None
                ) -> Program | None:
    """The `Program` of the first of `decisions` that plans and builds; None when every one is
    fallible and failed (a stale tuned winner is reported through its `stale`)."""
    for d in decisions:
        try:
            with warnings.catch_warnings():
                if d.quiet:
                    warnings.simplefilter("ignore", RewritePointSkipped)  # a point the user did not write
                planned = plan(d.program, device, d.choices, local_size, global_size, spaces=d.spaces)
            special = _specialiser(d.node, device, cache_dir, lookup) if d.specialise else None
            return built(planned, device, node=d.node, origin=d.origin, sizes=d.sizes, cache_dir=cache_dir,
                         options=options, specialiser=special)
        except Exception as err:  # noqa: BLE001 - a stale tuned winner fails in any way: reported, not raised
            if d.fallible and isinstance(err, LiftError):
                continue
            if d.stale is None:
                raise
            d.stale(err)
    return None


def plan(expr: Node, device: Any, choices: Choices, local_size: SizeArg = None, global_size: SizeArg = None, *,
         spaces: Spaces | None = None, choose_open: bool = True) -> Planned:
    """The pipeline after the policy, what `choices` leave open decided by it first: stage "points
    applied" (`lift.decide.completed`: structural parameters completed; with `choose_open`, open
    tuning values chosen and substituted), then stages "mapped" and "linked" (`mapped_and_linked`)
    with complete choices, the solver's mapping included (`lift.decide.learnt`: chosen again with
    each lesson the barrier pass teaches)."""
    profile = profile_of(device)
    done = completed(expr, profile, choices, spaces, choose_open=choose_open)

    def attempt(complete: Choices, lessons: tuple[Lesson, ...]) -> tuple[KernelSource, Mapped] | Unsynchronised:
        return mapped_and_linked(done.program, profile, complete, local_size, global_size, done.spaces, lessons)

    source, used = learnt(done.program, profile, done.choices, done.spaces, attempt)
    final = used.choices.replace(tuning={**used.choices.tuning, **done.chosen}) if done.chosen else used.choices
    return Planned(source, final, used, local_size, global_size)


def built(planned: Planned, device: Any, *, node: Node, origin: str = "", sizes: Mapping[str, int] | None = None,
          cache_dir: CacheDir = None, options: tuple[str, ...] = (), specialiser: Specialiser | None = None
          ) -> Program:
    """The `Program` of `planned` for `device`. `node` is the program a call's sizes are checked
    against, unless the choices fix the sizes (a specialised program checks its own); `origin`:
    where its choices came from (`TunedChoices`); `sizes`: the sizes its choices record (a
    program specialised to them: `lift.specialise`)."""
    choices = planned.choices.replace(sizes=dict(sizes)) if sizes is not None else planned.choices
    choices = TunedChoices.of(choices, origin) if origin else choices
    checks = planned.mapped.program
    wide = planned.widened if planned.source.index_limits else None
    return Program(planned.source, device=device, choices=choices,
                   node=checks if planned.choices.sizes is not None else node, cache_dir=cache_dir,
                   options=options, wide=wide, specialiser=specialiser, checks=checks)


def _specialiser(expr: Node, device: Any, cache_dir: CacheDir, lookup: Lookup | None) -> Specialiser | None:
    """A `lift.specialise.Specialiser` for a program with symbolic sizes, else None."""
    if not isinstance(expr, Lambda) or not symbolic_sizes(expr):
        return None

    def build(decisions: Iterable[Decision]) -> Program | None:
        return first_built(decisions, device, cache_dir=cache_dir, lookup=lookup)

    return Specialiser(expr, device, cache_dir, lookup=lookup, build=build)


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


def mapped_and_linked(applied: Node, profile: Any, choices: Choices, local_size: SizeArg, global_size: SizeArg,
                      spaces: Spaces | None, lessons: tuple[Lesson, ...] = ()
                      ) -> tuple[KernelSource, Mapped] | Unsynchronised:
    """Stages "mapped" and "linked" with complete `choices` (`lessons`: those the solver's mapping
    respects, recorded in `Mapped.lessons`); a mapping the barrier pass cannot synchronise is
    returned as `lift.decide.Unsynchronised`, for the policy to learn from (`lift.decide.learnt`)."""
    mapped = map_program(applied, profile, choices, spaces, lessons=lessons)
    try:
        return link(mapped, local_size, global_size), mapped
    except NotSynchronisableError as err:
        return Unsynchronised(err, mapped.program, mapped.lowered, dict(mapped.choices.mapping or {}))


def link(mapped: Mapped, local_size: SizeArg = None, global_size: SizeArg = None, *,
         wide: bool = False) -> KernelSource:
    """Stage "linked": each kernel through the kernel stages, then the host plan (buffers,
    launches in order, sizes). Explicit sizes override the choices' launch sizes. `wide`: 64-bit
    indices wherever the symbolic sizes could need them (the plan a `Program` switches to when a
    call's sizes pass its 32-bit limits)."""
    return generate(mapped.program, stages=(allocated, probed, synchronised, emitted, assembled),
                    local_size=local_size if local_size is not None else mapped.local_size,
                    global_size=global_size if global_size is not None else mapped.global_size, wide=wide,
                    tails=mapped.tails)


def map_program(expr: Node, profile: Any, choices: Choices, spaces: Spaces | None = None, *,
                lessons: tuple[Lesson, ...] = ()) -> Mapped:
    """Stage "mapped": maps and reductions given OpenCL forms by `choices` (mapping, tuning values,
    vectorisation, launch sizes; specialised to `choices.sizes` when given): complete choices, the
    mapping of a high-level program decided (`lift.decide.solver_mapped`); `lessons` (those the
    solver's mapping respects) are recorded in `Mapped.lessons`."""
    tails = getattr(profile, "kind", None) == "cpu"
    if choices.sizes is None and not is_high_level(expr):
        return Mapped(expr, choices, tails=tails)
    if choices.mapping is not None and not choices.mapping and is_high_level(expr):
        return Mapped(lower(cast(Lambda, expr)), choices, tails=tails)  # the empty mapping: the default lowering
    fused = fused_of(expr, choices, spaces)  # stages "recomputed" and "fused" (lift.rules.prepare)
    space = joint_space_of(fused, profile, choices, spaces)
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
        raise LiftValueError(f"no mapping for the maps {', '.join(sorted(maps))}", node=expr,
                             hint="plan decides the solver's mapping first (lift.decide.solver_mapped)")
    used = choices.replace(mapping=mapping if maps or choices.mapping is not None else None,
                           tuning={k: v for k, v in given.items() if k not in maps})
    joint = {**(mapping if space.mapping is None else {}), **used.tuning, **used.launch}
    low, lowered = realised(space, joint, vectorise=dict(used.vectorise) or None)  # stage "realised"
    low = substitute_sizes(low, dict(used.sizes or {}))
    nd = space.ndrange(joint) if used.launch else None
    sized: tuple[SizeArg, SizeArg] = nd or (None, None)
    if nd is not None and space.launch_kernel is not None:  # one kernel of several: sized by name, its twins too
        sized = ({space.launch_kernel: nd[0]}, {space.launch_kernel: nd[1], **space.twin_local_sizes(joint)})
    return Mapped(low, used, sized[0], sized[1], lowered=lowered, lessons=lessons, tails=tails)


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


__all__ = ["compile", "plan", "Planned", "Mapped", "first_built", "built", "map_program", "link",
           "mapped_and_linked", "serialised", "apply_points", "points_applied", "joint_space_of", "profile_of",
           "is_high_level", "LEARN_ROUNDS"]
