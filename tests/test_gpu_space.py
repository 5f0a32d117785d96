"""The GPU search space of nested map-reduce (rewrites/gpu_tiles.py, constraints/gpu_tiles.py).

Compiled for the offline "nvidia" and "mali-g72" profiles, matmul, batched matmul and convolutions
(examples/conv.py's Listing 4.1 at small sizes and at VGG-16 layers' channel counts) get work-group
tiles of both inputs in local memory, register tiles and the MAG pass's barriers, within the
profile's limits (local memory bytes, work-group size), checked here from the source itself; the same
choices compiled for the attached device (PoCL: a CPU runs GPU-shaped kernels too) compute what the
interpreter computes, every barrier is needed there (or its race shown), and where a clang is
installed it accepts the source as OpenCL C 1.2.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import lift
from lift import Array, Float, Int, fun, map, reduce, transpose
from lift import zip as lzip
from lift.constraints import substitute_sizes
from lift.constraints.gpu_tiles import (
    LAUNCH,
    REGISTERS,
    TILE_DIVIDES,
    VECTOR_ALIGNED,
    WORK_GROUP,
    ReduceSpace,
    TileSpace,
)
from lift.constraints.tuning import LOCAL_MEM
from lift.devices import profile
from lift.errors import DeviceError
from lift.rewrites import points
from lift.rewrites.gpu_reduce import CHUNKS, LOCALS, GpuReduce, GpuRows
from lift.rewrites.gpu_tiles import BLOCKS, K_TILES, TILES, VECS, GpuTiles, gpu_default, gpu_points, tile_space

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
import conv  # noqa: E402
import matmul  # noqa: E402

PROFILES = ("nvidia", "mali-g72")
DOMAINS = {"tm": TILES, "tn": TILES, "tk": K_TILES, "bm": BLOCKS, "bn": BLOCKS, "vec": VECS}
VGG = {"vgg2": (64, 64), "vgg10": (128, 256)}  # VGG-16 layers 2 and 10: input, output channels


def _batched(b: int, m: int, n: int, k: int):
    return fun([Array(Array(Array(Float, k), m), b), Array(Array(Array(Float, k), n), b)],
               lambda x, y: map(lambda p: map(lambda r: map(
                   lambda c: reduce(lift.add, 0.0) << map(matmul.mult) << lzip(r, c)) << p[1]) << p[0]) << lzip(x, y))


@cache
def program(name: str):
    """The program `name` with constant sizes, and inputs for it."""
    rng = np.random.default_rng(3)
    if name == "matmul":
        return substitute_sizes(matmul.high_level(), {"M": 64, "N": 32, "K": 48}), matmul.inputs(64, 32, 48)
    if name == "matmul_t":  # B given as [K][N]: its tiles are copied from rows of B, read transposed
        m, n, k = 64, 32, 48
        prog = fun([Array(Array(Float, k), m), Array(Array(Float, n), k)], lambda x, y: map(
            lambda r: map(lambda c: reduce(lift.add, 0.0) << map(matmul.mult) << lzip(r, c)) << (transpose << y)) << x)
        return prog, (rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32))
    if name == "batched":
        args = (rng.random((3, 32, 32), dtype=np.float32), rng.random((3, 16, 32), dtype=np.float32))
        return _batched(3, 32, 16, 32), args
    if name == "dot":
        n = 1 << 14
        dot = fun([Array(Float, n), Array(Float, n)], lambda x, y: reduce(lift.add, 0.0) << map(matmul.mult)
                  << lzip(x, y))
        return dot, (rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32))
    if name == "gemv":
        m, n = 64, 256
        gemv = fun([Array(Array(Float, n), m), Array(Float, n)],
                   lambda a, v: map(lambda row: reduce(lift.add, 0.0) << map(matmul.mult) << lzip(row, v)) << a)
        return gemv, (rng.random((m, n), dtype=np.float32), rng.random(n, dtype=np.float32))
    if name == "max":
        n = 3 << 12
        biggest = fun([Array(Int, n)], lambda x: reduce(lift.max_, -(2 ** 31)) << x)
        return biggest, (rng.integers(-10 ** 6, 10 ** 6, n).astype(np.int32),)
    cin, cout = VGG.get(name, (16, 32))
    prog = substitute_sizes(conv.listing_4_1(), {"H": 8, "W": 8, "C": cin, "M": cout})
    return prog, conv.inputs(8, cin, cout)


@cache
def for_profile(name: str, device: str) -> lift.Program:
    return lift.compile(program(name)[0], device=profile(device))


def local_bytes(source: str) -> int:
    """Bytes of the `local` arrays the kernels declare (floats and ints: 4 bytes; floatN: 4N)."""
    found = re.findall(r"^\s*local (?:float|int)(\d*) \w+\[(\d+)\];", source, re.M)
    return sum(4 * int(w or 1) * int(n) for w, n in found)


def check_profile_limits(prog: lift.Program, device: str) -> None:
    dev = profile(device)
    assert 0 < local_bytes(prog.source) <= dev.local_mem_bytes
    for nd in prog.ndrange:
        if nd.kernel.endswith("_fill"):  # reduce_atomic's one-work-item pre-fill
            continue
        assert nd.local_size is not None
        local = [int(x) for x in nd.local_size]
        assert int(np.prod(local)) <= dev.max_work_group_size
        assert all(x <= dev.max_work_item_sizes[d] for d, x in enumerate(local))
        assert all(int(g) % int(x) == 0 for g, x in zip(nd.global_size, nd.local_size))


# ------------------------------------------------------------------------------- the space


@pytest.mark.parametrize("device", PROFILES)
def test_the_space_names_the_device_limits(device):
    dev = profile(device)
    space = TileSpace((4096, 4096, 4096), dev, DOMAINS)
    kinds = {c.kind for c in space.constraints}
    assert {TILE_DIVIDES, LOCAL_MEM, WORK_GROUP, LAUNCH, REGISTERS} <= kinds
    first = space.first()
    assert first is not None and space.is_valid(first) and not space.violated(first)
    too_big = {"tm": 128, "tn": 128, "tk": 32, "bm": 8, "bn": 8}
    assert LOCAL_MEM in {c.kind for c in space.violated(too_big)}
    assert REGISTERS in {c.kind for c in space.violated({**first, "bm": 8, "bn": 8})} or device == "nvidia"
    assert TILE_DIVIDES in {c.kind for c in TileSpace((4096, 4096, 100), dev, DOMAINS).violated(first)}
    valid = list(space.choices())
    assert first == valid[0] and len(valid) > 10
    for c in valid:  # the limits, computed here independently of z3
        items = (c["tm"] // c["bm"]) * (c["tn"] // c["bn"])
        assert 4 * (c["tm"] * c["tk"] + c["tn"] * c["tk"] + c["tm"] * c["tn"]) <= dev.local_mem_bytes
        assert items <= dev.max_work_group_size and c["tm"] % c["bm"] == 0 and c["tn"] % c["bn"] == 0
    # a large matmul: enough work-groups for every compute unit, tiles of 16 x 16 work-items
    assert (4096 // first["tm"]) * (4096 // first["tn"]) >= dev.compute_units
    assert first["bm"] * first["bn"] >= 16 and (first["tm"] // first["bm"]) * (first["tn"] // first["bn"]) >= 64


@pytest.mark.parametrize("device", PROFILES)
def test_vector_copies_are_a_choice_where_aligned(device):
    dev = profile(device)
    space = TileSpace((4096, 4096, 4096), dev, DOMAINS)
    assert VECTOR_ALIGNED in {c.kind for c in space.constraints}
    first = space.first()
    assert first["vec"] == 4 and space.is_valid({**first, "vec": 1})  # preferred, and scalar copies stay valid
    odd = TileSpace((64, 64, 6), dev, {**DOMAINS, "tk": (2, 6), "tm": (16,), "tn": (16,)})
    assert VECTOR_ALIGNED in {c.kind for c in odd.violated({"tm": 16, "tn": 16, "tk": 2, "bm": 2, "bn": 2, "vec": 4})}
    assert {c["vec"] for c in odd.choices()} == {1}
    assert space.is_valid({k: v for k, v in first.items() if k != "vec"})  # a choice without vec: scalar


@pytest.mark.parametrize("device", PROFILES)
def test_the_reduction_space_names_the_device_limits(device):
    dev = profile(device)
    space = ReduceSpace(1 << 26, dev, {"local": LOCALS, "chunk": CHUNKS})
    assert {TILE_DIVIDES, LOCAL_MEM, WORK_GROUP, LAUNCH} <= {c.kind for c in space.constraints}
    first = space.first()
    assert first is not None and (1 << 26) // (first["local"] * first["chunk"]) >= 2 * dev.compute_units
    assert first["local"] <= dev.max_work_group_size and first["chunk"] >= 64  # long, coalesced sweeps
    assert TILE_DIVIDES in {c.kind for c in ReduceSpace(3 * 1000, dev, space.domains).violated(first)}
    small = ReduceSpace(1 << 26, dataclasses.replace(dev, max_work_group_size=64), space.domains)
    assert WORK_GROUP in {c.kind for c in small.violated({"local": 128, "chunk": 1})}


def test_the_points_are_placed_on_nests_and_reductions_only():
    placed = gpu_points(program("matmul")[0])
    assert [type(p) for p in points(placed).values()] == [GpuTiles]
    assert [type(p) for p in points(gpu_points(program("dot")[0])).values()] == [GpuReduce]
    assert gpu_default(matmul.high_level(), profile("nvidia")) is None  # symbolic sizes: nothing placed
    axpy = fun([Array(Float, 1024), Array(Float, 1024)], lambda x, y: map(lift.add) << lzip(x, y))
    assert gpu_default(axpy, profile("nvidia")) is None


# ------------------------------------------------------------------ compiled for a profile


@pytest.mark.parametrize("device", PROFILES)
@pytest.mark.parametrize("name", ["matmul", "matmul_t", "batched", "conv", "vgg2", "vgg10"])
def test_gpu_profiles_get_local_tiles_within_their_limits(name, device):
    prog = for_profile(name, device)
    (label, chosen), = ((k, v) for k, v in prog.choices.points.items() if k.startswith("auto_g"))
    assert not chosen["skip"] and tile_space(points(gpu_points(program(name)[0]))[label], profile(device)
                                             ).is_valid(chosen)
    assert "barrier(CLK_LOCAL_MEM_FENCE" in prog.source and "get_local_id" in prog.source
    check_profile_limits(prog, device)
    with pytest.raises(DeviceError):
        prog(*program(name)[1])
    again = lift.compile(program(name)[0], device=profile(device), choices=prog.choices)
    assert again.source == prog.source  # Program.choices rebuild it


@pytest.mark.parametrize("name", ["matmul", "matmul_t", "conv"])
def test_copies_into_local_memory_are_coalesced(name):
    """Consecutive work-items (local id 0) read consecutive addresses of both inputs."""
    src = re.sub(r"\(\(global float4\*\)(\w+)\)", r"\1", for_profile(name, "nvidia").source)  # float4 units
    load = r"\n\s*tmp\w*\[[^\]]*\] = id(?:_v4)?\([^\n]*?\b(\w+)\[([^\]]*)\]"  # the first array read (past pad tests)
    loads = re.findall(r"int (l_\d+) = get_local_id\(0\);[^{}]*?(?:if \([^{}\n]*\) \{)?" + load
                       + r"|for \(int (l_\d+) = get_local_id\(0\);[^{}]*\{[^\n]*" + load, src)
    found = [(a or d, b or e, c or f) for a, b, c, d, e, f in loads]
    assert len({x for _, x, _ in found}) == 2, src  # both inputs are staged
    for var, _, index in found:
        assert re.search(rf"(^|[ +]){var}($| \+)", index), index  # unit stride in the dimension-0 local id


def copy_lines(source: str) -> list[str]:
    """The statements that copy a tile into local memory."""
    return [line for line in source.splitlines() if re.match(r"\s*tmp_\d+\[.*\] = id(_v4)?\(.*\bglobal\b", line)]


@pytest.mark.parametrize("device", PROFILES)
@pytest.mark.parametrize("name", ["matmul", "matmul_t", "batched", "conv"])
def test_the_copies_load_aligned_vectors(name, device):
    """The default tiles copy float4s; a matrix's tile rows are whole aligned vectors, read with one
    pointer-cast load each (no vload, no lane gathering); a padded convolution window keeps its pad
    conditions per vector. The local-memory limits hold with the float4 arrays counted."""
    prog = for_profile(name, device)
    (chosen,) = (v for k, v in prog.choices.points.items() if k.startswith("auto_g"))
    assert chosen["vec"] == 4 and "local float4 " in prog.source
    lines = copy_lines(prog.source)
    assert len(lines) == 2 and all("id_v4(" in line and "((global float4*)" in line for line in lines)
    assert "vload" not in prog.source
    check_profile_limits(prog, device)


@pytest.mark.device
@pytest.mark.parametrize("name", ["matmul_t", "conv"])
def test_vector_and_scalar_copies_compute_what_the_interpreter_computes(name):
    prog, args = program(name)
    label = next(iter(points(gpu_points(prog))))
    want = lift.interpret(prog, *args)
    for vec in VECS:
        got = _on_pocl(name, "nvidia", {label: {**REGISTER_TILE, "vec": vec}})
        assert ("id_v4(" in got.source) == (vec == 4)
        np.testing.assert_allclose(got(*args), want, rtol=1e-4, atol=1e-4)


def divergent_barriers(source: str) -> list[str]:
    """The barriers inside an `if` or a loop over local ids: not reached by every work-item of a
    group, undefined behaviour on a GPU (PoCL's CPU device tolerates them)."""
    stack: list[bool] = []
    bad = []
    for line in source.splitlines():
        s = line.strip()
        if s.startswith("barrier(") and any(stack):
            bad.append(s)
        del stack[len(stack) - min(s.count("}"), len(stack)):]
        guard = bool(re.match(r"(\} )?(else )?if \(", s)) or (s.startswith("for (") and "get_local_id" in s)
        stack += [guard] * s.count("{")
    return bad


def test_the_barrier_checker_sees_a_guarded_barrier():
    src = "{\n  if (l < 8) {\n    barrier(CLK_LOCAL_MEM_FENCE);\n  }\n  barrier(CLK_LOCAL_MEM_FENCE);\n}\n"
    assert divergent_barriers(src) == ["barrier(CLK_LOCAL_MEM_FENCE);"]


@pytest.mark.parametrize("device", PROFILES)
@pytest.mark.parametrize("name", ["matmul", "matmul_t", "batched", "conv", "vgg10", "dot", "max", "gemv"])
def test_every_work_item_reaches_every_barrier(name, device):
    src = for_profile(name, device).source
    assert "barrier(" in src and not divergent_barriers(src)


# ----------------------------------------------------------------- the same choices on PoCL


def _on_pocl(name: str, device: str, choices=None) -> lift.Program:
    prog = program(name)[0]
    return lift.compile(prog, choices=choices or for_profile(name, device).choices)


@pytest.mark.device
@pytest.mark.parametrize("name, device", [("matmul", "nvidia"), ("matmul", "mali-g72"), ("matmul_t", "nvidia"),
                                          ("batched", "nvidia"), ("conv", "mali-g72")])
def test_the_gpu_choices_compute_what_the_interpreter_computes(name, device):
    prog, args = program(name)
    got = _on_pocl(name, device)
    assert got.choices.points == for_profile(name, device).choices.points  # the GPU point, same choices
    np.testing.assert_allclose(got(*args), lift.interpret(prog, *args), rtol=1e-4, atol=1e-4)


REGISTER_TILE = {"skip": False, "tm": 32, "tn": 16, "tk": 8, "bm": 4, "bn": 2}


@cache
def register_tiled() -> lift.Program:
    """matmul with 4 x 2 register tiles and three k-tiles (a loop the barriers must synchronise)."""
    label = next(iter(points(gpu_points(program("matmul")[0]))))
    return _on_pocl("matmul", "nvidia", {label: REGISTER_TILE})


@pytest.mark.device
def test_register_tiles_compute_what_the_interpreter_computes():
    prog, args = program("matmul")
    got = register_tiled()
    assert "float tmp_" in got.source and [int(x) for x in got.ndrange[0].local_size] == [8, 8]
    np.testing.assert_allclose(got(*args), lift.interpret(prog, *args), rtol=1e-4, atol=1e-4)


@pytest.mark.device
@pytest.mark.slow  # ~50 s on the loaded 2-core machine: a PoCL build per mutant
def test_every_barrier_of_the_tiles_is_needed_on_pocl():
    """Removing any one barrier gives a wrong result on PoCL, or its reason shows the race
    (tests/test_barrier_mutation.py's criterion)."""
    from test_barrier_mutation import barrier_lines, exposed

    plan = register_tiled().plan
    args = program("matmul")[1]
    lines = barrier_lines(plan.source)
    assert len(lines) == len(plan.barriers) >= 2
    for k, line in enumerate(lines):
        assert exposed(plan, args, line) or "(race: " in plan.barriers[k].reason, plan.barriers[k].reason


@pytest.mark.parametrize("name, device", [("dot", "nvidia"), ("dot", "mali-g72"), ("max", "mali-g72")])
def test_reductions_get_a_local_tree_and_the_atomic_combine(name, device):
    prog = for_profile(name, device)
    chosen = prog.choices.points["auto_gr0"]
    assert not chosen["skip"]
    check_profile_limits(prog, device)
    kernel = prog.source[prog.source.index("kernel void lift_kernel("):]
    # one before each halving and one before the group's result is read: log2(local) + 1
    assert kernel.count("barrier(CLK_LOCAL_MEM_FENCE)") == chosen["local"].bit_length()
    assert "lift_atomic_" in kernel and "get_local_id(0) == 0" in kernel
    with pytest.raises(DeviceError):
        prog(*program(name)[1])


@pytest.mark.parametrize("device", PROFILES)
def test_gemv_gets_a_work_group_per_row(device):
    prog = for_profile("gemv", device)
    chosen = prog.choices.points["auto_gr0"]
    assert chosen["local"] == 256 and isinstance(points(gpu_points(program("gemv")[0]))["auto_gr0"], GpuRows)
    check_profile_limits(prog, device)
    assert [int(x) for x in prog.ndrange[0].global_size] == [64 * 256]  # a group per row
    assert prog.source.count("barrier(CLK_LOCAL_MEM_FENCE)") == 8 and "atomic" not in prog.source
    index = re.search(r"\ba\[([^\]]*)\]", prog.source).group(1)  # a row's reads: unit stride in the local id
    assert re.search(r"(^|[ +])l($| \+)", index), index


@pytest.mark.device
@pytest.mark.parametrize("name, device", [("dot", "nvidia"), ("max", "mali-g72"), ("gemv", "nvidia")])
def test_the_reductions_compute_what_the_interpreter_computes(name, device):
    prog, args = program(name)
    got = _on_pocl(name, device)
    assert got.choices.points == for_profile(name, device).choices.points  # the GPU point, same choices
    np.testing.assert_allclose(got(*args), lift.interpret(prog, *args), rtol=1e-4)


@pytest.mark.device
@pytest.mark.slow  # a PoCL build per mutant
def test_every_barrier_of_the_tree_is_needed_on_pocl():
    from test_barrier_mutation import barrier_lines, exposed

    plan = _on_pocl("dot", "mali-g72").plan
    lines = barrier_lines(plan.source)
    assert len(lines) == len(plan.barriers) >= 4
    for k, line in enumerate(lines):
        assert exposed(plan, program("dot")[1], line) or "(race: " in plan.barriers[k].reason, plan.barriers[k].reason


CLANG = shutil.which("clang")


@pytest.mark.skipif(CLANG is None, reason="no clang installed (Debian: apt-get install clang)")
@pytest.mark.parametrize("device", PROFILES)
def test_clang_accepts_the_source_as_opencl_1_2(device, tmp_path):
    for name in ("matmul", "batched", "conv", "dot", "max", "gemv"):
        path = tmp_path / f"{name}.cl"
        path.write_text(for_profile(name, device).source)
        done = subprocess.run([CLANG, "-cl-std=CL1.2", "-fsyntax-only", "-x", "cl", str(path)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
