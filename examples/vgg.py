"""The nine VGG-16 convolution layers (thesis Table 4.3) from one annotated convolution (Listing 6.4).

The high-level convolution of Listing 4.1 is annotated with rewrite points; their structural
parameters choose the algorithm and its shape:

    windows = materialise[im2col](mapND2(joinND3) << slideND2(3, 3, 1))
              << materialise[pad](padND2(1, 1, 0)) << input
    output  = flatten[flat](tile_nested_map_reduce[tile](register_block[block](
                  mapND2(win => map(k => reduce(+, 0) << map(*) << zip(win, k)) << weights')), final=+))
              << windows

- direct: `im2col` skipped: the windows stay a view of the padded input, which `pad` copies
  into memory first (Listing 6.4 line 6: no branch per read in the convolution kernel);
- GEMM:   `im2col` applied (`mem="global"`): the windows are copied into a [H*W][9C] buffer
  (im2col, which pads as it copies: `pad` skipped), and the rest is a matrix multiplication
  of that buffer with the weights.

`flatten` joins the two spatial dimensions so that the nest is map(map(reduce)); `tile` splits
the reduced dimension (9C) into tiles whose partial sums are added by the final operator
(skipped by default: on a CPU the partial sums cost memory traffic); `block` computes
`rows` pixels x `cols` output channels per work-item with `width`-lane vector accumulators in
private memory (register blocking; its defaults are upper bounds that fit every layer).
Each layer's shapes are substituted into the program (as the thesis does).

    python examples/vgg.py --scale small     # spatial size 8x8: seconds
    python examples/vgg.py --scale full      # Table 4.3 sizes
    python examples/vgg.py --tune 60 --layers 2 --scale small   # lift.tune the direct variant
    python -m lift show examples/vgg.py      # `program` and `inputs()`: layer 2 at the small scale
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

import lift
from lift import Array, Float, fun, join_nd, map, map_nd, pad_nd, reduce, slide_nd, user_fun, zip
from lift import rewrites as rw

KH = KW = 3
STRIDE, PAD = 1, 1


@dataclass(frozen=True)
class Layer:
    """One VGG-16 convolution layer of Table 4.3: input channels, spatial size, output channels."""

    index: str
    cin: int
    size: int
    cout: int

    def scaled(self, scale: str) -> Layer:
        """The layer at `scale`: "full" as in Table 4.3, "small" with an 8x8 image."""
        return self if scale == "full" else Layer(self.index, self.cin, min(self.size, 8), self.cout)

    def flops(self) -> float:
        return 2.0 * self.size * self.size * self.cout * KH * KW * self.cin


LAYERS = (Layer("0", 3, 224, 64), Layer("2", 64, 224, 64), Layer("5", 64, 112, 128),
          Layer("7", 128, 112, 128), Layer("10", 128, 56, 256), Layer("12,14", 256, 56, 256),
          Layer("17", 256, 28, 512), Layer("19,21", 512, 28, 512), Layer("24,26,28", 512, 14, 512))


@user_fun
def mult(a: Float, b: Float) -> Float:
    return a * b


def annotated(layer: Layer, im2col: bool = True) -> Any:
    """Listing 6.4 (the points this compiler has) for `layer`'s shapes; without `im2col`
    the windows are never materialised (the direct algorithm only: what `--tune` explores)."""
    h = w = layer.size
    c, m = layer.cin, layer.cout
    types = [Array(Array(Array(Float, c), w), h), Array(Array(Array(Array(Float, c), KW), KH), m)]

    def conv(inp: Any, wts: Any) -> Any:
        slide = map_nd(2, join_nd(3)) << slide_nd(2, (KH, KW), STRIDE)
        padded = rw.materialise(pad_nd(2, PAD, PAD, 0.0), label="pad") << inp
        windows = (rw.materialise(slide, label="im2col") if im2col else slide) << padded
        flat_w = map(join_nd(3)) << wts
        pixel = map_nd(2, lambda win: map(lambda k: reduce(lift.add, 0.0) << map(mult) << zip(win, k)) << flat_w)
        nest = rw.tile_nested_map_reduce(rw.register_block(pixel, label="block"), final=lift.add, label="tile")
        return rw.flatten(nest, label="flat") << windows

    return fun(types, conv)


def choices(layer: Layer, variant: str) -> dict[str, Any]:
    """The structural parameters of `variant` ("direct" or "gemm"); the others take their
    domains' defaults (`block`: 2 x 4 blocks of float8 accumulators where the layer allows)."""
    direct = variant == "direct"
    return {"im2col": {"skip": True} if direct else {"mem": "global"},
            "pad": {"mem": "global"} if direct else {"skip": True}, "tile": {"skip": True}}


