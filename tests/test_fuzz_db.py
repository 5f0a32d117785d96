"""tests/fuzz_db.py as a short seeded run (issue 39): a dozen hostile tuning databases, judged
through `TuningDB` and `lift db`; no raw crash, hang, lost row or wrong count."""

from __future__ import annotations

import io

import pytest
from fuzz_db import OK_ROWS, ROWS, Scenario, fuzz, judge
from fuzz_runner import print_counts


def test_a_short_seeded_run_is_clean() -> None:
    log = io.StringIO()
    table = fuzz(300, seed=11, timeout=120, log=log, limit=12)
    print_counts(table, ROWS, log)
    assert sum(table.values()) == 12, log.getvalue()
    assert not {r: table[r] for r in ROWS if r not in OK_ROWS and table[r]}, log.getvalue()


def test_the_judge_sees_a_lost_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge is not blind: a database whose good rows are deleted behind its back is a lost row."""
    import lift.explore.database as database

    s = Scenario(2, 1, (), (), None, None, (), ())
    real = database.TuningDB.winners
    monkeypatch.setattr(database.TuningDB, "winners", lambda self: real(self)[1:])
    assert judge(s)[0] == "lost rows"
    monkeypatch.undo()
    assert judge(s)[0] == "ok"
