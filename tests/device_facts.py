"""What a test may assume about the attached OpenCL device: the decision functions behind the
suite's device markers (registered in setup.cfg, applied in conftest.py).

A test that relies on something true of PoCL's CPU device but not of every device states it
with a marker, and is skipped with the reason elsewhere:

    @pytest.mark.requires_cpu_device   # a CPU device (the CPU default compile: vector widths, grid launch)
    @pytest.mark.requires_pocl         # the default device is PoCL (its name, its profile's limits)
    @pytest.mark.races_visible         # a missing barrier gives a wrong result (work-items run one
                                       # after another between barriers: PoCL's CPU devices)
    @pytest.mark.pocl_messages         # PoCL's build messages (clang/LLVM 14 wording)

or, where the device has its own expectation, asks for it through a fixture (`live_device`,
`races_show`, `attached_profile`) and checks that instead. Each decision is a function of a
`lift.devices.Device`, so tests/test_device_facts.py can emulate a GPU or another CPU runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import lift
from lift.devices import Device
from lift.errors import DeviceError

POCL = "portable computing language"


def is_pocl(dev: Device) -> bool:
    """Whether `dev` is a device of PoCL (the PyPI wheel or a distribution's build)."""
    return POCL in dev.platform.lower()


def cpu_device(dev: Device) -> str | None:
    """None when `dev` is a CPU device, else why a test that assumes one cannot run."""
    if dev.kind == "cpu":
        return None
    return f"assumes a CPU device; the device is {dev.name} ({dev.platform}), a {dev.kind}"


def pocl_device(dev: Device) -> str | None:
    """None when `dev` is PoCL, else why a test that assumes PoCL cannot run."""
    if is_pocl(dev):
        return None
    return f"assumes PoCL; the device is {dev.name} ({dev.platform or dev.vendor})"


def races_visible(dev: Device) -> str | None:
    """None when a missing barrier shows up as a wrong result on `dev`, else why not.

    PoCL's CPU devices run the work-items of a group one after another between barriers, so a
    work-item reads what the others have not written yet; a GPU runs a warp in lock-step and
    groups side by side, and a CPU runtime that vectorises work-items (Intel's) runs lanes
    together too: there a race may or may not show, and a correct result proves nothing."""
    if is_pocl(dev) and dev.kind == "cpu":
        return None
    return (f"assumes a missing barrier gives a wrong result (work-items run one after another, as on "
            f"PoCL's CPU device); on {dev.name} ({dev.platform or dev.vendor}) a race may not show")


def pocl_messages(dev: Device) -> str | None:
    """None when `dev` builds with PoCL's clang of LLVM 14 (the messages tests quote), else why not."""
    if is_pocl(dev) and "llvm 14" in dev.platform_version.lower():
        return None
    return (f"quotes the build messages of PoCL with LLVM 14; the device is {dev.name} "
            f"({dev.platform_version or dev.platform or dev.vendor})")


@dataclass(frozen=True, slots=True)
class Assumption:
    """A marker and the decision it stands for: `decide(device)` is None or the reason to skip."""

    marker: str
    help: str
    decide: Callable[[Device], str | None]


ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption("requires_cpu_device", "assumes a CPU OpenCL device (skipped on a GPU)", cpu_device),
    Assumption("requires_pocl", "assumes the device is PoCL (skipped on other runtimes)", pocl_device),
    Assumption("races_visible", "assumes a missing barrier gives a wrong result (PoCL's CPU device)",
               races_visible),
    Assumption("pocl_messages", "quotes PoCL's LLVM 14 build messages", pocl_messages),
)
MARKERS = {a.marker: a for a in ASSUMPTIONS}


def skip_reason(markers: set[str], dev: Device | None, error: str = "") -> str | None:
    """The reason to skip a test carrying `markers` on `dev` (None: run it).

    `dev` None means no usable device; `error` says why."""
    relevant = [MARKERS[m] for m in sorted(markers) if m in MARKERS]
    if not relevant:
        return None
    if dev is None:
        return f"no usable OpenCL device: {error}"
    for a in relevant:
        reason = a.decide(dev)
        if reason is not None:
            return reason
    return None


def profile_attached(name: str) -> Device | None:
    """The live device that the offline profile `name` stands for, when one is attached and usable.

    `lift.compile(prog, device=profile("nvidia"))` builds for an attached NVIDIA GPU (the
    profile is then not offline at all); None when the profile's device is not here."""
    try:
        dev = lift.devices.current(lift.devices.profile(name))
    except DeviceError:
        return None
    return dev
