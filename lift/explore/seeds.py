"""Seed points for the automatic rewrite points (`lift.rewrites.auto_points`), tried first.

Random sampling rarely hits the chunk sizes that matter (the solver's pivots spread over
1 .. N), so for every automatic point the search first tries a few structured candidates:

- `reduce_chunks`: each width it allows (8, 16, 4, 1) with a chunk of about `TARGET_ELEMS` elements per
  work-item (512 .. 8192 scalars; the hand-written PoCL dot uses 2048), and the whole array
  as one chunk (a row per work-item in gemv);
- `vectorise`: each width;
- on a GPU, the GPU points (`gpu_tiles`, `gpu_reduce`, `gpu_rows`): their first valid choices,
  `lift.compile`'s default on that device first (`gpu_seeds`);
- `block_nest` (register blocks of a nested map-reduce): a few block shapes and packings
  (`BLOCK_SEEDS`, those of the point's space; 4 x 2 float8 with B packed first), each with the block
  maps as a 2-D ND-range (row blocks `map_glb(1)`, column blocks `map_glb(0)`) and with the
  preferences below.

The joint choice is completed with preferences by `lift.constraints.prefer.complete` (maps at the
top of a kernel global, those inside sequential, work-groups of 64 work-items; a 2-D grid of
blocks in groups one column block wide).
Local search then refines the best (chunk size doubled/halved, other mappings).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any

import z3

from lift.choices import Choices, is_launch
from lift.constraints.prefer import complete
from lift.rewrites.auto_conv import PAD_SEEDS

from .evaluate import Evaluator, Record
from .points import key as point_key

TARGET_ELEMS = (2048, 512, 8192)
BLOCK_SEEDS = ({"rows": 4, "cols": 2, "width": 8, "along": "output", "pack": "b"},
               {"rows": 4, "cols": 2, "width": 8, "along": "output", "pack": "ab"},
               {"rows": 8, "cols": 1, "width": 8, "along": "output", "pack": "ab"},
               {"rows": 2, "cols": 4, "width": 8, "along": "output", "pack": "ab"},
               {"rows": 8, "cols": 2, "width": 8, "along": "output", "pack": "none"},
               {"rows": 8, "cols": 2, "width": 8, "along": "output", "layout": "gather", "pack": "none"},
               {"rows": 4, "cols": 4, "width": 8, "along": "output", "pack": "none"},
               {"rows": 4, "cols": 1, "width": 16, "along": "output", "pack": "ab"},
               {"rows": 2, "cols": 4, "width": 16, "along": "reduced", "layout": "copy", "pack": "none"},
               {"rows": 4, "cols": 4, "width": 8, "along": "reduced", "layout": "copy", "pack": "none"},
               {"rows": 4, "cols": 4, "width": 4, "along": "reduced", "layout": "copy", "pack": "none"})
WHOLE_MAX = 1 << 15  # the whole array as one chunk only up to this many elements
SCAN_MAX = 4096  # `_largest` scans a domain up to this size


class Seeded:
    """Proposes the seed candidates (in order, untried ones), then defers to `inner`."""

    def __init__(self, pipeline: Evaluator, structural: Mapping[str, Mapping[str, Sequence[Any]]],
                 auto: Sequence[str], inner: Any) -> None:
        self.pipeline, self.structural, self.auto, self.inner = pipeline, structural, tuple(auto), inner
        self._seeds: Iterator[Choices] | None = None

    def propose(self, history: Sequence[Record]) -> Choices | None:
        if self._seeds is None:
            self._seeds = self.seeds()
        tried = {point_key(r.candidate) for r in history}
        for cand in self._seeds:
            if point_key(cand) not in tried:
                return cand
        return self.inner.propose(history)

    def base(self) -> dict[str, dict[str, Any]]:
        """Every point applied with its first parameter values."""
        return {lab: {p: (False if p == "skip" else vals[0]) for p, vals in ps.items()}
                for lab, ps in self.structural.items()}

    def seeds(self) -> Iterator[Choices]:
        gpu = yield from self.gpu_seeds()
        for lab in self.auto:
            if lab in gpu:
                continue
            if "along" in self.structural[lab]:
                yield from self.block_seeds(lab)
                continue
            widths = tuple(self.structural[lab].get("width", (1,)))
            for w in widths:
                s = {**self.base(), lab: {**self.base()[lab], "width": w}}
                space = self.pipeline.space(s)
                if isinstance(space, Exception):
                    continue
                var = f"T_{lab}"
                if var not in space.variables:
                    joint = complete(space, {})
                    if joint is not None:
                        yield self.pipeline.point(s, joint)
                    continue
                for t in chunk_sizes(space, var, w):
                    joint = complete(space, {var: t})
                    if joint is not None:
                        yield self.pipeline.point(s, joint)


    def gpu_seeds(self) -> Generator[Choices, None, list[str]]:
        """On a GPU, the GPU points' first valid choices (`lift.rewrites.gpu_search.gpu_seeds`: the
        first is `gpu_default`'s), each with the mapping the points write and the code generator's
        default launch (no launch variables); returns the GPU points' labels."""
        from lift.compile import profile_of
        from lift.rewrites.gpu_search import gpu_labels
        from lift.rewrites.gpu_search import gpu_seeds as seeds_of

        device = profile_of(self.pipeline.device)
        if device.kind != "gpu":
            return []
        for s in seeds_of(self.pipeline.expr, self.structural, device, self.pipeline.sizes):
            space = self.pipeline.space(s)
            joint = None if isinstance(space, Exception) else complete(space, {})
            if joint is not None:
                yield self.pipeline.point(s, {k: v for k, v in joint.items() if not is_launch(k)})
        return gpu_labels(self.pipeline.expr)

    def block_seeds(self, lab: str) -> Iterator[Choices]:
        """The block shapes of `BLOCK_SEEDS` that the point's space offers: all of them mapped as a
        2-D ND-range of blocks first, then with the usual preferences."""
        doms = self.structural[lab]
        for grid in (True, False):
            for shape in (*PAD_SEEDS, *BLOCK_SEEDS):  # PAD_SEEDS: only where layout "pad" is offered
                if not all(v in doms.get(k, ()) for k, v in shape.items()):
                    continue
                if shape.get("layout") == "pad" and "none" in doms.get("pack", ()):
                    shape = {**shape, "pack": "none"}  # the padded copy replaces packing (not applied)
                s = {**self.base(), lab: {**self.base()[lab], **shape}}
                space = self.pipeline.space(s)
                joint = None if isinstance(space, Exception) else complete(space, {}, grid=grid)
                if joint is not None:
                    yield self.pipeline.point(s, joint)


def chunk_sizes(space: Any, var: str, width: int) -> list[int]:
    """Chunk sizes (in vectors of `width`) to try for the tuning variable `var`."""
    out = [max(1, e // width) for e in TARGET_ELEMS]
    whole = _largest(space, var)
    if whole is not None and whole * width <= WHOLE_MAX:
        out.append(whole)
    return list(dict.fromkeys(out))


def _largest(space: Any, var: str) -> int | None:
    """The largest valid value of `var` (the whole array as one chunk), or None: the domain
    scanned from the top with incremental checks (cheaper than an optimising solver)."""
    domain = space.model.domains.get(var, ())
    if len(domain) <= SCAN_MAX:
        return next((v for v in reversed(domain) if space.model.is_valid({var: v})), None)
    s, _ = space.model.solver()
    v = space.model.vars[var]
    opt = z3.Optimize()
    opt.add(s.assertions())
    opt.maximize(v)
    if opt.check() != z3.sat:
        return None
    return opt.model().eval(v, model_completion=True).as_long()


__all__ = ["Seeded", "chunk_sizes", "TARGET_ELEMS"]
