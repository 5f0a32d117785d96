"""Whether an attached OpenCL device is usable: it builds and runs a one-line kernel.

A device that the driver lists may still be unable to build anything (PoCL 3.0 from PyPI, whose
LLVM 14 does not know an AMD Zen 5 CPU, fails every build with `unknown target CPU 'generic'`).
`verdict(d)` builds and runs `PROBE_SOURCE` once per device and process, and remembers the
`Verdict` on disk under `$XDG_CACHE_HOME/liftcl/devices` (else `~/.cache/liftcl/devices`),
keyed by `verdict_key`: the device, its platform and driver versions, the host CPU (the same
CPU name may be a different CPU: "AMD EPYC" is Zen 4 here, Zen 5 there) and the `POCL_*`
settings. A later process reads the verdict instead of probing. The folders it creates are private
(0700); a verdict file that is malformed or another user's is not read (the device is probed again).

    verdict(d) -> Verdict(usable=True, reason="built and ran a one-line kernel", ...)
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from lift.files import owned, private_folder

PROBE_VERSION = 1
PROBE_SOURCE = "kernel void lift_probe(global int* out) { out[get_global_id(0)] = 3 * (int)get_global_id(0) + 1; }"
PROBE_ITEMS = 4
USABLE = "built and ran a one-line kernel"
PROBE_FAILED = "the probe failed:"  # an unforeseen exception: not remembered on disk


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a device built and ran the probe kernel; if not, why (and the build log)."""

    usable: bool
    reason: str
    log: str = ""  # the build log of a failed build
    key: str = ""  # the `verdict_key` it is stored under
    cached: bool = False  # read from disk, not probed in this process

    @property
    def first_line(self) -> str:
        """The first line of the build log that says something (else the reason)."""
        return first_log_line(self.log) or self.reason


def first_log_line(log: str) -> str:
    """The first line of a build log that names an error (else its first non-empty line)."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "")


_VERDICTS: dict[str, Verdict] = {}  # this process's verdicts, by key


def verdict(d: Any, *, fresh: bool = False) -> Verdict:
    """The verdict for the pyopencl device `d`: remembered in this process, else on disk, else probed.

    `fresh`: probe again (and store the new verdict)."""
    key = verdict_key(d)
    if not fresh:
        if key in _VERDICTS:
            return _VERDICTS[key]
        stored = _read(key)
        if stored is not None:
            _VERDICTS[key] = stored
            return stored
    v = Verdict(**{**asdict(attempt(d)), "key": key, "cached": False})
    if not v.reason.startswith(PROBE_FAILED):  # an exception says how the host was then, not the device
        _write(v)
    _VERDICTS[key] = v
    return v


def forget() -> None:
    """Drop this process's verdicts (the ones on disk stay)."""
    _VERDICTS.clear()


def attempt(d: Any) -> Verdict:
    """Build `PROBE_SOURCE` for `d` and run it over `PROBE_ITEMS` work-items; check what it wrote.

    Whatever the driver raises makes the device unusable (with the exception as the reason)."""
    try:
        return _attempt(d)
    except Exception as e:  # noqa: BLE001 - a driver failing in an unforeseen way is a verdict too
        return Verdict(False, f"{PROBE_FAILED} {type(e).__name__}: {_short(e)}")


def _attempt(d: Any) -> Verdict:
    import pyopencl as cl

    try:
        ctx = cl.Context([d])
        queue = cl.CommandQueue(ctx, d)
    except cl.Error as e:
        return Verdict(False, f"cannot create a context: {_short(e)}")
    prg = cl.Program(ctx, PROBE_SOURCE)
    try:
        prg.build(devices=[d], cache_dir=cast(Any, False))  # False: no cache (pyopencl's stubs say str)
    except cl.Error as e:
        log = _build_log(prg, d) or str(e)
        return Verdict(False, f"cannot build a one-line kernel: {first_log_line(log) or _short(e)}", log)
    try:
        out = np.zeros(PROBE_ITEMS, dtype=np.int32)
        buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
        prg.lift_probe(queue, (PROBE_ITEMS,), None, buf)
        cl.enqueue_copy(queue, out, buf, is_blocking=True)
    except cl.Error as e:
        return Verdict(False, f"built a one-line kernel but could not run it: {_short(e)}")
    want = 3 * np.arange(PROBE_ITEMS, dtype=np.int32) + 1
    if not np.array_equal(out, want):
        return Verdict(False, f"ran a one-line kernel that wrote {out.tolist()} instead of {want.tolist()}")
    return Verdict(True, USABLE)


def _build_log(prg: Any, d: Any) -> str:
    import pyopencl as cl

    try:
        return str(prg.get_build_info(d, cl.program_build_info.LOG)).strip()
    except Exception:  # noqa: BLE001 - a driver that cannot even report its log
        return ""


def _short(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


# ------------------------------------------------------------------------------ keys


_NOT_KEYED = ("POCL_CACHE_DIR",)  # where PoCL caches kernels (a temporary folder: lift.devices.caches)


def verdict_key(d: Any) -> str:
    """sha256 of the device, platform and driver versions, the host CPU and the PoCL settings."""
    p = d.platform
    parts = [f"probe {PROBE_VERSION}", p.name, p.version, d.name, d.version, d.driver_version, host_cpu(),
             *sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("POCL_") and k not in _NOT_KEYED)]
    return hashlib.sha256("\0".join(s.strip() for s in parts).encode()).hexdigest()


_HOST_CPU: list[str] = []


def host_cpu() -> str:
    """The host CPU as the kernel reports it: vendor, family, model and model name."""
    if not _HOST_CPU:
        fields = {}
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if not line.strip():
                        break  # the first processor is enough
                    name, _, value = line.partition(":")
                    fields[name.strip()] = value.strip()
        except OSError:
            pass
        wanted = ("vendor_id", "cpu family", "model", "model name")
        _HOST_CPU.append(" / ".join(f"{k} {fields[k]}" for k in wanted if k in fields) or os.uname().machine)
    return _HOST_CPU[0]


# ---------------------------------------------------------------------------- storage


def verdict_dir() -> Path:
    """`$XDG_CACHE_HOME/liftcl/devices`, else `~/.cache/liftcl/devices`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "liftcl" / "devices"


def _path(key: str) -> Path:
    return verdict_dir() / f"{key}.json"


def _read(key: str) -> Verdict | None:
    """The verdict stored under `key`; None (probe again) when there is none, or it is malformed
    (deeply nested JSON included), or another user's file."""
    try:
        with _path(key).open(encoding="utf-8") as f:
            if not owned(os.fstat(f.fileno())):
                return None
            data = json.loads(f.read())
        v = Verdict(bool(data["usable"]), str(data["reason"]), str(data.get("log", "")), key, True)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    return v if data.get("key") == key else None


def _write(v: Verdict) -> None:
    """Store `v` atomically (a temporary file renamed); an unwritable cache only costs a probe."""
    path = _path(v.key)
    try:
        private_folder(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"key": v.key, "usable": v.usable, "reason": v.reason, "log": v.log}, f)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
