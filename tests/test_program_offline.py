"""Offline compilation: `lift.compile(prog, device=profile)` for a device that is not attached.

dot, gemv, matmul, conv and Listing 5.2 with Table 5.1's mapping M4 are compiled for the
"mali-g72" and "nvidia" profiles; the tests check the launch configuration and the buffers
against each profile's limits (independently of `check_limits`), that a call is a DeviceError,
and that every profile's source at least builds on the attached device (a syntax check).
"""

from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
import pytest
from device_facts import profile_attached

import lift
from lift import Array, Float, fun, map, runtime
from lift import rewrites as rw
from lift.arith import evaluate
from lift.devices import profile
from lift.errors import DeviceError
from tests.programs import N, conv_program, dot_program, gemv_program, matmul_program, rand
from tests.test_constraints_mapping import choice, listing_5_2

OFFLINE = ("mali-g72", "nvidia")


def _inputs(name: str) -> tuple:
    return {"dot": lambda: (rand(1 << 12), rand(1 << 12)),
            "gemv": lambda: (rand(64, 128), rand(128)),
            "matmul": lambda: (rand(32, 16), rand(24, 16)),
            "conv": lambda: (rand(8, 8, 4), rand(6, 3, 3, 4)),
            "listing-5.2-M4": lambda: (rand(4, 8, 16),)}[name]()


def _program(name: str):
    return {"dot": dot_program, "gemv": gemv_program, "matmul": matmul_program,
            "conv": lambda: conv_program(3, 3, 1, 1), "listing-5.2-M4": listing_5_2}[name]()


def _compile(name: str, device):
    kw = {"choices": choice("M4")} if name == "listing-5.2-M4" else {}
    return lift.compile(_program(name), device=device, **kw)


PROGRAMS = ("dot", "gemv", "matmul", "conv", "listing-5.2-M4")


@cache
def offline(name: str, dev: str):
    return _compile(name, profile(dev))


@pytest.mark.parametrize("dev", OFFLINE)
@pytest.mark.parametrize("name", PROGRAMS)
def test_offline_program_describes_itself_within_the_profile_limits(name: str, dev: str) -> None:
    """Where the profile's device is attached (an NVIDIA GPU), the program is built for it and
    must run and agree with the interpreter instead of refusing to run."""
    k, live = offline(name, dev), profile_attached(dev)
    d = live or profile(dev)
    assert k.attached == (live is not None) and k.device.key == d.key and "kernel void" in k.source
    assert k.kernels and all(f"kernel void {n}(" in k.source for n in k.kernels)
    assert len(k.ndrange) >= 1 and k.choices is not None
    args = _inputs(name)
    sizes = k.sizes(*args)
    for r in k.ndrange:
        if r.local_size is None:
            continue
        local = [evaluate(s, sizes) for s in r.local_size]
        glob = [evaluate(s, sizes) for s in r.global_size]
        assert int(np.prod(local)) <= d.max_work_group_size
        assert all(s <= m for s, m in zip(local, d.max_work_item_sizes))
        assert all(g % s == 0 for g, s in zip(glob, local))
    used = k.memory_bytes_for(*args)
    assert used.get("local", 0) <= d.local_mem_bytes
    for b in k.plan.buffers:
        assert evaluate(b.count, sizes) * b.scalar.dtype.itemsize <= d.max_alloc_bytes
    k.check_limits(*args)
    if live is not None:
        want = lift.interpret(_program(name), *args)
        np.testing.assert_allclose(np.reshape(k(*args), np.shape(want)), want, rtol=1e-4, atol=1e-4)
        return
    with pytest.raises(DeviceError, match=f"{d.name} is not attached") as e:
        k(*args)
    assert "compiled offline" in str(e.value)
    with pytest.raises(DeviceError, match="not attached"):
        k.time(*args)


@pytest.mark.parametrize("dev", OFFLINE)
def test_listing_5_2_m4_uses_local_memory_and_a_barrier_offline(dev: str) -> None:
    k = offline("listing-5.2-M4", dev)
    assert len(k.barriers) >= 1 and "barrier(" in k.source and "local" in k.memory_bytes
    assert any(r.local_size is not None for r in k.ndrange)


@pytest.mark.parametrize("dev", OFFLINE)
def test_limits_beyond_the_profile_are_refused(dev: str) -> None:
    """Local memory and allocations too large for the device, for arguments given."""
    k = offline("listing-5.2-M4", dev)
    d = k.device  # the profile, or the attached device it stands for (its own local memory)
    k_big = d.local_mem_bytes // 4 // 16 + 16  # J with J * K floats of local memory past the limit
    with pytest.raises(DeviceError, match=f"more than {d.local_mem_bytes}"):
        k.check_limits(rand(1, k_big, 16))
    big = int(np.sqrt(d.max_alloc_bytes // 4)) + 1  # the M x N result (matmul has no M*N*K temporary)
    mm = offline("matmul", dev)
    sizes = {"M": big, "N": big, "K": 16}
    from lift.program import check_limits

    with pytest.raises(DeviceError, match="one allocation"):
        check_limits(mm.plan, d, sizes)


def test_a_work_group_larger_than_the_device_takes_is_refused_at_compile_time() -> None:
    tiny = dataclasses.replace(profile("mali-g72"), name="tiny-gpu", max_work_group_size=64,
                               max_work_item_sizes=(64, 64, 64))
    with pytest.raises(DeviceError, match="does not fit tiny-gpu.*more than 64"):
        lift.compile(matmul_program(), device=tiny, local_size=128)


@pytest.mark.parametrize("dev, want", [("mali-g72", "float4"), ("nvidia", None), ("pocl-cpu", "float16")])
def test_the_profile_vector_width_drives_vectorise_points(dev: str, want: str | None) -> None:
    prog = fun([Array(Float, N)], lambda x: rw.vectorise(map(lift.id), label="P") << x)
    src = lift.compile(prog, device=profile(dev)).source
    if want is None:  # NVIDIA prefers scalars: the point is skipped
        assert "float4" not in src and "float8" not in src and "float16" not in src
    else:
        assert want in src
    narrow = lift.compile(prog, device=profile(dev), choices={"P": {"width": 2}}).source
    assert "float2" in narrow  # an explicit choice wins


@pytest.mark.device
@pytest.mark.parametrize("dev", OFFLINE)
@pytest.mark.parametrize("name", PROGRAMS)
def test_offline_source_builds_on_the_attached_device(name: str, dev: str) -> None:
    """A syntax check: the code for the Mali or NVIDIA profile is valid OpenCL C here too."""
    built = runtime.build(runtime.open_device(), offline(name, dev).source, cache_dir=False)
    assert set(runtime.kernels(built, offline(name, dev).kernels))


@pytest.mark.device
def test_the_pocl_profile_runs_on_the_attached_pocl() -> None:
    if profile_attached("pocl-cpu") is None:
        pytest.skip("no usable PoCL device is attached")
    k = _compile("gemv", profile("pocl-cpu"))
    a, v = _inputs("gemv")
    assert k.attached and k.device.live
    assert np.allclose(k(a, v), a.astype(np.float64) @ v, rtol=1e-4)
