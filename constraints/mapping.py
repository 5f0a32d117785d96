"""The parallel-mapping model (thesis 5.3): one variable per map, Table 5.2 codes.

Codes: 0 `map_seq`, 1 fused with the enclosing map, 10+d `map_lcl(d)`, 20+d `map_wrg(d)`,
30+d `map_glb(d)`. The constraint families are those of 5.3.3-5.3.5, with two additions
that the thesis leaves to later checks and that this model states as constraints:

* *local buffer scope* (strengthens 5.2): every map enclosing all accesses of a local
  buffer runs one iteration per work-group (`map_wrg` or sequential), so a local buffer is
  written and read inside one work-group's iteration. This rejects thesis mapping M1
  (`map_glb` over a shared local buffer, which races).
* *global/work-group exclusivity*: a kernel indexes work either with global ids or with
  group and local ids; `map_glb(0)` around `map_wrg(0)` distributes work twice, and the code
  generator's ND-range takes one form per kernel.

A fused map (code 1) takes the schedule of its parent: its *effective* code is the parent's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import z3

from .context import Context, MapSite
from .model import Constraint, Model, code_in

SEQ, FUSED = 0, 1
LCL, WRG, GLB = (10, 11, 12), (20, 21, 22), (30, 31, 32)
CODES = (SEQ, FUSED, *LCL, *WRG, *GLB)
DIMS = (0, 1, 2)

PRIVATE = "private memory scoping"  # 5.1
SHARED = "shared memory scoping"  # 5.2
SCOPE = "local buffer scope"  # 5.2, strengthened
DUPLICATE = "duplicate scheduling"  # 5.3
DIMENSIONALITY = "local thread indexing dimensionality"  # 5.4, 5.5
HIERARCHY = "local thread indexing hierarchy"  # 5.6
EXHAUSTIVE = "exhaustive thread indexing"  # 5.7-5.9
FUSION = "sequential map fusion"  # 5.10 (a heuristic, off by default)
PERFECT = "fusion needs perfect nesting"  # 5.3.1
EXCLUSIVE = "global/work-group exclusivity"
ITERATE = "sequential stage in a nested iterate"


def describe(code: int) -> str:
    """Table 5.2 in words: `describe(21) == "map_wrg(1)"`."""
    if code == SEQ:
        return "map_seq"
    if code == FUSED:
        return "fused"
    kind = {1: "map_lcl", 2: "map_wrg", 3: "map_glb"}.get(code // 10)
    if kind is None or code % 10 not in DIMS:
        raise ValueError(f"{code} is not a Table 5.2 map code")
    return f"{kind}({code % 10})"


def add_mapping(model: Model, ctx: Context, *, fusion_heuristic: bool = False) -> dict[str, Any]:
    """Declare one variable per concrete map and add the constraint families; the variables."""
    codes = _Codes({m: model.var(m, CODES) for m in ctx.maps})
    eff = effective_codes(ctx, codes)
    for fam in (_perfect, _private, _shared, _scope, _duplicate, _dimensionality, _hierarchy,
                _exhaustive, _exclusive, _iterate):
        for c in fam(ctx, codes, eff):
            model.add(c)
    if fusion_heuristic:
        for c in _fusion(ctx, codes):
            model.add(c)
    return codes


def _mk(kind: str, labels: tuple[str, ...], reason: str, formula: Any) -> Constraint:
    return Constraint(kind, labels, reason, formula, family="mapping")


def effective_codes(ctx: Context, codes: dict[str, Any]) -> dict[str, Any]:
    """The code a map runs with: its own, or (fused) its parent's effective code."""
    eff: dict[str, Any] = {}
    for m in sorted(ctx.maps.values(), key=lambda s: len(s.outer)):
        c = codes[m.label]
        eff[m.label] = z3.If(c == FUSED, eff[cast(str, m.parent)], c) if m.perfect else c
    return eff


def _level(c: Any, tens: int) -> Any:
    return z3.And(c >= 10 * tens, c < 10 * tens + 10)


def _perfect(ctx: Context, codes: dict, eff: dict):
    for m in ctx.maps.values():
        if not m.perfect:
            yield _mk(PERFECT, (m.label,), f"{m.label} is not perfectly nested in a map, so it cannot "
                      "be fused", codes[m.label] != FUSED)


def _private(ctx: Context, codes: dict, eff: dict):
    for m in ctx.maps.values():
        if m.uses("private"):
            yield _mk(PRIVATE, (m.label,), f"{m.label} reads or writes private memory, so it must be "
                      "sequential or fused (5.1)", codes[m.label] < 10)


def _outer_in(m: MapSite, chain: tuple[str, ...]) -> list[str]:
    return [o for o in m.outer if o in chain]


def _shared(ctx: Context, codes: dict, eff: dict):
    for m in ctx.maps.values():
        if not m.uses("local"):
            continue
        for chain in dict.fromkeys(ch for _, ch in ctx.chains if m.label in ch):
            outer = _outer_in(m, chain)
            dims = [z3.Implies(z3.Or([codes[x] == 20 + w for x in chain]),
                               z3.Or([codes[o] == 20 + w for o in outer])) for w in DIMS]
            yield _mk(SHARED, (m.label, *outer), f"{m.label} accesses local memory, so it must be local "
                      "or sequential inside a map_wrg of every work-group dimension used (5.2)",
                      z3.And(codes[m.label] < 20, *dims))


