"""Attached OpenCL devices: which one liftcl uses, and every one with whether it is usable.

Only this package and `lift.runtime` query pyopencl. The device is `device=` when given (a
pyopencl Device or Context, a lift `Device`, a name), else `PYOPENCL_CTX`'s (pyopencl reads it),
else the first usable GPU, else the first usable CPU runtime (PoCL first), else any usable
device. A device is usable when it builds and runs a one-line kernel (`lift.devices.usable`).
The default choice skips a device that is not, with a `DeviceSkipped` warning (once per device
and process); a device named by `device=` or `PYOPENCL_CTX` is taken as given, and one that
cannot build is a `DeviceError` that says so, with the build log's first line and the remedies.
"""

from __future__ import annotations

import builtins
import os
import warnings
from dataclasses import dataclass, replace
from typing import Any

from lift.devices import advice, caches, facts
from lift.devices.profiles import Device
from lift.devices.usable import Verdict, verdict
from lift.errors import DeviceError, DeviceSkipped


def current(device: Any = None) -> Device:
    """The profile of the live device `lift.compile` would use (see `find`)."""
    return describe(find(device))


def find(device: Any = None) -> Any:
    """The usable pyopencl device for `device`: a cl.Device, cl.Context, Device, name or None."""
    cl = _cl()
    if device is None and "PYOPENCL_CTX" in os.environ:
        return _checked(_from_env(), f"chosen by PYOPENCL_CTX={os.environ['PYOPENCL_CTX']!r}")
    if device is None:
        return _default()
    if isinstance(device, cl.Device):
        return _checked(device, "given as device=")
    if isinstance(device, cl.Context):
        return _checked(device.devices[0], "the device of the context given as device=")
    if isinstance(device, Device):
        return _by_name(device.name if device.live else _PROFILE_MATCH.get(device.name.lower(), device.name))
    if isinstance(device, str):
        return _by_name(_PROFILE_MATCH.get(device.lower(), device))
    raise DeviceError(f"device= must be a pyopencl Device or Context, a lift Device or a name, "
                      f"got {type(device).__name__}")


# Offline profile name -> a substring of the live device it stands for.
_PROFILE_MATCH = {"pocl-cpu": "portable computing language", "pthread-cpu": "portable computing language",
                  "cpu-avx512": "portable computing language", "cpu-avx2": "portable computing language",
                  "mali-g72": "mali", "nvidia": "nvidia", "nvidia h100": "nvidia"}


def _from_env() -> Any:
    cl = _cl()
    try:
        return cl.create_some_context(interactive=False).devices[0]
    except (cl.Error, ValueError, RuntimeError) as e:
        raise DeviceError(f"PYOPENCL_CTX={os.environ['PYOPENCL_CTX']!r} selects no device: {e}",
                          hint="lift.devices.list() shows the platform:device numbers") from e


def _checked(d: Any, chosen_by: str) -> Any:
    v = verdict(d)
    if not v.usable:
        raise advice.unusable_error(d.name.strip(), d.platform.name.strip(), d.platform.version.strip(), v,
                                    chosen_by=chosen_by)
    return d


def _default() -> Any:
    """The first usable device in preference order; unusable ones are skipped with a warning."""
    failures = []
    for d in _preference(_all_devices()):
        v = verdict(d)
        if v.usable:
            return d
        _warn_skipped(d, v)
        failures.append(advice.describe_failure(d.name.strip(), d.platform.name.strip(),
                                                d.platform.version.strip(), v))
    raise advice.none_usable_error(failures)


def _preference(devices: builtins.list[Any]) -> builtins.list[Any]:
    """GPUs, then PoCL's CPU devices, then other CPU runtimes, then the rest (stable)."""
    cl = _cl()

    def rank(d: Any) -> int:
        if d.type & cl.device_type.GPU:
            return 0
        if d.type & cl.device_type.CPU:
            return 1 if "portable computing language" in d.platform.name.lower() else 2
        return 3

    return sorted(devices, key=rank)


_WARNED: set[str] = set()  # verdict keys warned about in this process


def _warn_skipped(d: Any, v: Verdict) -> None:
    if v.key in _WARNED:
        return
    _WARNED.add(v.key)
    w = DeviceSkipped(f"skipping OpenCL device {d.name.strip()!r} ({d.platform.name.strip()}): {v.reason}")
    w.device, w.platform, w.reason = d.name.strip(), d.platform.name.strip(), v.reason
    warnings.warn(w, stacklevel=5)


def _by_name(name: str) -> Any:
    """The first usable attached device whose "platform name" contains `name`."""
    devices = _all_devices()
    want = name.lower()
    matches = [d for d in devices if want in f"{d.platform.name} {d.name}".lower()]
    if not matches:
        shown = "; ".join(f"{d.platform.name}: {d.name}" for d in devices)
        raise DeviceError(f"no attached OpenCL device matches {name!r} (attached: {shown})",
                          hint="an offline profile can drive constraints, but running needs its device")
    for d in matches:
        if verdict(d).usable:
            return d
    return _checked(matches[0], f"the attached device matching {name!r}")


