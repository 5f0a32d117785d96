"""Index width (lift/codegen/width.py): 64-bit indices where a size, bound or id can pass 2^31 - 1.

Regression tests for issue 14, defects 1 (loop bounds and ids were `int`: a size past 2^31 - 1
compiled and hung) and 6 (a huge zero-stride argument was numpy's MemoryError before the size check).
The generated source is checked without running the huge sizes.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, map_glb, map_seq, pad, reduce, slide, zip
from lift.codegen import generate
from lift.errors import DeviceError

N, M = Size("N"), Size("M")


def _loops(src: str) -> list[str]:
    return re.findall(r"for \((\w+) \w+ = ", src) + re.findall(r"\n\s+(\w+) \w+ = get_\w+_id", src)


def test_reduce_over_a_pad_past_int_max_loops_with_long() -> None:
    prog = fun([Array(Float, 16)], lambda x: reduce(lift.add, 0.0) << pad(0, 2**31, 0.0) << x)
    src = generate(prog).source
    assert "for (long i = 0; i < 2147483664; i++)" in src
    assert "int" not in _loops(src)


def test_dot_over_2_pow_33_uses_long_ids_and_bounds() -> None:
    big = Array(Float, 2**33)
    dot = fun([big, big], lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))
    src = generate(dot).source
    assert "int i < 8589934592" not in src
    assert set(_loops(src)) == {"long"}


def test_wide_kernel_takes_long_sizes_and_long_helpers() -> None:
    prog = fun([Array(Array(Float, 2**20), N)],
               lambda a: map_glb(map_seq(lift.id)) << pad(0, 2**12, 0.0) << a)
    plan = generate(prog)
    assert "long N" in plan.source and "int N" not in plan.source
    assert {a.ctype for ln in plan.launches for a in ln.args if a.kind == "size"} == {"long"}
    assert plan.index_limits == ()


def test_small_kernels_stay_32_bit() -> None:
    prog = fun([Array(Float, N)], lambda x: map_glb(lift.id) << x)
    plan = generate(prog)
    assert set(_loops(plan.source)) == {"int"} and "long" not in plan.source
    assert {a.ctype for ln in plan.launches for a in ln.args if a.kind == "size"} == {"int"}


def test_symbolic_product_past_int_max_is_regenerated_with_long_at_call() -> None:
    prog = fun([Array(Array(Float, M), N)], lambda a: map_glb(map_seq(lift.id)) << a)
    k = lift.compile(prog)
    assert any(str(x) in ("M*N - 1", "M*N") for x in k.plan.index_limits)
    ok = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(k(ok), ok)
    assert "long" not in k.source  # small sizes: the 32-bit kernel
    side = max(2**16, math.isqrt(k.device.max_alloc_bytes // 4) + 1)  # 16 GiB, or past a bigger device's limit
    huge = np.broadcast_to(np.float32(1.0), (side, side))  # zero strides: no memory
    with pytest.raises(DeviceError, match="allocation"):  # past the device, not past the indices
        k(huge)
    assert "long N" in k.source and k.plan.index_limits == ()
    np.testing.assert_array_equal(k(ok), ok)  # the 64-bit kernel runs small sizes too


def test_symbolic_sizes_past_int_max_run_with_long_indices() -> None:
    # 2^11 windows of a padded input whose indices pass 2^31 - 1 once N > 2^20: no 8 GiB argument needed
    prog = fun([Array(Float, N)], lambda x: map(reduce(lift.add, 0.0)) << slide(2, 2**20)
               << pad(0, 2**31 - 2**20, 0.0) << x)
    k = lift.compile(prog)
    want = np.zeros(2048, np.float32)  # (the interpreter would materialise the 8 GiB padded array)
    want[0] = 2.0
    np.testing.assert_array_equal(k(np.ones(2**20, np.float32)), want)
    assert "long" not in k.source
    got = k(np.ones(2**21, np.float32))  # the last index is 2^31 + 2^20 - 1
    assert "long" in k.source
    want = np.zeros(2049, np.float32)
    want[:2] = 2.0
    np.testing.assert_array_equal(got, want)


def test_huge_zero_stride_argument_is_checked_before_it_is_copied() -> None:
    prog = fun([Array(Float, 2**33)], lambda x: map_glb(lift.id) << x)
    k = lift.compile(prog)
    huge = np.broadcast_to(np.float32(1.0), (2**33,))
    with pytest.raises(DeviceError, match="allocation"):
        k(huge)


@pytest.mark.slow
def test_reduce_over_2_pow_31_runs_and_terminates() -> None:
    prog = fun([Array(Float, 16)], lambda x: reduce(lift.add, 0.0) << pad(0, 2**31, 1.0) << x)
    x = np.zeros(16, np.float32)
    got = lift.compile(prog)(x)
    assert got == np.float32(2**24)  # a float32 sum of ones stops growing at 2^24; an int loop never returned
