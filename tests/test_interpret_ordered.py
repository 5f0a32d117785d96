"""The one-pass float32 sum of products (lift.interpret.ordered, numpy's einsum with the reduced axis
outermost): the bits of the sequential fold `acc = acc + x_k * y_k`, or it declines."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, Size, fun, get, map, reduce, reduce_seq, transpose
from lift import zip as lzip
from lift.userfun.builtins import neg
from programs import gemv_program, matmul_program, mult

ordered = importlib.import_module("lift.interpret.ordered")
contract = importlib.import_module("lift.interpret.contract")
M, N = Size("M"), Size("N")


def same_bits(want, got, *, any_nan=False):
    """The same bits: signed zeros, infinities and the NaNs' signs and payloads included (with
    `any_nan`, NaN where `want` has NaN, whatever its bits)."""
    want, got = np.ascontiguousarray(want), np.ascontiguousarray(got)
    assert want.dtype == got.dtype == np.float32 and want.shape == got.shape
    keep = ~np.isnan(want) if any_nan else np.ones(want.shape, bool)
    assert np.array_equal(np.isnan(want), np.isnan(got))
    assert np.array_equal(want.view(np.uint32)[keep], got.view(np.uint32)[keep]), f"{got} != {want}"


def sequential(start, x, y):
    """The semantics: a k at a time, each product rounded to float32 before its add."""
    acc = np.array(start, np.float32)
    with np.errstate(all="ignore"):
        for k in range(x.shape[2]):
            acc = np.add(acc, np.multiply(x[:, :, k, None], y[:, k, None, :]))
    return acc


@pytest.fixture
def paths(monkeypatch):
    """How each float32 contraction was summed: "ordered", "blocks" or None (the general fold);
    every core from the smallest size on, so that the threaded blocks are exercised too."""
    monkeypatch.setattr(ordered, "PARALLEL_WORK", 0)
    monkeypatch.setattr(contract, "PARALLEL_WORK", 0)
    monkeypatch.setattr(ordered, "MIN_INNER", 16)
    seen: list = []
    one, blocks = contract.ordered_sum, contract._block_fold

    def spy_ordered(*args):
        r = one(*args)
        seen.append("ordered" if r is not None else None)
        return r

    def spy_blocks(*args):
        seen[-1] = "blocks"
        return blocks(*args)

    monkeypatch.setattr(contract, "ordered_sum", spy_ordered)
    monkeypatch.setattr(contract, "_block_fold", spy_blocks)
    return seen


def values(rng, shape, zeros=0.2, special=()):
    """Random float32 values with a fraction of +0.0 / -0.0 and the given special values."""
    a = rng.standard_normal(shape).astype(np.float32)
    a[rng.random(shape) < zeros / 2] = 0.0
    a[rng.random(shape) < zeros / 2] = -0.0
    for v in special:
        a.flat[rng.integers(a.size)] = v
    return a


def test_this_numpy_keeps_the_order():
    """The probe passes here (else the one-pass path is never taken and the benchmarks say so)."""
    assert ordered.in_order()


@pytest.mark.parametrize("oracle", ["fused", "pairwise"])
def test_the_probe_tells_a_fused_or_reordered_sum_apart(monkeypatch, oracle):
    def fused(x, y):  # acc + x * y rounded once
        acc = np.zeros((x.shape[0], x.shape[1], y.shape[2]))
        for k in range(x.shape[2]):
            acc = (acc + x[:, :, k, None].astype(np.float64) * y[:, k, None, :]).astype(np.float32)
        return acc.astype(np.float32)

    def pairwise(x, y):  # numpy's sum along the contiguous axis
        return np.add.reduce(np.ascontiguousarray((x[:, :, :, None] * y[:, None]).transpose(0, 1, 3, 2)), axis=3)

    ordered.in_order.cache_clear()
    monkeypatch.setattr(ordered, "_loop", fused if oracle == "fused" else pairwise)
    try:
        assert not ordered.in_order()
    finally:
        monkeypatch.undo()
        ordered.in_order.cache_clear()
    assert ordered.in_order()


@pytest.mark.parametrize(("m", "n", "k"), [(17, 16, 1), (16, 33, 40), (40, 17, 129), (1, 40, 7), (33, 1, 20),
                                           (19, 18, 3)])
def test_matmul_keeps_the_bits_of_the_element_wise_semantics(paths, m, n, k):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a, bt = values(rng, (m, k)), values(rng, (n, k))
    same_bits(lift.interpret(matmul_program(), a, bt, batched=False), lift.interpret(matmul_program(), a, bt))
    assert paths == ["ordered"]


@pytest.mark.parametrize("special", [[np.inf], [-np.inf, 0.0], [np.nan], [np.inf, -np.inf, np.nan]])
def test_infinities_and_nans_take_the_block_fold_with_the_same_bits(paths, monkeypatch, special):
    """Non-finite operands: the block fold (whose NaNs may differ from the element-wise ones in
    sign: the default NaN of inf - inf against an input's NaN, met in either order)."""
    monkeypatch.setattr(contract, "MIN_COLUMNS", 2)
    rng = np.random.default_rng(len(special))
    a, bt = values(rng, (18, 21), special=special), values(rng, (20, 21), special=special)
    same_bits(lift.interpret(matmul_program(), a, bt, batched=False), lift.interpret(matmul_program(), a, bt),
              any_nan=True)
    assert paths == ["blocks"]


def test_overflow_of_finite_values_keeps_the_bits(paths):
    """inf from an overflowing sum, NaN from inf - inf: the default NaN whatever the operand order."""
    rng = np.random.default_rng(3)
    a, bt = values(rng, (17, 9)) * np.float32(1e19), values(rng, (16, 9)) * np.float32(1e19)
    want = lift.interpret(matmul_program(), a, bt, batched=False)
    assert np.isinf(want).any() and np.isnan(want).any()
    same_bits(want, lift.interpret(matmul_program(), a, bt))
    assert paths == ["ordered"]


def with_init():
    """map((row, c) => map(col => reduce(add, c) << map(mult) << zip(row, col)) << B^T) << zip(A, cs):
    a start per row of the output."""
    return fun([Array(Array(Float, Size("K")), M), Array(Array(Float, Size("K")), N), Array(Float, M)],
               lambda a, bt, cs: map(lambda rc: map(lambda col: reduce(lift.add, get(1, rc)) << map(mult)
                                                    << lzip(get(0, rc), col)) << bt) << lzip(a, cs))


@pytest.mark.parametrize(("init", "path"), [("zeros", "ordered"), ("ones", "ordered"), ("signed zeros", "blocks"),
                                            ("random", "ordered"), ("nan", "blocks")])
def test_a_start_per_row_is_a_first_term_of_the_sum(paths, init, path):
    rng = np.random.default_rng(5)
    a, bt = values(rng, (20, 11)), values(rng, (70, 11))
    cs = {"zeros": np.zeros(20), "ones": np.ones(20), "signed zeros": np.where(rng.random(20) < 0.5, -0.0, 0.0),
          "random": values(rng, 20, zeros=0.0), "nan": np.where(rng.random(20) < 0.3, np.nan, 1.0)}[init]
    cs = np.asarray(cs, np.float32)
    same_bits(lift.interpret(with_init(), a, bt, cs, batched=False), lift.interpret(with_init(), a, bt, cs))
    assert paths == [path]


@pytest.mark.parametrize("start", ["zeros", "constant", "rows", "columns", "both", "-0.0", "inf"])
def test_ordered_sum_takes_a_start_of_one_varying_axis(monkeypatch, start):
    monkeypatch.setattr(ordered, "MIN_INNER", 16)
    rng = np.random.default_rng(11)
    x, y = values(rng, (2, 17, 9)), values(rng, (2, 9, 20))
    s = {"zeros": np.zeros((2, 17, 20)), "constant": np.full((2, 17, 20), 0.75),
         "rows": np.broadcast_to(values(rng, (2, 17, 1), zeros=0.0), (2, 17, 20)),
         "columns": np.broadcast_to(values(rng, (2, 1, 20), zeros=0.0), (2, 17, 20)),
         "both": values(rng, (2, 17, 20), zeros=0.0), "-0.0": np.full((2, 17, 20), -0.0),
         "inf": np.full((2, 17, 20), np.inf)}[start].astype(np.float32)
    got = ordered.ordered_sum(s, x, y)
    if start in ("both", "-0.0", "inf"):
        assert got is None
    else:
        same_bits(sequential(s, x, y), got)


@pytest.mark.parametrize("view", ["transposed", "reversed", "strided"])
def test_ordered_sum_of_views_and_the_tiled_copy(monkeypatch, view):
    monkeypatch.setattr(ordered, "PARALLEL_WORK", 0)
    monkeypatch.setattr(ordered, "MIN_INNER", 16)
    rng = np.random.default_rng(13)
    big = values(rng, (3, 45, 70))
    x = {"transposed": big.transpose(0, 2, 1)[:, :37, :20], "reversed": big[:, ::-1, ::-1][:, :37, :20],
         "strided": big[:, ::2, ::3][:, :, :20]}[view]
    y = values(rng, (3, 20, 2)) if view != "strided" else big[:, 5:25, 40:43]
    np.testing.assert_array_equal(ordered.contiguous(x), np.ascontiguousarray(x))
    np.testing.assert_array_equal(ordered.contiguous(x.transpose(0, 2, 1)), np.ascontiguousarray(x.transpose(0, 2, 1)))
    s = np.zeros((3, x.shape[1], y.shape[2]), np.float32)
    same_bits(sequential(s, x, y), ordered.ordered_sum(s, x, y))


@settings(max_examples=max(10, settings().max_examples // 4))
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 50), batch=st.integers(1, 3),
       zeros=st.sampled_from([0.0, 0.3, 0.9]), seed=st.integers(0, 2**16))
def test_ordered_sum_is_the_sequential_fold(monkeypatch_module, m, n, k, batch, zeros, seed):
    """Random sizes (not multiples of the copy's tile or of the cores' share), signed zeros, every
    core: the bits of the sequential loop whenever the one-pass path accepts."""
    rng = np.random.default_rng(seed)
    x, y = values(rng, (batch, m, k), zeros=zeros), values(rng, (batch, k, n), zeros=zeros)
    s = np.full((batch, m, n), 0.5 if seed % 2 else 0.0, np.float32)
    got = ordered.ordered_sum(s, x, y)
    assert (got is None) == (max(m, n) < ordered.MIN_INNER)
    if got is not None:
        same_bits(sequential(s, x, y), got)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    mp.setattr(ordered, "PARALLEL_WORK", 0)
    mp.setattr(ordered, "MIN_INNER", 16)
    yield mp
    mp.undo()



def mm_transpose():
    """map(row => map(col => reduce(add) << map(mult) << zip(row, col)) << transpose(B)) << A."""
    return fun([Array(Array(Float, Size("K")), M), Array(Array(Float, N), Size("K"))],
               lambda a, b: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(mult) << lzip(r, c))
                                << transpose(b)) << a)


