"""One place per pattern: what each stage does with every IR node class.

    REGISTRY[n.Split].typecheck   "[T]_n -> [[T]_m]_(n/m); m > 0 and m divides n"
    REGISTRY[n.Map].kernel        Refused("map has no OpenCL mapping; lower the program first ...")

The stages, in pipeline order:
- typecheck: `lift.typecheck.infer` (functions) and `type_of` (expressions);
- interpret: `lift.interpret` (the element-wise evaluator, `Element.call`, and the batched one,
  `Batched.call` / `Batched.layout`, which hands what it cannot batch to the element-wise one);
- lower: `lift.lower.lower`, the default lowering (the empty mapping choice);
- kernel: memory allocation (`lift.memory`) and kernel generation (`lift.codegen.kernel`), which
  share one traversal: they dispatch on `lift.memory.kernel_case`, whose table is derived from the
  `kernel` column here ("lambda", "userfun", "layout", "map", "reduce", "atomic", "address",
  "let", "iterate"; an expression is handled by its function's case).
A stage handles a node (the entry says how) or refuses it (`Refused`: the stage raises an
`UnsupportedError` naming the node with that reason). A rewrite point (`transparent`, defined in
`lift.rewrites`) means its body until `lift.compile` applies it, before any mapping: `TRANSPARENT`.
tests/test_registry.py checks every entry against the stages' own dispatch and runs every stage on
a program using each node class.
"""

from __future__ import annotations

from dataclasses import dataclass

from lift.ir import nodes as n


@dataclass(frozen=True)
class Refused:
    """A stage rejects the node: an `UnsupportedError` naming it, with this reason."""

    reason: str


Entry = str | Refused


@dataclass(frozen=True)
class Stages:
    """What each stage does with one node class (see the module docstring)."""

    typecheck: Entry
    interpret: Entry
    lower: Entry
    kernel: Entry


_LOWER_FIRST = "has no OpenCL mapping; lower the program first (lift.lower.lower)"
_KEPT = "kept"
_BODY = "kept, its function lowered"


def _layout(typecheck: str, interpret: str) -> Stages:
    return Stages(typecheck, interpret, _KEPT, "layout")


def _map(kind: str) -> Stages:
    return Stages("[T]_n -> [f(T)]_n", "f on every element (batched: once over a batch axis)", _BODY,
                  f"map: a loop ({kind}) writing its output memory")


REGISTRY: dict[type, Stages] = {
    n.Param: Stages("its declared type", "its bound value", _KEPT, "expression: its memory or view"),
    n.Literal: Stages("its type", "a constant array", _KEPT, "expression: a constant"),
    n.FunCall: Stages("its function's rule on the argument types", "the function on the argument values",
                      "function and arguments lowered", "expression: the function's case"),
    n.Lambda: Stages("its body, parameters checked against the arguments", "its body with parameters bound",
                     "body lowered", "lambda"),
    n.UserFun: Stages("its declared signature", "its Python function (batched: its numpy twin)",
                      _KEPT, "userfun"),
    n.Map: Stages("[T]_n -> [f(T)]_n", "f on every element (batched: once over a batch axis)",
                  "map_glb (outermost) or map_seq; kept when it only rearranges data (a view)",
                  Refused("map " + _LOWER_FIRST)),
    n.MapSeq: _map("sequential"), n.MapGlb: _map("global ids"), n.MapWrg: _map("work-groups"),
    n.MapLcl: _map("local ids"),
    n.Reduce: Stages("(T, [U]_n) -> T, f: (T, U) -> T", "left-to-right fold (batched: numpy folds)",
                     "reduce_seq", Refused("reduce " + _LOWER_FIRST)),
    n.ReduceSeq: Stages("(T, [U]_n) -> T, f: (T, U) -> T", "left-to-right fold (batched: numpy folds)",
                        _BODY, "reduce"),
    n.ReduceAtomic: Stages("(T, [U]_n) -> T, f: (T, U) -> T", "left-to-right fold (the kernel's order is "
                           "not deterministic; f is associative with neutral init)", _BODY,
                           "atomic: the map's elements combined into the result with OpenCL atomics"),
    n.Zip: _layout("[T1]_n, ..., [Tk]_n -> [(T1, ..., Tk)]_n", "an array of tuples (Zipped)"),
    n.MakeTuple: _layout("T1, ..., Tk -> (T1, ..., Tk)", "a tuple"),
    n.Get: _layout("(T1, ..., Tk) -> Ti", "a tuple component"),
    n.At: _layout("[T]_n -> T (or a vector's lane); 0 <= i < n", "an element (range checked)"),
    n.Gather: _layout("[T]_n, [Int]_m -> [T]_m (lift.gather)", "the table's elements at the indices (range "
                      "checked)"),
    n.Split: _layout("[T]_n -> [[T]_m]_(n/m); m > 0 and m divides n", "a reshape (a view)"),
    n.Join: _layout("[[T]_m]_n -> [T]_(m n)", "a reshape (a view)"),
    n.Slide: _layout("[T]_n -> [[T]_s]_((n - s + t) / t)", "a strided window view"),
    n.Pad: _layout("[T]_n -> [T]_(l + n + r), a constant pad value", "a padded copy"),
    n.Transpose: _layout("[[T]_m]_n -> [[T]_n]_m", "swapped axes (a view)"),
    n.TransposeW: _layout("[[T]_m]_n -> [[T]_n]_m", "swapped axes (a view)"),
    n.AsVector: _layout("[S]_n -> [S<k>]_(n/k); k divides n", "a reshape: lanes last"),
    n.AsScalar: _layout("[S<k>]_n -> [S]_(k n)", "a reshape"),
    n.Let: Stages("its function's type", "its function", _BODY, "let"),
    n.Iterate: Stages("f applied k times, sizes rebound per step", "f k times, sizes rebound", _BODY, "iterate"),
    n.ToGlobal: Stages("its function's type", "its function", _BODY, "address"),
    n.ToLocal: Stages("its function's type", "its function", _BODY, "address"),
    n.ToPrivate: Stages("its function's type", "its function", _BODY, "address"),
    n.Vectorise: Stages("S<k>... -> f(S)<k>, f scalar", "f on every lane (batched: lanes a batch axis)",
                        _BODY, "userfun"),
    n.OclKernel: Stages("its function's type", "its function", _BODY,
                        Refused("an ocl_kernel inside a kernel: kernels are not nested; only the top level "
                                "may hold them")),
}

TRANSPARENT = Stages("typed as its body", "means its body", "kept, its body lowered",
                     Refused("a rewrite point is applied (lift.compile's points stage) before kernels"))


def stages_of(cls: type) -> Stages | None:
    """What the stages do with nodes of class `cls`; None when no stage knows it."""
    if cls in REGISTRY:
        return REGISTRY[cls]
    return TRANSPARENT if getattr(cls, "transparent", False) else None


def kernel_table() -> tuple[dict[type, str], dict[type, str]]:
    """The kernel traversal's cases and refusals for function nodes (`lift.memory.kernel_case`)."""
    funs = {c: s.kernel for c, s in REGISTRY.items() if issubclass(c, n.FunDecl)}
    return ({c: k.split(":")[0] for c, k in funs.items() if isinstance(k, str)},
            {c: k.reason for c, k in funs.items() if isinstance(k, Refused)})


__all__ = ["REGISTRY", "TRANSPARENT", "Refused", "Stages", "stages_of", "kernel_table"]
