"""The informed strategy's models of time over the choices' features: a random forest (the
default, `improvement`) and ridge regression (`predict`).

A candidate's features are read from whatever choices it holds, so recorded tables and new
kinds of choices (structural parameters added later) need no schema:

- a number (tile size, block rows/cols, vector width, work-group size, group count, chunk) as
  its log2, a flag as 0/1, anything else one-hot (`layout=copy`, `along=output`);
- a skipped point as its skip flag alone (its other parameters change nothing);
- a register block's size (log2 of rows x cols x width: accumulators per work-item);
- a map's Table 5.2 code (joint variables named like the solver's `m<k>`) as three features:
  parallel or not, the kind (local, work-group, global) and the dimension;
- derived: log2 of the work-items in all and of the work-group size (sums of the launch logs).

`improvement(measured, pool)` fits a random forest (`lift.explore.forest`) to the log times
measured (rejected candidates count as twice the slowest time) and rates each pool candidate
by its expected improvement over the fastest. `predict(measured, pool)` is the earlier ridge
model: features scaled by their spread, their squares added, the predicted log time.

Chosen from tables recorded with the automatic block_nest points (benchmarks/strategies.py,
benchmarks/tables, 20 seeds): to reach uniform sampling's best (5% tolerance) the forest needed
21.5 evaluations on matmul 512^3 and 26.9 on the conv layer where uniform needed 52.3 and 98.0
(after 6 random candidates; after 10: 26.9 and 30.9), the ridge model 34.9 and 54.2: the
time is decided by interactions of structural choices (a vector width pays along the output,
not along the reduction; a block's rows and columns together), which an additive model cannot
express.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lift.choices import Choices

from .evaluate import Record
from .forest import Forest, expected_improvement
from .points import joint
from .points import key as point_key

RIDGE = 1.0
_MAP = re.compile(r"m\d+$")


_CACHE: dict[str, dict[str, float]] = {}


def features(c: Choices) -> dict[str, float]:
    """The numeric features of a candidate (see the module docstring); kept by the candidate's key
    (a replay or a tune asks for the same candidates at every proposal)."""
    key = point_key(c)
    if key not in _CACHE:
        if len(_CACHE) > 8192:
            _CACHE.clear()
        _CACHE[key] = _features(c)
    return dict(_CACHE[key])


def _features(c: Choices) -> dict[str, float]:
    out: dict[str, float] = {}
    for lab, ps in c.points.items():
        if ps.get("skip") is True:  # a skipped point's other parameters change nothing
            out[f"s.{lab}.skip"] = 1.0
            continue
        for p, v in ps.items():
            _put(out, f"s.{lab}.{p}", v)
        block = [out[f"s.{lab}.{p}"] for p in ("rows", "cols", "width") if f"s.{lab}.{p}" in out]
        if len(block) > 1:  # a register block's size: accumulators per work-item
            out[f"s.{lab}.block"] = sum(block)
    for k, v in joint(c).items():
        if _MAP.match(k):
            out[f"m.{k}.parallel"] = float(v >= 10)
            out[f"m.{k}.kind"] = float(v // 10)
            out[f"m.{k}.dim"] = float(v % 10)
        else:
            _put(out, f"j.{k}", v)
    for k, v in c.vectorise.items():
        _put(out, f"v.{k}", v)
    out["work_items"] = sum(out.get(f"j.{n}_{d}", 0.0) for d in range(3) for n in ("local_size", "groups"))
    out["group_size"] = sum(out.get(f"j.local_size_{d}", 0.0) for d in range(3))
    return out


def _put(out: dict[str, float], name: str, v: Any) -> None:
    if isinstance(v, bool):
        out[name] = float(v)
    elif isinstance(v, int | float):
        out[name] = math.log2(v) if v > 0 else float(v)
    else:
        out[f"{name}={v}"] = 1.0


def _training(measured: Sequence[Record], pool: Sequence[Choices]) -> tuple[np.ndarray, list, list, list[str]]:
    """The log times measured (rejected candidates: twice the slowest), the features of the
    measured and of the pool candidates, and every feature name among them."""
    ok = [r.time for r in measured if r.ok and r.time]
    worst = math.log(2 * max(ok)) if ok else 0.0
    y = np.array([math.log(r.time) if r.ok and r.time else worst for r in measured])
    rows = [features(r.candidate) for r in measured]
    todo = [features(c) for c in pool]
    return y, rows, todo, sorted({k for f in rows + todo for k in f})


def predict(measured: Sequence[Record], pool: Sequence[Choices], ridge: float = RIDGE) -> np.ndarray:
    """Predicted log time (lower is faster) of each `pool` candidate, by the model fitted to
    `measured`; features are scaled by their spread over the pool and the measured together."""
    y, rows, todo, keys = _training(measured, pool)
    x, q = _matrix(rows, keys), _matrix(todo, keys)
    sd = np.vstack([x, q]).std(0)
    sd[sd == 0] = 1.0

    def design(m: np.ndarray) -> np.ndarray:
        z = m / sd
        return np.hstack([z, z * z, np.ones((len(m), 1))])

    a = design(x)
    coef = np.linalg.solve(a.T @ a + ridge * np.eye(a.shape[1]), a.T @ y)
    return design(q) @ coef


def improvement(measured: Sequence[Record], pool: Sequence[Choices], seed: int = 0,
                trees: int = 24) -> np.ndarray:
    """Expected improvement in log time of each `pool` candidate over the fastest measured, by a
    random forest (`lift.explore.forest`) fitted to `measured` (rejected candidates count as twice
    the slowest time); higher is more promising."""
    y, rows, todo, keys = _training(measured, pool)
    forest = Forest(trees=trees, seed=seed).fit(_matrix(rows, keys, -1.0), y)
    mean, sd = forest.predict(_matrix(todo, keys, -1.0))
    return expected_improvement(mean, sd, float(y.min()))


def _matrix(rows: Sequence[Mapping[str, float]], keys: Sequence[str], missing: float = 0.0) -> np.ndarray:
    """Feature rows as a matrix; an absent feature is `missing` (the forest splits it apart: -1, below
    every log2 of a size)."""
    return np.array([[f.get(k, missing) for k in keys] for f in rows],
                    dtype=np.float64).reshape(len(rows), len(keys))


__all__ = ["features", "improvement", "predict"]
