"""A one-work-item kernel run by the last work-item of the kernel before it (lift.codegen.tails).

On a CPU, a reduction that is not combined atomically is a kernel of chunks and a kernel of one
work-item combining their results; the second runs inside the first, by whichever work-item
counts itself last on a counter the runtime zeroes once. Tested: the result equals the
interpreter call after call (the counter is left zero), on several threads at once (a counter
per thread), a kernel without the reset fails, and the plans that must keep two launches keep
them (a range known only at the call, a GPU profile).
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

import lift
import lift.devices
from lift import Array, Float, Int, Size, Tuple, fun, get, iota, reduce, select, user_fun, zip
from lift.plan import COUNTER_ROLE
from lift.program import Program

N = 1 << 16
RNG = np.random.default_rng(54)


def _smaller(a, b):
    return select(b[1] < a[1], b, a)


nearest = user_fun(_smaller, [Tuple(Int, Float), Tuple(Int, Float)], Tuple(Int, Float), name="nearest")


def argmin(n=N):
    """The index of the smallest element: a fold, with no atomic combine, over (index, value) pairs."""
    return fun([Array(Float, n)], lambda x: get(0) << (reduce(nearest, (-1, float("inf"))) << zip(iota(n), x)))


def argmin_pair(n=N):
    """The smallest element and its index: a tuple result, two outputs written by the tail."""
    return fun([Array(Float, n)], lambda x: reduce(nearest, (-1, float("inf"))) << zip(iota(n), x))


def _counters(prog: Program) -> list[str]:
    return [b.name for b in prog.plan.buffers if b.role == COUNTER_ROLE]


@pytest.fixture(scope="module")
def folded() -> Program:
    k = lift.compile(argmin())
    if not _counters(k):
        pytest.skip("the default plan of this arg-min has no one-work-item tail on this device")
    return k


def test_a_tail_after_chunks_is_one_launch_and_right_call_after_call(folded: Program) -> None:
    assert len(folded.plan.launches) == 1 and len(_counters(folded)) == 1
    assert "atomic_inc(lift_done)" in folded.source
    for _ in range(6):  # the counter must be back at zero after every launch
        x = RNG.random(N, dtype=np.float32)
        assert int(folded(x)) == int(np.argmin(x)) == int(lift.interpret(argmin(), x))


def test_a_tuple_result_is_written_by_the_tail() -> None:
    k = lift.compile(argmin_pair())
    assert _counters(k) and len(k.plan.launches) == 1
    for _ in range(3):
        x = RNG.random(N, dtype=np.float32)
        index, value = k(x)
        assert int(index) == int(np.argmin(x)) and float(value) == float(x.min())


def test_calls_on_several_threads_each_count_on_their_own_counter(folded: Program) -> None:
    errors: list[str] = []
    inputs = [RNG.random(N, dtype=np.float32) for _ in range(4)]

    def work(k: int) -> None:
        for j in range(15):
            x = inputs[(k + j) % len(inputs)]
            got = int(folded(x))
            if got != int(np.argmin(x)):
                errors.append(f"thread {k} call {j}: {got} != {int(np.argmin(x))}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _mutated(k: Program, old: str, new: str) -> Program:
    assert old in k.plan.source
    return Program(dataclasses.replace(k.plan, source=k.plan.source.replace(old, new)), cache_dir=False)


def _planted(at: int) -> np.ndarray:
    x = RNG.random(N, dtype=np.float32)
    x[at] = -1.0
    return x


def test_the_counter_reset_is_needed(folded: Program) -> None:
    """Without the reset, the second launch never brings the count to the number of work-items:
    its tail does not run, and the result is whatever its memory held."""
    no_reset = _mutated(folded, "lift_done[0] = 0;", "")
    assert int(no_reset(_planted(N - 1))) == N - 1
    assert int(no_reset(_planted(5))) != 5
    assert [int(folded(_planted(at))) for at in (N - 1, 5, N // 2)] == [N - 1, 5, N // 2]


def test_a_range_known_only_at_the_call_keeps_two_launches() -> None:
    """A size variable may make the chunk kernel's range 0, which skips its launch; the tail must
    then run on its own, so it stays a kernel of its own."""
    n = Size("N")
    k = lift.compile(argmin(n), specialise=False)
    assert not _counters(k)
    for m in (N, 100, 7):
        x = RNG.random(m, dtype=np.float32)
        assert int(k(x)) == int(np.argmin(x))


def test_a_gpu_profile_keeps_its_two_launches() -> None:
    cpu = lift.compile(argmin(), device=lift.devices.profile("pocl-cpu"))
    gpu = lift.compile(argmin(), device=lift.devices.profile("nvidia"))
    assert _counters(cpu) and len(cpu.plan.launches) == 1
    assert len(gpu.plan.launches) == 2 and not _counters(gpu) and "lift_done" not in gpu.source


def test_a_sum_the_chunks_cover_is_one_launch_on_a_cpu_and_the_same_every_run() -> None:
    """A full reduction with an atomic combine on a GPU combines its partials in order on a CPU
    (rewrites/defaults.py): one launch with its tail, and no atomics, so the same bits each run."""
    n = 1 << 16
    dot = fun([Array(Float, n), Array(Float, n)], lambda x, y: reduce(lift.add, 0.0) << lift.map(lift.mult)
              << lift.zip(x, y))
    k = lift.compile(dot)
    lab = next(x for x in k.choices.points if x.startswith("auto_r"))
    assert k.choices.points[lab]["combine"] == "kernel" and len(k.plan.launches) == 1 and _counters(k)
    assert "atomic_cmpxchg" not in k.source
    x, y = RNG.random(n, dtype=np.float32), RNG.random(n, dtype=np.float32)
    runs = {float(k(x, y)) for _ in range(8)}
    assert len(runs) == 1
    np.testing.assert_allclose(runs.pop(), np.dot(x.astype(np.float64), y), rtol=1e-5)
    gpu = lift.compile(dot, device=lift.devices.profile("nvidia"))
    assert "lift_done" not in gpu.source
    odd = fun([Array(Float, n + 8)], lambda v: reduce(lift.add, 0.0) << v)  # a tail step: atomic as before
    assert lift.compile(odd).choices.points[lab]["combine"] == "atomic"
