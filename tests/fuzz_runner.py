"""The loop tests/fuzz_db.py and tests/fuzz_tc.py share with tests/fuzz.py's: cases judged in a
worker process (a hang is a case that started and did not finish within the timeout; the worker
is killed and a new one started from the next seed), one row per case, examples of the bad rows.

    table = run(worker, seconds, seed=1, timeout=60, limit=None, log=sys.stdout, show=20)

`worker(conn, seed)` draws cases from `seed` and sends `("start", text)` before judging each and
`("done", row, detail)` after it."""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

_CTX = mp.get_context("spawn")
KEPT = 100  # examples kept per bad row


def run(worker: Callable[[Any, int], None], seconds: float, *, seed: int = 1, timeout: float = 60.0,
        limit: int | None = None, log: Any = None, show: int = 20, ok_rows: tuple[str, ...] = ("ok",)) -> Counter:
    """Judge cases for `seconds` (or until `limit` are judged); the count of each row, with up to
    `show` examples of each row not in `ok_rows` printed to `log`."""
    table: Counter = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    end = time.monotonic() + seconds
    worker_seed, judged = seed, 0
    while time.monotonic() < end and (limit is None or judged < limit):
        parent, child = _CTX.Pipe()
        proc = _CTX.Process(target=worker, args=(child, worker_seed), daemon=True)
        proc.start()
        current: str | None = None
        while time.monotonic() < end and (limit is None or judged < limit):
            if not parent.poll(min(timeout, max(0.1, end - time.monotonic() + timeout))):
                if current is not None:
                    _record(table, examples, ok_rows, "hang", current, f"no result within {timeout:.0f} s")
                break
            try:
                msg = parent.recv()
            except EOFError:
                if current is not None:
                    _record(table, examples, ok_rows, "raw crash", current, f"worker died (exit {proc.exitcode})")
                break
            if msg[0] == "start":
                current = msg[1]
            else:
                _record(table, examples, ok_rows, msg[1], current, msg[2])
                current, judged = None, judged + 1
        proc.kill()
        proc.join()
        worker_seed += 1
    if log is not None:
        for row, lines in examples.items():
            for line in lines[:max(show, 0)]:
                print(f"[{row}] {line}", file=log)
            if len(lines) > show:
                print(f"[{row}] ... and {len(lines) - max(show, 0)} more", file=log)
    return table


def _record(table: Counter, examples: dict, ok_rows: tuple[str, ...], row: str, text: str | None,
            detail: str) -> None:
    table[row] += 1
    if row not in ok_rows and len(examples[row]) < KEPT:
        shown = (text or "?") if len(text or "?") <= 600 else (text or "")[:600] + "..."
        examples[row].append(f"{shown}: {detail}")


def print_counts(table: Counter, rows: tuple[str, ...], out: Any = None) -> None:
    out = out or sys.stdout
    print("".join(f"{r:>16}" for r in ("cases",) + rows), file=out)
    print(f"{sum(table.values()):>16}" + "".join(f"{table[r]:>16}" for r in rows), file=out)


def main(argv: list[str] | None, doc: str, fuzz: Callable[..., Any], rows: tuple[str, ...],
         ok_rows: tuple[str, ...], timeout: float, what: str) -> int:
    """A fuzzer's command line: `--minutes`, `--seed`, `--timeout` (seconds before one `what` is a
    hang), `--show`; prints the counts; exit 1 when a row outside `ok_rows` counted anything."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=timeout, help=f"seconds before {what} is a hang")
    ap.add_argument("--show", type=int, default=20, metavar="N", help="examples printed per bad row")
    args = ap.parse_args(argv)
    table = fuzz(args.minutes * 60, seed=args.seed, timeout=args.timeout, log=sys.stdout, show=args.show)
    print_counts(table, rows)
    return 1 if any(table[r] for r in rows if r not in ok_rows) else 0
