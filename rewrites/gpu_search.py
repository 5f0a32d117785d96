"""The tuner's GPU space: where `lift.tune` on a GPU device (or profile) places the GPU points, their
structural domains and its first candidates.

    expr, structural, labels = gpu_search_space(expr, sizes, device)    # lift.tune's _search_space
    seeds = gpu_seeds(expr, structural, device, sizes)                  # lift.explore.seeds, first

- Points: the tuner's automatic points (`lift.rewrites.auto_points`, over reductions of at least
  `gpu_tiles.MIN_LENGTH` elements) with each `block_nest` replaced by a `gpu_tiles` point, as the
  default compile on a GPU places them (`gpu_tiles.as_tiles`); without a nest, a `gpu_reduce` or
  `gpu_rows` point on a full reduction or a map of row reductions of constant length
  (`gpu_reduce.reduce_point`); else None (the CPU's space).
- Domains: each GPU point's parameters take the values of its valid choices
  (`lift.constraints.gpu_tiles`: the device's local memory, work-group size, registers per
  work-item), `skip` first as for every point; other automatic points keep `auto_space`'s.
- Seeds: the GPU points' valid choices in the space's preference order, the first being
  `gpu_default`'s (what `lift.compile` gives on that device), the other automatic points skipped
  as `gpu_default` skips them. Their mapping is the one the points write (`map_wrg`/`map_lcl`:
  `lift.constraints.joint_space` keeps a lowered program's mapping) and their launch the code
  generator's default work-group (the tiles' `map_lcl` trip counts); the search varies both.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from lift.ir.nodes import Node
from lift.rules.normalise import normalise

from .apply import points, structural_space
from .auto import auto_points, auto_space, is_auto
from .gpu_reduce import GpuReduce, GpuRows, reduce_point
from .gpu_tiles import MIN_LENGTH, GpuTiles, as_tiles, reduce_space, tile_space

SEEDS = 4  # the GPU points' first valid choices tried as seeds
LIMIT = 256  # the most valid choices a point's domains are drawn from (preferred first: ~1-2 s of z3 checks)
_VALID: dict[Any, list[tuple[tuple[str, int], ...]]] = {}  # valid_choices by (point, device, sizes), a few kept
GPU_POINTS = (GpuTiles, GpuReduce, GpuRows)


def gpu_search_points(expr: Node, sizes: Mapping[str, int]) -> Node | None:
    """`expr` with the tuner's automatic points on a GPU (see the module), or None when it has no
    place for a GPU point."""
    tiled: Node | None = as_tiles(auto_points(expr, sizes, min_length=MIN_LENGTH))
    if tiled is not None:
        return tiled
    reduced = reduce_point(expr)
    return None if reduced is expr else reduced


def point_space(point: Any, device: Any, sizes: Mapping[str, int] | None = None) -> Any:
    """The `TileSpace` or `ReduceSpace` of a GPU point on `device`, or None (sizes not known)."""
    if isinstance(point, GpuTiles):
        return tile_space(point, device, sizes)
    return reduce_space(point, device)


def valid_choices(point: Any, device: Any, sizes: Mapping[str, int] | None = None,
                  limit: int = LIMIT) -> list[tuple[tuple[str, int], ...]]:
    """The point's first `limit` valid choices of its open parameters (as sorted items), preferred
    first (the first is `gpu_default`'s); empty when its space is unknown or empty."""
    key = (point, device, _key(sizes or {}), limit)
    if key not in _VALID:
        space = point_space(point, device, sizes)
        open_ = set(point.structural())
        found = [] if space is None else (_key({k: v for k, v in c.items() if k in open_}) for c in space.choices())
        _VALID[key] = list(dict.fromkeys(itertools.islice(found, limit)))
        while len(_VALID) > 16:
            del _VALID[next(iter(_VALID))]
    return _VALID[key]


def _key(c: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(c.items()))


def gpu_search_space(expr: Node, sizes: Mapping[str, int], device: Any
                     ) -> tuple[Node, dict[str, dict[str, tuple[Any, ...]]], list[str]] | None:
    """`(program with the GPU points, its structural space, the automatic points' labels)` for
    `lift.tune` on the GPU `device`, or None when no GPU point applies (or its space is empty)."""
    placed = gpu_search_points(expr, sizes)
    if placed is None:
        return None
    placed = normalise(placed)  # as lift.compile sees it (the points' parameters renamed: operand order)
    structural = structural_space(placed)
    rest = auto_space(placed, sizes)
    for lab, pt in points(placed).items():
        if not is_auto(lab):
            continue
        if not isinstance(pt, GPU_POINTS):
            structural[lab] = rest[lab]
            continue
        valid = valid_choices(pt, device, sizes)
        if not valid:
            return None
        names = [k for k, _ in valid[0]]
        structural[lab] = {"skip": (False, True), **{k: tuple(dict.fromkeys(dict(c)[k] for c in valid))
                                                      for k in names}}
    return placed, structural, [lab for lab in structural if is_auto(lab)]


def gpu_labels(expr: Node) -> list[str]:
    """The labels of the automatic GPU points of `expr`."""
    return [lab for lab, pt in points(expr).items() if is_auto(lab) and isinstance(pt, GPU_POINTS)]


def gpu_seeds(expr: Node, structural: Mapping[str, Mapping[str, Any]], device: Any,
              sizes: Mapping[str, int] | None = None, count: int = SEEDS) -> Iterator[dict[str, dict[str, Any]]]:
    """The structural choices of the tuner's first candidates on a GPU: the k-th valid choice of
    every GPU point (its last where it has fewer), k < `count`, the first being `gpu_default`'s;
    the other automatic points skipped, the user's points at their first values."""
    gpu = gpu_labels(expr)
    if not gpu:
        return
    pts = points(expr)
    valid = {lab: valid_choices(pts[lab], device, sizes) for lab in gpu}
    if not all(valid.values()):
        return
    base = {lab: ({"skip": True} if is_auto(lab) else {p: (False if p == "skip" else vals[0])
                                                       for p, vals in ps.items()})
            for lab, ps in structural.items()}
    for k in range(min(count, max(len(v) for v in valid.values()))):
        yield {**base, **{lab: {"skip": False, **dict(v[min(k, len(v) - 1)])} for lab, v in valid.items()}}


__all__ = ["gpu_search_points", "gpu_search_space", "gpu_seeds", "gpu_labels", "valid_choices", "point_space",
           "SEEDS"]
