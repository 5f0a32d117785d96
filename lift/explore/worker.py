"""Candidate isolation: candidates are built and run in a worker process, with a timeout.

    w = Worker(device, arrays)            # a 'spawn' process: pyopencl contexts do not survive fork
    w.call(("build", plan), timeout=30)   # Outcome(ok, reason, value)
    w.call(("run",)); w.call(("time", 3)); w.close()
    w.call(("load", slot, plan)); w.call(("time", 3, slot)); w.call(("drop",))   # kept side by side

The parent rewrites, solves and generates code (`KernelSource`, which pickles); the worker
builds it with OpenCL, runs it on the arrays it was given once at start, and times it. A
candidate that kills the worker (PoCL's 8 MiB worker-thread stack overflowed by private
arrays: SIGSEGV) or hangs past its timeout is an `Outcome` with the reason
("crashed: SIGSEGV", "timed out after 5.0 s"); the worker is killed and started again at the
next call, so the search goes on. `measure_isolated` is `Evaluator.measure` through a worker.

Test hook: `Worker.inject(plan) -> "segv" | "hang" | "slow" | None` (a callable, None by default)
makes the worker really die or hang on that plan's build, as a faulty OpenCL runtime would, or
build it only after `SLOW_S` seconds, as a loaded machine would.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from lift import runtime
from lift.program import Program

START_TIMEOUT_S = 120.0  # importing pyopencl and opening the device in a fresh process
MIN_TIMEOUT_S = 2.0
SLOW_S = 1.0  # the test hook's "slow" build waits this long first
GRACE_S = 10.0  # past the budget, a call may still take this long (an OpenCL build on a loaded machine)


@dataclass
class Outcome:
    """What one worker call gave: `value` when `ok`, else the reason (an error, a crash, a timeout)."""

    ok: bool
    reason: str = ""
    value: Any = None
    seconds: float = 0.0


class Worker:
    """One worker process for one device and one set of arguments; restarted after a crash."""

    def __init__(self, device: Any, arrays: Sequence[Any] = (), *, context: str = "spawn") -> None:
        self.device, self.arrays = device, tuple(arrays)
        self._mp: Any = multiprocessing.get_context(context)
        self._proc: Any = None
        self._conn: Any = None
        self.inject: Callable[[Any], str | None] | None = None
        self.restarts = 0

    def start(self) -> None:
        """Start the process (it opens the device in the background); a no-op when running."""
        if self._proc is not None and self._proc.is_alive():
            return
        parent, child = self._mp.Pipe()
        self._proc = self._mp.Process(target=_serve, args=(child, self.device), daemon=True)
        with _main_hidden():
            self._proc.start()
        child.close()
        self._conn = parent
        self._ready = False

    def call(self, msg: tuple, timeout: float = 30.0) -> Outcome:
        """Send one request and wait at most `timeout` seconds for its answer."""
        if self._proc is None or not self._proc.is_alive():
            if self._proc is not None:
                self.restarts += 1
            self.start()
        if not self._ready:
            got = self._receive(START_TIMEOUT_S)
            if not got.ok:
                return Outcome(False, f"worker start: {got.reason}")
            self._conn.send(("arrays", self.arrays))
            self._ready = True
        if msg[0] == "build" and self.inject is not None:
            fault = self.inject(msg[1])
            if fault == "slow":
                msg = ("build", msg[1], SLOW_S)
            elif fault:
                msg = ("fault", fault)
        t0 = time.perf_counter()
        self._conn.send(msg)
        out = self._receive(max(MIN_TIMEOUT_S, timeout))
        out.seconds = time.perf_counter() - t0
        return out

    def _receive(self, timeout: float) -> Outcome:
        try:
            if self._conn.poll(timeout):
                status, value = self._conn.recv()
                return Outcome(status == "ok", "" if status == "ok" else str(value), value if status == "ok" else None)
        except (EOFError, OSError):
            return Outcome(False, self._died())
        self.kill()
        return Outcome(False, f"timed out after {timeout:.1f} s (worker killed)")

    def _died(self) -> str:
        proc = self._proc
        proc.join(5)
        code = proc.exitcode
        self._proc = None
        if code is not None and code < 0:
            try:
                return f"crashed: the worker died with {signal.Signals(-code).name}"
            except ValueError:
                return f"crashed: the worker died with signal {-code}"
        return f"crashed: the worker exited with status {code}"

    def running(self) -> bool:
        """Whether the worker process is alive (a call to a dead one starts it again)."""
        return self._proc is not None and self._proc.is_alive()

    def use(self, arrays: Sequence[Any]) -> None:
        """Run the next candidates on `arrays` (sent to the worker with the next call)."""
        self.arrays = tuple(arrays)
        if self._proc is not None and self._proc.is_alive() and self._ready:
            self._conn.send(("arrays", self.arrays))

    def kill(self) -> None:
        """Stop the worker at once (it is started again by the next call)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(5)
            self._proc = None

    def close(self) -> None:
        """Ask the worker to stop, then make sure it has."""
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(("stop",))
                self._proc.join(2)
            except (OSError, BrokenPipeError):
                pass
        self.kill()

    def __del__(self) -> None:
        try:
            self.kill()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Start a process without the user's script. 'spawn' runs `__main__` again in the child
    (by path, or by name under `python -m`) before the target; in a script without an
    `if __name__ == "__main__":` guard that re-runs the whole script, whose `lift.tune` then
    fails in the half-started child and the worker never starts. The worker runs lift code only
    (`_serve`, plans of generated source, numpy arrays), so the main module is hidden while the
    process is started: multiprocessing reads `__spec__` and `__file__` in `Process.start`."""
    main = sys.modules.get("__main__")
    saved = {k: getattr(main, k) for k in ("__spec__", "__file__") if main is not None and hasattr(main, k)}
    try:
        for k in saved:
            if k == "__spec__":
                cast(Any, main).__spec__ = None
            else:
                delattr(main, k)
        yield
    finally:
        for k, v in saved.items():
            setattr(main, k, v)


_SHARED: dict[str, Worker] = {}


def shared(device: Any, arrays: Sequence[Any]) -> Worker:
    """The process's worker for `device` (started once, kept between tunes), set to `arrays`."""
    w = _SHARED.get(device.key)
    if w is None:
        w = _SHARED[device.key] = Worker(device, arrays)
        w.start()
    else:
        w.inject = None
        w.use(arrays)
    return w


