"""The golden-code JSON files of tests/test_golden.py and tests/test_golden_corpus.py: {case: OpenCL}."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path


def load(path: Path) -> dict[str, str]:
    """The golden texts by case name ({} before the first update)."""
    return json.loads(path.read_text()) if path.exists() else {}


def rewrite(path: Path, cases: Iterable[str], source: Callable[[str, str], str]) -> None:
    """Write `source(case, cache_folder)` of every case to `path`, saying which changed and which
    entries (of cases that no longer exist) were dropped."""
    old, new = load(path), {}
    for case in cases:
        with tempfile.TemporaryDirectory() as cache:
            new[case] = source(case, cache)
        print(f"{'unchanged' if new[case] == old.get(case) else 'written':9s} {case}", flush=True)
    for case in sorted(set(old) - set(new)):
        print(f"{'deleted':9s} {case}")
    path.write_text(json.dumps(new, indent=0, sort_keys=True) + "\n")


def main(update: Callable[[], None], usage: str) -> None:
    """`python tests/test_golden*.py --update`."""
    if sys.argv[1:] != ["--update"]:
        sys.exit(f"usage: {usage}")
    update()
