"""Candidates measured once across tunes: the tuning database as a shared, resumable work list.

`SharedWork.measure(candidate)` returns the candidate's record from the database when some tune
(this one before it was stopped, or another running now) has finished it; otherwise it claims
the candidate, measures it through the `Evaluator` (computing the interpreter's reference result
only when the first candidate is measured here) and writes the record at once. A candidate that
another live process is measuring is skipped (None) and its record collected later
(`collect`). Without a database it simply measures.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

from lift.choices import Choices

from .database import TuningDB
from .evaluate import Evaluator, Record
from .points import key as point_key


def record_from_json(d: dict[str, Any], pipe: Evaluator) -> Record:
    """A stored measurement as a `Record` (no program: it is rebuilt when needed); its point is
    read by `pipe` (`Evaluator.decode`: a row of the older form is sorted by `pipe`'s spaces)."""
    return Record(pipe.decode(d["choices"]), bool(d["ok"]), str(d.get("reason", "")), d.get("time"),
                  d.get("memory"), bool(d.get("checked", False)))


class SharedWork:
    """Measure candidates of one problem (`mkey`), sharing records through `database`."""

    def __init__(self, pipe: Evaluator, database: TuningDB | None, mkey: str, *, reuse: bool = True) -> None:
        self.pipe, self.db, self.mkey, self.reuse = pipe, database, mkey, reuse
        self.known: dict[str, dict[str, Any]] = database.finished(mkey) if database and reuse else {}
        self.pending: set[str] = set()
        self.reused = 0
        self.measured = 0

    def measure(self, cand: Choices) -> Record | None:
        """The candidate's record (stored or measured now), or None while another process measures it."""
        got = self.claim(cand)
        if got is not True:
            return got
        self.pipe.start_reference()  # once, in the background: candidates wait for it (within the budget)
        return self.finish(cand, self.pipe.measure(cand))

    def claim(self, cand: Choices) -> Record | None | Literal[True]:
        """Before measuring `cand`: its stored record, None when another live process measures
        it, True when it is this tune's to measure (claimed in the database)."""
        k = point_key(cand)
        if k in self.known:
            return self._stored(k)
        if self.db is not None and self.reuse:
            state = self.db.claim(self.mkey, k)
            if state == "finished":
                self.known.update(self.db.finished(self.mkey))
                if k in self.known:
                    return self._stored(k)
            elif state == "busy":
                self.pending.add(k)
                return None
        return True

    def stored(self, cand: Choices) -> Record | None:
        """The candidate's record when this tune already knows it is finished (no database read)."""
        return self._stored(point_key(cand)) if point_key(cand) in self.known else None

    def finish(self, cand: Choices, rec: Record) -> Record:
        """Write a measured record (the driver is the only writer of the database)."""
        self.measured += 1
        if self.db is not None:
            self.db.record(self.mkey, point_key(cand), rec.to_json(), replace=not self.reuse)
        return rec

    def _stored(self, k: str) -> Record:
        self.reused += 1
        self.pending.discard(k)
        return record_from_json(self.known[k], self.pipe)

    def collect(self, history: Sequence[Record]) -> list[Record]:
        """Records finished in the database (by any tune of this problem) that `history` lacks."""
        if self.db is None or not self.reuse:
            return []
        self.known.update(self.db.finished(self.mkey))
        have = {point_key(r.candidate) for r in history}
        return [self._stored(k) for k in list(self.known) if k not in have]

    def wait_pending(self, history: list[Record], deadline: float, poll_s: float = 0.2) -> None:
        """Wait (until `deadline`) for the candidates other processes are measuring; add their records."""
        while self.pending and time.perf_counter() < deadline:
            time.sleep(poll_s)
            history.extend(self.collect(history))
