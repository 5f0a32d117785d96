"""Device profiles: offline limits and the live device (PoCL's facts where it is PoCL)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lift import devices
from lift.devices import Device, profile
from lift.errors import DeviceError

KiB = 1024
ROOT = Path(__file__).resolve().parents[1]


def test_mali_g72_profile() -> None:
    mali = profile("mali-g72")
    assert (mali.compute_units, mali.max_work_items_per_cu, mali.max_work_group_size) == (12, 384, 384)
    assert mali.local_mem_bytes == 32 * KiB and mali.local_mem_emulated
    assert (mali.simd_width, mali.cache_line_bytes, mali.kind) == (4, 64, "gpu")
    assert all(s <= 384 for s in mali.max_work_item_sizes)


def test_nvidia_profile() -> None:
    gpu = profile("nvidia")
    assert (gpu.compute_units, gpu.max_work_group_size, gpu.simd_width) == (132, 1024, 32)
    assert gpu.local_mem_bytes == 48 * KiB and not gpu.local_mem_emulated
    assert gpu.max_work_item_sizes == (1024, 1024, 64)


def test_pocl_profile() -> None:
    cpu = profile("pocl-cpu")
    assert cpu.kind == "cpu" and cpu.local_mem_emulated and cpu.preferred_vector_width == 16
    assert (cpu.compute_units, cpu.local_mem_bytes) == (2, 1024 * KiB)
    assert not cpu.live


def test_profiles_are_frozen_and_named() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile("nvidia").compute_units = 1  # type: ignore[misc]
    assert profile("Mali-G72") is profile("mali-g72")
    with pytest.raises(DeviceError, match="no device profile named 'tpu'"):
        profile("tpu")


@pytest.mark.device
def test_current_is_a_live_device_with_its_limits() -> None:
    dev = devices.current()
    assert isinstance(dev, Device) and dev.live and dev.kind in ("cpu", "gpu", "accelerator")
    assert dev.compute_units >= 1 and dev.max_work_group_size >= 1
    assert len(dev.max_work_item_sizes) == 3 and dev.local_mem_bytes > 0
    assert dev.max_alloc_bytes <= dev.global_mem_bytes and dev.preferred_vector_width >= 1
    assert dev.version and dev.driver_version and dev.name in dev.key
    if dev.kind == "gpu" and dev.vendor.lower().startswith("nvidia"):
        assert dev.simd_width == 32 and not dev.local_mem_emulated  # the warp size the NVIDIA extension reports


@pytest.mark.device
@pytest.mark.requires_pocl
@pytest.mark.requires_cpu_device
def test_current_is_the_live_pocl_device() -> None:
    dev = devices.current()
    assert "portable computing language" in dev.platform.lower()
    assert dev.kind == "cpu" and dev.local_mem_emulated


@pytest.mark.device
def test_a_profile_finds_its_attached_device_and_no_other() -> None:
    live = devices.current()
    for name in devices.PROFILE_NAMES:
        try:
            found = devices.current(profile(name))
        except DeviceError as e:
            assert "no attached OpenCL device matches" in str(e) or "cannot" in str(e)
            continue
        assert found.live and (profile(name).kind != "gpu" or found.kind == "gpu")
        if found.key == live.key:
            assert devices.current(name).key == live.key


@pytest.mark.device
@pytest.mark.requires_pocl
def test_find_by_profile_and_name() -> None:
    live = devices.current().key
    assert devices.current("pocl-cpu").key == live
    assert devices.current(profile("pocl-cpu")).key == live
    assert devices.current(devices.current()).key == live
    with pytest.raises(DeviceError, match="no attached OpenCL device matches 'mali'"):
        devices.find("mali-g72")
    with pytest.raises(DeviceError, match="device= must be"):
        devices.find(3.5)


@pytest.mark.device
def test_pyopencl_ctx_selects_the_device() -> None:
    ctx = next(i.ctx for i in devices.list() if i.default)  # the working device ("0:0" may not be)
    env = dict(os.environ, PYOPENCL_CTX=ctx)
    code = "from lift import devices; print(devices.current().platform)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == devices.current().platform


def test_only_runtime_and_devices_touch_pyopencl() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "lift").rglob("*.py")
                 if p.name != "runtime.py" and p.parent.name != "devices"
                 and re.search(r"^\s*(import|from) pyopencl", p.read_text(), re.M)]
    assert offenders == []
