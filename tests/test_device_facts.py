"""The device markers' decisions (tests/device_facts.py) on emulated devices: PoCL's CPU device,
an NVIDIA GPU, Intel's CPU runtime, a Mali GPU; and that setup.cfg registers every marker."""

from __future__ import annotations

import configparser
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import device_facts as facts
import pytest

from lift.devices import Device, profile

ROOT = Path(__file__).resolve().parents[1]

POCL_PYPI = dataclasses.replace(
    profile("pocl-cpu"), name="pthread-AMD EPYC", live=True,
    platform_version="OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6, SLEEF, DISTRO, POCL_DEBUG")
POCL_DEBIAN = dataclasses.replace(POCL_PYPI, platform_version="OpenCL 3.0 PoCL 3.1+debian  Linux, LLVM 15.0.6")
H100 = dataclasses.replace(profile("nvidia"), name="NVIDIA H100 80GB HBM3", live=True,
                           platform_version="OpenCL 3.0 CUDA 12.4")
INTEL_CPU = dataclasses.replace(profile("pocl-cpu"), name="AMD EPYC 7B13", vendor="Intel(R) Corporation", live=True,
                                platform="Intel(R) OpenCL", platform_version="OpenCL 3.0 LINUX")
MALI = dataclasses.replace(profile("mali-g72"), live=True)


def _skips(dev: Device) -> dict[str, bool]:
    return {a.marker: a.decide(dev) is not None for a in facts.ASSUMPTIONS}


def test_pocl_with_llvm_14_holds_every_assumption() -> None:
    assert _skips(POCL_PYPI) == dict.fromkeys(facts.MARKERS, False)


def test_a_newer_pocl_has_other_messages_only() -> None:
    assert _skips(POCL_DEBIAN) == {"requires_cpu_device": False, "requires_pocl": False, "races_visible": False,
                                   "pocl_messages": True}


def test_a_gpu_holds_none_and_says_why() -> None:
    assert _skips(H100) == dict.fromkeys(facts.MARKERS, True)
    assert "a gpu" in facts.cpu_device(H100) and H100.name in facts.cpu_device(H100)
    assert "may not show" in facts.races_visible(H100)
    assert facts.races_visible(MALI) is not None and facts.cpu_device(MALI) is not None


def test_another_cpu_runtime_is_a_cpu_but_not_pocl() -> None:
    assert _skips(INTEL_CPU) == {"requires_cpu_device": False, "requires_pocl": True, "races_visible": True,
                                 "pocl_messages": True}
    assert "Intel(R) OpenCL" in facts.pocl_device(INTEL_CPU)


def test_skip_reason_takes_the_first_assumption_that_fails() -> None:
    assert facts.skip_reason({"device", "slow"}, H100) is None  # not device markers
    assert facts.skip_reason({"requires_cpu_device"}, POCL_PYPI) is None
    assert facts.skip_reason({"requires_cpu_device", "races_visible"}, INTEL_CPU) == facts.races_visible(INTEL_CPU)
    assert facts.skip_reason({"races_visible"}, None, "none found").startswith("no usable OpenCL device: none found")


def test_every_marker_is_registered_in_setup_cfg() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    registered = {line.split(":")[0].strip() for line in cfg["tool:pytest"]["markers"].splitlines() if line.strip()}
    assert set(facts.MARKERS) <= registered


@pytest.mark.device
def test_the_attached_device_decides_like_its_emulation(live_device, races_show) -> None:
    assert races_show == (facts.races_visible(live_device) is None)
    assert (facts.cpu_device(live_device) is None) == (live_device.kind == "cpu")


@pytest.mark.device
def test_the_gpu_emulation_plugin_makes_the_markers_skip() -> None:
    """tests/emulate_gpu.py (`-p emulate_gpu`): the live device reads as a GPU, so a test marked
    `requires_cpu_device` is skipped with the reason (before it compiles anything)."""
    marked = "tests/test_auto_nest.py::test_the_default_blocks_launch_in_groups_one_column_block_wide_on_a_cpu"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests"))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "emulate_gpu", "-p", "no:randomly",
                          "-p", "no:cacheprovider", "-rs", "-n", "0", marked],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert "1 skipped" in out.stdout and "assumes a CPU device" in out.stdout, out.stdout + out.stderr


@pytest.mark.device
def test_a_profile_is_attached_only_where_its_device_is() -> None:
    for name in ("nvidia", "mali-g72"):
        dev = facts.profile_attached(name)
        assert dev is None or (dev.live and dev.kind == "gpu")
