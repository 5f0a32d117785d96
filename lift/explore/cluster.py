"""Tuning on a Ray cluster (issue 29): builders are Ray tasks, runners Ray actors, one per device.

    lift.tune(prog, *arrays, cluster="ray")               # ray.init() here (this machine's device)
    lift.tune(prog, *arrays, cluster="ray://head:10001")  # an existing cluster (a Ray client address)
    ray start --head --resources="$(python -m lift.explore.cluster)"   # a node advertising its device

A node advertises each OpenCL device it lends to tuning as a custom resource
`opencl:<device name>` (`resource`, `advertise`), one unit per device; a runner actor asks
for one unit, so it lands on a node with that device and never shares it with another runner.
A runner (`Runner`) opens the device, keeps the tune's arguments and answers the worker
protocol in its own process (`lift.explore.worker.Served`); `Runner.measure` is
`roles.run_checked` there, the check included (the reference travels once, with the `Spec`).
Builders (`_build`) are tasks with one CPU each; every Ray worker process keeps the
`Evaluator` of a problem (its rewritten programs and constraint spaces) between the tasks it
runs. A runner that dies (a crashing candidate, a killed process) is restarted by Ray; the
candidate it was running is sent once more, and rejected ("crashed") when it kills it again.
A builder task whose process dies is retried by Ray. The driver (`RayBackend`, drive.py)
stays the only writer of the tuning database.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import time
from typing import Any

from lift import devices, runtime
from lift.choices import Choices
from lift.errors import LiftError
from lift.ir import nodes

from .evaluate import Evaluator, Record
from .points import key as point_key
from .roles import Built, Spec, build, limit, run_checked, why
from .worker import Outcome, Served

PREFIX = "opencl:"
RETRIES = 1  # a candidate whose runner died is sent again this many times


class ClusterError(LiftError, RuntimeError):
    """Ray is missing, the cluster cannot be reached, or no node advertises the device."""


def resource(device: Any) -> str:
    """The Ray custom resource a node advertises for `device` (a lift.devices.Device)."""
    return PREFIX + re.sub(r"[^A-Za-z0-9_.+-]+", "_", device.name).strip("_")


def advertise(device: Any = None) -> dict[str, float]:
    """The resources for `ray start --resources` / `ray.init(resources=)`: this machine's device."""
    dev = device if isinstance(device, devices.Device) else devices.current(device)
    return {resource(dev): 1.0}


def ray_module() -> Any:
    """`ray`, or a `ClusterError` saying what to install."""
    try:
        import ray
    except ImportError as err:
        raise ClusterError('tuning on Ray needs the "ray" extra: pip install "liftcl[ray]" '
                           '(or pip install "ray[default]")') from err
    return ray


def connect(cluster: str, device: Any) -> Any:
    """Ray, connected: to `cluster` ("ray://host:port" or "auto"), or a Ray started here with this
    machine's device advertised ("ray", "local"); an already initialised Ray is used as it is."""
    ray = ray_module()
    if ray.is_initialized():
        return ray
    try:
        if cluster in ("ray", "local"):
            start_local(device=device)
        else:
            ray.init(address=cluster, log_to_driver=False)
    except Exception as err:  # noqa: BLE001 - reported as the user's error
        raise ClusterError(f"cannot start or reach the Ray cluster {cluster!r}: {why(err)}") from err
    return ray


def start_local(num_cpus: int | None = None, device: Any = None) -> Any:
    """`ray.init` of a cluster on this machine, its device advertised, its workers importing
    what this process imports (its `sys.path`: the modules a program's user functions live in)."""
    ray = ray_module()
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}}
    ray.init(num_cpus=num_cpus, resources=advertise(device), include_dashboard=False, log_to_driver=False,
             runtime_env=env)
    return ray