def _serve(conn: Any, device: Any) -> None:
    """The worker's loop: build, run and time plans on the arrays it was sent, until told to stop."""
    try:
        runtime.open_device(device)
        conn.send(("ok", None))
    except Exception as err:  # noqa: BLE001 - reported to the parent
        conn.send(("error", _why(err)))
        return
    served = Served(device)
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "stop":
            return
        answer = served.handle(msg)
        if answer is not None:
            conn.send(answer)


class Served:
    """The worker protocol's state and requests on an opened device, in this process: the
    worker process's loop (`_serve`) and a Ray runner actor (lift.explore.cluster) both answer
    requests with it. `call` is `Worker.call` without a process (for `roles.run_checked`)."""

    def __init__(self, device: Any, arrays: Sequence[Any] = ()) -> None:
        self.device, self.arrays = device, tuple(arrays)
        self.prog: Any = None
        self.kept: dict[Any, Any] = {}  # slot -> program, for tune's confirmation round (confirm.py)

    def call(self, msg: tuple, timeout: float = 30.0) -> Outcome:
        """Answer one request here (no timeout: the process holding this is the one to kill)."""
        t0 = time.perf_counter()
        status, value = self.handle(msg) or ("ok", None)
        return Outcome(status == "ok", "" if status == "ok" else str(value), value if status == "ok" else None,
                       time.perf_counter() - t0)

    def handle(self, msg: tuple) -> tuple[str, Any] | None:
        """The answer to one request ("ok", value) or ("error", reason); None for "arrays"."""
        op, device = msg[0], self.device
        try:
            if op == "arrays":
                self.arrays = msg[1]
                return None  # no answer
            if op == "ping":
                return ("ok", None)
            if op == "fault":
                _fault(msg[1])
            if op == "build":
                t0 = time.perf_counter()
                time.sleep(msg[2] if len(msg) > 2 else 0.0)
                self.prog = None
                self.prog = Program(msg[1], device=device, cache_dir=False)
                return ("ok", time.perf_counter() - t0)
            if op == "run":
                out, seconds = _run_timed(self.prog, self.arrays)
                return ("ok", (out, seconds, int(sum(self.prog.memory_bytes_for(*self.arrays).values()))))
            if op == "load":
                self.kept.pop(msg[1], None)
                self.kept[msg[1]] = Program(msg[2], device=device, cache_dir=False)
                return ("ok", None)
            if op == "drop":
                self.kept.clear()
                return ("ok", None)
            if op == "time":
                p = self.kept[msg[2]] if len(msg) > 2 else self.prog
                times = p.time(*self.arrays, repeat=int(msg[1]))
                return ("ok", (times, int(sum(p.memory_bytes_for(*self.arrays).values()))))
            return ("error", f"unknown request {op!r}")
        except Exception as err:  # noqa: BLE001 - a failing candidate, reported with its reason
            return ("error", _why(err))


def _run_timed(prog: Any, arrays: Sequence[Any]) -> tuple[Any, float]:
    """Run `prog` once: its results and that run's summed kernel time (transfers excluded, as
    `Program.time` counts), so a slow candidate is checked and timed by one run instead of a
    checked run plus `Program.time`'s warm-up and timed runs (three runs of a 19 s kernel did
    not fit the 30 s candidate timeout)."""
    out, events = prog._execute(tuple(arrays))
    return out, runtime.seconds(events)


def _fault(kind: str) -> None:
    """The test hook's faults, raised for real in this process."""
    if kind == "segv":
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        signal.raise_signal(signal.SIGSEGV)  # to this thread, as a fault in the runtime would be
        time.sleep(5)
    if kind == "hang":
        time.sleep(1e6)
    raise RuntimeError(f"injected fault {kind!r}")


def _why(err: BaseException) -> str:
    msg = getattr(err, "message", None) or str(err)
    return f"{type(err).__name__}: {msg.splitlines()[0] if msg else ''}"[:300]


# --------------------------------------------------------------- a measured candidate


def measure_isolated(pipe: Any, cand: Any, worker: Worker) -> Any:
    """`Evaluator.measure` as the two roles (lift.explore.roles): the builder makes the plan here
    (rewriting, solving, code generation), the runner builds, runs, checks and times it in
    `worker`; never raises. `Record.build_s` is the plan's time, `Record.wall_s` the whole."""
    from . import roles

    t0 = time.perf_counter()
    built = roles.build(pipe, cand)
    rec = roles.seen(pipe, built)
    if rec is not None:
        return rec
    rec = roles.remember(pipe, built, roles.run_checked(worker, pipe, built))
    rec.wall_s = time.perf_counter() - t0
    return rec


__all__ = ["Worker", "Outcome", "Served", "shared", "measure_isolated"]
