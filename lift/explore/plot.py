"""A picture of what tuning found: every correct candidate's time and memory, and the Pareto
front of the two (thesis Fig. 4.5), drawn with matplotlib (the `plot` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lift.errors import UnsupportedError
from lift.files import replacing

from .points import is_default


def plot_front(result: Any, path: Any, title: str | None = None) -> Path:
    """Draw `result` (a TuneResult) into the image file `path`; returns the path."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UnsupportedError('plotting needs matplotlib: pip install "liftcl[plot]"') from None
    ok = [r for r in result.history if r.ok and r.time is not None and r.memory is not None]
    front = sorted(result.pareto, key=lambda r: (r.time, r.memory))
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    others = [r for r in ok if r not in front]
    ax.scatter([r.time * 1e3 for r in others], [r.memory / 2**20 for r in others], s=14, c="0.6",
               label=f"correct candidates ({len(ok)})")
    if front:
        ax.step([r.time * 1e3 for r in front], [r.memory / 2**20 for r in front], where="post", c="tab:red", lw=1)
        ax.scatter([r.time * 1e3 for r in front], [r.memory / 2**20 for r in front], s=30, c="tab:red", zorder=3,
                   label=f"Pareto front ({len(front)})")
    default = next((r for r in ok if is_default(r.candidate)), None)
    if default is not None:
        ax.scatter([default.time * 1e3], [default.memory / 2**20], s=70, marker="s", facecolors="none",
                   edgecolors="tab:blue", zorder=4, label="default lowering")
    best = result.best_record
    if best is not None and best.time is not None and best.memory is not None:
        ax.scatter([best.time * 1e3], [best.memory / 2**20], s=160, marker="*", c="gold", edgecolors="k",
                   zorder=5, label="chosen")
    times = [r.time for r in ok] or [1.0]
    if max(times) > 20 * min(times):
        ax.set_xscale("log")
    ax.set_xlabel("kernel time (ms)")
    ax.set_ylabel("device memory (MiB)")
    rejected = sum(1 for r in result.history if not r.ok)
    ax.set_title(title or f"time and memory of {len(result.history)} candidates ({rejected} rejected)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    try:
        with replacing(out) as tmp:  # the user's file is replaced only by a complete picture
            fig.savefig(tmp, format=out.suffix[1:] or plt.rcParams["savefig.format"])
    finally:
        plt.close(fig)
    return out
