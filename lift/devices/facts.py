"""Device facts a cost model needs and OpenCL does not report: the vector width the kernel compiler
targets, its vector register count, and the CPU's cache sizes.

    vector_facts("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3", "cpu", 16, flags)
        -> VectorFacts(bits=256, registers=16, target="znver3", source="PoCL target znver3")

The width is, in order: from the LLVM CPU name PoCL compiles kernels for (its device version
string's "HSTR: pthread-<triple>-<cpu>"): a name with AVX-512 (skylake-avx512, icelake-*, znver4,
..) 512 bits, an x86 name without 256 (128 for the pre-AVX names); else, for a CPU device, from the
host's /proc/cpuinfo flags (avx512f 512, avx / avx2 256, sse2 128; asimd 128 on Arm); else the
device's preferred float vector width (32 bits a lane). PoCL 3.0's PyPI wheel on a Zen 4 targets
znver3: AVX2 code (ymm registers only) on a CPU that has AVX-512, so the target name comes first.
Registers: 32 with AVX-512 (and on Arm's NEON), 16 for AVX2, AVX and SSE on x86-64; 0 = unknown.
Caches: L1d, L2, L3 of the host's cpu0 (/sys/devices/system/cpu/cpu0/cache, else `lscpu`), for a
CPU device only; 0 = unknown. FMA throughput is not stated: neither source says how many FMA
units a core has (Xeon Silver and Gold parts with the same flags differ).
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lift.devices.profiles import Device

# Substrings of LLVM CPU names with AVX-512 (the names PoCL's version string gives its target).
AVX512_CPUS = ("avx512", "x86-64-v4", "knl", "knm", "cannonlake", "icelake", "tigerlake", "rocketlake", "cascadelake",
               "cooperlake", "sapphirerapids", "graniterapids", "emeraldrapids", "diamondrapids", "znver4", "znver5")
# LLVM CPU names of x86 CPUs without AVX (SSE only: 128-bit vectors).
SSE_CPUS = ("x86-64", "x86-64-v2", "generic", "i686", "pentium4", "prescott", "nocona", "core2", "penryn", "nehalem",
            "corei7", "westmere", "bonnell", "atom", "silvermont", "slm", "goldmont", "goldmont-plus", "tremont",
            "k8", "k8-sse3", "opteron", "athlon64", "amdfam10", "barcelona", "btver1")
# LLVM CPU names that only occur for x86 targets (a version string without a triple: "pthread-haswell").
X86_CPUS = ("haswell", "broadwell", "skylake", "kabylake", "cometlake", "coffeelake", "alderlake", "raptorlake",
            "meteorlake", "arrowlake", "lunarlake", "pantherlake", "gracemont", "sierraforest", "grandridge",
            "clearwaterforest", "sandybridge", "ivybridge", "corei7-avx", "core-avx", "znver", "bdver", "btver2",
            "x86-64-v3", *AVX512_CPUS, *SSE_CPUS)
_TRIPLE = re.compile(r"^(?P<arch>[a-z0-9_.]+)-(?P<vendor>[a-z0-9_.]+)-(?:linux|freebsd|windows|darwin)[a-z0-9_.]*"
                     r"(?:-(?:gnu|musl|android|msvc)[a-z0-9_.]*)?-(?P<cpu>.+)$")
_X86_ARCHS = ("x86_64", "i386", "i486", "i586", "i686", "amd64")


@dataclass(frozen=True, slots=True)
class VectorFacts:
    """The vectors a kernel compiler emits: `bits` wide, `registers` of them (0: unknown), for `target`."""

    bits: int = 0
    registers: int = 0
    target: str = ""  # the LLVM CPU name the kernels are compiled for ("" where the device does not say)
    source: str = ""  # where `bits` came from, in words


@dataclass(frozen=True, slots=True)
class Target:
    """The kernel compiler's target as a PoCL version string names it."""

    cpu: str  # the LLVM CPU name ("znver3", "skylake-avx512")
    x86: bool | None  # whether it is an x86 target (None: the string does not say)


def pocl_target(version: str) -> Target | None:
    """The target in PoCL's device version string ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-
    linux-gnu-znver3" -> znver3, x86; "... HSTR: pthread-skylake-avx512" -> skylake-avx512), or None."""
    if "PoCL" not in version or "HSTR:" not in version:
        return None
    words = version.split("HSTR:", 1)[1].split()
    if not words:
        return None
    word = words[0].lower()
    for prefix in ("pthread-", "basic-", "tbb-", "cpu-"):  # PoCL's CPU device drivers
        if word.startswith(prefix):
            word = word[len(prefix):]
            break
    found = _TRIPLE.match(word)
    if found is not None:
        return Target(found["cpu"], found["arch"] in _X86_ARCHS)
    return Target(word, True if any(word.startswith(c) for c in X86_CPUS) else None)


def target_bits(target: Target) -> int | None:
    """The vector width (bits) of an x86 LLVM CPU name: 512 with AVX-512, 128 before AVX, else 256; None
    for a target that is not known to be x86."""
    if not target.x86:
        return None
    if any(t in target.cpu for t in AVX512_CPUS):
        return 512
    return 128 if target.cpu in SSE_CPUS else 256


def cpuinfo_flags(text: str) -> frozenset[str]:
    """The feature flags of the first processor in a /proc/cpuinfo text ("flags" on x86, "Features" on Arm)."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            return frozenset(value.split())
    return frozenset()


def flags_bits(flags: Iterable[str]) -> int | None:
    """The widest vectors the CPU flags name: avx512f 512, avx2 / avx 256, sse2 or Arm's asimd 128; None."""
    have = set(flags)
    if "avx512f" in have:
        return 512
    if have & {"avx2", "avx"}:
        return 256
    if have & {"sse2", "asimd", "neon"}:
        return 128
    return None


