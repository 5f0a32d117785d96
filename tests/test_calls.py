"""The call path (issue 38): arguments passed in place where the device shares host memory,
per-shape host plans, `out=`, device arrays, asynchronous calls and DLPack, each checked
against the interpreter, on the zero-copy path and on the copying path GPUs take
(`Program.copying()`: the same calls made as on a device with memory of its own)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, pad, reduce, slide, user_fun, zip
from lift.errors import DeviceError, LiftTypeError, LiftValueError
from lift.testing import assert_same

pytestmark = pytest.mark.device

N = Size("N")


@user_fun
def axpy_f(a: Float, b: Float) -> Float:
    return 2.0 * a + b


def _axpy():
    return fun([Array(Float, N), Array(Float, N)], lambda x, y: map(lambda p: axpy_f(p[0], p[1])) << zip(x, y))


def _dot():
    return fun([Array(Float, N), Array(Float, N)], lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))


def _stencil():
    return fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0.0) << w) << slide(3, 1) << pad(1, 1, 0.0)
               << x)


def _sum_and_max():
    return fun([Array(Float, N)], lambda x: (reduce(lift.add, 0.0) << x, map(lambda v: v * 2.0) << x))


@pytest.fixture(scope="module")
def progs() -> dict[str, lift.Program]:
    return {name: lift.compile(make()) for name, make in
            (("axpy", _axpy), ("dot", _dot), ("stencil", _stencil), ("pair", _sum_and_max))}


@pytest.fixture(scope="module", params=["in place", "copying"])
def mode(request) -> str:
    return request.param


def _prog(progs, name: str, mode: str) -> lift.Program:
    expr = {"axpy": _axpy, "dot": _dot, "stencil": _stencil, "pair": _sum_and_max}[name]()
    prog = lift.compile(expr)
    return prog.copying() if mode == "copying" else prog


def _data(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _offset(x: np.ndarray, elements: int = 1) -> np.ndarray:
    """A copy of `x` that starts `elements` past a 128-byte boundary (so not where vectors may)."""
    base = np.empty(x.size + 64, x.dtype)
    start = (-base.__array_interface__["data"][0] % 128) // x.itemsize + elements
    out = base[start:start + x.size]
    out[:] = x
    return out


def test_zero_copy_is_found_from_the_device(progs) -> None:
    prog = progs["axpy"]
    dc = prog._lane().dc
    assert dc.zero_copy == prog.device.host_memory  # PoCL: True; described as a GPU (emulate_gpu): False
    assert not prog.copying()._lane().dc.zero_copy


@pytest.mark.parametrize("name", ["axpy", "dot", "stencil", "pair"])
@pytest.mark.parametrize("n", [1, 5, 1024, 4099, 1 << 16])
def test_calls_equal_the_interpreter(progs, mode: str, name: str, n: int) -> None:
    prog = _prog(progs, name, mode)
    x, y = _data(n, 1), _data(n, 2)
    args = (x, y) if name in ("axpy", "dot") else (x,)
    want = lift.interpret(prog.node, *args)
    assert_same(want, prog(*args))
    assert_same(want, prog(*args))  # the shape's host plan, reused


@pytest.mark.parametrize("name", ["axpy", "dot", "stencil", "pair"])
def test_small_and_large_shapes_take_turns_on_one_kernel(mode: str, name: str) -> None:
    """A small shape's calls set only the kernel arguments that changed since this thread's last
    launch; a large shape's call in between sets them all, so the small one's next call must not
    trust what it set before (the large call's size left in place: wrong sums, reads past the array)."""
    prog = _prog({}, name, mode)
    for n in (100, 100, 1 << 20, 100, 1 << 17, 37, 100):
        x, y = _data(n, 1), _data(n, 2)
        args = (x, y) if name in ("axpy", "dot") else (x,)
        assert_same(lift.interpret(prog.node, *args), prog(*args))


def test_a_large_argument_is_read_anew_and_not_held() -> None:
    """A large argument's buffer is kept for the next call on the same memory: that call reads
    what the array holds then, through the same array or a new view of it; the program does not
    keep the array alive; and an array made at the freed one's address is read, not the old
    buffer's idea of it."""
    prog = lift.compile(_dot())
    n = 1 << 18  # 1 MiB per argument: above the size whose arrays are held (SMALL_BYTES)
    x, y = _data(n, 1), _data(n, 2)
    assert_same(lift.interpret(prog.node, x, y), prog(x, y))
    x *= -3.0  # the same array, changed in place
    assert_same(lift.interpret(prog.node, x, y), prog(x, y))
    for _ in range(2):
        view = x[...]  # a new array object on the same memory
        view += 1.0
        assert_same(lift.interpret(prog.node, x, y), prog(view, y[...]))
    assert_same(lift.interpret(prog.node, x[: n // 2], y[: n // 2]), prog(x[: n // 2], y[: n // 2]))  # shorter
    del view
    gone = weakref.ref(x)
    del x
    assert gone() is None, "the program holds a large argument alive"
    for seed in range(3, 6):  # new arrays, often at the address just freed
        x = _data(n, seed)
        assert_same(lift.interpret(prog.node, x, y), prog(x, y))
        del x


@pytest.mark.parametrize("name", ["axpy", "dot", "stencil"])
def test_unaligned_strided_readonly_and_zero_stride_inputs(progs, mode: str, name: str) -> None:
    prog = _prog(progs, name, mode)
    n = 4096 + 8
    x, y = _data(n, 3), _data(n, 4)
    ro = x.copy()
    ro.flags.writeable = False
    wide = np.repeat(x, 2)
    variants = {
        "unaligned": _offset(x),  # the any-alignment variant of the vector kernels
        "unaligned by 4": _offset(x, 4),
        "strided": wide[::2],
        "read-only": ro,
        "zero-stride": np.broadcast_to(np.float32(0.5), (n,)),
        "reversed": x[::-1],
    }
    for what, v in variants.items():
        args = (v, _offset(y, 3)) if name in ("axpy", "dot") else (v,)
        want = lift.interpret(prog.node, *(np.ascontiguousarray(a) for a in args))
        assert_same(want, prog(*args)), what


@pytest.mark.parametrize("n", [2048, 256])  # 256: a result small enough to be copied out of a kept array
def test_results_do_not_change_with_later_calls_or_inputs(progs, mode: str, n: int) -> None:
    prog = _prog(progs, "axpy", mode)
    x, y = _data(n, 5), _data(n, 6)
    first = prog(x, y)
    kept = first.copy()
    second = prog(y, x)  # same shape: the same host plan
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, kept)
    x[:] = 7.0  # the caller changes the inputs afterwards
    np.testing.assert_array_equal(first, kept)
    view = first[10:20]
    del first
    for _ in range(3):
        prog(y, y)  # memory freed by dropped results is reused, never a live one
    np.testing.assert_array_equal(view, kept[10:20])
    assert first_owned(second)


def test_small_results_are_the_callers_own_arrays_on_every_thread() -> None:
    """Results of at most COPIED_BYTES are written to arrays a thread keeps and returned as copies:
    each call's result is its own, on any thread, scalar or array, and keeps its values."""
    from concurrent.futures import ThreadPoolExecutor

    from lift.program import COPIED_BYTES
    dot, axpy = lift.compile(_dot()), lift.compile(_axpy())
    n = COPIED_BYTES // 4  # axpy's result just fits
    xs = [_data(n, s) for s in range(8)]

    def run(k: int) -> list:
        return [(dot(xs[k], xs[(k + 1) % 8]), axpy(xs[k], xs[(k + 2) % 8])) for _ in range(20)]

    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(run, range(8)))
    for k, results in enumerate(runs):
        want_dot = lift.interpret(dot.node, xs[k], xs[(k + 1) % 8])
        want_axpy = lift.interpret(axpy.node, xs[k], xs[(k + 2) % 8])
        for d, a in results:
            assert_same(want_dot, d)
            assert_same(want_axpy, a)
            assert first_owned(a) and a.base is None
    assert len({id(a) for results in runs for _, a in results}) == 8 * 20


def first_owned(a: np.ndarray) -> bool:
    """A result is an ordinary writable C-contiguous numpy array the caller owns."""
    return isinstance(a, np.ndarray) and a.flags.writeable and a.flags.c_contiguous


def test_out_writes_into_the_callers_array(progs, mode: str) -> None:
    prog = _prog(progs, "stencil", mode)
    x = _data(4096 + 1, 7)
    want = lift.interpret(prog.node, x)
    out = np.zeros_like(x)
    assert prog(x, out=out) is out
    assert_same(want, out)
    strided = np.zeros(2 * x.size, np.float32)
    prog(x, out=strided[::2])
    assert_same(want, strided[::2])
    assert not strided[1::2].any()
    unaligned = _offset(np.zeros_like(x))
    prog(x, out=unaligned)
    assert_same(want, unaligned)
    inplace = x.copy()
    prog(inplace, out=inplace)  # the result overwrites its own argument: the stencil reads it first
    assert_same(want, inplace)


def test_out_of_a_tuple_result_and_its_errors(progs, mode: str) -> None:
    prog = _prog(progs, "pair", mode)
    x = _data(1000, 8)
    total, doubled = lift.interpret(prog.node, x)
    outs = (np.zeros((), np.float32), np.zeros(1000, np.float32))
    assert prog(x, out=outs) is outs
    assert_same(total, outs[0][()])
    assert_same(doubled, outs[1])
    with pytest.raises(LiftTypeError, match="structure"):
        prog(x, out=np.zeros(1000, np.float32))
    with pytest.raises(LiftTypeError, match="shape"):
        prog(x, out=(np.zeros((), np.float32), np.zeros(999, np.float32)))
    with pytest.raises(LiftTypeError, match="dtype"):
        prog(x, out=(np.zeros((), np.float32), np.zeros(1000, np.float64)))
    ro = np.zeros(1000, np.float32)
    ro.flags.writeable = False
    with pytest.raises(LiftValueError, match="read-only"):
        prog(x, out=(np.zeros((), np.float32), ro))
    with pytest.raises(LiftValueError, match="keep"):
        prog(x, out=outs, keep=True)


def test_device_arrays_chain_programs(progs, mode: str) -> None:
    step = _prog(progs, "stencil", mode)
    x = _data(5000, 9)
    want = x
    for _ in range(10):
        want = lift.interpret(step.node, want)
    d = lift.to_device(x)
    for _ in range(10):
        d = step(d, sync=False)  # enqueued after the previous step, no wait
    assert isinstance(d, lift.DeviceArray) and d.shape == (5000,) and d.dtype == np.float32
    assert_same(want, np.asarray(d))
    assert d.ready
    read = d.numpy()
    if mode == "in place":
        assert not read.flags.writeable  # the device array's own memory: it never changes
    total = _prog(progs, "dot", mode)(d, d, keep=True)
    assert total.shape == ()
    assert_same(lift.interpret(_dot(), want, want), np.asarray(total)[()])


def test_keep_returns_device_arrays_and_tuples(progs, mode: str) -> None:
    prog = _prog(progs, "pair", mode)
    x = _data(300, 10)
    total, doubled = prog(x, keep=True)
    assert isinstance(total, lift.DeviceArray) and isinstance(doubled, lift.DeviceArray)
    want_total, want_doubled = lift.interpret(prog.node, x)
    assert_same(want_doubled, doubled.numpy())
    assert_same(want_total, total.numpy()[()])
    again = prog(x * 2, keep=True)
    assert_same(want_doubled, doubled.numpy())  # a later call does not change a kept result
    assert not np.array_equal(again[1].numpy(), doubled.numpy())


def test_a_device_array_made_on_one_thread_feeds_a_call_on_another(progs) -> None:
    prog = progs["stencil"]
    x = _data(1 << 16, 11)
    made: list = []
    t = threading.Thread(target=lambda: made.append(prog(x, sync=False)))
    t.start()
    t.join()
    out = prog(made[0])  # another queue: the call waits for the producing kernels' event
    assert_same(lift.interpret(prog.node, lift.interpret(prog.node, x)), out)


def test_pyopencl_arrays_are_read_in_place() -> None:
    cla = pytest.importorskip("pyopencl.array")
    prog = lift.compile(_axpy())
    dc = prog._lane().dc
    x, y = _data(777, 12), _data(777, 13)
    queue = dc.queue
    ax, ay = cla.to_device(queue, x), cla.to_device(queue, y)
    assert_same(lift.interpret(prog.node, x, y), prog(ax, ay))
    assert_same(lift.interpret(prog.node, x, y), prog(ax, y))


def test_dlpack_round_trip_with_torch() -> None:
    torch = pytest.importorskip("torch")
    prog = lift.compile(_axpy())
    x, y = torch.randn(4096), torch.randn(4096)
    out = prog(x, y)
    want = lift.interpret(prog.node, x.numpy(), y.numpy())
    assert_same(want, out)
    kept = prog(x, y, keep=True)
    t = torch.from_dlpack(kept)
    np.testing.assert_array_equal(t.numpy(), want)
    d = lift.from_dlpack(x)
    assert_same(want, prog(d, lift.from_dlpack(y)))
    if prog._lane().dc.zero_copy and x.data_ptr() % 128 == 0:
        assert d.numpy().__array_interface__["data"][0] == x.data_ptr()  # no copy


def test_a_call_larger_than_the_device_memory_is_refused_before_allocating(progs) -> None:
    prog = lift.compile(_axpy(), specialise=False)
    dc = prog._lane().dc
    small = dataclasses.replace(dc.device, global_mem_bytes=64 << 20)
    prog._dc = dataclasses.replace(dc, device=small)
    prog._local = threading.local()
    prog._shapes = {}
    n = 1 << 24  # 64 MiB per argument, expanded from zero strides: more than the device's 64 MiB in all
    x = np.broadcast_to(np.float32(1.0), (n,))
    with pytest.raises(DeviceError, match="bytes"):
        prog(x, x)


def test_the_pre_fill_of_a_reduction_joins_its_sequential_tail() -> None:
    prog = lift.compile(_dot())
    x = _data(1000, 14)
    special = prog.specialised(x, x)
    launches = [ln.kernel for ln in special.plan.launches]
    assert not any(k.endswith("_fill") for k in launches), launches
    assert_same(lift.interpret(_dot(), x, x), prog(x, x))


def test_a_gpu_keeps_copies() -> None:
    """Described as a GPU (tests/emulate_gpu.py: memory of its own), the device's calls copy their
    arguments and results (no zero copy), and give the same answers; the offline profiles say
    which devices compute in host memory."""
    assert lift.devices.profile("pocl-cpu").host_memory and not lift.devices.profile("nvidia").host_memory
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root / "tests"))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "emulate_gpu", "-p", "no:randomly",
                          "-p", "no:cacheprovider", "-n", "0", "tests/test_calls.py", "-k",
                          "zero_copy_is_found or (equal_the_interpreter and 4099) or results_do_not_change"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and " passed" in out.stdout, out.stdout + out.stderr


