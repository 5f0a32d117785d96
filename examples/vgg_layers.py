"""The nine VGG-16 convolution layers as one program file for `lift tune-all` (issue 29).

`programs(scale)` returns each layer's annotated convolution (examples/vgg.py, Listing 6.4:
the tuner chooses direct or im2col/GEMM, the blocks, the mapping) with its arguments, named
by the layer's index in Table 4.3:

    lift tune-all examples/vgg_layers.py --budget 120                  # this machine
    lift tune-all examples/vgg_layers.py --budget 120 --ray ray://head:10001
    lift tune-all examples/vgg_layers.py --inputs '"full"' --budget 600 --ray auto
"""

from __future__ import annotations

from typing import Any

from vgg import LAYERS, annotated, layer_inputs


def programs(scale: str = "small") -> dict[str, tuple[Any, tuple[Any, ...]]]:
    """{layer name: (program, arguments)} of the nine layers at `scale` ("small": 8x8 images, "full")."""
    out = {}
    for layer in LAYERS:
        scaled = layer.scaled(scale)
        out[f"layer{layer.index}"] = (annotated(scaled), layer_inputs(scaled))
    return out
