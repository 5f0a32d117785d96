"""The tune's driver: proposals, builders and runners with results arriving asynchronously.

    drive(backend, work, search, history, may_propose=..., time_left=..., ahead=2)

The driver asks the strategy for candidates, hands them to the back end's builders, hands
what they built to idle runners, and appends each record to `history` as it arrives (in
any order), writing it to the tuning database through `work` (lift.explore.shared): the
driver is the database's only writer. The strategy sees the candidates in flight as tried
(records whose reason is `IN_FLIGHT`, which the informed strategy does not learn from), so a
batch of proposals can be out at once. `ahead` is how many built candidates may wait beyond
what the idle runners take: 0 is the sequential tune (build, run, build, run), k > 0 lets
builders compile up to k candidates while the runners time (pipelining).

Back ends: `LocalBackend` (the builder is the driver itself; the runner is a `LocalRunner`
on the tune's worker process) and `lift.explore.cluster.RayBackend` (builders are Ray tasks,
runners Ray actors, one per device). When the budget is spent, builds not yet run are
dropped (never claimed in the database) and the runs in flight are waited for.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future
from concurrent.futures import wait as wait_futures
from typing import Any

from lift.choices import Choices

from .evaluate import Record
from .points import key as point_key
from .roles import Built, LocalRunner, build, remember, seen
from .search import IN_FLIGHT
from .shared import SharedWork


class LocalBackend:
    """The two roles on this machine: candidates are built in the driver (between its waits on
    the runner), measured by one `LocalRunner` on the tune's worker."""

    def __init__(self, pipe: Any, runner: LocalRunner) -> None:
        self.pipe, self.runner = pipe, runner
        self._built: list[Built] = []
        self._run: tuple[Future, Built] | None = None

    @property
    def building(self) -> int:
        return len(self._built)  # finished inside `build`, handed over by the next `poll`

    def prepare(self, pipe: Any) -> None:
        """Before the search (the runner reads the reference from `pipe` itself)."""

    def build(self, cand: Choices) -> None:
        self._built.append(build(self.pipe, cand))

    def idle(self) -> int:
        return 0 if self._run is not None else 1

    def run(self, built: Built) -> None:
        self._run = (self.runner.submit(built), built)

    def poll(self, timeout: float) -> tuple[list[Built], list[tuple[Built, Record]]]:
        builds, self._built = self._built, []
        if self._run is None or builds:
            return builds, []
        future, built = self._run
        wait_futures([future], timeout=timeout, return_when=FIRST_COMPLETED)
        if not future.done():
            return [], []
        self._run = None
        return [], [(built, future.result())]

    def running_keys(self) -> set[str]:
        return {point_key(self._run[1].candidate)} if self._run is not None else set()

    def drop_builds(self) -> None:
        self._built = []

    def settle(self) -> None:
        """Wait for a run still in flight (past the grace): the worker is the confirmation round's next."""
        if self._run is not None:
            self._run[0].exception()
            self._run = None

    def close(self) -> None:
        self.runner.close()


def drive(backend: Any, work: SharedWork, search: Any, history: list[Record], *,
          may_propose: Callable[[int], bool], time_left: Callable[[], bool], ahead: int,
          wait_until: Callable[[], float], on_record: Callable[[], None] = lambda: None) -> None:
    """Run the search through `backend` until `may_propose(in flight)` is false (the budget or
    the trials) or the strategy has nothing left, then wait for the runs in flight (until
    `wait_until()`)."""
    pipe = work.pipe
    ready: deque[Built] = deque()
    flying: dict[str, Choices] = {}  # proposed and not finished: building, built or running
    busy: dict[str, Choices] = {}  # measured by another tune (its record is collected)
    exhausted = False

    def view() -> list[Record]:
        return [*history, *(Record(c, False, IN_FLIGHT) for c in (*flying.values(), *busy.values()))]

    def finished(cand: Choices, rec: Record) -> None:
        flying.pop(point_key(cand), None)
        history.append(rec)
        on_record()

    while True:
        if not time_left() and (ready or backend.building):  # the budget is spent: drop what did not run
            for b in ready:
                flying.pop(point_key(b.candidate), None)
            ready.clear()
            backend.drop_builds()
            flying = {k: c for k, c in flying.items() if k in backend.running_keys()}
        while ready and backend.idle():
            b = ready.popleft()
            rec = seen(pipe, b)
            if rec is not None:
                finished(b.candidate, work.finish(b.candidate, rec))
                continue
            got = work.claim(b.candidate)
            if got is True:
                backend.run(b)
            elif got is None:
                busy[point_key(b.candidate)] = flying.pop(point_key(b.candidate))
            else:
                finished(b.candidate, got)
        can_build = (not exhausted and time_left() and may_propose(len(flying))
                     and backend.building + len(ready) < ahead + backend.idle())
        if can_build:
            cand = search.propose(view())
            if cand is None:
                exhausted = True
            elif (stored := work.stored(cand)) is not None:
                finished(cand, stored)
            else:
                flying[point_key(cand)] = cand
                backend.build(cand)
            continue
        if not flying:
            break
        if not time_left() and time.perf_counter() > wait_until():
            break  # runs still in flight past the grace: their records are lost, nothing written
        builds, runs = backend.poll(0.25)
        ready.extend(builds)
        for b, rec in runs:
            finished(b.candidate, work.finish(b.candidate, remember(pipe, b, rec)))
        if busy:
            done = work.collect(history)
            for r in done:
                busy.pop(point_key(r.candidate), None)
            history.extend(done)


__all__ = ["drive", "LocalBackend"]