class Runner:
    """A runner actor's body: one device, one candidate at a time. The arguments of the tune it
    serves come with every call (`data`: a key and the arrays, from the object store), so one
    actor serves tune after tune (`tune_all`) and a restarted one picks them up again."""

    def __init__(self, device: Any) -> None:
        dev = devices.current(device)  # this node's device of that name
        runtime.open_device(dev)
        self.served = Served(dev)
        self.key: str | None = None

    def _adopt(self, data: tuple) -> None:
        if data[0] != self.key:
            self.key, self.served.arrays = data[0], tuple(data[1])
            self.served.kept.clear()

    def call(self, msg: tuple, data: tuple) -> Outcome:
        self._adopt(data)
        return self.served.call(msg)

    def measure(self, built: Built, data: tuple, spec: Spec, remaining_s: float) -> Record:
        """`roles.run_checked` on this device; `remaining_s`: the budget left when it was sent."""
        self._adopt(data)
        spec.deadline = time.perf_counter() + remaining_s
        t0 = time.perf_counter()
        rec = run_checked(self.served, spec, built)
        rec.wall_s = built.build_s + time.perf_counter() - t0
        return rec

    def pid(self) -> int:
        return os.getpid()


_POOL: dict[tuple[str, str], list[Any]] = {}  # (Ray job, resource) -> runner actors, kept between tunes


def runners(ray: Any, res: str, units: int, device: Any) -> list[Any]:
    """The runner actors of `res` in this Ray session (started once: opening a device takes seconds)."""
    key = (ray.get_runtime_context().get_job_id(), res)
    if len(_POOL.get(key, [])) != units:
        actor = ray.remote(Runner).options(resources={res: 1}, num_cpus=0, max_restarts=-1, max_task_retries=0)
        _POOL[key] = [actor.remote(device) for _ in range(units)]
    return _POOL[key]


_EVALUATORS: dict[str, Evaluator] = {}  # per Ray worker process: the problems it has built for


def _build(problem: tuple, cand: Choices) -> Built:
    """A builder task: the point's plan, by an Evaluator kept in this process per problem."""
    key, expr, device, sizes, first_id = problem
    pipe = _EVALUATORS.get(key)
    if pipe is None:
        _ids_from(first_id)
        pipe = _EVALUATORS[key] = Evaluator(expr, (), device, sizes)
    return build(pipe, cand)


def _ids_from(first: int) -> None:
    """Number this process's new lambda parameters from `first` on at least: a `Param` is its
    `id` (lift.ir.nodes), and the program arrived from a driver whose parameters, numbered by
    its own counter, would collide with ones the rewrites make here."""
    nxt = next(nodes._ids)
    nodes._ids = itertools.count(max(nxt, first))


def _next_id() -> int:
    """The driver's next parameter id (above every parameter of the programs it holds)."""
    nxt = next(nodes._ids)
    nodes._ids = itertools.count(nxt + 1)
    return nxt


class ActorOps:
    """The worker protocol on a runner actor, for the driver (the default lowering, the
    confirmation round): `call` waits at most `timeout`, then restarts the actor."""

    def __init__(self, ray: Any, actor: Any, data: Any) -> None:
        self.ray, self.actor, self.data = ray, actor, data

    def call(self, msg: tuple, timeout: float = 30.0) -> Outcome:
        ray = self.ray
        try:
            return ray.get(self.actor.call.remote(msg, self.data), timeout=max(2.0, timeout))
        except ray.exceptions.GetTimeoutError:
            ray.kill(self.actor, no_restart=False)
            return Outcome(False, f"timed out after {timeout:.1f} s (runner restarted)")
        except ray.exceptions.RayError as err:
            return Outcome(False, f"crashed: the runner died ({type(err).__name__})")

    def running(self) -> bool:
        return True


