"""The tuner's progress bar (tqdm: a live bar in a terminal, a widget in a notebook, a few
plain lines when the stream is a file)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from .evaluate import Record


class Progress:
    """Elapsed budget, candidates tried and rejected, and the best so far; nothing when `stream` is None."""

    def __init__(self, budget: float, stream: TextIO | None) -> None:
        self.budget, self.start, self.bar = max(float(budget), 1e-9), time.perf_counter(), None
        if stream is None:
            return
        from tqdm.auto import tqdm

        tty = bool(getattr(stream, "isatty", lambda: False)())
        self.bar = tqdm(total=round(self.budget, 1), desc="lift.tune", unit="s", file=stream, leave=True,
                        dynamic_ncols=tty, mininterval=0.5 if tty else max(5.0, self.budget / 10),
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:g} s{postfix}")

    def update(self, history: Sequence[Record], rank: Callable[[Record], Any], reused: int = 0) -> None:
        if self.bar is None:
            return
        ok = [r for r in history if r.ok]
        best = min(ok, key=rank) if ok else None
        shown = f"best {best.time * 1e3:.3f} ms" if best and best.time else "no result yet"
        again = f", {reused} from the database" if reused else ""
        self.bar.set_postfix_str(f"{len(history)} tried, {len(history) - len(ok)} rejected{again}, {shown}",
                                 refresh=False)
        elapsed = min(self.budget, time.perf_counter() - self.start)
        self.bar.update(max(0.0, round(elapsed, 1) - self.bar.n))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
