"""The batched interpreter against the element-wise one (the plain semantics), and its contract:
exact float32 reduction order, visible fallbacks, results that never alias the arguments."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import lift
from lift import Array, Float, Int, Size, fun, get, join, let, map, reduce, reduce_seq, split, user_fun
from lift import zip as lzip
from lift.interpret import Stats
from lift.lower import lower
from lift.testing import assert_same, programs
from lift.userfun.builtins import neg
from programs import N, dot_program, matmul_program, rand, stencil2d_program

batch = importlib.import_module("lift.interpret.batch")
fold_mod = importlib.import_module("lift.interpret.fold")
M = Size("M")


def identical(a, b):
    """Equal bit for bit (NaNs equal), tuples component-wise, dtypes too."""
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            identical(x, y)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, f"{b.dtype}{b.shape} != {a.dtype}{a.shape}"
    assert np.array_equal(a, b, equal_nan=True), f"{b} != {a}"


def both_ways(program, *args):
    stats = Stats()
    fast = lift.interpret(program, *args, stats=stats)
    slow = lift.interpret(program, *args, batched=False)
    identical(slow, fast)
    fast_p = lift.interpret(program, *args, precise=True)
    slow_p = lift.interpret(program, *args, precise=True, batched=False)
    assert_same(slow_p, fast_p, rtol=1e-9, atol=1e-9)
    return stats


@given(case=programs())
def test_batched_equals_element_wise(case):
    """Random programs of lift.testing: the same bits in float32, the same values in float64."""
    stats = both_ways(case.program, *case.inputs)
    assert not stats.fallbacks


@settings(max_examples=max(10, settings().max_examples // 3))  # a third of the profile's examples
@given(case=programs(scalar=Float))
def test_batched_equals_element_wise_lowered(case):
    """The same programs lowered to OpenCL patterns (map_glb, map_seq, reduce_seq, kernels)."""
    both_ways(lower(case.program), *case.inputs)


@pytest.mark.parametrize("chunk,loop_batch", [(3, 1 << 30), (1 << 20, 1), (5, 4)])
@given(case=programs())
@settings(max_examples=max(10, settings().max_examples // 4))
def test_every_fold_strategy(chunk, loop_batch, case):
    """Fused reductions in small chunks, per element, and numpy folds give the same bits."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch, "CHUNK", chunk)
        mp.setattr(batch, "LOOP_BATCH", loop_batch)
        mp.setattr(fold_mod, "LOOP_BATCH", loop_batch)
        both_ways(case.program, *case.inputs)


def test_examples_batched():
    a, b = rand(9, 5), rand(6, 5, seed=1)
    assert not both_ways(matmul_program(), a, b).fallbacks
    assert not both_ways(dot_program(), rand(100), rand(100, seed=2)).fallbacks
    assert not both_ways(stencil2d_program(), rand(3, 3), rand(6, 9)).fallbacks


# ------------------------------------------------------------------ exact order


def test_float32_sum_is_sequential():
    x = np.random.default_rng(0).random(1 << 17).astype(np.float32)
    acc = np.float32(0.25)
    for v in x[:4096]:
        acc = np.float32(acc + v)
    prog = fun([Array(Float, N)], lambda v: reduce(lift.add, 0.25) << v)
    assert lift.interpret(prog, x[:4096]) == acc
    exact = 0.25 + float(x.astype(np.float64).sum())
    got, wide = lift.interpret(prog, x), lift.interpret(prog, x, precise=True)
    assert wide.dtype == np.float64 and abs(wide - exact) < 1e-6 < abs(got - exact)


@pytest.mark.parametrize("op", [lift.max_, lift.min_])
def test_max_min_keep_the_last_of_equal_values_and_nans(op):
    data = np.array([0.0, -0.0, 1.0, -0.0, 0.0, -0.0, np.nan, 2.0, -1.0], dtype=np.float32)
    for cut in range(1, len(data) + 1):
        for xs in (data[:cut], -data[:cut], np.abs(data[:cut]) * 0.0):
            identical(lift.interpret(fun([Array(Float, N)], lambda v: reduce(op, 0.0) << v), xs, batched=False),
                      lift.interpret(fun([Array(Float, N)], lambda v: reduce(op, 0.0) << v), xs))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5000])
def test_top_level_fold_of_a_mapped_array(n):
    x = rand(n)
    for op, z in ((lift.add, 0.5), (lift.mult, 1.0), (lift.max_, -1e30), (lift.min_, 1e30)):
        prog = fun([Array(Float, N)], lambda v, op=op, z=z: reduce(op, z) << map(neg) << v)
        identical(lift.interpret(prog, x, batched=False), lift.interpret(prog, x))


