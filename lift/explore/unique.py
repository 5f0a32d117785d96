"""Candidates not built again (thesis 7.2.1): a key on the program a point plans, before planning it.

Two search points can plan the same kernels: a skipped rewrite point's other parameters,
rewrite points whose outputs cancel (an even number of transposes, a split then a join), or two
structural choices that rewrite to one program. `program_key(pipe, point)` is what a point's
kernels depend on: the program its points give (`Evaluator.points_applied`), simplified by the
cancelling rules (`transpose_transpose_id`, `join_split_id`, `split_join_id`) and printed
canonically (`lift.ir.alpha.canonical`, map labels kept: the joint choice names maps by label),
with its joint mapping/tuning/launch choice, vector widths and sizes. `Unique` wraps a
strategy: a proposal whose key was proposed before is not built, planned or measured; it is
counted (`Unique.redundant`, the tune's `stats["redundant"]`) and the strategy asked again.
What the key cannot see (different programs that generate the same source) the driver still
catches after planning, by the source and launch sizes (`roles.seen`), and does not run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from lift.choices import Choices
from lift.errors import LiftError
from lift.ir.alpha import canonical
from lift.ir.paths import walk
from lift.rules import join_split_id, split_join_id, transpose_transpose_id
from lift.rules.strategies import choice, normalize, rewrite

from .evaluate import Evaluator, Record
from .points import is_default, joint
from .points import key as point_key
from .search import IN_FLIGHT

CANCELLING = normalize(choice(transpose_transpose_id, join_split_id, split_join_id))
RETRIES = 64  # redundant proposals passed over before one is let through (its source decides)


def simplified(expr: Any) -> Any:
    """`expr` with cancelling patterns removed (transpose << transpose, join << split(k), split(k)
    << join): equal in meaning, the form two points that cancel have in common."""
    try:
        return rewrite(expr, CANCELLING).expr
    except LiftError:
        return expr


def program_key(pipe: Evaluator, point: Choices, texts: dict[int, tuple[Any, str]] | None = None) -> str | None:
    """The key of the kernels `point` plans (see the module); None for the default lowering or a
    point whose points cannot be applied (left to the planner to reject). `texts` keeps the
    printed programs by rewritten program (the `Evaluator` keeps each rewritten program once)."""
    if is_default(point):
        return None
    try:
        applied = pipe.points_applied(point.points)
    except LiftError:
        return None
    text = _program_text(applied, {} if texts is None else texts)
    rest = json.dumps({"joint": joint(point), "vec": dict(point.vectorise),
                       "sizes": dict(point.sizes or {})}, sort_keys=True)
    return hashlib.sha256(f"{text}\n{rest}".encode()).hexdigest()


def _program_text(applied: Any, memo: dict[int, tuple[Any, str]]) -> str:
    got = memo.get(id(applied))
    if got is None or got[0] is not applied:
        simple = simplified(applied)
        got = (applied, f"{canonical(simple)}\n{_labels(simple)}")
        memo[id(applied)] = got
    return got[1]


def _labels(expr: Any) -> str:
    return ",".join(f"{p}:{n.label}" for p, n in walk(expr) if getattr(n, "label", None))


class Unique:
    """A strategy whose proposals plan distinct programs (see the module)."""

    def __init__(self, pipe: Evaluator, inner: Any) -> None:
        self.pipe, self.inner = pipe, inner
        self.keys: set[str] = set()  # program keys proposed or measured
        self.points: set[str] = set()  # point keys whose program key is in `keys`
        self.passed: list[Record] = []  # redundant proposals, shown to `inner` as tried
        self.redundant = 0
        self.texts: dict[int, tuple[Any, str]] = {}  # printed rewritten programs (program_key)

    def _note(self, cand: Choices) -> str | None:
        """Remember `cand`'s program key; the key (None: none)."""
        self.points.add(point_key(cand))
        k = program_key(self.pipe, cand, self.texts)
        if k is not None:
            self.keys.add(k)
        return k

    def propose(self, history: Sequence[Record]) -> Choices | None:
        for r in history:  # measured by others (the database, a concurrent tune) count too
            if point_key(r.candidate) not in self.points:
                self._note(r.candidate)
        cand = None
        for _ in range(RETRIES):
            cand = self.inner.propose([*history, *self.passed])
            if cand is None:
                return None
            k = program_key(self.pipe, cand, self.texts)
            if k is None or k not in self.keys:
                self._note(cand)
                return cand
            self.redundant += 1
            self.passed.append(Record(cand, False, IN_FLIGHT))  # tried, and nothing to learn from
            self.points.add(point_key(cand))
        return cand


__all__ = ["Unique", "program_key", "simplified"]
