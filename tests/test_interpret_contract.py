"""The interpreter's fast paths for sums of products, recognised user operators and fresh twin
results: the same values as the element-wise semantics."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import lift
from lift import Array, Float, Int, Size, fun, get, map, reduce, user_fun
from lift import zip as lzip
from lift.interpret.twins import monoid
from lift.testing import assert_same
from programs import N, dot_program, matmul_program, rand

batch = importlib.import_module("lift.interpret.batch")
M = Size("M")
mult = user_fun(lambda x, y: x * y, name="mult")


def _spy(monkeypatch, name: str) -> list:
    """Whether each call of `batch.<name>` gave a result (not None), in call order."""
    seen: list = []
    original = getattr(batch, name)

    def spy(*args):
        r = original(*args)
        seen.append(r is not None)
        return r

    monkeypatch.setattr(batch, name, spy)
    return seen


@pytest.fixture
def contractions(monkeypatch):
    """The results of every precise contraction (None where it declined)."""
    return _spy(monkeypatch, "contract")


def rows_dot():
    """map((r, s) => reduce(add) << map(mult) << zip(r, s)) << zip(A, B): only batch axes."""
    return fun([Array(Array(Float, N), M), Array(Array(Float, N), M)],
               lambda a, b: map(lambda rs: reduce(lift.add, 1.5) << map(mult) << lzip(get(0, rs), get(1, rs)))
               << lzip(a, b))


def gemv_t():
    """map(col => reduce(add) << map(mult) << zip(v, col)) << B: v varies along no batch axis."""
    return fun([Array(Float, N), Array(Array(Float, N), M)],
               lambda v, b: map(lambda c: reduce(lift.add, 0.25) << map(mult) << lzip(v, c)) << b)


def gemv_init():
    """map((col, c) => reduce(add, c) << map(mult) << zip(v, col)) << zip(B, cs): a batched init."""
    return fun([Array(Float, N), Array(Array(Float, N), M), Array(Float, M)],
               lambda v, b, cs: map(lambda bc: reduce(lift.add, get(1, bc)) << map(mult) << lzip(v, get(0, bc)))
               << lzip(b, cs))


CASES = {
    "gemv with an init per column": lambda: (gemv_init(), rand(9), rand(5, 9), rand(5)),
    "dot": lambda: (dot_program(), rand(37), rand(37)),
    "matmul": lambda: (matmul_program(), rand(5, 7), rand(6, 7)),
    "matmul 1 row": lambda: (matmul_program(), rand(1, 7), rand(6, 7)),
    "rows": lambda: (rows_dot(), rand(4, 9), rand(4, 9)),
    "gemv by columns": lambda: (gemv_t(), rand(9), rand(3, 9)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_precise_sums_of_products_are_one_contraction(name, contractions):
    program, *args = CASES[name]()
    fast = lift.interpret(program, *args, precise=True)
    slow = lift.interpret(program, *args, precise=True, batched=False)
    assert contractions and all(contractions), contractions
    assert np.shape(fast) == np.shape(slow) and np.asarray(fast).dtype == np.float64
    assert_same(slow, fast, rtol=1e-12, atol=1e-12)


@pytest.fixture
def sequential(monkeypatch):
    """The float32 contraction from 2 columns on; the results of every call (None: declined)."""
    contract_mod = importlib.import_module("lift.interpret.contract")
    monkeypatch.setattr(contract_mod, "MIN_COLUMNS", 2)
    monkeypatch.setattr(contract_mod, "BLOCK", 64)  # a few rows per block
    monkeypatch.setattr(contract_mod, "PARALLEL_WORK", 0)  # blocks on every core
    return _spy(monkeypatch, "contract_sequential")


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_sums_of_products_keep_the_sequential_bits(name, contractions, sequential):
    program, *args = CASES[name]()
    args = [np.where(a > 0.7, -0.0, a).astype(np.float32) for a in args]  # signed zeros too
    fast = lift.interpret(program, *args)
    assert np.array_equal(bits(fast), bits(lift.interpret(program, *args, batched=False)))
    assert not contractions  # only the precise mode may reorder the sum
    used = name in ("matmul", "matmul 1 row", "gemv by columns", "gemv with an init per column")
    assert sequential == [used]


def test_integer_products_are_not_contracted(contractions):
    imult = user_fun(lambda x, y: x * y, name="imult")
    p = fun([Array(Int, N), Array(Int, N)], lambda x, y: reduce(lift.add, 0) << map(imult) << lzip(x, y))
    x = np.arange(1, 40, dtype=np.int32)
    assert lift.interpret(p, x, x, precise=True) == np.sum(x * x)
    assert contractions == [False]


@pytest.mark.parametrize(("fn", "op"), [
    (lambda x, y: x * y, "mult"), (lambda x, y: y * x, "mult"), (lambda x, y: x + y, "add"),
    (lambda x, y: x - y, None), (lambda x, y: x + x, None), (lambda x, y: (x + y) * 2.0, None),
    (lambda x, y: x if x > y else y, None),
])
def test_user_operators_recognised_by_what_they_compute(fn, op):
    f = user_fun(fn, name="op").specialise(Float, Float)
    assert monoid(f) == op


def test_twin_results_are_fresh_and_never_shared():
    """A twin returns what it computed without a copy, but copies an argument it returns and a
    component that another component shares."""
    ident = user_fun(lambda x: x, name="ident").specialise(Float)
    pair = user_fun(lambda x: (x * 2.0, x * 2.0), name="pair").specialise(Float)
    dup = user_fun(lambda x: (x, x), name="dup").specialise(Float)
    x = np.arange(6, dtype=np.float32)
    assert not np.shares_memory(ident.np_fn(x), x)
    p0, p1 = pair.np_fn(x)
    d0, d1 = dup.np_fn(x)
    for u, v in ((p0, p1), (d0, d1), (d0, x), (d1, x)):
        assert not np.shares_memory(u, v)
    twice = mult.specialise(Float, Float).np_fn(x, x)
    assert twice.base is None and np.array_equal(twice, x * x)