def mm_lambda():
    """matmul with the accumulating lambda `(acc, p) => acc + p[0] * p[1]`, and a start of 0.5."""
    return fun([Array(Array(Float, Size("K")), M), Array(Array(Float, Size("K")), N)],
               lambda a, bt: map(lambda r: map(lambda c: reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.5)
                                               << lzip(r, c)) << bt) << a)


def mm_batched():
    """A matmul per pair of a batch, negated: inside two more maps."""
    b = Size("B")
    return fun([Array(Array(Array(Float, Size("K")), M), b), Array(Array(Array(Float, Size("K")), N), b)],
               lambda xs, ys: map(lambda p: map(map(neg)) << map(lambda r: map(
                   lambda c: reduce(lift.add, 0.0) << map(mult) << lzip(r, c)) << get(1, p)) << get(0, p))
               << lzip(xs, ys))


CONTEXTS = {  # a program and the shapes of its inputs for (m, n, k)
    "matmul": (matmul_program, lambda m, n, k: [(m, k), (n, k)]),
    "transpose << B": (mm_transpose, lambda m, n, k: [(m, k), (k, n)]),
    "accumulating lambda": (mm_lambda, lambda m, n, k: [(m, k), (n, k)]),
    "batched, negated": (mm_batched, lambda m, n, k: [(2, m, k), (2, n, k)]),
    "gemv": (gemv_program, lambda m, n, k: [(m, k), (k,)]),
    "start per row": (with_init, lambda m, n, k: [(m, k), (n, k), (m,)]),
}