def _all_devices() -> builtins.list[Any]:
    devices = [d for p in _platforms() for d in _platform_devices(p)]
    if not devices:
        raise advice.none_usable_error([])
    return devices


def _platforms() -> builtins.list[Any]:
    cl = _cl()
    try:
        return builtins.list(cl.get_platforms())
    except (cl.Error, RuntimeError):
        return []


def _platform_devices(p: Any) -> builtins.list[Any]:
    try:
        return builtins.list(p.get_devices())
    except (_cl().Error, RuntimeError):
        return []


# ------------------------------------------------------------------------- listing


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """One attached device: where it is (`PYOPENCL_CTX` numbers), whether it is usable, and why."""

    platform_index: int
    device_index: int
    platform: str
    platform_version: str
    name: str
    kind: str  # "cpu" | "gpu" | "accelerator" | "none" (a platform that lists no device)
    usable: bool
    reason: str  # the probe's verdict: what it did, or why the device cannot be used
    explanation: str = ""  # why a build failed, when the device's compiler is the cause
    default: bool = False  # the device `lift.compile` uses without device= (PYOPENCL_CTX included)
    profile: Device | None = None  # its limits, for a usable device

    @property
    def ctx(self) -> str:
        """The `PYOPENCL_CTX` value that selects this device."""
        return f"{self.platform_index}:{self.device_index}"


def list_devices(*, fresh: bool = False) -> builtins.list[DeviceInfo]:
    """Every platform and device, usable or not and why; `fresh` probes again instead of remembering.

    for info in lift.devices.list(): print(info.ctx, info.name, info.usable, info.reason)"""
    cl = _cl()
    found: builtins.list[tuple[int, int, Any, Any, Verdict | str]] = []
    for pi, p in enumerate(_platforms()):
        try:
            found += [(pi, di, p, d, verdict(d, fresh=fresh)) for di, d in enumerate(p.get_devices())]
        except (cl.Error, RuntimeError) as e:
            found.append((pi, -1, p, None, f"the platform lists no device: {str(e).splitlines()[0]}"))
    try:
        default = find().int_ptr
    except DeviceError:
        default = None
    out = []
    for pi, di, p, d, v in found:
        if d is None or not isinstance(v, Verdict):
            out.append(DeviceInfo(pi, di, p.name.strip(), p.version.strip(), "", "none", False, str(v)))
            continue
        kind = "gpu" if d.type & cl.device_type.GPU else "cpu" if d.type & cl.device_type.CPU else "accelerator"
        out.append(DeviceInfo(pi, di, p.name.strip(), p.version.strip(), d.name.strip(), kind, v.usable,
                              v.reason, advice.explain(v.log, p.version), d.int_ptr == default,
                              describe(d) if v.usable else None))
    return out


# ----------------------------------------------------------------------- describing


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
        driver_version=d.driver_version.strip(), live=True, platform_version=d.platform.version.strip(),
        host_memory=_host_unified(d, kind),
    )
    return _refine(with_facts(base))


def with_facts(dev: Device, flags: frozenset[str] | None = None, cpu_caches: facts.Caches | None = None) -> Device:
    """`dev` with the facts OpenCL does not report (`lift.devices.facts`): the vector width and
    registers its compiler targets, and for a CPU device (the host's CPU: PoCL's and Intel's CPU
    runtimes run on it) its flags and cache sizes; `flags` and `cpu_caches` default to the host's."""
    cpu = dev.kind == "cpu"
    flags = (facts.host_flags() if cpu else frozenset()) if flags is None else flags
    vec = facts.vector_facts(dev.version, dev.kind, dev.preferred_vector_width, flags)
    found = (facts.host_caches() if cpu else facts.Caches()) if cpu_caches is None else cpu_caches
    return replace(dev, vector_bits=vec.bits, vector_registers=vec.registers, target=vec.target,
                   vector_source=vec.source, l1d_bytes=found.l1d, l2_bytes=found.l2, l3_bytes=found.l3)


def _host_unified(d: Any, kind: str) -> bool:
    """Whether the device says it shares host memory (OpenCL 1.x's query; a CPU device does)."""
    try:
        return bool(d.host_unified_memory)
    except Exception:  # noqa: BLE001 - removed in OpenCL 3.0 drivers that do not report it
        return kind == "cpu"


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
    caches.prepare()  # before a driver loads: PoCL reads its cache folder once
    try:
        import pyopencl
    except ImportError as e:  # pragma: no cover - pyopencl is a dependency
        raise DeviceError(f"pyopencl is not installed: {e}") from e
    return pyopencl
