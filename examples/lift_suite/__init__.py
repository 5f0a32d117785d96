"""LIFT's own benchmark suite written with liftcl: `cgo17` (CGO 2017's programs), `stencils` (CGO
2018's), each program a `Case` (`case`) with its numpy reference; `entries` lists them at LIFT's
small or large sizes, `make` builds one with its inputs; `benchmarks/lift_suite.py` prints the
table, `tests/test_golden_corpus.py` pins their default code."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import cgo17 as c
from . import stencils as s
from .case import Case


def entries(large: bool) -> list[tuple[str, Callable[[np.random.Generator], Case]]]:
    """(name, case maker) of every program at LIFT's small sizes (or its large ones where this
    machine's memory allows), CGO 2017's programs first, then the stencils; a case's inputs are
    made only when it runs."""
    n2, n3 = (4096, 256) if large else (1024, 128)
    mm = 2048 if large else 1024
    big = {True: 1, False: 0}[large]
    cgo17: list[tuple[str, Callable[[np.random.Generator], Case]]] = [
        ("N-Body", lambda r: c.nbody_case((4096, 16384)[big], r)),
        ("MD", lambda r: c.md_case((12288, 73728)[big], 128, r)),
        ("K-Means", lambda r: c.kmeans_case((16384, 1 << 20)[big], 5, 34, r)),
        ("nearest neighbour", lambda r: c.nn_case((1 << 20, 1 << 24)[big], r)),
        ("MRI-Q", lambda r: c.mriq_case((32768, 262144)[big], 2048, r)),
        ("GEMV", lambda r: c.gemv_case((2048, 8192)[big], r)),
        ("ATAX", lambda r: c.atax_case((2048, 8192)[big], r)),
        ("GESUMMV", lambda r: c.gesummv_case((2048, 4096)[big], r)),
        *((f"MM {layout}", lambda r, layout=layout: c.mm_case(layout, mm, r))
          for layout in ("AB", "AtB", "ABt", "AtBt")),
        ("SRAD", c.srad_case),
        ("arg-min", lambda r: c.argmin_case((1 << 20, 1 << 24)[big], r)),
    ]
    stencils: list[tuple[str, Callable[[np.random.Generator], Case]]] = [
        ("hotspot", lambda r: s.hotspot_case((512, 4096)[big], r)),
        ("hotspot3D", lambda r: s.hotspot3d_case(512, (8, 64)[big], r)),
        ("SRAD stencils", lambda r: s.srad_case((512, 4096)[big], r)),
        ("SHOC", lambda r: s.shoc_case(n2, r)),
        ("jacobi 2-D 5-point", lambda r: s.jacobi5_case(n2, r)),
        ("jacobi 2-D 9-point", lambda r: s.jacobi9_case(n2, r)),
        ("gaussian", lambda r: s.gaussian_case(n2, r)),
        ("grad2d", lambda r: s.grad2d_case(n2, r)),
        ("heat3d", lambda r: s.heat3d_case(n3, r)),
        ("poisson3d", lambda r: s.poisson_case(n3, r)),
        ("jacobi 3-D 7-point", lambda r: s.jacobi7_case(n3, r)),
        ("jacobi 3-D 13-point", lambda r: s.jacobi13_case(n3, r)),
        ("jacobi 3-D 19-point", lambda r: s.jacobi19_case(n3, r)),
        ("jacobi 3-D 27-point", lambda r: s.jacobi27_case(n3, r)),
        ("acoustic", lambda r: s.acoustic_case(512, (8, 64)[big], r)),
        ("separable convolution", lambda r: s.separable_case(n2, 17, r)),
    ]
    return cgo17 + stencils


def make(index: int, large: bool) -> Case:
    """Case `index` with its inputs (a generator seeded by the index: the same inputs every run)."""
    return entries(large)[index][1](np.random.default_rng(41 + index))


__all__ = ["Case", "entries", "make"]
