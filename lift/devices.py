"""Device profiles: the hardware limits that constraints, memory and the runtime need.

A `Device` is a frozen record, either read from a live OpenCL device (`current()`) or an
offline profile (`profile("mali-g72")`) so that a program can be compiled for a device
that is not attached. Only this module and `lift.runtime` query pyopencl devices; the
device is chosen from `device=`, else `PYOPENCL_CTX` (through pyopencl), else the first
GPU, else PoCL, else any device.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from lift.errors import DeviceError

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


@dataclass(frozen=True, slots=True)
class Device:
    """The limits of an OpenCL device (live or offline) in the units OpenCL reports them."""

    name: str
    vendor: str
    kind: str  # "cpu" | "gpu" | "accelerator"
    compute_units: int
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    local_mem_bytes: int
    global_mem_bytes: int
    max_alloc_bytes: int
    preferred_vector_width: int  # for float
    local_mem_emulated: bool  # local memory lives in DRAM/RAM (CPU, Mali)
    simd_width: int = 1  # warp (NVIDIA 32), quad (Mali 4), SIMD lanes for floats (CPU)
    max_work_items_per_cu: int = 0  # resident work-items per compute unit (0: unknown)
    cache_line_bytes: int = 64
    platform: str = ""
    version: str = ""
    driver_version: str = ""
    live: bool = False  # read from an attached device

    @property
    def key(self) -> str:
        """A string identifying the device and its compiler (for cache keys)."""
        return f"{self.platform}|{self.name}|{self.version}|{self.driver_version}"


# ------------------------------------------------------------------ offline profiles

_PROFILES: dict[str, Device] = {
    # The project machine: PoCL 3.0 pthread on 2 vCPUs (AVX2); see notes/pocl-performance.md.
    "pocl-cpu": Device(
        name="pthread-cpu", vendor="PoCL", kind="cpu", compute_units=2, max_work_group_size=4096,
        max_work_item_sizes=(4096, 4096, 4096), local_mem_bytes=512 * KiB, global_mem_bytes=3 * GiB,
        max_alloc_bytes=1 * GiB, preferred_vector_width=8, local_mem_emulated=True, simd_width=8,
        max_work_items_per_cu=4096, cache_line_bytes=64, platform="Portable Computing Language",
    ),
    # Thesis 2.2.1 and 4.2.2: 12 cores x 384 work-items, quads, 64-byte lines, local memory in DRAM.
    "mali-g72": Device(
        name="Mali-G72", vendor="ARM", kind="gpu", compute_units=12, max_work_group_size=384,
        max_work_item_sizes=(384, 384, 384), local_mem_bytes=32 * KiB, global_mem_bytes=4 * GiB,
        max_alloc_bytes=1 * GiB, preferred_vector_width=4, local_mem_emulated=True, simd_width=4,
        max_work_items_per_cu=384, cache_line_bytes=64, platform="ARM Platform",
    ),
    # A recent NVIDIA GPU (H100 SXM): 132 SMs, 32-wide warps, 48 KiB of static local memory.
    "nvidia": Device(
        name="NVIDIA H100", vendor="NVIDIA Corporation", kind="gpu", compute_units=132,
        max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64), local_mem_bytes=48 * KiB,
        global_mem_bytes=80 * GiB, max_alloc_bytes=20 * GiB, preferred_vector_width=1,
        local_mem_emulated=False, simd_width=32, max_work_items_per_cu=2048, cache_line_bytes=128,
        platform="NVIDIA CUDA",
    ),
}

PROFILE_NAMES = tuple(_PROFILES)


def profile(name: str) -> Device:
    """The offline profile `name`: "pocl-cpu", "mali-g72" or "nvidia"."""
    try:
        return _PROFILES[name.lower()]
    except KeyError:
        raise DeviceError(f"no device profile named {name!r}; known: {', '.join(PROFILE_NAMES)}") from None


# ---------------------------------------------------------------------- live devices


def current(device: Any = None) -> Device:
    """The profile of the live device `lift.compile` would use (see `find`)."""
    return describe(find(device))


def find(device: Any = None) -> Any:
    """The pyopencl device for `device`: a cl.Device, cl.Context, Device, name or None."""
    cl = _cl()
    if isinstance(device, cl.Device):
        return device
    if isinstance(device, cl.Context):
        return device.devices[0]
    if isinstance(device, Device):
        return _by_name(device.name if device.live else _PROFILE_MATCH.get(device.name, device.name))
    if isinstance(device, str):
        return _by_name(_PROFILE_MATCH.get(device.lower(), device))
    if device is not None:
        raise DeviceError(f"device= must be a pyopencl Device or Context, a lift Device or a name, "
                          f"got {type(device).__name__}")
    if "PYOPENCL_CTX" in os.environ:  # pyopencl interprets it
        try:
            return cl.create_some_context(interactive=False).devices[0]
        except cl.Error as e:
            raise DeviceError(f"PYOPENCL_CTX={os.environ['PYOPENCL_CTX']!r} selects no device: {e}") from e
    devices = _all_devices()
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    pocl = [d for d in devices if "portable computing language" in d.platform.name.lower()]
    return (gpus or pocl or devices)[0]


# Offline profile name -> a substring of the live device it stands for.
_PROFILE_MATCH = {"pocl-cpu": "portable computing language", "pthread-cpu": "portable computing language",
                  "mali-g72": "mali", "nvidia": "nvidia", "NVIDIA H100": "nvidia"}


def _by_name(name: str) -> Any:
    devices = _all_devices()
    want = name.lower()
    for d in devices:
        if want in f"{d.platform.name} {d.name}".lower():
            return d
    shown = "; ".join(f"{d.platform.name}: {d.name}" for d in devices)
    raise DeviceError(f"no attached OpenCL device matches {name!r} (attached: {shown})",
                      hint="an offline profile can drive constraints, but running needs its device")


def _all_devices() -> list[Any]:
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        platforms = []
    devices = [d for p in platforms for d in _platform_devices(p)]
    if not devices:
        raise DeviceError("no OpenCL device found",
                          hint="pip install pocl-binary-distribution for a CPU device")
    return devices


def _platform_devices(p: Any) -> list[Any]:
    try:
        return list(p.get_devices())
    except _cl().Error:
        return []


def describe(d: Any) -> Device:
    """The `Device` profile of a live pyopencl device."""
    cl = _cl()
    kind = "gpu" if d.type & cl.device_type.GPU else "cpu" if d.type & cl.device_type.CPU else "accelerator"
    emulated = d.local_mem_type != cl.device_local_mem_type.LOCAL or kind == "cpu"
    vec = int(d.preferred_vector_width_float) or 1
    base = Device(
        name=d.name.strip(), vendor=d.vendor.strip(), kind=kind, compute_units=int(d.max_compute_units),
        max_work_group_size=int(d.max_work_group_size),
        max_work_item_sizes=tuple(int(s) for s in d.max_work_item_sizes),
        local_mem_bytes=int(d.local_mem_size), global_mem_bytes=int(d.global_mem_size),
        max_alloc_bytes=int(d.max_mem_alloc_size), preferred_vector_width=vec,
        local_mem_emulated=bool(emulated), simd_width=_simd_width(d, kind, vec),
        max_work_items_per_cu=int(d.max_work_group_size),
        cache_line_bytes=int(d.global_mem_cacheline_size) or 64,
        platform=d.platform.name.strip(), version=d.version.strip(),
        driver_version=d.driver_version.strip(), live=True,
    )
    return _refine(base)


def _simd_width(d: Any, kind: str, vec: int) -> int:
    for attr in ("warp_size_nv", "wavefront_width_amd"):
        try:
            return int(getattr(d, attr))
        except Exception:  # noqa: BLE001 - the vendor extension is absent
            continue
    return vec if kind == "cpu" else 1


def _refine(dev: Device) -> Device:
    """Vendor facts OpenCL does not report (resident work-items per compute unit)."""
    if dev.vendor.lower().startswith("nvidia"):
        return replace(dev, max_work_items_per_cu=2048)
    if "mali" in dev.name.lower():
        return replace(dev, simd_width=4, max_work_items_per_cu=384, local_mem_emulated=True)
    return dev


def _cl() -> Any:
    try:
        import pyopencl
    except ImportError as e:  # pragma: no cover - pyopencl is a dependency
        raise DeviceError(f"pyopencl is not installed: {e}") from e
    return pyopencl
