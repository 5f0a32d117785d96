"""A `Program` called from several threads at once gives each call its own right answer (issue 26
item 1): per-thread queues, kernels and buffers (lift/program.py `_Lane`), one specialisation per
shape (lift/specialise.py), and `lift.compile` serialised by `Z3_LOCK` (z3 is not thread-safe).
Before, two threads got each other's results and three first calls crashed z3."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, reduce, transpose, user_fun, zip
from lift.testing import assert_same

N, M, K = Size("N"), Size("M"), Size("K")


@user_fun
def twice(a: Float) -> Float:
    return a * 2.0


def scale():
    return fun([Array(Float, N)], lambda x: map(twice) << x)


def dot():
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))


def matmul():
    return fun([Array(Array(Float, K), M), Array(Array(Float, N), K)], lambda a, b: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << (transpose << b)) << a)


def together(work: list[Callable[[], Any]]) -> list[Any]:
    """Run each function in a thread of its own, all released at once; their results in order
    (an exception in a thread is raised here)."""
    start = threading.Barrier(len(work))
    out: list[Any] = [None] * len(work)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            start.wait()
            out[k] = work[k]()
        except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(work))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return out


@pytest.mark.device
def test_threads_calling_one_program_get_their_own_results() -> None:
    m, d = lift.compile(scale()), lift.compile(dot())
    values = (1.0, 2.0, 3.0, 4.0)
    inputs = {v: np.full(1 << 16, v, dtype=np.float32) for v in values}
    want = {v: (lift.interpret(scale(), inputs[v]), lift.interpret(dot(), inputs[v], inputs[v])) for v in values}

    def loop(v: float) -> int:
        wrong = 0
        for _ in range(25):
            x = np.full(1 << 16, v, dtype=np.float32)  # a fresh host array each call
            wrong += not np.array_equal(m(x), want[v][0])
            wrong += not np.isclose(d(x, x), want[v][1], rtol=1e-5)
        return wrong

    assert together([lambda v=v: loop(v) for v in values]) == [0] * len(values)


@pytest.mark.device
def test_first_calls_of_threads_specialise_once() -> None:
    expr = matmul()
    prog = lift.compile(expr)
    made = []
    spec = prog._specialiser
    make = spec._make
    spec._make = lambda bound: (made.append(dict(bound)), make(bound))[1]
    rng = np.random.default_rng(3)
    a, b = rng.random((16, 64), dtype=np.float32), rng.random((64, 32), dtype=np.float32)
    outs = together([lambda: prog(a, b)] * 3)
    want = lift.interpret(expr, a, b)
    for out in outs:
        assert_same(want, out)
    assert made == [{"K": 64, "M": 16, "N": 32}]
    assert [r.sizes for r in prog.specialisations] == made


@pytest.mark.device
def test_compiles_from_threads_run_one_at_a_time() -> None:
    exprs = [scale(), dot(), matmul()]
    progs = together([lambda e=e: lift.compile(e, specialise=False) for e in exprs])
    x = np.arange(64, dtype=np.float32)
    a, b = np.ones((8, 4), np.float32), np.ones((4, 8), np.float32)
    assert_same(lift.interpret(exprs[0], x), progs[0](x))
    assert_same(lift.interpret(exprs[1], x, x), progs[1](x, x))
    assert_same(lift.interpret(exprs[2], a, b), progs[2](a, b))


@pytest.mark.device
def test_each_thread_holds_its_own_buffers() -> None:
    prog = lift.compile(scale(), specialise=False).copying()  # buffers held for the copies, as on a GPU
    x = np.ones(256, np.float32)
    prog(x)
    mine = prog.device_buffers
    theirs = together([lambda: (prog(x), prog.device_buffers)[1]])[0]
    assert mine and theirs and set(mine) == set(theirs)
    assert all(mine[k] is not theirs[k] for k in mine)
