"""Search spaces: `tuning_space`, `mapping_space`, `joint_space` and `choose_mapping`.

A `Space` holds a z3 `Model` and names the variables a choice sets: map labels (Table 5.2
codes) in a mapping space, tuning parameters in a tuning space, both (plus the thread
configuration `local_size_d`/`groups_d` when sizes are known) in a joint space. A choice is
a dict from those names to ints; `realise(choice)` is the program with it applied (built by
`lift.realise.realised`, stage "realised": this module states and solves, it builds no IR). A
space is stated over the program the rewriting stages "recomputed" and "fused" make
(`lift.rules.prepare.prepared`): run first for a program as written, not again for one
`lift.compile` passes with `rewritten=True`.

The thread configuration is that of the program's one kernel, or, in a program of several
`ocl_kernel`s (block_nest's packing kernels before its blocks, a layout copy), that of the kernel
whose maps nest deepest (where the work is; `Space.launch_kernel` names it). Its twins, the other
kernels whose parallel maps sit at the same depths with the same codes and nest as deep (the
layers of a chain of blocked GEMMs, MLP3's), are launched with its work-group shape, each
dimension cut to the largest divisor of the twin's own trip count (`Space.twin_local_sizes`;
without it the OpenCL driver picks a shape that loses the blocks' sharing of a column panel:
MLP3 3.56 against 3.18 ms on PoCL/Zen 3, interleaved); the others keep their default launch.

    space = mapping_space(prog, lift.devices.profile("mali-g72"))
    for choice in space.sample(50, seed=1):
        low = space.realise(choice)       # maps lowered, fused maps as split/join (5.3.1)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from numbers import Integral
from typing import Any

import z3

from lift import devices
from lift import realise as realisation  # stage "realised": `Space.realise` for users
from lift.arith import Arith, Cst, evaluate, free_vars, substitute, to_z3
from lift.devices import Device
from lift.errors import DeviceError, LiftTypeError, UnsatisfiableError
from lift.ir import nodes as n
from lift.ir.nodes import Node
from lift.ir.paths import at
from lift.lower import is_high_level
from lift.rules.prepare import prepared
from lift.rules.terms import as_call, fun_of

from . import launch as ln
from . import mapping as mp
from . import tuning as tn
from .boundary import add_boundary, result_chain
from .context import Context, MapSite, analyse
from .lexopt import BudgetSpent, lex_optimum
from .limits import MAPPING_RLIMIT
from .model import Choice, Constraint, Model, code_in
from .unique import add_unique


@dataclass
class Space:
    """A constrained space of choices for one program on one device."""

    expr: Node
    device: Device
    context: Context
    model: Model
    variables: tuple[str, ...]
    params: dict[str, tn.TuningParam]  # tuning parameters left after range reduction
    fixed: dict[str, int]  # tuning values fixed by range reduction or given
    dropped: list[tuple[Constraint, str]]  # simplified away, with the reason
    mapping: dict[str, int] | None = None  # the fixed mapping of a tuning space
    sizes: dict[str, int] | None = None  # known problem sizes
    lower: bool = True  # realise lowers maps (False: a tuning space of the program as written)
    launch_kernel: str | None = None  # the kernel the launch variables size, when not the only one
    launch_path: tuple[int, ...] | None = None  # the path of its ocl_kernel call (named when launched)
    others: tuple[tuple[int, tuple[int, ...]], ...] = ()  # the other kernels' (kernel, ocl_kernel call path)

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        """Every named constraint of the model."""
        return tuple(self.model.constraints)

    def sample(self, n: int, seed: int = 0) -> list[Choice]:
        """Up to `n` distinct valid choices, spread by random pivots (not solver neighbours)."""
        for what, v in (("n", n), ("seed", seed)):
            if not isinstance(v, Integral) or isinstance(v, bool) or v < 0:
                raise LiftTypeError(f"sample: {what} must be an int >= 0, got {v!r}", got=v)
        return self.model.sample(n, seed, self.variables)

    def count(self, limit: int = 100_000) -> int | None:
        """The number of valid choices, or None when above `limit`."""
        return self.model.count(self.variables, limit)

    def is_valid(self, choice: Mapping[str, int]) -> bool:
        """True when the choice (some or all variables) satisfies every constraint."""
        return self.model.is_valid(_choice(choice))

    def explain(self, choice: Mapping[str, int]) -> tuple[Constraint, ...] | None:
        """The unsat core that rejects `choice`, or None if it is valid."""
        return self.model.core(choice)

    def check(self, choice: Mapping[str, int] | None = None) -> None:
        """Raise `UnsatisfiableError` naming the violated constraints unless `choice` is valid."""
        self.model.check(choice, what="the choice" if choice else "the space")

    def checked(self, choice: Mapping[str, int]) -> dict[str, int]:
        """`choice` as a dict of ints, checked against the space (`check`)."""
        choice = _choice(choice)
        self.check(choice)
        return choice

    def realise(self, choice: Mapping[str, int], *, vectorise: Mapping[str, int] | None = None) -> Node:
        """The program with `choice` applied (maps lowered, tuning values substituted): stage
        "realised" (`lift.realise.realised`), for users of a space."""
        return realisation.realised(self, choice, vectorise=vectorise)[0]

    def realise_traced(self, choice: Mapping[str, int], *, vectorise: Mapping[str, int] | None = None
                       ) -> tuple[Node, tuple[tuple[Node, str], ...]]:
        """`realise`, and each map object the lowering made with its map site's label
        (`lift.realise.realised`)."""
        return realisation.realised(self, choice, vectorise=vectorise)

    def launch_maps(self) -> list[MapSite]:
        """The maps whose kernel the launch variables size (every map in a one-kernel program)."""
        p = self.launch_path
        return [m for m in self.context.maps.values() if p is None or m.path[:len(p) + 1] == (*p, 0)]

    def ndrange(self, choice: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """(global_size, local_size) when the space has launch variables."""
        return ln.ndrange(choice)

    def codes(self, choice: Mapping[str, int]) -> dict[str, int]:
        """Each map's Table 5.2 code: the fixed mapping of a tuning space, else `choice`'s."""
        return dict(self.mapping) if self.mapping is not None else {k: int(choice[k]) for k in self.context.maps}

    def _shape(self, kernel: int, codes: Mapping[str, int]) -> tuple[int, frozenset[tuple[int, int]]]:
        """A kernel's deepest map nesting and its parallel maps' (depth, code) pairs."""
        sites = [m for m in self.context.maps.values() if m.kernel == kernel]
        return (max((len(m.outer) for m in sites), default=-1),
                frozenset((len(m.outer), codes[m.label]) for m in sites if codes.get(m.label, 0) >= 10))

    def twins(self, codes: Mapping[str, int]) -> list[tuple[str, tuple[int, ...]]]:
        """(name, ocl_kernel call path) of the kernels shaped like the launch kernel under `codes`."""
        main = next((m.kernel for m in self.launch_maps()), None)
        if main is None or self.launch_path is None:
            return []
        shape = self._shape(main, codes)
        if not shape[1]:
            return []
        same = [path for k, path in self.others if self._shape(k, codes) == shape]
        return [(self.kernel_name(path, f"{self.launch_kernel}_{i + 1}"), path) for i, path in enumerate(same)]

    def kernel_name(self, path: tuple[int, ...], default: str | None = None) -> str:
        """The name of the program's `ocl_kernel` call at `path`: its label, else `default` (else
        `LAUNCH_KERNEL`)."""
        return _kernel_name(self.expr, path, default or LAUNCH_KERNEL)

    def twin_local_sizes(self, choice: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
        """The work-group sizes of the launch kernel's twins (see the module docstring): by kernel
        name, each dimension the largest divisor of the twin's trip count in that dimension that is
        at most the launch kernel's; none where a trip count is not known."""
        nd = ln.ndrange(choice)
        if nd is None:
            return {}
        codes = self.codes(choice)
        env = {**(self.sizes or {}), **self.fixed, **{k: int(v) for k, v in choice.items() if k in self.params}}
        out: dict[str, tuple[int, ...]] = {}
        for name, path in self.twins(codes):
            trips: dict[int, int] = {}
            for m in self.context.maps.values():
                dim = codes[m.label] - 30
                if m.path[:len(path) + 1] == (*path, 0) and dim >= 0:
                    try:
                        trips[dim] = max(trips.get(dim, 1), int(evaluate(m.length, env)))
                    except Exception:  # noqa: BLE001 - a symbolic trip count: the driver's launch
                        trips = {}
                        break
            if trips:
                out[name] = tuple(max(d for d in range(1, want + 1) if trips.get(dim, 1) % d == 0)
                                  for dim, want in enumerate(nd[1]))
        return out

    def stats(self) -> dict[str, int]:
        """Constraint instances by kind (like thesis Table 5.4)."""
        return self.model.stats()

    def report(self) -> str:
        """A table of constraint instances by kind, and what simplification removed."""
        rows = [f"{'Constraint':45} # of instances"]
        rows += [f"{k:45} {v}" for k, v in self.stats().items()]
        rows.append(f"{'(dropped by simplification)':45} {len(self.dropped)}")
        return "\n".join(rows)


