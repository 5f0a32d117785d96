"""Arg-min and arg-max steps (`lift.userfun.facts.selection`): a tuple operator that keeps its
accumulator unless the element's key is strictly better is folded in parallel chunks, their
partial results folded in order (rules.reduce.folds_in_order, the `reduce_chunks` point), exactly
as the sequential fold, ties and NaN keys included; over positions (`zip(iota(n), x)`) each chunk
in vector lanes combined by key, then position (rewrites/argbest.py); the program's result may be a
component of the reduction (`get(0) << reduce(..)`: the last kernel writes it)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, Int, Tuple, fun, get, iota, reduce, select, user_fun, zip
from lift.ir.nodes import Literal, MakeTuple
from lift.rewrites.auto import auto_points
from lift.rewrites.chunks import ReduceChunks
from lift.rules.reduce import folds_in_order
from lift.userfun.facts import Selection, selection
from programs import apply_choice

INF = float("inf")


def _first_min(a, b):
    return select(b[1] < a[1], b, a)


def _first_max(a, b):  # the key first, compared the other way round, a conditional expression
    return b if a[0] < b[0] else a


def _loose(a, b):  # keeps the element on ties: a NaN element replaces the accumulator
    return select(a[1] <= b[1], a, b)


def _mixed(a, b):  # the components chosen by different comparisons
    return (select(b[1] < a[1], b[0], a[0]), select(b[1] > a[1], b[1], a[1]))


pair_if = [Tuple(Int, Float)] * 2
first_min = user_fun(_first_min, pair_if, Tuple(Int, Float), name="first_min")
first_max = user_fun(_first_max, [Tuple(Float, Int)] * 2, Tuple(Float, Int), name="first_max")
loose = user_fun(_loose, pair_if, Tuple(Int, Float), name="loose")
mixed = user_fun(_mixed, pair_if, Tuple(Int, Float), name="mixed")


def test_the_steps_are_read_from_what_they_compute() -> None:
    assert selection(first_min) == Selection(1, True)
    assert selection(first_max) == Selection(0, False)
    assert selection(loose) is None  # `<=`: not the same fold once a key is NaN
    assert selection(mixed) is None
    assert selection(lift.add) is None


def _z(i: int, v: float) -> object:
    """The initial value `tuple(i, v)` as a program spells it."""
    prog = fun([Array(Float, 8)], lambda x: reduce(first_min, (i, v)) << zip(iota(8), x))
    z = prog.body.args[0]
    assert isinstance(z.f, MakeTuple) and all(isinstance(a, Literal) for a in z.args)
    return z


def test_folded_in_order_only_from_a_key_that_is_not_nan() -> None:
    assert folds_in_order(first_min, _z(-1, INF))
    assert folds_in_order(first_min, _z(0, 3.0))
    assert not folds_in_order(first_min, _z(-1, math.nan))
    assert not folds_in_order(loose, _z(-1, INF))


def argmin(n: int):
    return fun([Array(Float, n)], lambda x: get(0) << (reduce(first_min, (-1, INF)) << zip(iota(n), x)))


def argmax(n: int):
    return fun([Array(Float, n)], lambda x: get(1) << (reduce(first_max, (-INF, -1)) << zip(x, iota(n))))


def _data(n: int, seed: int, nan: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, n).astype(np.float32)  # many ties
    if nan:
        x[rng.integers(0, n, 3)] = np.nan
    return x


@settings(max_examples=25, deadline=None)
@given(n=st.sampled_from([16, 48, 64]), size=st.sampled_from([4, 8, 16]), which=st.sampled_from(["min", "max"]),
       nan=st.booleans(), seed=st.integers(0, 50))
def test_the_chunked_fold_equals_the_sequential_one(n: int, size: int, which: str, nan: bool, seed: int) -> None:
    prog = (argmin if which == "min" else argmax)(n)
    placed = auto_points(prog, {}, min_length=1)
    lab = next(p.label for _, p in lift.ir.paths.walk(placed) if isinstance(p, ReduceChunks))
    out, _ = apply_choice(placed, lab, {"width": 1, "combine": "kernel", "tail": False, "pad": False,
                                        "size": size})
    assert any(isinstance(x, lift.ir.nodes.Split) for _, x in lift.ir.paths.walk(out))
    x = _data(n, seed, nan)
    assert lift.interpret(out, x) == lift.interpret(prog, x)


@settings(max_examples=25, deadline=None)
@given(width=st.sampled_from([4, 8, 16]), size=st.sampled_from([1, 2, 4]), which=st.sampled_from(["min", "max"]),
       nan=st.booleans(), seed=st.integers(0, 50))
def test_lanes_over_positions_equal_the_sequential_fold(width: int, size: int, which: str, nan: bool,
                                                        seed: int) -> None:
    """Lane l folds every width-th element; the lanes are combined by key, then position
    (rewrites/argbest.py): the first best, ties and NaNs as the sequential fold has them."""
    n = 128
    prog = (argmin if which == "min" else argmax)(n)
    placed = auto_points(prog, {}, min_length=1)
    lab = next(p.label for _, p in lift.ir.paths.walk(placed) if isinstance(p, ReduceChunks))
    out, _ = apply_choice(placed, lab, {"width": width, "combine": "kernel", "tail": False, "pad": False,
                                        "size": size})
    assert any(isinstance(x, lift.ir.nodes.AsVector) for _, x in lift.ir.paths.walk(out))
    x = _data(n, seed, nan)
    assert lift.interpret(out, x) == lift.interpret(prog, x)


def test_lanes_need_the_positions() -> None:
    n = 64
    keyed = fun([Array(Int, n), Array(Float, n)], lambda ids, x: get(0) << (reduce(first_min, (-1, INF))
                                                                             << zip(ids, x)))
    placed = auto_points(keyed, {}, min_length=1)
    lab = next(p.label for _, p in lift.ir.paths.walk(placed) if isinstance(p, ReduceChunks))
    _, out = apply_choice(placed, lab, {"width": 8, "combine": "kernel", "tail": False, "pad": False, "size": 2},
                          "positions")
    assert not out.applied  # ids need not be positions: the lanes could not be combined by them


def test_the_atomic_combine_and_the_tail_step_are_refused() -> None:
    placed = auto_points(argmin(60), {}, min_length=1)
    lab = next(p.label for _, p in lift.ir.paths.walk(placed) if isinstance(p, ReduceChunks))
    _, out = apply_choice(placed, lab, {"width": 1, "combine": "atomic", "tail": False, "pad": False, "size": 6},
                          "no atomic combine")
    assert not out.applied
    _, out = apply_choice(placed, lab, {"width": 1, "combine": "kernel", "tail": True, "pad": False, "size": 8},
                          "not commutative")
    assert not out.applied


@pytest.mark.device
@pytest.mark.parametrize("which,nan", [("min", False), ("max", True)])
def test_compiled_by_default_in_parallel_chunks(which: str, nan: bool) -> None:
    n = 1 << 16
    prog = (argmin if which == "min" else argmax)(n)
    compiled = lift.compile(prog)
    lab = next(k for k in compiled.choices.points if k.startswith("auto_r"))
    chosen = compiled.choices.points[lab]
    assert chosen["combine"] == "kernel" and chosen["width"] == 16, compiled.choices
    # the combining kernel runs at the end of the chunks' one, by its last work-item (lift.codegen.tails)
    assert len(compiled.kernels) == (1 if compiled.device.kind == "cpu" else 2)
    x = _data(n, 3, nan)
    got = compiled(x)
    assert got == lift.interpret(prog, x)
    clean = np.where(np.isnan(x), np.float32(np.inf if which == "min" else -np.inf), x)
    want = np.argmin(clean) if which == "min" else np.argmax(clean)
    assert got == want  # the first minimum or maximum (ties keep the accumulator), NaNs skipped