def _scope(ctx: Context, codes: dict, eff: dict):
    for b in ctx.buffers:
        if b.space != "local" or not b.owner_chain:
            continue
        for x in b.owner_chain:
            e = eff[x]
            yield _mk(SCOPE, (x,), f"{x} encloses a whole local buffer, so each of its iterations must "
                      "run in one work-group (map_wrg or sequential, not map_glb or map_lcl)",
                      z3.Not(z3.Or(_level(e, 1), _level(e, 3))))


def _duplicate(ctx: Context, codes: dict, eff: dict):
    for m in ctx.maps:
        for i in ctx.nested(m):
            yield _mk(DUPLICATE, (m, i), f"{i} is nested in {m}, so they cannot use the same parallel "
                      "level and dimension (5.3)", z3.Or(codes[m] < 10, codes[m] != codes[i]))


class _Codes(dict):
    """The map variables, with the `uses` formulas built so far (the families ask for the same
    chain and code many times: `_exhaustive` for every pair of chains)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.memo: dict[tuple[tuple[str, ...], int], Any] = {}


def uses(chain: tuple[str, ...] | list[str], codes: Mapping[str, Any], code: int) -> Any:
    """Some map of `chain` has `code`."""
    memo = getattr(codes, "memo", None)
    key = (tuple(chain), code)
    if memo is not None and key in memo:
        return memo[key]
    f = z3.Or([codes[x] == code for x in chain]) if chain else z3.BoolVal(False)
    if memo is not None:
        memo[key] = f
    return f


def _dimensionality(ctx: Context, codes: dict, eff: dict):
    for k in ctx.kernels:
        for chain in ctx.kernel_chains(k):
            if not chain:
                continue
            f = z3.And([z3.And(z3.Implies(uses(chain, codes, 10 + d), uses(chain, codes, 20 + d)),
                               z3.Implies(uses(chain, codes, 20 + d), uses(chain, codes, 10 + d)))
                        for d in DIMS])
            yield _mk(DIMENSIONALITY, chain, f"the chain {'/'.join(chain)} uses the same local and "
                      "work-group dimensions (5.4, 5.5)", f)


def _hierarchy(ctx: Context, codes: dict, eff: dict):
    for m in ctx.maps:
        for i in ctx.nested(m):
            cm, ci = codes[m], codes[i]
            bad = z3.And(_level(cm, 1), ci == cm + 10)  # map_wrg(d) in map_lcl(d): d is cm - 10
            yield _mk(HIERARCHY, (m, i), f"{i} is nested in {m}: no map_wrg inside a map_lcl of the "
                      "same dimension (5.6)", z3.Not(bad))


def _exhaustive(ctx: Context, codes: dict, eff: dict):
    for k in ctx.kernels:
        chains = ctx.kernel_chains(k)
        for a in chains:
            for b in chains:
                if a == b:
                    continue
                f = z3.And([z3.Implies(uses(a, codes, c), uses(b, codes, c))
                            for c in (*LCL, *WRG, *GLB)])
                where = "/".join(b) or "kernel level"
                yield _mk(EXHAUSTIVE, tuple(dict.fromkeys(a + b)), f"every parallel dimension used by "
                          f"{'/'.join(a) or 'kernel level'} is used by {where} too (5.7-5.9)", f)


def _exclusive(ctx: Context, codes: dict, eff: dict):
    for k in ctx.kernels:
        launch = ctx.launch_of(k)
        if k != launch[0]:
            continue  # stated once per launch, over the maps of all its kernels
        maps = [m.label for m in ctx.maps.values() if m.kernel in launch]
        if not maps:
            continue
        glb = z3.Or([uses(maps, codes, c) for c in GLB])
        grp = z3.Or([uses(maps, codes, c) for c in (*LCL, *WRG)])
        yield _mk(EXCLUSIVE, tuple(maps), "a kernel indexes work with global ids or with group and "
                  "local ids, not both (map_glb(0) around map_wrg(0) distributes work twice; the "
                  "code generator's ND-range takes one of the two forms)", z3.Not(z3.And(glb, grp)))


def _iterate(ctx: Context, codes: dict, eff: dict):
    for m in ctx.maps.values():
        if m.in_iterate:
            yield _mk(ITERATE, (m.label,), f"{m.label} is inside an iterate that a map encloses: each "
                      "iteration reads what all work-items wrote in the one before, which needs a barrier "
                      "no loop of one kernel can place, so it runs sequentially", eff[m.label] < 10)


def _fusion(ctx: Context, codes: dict):
    for m in ctx.maps.values():
        if m.perfect:
            p = m.parent
            yield _mk(FUSION, (cast(str, p), m.label), f"{m.label} is perfectly nested in {p}: not both sequential "
                      "(5.10)", z3.Not(z3.And(codes[p] == SEQ, codes[m.label] == SEQ)))


def used_dims(choice: dict[str, int], kernel_maps: list[str] | None = None) -> dict[int, str]:
    """The dimensions a choice uses and how: {d: "glb" | "grp"}."""
    out: dict[int, str] = {}
    for m, c in choice.items():
        if kernel_maps is not None and m not in kernel_maps:
            continue
        if c >= 10 and c % 10 in DIMS:
            out[c % 10] = "glb" if c >= 30 else "grp"
    return out


__all__ = ["CODES", "SEQ", "FUSED", "LCL", "WRG", "GLB", "describe", "add_mapping", "used_dims",
           "code_in"]