# --------------------------------------------------------------------- building


def _device(device: Device | str | None) -> Device:

    if isinstance(device, Device):
        return device
    if isinstance(device, str):
        return devices.profile(device)
    try:
        return devices.current()
    except DeviceError:
        return devices.profile("pocl-cpu")


def _tuning(expr: Node, ctx: Context, device: Device, sizes: Mapping[str, int],
            given: Mapping[str, int]):
    """Tuning parameters and constraints after substitution, simplification and Algorithm 2."""
    params = tn.collect_params(expr)
    env = {**sizes, **given}
    cons = [tn.substitute_constraint(c, env) for c in tn.algorithmic(expr) + tn.hardware(expr, ctx, device)]
    params = {k: t for k, t in params.items() if k not in given}
    _refuse_false(cons, params)
    kept, dropped = tn.simplify(params, cons)
    params, kept, fixed = tn.reduce_ranges(params, kept)
    fixed_int = {k: _int(v, sizes) for k, v in fixed.items()}
    fixed_int.update({k: int(v) for k, v in given.items()})
    kept = [tn.substitute_constraint(c, fixed_int) for c in kept]
    _refuse_false(kept, params)
    return params, kept, fixed_int, dropped


def _int(a: Arith, sizes: Mapping[str, int]) -> int:

    v = substitute(a, sizes)
    if free_vars(v):
        raise UnsatisfiableError(f"a tuning value depends on unknown sizes: {v}; give sizes=")
    return evaluate(v, {})


