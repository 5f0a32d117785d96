"""Checkers of the code generator's output (STYLE 12): `verify_kernel_source`, `verify_generated`.

Each returns None or raises `LiftValueError` listing every violated postcondition; tests run
them after every generation (`tests/codegen_oracle.py`). The postconditions of stage
`Synchronised -> KernelSource`:

* every launch names a kernel of the program, defined in the source, and the kernels are
  launched in order of first use;
* every argument of a launch exists: a buffer of the plan or a size variable;
* every temporary and output buffer of the plan is an argument of some launch (nothing is
  allocated for nothing; an input may go unused by a program that ignores a parameter),
  and every program parameter has input buffers;
* ND-ranges are consistent: a local size has one entry per global dimension;
* nothing that crashes PoCL 3.0 (`vload16`, `vstore16`) is in the source;
* (`verify_generated`) each kernel's C parameters match its launch's arguments, one for one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lift.errors import LiftValueError
from lift.plan import KernelSource

if TYPE_CHECKING:
    from lift.codegen.generate import Generated

FORBIDDEN = ("vload16", "vstore16")  # abort PoCL 3.0-rc2 (notes/pocl-performance.md)


def verify_kernel_source(plan: KernelSource) -> None:
    """Check the host plan against the program text; raise listing every problem."""
    problems = _launch_problems(plan) + _buffer_problems(plan) + _source_problems(plan)
    if problems:
        raise LiftValueError("verify_kernel_source: " + "; ".join(problems))


def verify_generated(gen: Generated) -> None:
    """`verify_kernel_source`, and each kernel's C parameters are its launch's arguments."""
    verify_kernel_source(gen.source)
    defs = {k.name: k for k in gen.unit.kernels}
    problems = []
    for launch in gen.source.launches:
        kdef = defs.get(launch.kernel)
        if kdef is None:
            problems.append(f"launch of {launch.kernel} has no kernel definition in the C AST")
            continue
        params = [p.name for p in kdef.params]
        args = [a.name for a in launch.args]
        if params != args:
            problems.append(f"kernel {launch.kernel} takes ({', '.join(params)}), launched with ({', '.join(args)})")
    if problems:
        raise LiftValueError("verify_generated: " + "; ".join(problems))


def _launch_problems(plan: KernelSource) -> list[str]:
    buffers = {b.name for b in plan.buffers}
    out = []
    for launch in plan.launches:
        if launch.kernel not in plan.kernels:
            out.append(f"launch of {launch.kernel}, which is not a kernel of the program")
        for a in launch.args:
            if a.kind == "buffer" and a.name not in buffers:
                out.append(f"kernel {launch.kernel} is given buffer {a.name}, which the plan does not allocate")
            elif a.kind == "size" and a.name not in plan.size_vars:
                out.append(f"kernel {launch.kernel} is given size {a.name}, which is not a size variable")
            elif a.kind not in ("buffer", "size"):
                out.append(f"kernel {launch.kernel} has an argument of unknown kind {a.kind}")
        if launch.local_size is not None and len(launch.local_size) != len(launch.global_size):
            out.append(f"kernel {launch.kernel}: local size {launch.local_size} and global size "
                       f"{launch.global_size} differ in dimensions")
    first_use = list(dict.fromkeys(ln.kernel for ln in plan.launches))
    if first_use != [k for k in plan.kernels if k in first_use]:
        out.append(f"kernels {plan.kernels} are not in launch order {first_use}")
    return out


def _buffer_problems(plan: KernelSource) -> list[str]:
    used = {a.name for ln in plan.launches for a in ln.args if a.kind == "buffer"}
    names = [b.name for b in plan.buffers]
    out = [f"buffer {name} is allocated twice" for name in sorted({x for x in names if names.count(x) > 1})]
    out += [f"buffer {b.name} ({b.role}) is used by no launch" for b in plan.buffers
            if b.name not in used and b.role != "input"]
    roles = {b.name: b.role for b in plan.buffers}
    out += [f"output {name} is not an output buffer of the plan" for name in plan.outputs
            if roles.get(name) != "output"]
    params = {b.param for b in plan.buffers if b.role == "input"}
    out += [f"parameter {k} has no input buffer" for k in range(len(plan.param_types)) if k not in params]
    return out


def _source_problems(plan: KernelSource) -> list[str]:
    defined = set(re.findall(r"\bkernel\s+void\s+(\w+)\s*\(", plan.source))
    out = [f"kernel {k} is not defined in the source" for k in plan.kernels if k not in defined]
    out += [f"the source uses {word}, which PoCL cannot run" for word in FORBIDDEN
            if re.search(rf"\b{word}\b", plan.source)]
    return out


__all__ = ["verify_kernel_source", "verify_generated", "FORBIDDEN"]
