"""The large-size fuzz profile (tests/fuzz.py) as a slow test: no wrong result, raw crash, hang,
refusal or fallback on random programs with up to 2^12 elements per dimension (issue 14, defect 8)."""

from __future__ import annotations

import io

import pytest
from fuzz import ROWS, fuzz, print_table


@pytest.mark.slow
def test_large_size_fuzz_profile() -> None:
    log = io.StringIO()
    table = fuzz(120, seed=7, timeout=120, log=log)
    print_table(table, log)
    counts = {r: sum(t[r] for t in table.values()) for r in ROWS}
    assert sum(counts.values()) > 0
    bad = {r: c for r, c in counts.items() if r not in ("ok", "invalid") and c}
    assert not bad, log.getvalue()
