"""Views (thesis 2.3.2.2): layout transformations as index arithmetic, never as copies.

A view describes where the elements of a value live. Its root is a `Mem` (a buffer, a
local or private array, or a private variable); layout patterns wrap views (`SplitV`,
`JoinV`, `TransposeV`, `SlideV`, `PadV`, `ZipV`, ...) and a map or reduce parameter is an
`Access` of its array at the loop variable. `resolve(view)` consumes a view bottom-up with
an access stack, as the thesis describes, and returns a `Leaf`: a memory location with one
simplified index expression per memory dimension (`Load`), a constant (`ConstLeaf`), a
padding conditional (`Select`), a tuple read from several memories (`StructLeaf`) or a
vector built lane by lane from scalars (`VectorLanes`).

Input views read a value; output views say where a producer writes, e.g. the producer
under a `join` writes through `SplitV` of the join's destination. `lift.layout` builds both
from the IR.
Postcondition of `resolve`: every index is an `Arith` simplified by `lift.arith`, and a
`Load` always has exactly one index per array dimension of its memory.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lift.arith import Arith, Cst, Var, free_vars, max_, min_, mod, prove_divides, prove_lt, prove_nonneg, substitute
from lift.arith.lanes import lane_free
from lift.errors import UnsupportedError
from lift.types import ArrayType, Int, ScalarType, TupleType, Type, VectorType, base_type, shape

_loaded = itertools.count()  # the names of runtime index variables

# ------------------------------------------------------------------ access steps


@dataclass(frozen=True, slots=True)
class Idx:
    """Index `i` of an array dimension."""

    i: Arith


@dataclass(frozen=True, slots=True)
class Fld:
    """Component `k` of a tuple."""

    k: int


@dataclass(frozen=True, slots=True)
class Lane:
    """Lane `k` of a vector."""

    k: Arith


@dataclass(frozen=True, slots=True)
class VecOf:
    """`n` consecutive scalars read (or written) as one vector."""

    n: int


Step = Idx | Fld | Lane | VecOf

# ----------------------------------------------------------------------- views


class View:
    """Base of views. `resolve` knows the views defined here; a view defined beside its pattern
    (a gather's, in `lift.gather`) resolves itself (`resolve_at`)."""

    __slots__ = ()

    def resolve_at(self, stack: tuple[Step, ...]) -> Leaf:
        """The leaf this view reads with access `stack` (the views `resolve` does not know)."""
        raise UnsupportedError(f"no view resolution for {self!r}")


@dataclass(frozen=True, slots=True)
class Mem(View):
    """A memory: `name` in address `space`, holding a value of `type` (storage: its base type)."""

    name: str
    type: Type
    space: str  # "global", "local" or "private"


@dataclass(frozen=True, slots=True)
class ConstV(View):
    """A constant (a literal, or the value of a padding); every element reads `value`."""

    value: Any
    type: Type


@dataclass(frozen=True, slots=True)
class ExprV(View):
    """A scalar, vector or tuple value given by a C expression (an inlined user-function call)."""

    expr: Any
    type: Type


@dataclass(frozen=True, slots=True)
class Access(View):
    """Element `i` of an array view (a map or reduce parameter, or `x[i]`)."""

    v: View
    i: Arith


@dataclass(frozen=True, slots=True)
class SplitV(View):
    v: View
    m: Arith


@dataclass(frozen=True, slots=True)
class JoinV(View):
    """`join` of `v`, whose rows have `m` elements."""

    v: View
    m: Arith


@dataclass(frozen=True, slots=True)
class TransposeV(View):
    v: View


@dataclass(frozen=True, slots=True)
class SlideV(View):
    v: View
    size: Arith
    step: Arith


@dataclass(frozen=True, slots=True)
class PadV(View):
    """`pad(left, right, value)` of `v`, an array of `n` elements; with a boundary `mode`
    ("clamp", "mirror", "wrap") an element outside reads `v` at its re-indexed position."""

    v: View
    left: Arith
    n: Arith
    value: Any
    mode: str = "constant"


@dataclass(frozen=True, slots=True)
class SoA(View):
    """A tuple whose component `k` is `vs[k]`, taken after `depth` array indices (zip: depth 1)."""

    vs: tuple[View, ...]
    depth: int
    type: Type  # the element type read when no component is selected


@dataclass(frozen=True, slots=True)
class Proj(View):
    """Component `k` of the tuples of `v`, selected after `depth` array indices (get: depth 0)."""

    v: View
    k: int
    depth: int = 0


@dataclass(frozen=True, slots=True)
class AsVectorV(View):
    v: View
    n: int


@dataclass(frozen=True, slots=True)
class AsScalarV(View):
    v: View
    n: int


@dataclass(frozen=True, slots=True)
class LaneV(View):
    """Lane `k` of a vector view."""

    v: View
    k: Arith


@dataclass(frozen=True, slots=True)
class IotaV(View):
    """`iota(n)`: element `i` is the integer `i` itself (an `ExprLeaf` whose expression is the
    index, an `Arith`), read from no memory."""

    n: Arith


@dataclass(frozen=True, slots=True, eq=False)
class MapV(View):
    """`map(g) << v` for a layout-only `g`: element `i` is `fn(Access(v, i))`."""

    v: View
    fn: Callable[[View], View] = field(compare=False)


# ---------------------------------------------------------------- runtime indices


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Loaded(Var):
    """An index read from data: a variable of range `lo..hi` standing for the value read through
    `at` (an index view and a position: an element of an index array), which the code generator declares
    before the statement that uses it. `deps`: the variables the read's position depends on."""

    at: Any = field(default=None, compare=False)
    deps: frozenset = field(default=frozenset(), compare=False)


def loaded_index(idx_view: Any, pos: Arith, m: Arith, size: Arith) -> Loaded:
    """The runtime index read from an index view at `pos` (of `m` indices) into a
    table of `size` elements; a position that is not provably in range (a padded gather's
    outside) is clamped, so the read itself stays inside the index array."""
    if not (prove_nonneg(pos) and prove_lt(pos, m)):
        pos = max_(min_(pos, m - 1), Cst(0))
    return Loaded(f"_loaded{next(_loaded)}", Cst(0), size - 1, at=(idx_view, pos), deps=frozenset(deps(pos)))


def deps(e: Arith) -> set[Var]:
    """The variables `e` depends on, looking through the positions of loaded indices."""
    out: set[Var] = set()
    for v in free_vars(e):
        out.add(v)
        if isinstance(v, Loaded):
            out |= v.deps
    return out


def loaded_in(e: Arith) -> list[Loaded]:
    """The loaded indices that `e` mentions."""
    return [v for v in free_vars(e) if isinstance(v, Loaded)]


# ---------------------------------------------------------------------- leaves


@dataclass(frozen=True, slots=True)
class Load:
    """Memory `mem` at one index per array dimension, then tuple fields / a lane / a vector."""

    mem: Mem
    indices: tuple[Arith, ...]
    tail: tuple[Step, ...] = ()

    @property
    def flat(self) -> Arith:
        """The row-major index into the memory's storage elements."""
        return flat_index(self.mem.type, self.indices)


@dataclass(frozen=True, slots=True)
class ConstLeaf:
    value: Any
    type: Type


@dataclass(frozen=True, slots=True)
class ExprLeaf:
    """A value computed in place: a C expression, or an `Arith` (an index, read as an int)."""

    expr: Any
    type: Type
    tail: tuple[Step, ...] = ()


@dataclass(frozen=True, slots=True)
class Select:
    """`then` when every `0 <= c < hi` in `conds` holds, else `orelse` (pad, thesis 4.2.3.3)."""

    conds: tuple[tuple[Arith, bool, Arith | None], ...]  # (c, check 0 <= c, c < hi unless None)
    then: Any
    orelse: Any


@dataclass(frozen=True, slots=True)
class StructLeaf:
    type: TupleType
    parts: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class VectorLanes:
    """A vector of `type` built lane by lane from scalar leaves."""

    type: VectorType
    parts: tuple[Any, ...]


Leaf = Load | ConstLeaf | ExprLeaf | Select | StructLeaf | VectorLanes


def flat_index(t: Type, indices: tuple[Arith, ...]) -> Arith:
    """Row-major flattening of `indices` over the array dimensions of `t`."""
    dims = shape(t)
    out: Arith = Cst(0)
    for i, d in zip(indices, dims):
        out = out * d + i
    return out


def storage_type(t: Type) -> Type:
    """The element stored in a memory of type `t`: its base type."""
    return base_type(t)


# ------------------------------------------------------------------- resolution


def resolve(v: View, stack: tuple[Step, ...] = ()) -> Leaf:
    """The leaf that `v` reads (or writes) after the accesses in `stack`, outermost first."""
    match v:
        case Mem():
            return _mem_leaf(v, stack)
        case ConstV(value, t):
            return ConstLeaf(value, _const_type(t, stack))
        case ExprV(expr, t):
            return ExprLeaf(expr, t, stack)
        case Access(w, i):
            return resolve(w, (Idx(i),) + stack)
        case LaneV(w, k):
            return resolve(w, stack + (Lane(k),))
        case SplitV(w, m):
            i, j, rest = _two(stack, v)
            return resolve(w, (Idx(i * m + j),) + rest)
        case JoinV(w, m):
            k, rest = first_index(stack, v)
            return resolve(w, (Idx(k // m), Idx(k % m)) + rest)
        case TransposeV(w):
            i, j, rest = _two(stack, v)
            return resolve(w, (Idx(j), Idx(i)) + rest)
        case SlideV(w, _, step):
            i, j, rest = _two(stack, v)
            return resolve(w, (Idx(i * step + j),) + rest)
        case PadV(w, left, size, value, mode):
            i, rest = first_index(stack, v)
            if mode != "constant":
                return _boundary(w, i - left, size, mode, rest)
            return _pad(w, i - left, size, value, rest)
        case SoA(vs, depth, t):
            return _soa(vs, depth, t, stack)
        case Proj(w, k, depth):
            head, rest = stack[:depth], stack[depth:]
            return resolve(w, head + (Fld(k),) + rest)
        case AsVectorV(w, width):
            return _as_vector(w, width, stack, v)
        case AsScalarV(w, width):
            k, rest = first_index(stack, v)
            return resolve(w, (Idx(k // width), Lane(k % width)) + rest)
        case MapV(w, fn):
            i, rest = first_index(stack, v)
            return resolve(fn(Access(w, i)), rest)
        case IotaV():
            i, rest = first_index(stack, v)
            return ExprLeaf(i, Int, rest)
    return v.resolve_at(stack)


def first_index(stack: tuple[Step, ...], v: View) -> tuple[Arith, tuple[Step, ...]]:
    if not stack or not isinstance(stack[0], Idx):
        raise UnsupportedError(f"{type(v).__name__} read without an array index (stack {stack})")
    return stack[0].i, stack[1:]


def _two(stack: tuple[Step, ...], v: View) -> tuple[Arith, Arith, tuple[Step, ...]]:
    i, rest = first_index(stack, v)
    j, rest = first_index(rest, v)
    return i, j, rest


def _mem_leaf(m: Mem, stack: tuple[Step, ...]) -> Leaf:
    d = len(shape(m.type))
    idx = [s for s in stack[:d] if isinstance(s, Idx)]
    if len(idx) < d:
        raise UnsupportedError(f"memory {m.name} of type {m.type} read with {len(idx)} of {d} indices")
    tail = stack[d:]
    if tail and isinstance(tail[0], VecOf) and isinstance(storage_type(m.type), VectorType):
        tail = tail[1:]  # a vector read from vector storage is a plain element read
    return Load(m, tuple(s.i for s in idx), tail)


def _pad(w: View, c: Arith, size: Arith, value: Any, rest: tuple[Step, ...]) -> Leaf:
    inner = resolve(w, (Idx(c),) + rest)
    low, high = prove_nonneg(c), prove_lt(c, size)
    if low and high:
        return inner
    const = ConstLeaf(value, _leaf_type(inner))
    return Select(((c, not low, None if high else size),), inner, const)


def _boundary(w: View, c: Arith, size: Arith, mode: str, rest: tuple[Step, ...]) -> Leaf:
    """Position `c` of `w` (`size` elements) under a boundary `mode`: where `c` may lie outside,
    a selection as a zero pad's, reading `w` at `c` inside and at the re-indexed position outside
    (`c < 0 ? w[below] : w[above]`), so the inside stays a plain read that vectorises (PoCL calls
    a library for integer min and max); with `c` provably within one length of the array (pads no
    wider than it); otherwise the arithmetic of `boundary_index`."""
    low, high = prove_nonneg(c), prove_lt(c, size)
    if low and high:
        return resolve(w, (Idx(c),) + rest)
    below: Arith
    if mode == "clamp":
        below, above = Cst(0), size - 1
    elif prove_nonneg(c + size) and prove_lt(c, size * 2):
        below, above = (c + size, c - size) if mode == "wrap" else (-1 - c, size * 2 - 1 - c)
    else:
        return resolve(w, (Idx(boundary_index(mode, c, size)),) + rest)

    def at(j: Arith) -> Leaf:
        return resolve(w, (Idx(j),) + rest)

    if low:
        return Select(((c, False, size),), at(c), at(above))
    if high:
        return Select(((c, True, None),), at(c), at(below))
    return Select(((c, True, size),), at(c), Select(((c, True, None),), at(above), at(below)))


def boundary_index(mode: str, c: Arith, size: Arith) -> Arith:
    """The element of an array of `size` elements that position `c` (any integer) reads under a
    boundary `mode`, as numpy.pad's edge, symmetric and wrap modes pick it:
    clamp `min(max(c, 0), size - 1)`; wrap `c mod size`; mirror `min(m, 2 size - 1 - m)` with
    `m = c mod 2 size` (floor modulo: `lift_floormod` where `c` may be negative)."""
    if prove_nonneg(c) and prove_lt(c, size):
        return c
    match mode:
        case "clamp":
            return min_(max_(c, Cst(0)), size - 1)
        case "wrap":
            return mod(c, size)
        case "mirror":
            m = mod(c, size * 2)
            return min_(m, size * 2 - 1 - m)
    raise UnsupportedError(f"no boundary mode {mode!r}")


def _soa(vs: tuple[View, ...], depth: int, t: Type, stack: tuple[Step, ...]) -> Leaf:
    head, rest = stack[:depth], stack[depth:]
    if rest and isinstance(rest[0], Fld):
        return resolve(vs[rest[0].k], head + rest[1:])
    if rest:
        raise UnsupportedError(f"a tuple read with {rest[0]}")
    assert isinstance(t, TupleType)
    return StructLeaf(t, tuple(resolve(x, head) for x in vs))


def _as_vector(w: View, width: int, stack: tuple[Step, ...], v: View) -> Leaf:
    i, rest = first_index(stack, v)
    if rest and isinstance(rest[0], Lane):
        return resolve(w, (Idx(i * width + rest[0].k),) + rest[1:])
    lane = Var("_lane", Cst(0), Cst(width - 1))
    probe = resolve(w, (Idx(i * width + lane),) + rest)
    vec = None if _loads_by_lane(probe, lane) else _vector_leaf(probe, lane, width)
    if vec is not None:
        return vec
    parts = tuple(resolve(w, (Idx(i * width + k),) + rest) for k in range(width))
    scalar = _leaf_type(parts[0])
    assert isinstance(scalar, ScalarType)
    return VectorLanes(VectorType(scalar, width), parts)


def _vector_leaf(leaf: Leaf, lane: Var, width: int) -> Leaf | None:
    """The `width` lanes of `leaf` (which reads lane `lane`) as one vector leaf: a load of
    consecutive scalars, a constant, or a pad's selection whose conditions are the same for
    every lane (`lane_free`); None when the lanes must be gathered one by one."""
    match leaf:
        case Load(mem, indices, ()):
            load = Load(mem, tuple(lane_free(x, lane, width) for x in indices))
            if _contiguous(load, lane):
                return Load(mem, tuple(substitute(x, {lane.name: 0}) for x in load.indices), (VecOf(width),))
        case Load(mem, indices, (Lane(k),)) if _storage_width(mem) == width:
            idx = tuple(lane_free(x, lane, width) for x in indices)
            if lane_free(k, lane, width) == lane and not any(lane in _vars(x) for x in idx):
                return Load(mem, idx)  # the lanes of one stored vector, in order: the vector itself
        case ConstLeaf(value, t) if isinstance(t, ScalarType):
            return ConstLeaf(value, VectorType(t, width))
        case Select(conds, then, orelse):
            free = tuple(_lane_free_cond(c, lo, hi, lane, width) for c, lo, hi in conds)
            if any(lane in _vars(x) for c, _, hi in free for x in (c, hi) if x is not None):
                return None
            tl, o = _vector_leaf(then, lane, width), _vector_leaf(orelse, lane, width)
            if tl is not None and o is not None:
                return Select(free, tl, o)
    return None


def _loads_by_lane(leaf: Leaf, lane: Var) -> bool:
    """Whether a runtime index of `leaf` (a gather's) is read at a position that depends on the
    lane: its lanes are then read one by one."""
    match leaf:
        case Load(_, indices, tail):
            exprs = list(indices) + [s.k for s in tail if isinstance(s, Lane)]
            return any(lane in x.deps for e in exprs for x in loaded_in(e))
        case Select(conds, then, orelse):
            return any(lane in x.deps for c, _, hi in conds for e in (c, hi) if e is not None
                       for x in loaded_in(e)) or _loads_by_lane(then, lane) or _loads_by_lane(orelse, lane)
        case StructLeaf(_, parts) | VectorLanes(_, parts):
            return any(_loads_by_lane(p, lane) for p in parts)
    return False


def _storage_width(m: Mem) -> int:
    st = storage_type(m.type)
    return st.n if isinstance(st, VectorType) else 0


def _lane_free_cond(c: Arith, lo: bool, hi: Arith | None, lane: Var, width: int) -> tuple:
    """A pad condition `0 <= c < hi` of lane `lane`; `c = a + lane` with `width` dividing `a`
    and `hi` holds for every lane exactly when it holds for `a`."""
    c = lane_free(c, lane, width)
    hi = None if hi is None else lane_free(hi, lane, width)
    rest = c - lane
    if lane not in _vars(rest) and prove_divides(width, rest) and (hi is None or prove_divides(width, hi)):
        c = rest
    return c, lo, hi


def _contiguous(load: Load, lane: Var) -> bool:
    """Whether the lanes are consecutive scalars of the memory: in its innermost dimension, or
    across rows when the row-major flat index is `start + lane` (a vector written through
    `split(4) << as_scalar`: two rows of 4 are 8 consecutive scalars)."""
    if not load.indices or isinstance(storage_type(load.mem.type), VectorType):
        return False
    *outer, last = load.indices
    if any(lane in _vars(x) for x in outer):
        flat = load.flat
        return (flat - substitute(flat, {lane.name: 0})) == lane
    return (last - substitute(last, {lane.name: 0})) == lane


def _vars(e: Arith) -> set:
    return deps(e)  # the free variables, and those the positions of runtime indices depend on


def _const_type(t: Type, stack: tuple[Step, ...]) -> Type:
    """The type of a constant of type `t` read with `stack` (every element and lane is the same)."""
    for s in stack:
        match s:
            case Idx() if isinstance(t, ArrayType):
                t = t.elem
            case Lane() if isinstance(t, VectorType):
                t = t.scalar
            case VecOf(width) if isinstance(t, ScalarType):
                t = VectorType(t, width)
            case _:
                raise UnsupportedError(f"a constant of type {t} read with {s}")
    return t


def _leaf_type(leaf: Leaf) -> Type:
    """The C-level type a leaf reads."""
    match leaf:
        case Load(mem, _, tail):
            return _tail_type(storage_type(mem.type), tail)
        case ConstLeaf(_, t) | StructLeaf(t, _) | VectorLanes(t, _):
            return t
        case ExprLeaf(_, t, tail):
            return _tail_type(t, tail)
        case Select(_, then, _):
            return _leaf_type(then)
    raise TypeError(leaf)


def leaf_type(leaf: Leaf) -> Type:
    """The type of the value a leaf reads."""
    return _leaf_type(leaf)


def _tail_type(t: Type, tail: tuple[Step, ...]) -> Type:
    for s in tail:
        match s:
            case Fld(k):
                assert isinstance(t, TupleType)
                t = t.elems[k]
            case Lane():
                assert isinstance(t, VectorType)
                t = t.scalar
            case VecOf(width):
                assert isinstance(t, ScalarType)
                t = VectorType(t, width)
    return t


__all__ = [
    "Idx", "Fld", "Lane", "VecOf", "View", "Mem", "ConstV", "ExprV", "Access", "SplitV", "JoinV",
    "TransposeV", "SlideV", "PadV", "SoA", "Proj", "AsVectorV", "AsScalarV", "LaneV", "MapV", "IotaV",
    "Load", "ConstLeaf", "ExprLeaf", "Select", "StructLeaf", "VectorLanes", "resolve", "leaf_type", "boundary_index",
    "flat_index", "storage_type", "first_index", "Loaded", "loaded_index", "deps", "loaded_in",
]
