"""The default lowering: outermost map -> map_glb, the rest map_seq, reduce -> reduce_seq, kernel stages."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from codegen_oracle import check, floats
from lift import Array, Float, Size, fun, map, reduce, transpose, zip
from lift.ir import nodes as n
from lift.ir.paths import walk
from lift.lower import lower
from lift.types import types_equal

N, M = Size("N"), Size("M")
RNG = np.random.default_rng(5)


def _kinds(p) -> list[str]:
    return [type(x).__name__ for _, x in walk(p) if isinstance(x, n.AbstractMap | n.AbstractReduce | n.OclKernel)]


def test_outermost_map_is_global_the_rest_sequential():
    p = fun([Array(Array(Float, M), N)], lambda a: map(map(lambda v: v + 1.0)) << a)
    low = lower(p)
    assert _kinds(low) == ["MapGlb", "MapSeq"]
    assert types_equal(low.body.type, p.body.type)


def test_element_wise_chain_stays_one_kernel():
    p = fun([Array(Float, N)], lambda x: map(lift.id) << map(lambda v: v * 2.0) << x)
    assert "OclKernel" not in _kinds(lower(p))


def test_dot_product_fuses_its_map_into_the_reduction():
    """reduce(add) << map(mult) << zip: map(mult) joins the operator, no temporary array, no MapGlb."""
    p = fun([Array(Float, N), Array(Float, N)], lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))
    low = lower(p)
    assert "ReduceSeq" in _kinds(low) and not any(isinstance(x, n.AbstractMap) for _, x in walk(low))
    assert not any(isinstance(x, n.Map | n.Reduce) for _, x in walk(low))


@pytest.mark.device
def test_lowered_programs_match_the_interpreter():
    a = floats(RNG, 8, 6)
    check(fun([Array(Array(Float, M), N)], lambda m: map(map(lambda v: v * 3.0)) << transpose
              << map(map(lambda v: v + 1.0)) << m), a)
    check(fun([Array(Array(Float, M), N)], lambda m: map(lambda r: reduce(lift.add, 0.0) << r) << m), a)


@pytest.mark.device
def test_compile_uses_the_lowering():
    x, y = floats(RNG, 100), floats(RNG, 100)
    dot = fun([Array(Float, N), Array(Float, N)], lambda u, v: reduce(lift.add, 0.0) << map(lift.mult) << zip(u, v))
    from lift.compile import compile as lift_compile

    np.testing.assert_allclose(lift_compile(dot, cache_dir=False)(x, y), lift.interpret(dot, x, y), rtol=1e-4)
