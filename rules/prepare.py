"""The rewriting stages a program goes through before its mapping is stated and chosen.

    recomputed = recompute_layouts(applied)                 lift.rules.recompute: a slide of a computed
                                                            result, its map recomputed per window
    fused      = fuse_reduce_maps(fuse_epilogues(recomputed))   lift.rules.fusion: elementwise consumers
                                                            and maps under a reduce fused

`lift.compile` runs them as its stages "recomputed" and "fused" (`lift.compile.map_program`) and
builds the constraint space of the result; `prepared` runs the same stages for the public spaces
(`lift.constraints.mapping_space` and its siblings, given a program as its author wrote it).
"""

from __future__ import annotations

from lift.ir.nodes import Node
from lift.rules.fusion import fuse_epilogues, fuse_reduce_maps
from lift.rules.recompute import recompute_layouts
from lift.typecheck import typecheck


def prepared(expr: Node) -> Node:
    """`expr` through the stages "recomputed" and "fused" (module docstring), typechecked first."""
    typecheck(expr)
    recomputed = recompute_layouts(expr)
    return fuse_reduce_maps(fuse_epilogues(recomputed))


__all__ = ["prepared"]
