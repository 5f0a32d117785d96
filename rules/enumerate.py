"""Exhaustive exploration: every program reachable in `depth` rule applications.

    found = explore(dot, ALL, depth=3, limit=2000)
    print(found)            # explore: 812 distinct programs within 3 steps (limit 2000)
    for prog, steps in found: ...
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lift.errors import LiftError
from lift.ir.alpha import canonical
from lift.ir.nodes import Node
from lift.ir.paths import replace_at, walk
from lift.rules.rule import Rule, Step
from lift.typecheck import typecheck

ParamChoices = Mapping[str, Mapping[str, Sequence[Any]]]


@dataclass(frozen=True)
class Explored:
    """Distinct programs (up to alpha-equivalence), each with the steps that derive it."""

    programs: tuple[Node, ...]
    derivations: tuple[tuple[Step, ...], ...]
    depth: int
    limit: int
    truncated: bool
    rejected: int = 0

    @property
    def count(self) -> int:
        """How many distinct programs were found (the start program included)."""
        return len(self.programs)

    def __len__(self) -> int:
        return len(self.programs)

    def __iter__(self) -> Iterator[tuple[Node, tuple[Step, ...]]]:
        return iter(zip(self.programs, self.derivations))

    def __str__(self) -> str:
        more = f", limit {self.limit} reached" if self.truncated else ""
        bad = f", {self.rejected} ill-typed rewrites dropped" if self.rejected else ""
        return f"explore: {self.count} distinct programs within {self.depth} steps{more}{bad}"


def explore(expr: Node, rules: Iterable[Rule], depth: int, *, limit: int = 1000,
            params: ParamChoices | None = None, choices_per_rule: int = 2) -> Explored:
    """Breadth-first: apply every rule at every location (with parameter choices) `depth` times.

    `params` gives values per rule name (`{"split_join": {"n": [4, 8]}}`); otherwise the rule's
    own suggestions are tried, at most `choices_per_rule` of them."""
    rules = tuple(rules)
    seen = {canonical(expr)}
    programs: list[Node] = [expr]
    derivs: list[tuple[Step, ...]] = [()]
    frontier, rejected = [0], 0
    for _ in range(depth):
        nxt: list[int] = []
        for i in frontier:
            for new, step in _successors(programs[i], rules, params or {}, choices_per_rule):
                key = canonical(new)
                if key in seen:
                    continue
                if len(programs) >= limit:
                    return Explored(tuple(programs), tuple(derivs), depth, limit, True, rejected)
                seen.add(key)
                if not _well_typed(new):
                    rejected += 1
                    continue
                programs.append(new)
                derivs.append(derivs[i] + (step,))
                nxt.append(len(programs) - 1)
        frontier = nxt
    return Explored(tuple(programs), tuple(derivs), depth, limit, False, rejected)


def _well_typed(e: Node) -> bool:
    """Whether the whole program type-checks (a rewrite that is locally equal only modulo
    divisibility, `n * (N // n)` for `N`, can break an enclosing lambda's parameter type)."""
    try:
        typecheck(e)
    except LiftError:
        return False
    return True


def _successors(e: Node, rules: tuple[Rule, ...], params: ParamChoices,
                per_rule: int) -> Iterator[tuple[Node, Step]]:
    for path, node in walk(e):
        for rule in rules:
            for ps in _choices(rule, node, params.get(rule.name), per_rule):
                done = rule.rewrite(node, path, ps)
                if done is not None:
                    yield replace_at(e, path, done[0]), done[1]


def _choices(rule: Rule, node: Node, given: Mapping[str, Sequence[Any]] | None,
             per_rule: int) -> list[dict[str, Any]]:
    if given is None:
        return rule.choices(node)[:per_rule]
    if rule.bindings(node) is None:
        return []
    names = list(given)
    combos = (dict(zip(names, c)) for c in itertools.product(*(given[k] for k in names)))
    return [c for c in combos if rule.bindings(node, c) is not None]
