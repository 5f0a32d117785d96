"""Runtime indices in a kernel: the `lift.views.Loaded` variables of a view leaf become C ints.

A gather's view (`lift.gather`) resolves to a leaf whose index holds a `Loaded` variable,
which stands for the value read from the gather's index array. Before the statement that reads the
leaf, each is declared, its value clamped into the table (`lift.gather` says why):

    int gi0 = clamp(ids[gl_0], 0, N - 1);   /* gather: index of ... */
    out[gl_0] = table[gi0];

and replaced in the leaf by a plain variable of the same range. The index read is an ordinary
access of the C AST, so the barrier pass (its probe) sees it.
"""

from __future__ import annotations

from typing import Any, cast

from lift.arith import Arith, Var, substitute
from lift.codegen.c_ast import CCall, CInt, Decl
from lift.views import Access, ConstLeaf, ExprLeaf, Lane, Load, Loaded, Select, StructLeaf, VectorLanes, loaded_in


def bind(kg: Any, leaf: Any) -> Any:
    """`leaf` with its runtime indices declared in `kg`'s current block (`kg`: a
    `lift.codegen.kernel.KernelGen`; its `read` binds the runtime indices of the index reads)."""
    found: dict[str, Loaded] = {}
    _collect(leaf, found)
    if not found:
        return leaf
    env: dict[str, Var] = {}
    for name, v in found.items():
        idx_view, pos = v.at
        value = kg.read(Access(idx_view, pos))
        c = kg.fresh("gi")
        kg.block.add(Decl("int", c, CCall("clamp", (value, CInt(cast(Arith, v.lo)), CInt(cast(Arith, v.hi)))),
                          comment="gather: a runtime index"))
        env[name] = Var(c, v.lo, v.hi)
    return _substituted(leaf, env)


def _collect(leaf: Any, out: dict[str, Loaded]) -> None:
    for e in _exprs(leaf):
        for v in loaded_in(e):
            out.setdefault(v.name, v)
    for p in _parts(leaf):
        _collect(p, out)


def _exprs(leaf: Any) -> list:
    match leaf:
        case Load(_, indices, tail):
            return list(indices) + [s.k for s in tail if isinstance(s, Lane)]
        case Select(conds, _, _):
            return [e for c, _, hi in conds for e in (c, hi) if e is not None]
    return []


def _parts(leaf: Any) -> tuple:
    match leaf:
        case Select(_, then, orelse):
            return (then, orelse)
        case StructLeaf(_, parts) | VectorLanes(_, parts):
            return parts
    return ()


def _substituted(leaf: Any, env: dict[str, Var]) -> Any:
    def s(e: Any) -> Any:
        return None if e is None else substitute(e, env)

    match leaf:
        case Load(mem, indices, tail):
            return Load(mem, tuple(s(i) for i in indices),
                        tuple(Lane(s(x.k)) if isinstance(x, Lane) else x for x in tail))
        case Select(conds, then, orelse):
            return Select(tuple((s(c), lo, s(hi)) for c, lo, hi in conds), _substituted(then, env),
                          _substituted(orelse, env))
        case StructLeaf(t, parts):
            return StructLeaf(t, tuple(_substituted(p, env) for p in parts))
        case VectorLanes(t, parts):
            return VectorLanes(t, tuple(_substituted(p, env) for p in parts))
        case ConstLeaf() | ExprLeaf():
            return leaf
    return leaf


__all__ = ["bind"]
