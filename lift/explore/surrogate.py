"""The informed strategy's model of time: ridge regression of log time on the choices' features.

A candidate's features are read from whatever choices it holds, so recorded tables and new
kinds of choices (structural parameters added later) need no schema:

- a number (tile size, vector width, work-group size, group count, chunk) as its log2, a
  flag as 0/1, anything else one-hot (`name=value`);
- a map's Table 5.2 code (joint variables named like the solver's `m<k>`) as three features:
  parallel or not, the kind (local, work-group, global) and the dimension;
- derived: log2 of the work-items in all and of the work-group size (sums of the launch logs).

`predict(measured, pool)` scales the features by their spread, adds their squares (a time is
often best at a middle value: a tile neither tiny nor huge), solves the ridge system on what
was measured (rejected candidates count as twice the slowest time) and predicts the pool.

Chosen from recorded tables (benchmarks/strategies.py, benchmarks/tables): on matmul 256^3
it came within 5% of uniform sampling's best in about 0.63 of uniform's evaluations (mean of 10
seeds); an additive per-value model and nearest neighbours did not beat uniform there. On the
conv layer it did not beat uniform sampling either (see lift.explore.search).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .evaluate import Candidate, Record

RIDGE = 1.0
_MAP = re.compile(r"m\d+$")


def features(c: Candidate) -> dict[str, float]:
    """The numeric features of a candidate (see the module docstring)."""
    out: dict[str, float] = {}
    for lab, ps in c.structural.items():
        for p, v in ps.items():
            _put(out, f"s.{lab}.{p}", v)
    for k, v in c.joint.items():
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


def predict(measured: Sequence[Record], pool: Sequence[Candidate], ridge: float = RIDGE) -> np.ndarray:
    """Predicted log time (lower is faster) of each `pool` candidate, by the model fitted to
    `measured`; features are scaled by their spread over the pool and the measured together."""
    ok = [r.time for r in measured if r.ok and r.time]
    worst = math.log(2 * max(ok)) if ok else 0.0
    y = np.array([math.log(r.time) if r.ok and r.time else worst for r in measured])
    rows = [features(r.candidate) for r in measured]
    todo = [features(c) for c in pool]
    keys = sorted({k for f in rows + todo for k in f})
    x, q = _matrix(rows, keys), _matrix(todo, keys)
    sd = np.vstack([x, q]).std(0)
    sd[sd == 0] = 1.0

    def design(m: np.ndarray) -> np.ndarray:
        z = m / sd
        return np.hstack([z, z * z, np.ones((len(m), 1))])

    a = design(x)
    coef = np.linalg.solve(a.T @ a + ridge * np.eye(a.shape[1]), a.T @ y)
    return design(q) @ coef


def _matrix(rows: Sequence[Mapping[str, float]], keys: Sequence[str]) -> np.ndarray:
    return np.array([[f.get(k, 0.0) for k in keys] for f in rows], dtype=np.float64).reshape(len(rows), len(keys))


__all__ = ["features", "predict"]