def registers(bits: int, x86: bool | None) -> int:
    """The vector registers of code `bits` wide: 32 with AVX-512 or on Arm (NEON), 16 on x86-64
    (AVX2, AVX, SSE); 0 when unknown."""
    if x86 is False:
        return 32 if bits == 128 else 0
    if bits == 512:
        return 32
    return 16 if bits in (128, 256) else 0


def vector_facts(version: str, kind: str, preferred_width: int, flags: Iterable[str] = ()) -> VectorFacts:
    """The vector width and registers of a device (see the module): PoCL's target, else the CPU
    `flags` (a CPU device), else the preferred float vector width."""
    target = pocl_target(version)
    if target is not None:
        bits = target_bits(target)
        if bits is not None:
            return VectorFacts(bits, registers(bits, True), target.cpu, f"PoCL target {target.cpu}")
    flags = frozenset(flags)
    bits = flags_bits(flags) if kind == "cpu" else None
    if bits is not None:
        x86 = None if not flags else not bool(flags & {"asimd", "neon"})
        return VectorFacts(bits, registers(bits, x86), target.cpu if target else "", "the CPU's flags")
    if preferred_width > 0:
        return VectorFacts(32 * preferred_width, 0, target.cpu if target else "", "the preferred vector width")
    return VectorFacts()


def narrow_target(version: str) -> bool:
    """Whether PoCL compiles for an x86 CPU without AVX-512 (its version string says so): 16-lane
    vectors are then split in two, and PoCL 3.0's LLVM 14 aborts the whole process on a builtin
    called on them (`sqrt`, `exp`, `fabs`, `fmax` of float16: "LLVM ERROR: Cannot select: fsqrt"
    on the project's Zen 4, whose wheel targets znver3)."""
    target = pocl_target(version)
    return target is not None and bool(target.x86) and target_bits(target) != 512


# ------------------------------------------------------------------------- caches

_LEVELS = {("1", "data"): "l1d", ("1", "unified"): "l1d", ("2", "unified"): "l2", ("2", "data"): "l2",
           ("3", "unified"): "l3"}


@dataclass(frozen=True, slots=True)
class Caches:
    """Cache sizes of one core's view, in bytes (0: unknown): its L1 data cache, its L2, the L3 it shares."""

    l1d: int = 0
    l2: int = 0
    l3: int = 0


def parse_size(text: str) -> int:
    """Bytes of a size as sysfs or lscpu write it ("32K", "1024K", "32 MiB", "2 MiB (2 instances)": per instance)."""
    found = re.match(r"\s*([\d.]+)\s*([KMG]?)(?:i?B)?\s*(?:\((\d+) instances?\))?", text.strip(), re.I)
    if found is None:
        return 0
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[found[2].upper()]
    return int(float(found[1]) * scale) // int(found[3] or 1)


def sysfs_caches(root: Path) -> Caches:
    """The caches of one CPU from its sysfs folder (`/sys/devices/system/cpu/cpu0/cache`)."""
    sizes: dict[str, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            level, kind = (index / "level").read_text().strip(), (index / "type").read_text().strip().lower()
            size = parse_size((index / "size").read_text())
        except OSError:
            continue
        name = _LEVELS.get((level, kind))
        if name is not None and size:
            sizes.setdefault(name, size)
    return Caches(**sizes)


def lscpu_caches(text: str) -> Caches:
    """The caches per instance from `lscpu`'s lines ("L1d cache: 64 KiB (2 instances)")."""
    sizes: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        name = {"l1d cache": "l1d", "l2 cache": "l2", "l3 cache": "l3"}.get(key.strip().lower())
        if name is not None:
            sizes[name] = parse_size(value)
    return Caches(**sizes)


@functools.cache
def host_caches() -> Caches:
    """The host CPU's caches: sysfs, else `lscpu`, else unknown (a fact of the machine, read once)."""
    found = sysfs_caches(Path("/sys/devices/system/cpu/cpu0/cache"))
    if found != Caches():
        return found
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5, check=False,
                             env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout
    except (OSError, subprocess.SubprocessError):
        return Caches()
    return lscpu_caches(out)


@functools.cache
def host_flags() -> frozenset[str]:
    """The host CPU's flags from /proc/cpuinfo (empty where it cannot be read; a fact of the machine)."""
    try:
        return cpuinfo_flags(Path("/proc/cpuinfo").read_text())
    except OSError:
        return frozenset()


def _size(n: int) -> str:
    return "?" if n <= 0 else f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n >> 10} KiB"


def summary(dev: Device) -> str:
    """The facts of `dev` in one line: "256-bit vectors (PoCL target znver3), 16 vector registers,
    L1d 32 KiB, L2 1 MiB, L3 32 MiB" ("?" for what is unknown)."""
    width = f"{dev.vector_bits}-bit vectors" if dev.vector_bits else "vector width ?"
    source = f" ({dev.vector_source})" if dev.vector_source else ""
    regs = f"{dev.vector_registers} vector registers" if dev.vector_registers else "vector registers ?"
    caches = f"L1d {_size(dev.l1d_bytes)}, L2 {_size(dev.l2_bytes)}, L3 {_size(dev.l3_bytes)}" \
        if dev.kind == "cpu" else "caches ?"
    return f"{width}{source}, {regs}, {caches}"


__all__ = ["summary", "VectorFacts", "Target", "Caches", "pocl_target", "target_bits", "cpuinfo_flags", "flags_bits",
           "registers", "vector_facts", "narrow_target", "parse_size", "sysfs_caches", "lscpu_caches",
           "host_caches", "host_flags", "AVX512_CPUS"]