def _refuse_false(cons: list[Constraint], params: Mapping[str, tn.TuningParam]) -> None:
    bad = tuple(c for c in cons if c.pred is not None and tn.decide(c.pred, params) is False)
    if bad:
        raise UnsatisfiableError("the tuning constraints cannot hold: " + "; ".join(map(str, bad)), core=bad)


def _declare_tuning(model: Model, params: dict[str, tn.TuningParam], cons: list[Constraint],
                    sizes: Mapping[str, int], inputs: set[str]) -> None:
    for t in params.values():
        model.var(t.name, tn.concrete_range(t, sizes))
    free = {v.name for c in cons if c.pred for v in free_vars(c.pred.lhs) | free_vars(c.pred.rhs)}
    for name in sorted((free & inputs) - set(sizes) - set(params)):
        model.var(name, range(1, tn.DEFAULT_MAX + 1))  # an unknown problem size: existential
    for c in cons:
        model.add(c)
        if c.pred is not None:
            for t in (p for p in params.values() if p.name in _names(c)):
                for bound, ok in ((t.lo, True), (t.hi, False)):
                    if bound is not None and free_vars(bound):
                        f = z3.Int(t.name) >= to_z3(bound) if ok else z3.Int(t.name) <= to_z3(bound)
                        model.add(Constraint(tn.BOUNDS, t.labels, f"range of {t}", f, family="algorithmic"))


def _names(c: Constraint) -> set[str]:
    return {v.name for v in free_vars(c.pred.lhs) | free_vars(c.pred.rhs)} if c.pred else set()


def _choice(choice: Any) -> dict[str, int]:
    """`choice` as a dict from variable names to ints, else `LiftTypeError`."""
    if not isinstance(choice, Mapping):
        raise LiftTypeError(f"a choice is a dict from variable names to ints, got {choice!r}", got=choice)
    bad = {k: v for k, v in choice.items()
           if not isinstance(k, str) or not isinstance(v, Integral) or isinstance(v, bool)}
    if bad:
        raise LiftTypeError(f"a choice maps variable names to ints, got {bad!r}", got=bad)
    return dict(choice)


