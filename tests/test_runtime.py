"""The runtime and `Program`, driven by hand-written KernelSource plans (no code generator)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lift.arith import as_arith as c
from lift.errors import DeviceError, LiftTypeError
from lift.plan import BufferSpec, KernelArg, KernelSource, Launch
from lift.program import Program, spread
from lift.runtime import MAGIC, default_cache_dir, read_entry, write_entry
from lift.types import Array, Float, Int, Size, Tuple, Vector

N = Size("N")
HERE = Path(__file__).resolve().parent


def buf(name: str) -> KernelArg:
    return KernelArg("buffer", name)


def size_arg(name: str) -> KernelArg:
    return KernelArg("size", name)


def scale_plan(tag: str = "") -> KernelSource:
    """out[i] = 2 * x[i], one work-item per element; `tag` makes the source unique."""
    src = textwrap.dedent(f"""\
        // scale {tag}
        kernel void scale(global const float* x, global float* out, int N) {{
          for (int i = get_global_id(0); i < N; i += get_global_size(0)) out[i] = 2.0f * x[i];
        }}
        """)
    return KernelSource(
        source=src, kernels=("scale",),
        buffers=(BufferSpec("x", Float, N, role="input", param=0),
                 BufferSpec("out", Float, N, role="output", type=Array(Float, N))),
        launches=(Launch("scale", (buf("x"), buf("out"), size_arg("N")), (N,)),),
        outputs=("out",), result_type=Array(Float, N), size_vars=("N",), param_types=(Array(Float, N),))


def pairs_plan() -> KernelSource:
    """An array of tuples in (as two buffers), an array of tuples out (as two buffers)."""
    src = """kernel void pairs(global const float* a, global const float* b, global float* s,
                               global float* d, int N) {
      int i = get_global_id(0);
      if (i < N) { s[i] = a[i] + b[i]; d[i] = a[i] - b[i]; }
    }"""
    pair = Tuple(Float, Float)
    return KernelSource(
        source=src, kernels=("pairs",),
        buffers=(BufferSpec("a", Float, N, role="input", param=0), BufferSpec("b", Float, N, role="input", param=0),
                 BufferSpec("s", Float, N, role="output"), BufferSpec("d", Float, N, role="output")),
        launches=(Launch("pairs", (buf("a"), buf("b"), buf("s"), buf("d"), size_arg("N")), (N,)),),
        outputs=("s", "d"), result_type=Array(pair, N), size_vars=("N",), param_types=(Array(pair, N),))


def vec_plan() -> KernelSource:
    """A scalar parameter and a vector result: out = alpha * x as [<Float>4]N/4."""
    src = """kernel void axv(global const float* x, global const float* alpha, global float4* out, int N) {
      int i = get_global_id(0);
      out[i] = alpha[0] * vload4(i, x);
    }"""
    return KernelSource(
        source=src, kernels=("axv",),
        buffers=(BufferSpec("x", Float, N, role="input", param=0),
                 BufferSpec("alpha", Float, c(1), role="input", param=1),
                 BufferSpec("out", Float, N, role="output")),
        launches=(Launch("axv", (buf("x"), buf("alpha"), buf("out"), size_arg("N")), (N // 4,)),),
        outputs=("out",), result_type=Array(Vector(Float, 4), N // 4), size_vars=("N",),
        param_types=(Array(Float, N), Float))


SUM_SRC = """
kernel void partial(global const float* x, global float* part, local float* tmp, int N) {
  int l = get_local_id(0), L = get_local_size(0);
  float acc = 0.0f;
  for (int i = get_global_id(0); i < N; i += get_global_size(0)) acc += x[i];
  tmp[l] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = L / 2; s > 0; s >>= 1) {
    if (l < s) tmp[l] += tmp[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) part[get_group_id(0)] = tmp[0];
}
kernel void final(global const float* part, global float* out) {
  float acc = 0.0f;
  for (int i = 0; i < 8; i++) acc += part[i];
  out[0] = acc;
}
"""


def sum_plan() -> KernelSource:
    """Two kernels: per-work-group sums in local memory, then a final sum to a scalar."""
    return KernelSource(
        source=SUM_SRC, kernels=("partial", "final"),
        buffers=(BufferSpec("x", Float, N, role="input", param=0), BufferSpec("part", Float, c(8)),
                 BufferSpec("tmp", Float, c(64), space="local"),
                 BufferSpec("out", Float, c(1), role="output")),
        launches=(Launch("partial", (buf("x"), buf("part"), buf("tmp"), size_arg("N")), (c(512),), (c(64),)),
                  Launch("final", (buf("part"), buf("out")), (c(1),), (c(1),))),
        outputs=("out",), result_type=Float, size_vars=("N",), param_types=(Array(Float, N),))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("liftcl-cache")


@pytest.fixture(scope="module")
def scale(cache: Path) -> Program:
    return Program(scale_plan(), cache_dir=cache)


# --------------------------------------------------------------------- running


@pytest.mark.device
def test_runs_and_binds_sizes(scale: Program) -> None:
    x = np.arange(37, dtype=np.float32)
    np.testing.assert_array_equal(scale(x), 2 * x)
    assert scale.sizes(x) == {"N": 37}
    assert scale.kernels == ("scale",) and "kernel void scale" in scale.source
    assert str(scale.ndrange[0].global_size[0]) == "N"
    assert scale.memory_bytes_for(x) == {"global": 2 * 37 * 4}


@pytest.mark.device
def test_dtype_error_names_the_argument(scale: Program) -> None:
    with pytest.raises(LiftTypeError, match=r"argument 0 has dtype float64") as e:
        scale(np.arange(4.0))
    assert e.value.got == np.float64 and "astype" in (e.value.hint or "")


@pytest.mark.device
@pytest.mark.parametrize("bad", [np.zeros((2, 3), np.float32), np.float32(1.0)])
def test_shape_error_names_the_argument(scale: Program, bad: object) -> None:
    with pytest.raises(LiftTypeError, match=r"argument 0 has \d dimension"):
        scale(bad)


@pytest.mark.device
def test_argument_count(scale: Program) -> None:
    x = np.ones(4, np.float32)
    with pytest.raises(LiftTypeError, match="takes 1 argument"):
        scale(x, x)


@pytest.mark.device
def test_tuple_arguments_and_results(cache: Path) -> None:
    prog = Program(pairs_plan(), cache_dir=cache)
    a, b = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    s, d = prog((a, b))
    np.testing.assert_array_equal(s, a + b)
    np.testing.assert_array_equal(d, a - b)
    with pytest.raises(LiftTypeError, match=r"argument 0\[1\] has dtype int32"):
        prog((a, b.astype(np.int32)))
    with pytest.raises(LiftTypeError, match=r"argument 0\[1\] has length 5, the program expects N = 4"):
        prog((a[:4], b))
    with pytest.raises(LiftTypeError, match="tuple of 2"):
        prog(a)


@pytest.mark.device
def test_scalar_parameter_and_vector_result(cache: Path) -> None:
    prog = Program(vec_plan(), cache_dir=cache)
    x = np.arange(12, dtype=np.float32)
    out = prog(x, np.float32(3.0))
    assert out.shape == (3, 4) and out.dtype == np.float32
    np.testing.assert_array_equal(out.reshape(-1), 3 * x)
    np.testing.assert_array_equal(prog(x, 2.0).reshape(-1), 2 * x)  # a Python number for a scalar
    with pytest.raises(LiftTypeError, match=r"argument 1 has dtype int32"):
        prog(x, np.int32(2))
    with pytest.raises(LiftTypeError, match=r"argument 1 has shape \(2,\)"):
        prog(x, np.ones(2, np.float32))


@pytest.mark.device
def test_two_kernels_local_memory_scalar_result(cache: Path) -> None:
    prog = Program(sum_plan(), cache_dir=cache)
    x = np.random.default_rng(0).random(10_000, dtype=np.float32)
    out = prog(x)
    assert isinstance(out, np.float32)
    assert out == pytest.approx(float(np.sum(x, dtype=np.float64)), rel=1e-4)
    assert prog.memory_bytes_for(x) == {"global": 4 * (10_000 + 8 + 1), "local": 256}
    assert [r.kernel for r in prog.ndrange] == ["partial", "final"]


@pytest.mark.device
def test_buffers_reused_across_calls(cache: Path) -> None:
    """Calls that copy (a GPU's) reuse their input and output buffers while the sizes stay."""
    prog = Program(scale_plan(), cache_dir=cache).copying()
    x = np.arange(64, dtype=np.float32)
    prog(x)
    first = prog.device_buffers
    np.testing.assert_array_equal(prog(x + 1), 2 * (x + 1))
    second = prog.device_buffers
    assert all(second[k] is first[k] for k in ("x", "out"))
    y = np.arange(100, dtype=np.float32)
    np.testing.assert_array_equal(prog(y), 2 * y)
    third = prog.device_buffers
    assert all(third[k] is not first[k] for k in ("x", "out"))


@pytest.mark.device
def test_time_returns_positive_seconds(scale: Program) -> None:
    times = scale.time(np.ones(1 << 12, np.float32), repeat=3)
    assert len(times) == 3 and all(isinstance(t, float) and t > 0 for t in times)


@pytest.mark.device
def test_time_runs_each_launch_alone(scale: Program, monkeypatch: pytest.MonkeyPatch) -> None:
    """A timed run is enqueued only once the run before it has finished: PoCL stamps a kernel
    queued behind another with part of that one's time (GEMV 2048^2 timed 1.5-2x slower)."""
    import pyopencl as cl

    from lift import runtime

    events: list[cl.Event] = []
    busy: list[int] = []

    def enqueue(*args: object, **kw: object) -> cl.Event:
        busy.append(sum(e.command_execution_status != cl.command_execution_status.COMPLETE for e in events))
        events.append(real(*args, **kw))
        return events[-1]

    real = runtime.enqueue
    monkeypatch.setattr(runtime, "enqueue", enqueue)
    monkeypatch.setattr(runtime, "launch",
                        lambda dc, k, g, lo, a, last, wait_for=None: enqueue(dc, k, g, lo, a, wait_for))
    times = scale.time(np.ones(1 << 20, np.float32), repeat=4)
    assert len(times) == 4 and len(events) == 5  # the warm-up, then the timed runs
    assert busy == [0] * 5


@given(st.lists(st.integers(1, 64), min_size=1, max_size=3), st.integers(1, 64), st.integers(1, 8192))
def test_spread_makes_a_group_per_compute_unit(gsize: list[int], units: int, most: int) -> None:
    local = spread(tuple(gsize), units, most)
    total = int(np.prod(gsize))
    if local is None:
        assert total > most or total < 2 or units < 2
        return
    assert len(local) == len(gsize) and all(g % s == 0 for g, s in zip(gsize, local))
    groups = int(np.prod([g // s for g, s in zip(gsize, local)]))
    assert groups >= min(units, total) and int(np.prod(local)) <= most


@pytest.mark.device
def test_a_small_range_is_spread_over_the_compute_units(scale: Program) -> None:
    """A launch of few work-items whose plan leaves the local size free runs as at least one
    work-group per compute unit on a CPU (the driver would give it one group: one core)."""
    x = np.arange(48, dtype=np.float32)
    np.testing.assert_array_equal(scale(x), 2 * x)
    dev = scale.device
    ((_, gsize, lsize, _),) = scale._shapes[scale._signature((x,))[1]].launches
    if dev.kind != "cpu" or dev.compute_units < 2:
        assert lsize is None
        return
    assert lsize is not None and int(np.prod([g // s for g, s in zip(gsize, lsize)])) >= dev.compute_units


@pytest.mark.device
def test_bad_work_group_is_a_device_error(cache: Path) -> None:
    plan = sum_plan()
    launches = (Launch("partial", plan.launches[0].args, (c(500),), (c(64),)), plan.launches[1])
    bad = KernelSource(**{**{f: getattr(plan, f) for f in plan.__slots__}, "launches": launches})
    with pytest.raises(DeviceError, match="does not divide"):
        Program(bad, cache_dir=cache)(np.ones(10, np.float32))


@pytest.mark.device
def test_build_error_shows_log_and_source_line(cache: Path) -> None:
    plan = scale_plan()
    broken = plan.source.replace("2.0f * x[i]", "2.0f * undefined_name")
    bad = KernelSource(**{**{f: getattr(plan, f) for f in plan.__slots__}, "source": broken})
    with pytest.raises(DeviceError, match="undefined_name") as e:
        Program(bad, cache_dir=cache)
    text = str(e.value)
    assert "build log" in text and "offending source lines" in text and "   3 | " in text


@pytest.mark.device
def test_unknown_device_is_a_device_error() -> None:
    with pytest.raises(DeviceError, match="no attached OpenCL device matches"):
        Program(scale_plan(), device="no-such-device-xyz", cache_dir=False)


# ------------------------------------------------------------------ the cache


def test_entry_roundtrip_and_corruption(tmp_path: Path) -> None:
    path = tmp_path / "ab" / "entry.bin"
    assert write_entry(path, b"binary payload")
    assert read_entry(path) == b"binary payload"
    data = path.read_bytes()
    assert data.startswith(MAGIC)
    for broken in (data[:-3], data[: len(MAGIC) + 5], data[:-1] + b"X", b"garbage", b""):
        path.write_bytes(broken)
        assert read_entry(path) is None
    assert read_entry(tmp_path / "missing.bin") is None
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


def test_entry_carries_its_key_and_another_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "entry.bin"
    assert write_entry(path, b"payload", "k1")
    assert read_entry(path, "k1") == b"payload" and read_entry(path) == b"payload"
    assert read_entry(path, "k2") is None
    with pytest.raises(ValueError):
        write_entry(path, b"payload", "two words")


def double_plan(tag: str) -> KernelSource:
    """out[i] = 3 * x[i]: a valid program other than `scale_plan`'s."""
    plan = scale_plan(tag)
    return dataclasses.replace(plan, source=plan.source.replace("2.0f", "3.0f"))


@pytest.mark.device
def test_a_valid_entry_of_another_program_is_not_served(tmp_path: Path) -> None:
    """Regression: an entry copied (or hash-collided) under another program's key was served,
    running the wrong kernel; the entry's own key must match."""
    cache = tmp_path / "cache"
    other = Program(double_plan(f"other {tmp_path}"), cache_dir=cache)
    mine = Program(scale_plan(f"mine {tmp_path}"), cache_dir=False)
    wanted = cache / mine.build_info.key[:2] / f"{mine.build_info.key}.bin"
    wanted.parent.mkdir(parents=True, exist_ok=True)
    wanted.write_bytes(other.build_info.path.read_bytes())  # a valid entry, under the wrong name
    prog = Program(scale_plan(f"mine {tmp_path}"), cache_dir=cache)
    assert prog.build_info.status == "rebuilt"
    x = np.arange(100, dtype=np.float32)
    assert (prog(x) == 2 * x).all()
    assert read_entry(wanted, mine.build_info.key) is not None  # replaced by the right binary


def test_default_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "liftcl"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "liftcl"


SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, {here!r})
from test_runtime import scale_plan
from lift.program import Program
p = Program(scale_plan({tag!r}), cache_dir={cache!r})
x = np.arange(1000, dtype=np.float32)
assert (p(x) == 2 * x).all()
print(p.build_info.status)
"""


def run_script(tmp_path: Path, tag: str, cache: Path) -> subprocess.Popen:
    script = tmp_path / f"build_{os.getpid()}_{len(list(tmp_path.iterdir()))}.py"
    script.write_text(SCRIPT.format(here=str(HERE), tag=tag, cache=str(cache)))
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finished(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out.strip()


@pytest.mark.device
def test_cache_hit_in_a_fresh_process(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = Program(scale_plan(f"fresh {tmp_path}"), cache_dir=cache)
    assert first.build_info.status == "miss" and first.build_info.path.exists()
    assert finished(run_script(tmp_path, f"fresh {tmp_path}", cache)) == "hit"


@pytest.mark.device
@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_corrupt_entry_is_rebuilt(tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    plan = scale_plan(f"corrupt {tmp_path}")
    path = Program(plan, cache_dir=cache).build_info.path
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    else:
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:])
    again = Program(plan, cache_dir=cache)
    assert again.build_info.status == "rebuilt"
    x = np.arange(9, dtype=np.float32)
    np.testing.assert_array_equal(again(x), 2 * x)
    assert read_entry(path) is not None
    assert Program(plan, cache_dir=cache).build_info.status == "hit"


@pytest.mark.device
def test_entry_the_driver_rejects_is_rebuilt(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    plan = scale_plan(f"rejected {tmp_path}")
    path = Program(plan, cache_dir=cache).build_info.path
    assert write_entry(path, b"not a device binary" * 10)  # a valid entry the driver cannot load
    again = Program(plan, cache_dir=cache)
    assert again.build_info.status == "rebuilt"
    np.testing.assert_array_equal(again(np.ones(3, np.float32)), 2 * np.ones(3))
    assert read_entry(path) != b"not a device binary" * 10


@pytest.mark.device
def test_concurrent_processes_share_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    tag = f"concurrent {tmp_path}"
    procs = [run_script(tmp_path, tag, cache) for _ in range(2)]
    statuses = [finished(p) for p in procs]
    assert set(statuses) <= {"miss", "hit"}
    entries = list(cache.rglob("*.bin"))
    assert len(entries) == 1 and read_entry(entries[0]) is not None
    assert not list(cache.rglob(".tmp-*"))
    assert finished(run_script(tmp_path, tag, cache)) == "hit"


@pytest.mark.device
def test_int_parameters(cache: Path) -> None:
    src = "kernel void inc(global const int* x, global int* y, int N) { int i = get_global_id(0); y[i] = x[i] + 1; }"
    plan = KernelSource(
        source=src, kernels=("inc",),
        buffers=(BufferSpec("x", Int, N, role="input", param=0), BufferSpec("y", Int, N, role="output")),
        launches=(Launch("inc", (buf("x"), buf("y"), size_arg("N")), (N,)),),
        outputs=("y",), result_type=Array(Int, N), size_vars=("N",), param_types=(Array(Int, N),))
    x = np.arange(6, dtype=np.int32)
    np.testing.assert_array_equal(Program(plan, cache_dir=cache)(x), x + 1)


@pytest.mark.parametrize("where", ["/tmp/pocl_build.cl", "<kernel>", "<source>", "1"])  # 1: Intel's CPU runtime
def test_build_error_cites_the_source_line_of_pocl_and_nvidia_logs(where: str) -> None:
    """PoCL's clang names the file (`/tmp/...cl:3:5:`), NVIDIA's compiler `<kernel>:3:5:` (seen on an H100,
    driver 580): either way the error shows the line the log points at."""
    from lift.devices import profile
    from lift.runtime import build_error

    source = "kernel void k(global float* out) {\n  int i = get_global_id(0);\n  out[i] = 2.0f * undefined_name;\n}"
    err = build_error(profile("nvidia"), source, f"{where}:3:19: error: use of undeclared identifier 'undefined_name'")
    assert "offending source lines" in str(err) and "   3 |   out[i] = 2.0f * undefined_name;" in str(err)
    assert "undeclared identifier" in str(err).splitlines()[0]


@given(st.integers(0, 40), st.integers(1, 3), st.sampled_from(["f4", "f8", "i1", "i4", "u2"]), st.booleans(),
       st.booleans())
def test_the_address_of_an_array_is_its_first_element(start: int, step: int, dtype: str, transposed: bool,
                                                       frozen: bool) -> None:
    """`runtime.address` reads the data pointer from the array object; it must be what numpy's
    `__array_interface__` says for views at any offset and stride, of any dtype, read-only or not."""
    from lift import runtime

    base = np.arange(96).astype(dtype)
    a = base[start::step]
    if transposed:
        a = base.reshape(8, 12).T[start % 12:]
    if frozen:
        a.flags.writeable = False
    assert runtime.address(a) == a.__array_interface__["data"][0]
    b = np.frombuffer(a.tobytes(), a.dtype)  # on bytes numpy does not own
    assert runtime.address(b) == b.__array_interface__["data"][0]


def test_the_data_pointer_was_found_in_the_array_object() -> None:
    """On CPython with numpy 1.x and 2.x the pointer follows the object header (16 bytes); if no
    offset were found, `address` would fall back to `__array_interface__` (correct, slower)."""
    from lift import runtime

    assert runtime._DATA_OFFSET == 16


@pytest.mark.parametrize("text,want", [("", 200e-6), ("50", 50e-6), ("0", 0.0), ("-3", 0.0), ("abc", 200e-6),
                                       ("nan", 200e-6), ("inf", 200e-6)])
def test_the_polling_time_is_read_from_the_environment_or_left_at_its_default(
        text: str, want: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """`LIFTCL_SPIN_US` (docs/devices.md): a bad value must not stop `import lift`."""
    from lift import runtime

    monkeypatch.setenv("LIFTCL_SPIN_US", text)
    assert runtime._spin_seconds() == pytest.approx(want)
