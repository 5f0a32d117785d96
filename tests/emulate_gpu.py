"""A pytest plugin that describes the attached CPU device as a GPU, to find the tests that assume
a CPU before a GPU is at hand:

    PYTHONPATH=tests python -m pytest -p emulate_gpu -m "device and not slow" tests/test_x.py

`lift.devices.current()` (and so `lift.compile`'s device-dependent decisions: the solver's
mapping score, the default vector widths and launches) and the device markers of
tests/device_facts.py see kind "gpu", local memory that is not emulated, 32-wide warps and memory of its own (calls copy
their arguments and results, as on a discrete GPU);
kernels still run on the CPU device. A test that fails only this way either states its device
assumption with a marker or checks what its device should give. (Artifacts remain: a PoCL
"GPU" is no real device, so tests of PoCL itself may fail.) Run on PoCL with this plugin on
2026-11-27: 4 of 151 device tests of 20 modules failed, each marked or made device-aware since.
"""

from __future__ import annotations

import dataclasses

import lift.devices.live as live
from lift.devices import Device

_describe_cpu = live._refine


def _as_gpu(dev: Device) -> Device:
    return dataclasses.replace(_describe_cpu(dev), kind="gpu", local_mem_emulated=False, simd_width=32,
                               host_memory=False)


live._refine = _as_gpu
