"""`gather(table, idx)`: an array read at indices computed from data (RISE's `idx`, LIFT's array
access with a runtime index).

    gather(table, idx) == map(i => table[i]) << idx       table: [T]n, idx: [Int]m  ->  [T]m

`T` may itself be an array (2LUT's row gathers: `gather(lut, ids)` is `[[Float]d]m`). The whole
pattern lives here: its node class, its family (`define`), its constructor and every stage's case
(typecheck, interpret, batched, view, show), registered on import (lift.typecheck imports this
module); the context case comes from the family's "opaque" trait and the kernel traversal's from its
`emit` ("layout"):

- type (`lift.typecheck.infer`): `gather_type`;
- interpretation: `gather_values` (element-wise) and `gather_batched` (batched, numpy fancy
  indexing over the batch axes); an index outside `0..n-1` is a `LiftValueError` naming the node;
- views (`lift.layout.layout_view` -> `GatherV`): element `i` of the view is the
  table's element at a `lift.views.Loaded` index, a variable of range `0..n-1` that stands for the value read
  from `idx` at `i` (its `at` view); the code generator (`lift.codegen.gather.bind`) declares it
  before the statement that reads through it, `int g = clamp(idx[..], 0, n - 1);`, so the view
  system carries a runtime index into the access and the barrier pass sees the read of `idx`;
- lowering and memory: a layout pattern (a view, never a copy) that is not invertible (it is never
  written through).

Out-of-range indices in compiled programs: an index array that is a program input is checked on
the host before any launch (`index_inputs`, `check_indices`: a `LiftValueError`, as the
interpreter raises). An index the program computes itself is clamped to `0..n-1` in the kernel:
the program never reads outside the table's memory, and such an index reads the nearest end of the
table where the interpreter raises `LiftValueError` (a program whose computed indices can leave the
table's range has no meaning to compare against).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from lift.arith import Arith, Var, evaluate
from lift.errors import LiftTypeError, LiftValueError, user_loc
from lift.ir import nodes as n
from lift.ir.build import apply
from lift.ir.layoutfun import is_layout_fun
from lift.ir.registry import define, is_wrapper, register
from lift.types import ArrayType, Int, Type
from lift.views import Idx, Leaf, Step, View, first_index, loaded_index, resolve

# ------------------------------------------------------------ the node and its family


@n.node
class Gather(n.Pattern):
    """`gather(table, idx)`: the elements of `table` at the indices that the integer array `idx`
    holds (`map(i => table[i]) << idx`, RISE's `idx` with a runtime index): `[T]n, [Int]m -> [T]m`."""

    @property
    def arity(self) -> int:
        return 2


define("gather", Gather, typecheck="[T]_n, [Int]_m -> [T]_m (lift.gather)",
       interpret="the table's elements at the indices (range checked)", lower="kept",
       kernel="layout", layout="select", traits=("opaque",), emit="layout")


def gather(table: Any, *idx: Any, label: str | None = None) -> Any:
    """`gather(table, idx)`: the elements of `table` at the indices that `idx` holds, read from
    data (`map(i => table[i]) << idx`): `[T]n, [Int]m -> [T]m`; `T` may be an array (rows).
    `gather(table)` is the function of the indices: `map(gather(lut)) << ids`. An index outside
    `0..n-1` is a `LiftValueError` (in compiled programs too: see this module's docstring)."""
    if not idx:
        return lambda i: gather(table, i, label=label)
    if len(idx) != 1:
        raise LiftTypeError(f"gather takes a table and one index array, got {1 + len(idx)} arguments",
                            loc=user_loc())
    return apply(Gather(label=label, loc=user_loc()), (table, idx[0]), label=label)


# ------------------------------------------------------------------------ types


def gather_type(ts: Sequence[Type], call: n.Node) -> Type:
    """`[T]n, [Int]m -> [T]m`."""
    table, idx = ts
    if not isinstance(table, ArrayType):
        raise LiftTypeError(f"gather expects an array to read from, got {table}", node=call,
                            loc=getattr(call, "loc", None), got=table)
    if not (isinstance(idx, ArrayType) and idx.elem == Int):
        raise LiftTypeError(f"gather expects an array of Int indices, got {idx}", node=call,
                            loc=getattr(call, "loc", None), expected=ArrayType(Int, Var("m")), got=idx,
                            hint="the indices are [Int]m: map(i => table[i]) << idx")
    return ArrayType(table.elem, idx.size)


# ---------------------------------------------------------------- interpretation


def _checked(idx: np.ndarray, size: int, node: Any) -> np.ndarray:
    idx = np.asarray(idx)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
        bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
        raise LiftValueError(f"gather index {bad} out of range for a table of length {size}", node=node,
                             hint="every index must lie in 0..n-1 for a table of n elements")
    return idx.astype(np.intp, copy=False)


def gather_values(table: Any, idx: Any, node: Any) -> Any:
    """Element-wise: the table's elements at the indices (a `Zipped` table: each component's)."""
    from lift.interpret.values import Zipped, length

    k = _checked(idx, length(table), node)
    if isinstance(table, Zipped):
        return Zipped(tuple(gather_values(p, k, node) for p in table.parts), table.ndim)
    return np.asarray(table)[k]


def gather_batched(table: Any, idx: Any, d: int, node: Any) -> Any:
    """Batched at depth `d`: `table` is (batch..., n, elem...) and `idx` (batch..., m), each batch
    axis full or 1 (broadcast); the result is (batch..., m, elem...)."""
    from lift.interpret.values import Zipped

    if isinstance(table, Zipped):
        return Zipped(tuple(gather_batched(p, idx, d, node) for p in table.parts), table.ndim)
    t, i = np.asarray(table), np.asarray(idx)
    k = _checked(i, t.shape[d], node)
    if d == 0:
        return t[k]
    batch = np.broadcast_shapes(t.shape[:d], k.shape[:d])
    t = np.broadcast_to(t, batch + t.shape[d:])
    k = np.broadcast_to(k, batch + k.shape[d:])
    grids = np.ix_(*[np.arange(b) for b in batch])
    return t[tuple(g[..., None] for g in grids) + (k,)]


# ------------------------------------------------------------------------ views


@dataclass(frozen=True, slots=True)
class GatherV(View):
    """`gather(table, idx)`: element `i` is the table's element at the index read from `idx` at
    `i` (a `lift.views.Loaded` variable of range 0..n-1); `m` indices into `n` elements."""

    table: View
    idx: View
    n: Arith
    m: Arith

    def resolve_at(self, stack: tuple[Step, ...]) -> Leaf:
        i, rest = first_index(stack, self)
        return resolve(self.table, (Idx(loaded_index(self.idx, i, self.m, self.n)),) + rest)


# ------------------------------------------------------------------- host checks


def index_inputs(program: n.Lambda) -> tuple[tuple[int, Arith], ...]:
    """(parameter position, table length) of each program input whose elements a gather reads as
    indices: the input itself or a layout of it (`gather(t, x)`, `gather(t, join << x)`), or the
    elements a map binds from it (`map(r => gather(t, r)) << x`)."""
    source: dict[int, int] = {p.id: k for k, p in enumerate(program.params)}
    found: dict[int, Arith] = {}

    def root(e: n.Expr) -> int | None:
        while isinstance(e, n.FunCall) and len(e.args) == 1 and is_layout_fun(e.f):
            e = e.args[0]
        return source.get(e.id) if isinstance(e, n.Param) else None

    def visit(e: n.Expr) -> None:
        if not isinstance(e, n.FunCall):
            return
        for a in e.args:
            visit(a)
        roots = [root(a) for a in e.args]
        if isinstance(e.f, Gather) and roots[1] is not None and isinstance(e.args[0].type, ArrayType):
            found[roots[1]] = e.args[0].type.size
        bind(e.f, roots)

    def bind(f: n.FunDecl, roots: list[int | None]) -> None:
        match f:
            case n.Lambda(params, body):
                for p, r in zip(params, roots):
                    if r is not None:
                        source[p.id] = r
                visit(body)
            case n.AbstractMap(f=g):
                bind(g, roots[:1])
            case n.AbstractReduce(f=g):
                bind(g, [None, roots[1]])
            case n.Let(g):
                bind(g, roots)
            case _ if is_wrapper(f):
                bind(f.f, roots)
            case _ if getattr(f, "transparent", False):
                bind(cast(Any, f).f, roots)

    visit(program.body)
    return tuple(sorted(found.items(), key=lambda kv: kv[0]))


def check_indices(checks: Sequence[tuple[int, Arith]], args: Sequence[Any], sizes: Mapping[str, int]) -> None:
    """A `LiftValueError` when an index input holds a value outside its table (host side)."""
    for k, size in checks:
        bound = evaluate(size, dict(sizes))
        a = np.asarray(args[k])
        if a.size and (int(a.min()) < 0 or int(a.max()) >= bound):
            bad = int(a.min()) if int(a.min()) < 0 else int(a.max())
            raise LiftValueError(f"argument {k} holds the gather index {bad}, out of range for a table of "
                                 f"length {bound}", hint="every index must lie in 0..n-1 for a table of n elements")


# ---------------------------------------------------- the family's cases (lift.ir.registry)


@register(Gather, stage="typecheck")
def _typecheck(f: Gather, ts: list[Type], call: n.Node, conds: list[Any]) -> Type:
    return gather_type(ts, call)


@register(Gather, stage="interpret")
def _interpret(ev: Any, f: Gather, vals: list[Any], node: Any, env: dict[int, Any]) -> Any:
    return gather_values(vals[0], vals[1], node)


@register(Gather, stage="show")
def _show(p: Any, f: Gather, lab: str) -> str:
    return f"gather{lab}"


@register(Gather, stage="view")
def _view(f: Gather, args: list[View], types: list[Type], env: dict[int, Any]) -> View:
    table, idx = cast(ArrayType, types[0]), cast(ArrayType, types[1])
    return GatherV(args[0], args[1], table.size, idx.size)


@register(Gather, stage="batched")
def _batched(ev: Any, f: Gather, vals: list[Any], node: Any, env: dict[int, Any], bs: tuple[Any, ...]) -> Any:
    return gather_batched(vals[0], vals[1], len(bs), node)


__all__ = ["Gather", "gather", "GatherV", "gather_type", "gather_values", "gather_batched", "index_inputs",
           "check_indices"]
