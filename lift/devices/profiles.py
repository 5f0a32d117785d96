"""Device profiles: the hardware limits that constraints, memory and the runtime need.

A `Device` is a frozen record, either read from a live OpenCL device (`lift.devices.current()`)
or an offline profile (`profile("mali-g72")`) so that a program can be compiled for a device
that is not attached.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    platform_version: str = ""  # names the compiler of a CPU runtime ("... LLVM 14.0.6 ...")
    host_memory: bool = False  # computes in host memory (CPU runtimes, Mali): calls pass arrays in place
    # Facts OpenCL does not report (lift.devices.facts); 0 / "" = unknown
    vector_bits: int = 0  # the width of the vectors the kernel compiler emits (256: AVX2, 512: AVX-512)
    vector_registers: int = 0  # how many such registers (16 with AVX2, 32 with AVX-512)
    target: str = ""  # the CPU the kernel compiler targets (PoCL's LLVM CPU name, "znver3")
    vector_source: str = ""  # where `vector_bits` came from ("PoCL target znver3", "the CPU's flags")
    l1d_bytes: int = 0  # a core's L1 data cache (CPU devices: the host's cpu0)
    l2_bytes: int = 0  # a core's L2
    l3_bytes: int = 0  # the L3 a core shares

    @property
    def key(self) -> str:
        """A string identifying the device, its driver and its compiler (for cache keys)."""
        return f"{self.platform}|{self.platform_version}|{self.name}|{self.version}|{self.driver_version}"


# ------------------------------------------------------------------ offline profiles

_PROFILES: dict[str, Device] = {
    # The project machines, as the device probe sees them: PoCL 3.0 (PyPI, LLVM 14) on 2 vCPUs of an
    # AMD EPYC Zen 4 (device pthread-AMD EPYC) and PoCL 3.1 (Debian, LLVM 15) on a Zen 5
    # (pthread-skylake-avx512) both report 2 compute units, a preferred float vector width of 16
    # and 1 MiB of local memory (ordinary RAM); see shared/notes/pocl-performance.md.
    "pocl-cpu": Device(
        name="pthread-cpu", vendor="PoCL", kind="cpu", compute_units=2, max_work_group_size=4096,
        max_work_item_sizes=(4096, 4096, 4096), local_mem_bytes=1 * MiB, global_mem_bytes=3 * GiB,
        max_alloc_bytes=1 * GiB, preferred_vector_width=16, local_mem_emulated=True, simd_width=16,
        max_work_items_per_cu=4096, cache_line_bytes=64, platform="Portable Computing Language",
        host_memory=True,
    ),
    # An AVX-512 CPU as PoCL sees it: 2 vCPUs of an Intel Xeon Platinum 8480+ (Sapphire Rapids:
    # 48 KiB L1d, 2 MiB L2 per core, 105 MiB L3), PoCL compiling for sapphirerapids: float16 vectors
    # in 32 zmm registers. The limits OpenCL reports are pocl-cpu's.
    "cpu-avx512": Device(
        name="pthread-Intel(R) Xeon(R) Platinum 8480+", vendor="GenuineIntel", kind="cpu", compute_units=2,
        max_work_group_size=4096, max_work_item_sizes=(4096, 4096, 4096), local_mem_bytes=1 * MiB,
        global_mem_bytes=3 * GiB, max_alloc_bytes=1 * GiB, preferred_vector_width=16, local_mem_emulated=True,
        simd_width=16, max_work_items_per_cu=4096, cache_line_bytes=64, platform="Portable Computing Language",
        version="OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-sapphirerapids", host_memory=True,
        vector_bits=512, vector_registers=32, target="sapphirerapids", vector_source="PoCL target sapphirerapids",
        l1d_bytes=48 * KiB, l2_bytes=2 * MiB, l3_bytes=105 * MiB,
    ),
    # An AVX2 CPU: the project machine, PoCL 3.0 (PyPI, LLVM 14) on 2 vCPUs of an AMD EPYC Zen 4,
    # compiling for znver3 (ymm registers only, 16 of them), 32 KiB L1d, 1 MiB L2, 32 MiB L3.
    "cpu-avx2": Device(
        name="pthread-AMD EPYC", vendor="AuthenticAMD", kind="cpu", compute_units=2, max_work_group_size=4096,
        max_work_item_sizes=(4096, 4096, 4096), local_mem_bytes=1 * MiB, global_mem_bytes=3 * GiB,
        max_alloc_bytes=1 * GiB, preferred_vector_width=16, local_mem_emulated=True, simd_width=16,
        max_work_items_per_cu=4096, cache_line_bytes=64, platform="Portable Computing Language",
        version="OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3", host_memory=True,
        vector_bits=256, vector_registers=16, target="znver3", vector_source="PoCL target znver3",
        l1d_bytes=32 * KiB, l2_bytes=1 * MiB, l3_bytes=32 * MiB,
    ),
    # Thesis 2.2.1 and 4.2.2: 12 cores x 384 work-items, quads, 64-byte lines, local memory in DRAM.
    "mali-g72": Device(
        name="Mali-G72", vendor="ARM", kind="gpu", compute_units=12, max_work_group_size=384,
        max_work_item_sizes=(384, 384, 384), local_mem_bytes=32 * KiB, global_mem_bytes=4 * GiB,
        max_alloc_bytes=1 * GiB, preferred_vector_width=4, local_mem_emulated=True, simd_width=4,
        max_work_items_per_cu=384, cache_line_bytes=64, platform="ARM Platform", host_memory=True,
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
    """The offline profile `name`: "pocl-cpu", "cpu-avx512", "cpu-avx2", "mali-g72" or "nvidia"."""
    try:
        return _PROFILES[name.lower()]
    except KeyError:
        raise DeviceError(f"no device profile named {name!r}; known: {', '.join(PROFILE_NAMES)}") from None
