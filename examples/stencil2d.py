"""A 3x3 weighted stencil with zero padding: thesis Listing 2.2 (map_wrg/map_lcl) with pad_nd.

    python examples/stencil2d.py [H] [W]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import Variant, Work, run_example

from lift import (
    Array,
    Float,
    Size,
    fun,
    join,
    map_glb,
    map_lcl,
    map_nd,
    map_wrg,
    pad_nd,
    reduce,
    reduce_seq,
    slide_nd,
    to_global,
    zip,
)

H, W = Size("H"), Size("W")
LOCAL = 64


def weighted_sum(nbh, weights):
    """reduce_seq(acc + l * r, 0) << zip(join(nbh), join(weights))."""
    return reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0) << zip(join << nbh, join << weights)


def high_level():
    """map_nd(2, nbh => reduce(acc + l * r, 0) << zip(...)) << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0)."""
    return fun([Array(Array(Float, 3), 3), Array(Array(Float, W), H)],
               lambda weights, img: map_nd(2, lambda nbh: reduce(lambda acc, p: acc + p[0] * p[1], 0.0)
                                           << zip(join << nbh, join << weights))
               << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0.0) << img)


def listing_2_2():
    """Thesis Listing 2.2: rows over work-groups, pixels over local work-items; padded input."""
    return fun([Array(Array(Float, 3), 3), Array(Array(Float, W), H)],
               lambda weights, img: map_wrg(
                   lambda row: map_lcl(to_global(lambda nbh: weighted_sum(nbh, weights)), label="pixels") << row,
                   label="rows") << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0.0) << img)


def global_2d():
    """One pixel per work-item over a 2-D ND-range."""
    return fun([Array(Array(Float, 3), 3), Array(Array(Float, W), H)],
               lambda weights, img: map_glb(
                   lambda row: map_glb(to_global(lambda nbh: weighted_sum(nbh, weights)), dim=0) << row,
                   dim=1) << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0.0) << img)


def variants() -> list[Variant]:
    """The ways the stencil is written here."""
    return [Variant("high-level (default lowering)", high_level()),
            Variant("Listing 2.2 + pad_nd", listing_2_2(), f"local size {LOCAL}", {"local_size": LOCAL}),
            Variant("2-D map_glb", global_2d())]


def inputs(h: int = 1024, w: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """3x3 weights and an image."""
    rng = np.random.default_rng(0)
    return rng.random((3, 3), dtype=np.float32), rng.random((h, w), dtype=np.float32)


def reference(weights: np.ndarray, img: np.ndarray) -> np.ndarray:
    """The stencil in numpy: nine shifted, weighted copies of the zero-padded image."""
    p = np.pad(img, 1)
    out = np.zeros_like(img)
    for di in range(3):
        for dj in range(3):
            out += weights[di, dj] * p[di:di + img.shape[0], dj:dj + img.shape[1]]
    return out


def work(weights: np.ndarray, img: np.ndarray) -> Work:
    """The image read and written once; 18 flops per pixel."""
    return Work(bytes=2.0 * img.nbytes, flops=18.0 * img.size)


def main(h: int = 1024, w: int = 1024) -> bool:
    weights, img = inputs(h, w)
    want = reference(weights.astype(np.float64), img.astype(np.float64))
    return run_example(f"stencil2d 3x3, {h} x {w}", variants(), (weights, img), want, work(weights, img),
                       lambda: reference(weights, img))


# The program file convention (`lift show|tune examples/stencil2d.py`): `program` and `inputs()`.
program = high_level()

if __name__ == "__main__":
    sys.exit(0 if main(*(int(a) for a in sys.argv[1:])) else 1)
