"""The default register blocks per device (rewrites/block_space.py `Registers`, issue 40): compiled
offline for the `cpu-avx512` and `cpu-avx2` profiles, the first choice of every GEMM-shaped nest
fills that device's vector registers at its native width; AVX2's are today's defaults."""

from __future__ import annotations

import re

import pytest
from test_epilogue import fc_relu, sgemm

import lift
from lift import Array, Float, fun, map, reduce, transpose, zip
from lift.devices import profile
from lift.explore.tune import _search_space
from lift.rewrites.block_space import AVX2, Registers


def matmul(m: int, k: int, n: int):
    """C = A B, B [K][N] read through `transpose`."""
    return fun([Array(Array(Float, k), m), Array(Array(Float, n), k)], lambda a, b: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << (transpose << b)) << a)


def a_bt(m: int, n: int, k: int):
    """A B^T, B given [N][K]: both operands read along K."""
    return fun([Array(Array(Float, k), m), Array(Array(Float, k), n)], lambda a, b: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << b) << a)


SHAPES = {
    "matmul 1024^3": lambda: matmul(1024, 1024, 1024),
    "matmul N=1000": lambda: matmul(1024, 1024, 1000),
    "matmul N=768": lambda: matmul(1024, 1024, 768),
    "A B^T 128 rows": lambda: a_bt(128, 1024, 1024),
    "sgemm 1024^3": lambda: sgemm(1024, 1024, 1024),  # beta C: an epilogue kernel, B's panels padded
    "relu(X W^T + b) 128x1000": lambda: fc_relu(128, 1024, 1000),
}
# (rows, cols, width, along, tail): AVX2 16 registers of float8, AVX-512 32 of float16 (float8 where
# 16 does not divide N: N = 1000); output form: R x C accumulators + C vectors + a broadcast
DEFAULTS = {
    "cpu-avx2": {
        "matmul 1024^3": (4, 2, 8, "output", None),
        "matmul N=1000": (2, 5, 8, "output", None),
        "matmul N=768": (4, 3, 8, "output", None),
        "A B^T 128 rows": (4, 2, 8, "reduced", None),
        "sgemm 1024^3": (4, 3, 8, "output", "pad"),
        "relu(X W^T + b) 128x1000": (4, 2, 8, "reduced", "exact"),
    },
    "cpu-avx512": {
        "matmul 1024^3": (4, 4, 16, "output", None),
        "matmul N=1000": (4, 5, 8, "output", None),
        "matmul N=768": (4, 6, 16, "output", None),
        "A B^T 128 rows": (4, 4, 16, "reduced", None),
        "sgemm 1024^3": (4, 6, 16, "output", "pad"),
        "relu(X W^T + b) 128x1000": (4, 5, 16, "reduced", "exact"),
    },
}


@pytest.mark.parametrize("device", sorted(DEFAULTS))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_default_blocks_of_each_profile(device: str, shape: str) -> None:
    prog = lift.compile(SHAPES[shape](), device=profile(device))
    chosen = prog.choices.points["auto_b0"]
    got = (chosen["rows"], chosen["cols"], chosen["width"], chosen["along"], chosen.get("tail"))
    assert got == DEFAULTS[device][shape], chosen
    rows, cols, width, along, _ = got
    regs = Registers.of(profile(device))
    used = (rows * cols + cols) * regs.per(width) + 1 if along == "output" else (rows * cols + rows + cols)
    assert used <= regs.count, (used, regs)
    assert re.search(rf"\bfloat{width}\b", prog.source), "the blocks' vectors are in the kernel"


def test_registers_of_a_device() -> None:
    assert Registers.of(profile("cpu-avx512")) == Registers(32, 16)
    assert Registers.of(profile("cpu-avx2")) == AVX2 == Registers(16, 8)
    assert Registers.of(profile("pocl-cpu")) == AVX2  # no facts: today's AVX2 blocks
    assert Registers.of(profile("nvidia")) == AVX2  # a GPU's default is gpu_tiles
    assert Registers(32, 16).widths == (16, 8, 4, 1) and AVX2.widths == (8, 16, 4, 1)
    assert (AVX2.per(16), Registers(32, 16).per(16), Registers(32, 16).per(8)) == (2, 1, 1)


def test_the_tuners_space_offers_the_devices_blocks_first() -> None:
    """The tuner's first seed is the space's first choice: the device's default block."""
    for device, first in (("cpu-avx512", (4, 4, 16)), ("cpu-avx2", (4, 2, 8))):
        _, structural, labels = _search_space(matmul(1024, 1024, 1024), {}, True, profile(device))
        doms = structural["auto_b0"]
        assert "auto_b0" in labels and (doms["rows"][0], doms["cols"][0], doms["width"][0]) == first, doms