@dataclass(frozen=True)
class SpaceSpec:
    """What a space is built for (besides the program and the device): known `sizes`, given
    `tuning` values, a fixed `mapping`, which variables it has (`want_map`: one per map;
    `want_tune`: the tuning parameters; `launch`: the thread configuration), `fusion_heuristic`
    (mapping.py's fusion constraints). The tuner's uniqueness constraints are added to a built
    space by `with_uniqueness`."""

    sizes: Mapping[str, int] | None = None
    tuning: Mapping[str, int] | None = None
    mapping: Mapping[str, int] | None = None
    want_map: bool = False
    want_tune: bool = False
    launch: bool = False
    fusion_heuristic: bool = False


def _space(expr: Node, device: Device | str | None, spec: SpaceSpec, rewritten: bool) -> Space:
    """The space of `expr` on `device` as `spec` says, built afresh: a space depends on its
    arguments only (no cache: what a compile gets never depends on what the process built before).
    The space is stated over the program the rewriting stages make (`lift.rules.prepare.prepared`:
    recompute_layouts, fuse_epilogues, fuse_reduce_maps), run here unless `rewritten`."""
    return _build(expr if rewritten else prepared(expr), _device(device), spec)


def _build(expr: Node, dev: Device, spec: SpaceSpec) -> Space:
    sizes, tuning, mapping, want_map = spec.sizes, spec.tuning, spec.mapping, spec.want_map
    sizes = dict(sizes or {})
    ctx = analyse(expr)
    params, cons, fixed, dropped = _tuning(expr, ctx, dev, sizes, dict(tuning or {}))
    model = Model()
    _declare_tuning(model, params, cons, sizes, tn.input_sizes(expr))
    names: list[str] = list(params) if spec.want_tune else []
    fixed_map = None
    if want_map:
        codes = mp.add_mapping(model, ctx, fusion_heuristic=spec.fusion_heuristic)
        add_boundary(model, ctx, codes, result_chain(expr))
        names = list(ctx.maps) + names
    else:
        fixed_map = dict(mapping) if mapping is not None else {k: code_of(m.node) for k, m in ctx.maps.items()}
        codes = {k: z3.IntVal(v) for k, v in fixed_map.items()}
    others: tuple[tuple[int, tuple[int, ...]], ...]
    launched, path, others = None, None, ()
    launch = spec.launch
    if launch and _single_kernel(ctx):
        names += ln.add_launch(model, ctx, dev, codes, {**sizes, **fixed})
    elif launch and (main := _main_kernel(ctx, expr)) is not None:
        kernel, path = main
        launched = _kernel_name(expr, path)
        names += ln.add_launch(model, ctx, dev, codes, {**sizes, **fixed}, kernel=kernel)
        calls = {k: _kernel_call(ctx, expr, k) for k in sorted({m.kernel for m in ctx.maps.values()}) if k != kernel}
        others = tuple((k, p) for k, p in calls.items() if p is not None)
    lower = want_map or mapping is not None
    return Space(expr, dev, ctx, model, tuple(names), params, fixed, dropped, fixed_map, sizes, lower, launched,
                 path, others)


def _single_kernel(ctx: Context) -> bool:
    return len({k for k, _ in ctx.chains}) <= 1


LAUNCH_KERNEL = "lift_main"  # the name given to the launch variables' kernel when it has no label


def _main_kernel(ctx: Context, expr: Node) -> tuple[int, tuple[int, ...]] | None:
    """`(kernel, path of its ocl_kernel call)` of the kernel whose maps nest deepest (ties: the
    later kernel, which consumes the others), or None when that kernel is no `ocl_kernel` of
    its own (a staged top-level call) or is launched together with others."""

    depth: dict[int, int] = {}
    for m in ctx.maps.values():
        depth[m.kernel] = max(depth.get(m.kernel, 0), len(m.outer) + 1)
    if not depth:
        return None
    k = max(depth, key=lambda j: (depth[j], j))
    path = _kernel_call(ctx, expr, k)
    return None if path is None else (k, path)


