"""Lowering rules: high-level `map` and `reduce` to the OpenCL patterns (thesis 2.3.1.5).

They rewrite the pattern itself, wherever it is (applied, or nested as in `map(map(f))`),
and preserve the meaning everywhere; whether a mapping suits a device (a `map_lcl` inside a
`map_wrg`, distinct dimensions) is for `lift.constraints` to decide.
"""

from __future__ import annotations

from typing import cast

from lift.ir.nodes import FunDecl, Map, MapGlb, MapLcl, MapSeq, MapWrg, Reduce, ReduceSeq
from lift.rules.match import fun
from lift.rules.rule import Rule
from lift.rules.terms import meta

f = fun("f")
DIMS = (0, 1, 2)


def _lower_map(cls: type, name: str, what: str, doc: str) -> Rule:
    def rhs(f: FunDecl, dim: int, matched: Map) -> FunDecl:
        return cast(FunDecl, cls(f, dim, **meta(matched)))

    return Rule(name, law=f"map(f) -> {what}(f, dim)", lhs=Map(f), params={"dim": 0},
                where=lambda dim: dim in DIMS, rhs=rhs, doc=doc)


map_to_glb = _lower_map(MapGlb, "map_to_glb", "map_glb", "Elements over the global work-items.")
map_to_wrg = _lower_map(MapWrg, "map_to_wrg", "map_wrg", "Elements over the work-groups.")
map_to_lcl = _lower_map(MapLcl, "map_to_lcl", "map_lcl", "Elements over a work-group's work-items.")

map_to_seq = Rule(
    "map_to_seq", law="map(f) -> map_seq(f)", lhs=Map(f),
    rhs=lambda f, matched: MapSeq(f, **meta(matched)), doc="A sequential loop.",
)

reduce_to_seq = Rule(
    "reduce_to_seq", law="reduce(f) -> reduce_seq(f)", lhs=Reduce(f),
    rhs=lambda f, matched: ReduceSeq(f, **meta(matched)),
    doc="A sequential loop with a private accumulator.",
)

RULES = (map_to_glb, map_to_wrg, map_to_lcl, map_to_seq, reduce_to_seq)