def test_accumulating_lambda_is_a_fused_fold():
    x, y = rand(5000), rand(5000, seed=3)
    prog = fun([Array(Float, N), Array(Float, N)],
               lambda a, b: reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0) << lzip(a, b))
    identical(lift.interpret(prog, x, y, batched=False), lift.interpret(prog, x, y))


# ------------------------------------------------------------------ fallbacks


def test_a_user_function_without_numpy_twin_falls_back_visibly(caplog):
    twice = user_fun.c("twice", ["a"], "return a * 2;", [Float], Float, py_fn=lambda a: a * 2)
    prog = fun([Array(Array(Float, N), M)], lambda x: map(lambda r: reduce(lift.add, 0.0) << map(twice) << r) << x)
    a = rand(4, 6)
    stats = Stats()
    with caplog.at_level("DEBUG", logger="lift.interpret"):
        got = lift.interpret(prog, a, stats=stats)
    assert stats.fallbacks and "twice has no numpy twin" in stats.fallbacks[0]
    assert "element-wise evaluation" in caplog.text
    identical(lift.interpret(prog, a, batched=False), got)


# ------------------------------------------------------------------ no views of the arguments


@pytest.mark.parametrize("make", [
    lambda: fun([Array(Float, N)], lambda v: v),
    lambda: fun([Array(Float, N)], lambda v: join << split(2) << v),
    lambda: fun([Array(Float, N)], lambda v: let(lambda w: w) << v),
    lambda: fun([Array(Float, N), Array(Float, N)], lambda v, w: lzip(v, w)),
    lambda: fun([Array(Float, N), Array(Float, N)], lambda v, w: map(get(0)) << lzip(v, w)),
    lambda: fun([Array(Float, N), Array(Float, N)], lambda v, w: (w, v)),
])
@pytest.mark.parametrize("batched", [True, False])
def test_results_never_alias_the_arguments(make, batched):
    prog = make()
    args = [np.arange(8, dtype=np.float32) for _ in prog.params]
    before = [a.copy() for a in args]
    out = lift.interpret(prog, *args, batched=batched)
    for o in out if isinstance(out, tuple) else (out,):
        assert not any(np.shares_memory(o, a) for a in args)
        o[...] = -1
    for a, b in zip(args, before):
        identical(b, a)


def test_int_reductions_wrap_like_the_sequence():
    x = np.full(1000, 2**30, dtype=np.int32)
    prog = fun([Array(Int, N)], lambda v: reduce(lift.add, 7) << v)
    identical(lift.interpret(prog, x, batched=False), lift.interpret(prog, x))


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SMALL = {"axpy": (6,), "dot": (13,), "gemv": (24, 40), "matmul": (32, 32, 8), "stencil2d": (20, 36),
         "conv": (6, 3, 8)}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_example_variant_batched(name):
    """Every hand-lowered variant (map_wrg/map_lcl, to_local, let, private array accumulators,
    vectors) interprets batched to the same bits as element-wise, without falling back."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        module = importlib.import_module(name)
    finally:
        sys.path.remove(str(EXAMPLES))
    args = module.inputs(*SMALL[name])
    for v in module.variants():
        assert not both_ways(v.program, *args).fallbacks, v.name


def test_tuple_arguments_in_both_modes():
    from lift import Tuple

    pts = (np.arange(8, dtype=np.float32), np.arange(8, dtype=np.float32) * 0.5)
    prog = fun([Array(Tuple(Float, Float), N)], lambda ps: reduce(lift.add, 0.0) << map(lambda p: p[0] * p[1]) << ps)
    assert not both_ways(prog, pts).fallbacks
    assert lift.interpret(prog, pts, precise=True).dtype == np.float64


def _cube(x):
    return x * x * x


@user_fun
def _poly(a: Float) -> Float:
    return _cube(a) * 0.1 + lift.mult(a, 3.0)


@user_fun
def _poly2(a: Float, b: Float) -> Float:
    return _poly(a) - _poly(b)


def test_user_functions_calling_user_functions_are_twins_in_both_modes():
    """A user function's callees run through their own (in precise mode: float64) twins."""
    x, y = rand(40), rand(40, seed=5)
    prog = fun([Array(Float, N), Array(Float, N)], lambda a, b: map(lambda p: _poly2(p[0], p[1])) << lzip(a, b))
    assert not both_ways(prog, x, y).fallbacks
    wide = lift.interpret(prog, x, y, precise=True)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    np.testing.assert_allclose(wide, (x64**3 * 0.1 + 3 * x64) - (y64**3 * 0.1 + 3 * y64), rtol=1e-12)