def test_hand_written_vector_pointers_get_aligned_arguments() -> None:
    """A hand-written kernel may keep a vector pointer in a variable (not a cast the runtime can
    relax): its misaligned arguments are copied to aligned memory rather than read in place."""
    from lift.plan import BufferSpec, KernelArg, KernelSource, Launch

    src = """kernel void twice(global const float* x, global float* out, int N) {
      const global float8* v = (const global float8*)x;
      int i = get_global_id(0);
      ((global float8*)out)[i] = 2.0f * v[i];
    }"""
    n = Size("N")
    plan = KernelSource(src, ("twice",), (BufferSpec("x", Float, n, role="input", param=0),
                                          BufferSpec("out", Float, n, role="output", type=Array(Float, n))),
                        (Launch("twice", (KernelArg("buffer", "x"), KernelArg("buffer", "out"), KernelArg("size", "N")),
                                (n // 8,)),),
                        ("out",), Array(Float, n), ("N",), (Array(Float, n),))
    prog = lift.Program(plan, cache_dir=False)
    x = _data(4096, 15)
    for arg in (_offset(x), _offset(x, 4), x):
        np.testing.assert_array_equal(prog(arg), 2 * x)
    assert "float8_u" in __import__("lift").codegen.printer.unaligned_variant(
        "((global const float8*)x)[i]", ["x"])  # const casts of generated form are relaxed


def _scale():
    return fun([Float, Array(Float, N)], lambda a, x: map(lambda v: v * a) << x)


@pytest.mark.parametrize("name,n", [("axpy", 256), ("axpy", 1 << 17), ("dot", 1 << 17), ("pair", 300),
                                    ("stencil", 4099)])
def test_a_call_on_the_same_arrays_replays_and_follows_them(mode: str, name: str, n: int) -> None:
    """A thread's next call on the very arrays of its last one skips the per-shape work (its
    kernels already have their arguments) and reads what the arrays hold then; each call's
    results are new arrays; a call on other arrays, or on the same ones made another size or
    dtype in place, is worked out afresh."""
    prog = _prog({}, name, mode)
    x, y = _data(n, 21), _data(n, 22)
    args = (x, y) if name in ("axpy", "dot") else (x,)
    first = prog(*args)
    kept = np.copy(first) if not isinstance(first, tuple) else tuple(np.copy(f) for f in first)
    seen: list[int] = []
    signature = prog._signature
    prog._signature = lambda arrays: seen.append(1) or signature(arrays)  # type: ignore[method-assign]
    x *= -2.0  # changed in place
    assert_same(lift.interpret(prog.node, *args), prog(*args))
    assert seen == ([] if mode == "in place" else [1])  # copying calls (a GPU's) upload every time
    assert_same(kept, first)  # the first call's results are the caller's
    other = tuple(a.copy() for a in args)
    assert_same(lift.interpret(prog.node, *other), prog(*other))
    assert len(seen) == (1 if mode == "in place" else 2)
    x.resize((n + 16,), refcheck=False)  # the same object, another size (and perhaps address)
    if name in ("axpy", "dot"):
        y.resize((n + 16,), refcheck=False)
    x[n:] = 0.5
    assert_same(lift.interpret(prog.node, *args), prog(*args))
    x.dtype = np.int32  # the same object, another dtype
    with pytest.raises(LiftTypeError):
        prog(*args)


def test_a_replayed_call_reads_numbers_by_value() -> None:
    """A number argument is read by value into a buffer of its own: a call replays with a number
    of the same type and value only; a 0-d array changed in place is read anew."""
    prog = lift.compile(_scale())
    x = _data(1000, 23)
    seen: list[int] = []
    signature = prog._signature
    prog._signature = lambda arrays: seen.append(1) or signature(arrays)  # type: ignore[method-assign]
    for a, calls in ((2.0, 1), (2.0, 1), (3.0, 2), (np.float32(3.0), 3), (np.float32(3.0), 3), (np.float32(-1.5), 4),
                     (3, 5), (3, 5), (float("nan"), 6), (float("nan"), 7)):
        np.testing.assert_allclose(prog(a, x), np.float32(a) * x)
        assert len(seen) == calls, (a, seen)
    a0 = np.array(2.0, np.float32)
    np.testing.assert_allclose(prog(a0, x), 2.0 * x)
    a0[()] = 3.0
    np.testing.assert_allclose(prog(a0, x), 3.0 * x)


def test_a_replay_outlives_other_shapes_and_specialised_sizes() -> None:
    """Calls of other shapes in between replace the thread's kept result arrays and buffers:
    the next call on the first arrays is worked out again, not replayed onto what changed."""
    prog = lift.compile(_dot())
    small = (_data(100, 24), _data(100, 25))
    large = (_data(1 << 16, 26), _data(1 << 16, 27))
    odd = (_data(37, 28), _data(37, 29))
    for args in (small, small, large, small, odd, large, large, small):
        assert_same(lift.interpret(prog.node, *args), prog(*args))


@user_fun
def over(v: Float, a: Float) -> Float:
    return v / a


def test_a_replay_tells_the_signs_of_zero_apart() -> None:
    """-0.0 == 0.0, but a kernel dividing by them does not give the same result: a call with the
    other zero is not a replay of the last one."""
    prog = lift.compile(fun([Float, Array(Float, N)], lambda a, x: map(lambda v: over(v, a)) << x))
    x = np.ones(64, np.float32)
    for first, then in ((0.0, -0.0), (np.float32(0.0), np.float32(-0.0)), (-0.0, 0.0)):
        prog(first, x)
        got = prog(then, x)
        assert np.array_equal(np.signbit(got), np.signbit(lift.interpret(prog.node, then, x))), (first, then)


def test_a_replay_holds_no_dropped_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replayed call of a large result (a new array per call) does not keep the recorded call's
    result memory once the caller dropped it (nor the memory of the last result it set)."""
    import gc

    monkeypatch.setattr(lift.runtime.HOST, "keep_bytes", 0)  # memory given back is freed, not pooled
    prog = lift.compile(_axpy())
    x, y = _data(1 << 20, 31), _data(1 << 20, 32)
    for calls in (1, 3):  # recorded by the first call; replayed by the next ones
        results = [prog(x, y) for _ in range(calls)]
        slabs = [weakref.ref(r.base.block.slab) for r in results]
        assert_same(lift.interpret(prog.node, x, y), results[-1])
        prog(y, x, keep=True)  # another call: the kernels' arguments move on, the replay stays
        del results
        gc.collect()
        assert all(s() is None for s in slabs), calls


def test_a_replay_that_fails_runs_the_full_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay that raises is dropped and the call goes the full way (where a specialised
    program's failure falls back to the generic program, and any other error is raised)."""
    prog = lift.compile(_dot())
    x, y = _data(4096, 33), _data(4096, 34)
    prog(x, y)
    failed: list[int] = []

    def broken(*args: object) -> None:
        failed.append(1)
        raise DeviceError("a replay that fails")

    monkeypatch.setattr(lift.runtime, "relaunch", broken)
    assert_same(lift.interpret(prog.node, x, y), prog(x, y))
    assert failed == [1]
    assert_same(lift.interpret(prog.node, x, y), prog(x, y))  # recorded again, replayed again
    assert failed == [1, 1]


def test_a_replay_follows_its_specialisation() -> None:
    """A replayed call runs what its sizes run now: its specialisation is marked as just used, and
    once refused (here by hand, as a failing run on another thread would) the call is worked out
    again and runs the generic program."""
    prog = lift.compile(_dot())
    small, large = (_data(4096, 35), _data(4096, 36)), (_data(1 << 16, 37), _data(1 << 16, 38))
    prog(*small)
    prog(*large)
    assert prog.specialisations[-1].sizes == {"N": 1 << 16}
    prog(*small)  # worked out again (the last call was another shape)
    prog(*small)  # replayed: its sizes the most recently used
    assert prog.specialisations[-1].sizes == {"N": 4096}
    record = prog.specialisations[-1]
    assert record.program is not None, record  # specialised at these sizes
    prog._specialiser.refuse({"N": 4096}, RuntimeError("refused on another thread"))
    seen: list[int] = []
    signature = prog._signature
    prog._signature = lambda arrays: seen.append(1) or signature(arrays)  # type: ignore[method-assign]
    assert_same(lift.interpret(prog.node, *small), prog(*small))
    assert seen == [1]  # not replayed onto the refused program