def _kernel_call(ctx: Context, expr: Node, k: int) -> tuple[int, ...] | None:
    """The path of kernel `k`'s own `ocl_kernel` call (its maps in its function), or None (a
    staged top-level call, or launched together with other kernels)."""
    if len(ctx.launch_of(k)) > 1:
        return None
    prefix = tuple(os.path.commonprefix([m.path for m in ctx.maps.values() if m.kernel == k]))
    for i in range(len(prefix) - 1, -1, -1):  # the nearest enclosing ocl_kernel call, its maps in its function
        node = at(expr, prefix[:i])
        if isinstance(node, n.FunCall) and isinstance(node.f, n.OclKernel) and prefix[i] == 0:
            return prefix[:i]
    return None


def _kernel_name(expr: Node, path: tuple[int, ...], default: str = LAUNCH_KERNEL) -> str:
    """The name of the `ocl_kernel` call at `path`: its label, else `default`."""

    kernel = as_call(at(expr, path)).f
    return kernel.label or fun_of(kernel).label or default


def code_of(m: n.AbstractMap) -> int:
    """The Table 5.2 code of a map as written (`map` counts as sequential)."""
    if isinstance(m, n.MapLcl):
        return 10 + m.dim
    if isinstance(m, n.MapWrg):
        return 20 + m.dim
    if isinstance(m, n.MapGlb):
        return 30 + m.dim
    return mp.SEQ


def tuning_space(expr: Node, device: Device | str | None = None, *, sizes: Mapping[str, int] | None = None,
                 mapping: Mapping[str, int] | None = None, launch: bool = False, rewritten: bool = False) -> Space:
    """The tuning parameters of `expr` (4.3) with the mapping as written or as given.
    `rewritten`: `expr` has been through the rewriting stages the
    model is stated over already (`lift.compile`'s "recomputed" and "fused"); else they run first
    (`lift.rules.prepare.prepared`)."""
    return _space(expr, device, SpaceSpec(sizes=sizes, mapping=mapping, want_tune=True,
                                          launch=launch and sizes is not None), rewritten)


def mapping_space(expr: Node, device: Device | str | None = None, *, sizes: Mapping[str, int] | None = None,
                  tuning: Mapping[str, int] | None = None, fusion_heuristic: bool = False,
                  rewritten: bool = False) -> Space:
    """One Table 5.2 variable per concrete map of `expr`, constrained as in 5.3.
    `rewritten`: `expr` has been through the rewriting stages the
    model is stated over already (`lift.compile`'s "recomputed" and "fused"); else they run first
    (`lift.rules.prepare.prepared`)."""
    return _space(expr, device, SpaceSpec(sizes=sizes, tuning=tuning, want_map=True,
                                          fusion_heuristic=fusion_heuristic), rewritten)


def joint_space(expr: Node, device: Device | str | None = None, *, sizes: Mapping[str, int] | None = None,
                fusion_heuristic: bool = False, launch: bool = True, unique: bool = False,
                rewritten: bool = False) -> Space:
    """Mapping, tuning values and (with sizes; `{}` for a program whose sizes are all constants)
    thread configuration, chosen together. A program whose maps are all lowered already (by its
    author, or by rewrite points such as `gpu_tiles`, whose local buffers, barriers and launch
    are built around their `map_wrg`/`map_lcl`) keeps its mapping as written (`Space.mapping`):
    only its tuning values and launch are variables. `unique`: with the uniqueness constraints
    (constraints/unique.py: tile sizes of all-sequential loops fixed, thread dimensions 1 and 2
    ordered), as `lift.tune` searches it. `rewritten`: `expr` has been through the rewriting stages the
    model is stated over already (`lift.compile`'s "recomputed" and "fused"); else they run first
    (`lift.rules.prepare.prepared`)."""
    if not is_high_level(expr):
        return tuning_space(expr, device, sizes=sizes, launch=launch, rewritten=rewritten)
    plain = _space(expr, device, SpaceSpec(sizes=sizes, want_map=True, want_tune=True,
                                           launch=launch and sizes is not None, fusion_heuristic=fusion_heuristic),
                   rewritten)
    return with_uniqueness(plain) if unique else plain


