"""Seed candidates for the automatic rewrite points (`lift.rewrites.auto_points`), tried first.

Random sampling rarely hits the chunk sizes that matter (the solver's pivots spread over
1 .. N), so for every automatic point the search first tries a few structured candidates:

- `reduce_chunks`: each width it allows (8, 16, 4, 1) with a chunk of about `TARGET_ELEMS` elements per
  work-item (512 .. 8192 scalars; the hand-written PoCL dot uses 2048), and the whole array
  as one chunk (a row per work-item in gemv);
- `vectorise`: each width;
- `block_nest` (register blocks of a nested map-reduce): a few block shapes and packings
  (`BLOCK_SEEDS`, those of the point's space; packed 4 x 2 float8 first), each with the block
  maps as a 2-D ND-range (row blocks `map_glb(1)`, column blocks `map_glb(0)`) and with the
  preferences below.

The joint choice is completed by the solver with preferences: maps at the top of a kernel
global (code 30), maps inside them sequential (0), work-groups of `LOCAL` work-items and as
many groups as the launch constraints allow (one work-item per iteration). A 2-D grid of
blocks gets groups one column block wide and `LOCAL` row blocks tall: a group's work-items run
one after another (dimension 0 fastest) and then share their column strip's panel (BN x W
scalars per step of k, the larger operand of a block; a row block reads BM). On Zen 1 (PoCL),
matmul 1024^3, packed 4 x 2 float8 blocks: the block kernel ran 28.1 ms with 1 x 64 groups,
29.5 with PoCL's own choice, 30.3 with 64 x 1 (interleaved, 5 rounds).
Local search then refines the best (chunk size doubled/halved, other mappings).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import z3

from lift.rewrites.auto_conv import PAD_SEEDS

from .evaluate import Candidate, Evaluator, Record

TARGET_ELEMS = (2048, 512, 8192)
BLOCK_SEEDS = ({"rows": 4, "cols": 2, "width": 8, "along": "output", "pack": "ab"},
               {"rows": 8, "cols": 1, "width": 8, "along": "output", "pack": "ab"},
               {"rows": 4, "cols": 2, "width": 8, "along": "output", "pack": "b"},
               {"rows": 2, "cols": 4, "width": 8, "along": "output", "pack": "ab"},
               {"rows": 8, "cols": 2, "width": 8, "along": "output", "pack": "none"},
               {"rows": 8, "cols": 2, "width": 8, "along": "output", "layout": "gather", "pack": "none"},
               {"rows": 4, "cols": 4, "width": 8, "along": "output", "pack": "none"},
               {"rows": 4, "cols": 1, "width": 16, "along": "output", "pack": "ab"},
               {"rows": 2, "cols": 4, "width": 16, "along": "reduced", "layout": "copy", "pack": "none"},
               {"rows": 4, "cols": 4, "width": 8, "along": "reduced", "layout": "copy", "pack": "none"},
               {"rows": 4, "cols": 4, "width": 4, "along": "reduced", "layout": "copy", "pack": "none"})
WHOLE_MAX = 1 << 15
SCAN_MAX = 4096  # `_largest` scans a domain up to this size
LOCAL = 64  # preferred work-group size of a seed  # the whole array as one chunk only up to this many elements


class Seeded:
    """Proposes the seed candidates (in order, untried ones), then defers to `inner`."""

    def __init__(self, pipeline: Evaluator, structural: Mapping[str, Mapping[str, Sequence[Any]]],
                 auto: Sequence[str], inner: Any) -> None:
        self.pipeline, self.structural, self.auto, self.inner = pipeline, structural, tuple(auto), inner
        self._seeds: Iterator[Candidate] | None = None

    def propose(self, history: Sequence[Record]) -> Candidate | None:
        if self._seeds is None:
            self._seeds = self.seeds()
        tried = {r.candidate.key() for r in history}
        for cand in self._seeds:
            if cand.key() not in tried:
                return cand
        return self.inner.propose(history)

    def base(self) -> dict[str, dict[str, Any]]:
        """Every point applied with its first parameter values."""
        return {lab: {p: (False if p == "skip" else vals[0]) for p, vals in ps.items()}
                for lab, ps in self.structural.items()}

    def seeds(self) -> Iterator[Candidate]:
        for lab in self.auto:
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
                        yield Candidate(s, joint)
                    continue
                for t in chunk_sizes(space, var, w):
                    joint = complete(space, {var: t})
                    if joint is not None:
                        yield Candidate(s, joint)


    def block_seeds(self, lab: str) -> Iterator[Candidate]:
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
                    yield Candidate(s, joint)


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


def _exact_groups(space: Any, joint: dict[str, int]) -> dict[str, int]:
    """`joint` with each `map_glb` dimension launched with one work-item per iteration of its
    longest map (groups = iterations / local size, rounded up) where the model accepts it: the
    preference for many groups alone takes the most the launch constraints allow, up to twice
    the iterations (matmul 1024^3: 127 groups of one work-item over 64 column blocks, half of
    them idle behind the bounds check)."""
    from lift.arith import evaluate, substitute

    out = dict(joint)
    for d in range(3):
        local, groups = f"local_size_{d}", f"groups_{d}"
        if local not in joint or groups not in joint:
            continue
        lengths = [evaluate(substitute(m.length, space.sizes or {})) for m in space.launch_maps()
                   if joint.get(m.label) == 30 + d]
        if not lengths:
            continue
        exact = -(-max(lengths) // joint[local])
        if exact != joint[groups] and space.model.is_valid({**out, groups: exact}):
            out[groups] = exact
    return out


def complete(space: Any, partial: Mapping[str, int], grid: bool = False) -> dict[str, int] | None:
    """A valid joint choice extending `partial`, preferring top-level maps global and the
    maps inside them sequential (with `grid`: the maps one level inside global in dimension 0,
    the top-level ones in dimension 1), and launches of many work-items (groups of `LOCAL`);
    None if `partial` cannot be extended. Found by the concrete sampler in preference order
    (milliseconds); an optimising z3 query (~0.1-0.4 s) only when that finds nothing."""
    fast = _complete_fast(space, partial, grid)
    if fast is not None:
        return _exact_groups(space, fast)
    model = space.model
    s, _ = model.solver()
    opt = z3.Optimize()
    opt.set("rlimit", 50_000_000)  # a resource budget: the same seeds however loaded the machine is
    opt.set("timeout", 30_000)  # only stops a hang
    opt.add(s.assertions())
    opt.add([model.vars[k] == int(v) for k, v in partial.items()])
    for lab, site in space.context.maps.items():
        if lab in model.vars:
            opt.add_soft(model.vars[lab] == _code(site, grid), 100)
    groups = [model.vars[f"groups_{d}"] for d in range(3) if f"groups_{d}" in model.vars]
    for k, v in _local_want(grid).items():
        if k in model.vars:
            opt.add_soft(model.vars[k] == v, 10)
    if groups:
        opt.maximize(z3.Sum(groups))
    if opt.check() != z3.sat:
        return None
    m = opt.model()
    return _exact_groups(space, {k: m.eval(model.vars[k], model_completion=True).as_long() for k in space.variables})


def _local_want(grid: bool) -> dict[str, int]:
    """The preferred local sizes: `LOCAL` in every dimension, or with `grid` (column blocks in
    dimension 0, row blocks in dimension 1) groups of one column block and `LOCAL` row blocks."""
    if grid:
        return {"local_size_0": 1, "local_size_1": LOCAL}
    return {f"local_size_{d}": LOCAL for d in range(3)}


def _code(site: Any, grid: bool) -> int:
    """The preferred mapping code of a map: top-level global (dimension 1 with `grid`), one level
    inside sequential (global in dimension 0 with `grid`), deeper sequential."""
    if grid:
        return 31 if not site.outer else 30 if len(site.outer) == 1 else 0
    return 0 if site.outer else 30


def _complete_fast(space: Any, partial: Mapping[str, int], grid: bool = False) -> dict[str, int] | None:
    """`complete` by the concrete sampler: block rows ranked by the same penalties as the soft
    constraints (a map off its preferred code 100, a work-group size other than `LOCAL` 10),
    then preferred values first and as many groups as allowed (greedily, dimension by dimension)."""
    model = space.model
    want = {lab: _code(site, grid) for lab, site in space.context.maps.items() if lab in model.vars}
    want.update({k: v for k, v in _local_want(grid).items() if k in model.vars})

    def weight(k: str) -> int:
        return 10 if k.startswith("local_size_") else 100

    def row_cost(rows: Mapping[str, Any]) -> Any:
        cost = 0
        for k, col in rows.items():
            if k in want:
                cost = cost + weight(k) * (col != want[k])
        return cost + np.zeros(len(next(iter(rows.values()))), dtype=np.int64)

    def prefer(name: str, values: list[int]) -> list[int]:
        if name in want:
            return sorted(values, key=lambda v: (v != want[name], v))
        return sorted(values, reverse=name.startswith("groups_"))

    sol = model.preferred({k: int(v) for k, v in partial.items()}, prefer, row_cost)
    return None if sol is None else {k: sol[k] for k in space.variables}


__all__ = ["Seeded", "complete", "chunk_sizes", "TARGET_ELEMS"]
