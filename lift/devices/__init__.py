"""Devices: offline profiles, the attached device liftcl uses, and whether each one works.

    lift.devices.profile("mali-g72")   # an offline profile: compile for it, run nowhere
    lift.devices.current()             # the live device lift.compile uses (probed: it builds and runs)
    lift.devices.list()                # every platform and device, usable or not, and why

The device is `device=` when given, else `PYOPENCL_CTX`'s, else the first usable GPU, else
the first usable CPU runtime; see `lift.devices.live` for the rules and `lift.devices.usable`
for what "usable" means and where the verdicts are remembered. OpenCL runtimes installed into
the Python environment from PyPI (`pip install -e ".[intel]"`) are registered with the ICD
loader on import (`lift.devices.icd`).
"""

from lift.devices import icd

icd.register()  # OpenCL runtimes installed from PyPI (Intel's CPU runtime), before pyopencl lists platforms

from lift.devices import facts  # noqa: E402
from lift.devices.advice import REMEDIES, build_hint, explain  # noqa: E402
from lift.devices.live import DeviceInfo, current, describe, find, with_facts  # noqa: E402
from lift.devices.live import list_devices as list  # noqa: A001, E402 - the public name DESIGN.md gives
from lift.devices.profiles import PROFILE_NAMES, Device, GiB, KiB, MiB, profile  # noqa: E402
from lift.devices.usable import Verdict, verdict  # noqa: E402

__all__ = ["Device", "DeviceInfo", "Verdict", "profile", "PROFILE_NAMES", "current", "find", "describe", "list",
           "with_facts", "facts",
           "verdict", "explain", "build_hint", "REMEDIES", "KiB", "MiB", "GiB"]
