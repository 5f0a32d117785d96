"""The stages of one kernel, each a function from one record to the next.

    job          = KernelJob(...)                    what the host plan asks for: a body, its views
    allocated    = allocated(host, job)              lift.memory: buffers for every intermediate
    probed       = probed(host, allocated)           code generated with every candidate barrier, read
                                                     back as accesses and index expressions
    synchronised = synchronised(host, probed)        lift.barriers: Algorithm 3 on the probe
    emitted      = emitted(host, synchronised)       lift.codegen.kernel: the kernel body, with its views
    kernel       = assembled(host, emitted)          parameters, ND-range, barrier report

`KERNEL_STAGES` is that order; `lift.compile` runs it for every kernel the host plan
(`lift.codegen.generate._Program`, the `host` argument: names, user functions, requested
sizes, the barrier pass) meets. Views are built while code is generated (the probe and the
emitted body both walk them), so "viewed" is part of those two stages, not a record of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lift.barriers import Synchronised, candidates
from lift.codegen.kernel import KernelGen
from lift.codegen.names import Names
from lift.codegen.probe import probe
from lift.ir.nodes import Expr, Node
from lift.ir.paths import Path
from lift.memory import Allocated, allocate, allocate_fun, verify_allocated
from lift.views import View


@dataclass(frozen=True)
class KernelJob:
    """One kernel of the host plan: `body` at `path`, or `call` = (function, its path, argument
    views); `env` the views of the parameters in scope, `dest` the view of its result."""

    name: str
    call: tuple[Any, Path, list[View]] | None
    body: Expr | None
    path: Path
    env: dict[int, View]
    dest: View

    @property
    def node(self) -> Node:
        """The IR node the kernel comes from (named in its comment)."""
        return self.call[0] if self.call else self.body  # type: ignore[return-value]


@dataclass(frozen=True)
class AllocatedKernel:
    job: KernelJob
    alloc: Allocated


@dataclass(frozen=True)
class ProbedKernel:
    job: KernelJob
    alloc: Allocated
    trace: Any  # lift.barriers.graph.Probe


@dataclass(frozen=True)
class SynchronisedKernel:
    job: KernelJob
    sync: Synchronised


@dataclass(frozen=True)
class EmittedKernel:
    job: KernelJob
    gen: KernelGen


def allocated(host: Any, job: KernelJob) -> AllocatedKernel:
    """Memory: a buffer (address space, size) for every intermediate of the kernel."""
    if job.call is None:
        alloc = allocate(job.body, job.path, names=host.names)
    else:
        g, gpath, views = job.call
        alloc = allocate_fun(g, gpath, len(views), host.out_type(g), names=host.names)
    if host.verify:
        verify_allocated(alloc)
    return AllocatedKernel(job, alloc)


def probed(host: Any, a: AllocatedKernel) -> ProbedKernel:
    """The kernel generated with a barrier at every candidate place, read back as accesses."""
    gen = host.body(candidates(a.alloc), Names(host.names.taken), a.job)
    return ProbedKernel(a.job, a.alloc, probe(gen.body, gen.state.uses, gen.loopvars,
                                              *host.ndrange(gen.state.parallel, _node(a.job))))


def _node(job: KernelJob) -> Any:
    return job.call[0] if job.call is not None else job.body


def synchronised(host: Any, p: ProbedKernel) -> SynchronisedKernel:
    """Barriers: the barrier pass (Algorithm 3 by default) on the probe."""
    return SynchronisedKernel(p.job, host.barrier_pass(host.program, p.alloc, p.trace))


def emitted(host: Any, s: SynchronisedKernel) -> EmittedKernel:
    """The kernel body with the chosen barriers."""
    return EmittedKernel(s.job, host.body(s.sync, host.names, s.job))


def assembled(host: Any, e: EmittedKernel) -> Any:
    """Parameters, launch sizes and barrier report: the kernel as the host plan links it."""
    return host.assemble(e.job.name, e.gen, e.job.node)


Stage = Callable[[Any, Any], Any]
KERNEL_STAGES: tuple[Stage, ...] = (allocated, probed, synchronised, emitted, assembled)


def run_stages(host: Any, job: KernelJob, stages: tuple[Stage, ...] = KERNEL_STAGES) -> Any:
    """`job` through `stages`, in order."""
    record: Any = job
    for stage in stages:
        record = stage(host, record)
    return record
