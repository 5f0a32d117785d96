"""Device facts (lift/devices/facts.py) from fixed strings: PoCL's target names, /proc/cpuinfo
flags, sysfs and lscpu cache sizes, and the order the sources are asked in."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lift.devices import facts, profile, with_facts

PYPI = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3"
DEBIAN_ZEN5 = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512"
ZEN4_FLAGS = "flags\t\t: fpu vme sse sse2 avx avx2 fma avx512f avx512dq avx512bw avx512vl avx512_bf16"
AVX2_FLAGS = "processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx fma avx2\nbugs\t\t: spectre_v1"
ARM_FEATURES = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp"


@pytest.mark.parametrize("version,cpu,x86,bits", [
    (PYPI, "znver3", True, 256),
    (DEBIAN_ZEN5, "skylake-avx512", True, 512),
    ("OpenCL 3.0 PoCL HSTR: pthread-skylake-avx512", "skylake-avx512", True, 512),  # no triple
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-rocketlake", "rocketlake", True, 512),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-icelake-server", "icelake-server", True, 512),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver4", "znver4", True, 512),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-haswell", "haswell", True, 256),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake", "skylake", True, 256),  # client Skylake: AVX2
    ("OpenCL 3.0 PoCL HSTR: pthread-haswell", "haswell", True, 256),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-nehalem", "nehalem", True, 128),
    ("OpenCL 3.0 PoCL HSTR: pthread-aarch64-unknown-linux-gnu-cortex-a72", "cortex-a72", False, None),
])
def test_the_target_name_gives_the_width(version: str, cpu: str, x86: bool, bits: int | None) -> None:
    target = facts.pocl_target(version)
    assert target == facts.Target(cpu, x86)
    assert facts.target_bits(target) == bits


def test_versions_that_name_no_target() -> None:
    assert facts.pocl_target("OpenCL 3.0 CUDA") is None
    assert facts.pocl_target("OpenCL 3.0 PoCL 3.0-rc2 Linux") is None  # the platform's string, not the device's
    assert facts.pocl_target("OpenCL 2.1 (Build 0)") is None  # Intel's CPU runtime


def test_cpuinfo_flags() -> None:
    assert facts.flags_bits(facts.cpuinfo_flags(ZEN4_FLAGS)) == 512
    assert facts.flags_bits(facts.cpuinfo_flags(AVX2_FLAGS)) == 256
    assert facts.flags_bits(facts.cpuinfo_flags("flags : fpu sse sse2")) == 128
    assert facts.flags_bits(facts.cpuinfo_flags(ARM_FEATURES)) == 128
    assert facts.flags_bits(facts.cpuinfo_flags("model name : ?")) is None


def test_the_target_comes_before_the_flags_then_the_preferred_width() -> None:
    """PoCL 3.0's wheel on a Zen 4 compiles for znver3: AVX2 code although the flags have AVX-512."""
    zen4 = facts.cpuinfo_flags(ZEN4_FLAGS)
    assert facts.vector_facts(PYPI, "cpu", 16, zen4) == facts.VectorFacts(256, 16, "znver3", "PoCL target znver3")
    assert facts.vector_facts(DEBIAN_ZEN5, "cpu", 16, zen4).registers == 32
    intel = facts.vector_facts("OpenCL 3.0 (Build 0)", "cpu", 8, zen4)  # no target named: the flags
    assert (intel.bits, intel.registers, intel.source) == (512, 32, "the CPU's flags")
    assert facts.vector_facts("OpenCL 3.0 (Build 0)", "cpu", 8, facts.cpuinfo_flags(AVX2_FLAGS)).registers == 16
    arm = facts.vector_facts("OpenCL 3.0 PoCL HSTR: pthread-aarch64-unknown-linux-gnu-cortex-a72", "cpu", 4,
                             facts.cpuinfo_flags(ARM_FEATURES))
    assert (arm.bits, arm.registers, arm.target) == (128, 32, "cortex-a72")
    gpu = facts.vector_facts("OpenCL 3.0 CUDA", "gpu", 1, zen4)  # a GPU: the host's flags do not apply
    assert (gpu.bits, gpu.registers, gpu.source) == (32, 0, "the preferred vector width")


def test_narrow_targets_are_x86_without_avx512() -> None:
    assert facts.narrow_target(PYPI)
    assert facts.narrow_target("OpenCL 3.0 PoCL HSTR: pthread-haswell")
    assert not facts.narrow_target(DEBIAN_ZEN5)
    assert not facts.narrow_target("OpenCL 3.0 PoCL HSTR: pthread-aarch64-unknown-linux-gnu-cortex-a72")
    assert not facts.narrow_target("OpenCL 3.0 CUDA")


def test_cache_sizes_from_sysfs_and_lscpu(tmp_path: Path) -> None:
    for i, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"),
                                             (3, "Unified", "32768K")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert facts.sysfs_caches(tmp_path) == facts.Caches(32 << 10, 1 << 20, 32 << 20)
    assert facts.sysfs_caches(tmp_path / "none") == facts.Caches()
    lscpu = ("L1d cache:                               64 KiB (2 instances)\n"
             "L1i cache:                               64 KiB (2 instances)\n"
             "L2 cache:                                2 MiB (2 instances)\n"
             "L3 cache:                                32 MiB (1 instance)\n")
    assert facts.lscpu_caches(lscpu) == facts.Caches(32 << 10, 1 << 20, 32 << 20)


def test_a_live_cpu_device_gets_the_facts_and_a_gpu_no_host_caches() -> None:
    cpu = with_facts(dataclasses.replace(profile("pocl-cpu"), version=PYPI), flags=facts.cpuinfo_flags(ZEN4_FLAGS),
                     cpu_caches=facts.Caches(32 << 10, 1 << 20, 32 << 20))
    assert (cpu.vector_bits, cpu.vector_registers, cpu.target, cpu.l2_bytes) == (256, 16, "znver3", 1 << 20)
    assert facts.summary(cpu) == "256-bit vectors (PoCL target znver3), 16 vector registers, L1d 32 KiB, L2 1 MiB, " \
        "L3 32 MiB"
    gpu = with_facts(profile("nvidia"))
    assert (gpu.vector_registers, gpu.l1d_bytes, gpu.l3_bytes) == (0, 0, 0)


def test_the_offline_cpu_profiles_agree_with_their_version_strings() -> None:
    for name, bits, regs in (("cpu-avx512", 512, 32), ("cpu-avx2", 256, 16)):
        dev = profile(name)
        assert (dev.vector_bits, dev.vector_registers) == (bits, regs)
        found = facts.vector_facts(dev.version, dev.kind, dev.preferred_vector_width)
        assert (found.bits, found.registers, found.target, found.source) == (
            dev.vector_bits, dev.vector_registers, dev.target, dev.vector_source)
    assert profile("pocl-cpu").vector_bits == 0  # kept as it was: AVX2's blocks (block_space.AVX2)
