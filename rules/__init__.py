"""lift.rules: LIFT's fine-grained rewrite rules (thesis 2.3.2.1) and the rewriting engine.

    from lift.rules import split_join, map_to_wrg, map_fusion
    from lift.rules.strategies import rewrite, seq, top_down, normalize
    rewrite(prog, seq(top_down(split_join(n=128)), top_down(map_to_wrg), normalize(map_fusion)))

Every rule has `.name`, `.law`, `.matches(expr)` (paths) and `.apply(expr, at=path, **params)`.
"""

from lift.ir.alpha import alpha_equal, canonical
from lift.rules import strategies
from lift.rules.address_spaces import add_copy, to_global_memory, to_local_memory, to_private_memory
from lift.rules.enumerate import Explored, explore
from lift.rules.fusion import map_fission, map_fusion, map_row_fusion, reduce_map_fusion, zip_map_fusion
from lift.rules.interchange import (
    map_map_interchange,
    map_reduce_interchange,
    transpose_both_sides,
    transpose_transpose_id,
)
from lift.rules.let import eta_expand, let_inline, let_intro, ocl_kernel_intro
from lift.rules.lowering import map_to_glb, map_to_lcl, map_to_seq, map_to_wrg, reduce_to_seq
from lift.rules.match import PVar, either, match, named, pvars
from lift.rules.reduce import is_monoid, partial_reduce, partial_reduce_join, partial_reduce_split_join
from lift.rules.rule import REQUIRED, Rule, Step, check_program, divides, same_type
from lift.rules.split_join import join_split_id, slide_tiling, split_join, split_join_id
from lift.rules.strategies import Rewritten, rewrite
from lift.rules.vector import as_scalar_as_vector_id, as_vector_as_scalar_id, vectorise

ALL: tuple[Rule, ...] = (
    split_join, join_split_id, split_join_id, slide_tiling,
    map_fusion, map_row_fusion, map_fission, reduce_map_fusion, zip_map_fusion,
    partial_reduce, partial_reduce_split_join, partial_reduce_join,
    map_map_interchange, transpose_both_sides, map_reduce_interchange, transpose_transpose_id,
    vectorise, as_vector_as_scalar_id, as_scalar_as_vector_id,
    map_to_glb, map_to_wrg, map_to_lcl, map_to_seq, reduce_to_seq,
    to_private_memory, to_local_memory, to_global_memory, add_copy,
    let_intro, let_inline, eta_expand, ocl_kernel_intro,
)

BY_NAME: dict[str, Rule] = {r.name: r for r in ALL}

__all__ = [
    "ALL", "BY_NAME", "Rule", "Step", "REQUIRED", "PVar", "pvars", "either", "named", "match",
    "check_program", "divides", "same_type", "is_monoid", "strategies", "rewrite", "Rewritten",
    "explore", "Explored", "alpha_equal", "canonical",
    "split_join", "join_split_id", "split_join_id", "slide_tiling",
    "map_fusion", "map_row_fusion", "map_fission", "reduce_map_fusion", "zip_map_fusion",
    "partial_reduce", "partial_reduce_split_join", "partial_reduce_join",
    "map_map_interchange", "transpose_both_sides", "map_reduce_interchange", "transpose_transpose_id",
    "vectorise", "as_vector_as_scalar_id", "as_scalar_as_vector_id",
    "map_to_glb", "map_to_wrg", "map_to_lcl", "map_to_seq", "reduce_to_seq",
    "to_private_memory", "to_local_memory", "to_global_memory", "add_copy",
    "let_intro", "let_inline", "eta_expand", "ocl_kernel_intro",
]
