"""Effort levels of `lift.tune` (`effort="quick" | "normal" | "exhaustive"`, `lift tune --effort`).

An effort level says how much of the space a tune explores; `budget` (seconds, wall time from
call to return) still bounds it, and every level keeps `tune`'s contract: the default lowering
is measured first and the winner is never measured slower than it (the confirmation round,
lift/explore/confirm.py).

- "quick": the default lowering, the stored winners of the same program at the nearest other
  sizes (lift/explore/transfer.py) and the automatic points' seeds (seeds.py), then the informed
  search, `QUICK_TRIALS` candidates in all; a budget of `QUICK_BUDGET` seconds unless given.
- "normal" (the default): as many candidates as the budget allows (60 s unless given), with
  the uniqueness constraints (tuning values of all-sequential loops fixed, symmetric thread
  dimensions ordered: `lift.constraints.unique`).
- "exhaustive": no uniqueness constraint on tuning values or thread dimensions (every valid
  value is a candidate; candidates with a kernel source already measured are still not
  measured again) and a budget of `EXHAUSTIVE_BUDGET` seconds unless given.
"""

from __future__ import annotations

from dataclasses import dataclass

from lift.errors import LiftValueError

QUICK_TRIALS = 12
QUICK_BUDGET = 20.0
NORMAL_BUDGET = 60.0
EXHAUSTIVE_BUDGET = 600.0


@dataclass(frozen=True)
class Effort:
    """What one effort level sets: the budget when none is given, the most candidates (None: the
    budget decides) and whether the spaces carry the uniqueness constraints."""

    name: str
    budget: float
    trials: int | None
    unique: bool


EFFORTS: dict[str, Effort] = {
    "quick": Effort("quick", QUICK_BUDGET, QUICK_TRIALS, True),
    "normal": Effort("normal", NORMAL_BUDGET, None, True),
    "exhaustive": Effort("exhaustive", EXHAUSTIVE_BUDGET, None, False),
}


def effort_of(name: str | None) -> Effort:
    """The effort level called `name` (None: "normal"); `LiftValueError` for any other name."""
    if name is None:
        return EFFORTS["normal"]
    if not isinstance(name, str) or name not in EFFORTS:
        raise LiftValueError(f"effort must be one of {', '.join(EFFORTS)}, got {name!r}")
    return EFFORTS[name]


def limits(effort: Effort, budget: float | None, trials: int | None) -> tuple[float, int | None]:
    """The budget and trial count a tune runs with: the ones given, else the effort's (with both
    an effort's trial count and `trials`, the smaller)."""
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0):
        raise LiftValueError(f"budget must be a positive number of seconds, got {budget!r}")
    spent = float(budget) if budget is not None else effort.budget
    if effort.trials is None:
        return spent, trials
    return spent, effort.trials if trials is None else min(trials, effort.trials)


__all__ = ["Effort", "EFFORTS", "effort_of", "limits", "QUICK_TRIALS"]
