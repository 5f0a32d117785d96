"""One place per pattern: every IR node class belongs to one family, whose entry holds what each
stage does with it, as the callables the stages dispatch through.

    REGISTRY[n.Split].family               "split"
    case("typecheck", split_node)          the typing rule (lift.typecheck registers it)
    REGISTRY[n.Map].kernel                 Refused("map has no OpenCL mapping; lower the program first ...")

The registry lives low (lift.ir) and knows no stage; each stage registers its cases in its own
module, beside its other code, with a decorator:

    @register(n.Split, stage="typecheck")
    def _split(f: n.Split, ts: list[Type], call: Node, conds: list) -> Type: ...

and calls through `case(stage, f)` (or the stage's `table`) instead of matching on node classes.
The stages and the signatures of their cases (`f` the function node, `node` the call):
- "typecheck" (lift.typecheck.infer): `(f, ts, call, conds) -> Type`;
- "interpret" (lift.interpret.element, `Element.call`): `(ev, f, vals, node, env) -> value`;
- "batched" (lift.interpret.batch, `Batched.call`): `(ev, f, vals, node, env, bs) -> value`; a
  class without one is evaluated element by element (`NotBatchable`);
- "view" (lift.layout.apply_view): `(f, args, types, env) -> View`, for the layout functions
  (layout patterns, maps and lambdas of them, `let` of a lambda);
- "dest" (lift.layout.arg_dests): `(f, dest, types) -> list[View] | None`, the output views of an
  invertible layout function's arguments;
- "context" (lift.constraints.context, `_Walker.fun`): `(walker, f, path, args, ctx, call) -> Val`;
- "show" (lift.ir.printer): `(printer, f, lab) -> str`, the function in LIFT notation (a class
  without one prints as its class name);
- "lower" (lift.lower, the default lowering): `(f, nested) -> FunDecl`, a high-level map or reduce
  mapped to OpenCL, a lambda's body lowered (a class without one has its function lowered);
- "sizes" (lift.constraints.tuning): `(f) -> list[Arith]`, the sizes of `f` a tuning parameter
  may name (split, slide, pad);
- "algorithmic" (lift.constraints.tuning): `(f, size, labels, params) -> list[Constraint]`, the
  constraints `f` puts on the size of its argument (split, slide);
- "commute" (lift.rules.recompute): `(lay, mf) -> Map | None`, how an elementwise map `mf`
  moves across the layout `lay` (`lay << mf << x == m2 << lay << x`), None where it does not;
- "realise" (lift.realise, the lowering of a chosen mapping): `(lowering, f, path) -> FunDecl`, a
  lambda, map or reduce realised with the mapping's choices;
- "lanes" (lift.rewrites.lanes, `_Lift.go`): `(lift, f, call) -> Expr | str | None`, the call
  computed on `w` lanes at once (the vectorise point's lifting of a map's element function);
- "kernel": the slot for the kernel traversal's case (memory allocation and code generation in
  one walk); that traversal dispatches on `lift.allocation.kernel_case`, which reads the entry's
  `emit` (the case's name, declared in `define`; `kernel` describes it; `kernel_table()` lists
  them), so a family defined later (tests/test_registry.py's `head`) compiles too.
An entry also describes its typing rule, its meaning, the default lowering (`lower`) and the
kernel case in words, and says whether the pattern only rearranges data (`layout`: "reshape"
for an invertible view of one array, "combine" for zip and tuple, "select" for views that cannot
be written through); `LAYOUT`, `INVERTIBLE` and `IN_PLACE` are derived from it.
What else the stages ask of a node class is a trait (`TRAITS`), declared where its family is
defined (`define(..., traits=..., some=...)`) and asked with `has(trait, f)` (or the typed
`is_address`, `is_wrapper`, `is_loop`, `is_parallel`); the kernel traversal's case is `emit`.
`MAPS`, `REDUCES`, `ADDRESS_SPACES`, `WRAPPERS` and `ALL_NODE_TYPES` derive from the families.
A stage that has no case for a class refuses it: `Refused` in the entry names the reason the
stage's `UnsupportedError` gives (`refusal`). A rewrite point (`transparent`, defined in
`lift.rewrites`) means its body until `lift.compile` applies it: the stages register that case
for `RewritePoint`. tests/test_registry.py checks every entry against the registered cases and
runs every stage on a program using each node class.

Adding a pattern is one module: its node class, `define(...)` of its family, and its cases
registered beside it (tests/test_registry.py defines one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

from lift.ir import nodes as n

STAGES = ("typecheck", "interpret", "batched", "view", "dest", "context", "show", "kernel", "lower", "sizes",
          "algorithmic", "commute", "realise", "lanes")
LAYOUT_KINDS = ("reshape", "combine", "select")

F = TypeVar("F", bound=Callable[..., Any])

# What the stages ask of a node class beside its cases, each answered by its family's entry
# (`has(trait, f)`); a family declares its traits where it is defined (`define(..., traits=...)`).
TRAITS = {
    "layout": "only rearranges data: its family has a `layout` kind (LAYOUT)",
    "computes": "makes values of its own: a user function, a reduction, a constant (rules.fusion.computes: a "
                "map of views computes nothing)",
    "writes": "writes values of its own element by element: a user function or a constant (a map of it writes "
              "memory; lift.ir.layoutfun.writes_values)",
    "userfun": "applies a scalar user function (rules.recompute and constraints.boundary: a computing producer)",
    "reread": "a view the normaliser reads twice rather than bind (rules.normalise.is_view: let inlining)",
    "window": "a window of a computed image whose stages the normaliser distributes (slide, pad, transpose)",
    "commutes": "a layout an elementwise map moves above (rules.recompute: slide, split, transpose, join)",
    "in_args": "its result lies in its arguments' memory (lift.allocation.result_space)",
    "address": "names the address space its function's results are written to",
    "wrapper": "one function `f`, meaning `f`, with a memory or kernel annotation (address spaces, ocl_kernel)",
    "realised": "kept by the mapping (lift.realise), its one function `f` realised: reduce_seq, let, "
                "iterate, vectorise, ocl_kernel, the address spaces",
    "keeps_order": "keeps the order of an array's outer elements, so that elements padded at its end can be cut off "
                   "after it (rewrites.layout_points.depaddable: map, join, split, slide)",
    "opaque": "the mapping's context does not follow its layout: a value of its type in its arguments' memories "
              "(constraints.context registers one case for the built-in ones: as_scalar, gather, iota)",
    "loop": "a lowered map: a loop in the kernel (sequential, global ids, work-groups or local ids)",
    "parallel": "a map over work-items (global ids, work-groups or local ids)",
    "grouped": "a map over work-groups or a work-group's local ids: the kernel has work-groups of a chosen local "
               "size (lift.codegen.generate, lift.codegen.tasks)",
    "fuses_array": "a reduction computed in one kernel with the map that makes its array, each element combined "
                   "as it is made (reduce_atomic: lift.codegen.atomic); lift.lower and the mapping's context stage "
                   "them together",
    "unlowered": "a high-level pattern the default lowering maps to OpenCL (map, reduce: lift.lower); the kernel "
                 "traversal refuses it",
    "kernel": "a kernel boundary: its one function `f` is an OpenCL kernel of its own (ocl_kernel; the "
              "rewrite points place and look for them: rewrites.auto, auto_nest, auto_conv, fission)",
}


@dataclass(frozen=True)
class Refused:
    """A stage rejects the node: an `UnsupportedError` naming it, with this reason."""

    reason: str


Desc = str | Refused


class RewritePoint:
    """Stands for every rewrite point class (`transparent`, lift.rewrites) in `register`."""


@dataclass(eq=False)
class Entry:
    """One pattern family: its node classes, what each stage does in words, and the stages' cases
    by stage and class (filled in by `register` when the stage's module is imported)."""

    family: str
    classes: tuple[type, ...]
    typecheck: Desc
    interpret: Desc
    lower: Desc
    kernel: Desc
    layout: str | None = None
    traits: dict[str, frozenset[type]] = field(default_factory=dict)
    emit: str | None = None
    cases: dict[str, dict[type, Callable[..., Any]]] = field(default_factory=dict, repr=False)

    def has(self, trait: str, cls: type) -> bool:
        """Whether node class `cls` (one of this family's) has `trait` (see `TRAITS`)."""
        if trait == "layout":
            return self.layout is not None
        return cls in self.traits.get(trait, ())

    def refusal(self, stage: str) -> str | None:
        """The reason `stage` refuses this family, or None when it does not."""
        d = getattr(self, stage, None)
        return d.reason if isinstance(d, Refused) else None


REGISTRY: dict[type, Entry] = {}
FAMILIES: dict[str, Entry] = {}
_TABLES: dict[str, dict[type, Callable[..., Any]]] = {s: {} for s in STAGES}


def define(family: str, *classes: type, typecheck: Desc, interpret: Desc, lower: Desc, kernel: Desc,
           layout: str | None = None, traits: tuple[str, ...] = (),
           some: dict[str, tuple[type, ...]] | None = None, emit: str | None = None) -> Entry:
    """Add a pattern family of node `classes` (a new pattern's first step; its cases follow), with
    the `traits` of all its classes and those of `some` of them (trait: classes), and `emit`, the
    kernel traversal's case for its function nodes (`kernel_table`; `kernel` says it in words)."""
    if family in FAMILIES or any(c in REGISTRY for c in classes):
        raise ValueError(f"the family {family} or one of its classes is defined already")
    if layout is not None and layout not in LAYOUT_KINDS:
        raise ValueError(f"layout must be one of {LAYOUT_KINDS}, got {layout!r}")
    given = {t: frozenset(classes) for t in traits} | {t: frozenset(cs) for t, cs in (some or {}).items()}
    unknown = [t for t in given if t not in TRAITS or t == "layout"]
    if unknown or any(not cs <= set(classes) for cs in given.values()):
        raise ValueError(f"{family}: unknown traits {unknown} or classes outside the family")
    if emit is not None and isinstance(kernel, Refused):
        raise ValueError(f"{family}: a kernel case ({emit}) for a family the kernel traversal refuses")
    entry = Entry(family, classes, typecheck, interpret, lower, kernel, layout, given, emit)
    FAMILIES[family] = entry
    for c in classes:
        REGISTRY[c] = entry
    return entry


def register(*classes: type, stage: str) -> Callable[[F], F]:
    """Register the decorated function as `stage`'s case for node `classes` (kept in each class's
    family entry, `Entry.cases[stage][cls]`); a class has one case per stage."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; the stages are {STAGES}")

    def put(fn: F) -> F:
        for c in classes:
            if c is not RewritePoint:
                entry = REGISTRY.get(c)
                if entry is None:
                    raise ValueError(f"{c.__name__} has no family: define(...) it first")
                entry.cases.setdefault(stage, {})[c] = fn
            old = _TABLES[stage].get(c)
            if old is not None and old is not fn:
                raise ValueError(f"{stage} has another case for {c.__name__}")
            _TABLES[stage][c] = fn
        return fn

    return put


def table(stage: str) -> dict[type, Callable[..., Any]]:
    """The cases `stage` registered, by node class (live: later registrations appear in it)."""
    return _TABLES[stage]


def case(stage: str, f: object) -> Callable[..., Any] | None:
    """`stage`'s case for node `f` (a rewrite point: the stage's `RewritePoint` case); None when
    the stage has none (it refuses `f`)."""
    cls = type(f)
    hit = _TABLES[stage].get(cls)
    if hit is None and getattr(cls, "transparent", False):
        return _TABLES[stage].get(RewritePoint)
    return hit


def entry_of(cls: type) -> Entry | None:
    """The family of node class `cls`; `TRANSPARENT` for a rewrite point; None when unknown."""
    if cls in REGISTRY:
        return REGISTRY[cls]
    return TRANSPARENT if getattr(cls, "transparent", False) else None


def refusal(stage: str, f: object) -> str:
    """The reason `stage` gives for not handling `f` (its entry's `Refused`, or no rule at all)."""
    entry = entry_of(type(f))
    reason = entry.refusal(stage) if entry is not None else None
    return reason or f"no {stage} rule for {type(f).__name__} (see lift.ir.registry)"


def kernel_table() -> tuple[dict[type, str], dict[type, str]]:
    """The kernel traversal's cases and refusals for function nodes (`lift.allocation.kernel_case`)."""
    funs = {c: s for c, s in REGISTRY.items() if issubclass(c, n.FunDecl)}
    return ({c: s.emit for c, s in funs.items() if s.emit is not None},
            {c: s.kernel.reason for c, s in funs.items() if isinstance(s.kernel, Refused)})


def has(trait: str, f: object) -> bool:
    """Whether node `f` (or node class `f`) has `trait` (`TRAITS`), as its family's entry says; a
    class without a family has none."""
    cls = f if isinstance(f, type) else type(f)
    entry = REGISTRY.get(cls)
    return entry is not None and entry.has(trait, cls)


def with_trait(trait: str) -> tuple[type, ...]:
    """The node classes with `trait`, in the order of their families' definitions."""
    return tuple(c for c, e in REGISTRY.items() if e.has(trait, c))


# The traits the stages narrow on, typed (the classes named here only for the type checker; the
# answer is the registry's).
def is_address(f: object) -> TypeGuard[n.ToGlobal | n.ToLocal | n.ToPrivate]:
    """Whether `f` is an address-space wrapper (the "address" trait)."""
    return has("address", f)


def is_wrapper(f: object) -> TypeGuard[n.ToGlobal | n.ToLocal | n.ToPrivate | n.OclKernel]:
    """Whether `f` wraps one function with a memory or kernel annotation (the "wrapper" trait)."""
    return has("wrapper", f)


def is_loop(f: object) -> TypeGuard[n.MapSeq | n.MapGlb | n.MapWrg | n.MapLcl]:
    """Whether `f` is a lowered map, a loop in the kernel (the "loop" trait)."""
    return has("loop", f)


def is_parallel(f: object) -> TypeGuard[n.MapGlb | n.MapWrg | n.MapLcl]:
    """Whether `f` is a map over work-items (the "parallel" trait)."""
    return has("parallel", f)


def layout_classes(*kinds: str) -> tuple[type, ...]:
    """The node classes of the families whose `layout` is one of `kinds`."""
    return tuple(c for c, e in REGISTRY.items() if e.layout in kinds)


# ------------------------------------------------------------------ the built-in families

_LOWER_FIRST = "has no OpenCL mapping; lower the program first (lift.lower.lower)"
_KEPT = "kept"
_BODY = "kept, its function lowered"
_MAP_T = "[T]_n -> [f(T)]_n"
_MAP_I = "f on every element (batched: once over a batch axis)"
_RED_T = "(T, [U]_n) -> T, f: (T, U) -> T"
_RED_I = "left-to-right fold (batched: numpy folds)"
_WRAPPED = "its function's type"
_VIEW = "a reshape (a view)"
_SWAP = ("[[T]_m]_n -> [[T]_n]_m", "swapped axes (a view)")

define("param", n.Param, typecheck="its declared type", interpret="its bound value", lower=_KEPT,
       kernel="expression: its memory or view")
define("literal", n.Literal, typecheck="its type", interpret="a constant array", lower=_KEPT,
       kernel="expression: a constant",
       traits=("computes", "writes"))
define("call", n.FunCall, typecheck="its function's rule on the argument types",
       interpret="the function on the argument values", lower="function and arguments lowered",
       kernel="expression: the function's case")
define("lambda", n.Lambda, typecheck="its body, parameters checked against the arguments",
       interpret="its body with parameters bound", lower="body lowered", kernel="lambda", emit="lambda")
define("userfun", n.UserFun, typecheck="its declared signature",
       interpret="its Python function (batched: its numpy twin)", lower=_KEPT, kernel="userfun",
       traits=("computes", "writes", "userfun"), emit="userfun")
define("map", n.Map, typecheck=_MAP_T, interpret=_MAP_I,
       lower="map_glb (outermost) or map_seq; kept when it only rearranges data (a view)",
       kernel=Refused("map " + _LOWER_FIRST),
       traits=("keeps_order", "unlowered"))
define("map_opencl", n.MapSeq, n.MapGlb, n.MapWrg, n.MapLcl, typecheck=_MAP_T, interpret=_MAP_I, lower=_BODY,
       kernel="map: a loop (sequential, global ids, work-groups or local ids) writing its output memory",
       traits=("loop",), some={"parallel": (n.MapGlb, n.MapWrg, n.MapLcl), "grouped": (n.MapWrg, n.MapLcl)},
       emit="map")
define("reduce", n.Reduce, typecheck=_RED_T, interpret=_RED_I, lower="reduce_seq",
       kernel=Refused("reduce " + _LOWER_FIRST),
       traits=("computes", "unlowered"))
define("reduce_seq", n.ReduceSeq, typecheck=_RED_T, interpret=_RED_I, lower=_BODY, kernel="reduce",
       traits=("computes", "realised"), emit="reduce")
define("reduce_atomic", n.ReduceAtomic, typecheck=_RED_T,
       interpret="left-to-right fold (the kernel's order is not deterministic; f is associative with "
                 "neutral init)", lower=_BODY,
       kernel="atomic: the map's elements combined into the result with OpenCL atomics",
       traits=("computes", "fuses_array"), emit="atomic")
define("zip", n.Zip, typecheck="[T1]_n, ..., [Tk]_n -> [(T1, ..., Tk)]_n", interpret="an array of tuples (Zipped)",
       lower=_KEPT, kernel="layout", layout="combine",
       traits=("reread", "in_args"), emit="layout")
define("tuple", n.MakeTuple, typecheck="T1, ..., Tk -> (T1, ..., Tk)", interpret="a tuple", lower=_KEPT,
       kernel="layout", layout="combine",
       traits=("in_args",), emit="layout")
define("get", n.Get, typecheck="(T1, ..., Tk) -> Ti", interpret="a tuple component", lower=_KEPT, kernel="layout",
       layout="select",
       traits=("reread", "in_args"), emit="layout")
define("at", n.At, typecheck="[T]_n -> T (or a vector's lane); 0 <= i < n", interpret="an element (range checked)",
       lower=_KEPT, kernel="layout", layout="select",
       traits=("in_args",), emit="layout")
define("iota", n.Iota, typecheck="() -> [Int]_n (lift.iota)", interpret="0 .. n-1", lower=_KEPT, kernel="layout",
       layout="select", traits=("opaque",), emit="layout")
define("split", n.Split, typecheck="[T]_n -> [[T]_m]_(n/m); m > 0 and m divides n", interpret=_VIEW, lower=_KEPT,
       kernel="layout", layout="reshape",
       traits=("reread", "commutes", "in_args", "keeps_order"), emit="layout")
define("join", n.Join, typecheck="[[T]_m]_n -> [T]_(m n)", interpret=_VIEW, lower=_KEPT, kernel="layout",
       layout="reshape",
       traits=("reread", "commutes", "in_args", "keeps_order"), emit="layout")
define("slide", n.Slide, typecheck="[T]_n -> [[T]_s]_((n - s + t) / t)", interpret="a strided window view",
       lower=_KEPT, kernel="layout", layout="select",
       traits=("reread", "window", "commutes", "in_args", "keeps_order"), emit="layout")
define("pad", n.Pad, typecheck="[T]_n -> [T]_(l + n + r), a constant pad value, or a boundary mode (clamp, mirror, "
       "wrap: l, r >= 0, n >= 1)", interpret="a padded copy (numpy.pad: constant, edge, symmetric, wrap)",
       lower=_KEPT, kernel="layout", layout="select",
       traits=("reread", "window", "in_args"), emit="layout")
define("transpose", n.Transpose, n.TransposeW, typecheck=_SWAP[0], interpret=_SWAP[1], lower=_KEPT,
       kernel="layout", layout="reshape",
       traits=("in_args",), some={t: (n.Transpose,) for t in ("reread", "window", "commutes")}, emit="layout")
define("as_vector", n.AsVector, typecheck="[S]_n -> [S<k>]_(n/k); k divides n", interpret="a reshape: lanes last",
       lower=_KEPT, kernel="layout", layout="reshape",
       traits=("in_args",), emit="layout")
define("as_scalar", n.AsScalar, typecheck="[S<k>]_n -> [S]_(k n)", interpret="a reshape", lower=_KEPT,
       kernel="layout", layout="reshape",
       traits=("opaque", "in_args",), emit="layout")
define("let", n.Let, typecheck=_WRAPPED, interpret="its function", lower=_BODY, kernel="let",
       traits=("realised",), emit="let")
define("iterate", n.Iterate, typecheck="f applied k times, sizes rebound per step", interpret="f k times, sizes "
       "rebound", lower=_BODY, kernel="iterate",
       traits=("realised",), emit="iterate")
define("address", n.ToGlobal, n.ToLocal, n.ToPrivate, typecheck=_WRAPPED, interpret="its function", lower=_BODY,
       kernel="address",
       traits=("address", "wrapper", "realised"), emit="address")
define("vectorise", n.Vectorise, typecheck="S<k>... -> f(S)<k>, f scalar",
       interpret="f on every lane (batched: lanes a batch axis)", lower=_BODY, kernel="userfun",
       traits=("realised",), emit="userfun")
define("ocl_kernel", n.OclKernel, typecheck=_WRAPPED, interpret="its function", lower=_BODY,
       kernel=Refused("an ocl_kernel inside a kernel: kernels are not nested; only the top level may hold them"),
       traits=("wrapper", "realised", "kernel"))

TRANSPARENT = Entry("rewrite point", (), "typed as its body", "means its body", "kept, its body lowered",
                    Refused("a rewrite point is applied (lift.compile's points stage) before kernels"))

# Snapshots of the families defined here (a family defined in its own module later, lift.gather's,
# is not in them: a stage asks `has(trait, f)` or the entry, never these tuples, about a node).
# Derived from the families: the layout patterns, those whose arguments can be written through
# their destination, and those that do so for one array (the rest of INVERTIBLE: zip, tuple).
LAYOUT = layout_classes(*LAYOUT_KINDS)
INVERTIBLE = layout_classes("reshape", "combine")
IN_PLACE = layout_classes("reshape")

# The built-in node classes by kind, from their families and traits (lift.ir.nodes re-exports them).
MAPS: tuple[type[n.AbstractMap], ...] = tuple(c for c in REGISTRY if issubclass(c, n.AbstractMap))
REDUCES: tuple[type[n.AbstractReduce], ...] = tuple(c for c in REGISTRY if issubclass(c, n.AbstractReduce))
ADDRESS_SPACES: tuple[type[n.Pattern], ...] = tuple(c for c in with_trait("address") if issubclass(c, n.Pattern))
WRAPPERS: tuple[type[n.Pattern], ...] = tuple(c for c in with_trait("wrapper") if issubclass(c, n.Pattern))
ALL_NODE_TYPES: tuple[type[n.Node], ...] = tuple(c for c in REGISTRY if issubclass(c, n.Node))


__all__ = ["REGISTRY", "FAMILIES", "TRANSPARENT", "STAGES", "Refused", "Entry", "RewritePoint", "define",
           "register", "table", "case", "entry_of", "refusal", "kernel_table", "layout_classes", "LAYOUT",
           "INVERTIBLE", "IN_PLACE", "TRAITS", "has", "with_trait", "is_address", "is_wrapper", "is_loop",
           "is_parallel", "MAPS", "REDUCES", "ADDRESS_SPACES", "WRAPPERS", "ALL_NODE_TYPES"]