class RayBackend:
    """drive.py's back end on Ray: `builders` build tasks in flight, one runner actor per unit of
    the device's resource in the cluster."""

    def __init__(self, ray: Any, pipe: Evaluator, device: Any, arrays: tuple, builders: int | None = None) -> None:
        self.ray, self.pipe = ray, pipe
        res = resource(device)
        units = int(ray.cluster_resources().get(res, 0))
        if units < 1:
            raise ClusterError(f"no node of the Ray cluster advertises {res!r}: start one with "
                               f"ray start --resources='{{\"{res}\": 1}}' on a machine with that device")
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.max_builds = max(1, builders if builders is not None else cpus)
        self.runners = runners(ray, res, units, device)
        key = f"{os.getpid()}:{id(pipe)}:{time.time()}"
        self._data = ray.put((key, tuple(arrays)))
        self._task = ray.remote(_build).options(num_cpus=1, max_retries=3)
        self._problem = ray.put((key, pipe.expr, device, dict(pipe.sizes), _next_id()))
        self._spec: Any = None
        self._builds: dict[Any, Choices] = {}
        self._runs: dict[Any, tuple[int, Built, float, int]] = {}  # ref -> runner, built, sent at, tries
        self._idle = list(range(units))
        self.lost = 0  # runs whose runner died (sent again, or rejected)

    def ops(self) -> ActorOps:
        return ActorOps(self.ray, self.runners[0], self._data)

    def prepare(self, pipe: Evaluator) -> None:
        """The check's data, sent once to the object store (waits for the reference)."""
        self._spec = self.ray.put(Spec(pipe.reference, pipe.precise, pipe.rtol, pipe.slow_s, pipe.repeat,
                                       pipe.timeout_s, 0.0))

    @property
    def building(self) -> int:
        return len(self._builds)

    def build(self, cand: Choices) -> None:
        self._builds[self._task.remote(self._problem, cand)] = cand

    def idle(self) -> int:
        return len(self._idle)

    def run(self, built: Built, tries: int = 0, runner: int | None = None) -> None:
        i = self._idle.pop(0) if runner is None else runner
        left = self.pipe.deadline - time.perf_counter()
        ref = self.runners[i].measure.remote(built, self._data, self._spec, left)
        self._runs[ref] = (i, built, time.perf_counter(), tries)

    def running_keys(self) -> set[str]:
        return {point_key(b.candidate) for _, b, _, _ in self._runs.values()}

    def drop_builds(self) -> None:
        for ref in self._builds:
            self.ray.cancel(ref)
        self._builds.clear()

    def poll(self, timeout: float) -> tuple[list[Built], list[tuple[Built, Record]]]:
        ray = self.ray
        refs = [*self._builds, *self._runs]
        if not refs:
            return [], []
        done, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if done:
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        builds, runs = [], []
        for ref in done:
            if ref in self._builds:
                cand = self._builds.pop(ref)
                try:
                    builds.append(ray.get(ref))
                except ray.exceptions.RayError as err:
                    builds.append(Built(cand, reason=f"the builder died: {type(err).__name__}"))
            else:
                runs.extend(self._finished(ref))
        runs.extend(self._overdue())
        return builds, runs

    def _finished(self, ref: Any) -> list[tuple[Built, Record]]:
        ray = self.ray
        i, built, _, tries = self._runs.pop(ref)
        try:
            rec = ray.get(ref)
        except ray.exceptions.RayError as err:
            self.lost += 1
            if tries < RETRIES:  # the runner died (killed, or this candidate crashed it): once more
                self.run(built, tries + 1, runner=i)
                return []
            rec = Record(built.candidate, False, f"crashed: the runner died twice on it ({type(err).__name__})",
                         build_s=built.build_s, source_hash=built.digest)
        self._idle.append(i)
        return [(built, rec)]

    def _overdue(self) -> list[tuple[Built, Record]]:
        """Runs past three call timeouts (build, run, time): the runner is restarted, the candidate rejected."""
        out = []
        for ref, (i, built, sent, _) in list(self._runs.items()):
            allowed = 3 * limit(self.pipe, built.candidate)
            if time.perf_counter() - sent > allowed:
                del self._runs[ref]
                self.ray.kill(self.runners[i], no_restart=False)
                self._idle.append(i)
                out.append((built, Record(built.candidate, False, f"timed out after {allowed:.1f} s (runner restarted)",
                                          build_s=built.build_s, source_hash=built.digest)))
        return out

    def settle(self) -> None:
        """Nothing to wait for: an actor answers its calls in order."""

    def close(self) -> None:
        """Drop the builds in flight (the runner actors stay for the next tune)."""
        self.drop_builds()


def ray_backend(cluster: str, pipe: Evaluator, device: Any, arrays: Any, builders: int | None = None) -> RayBackend:
    """The Ray back end of one tune (connecting to `cluster` first)."""
    return RayBackend(connect(cluster, device), pipe, device, tuple(arrays), builders)


if __name__ == "__main__":  # ray start --resources="$(python -m lift.explore.cluster)"
    print(json.dumps(advertise()))
