"""The host plan: what code generation hands to the runtime.

`KernelSource` is the last record before `lift.runtime` (pipeline stage
`Synchronised -> KernelSource -> Program`): the OpenCL program text, the buffers to
allocate (sizes symbolic in the program's size variables), and the launches in order.
Sizes are bound from the argument shapes at call time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lift.arith import Arith
from lift.types import ScalarType, Type

COUNTER_ROLE = "counter"


@dataclass(frozen=True, slots=True)
class BufferSpec:
    """A buffer of `count` scalars of `scalar` type.

    `role`: "input" (program argument `param`, flattened row-major), "output" (part of the
    result, reshaped to `type` on the host), "temp" (between kernels) or "counter" (a temp
    the runtime allocates zeroed, which the kernels leave zero: `lift.codegen.tails`). `space` is
    "global" for host-allocated buffers or "local" for a `cl.LocalMemory` kernel argument.
    """

    name: str
    scalar: ScalarType
    count: Arith
    space: str = "global"
    role: str = "temp"
    param: int | None = None
    type: Type | None = None


@dataclass(frozen=True, slots=True)
class KernelArg:
    """One argument of a launch: a buffer (by name) or the value of a size variable."""

    kind: str  # "buffer" | "size"
    name: str
    ctype: str = "int"  # a size's C type: "long" in a kernel with 64-bit indices (codegen/width.py)


@dataclass(frozen=True, slots=True)
class Launch:
    """Enqueue `kernel` with `args` over an ND-range (one entry per dimension)."""

    kernel: str
    args: tuple[KernelArg, ...]
    global_size: tuple[Arith, ...]
    local_size: tuple[Arith, ...] | None = None


@dataclass(frozen=True, slots=True)
class BarrierInfo:
    """A barrier in the generated code and the dependence it resolves."""

    kernel: str
    fence: str  # "CLK_LOCAL_MEM_FENCE", "CLK_GLOBAL_MEM_FENCE" or both joined with "|"
    after: str  # the IR node (LIFT notation, with label) after which it is placed
    reason: str  # e.g. "map_lcl[A] writes tmp1 (local), read by other work-items in map_lcl[B]"
    buffers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class KernelSource:
    """A compiled program before it meets a device."""

    source: str
    kernels: tuple[str, ...]
    buffers: tuple[BufferSpec, ...]
    launches: tuple[Launch, ...]
    outputs: tuple[str, ...]  # output buffer names; one, or one per tuple component
    result_type: Type
    size_vars: tuple[str, ...]
    param_types: tuple[Type, ...]
    barriers: tuple[BarrierInfo, ...] = ()
    memory_bytes: dict[str, Arith] = field(default_factory=dict)  # per address space
    index_limits: tuple[Arith, ...] = ()  # must not exceed 2^31 - 1 at run time (32-bit indices)
