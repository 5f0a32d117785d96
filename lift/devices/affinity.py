"""PoCL's worker threads pinned one to a core (`POCL_AFFINITY=1`), set before a driver loads.

PoCL's pthread device runs a kernel's work-groups on one worker thread per core, left to the
operating system's scheduler by default. On a 2-vCPU VM (AMD EPYC Zen 3, PyPI PoCL 3.0, LLVM 14)
timed one launch at a time after numpy and a pause, as benchmarks/seeds.py times them, about half
the launches of a 2-3 ms GEMM kernel took twice as long (both workers on one core: tmm
128x1024x1024, sorted launch times 2.6-3.4 ms, then 4.4-6.3 ms); with the workers pinned the slow
launches were gone (median 2.51-2.63 ms against 4.32-4.63 unpinned; numpy 2.75-2.97 ms, the same
runs, interleaved). The same variation between processes was seen before (one compiled kernel:
medians 1.85-3.41 ms in six processes).

`pin()` sets `POCL_AFFINITY=1` unless the variable is set already (`POCL_AFFINITY=0` keeps the
scheduler's placement) or this process may not run on every CPU (PoCL pins worker i to CPU i,
which a CPU set such as a container's `cpuset` may not contain). It is read once, when PoCL's
device starts: a process that loaded PoCL before importing liftcl keeps its placement.
"""

from __future__ import annotations

import os

VARIABLE = "POCL_AFFINITY"


def pin() -> bool:
    """Set `POCL_AFFINITY=1` for this process and those it starts, where the user has not set it
    and every CPU is this process's to use; True when set here."""
    if VARIABLE in os.environ:
        return False
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):  # no affinity API (not Linux): leave the driver's default
        return False
    if allowed != set(range(os.cpu_count() or 0)):
        return False
    os.environ[VARIABLE] = "1"
    return True


__all__ = ["pin", "VARIABLE"]