def with_uniqueness(space: Space) -> Space:
    """`space` (a joint space with map variables) with the uniqueness constraints (7.2.1,
    constraints/unique.py) added to a copy of its model: the tuner's space, derived from the
    plain one that `lift.compile` plans a candidate in, so a tune analyses and constrains each
    rewritten program once, not twice. A space without map variables is returned as it is."""
    if space.mapping is not None or not space.context.maps:
        return space
    model = Model()
    model.vars, model.domains, model.constraints = dict(space.model.vars), dict(space.model.domains), \
        list(space.model.constraints)
    codes = {m: model.vars[m] for m in space.context.maps}
    add_unique(model, space.context, space.params, codes, space.device)
    return replace(space, model=model)


# ------------------------------------------------------------------- objective


OPTIMIZE_RLIMIT = MAPPING_RLIMIT  # z3 resource units for all of choose_mapping's questions (lexopt)


def choose_mapping(expr: Node, device: Device | str | None = None, *, sizes: Mapping[str, int] | None = None,
                   objective: str | Callable[[Choice], float] = "parallel", seed: int = 0) -> Choice:
    """A valid mapping that maximises `objective` ("parallel": parallel work, dimension 0 coalesced)."""
    return best_mapping(mapping_space(expr, device, sizes=sizes), sizes=sizes, objective=objective, seed=seed)


def best_mapping(space: Space, *, sizes: Mapping[str, int] | None = None,
                 objective: str | Callable[[Choice], float] = "parallel", seed: int = 0) -> Choice:
    """`choose_mapping` in a mapping space already built (`mapping_space`, with the constraints a
    caller learnt added: `lift.constraints.learn.taught`)."""
    if not space.context.maps:
        return {}
    if callable(objective):
        cands = space.sample(200, seed)
        if not cands:
            space.check()
        return max(cands, key=objective)
    terms = _parallel_score(space, dict(sizes or {}))
    # Ties are broken deterministically: the smallest codes, innermost maps (last in pre-order)
    # first, so the innermost parallel map takes dimension 0 (consecutive work-items, consecutive
    # output elements). The optimum is the one `z3.Optimize` gives (maximise, then minimise each
    # in turn), found by plain satisfiability questions (constraints/lexopt.py).
    order = sorted(space.context.maps, key=_natural, reverse=True)
    formulas = [c.formula for c in space.model.constraints]
    try:
        best = lex_optimum(space.model.domains, formulas, terms, order, rlimit=OPTIMIZE_RLIMIT)
    except BudgetSpent:  # the budget ran out: any valid mapping will do
        samples = space.sample(1, seed)
        if not samples:
            raise UnsatisfiableError("the solver found no mapping within its resource budget",
                                     hint="pass the mapping explicitly with choices=") from None
        return samples[0]
    if best is None:
        space.check()  # raises UnsatisfiableError with the unsat core
        raise UnsatisfiableError("the mapping space is unsatisfiable")
    return {k: best[k] for k in space.context.maps}


def _natural(label: str) -> tuple:
    """`m2` before `m10`: digits compare as numbers."""

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", label))


def _parallel_score(space: Space, sizes: Mapping[str, int]) -> list[tuple[Any, int]]:
    """Parallel maps weighted by depth and size; coalesced (stride 1) maps in dimension 0: the
    score is the sum of the weights whose conditions hold.

    GPUs are nudged towards work-groups (local-memory reuse); CPUs towards global maps,
    whose loop-free kernels the OpenCL CPU compilers vectorise across work-items."""
    cpu = space.device.kind == "cpu"
    terms: list[tuple[Any, int]] = []
    for m in space.context.maps.values():
        c = space.model.vars[m.label]
        terms.append((c >= 10, _weight(m.length, sizes)))
        if cpu:
            terms.append((c >= 30, 1))
        else:
            terms.append((z3.And(c >= 20, c < 30), 1))
        if m.stride is not None and m.stride == Cst(1):
            terms.append((code_in(c, (10, 20, 30)), 3))  # dimension 0 (no `%`: z3 solves it slowly)
        terms.append((code_in(c, (11, 12, 21, 22, 31, 32)), -1))
    return terms


def _weight(length: Arith, sizes: Mapping[str, int]) -> int:

    v = substitute(length, sizes)
    return max(1, evaluate(v, {}).bit_length()) if not free_vars(v) else 8
