"""What to tell a user whose OpenCL device cannot build: the log's first line, why, and what to do.

    DeviceError: no usable OpenCL device: every attached device failed the probe
      pthread-AMD EPYC (Portable Computing Language, OpenCL 3.0 PoCL 3.0-rc2 ... LLVM 14.0.6):
        cannot build a one-line kernel: error: unknown target CPU 'generic'
        why: the LLVM 14.0.6 inside this PoCL does not know this CPU (AMD family 26 model 2) ...
      hint: install the distribution's PoCL (Debian/Ubuntu: apt-get install pocl-opencl-icd) ...
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lift.devices.usable import Verdict, first_log_line, host_cpu
from lift.errors import DeviceError

REMEDIES = (
    "install the distribution's PoCL, whose LLVM is newer (Debian/Ubuntu: "
    "`sudo apt-get install pocl-opencl-icd`; Fedora: `sudo dnf install pocl`), "
    "or Intel's CPU runtime from PyPI (`pip install \"liftcl[intel]\"`: intel-opencl-rt, intel-cmplr-lib-rt "
    "and tbb, which liftcl registers with the ICD loader itself); "
    "then run again: liftcl skips a device that cannot build and takes the next one. "
    "To choose a device yourself, set PYOPENCL_CTX=<platform>:<device> "
    "(the numbers `lift devices` / lift.devices.list() shows) or pass device=."
)

_UNKNOWN_CPU = re.compile(r"unknown target CPU '([^']*)'")
_LLVM = re.compile(r"LLVM\s+(\d[\w.]*)")


def explain(log: str, platform_version: str = "") -> str:
    """Why a build failed when the cause is the device's compiler, not the program ("" otherwise)."""
    m = _UNKNOWN_CPU.search(log)
    if m is None:
        return ""
    llvm = _LLVM.search(platform_version)
    compiler = f"the LLVM {llvm.group(1)} inside this OpenCL runtime" if llvm else "this OpenCL runtime's LLVM"
    return (f"{compiler} does not know this CPU ({host_cpu()}): it asked for target CPU '{m.group(1)}', "
            "so every kernel build fails, whatever the program. The CPU is newer than that LLVM "
            "(PoCL 3.0 from PyPI ships LLVM 14, which predates AMD Zen 5 and recent Intel cores).")


def is_device_fault(log: str) -> bool:
    """Whether a build log shows a compiler that cannot build for this machine at all."""
    return _UNKNOWN_CPU.search(log) is not None


def describe_failure(name: str, platform: str, platform_version: str, v: Verdict) -> str:
    """Indented lines for one unusable device: which, the probe's reason, and why if known."""
    lines = [f"  {name} ({platform}, {platform_version}):" if platform_version else f"  {name} ({platform}):",
             f"    {v.reason}"]
    why = explain(v.log, platform_version)
    if why:
        lines.append(f"    why: {why}")
    return "\n".join(lines)


def unusable_error(name: str, platform: str, platform_version: str, v: Verdict, *,
                   chosen_by: str) -> DeviceError:
    """The error for a device chosen by `PYOPENCL_CTX` or `device=` that failed the probe."""
    text = (f"the OpenCL device {name!r} ({chosen_by}) cannot build programs: {v.first_line}\n"
            + describe_failure(name, platform, platform_version, v))
    err = DeviceError(text, hint=REMEDIES)
    err.verdict = v
    return err


def none_usable_error(failures: Sequence[str]) -> DeviceError:
    """The error when no attached device passes the probe; `failures` from `describe_failure`."""
    if not failures:
        return DeviceError("no OpenCL device found: no platform lists a device",
                           hint="pip install pocl-binary-distribution for a CPU device, or " + REMEDIES)
    text = "no usable OpenCL device: every attached device failed to build and run a one-line kernel\n"
    return DeviceError(text + "\n".join(failures), hint=REMEDIES)


def build_hint(log: str, platform_version: str = "") -> str:
    """The hint of a failed program build: the compiler's fault and its remedies, or a codegen bug."""
    why = explain(log, platform_version)
    if why:
        return f"{why} {REMEDIES}"
    if is_device_fault(log):
        return REMEDIES
    return "this is a code-generation bug; the source is in .source"


__all__ = ["REMEDIES", "explain", "describe_failure", "unusable_error", "none_usable_error", "build_hint",
           "first_log_line"]