def reference(inp: np.ndarray, wts: np.ndarray) -> np.ndarray:
    """numpy convolution (zero padding 1, stride 1) through im2col and a matrix product."""
    p = np.pad(inp, ((PAD, PAD), (PAD, PAD), (0, 0)))
    oh, ow = p.shape[0] - KH + 1, p.shape[1] - KW + 1
    cols = np.stack([p[i:i + oh, j:j + ow, :] for i in range(KH) for j in range(KW)], axis=2)
    return cols.reshape(oh * ow, -1) @ wts.reshape(wts.shape[0], -1).T


def layer_inputs(layer: Layer, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A random image [size][size][cin] and weights [cout][3][3][cin]."""
    rng = np.random.default_rng(seed)
    return (rng.random((layer.size, layer.size, layer.cin), dtype=np.float32) - 0.5,
            rng.random((layer.cout, KH, KW, layer.cin), dtype=np.float32) - 0.5)


@dataclass
class Row:
    """One line of the report."""

    layer: str
    variant: str
    ok: bool
    seconds: float
    gflops: float
    memory: int

    def __str__(self) -> str:
        return (f"layer {self.layer:9} {self.variant:6} {'ok' if self.ok else 'WRONG':5} "
                f"{self.seconds * 1e3:9.3f} ms {self.gflops:8.2f} GFLOP/s {self.memory:12d} bytes")


def run_layer(layer: Layer, variant: str, repeat: int = 3) -> Row:
    """Compile `variant` for `layer`, check it against numpy, time it (median of `repeat`; 0: not timed)."""
    inp, wts = layer_inputs(layer)
    prog = lift.compile(annotated(layer), choices=choices(layer, variant))
    got = np.asarray(prog(inp, wts)).reshape(layer.size * layer.size, layer.cout)
    want = reference(inp.astype(np.float64), wts.astype(np.float64))
    ok = bool(np.allclose(got, want, rtol=1e-3, atol=1e-3))
    secs = statistics.median(prog.time(inp, wts, repeat=repeat)) if ok and repeat > 0 else float("nan")
    mem = int(sum(int(v) for v in prog.memory_bytes.values()))
    return Row(layer.index, variant, ok, secs, layer.flops() / secs / 1e9 if ok and repeat > 0 else 0.0, mem)


def main(argv: list[str] | None = None) -> bool:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=("small", "full"), default="small")
    ap.add_argument("--layers", default="", help="comma-separated layer indices (default: all nine)")
    ap.add_argument("--variants", default="direct,gemm")
    args = ap.parse_args(argv)
    wanted = set(args.layers.split(",")) if args.layers else None
    ok = True
    for layer in LAYERS:
        if wanted and not wanted & set(layer.index.split(",")):
            continue
        for variant in args.variants.split(","):
            row = run_layer(layer.scaled(args.scale), variant)
            print(row, flush=True)
            ok &= row.ok
    return ok


program = annotated(LAYERS[1].scaled("small"))


def inputs() -> tuple[np.ndarray, np.ndarray]:
    """Inputs of `program` (layer 2 at the small scale)."""
    return layer_inputs(LAYERS[1].scaled("small"))


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
