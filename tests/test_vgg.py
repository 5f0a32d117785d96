"""examples/vgg.py: the annotated convolution (Listing 6.4) gives a direct and a GEMM (im2col)
kernel for every VGG-16 layer of Table 4.3, both matching numpy; Listing 4.1 compiles on all nine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import conv  # noqa: E402
import vgg  # noqa: E402

from lift.codegen import generate  # noqa: E402
from lift.lower import lower  # noqa: E402
from lift.realise import substitute_sizes  # noqa: E402

LAYERS = [layer.index for layer in vgg.LAYERS]


@pytest.mark.device
@pytest.mark.parametrize("index", LAYERS)
def test_small_layer_direct_and_gemm_match_numpy(index: str) -> None:
    layer = next(x for x in vgg.LAYERS if x.index == index).scaled("small")
    rows = {v: vgg.run_layer(layer, v, repeat=0) for v in ("direct", "gemm")}
    assert rows["direct"].ok and rows["gemm"].ok
    h, c, m = layer.size, layer.cin, layer.cout
    data = 4 * (h * h * c + 9 * c * m + h * h * m)  # input, weights, output
    im2col, padded = 4 * h * h * 9 * c, 4 * (h + 2) ** 2 * c
    assert rows["gemm"].memory >= data + im2col  # the im2col buffer is counted
    assert rows["direct"].memory >= data + padded  # the padded copy of the input (no im2col)
    assert rows["gemm"].memory - rows["direct"].memory == im2col - padded


@pytest.mark.slow
@pytest.mark.device
@pytest.mark.parametrize("index", LAYERS)
def test_full_layer_direct_and_gemm_match_numpy(index: str) -> None:
    layer = next(x for x in vgg.LAYERS if x.index == index)
    assert vgg.run_layer(layer, "direct", repeat=0).ok and vgg.run_layer(layer, "gemm", repeat=0).ok


@pytest.mark.parametrize("index", LAYERS)
def test_listing_4_1_fits_every_layer(index: str) -> None:
    """No `map(mult)` temporary: the default lowering's buffers are the input, weights and output."""
    layer = next(x for x in vgg.LAYERS if x.index == index)
    sizes = {"H": layer.size, "W": layer.size, "C": layer.cin, "M": layer.cout}
    plan = generate(lower(substitute_sizes(conv.listing_4_1(), sizes)))
    need = 4 * (layer.size ** 2 * layer.cin + 9 * layer.cin * layer.cout + layer.size ** 2 * layer.cout)
    assert int(plan.memory_bytes["global"]) == need


def test_program_file_convention() -> None:
    """`program` and `inputs()` (the `lift show/tune FILE.py` convention) agree: layer 2, small scale."""
    inp, wts = vgg.inputs()
    params = vgg.program.params
    assert inp.shape == (8, 8, 64) and wts.shape == (64, 3, 3, 64)
    assert [str(p.ptype) for p in params] == ["[[[Float]64]8]8", "[[[[Float]64]3]3]64"]