@settings(max_examples=max(12, settings().max_examples // 2))
@given(context=st.sampled_from(sorted(CONTEXTS)), m=st.integers(1, 20), n=st.integers(1, 20),
       k=st.integers(1, 24), zeros=st.sampled_from([0.0, 0.3, 0.9]),
       special=st.sampled_from([(), (np.inf,), (np.nan,), (-np.inf, np.inf)]), seed=st.integers(0, 2**16))
def test_sums_of_products_in_context_keep_the_bits(monkeypatch_module, context, m, n, k, zeros, special, seed):
    """Matmul written several ways, gemv, inside other maps, with a start per row: with the one-pass
    path from two outputs on and every core, the bits of the element-wise semantics; taken
    whenever the operands are finite (the start here has no -0.0)."""
    build, shapes = CONTEXTS[context]
    rng = np.random.default_rng(seed)
    args = [values(rng, s, zeros=zeros if len(s) > 1 else 0.0, special=special if len(s) > 1 else ())
            for s in shapes(m, n, k)]
    taken: list = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ordered, "MIN_INNER", 1)
        one = contract.ordered_sum
        mp.setattr(contract, "ordered_sum", lambda *a: taken.append(one(*a)) or taken[-1])
        got = lift.interpret(build(), *args)
    same_bits(lift.interpret(build(), *args, batched=False), got, any_nan=bool(special))
    wide = max(m, 1 if context == "gemv" else n) >= 2
    assert [r is not None for r in taken] == ([wide and not special] if wide or taken else [])
