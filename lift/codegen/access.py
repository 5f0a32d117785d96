"""Reads and writes through views: view leaves become C expressions and assignments.

Global memories are scalar pointers (kernel arguments); a vector element goes through an
aligned pointer cast, `((global float4*)p)[i]`, the fast form on PoCL, and `vloadN` /
`vstoreN` only where alignment is not provable (never `vload16`: it aborts PoCL 3.0, so a
16-wide unaligned read is gathered lane by lane). Local and private arrays are declared
with their element type.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import cast

from lift.arith import Arith, Cst, Var, prove_divides, substitute
from lift.codegen.c_ast import (
    Assign,
    Block,
    CBin,
    CCompound,
    CCond,
    CExpr,
    CIndex,
    CInt,
    CLane,
    CMember,
    CRaw,
    CStmt,
    CVar,
    CVecLoad,
    Decl,
    VecStore,
)
from lift.errors import UnsupportedError
from lift.types import ScalarType, TupleType, Type, VectorType, scalar_count, shape
from lift.userfun.ctypes import c_literal, c_type
from lift.views import (
    ConstLeaf,
    ExprLeaf,
    Fld,
    Lane,
    Load,
    Mem,
    Proj,
    Select,
    StructLeaf,
    VecOf,
    VectorLanes,
    View,
    leaf_type,
    resolve,
    storage_type,
)

Facts = Mapping[str, int]  # size variable -> a number it is known to be a multiple of
NO_FACTS: Facts = MappingProxyType({})


def read(v: View, use: Callable[[Mem], None] | None = None, facts: Facts = NO_FACTS) -> CExpr:
    """The C expression reading the (scalar, vector or tuple) value of view `v`."""
    return leaf_expr(resolve(v), use, facts)


def leaf_expr(leaf, use: Callable[[Mem], None] | None = None, facts: Facts = NO_FACTS) -> CExpr:
    """C for a view leaf; `use` is told every memory touched; `facts` help prove alignment."""
    match leaf:
        case Load(mem, _, tail):
            if use is not None:
                use(mem)
            return _load(leaf, tail, facts)
        case ConstLeaf(value, t):
            return constant(value, t)
        case ExprLeaf(e, _, tail):
            return _tail(CInt(e) if isinstance(e, Arith) else e, tail, None)  # an Arith: iota's index
        case Select(conds, then, orelse):
            return CCond(conds, leaf_expr(then, use, facts), leaf_expr(orelse, use, facts))
        case StructLeaf(t, parts):
            return CCompound(c_type(t), tuple(leaf_expr(p, use, facts) for p in parts))
        case VectorLanes(t, parts):
            stepped = _stepped(t, parts)
            if stepped is not None:
                return stepped
            return CCompound(c_type(t), _gathered(parts, [leaf_expr(p, use, facts) for p in parts], facts),
                             vector=True)
    raise TypeError(f"not a view leaf: {leaf!r}")


def _stepped(t: Type, parts: tuple) -> CExpr | None:
    """A vector of indices that differ from lane 0's by constants (`iota` read `as_vector`: lane k
    is i + k) as one broadcast plus a constant vector, `(int16)(i) + (int16)(0, 1, .., 15)`,
    where the lanes one by one are W integer expressions packed into a vector (arg-min over
    `zip(iota(n), x)`: 120 -> 89 us for 2^20 floats, PoCL 3.0 AVX-512); None otherwise."""
    if len(parts) < 2 or not all(isinstance(p, ExprLeaf) and isinstance(p.expr, Arith) and not p.tail
                                 for p in parts):
        return None
    base = parts[0].expr
    steps = [p.expr - base for p in parts]
    if not all(isinstance(d, Cst) for d in steps):
        return None
    vt = c_type(t)
    return CBin("+", CCompound(vt, (CInt(base),), vector=True),
                CCompound(vt, tuple(CRaw(str(cast(Cst, d).value)) for d in steps), vector=True))


def _gathered(parts: tuple, lanes: list[CExpr], facts: Facts) -> tuple[CExpr, ...]:
    """The lanes of a gather, those that read consecutive scalars of one global array taken
    from the aligned vectors holding them (`((global float16*)x)[q].s3`): the shifted windows of
    a padded stencil, gathered because one lane is under the pad's condition, then share the
    aligned loads of their neighbours instead of one scalar load per lane. Only where the
    array's length is a multiple of the width, so an aligned vector holding an element read is
    inside the array."""
    w = len(parts)
    plain = [(k, p) for k, p in enumerate(parts) if isinstance(p, Load) and not p.tail]
    if w not in (4, 8, 16) or len(plain) < 2:
        return tuple(lanes)
    k0, p0 = plain[0]
    st = storage_type(p0.mem.type)
    if p0.mem.space != "global" or not isinstance(st, ScalarType):
        return tuple(lanes)
    base = p0.flat - k0  # the index lane 0 would read
    if not all(p.mem == p0.mem and p.flat == base + k for k, p in plain):
        return tuple(lanes)
    if not aligned(w, scalar_count(p0.mem.type), facts):
        return tuple(lanes)
    j0 = next((j for j in range(w) if aligned(w, base - j, facts)), None)
    if j0 is None:
        return tuple(lanes)
    vt = c_type(VectorType(st, w))
    for k, _ in plain:
        lanes[k] = CLane(CIndex(p0.mem.name, (base - j0) // w + (j0 + k) // w, "global", vt), (j0 + k) % w)
    return tuple(lanes)


def aligned(width: int, flat: Arith, facts: Facts = NO_FACTS) -> bool:
    """Whether `width` provably divides `flat`, knowing that each size variable in `facts`
    is a multiple of its number (e.g. `as_vector(8)` of a row of `N` needs 8 | N)."""
    if prove_divides(width, flat):
        return True
    env = {name: d * Var(f"{name}_over_{d}", Cst(1), None) for name, d in facts.items()}
    return bool(env) and prove_divides(width, substitute(flat, env))


def constant(value, t: Type) -> CExpr:
    """A literal of scalar type, broadcast for a vector type."""
    if isinstance(t, VectorType):
        return CCompound(c_type(t), (CRaw(c_literal(value, t.scalar)),), vector=True)
    if isinstance(t, ScalarType):
        return CRaw(c_literal(value, t))
    raise UnsupportedError(f"a constant of type {t}")


def _element(m: Mem, flat: Arith) -> CExpr:
    """The storage element of memory `m` at row-major index `flat`."""
    st = storage_type(m.type)
    if not shape(m.type) and m.space == "private":
        return CVar(m.name)
    if m.space == "global" and isinstance(st, VectorType):
        return CIndex(m.name, flat, "global", c_type(st))
    return CIndex(m.name, flat, m.space)


def _load(leaf: Load, tail: tuple, facts: Facts = NO_FACTS) -> CExpr:
    m, flat = leaf.mem, leaf.flat
    st = storage_type(m.type)
    if tail and isinstance(tail[0], VecOf):
        return _vector_read(m, flat, tail[0].n, st, facts)
    if tail and isinstance(tail[0], Lane) and not isinstance(tail[0].k, Cst):
        if m.space == "global" and isinstance(st, VectorType):
            return _tail(CIndex(m.name, flat * st.n + tail[0].k, "global"), tail[1:], st.scalar)
        if m.space == "local" and isinstance(st, VectorType):  # a local array of vectors read as scalars
            return _tail(CIndex(m.name, flat * st.n + tail[0].k, "local", c_type(st.scalar)), tail[1:], st.scalar)
        raise UnsupportedError(f"a variable lane {tail[0].k} of {m.space} memory {m.name}")
    return _tail(_element(m, flat), tail, st)


def _vector_read(m: Mem, flat: Arith, width: int, st: Type, facts: Facts) -> CExpr:
    assert isinstance(st, ScalarType)
    vt = VectorType(st, width)
    if m.space == "global" and aligned(width, flat, facts):
        return CIndex(m.name, flat // width, "global", c_type(vt))
    if width == 16:
        parts = tuple(_element(m, flat + k) for k in range(width))
        return CCompound(c_type(vt), parts, vector=True)
    return CVecLoad(width, m.name, flat)


def _tail(e: CExpr, tail: tuple, t: Type | None) -> CExpr:
    for s in tail:
        match s:
            case Fld(k):
                e = CMember(e, k)
            case Lane(k) if isinstance(k, Cst):
                e = CLane(e, k.value)
            case _:
                raise UnsupportedError(f"access step {s} on a C value")
    return e


# ---------------------------------------------------------------------- writes


def write(dest: View, value: CExpr, t: Type, out: Block, fresh: Callable[[str], str],
          use: Callable[[Mem], None] | None = None, comment: str = "", facts: Facts = NO_FACTS) -> None:
    """Append statements storing `value` (of type `t`) through the destination view; a tuple of
    vectors component by component (each through its own lanes: `as_scalar` of tuples)."""
    if isinstance(t, TupleType) and t.elems and all(isinstance(e, VectorType) for e in t.elems):
        src = _named(value, t, out, fresh)
        for k, et in enumerate(t.elems):
            write(Proj(dest, k), _member(src, k), et, out, fresh, use, comment, facts)
        return
    _write_leaf(resolve(dest), value, t, out, fresh, use, comment, facts)


def _write_leaf(leaf, value: CExpr, t: Type, out: Block, fresh, use, comment: str, facts: Facts) -> None:
    match leaf:
        case Load(mem, _, tail):
            if use is not None:
                use(mem)
            out.add(_store(leaf, tail, value, comment, facts))
        case StructLeaf(_, parts):
            assert isinstance(t, TupleType)
            src = _named(value, t, out, fresh)
            for k, (p, et) in enumerate(zip(parts, t.elems)):
                _write_leaf(p, _member(src, k), et, out, fresh, use, comment, facts)
        case VectorLanes(vt, parts):
            src = _named(value, vt, out, fresh)
            for k, p in enumerate(parts):
                _write_leaf(p, CLane(src, k), vt.scalar, out, fresh, use, comment, facts)
        case _:
            raise UnsupportedError(f"cannot write through a {type(leaf).__name__} (padding or a constant)")


def _member(src: CExpr, k: int) -> CExpr:
    if isinstance(src, CCompound) and not src.vector:
        return src.parts[k]
    return CMember(src, k)


def _named(value: CExpr, t: Type, out: Block, fresh) -> CExpr:
    if isinstance(value, CVar | CCompound):
        return value
    name = fresh("v")
    out.add(Decl(c_type(t), name, value))
    return CVar(name)


def _store(leaf: Load, tail: tuple, value: CExpr, comment: str, facts: Facts) -> CStmt:
    m, flat = leaf.mem, leaf.flat
    st = storage_type(m.type)
    if tail and isinstance(tail[0], VecOf):
        width = tail[0].n
        if m.space == "global" and aligned(width, flat, facts):
            vt = VectorType(cast(ScalarType, st), width)
            return Assign(CIndex(m.name, flat // width, "global", c_type(vt)), value, comment)
        return VecStore(width, value, m.name, flat)
    return Assign(_load(leaf, tail, facts), value, comment)


def divisibility(conditions) -> dict[str, int]:
    """`facts` from size conditions: for each size variable, the lcm of the constants that
    must divide it (`SizeCondition("divides", 8, N)` from `as_vector(8)` of `[Float]N`)."""
    out: dict[str, int] = {}
    for c in conditions:
        if c.kind == "divides" and isinstance(c.a, Cst) and isinstance(c.b, Var) and c.a.value > 0:
            out[c.b.name] = math.lcm(out.get(c.b.name, 1), c.a.value)
    return out


__all__ = ["read", "write", "leaf_expr", "constant", "leaf_type", "aligned", "divisibility", "Facts"]
