"""lift.rewrites: rewrite points (thesis chapter 6), used as wrappers inside a program.

    from lift import rewrites as rw
    dot = fun([Array(Float, N), Array(Float, N)],
              lambda x, y: rw.split_reduce(reduce(add, 0.0) << map(mult), label="R") << zip(x, y))
    rw.apply_all(dot, {"R": {"size": 64}})     # reduce << map(c => reduce << map(mult) << c) << split(64)
    rw.apply_all(dot, {"R": {"skip": True}})   # the point eliminated: dot as written

A point means its body until `apply_all` rewrites it (Algorithm 4, top-down). Families:
`split_join` (`tile`), `split_reduce` (`tile_reduce`), `ab_tile`, `flatten`, `vectorise`, `fission`,
`reduce_chunks`, `materialise`, `optimise_data_layout`, `interchange_maps`, `interchange_reduce_nd`,
`privatise_accumulator`, `pad_extra_nd`, `tile_nested_map_reduce`, `register_block`,
`recompute_producer`, `block_nest`, `col_reduce`, `col_fold`;
`auto_points` places points at a program's natural places (for `lift.tune`).
"""

from .apply import apply_all, is_point, label_points, point_params, points, skipped, structural_space
from .auto import auto_points, auto_space, is_auto
from .auto_colfold import ColFold, col_fold
from .auto_colreduce import ColReduce, col_reduce
from .auto_nest import BlockNest, block_nest
from .blocking import RegisterBlock, register_block
from .chunks import ReduceChunks, reduce_chunks
from .fission import Fission, fission
from .flatten import Flatten, flatten
from .fusion_points import RecomputeProducer, recompute_producer
from .layout_points import (
    InterchangeMaps,
    OptimiseDataLayout,
    PadExtraND,
    interchange_maps,
    optimise_data_layout,
    pad_extra_nd,
)
from .memory_points import Materialise, PrivatiseAccumulator, materialise, privatise_accumulator
from .nested import InterchangeReduceND, TileNestedMapReduce, interchange_reduce_nd, tile_nested_map_reduce
from .point import Outcome, RewritePoint, tuning_var
from .tiling import ABTile, SplitJoin, SplitReduce, ab_tile, split_join, split_reduce, tile, tile_reduce
from .vectorise import VectorisePoint, vectorise

FAMILIES: tuple[type, ...] = (SplitJoin, SplitReduce, ABTile, Flatten, VectorisePoint, Fission, ReduceChunks,
                              Materialise, OptimiseDataLayout, InterchangeMaps, InterchangeReduceND,
                              PrivatiseAccumulator, PadExtraND, TileNestedMapReduce, RegisterBlock,
                              RecomputeProducer, BlockNest, ColReduce, ColFold)

__all__ = [
    "apply_all", "points", "structural_space", "label_points", "point_params", "is_point", "skipped",
    "RewritePoint", "Outcome", "tuning_var", "FAMILIES",
    "split_join", "tile", "split_reduce", "tile_reduce", "ab_tile", "flatten", "vectorise", "fission",
    "SplitJoin", "SplitReduce", "ABTile", "Flatten", "VectorisePoint", "Fission",
    "reduce_chunks", "ReduceChunks", "auto_points", "auto_space", "is_auto",
    "materialise", "optimise_data_layout", "interchange_maps", "interchange_reduce_nd", "privatise_accumulator",
    "pad_extra_nd", "tile_nested_map_reduce", "Materialise", "OptimiseDataLayout", "InterchangeMaps",
    "InterchangeReduceND", "PrivatiseAccumulator", "PadExtraND", "TileNestedMapReduce",
    "register_block", "RegisterBlock",
    "recompute_producer", "RecomputeProducer", "block_nest", "BlockNest", "col_reduce", "ColReduce",
    "col_fold", "ColFold",
]
