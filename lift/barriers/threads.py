"""A z3 model of the work-items of one kernel: ids, loop iterations and index expressions.

Work-item `t` of a group has local id `lid[d]` in `[0, L[d])` per dimension `d`; its group
has id `grp[d]` in `[0, NG[d])`, and `G[d] = NG[d] * L[d]` (the ND-range, symbolic in the
program's sizes, or free when the OpenCL implementation picks it). A loop of kind

* `seq` runs `v = k` for `k` in `[0, count)`;
* `lcl` runs `v = lid + k * L`, `wrg` runs `v = grp + k * NG`, `glb` runs
  `v = grp * L + lid + k * G`, for every `k >= 0` with `v < count` (`once`: `k = 0`);

`k` is the loop's trip: work-items that synchronise at a barrier are at the same trips of
the loops around it. Each query instantiates the model for two work-items ("copies").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import z3

from lift.arith import Arith, Cst, free_vars, range_constraints_z3, to_z3
from lift.barriers.graph import Acc, Flat, LoopInfo, Probe
from lift.constraints.limits import solve_isolated

# Each query is bounded by z3's resource counter, not the clock, so that the answer (and so the
# barriers) does not depend on how loaded the machine is, and asked in a new z3 context, so that
# its cost depends less on what the process solved before (lift/constraints/limits.py). Largest
# finished in whole test runs: 43.3M units (gconv, 13 s; 1.1M in a fresh process, 0.9M-121M and
# once over 200M before it was isolated), so 200M is only 4.6x; two rejection tests' queries never
# finish (200M after 100 s and, niced on a loaded machine, 489 s). An unknown answer counts as
# "may depend" / "may differ". No clock limit: under load a 60 s one was reached and changed
# barriers and mappings.
RLIMIT = 200_000_000
DIMS = 3


@dataclass
class Copy:
    """One work-item in a query: its ids and, per loop, its iteration variable and trip."""

    tag: str
    lid: list[Any]
    grp: list[Any]
    env: dict[str, Any] = field(default_factory=dict)  # loop variable name -> z3 term
    trips: dict[int, Any] = field(default_factory=dict)  # loop index -> z3 trip
    facts: list[Any] = field(default_factory=list)


class Threads:
    """The work-item model of one kernel (a probe flattened into `flat`)."""

    def __init__(self, probe: Probe, flat: Flat) -> None:
        self.flat = flat
        self.global_size, self.local_size = probe.global_size, probe.local_size
        self.loop_vars = {info.var.name for info in flat.loops}
        self.sizes: dict[str, Any] = {}
        self.facts: list[Any] = []
        self.L, self.NG, self.G = self._ndrange(probe)
        self.facts += self._size_facts(probe)

    # ---------------------------------------------------------------- building

    def _ndrange(self, probe: Probe) -> tuple[list[Any], list[Any], list[Any]]:
        sizes: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
        local, groups, glob = sizes
        for d in range(DIMS):
            if d >= len(probe.global_size):
                local.append(z3.IntVal(1))
                groups.append(z3.IntVal(1))
                glob.append(z3.IntVal(1))
                continue
            ld, ng = z3.Int(f"$L{d}"), z3.Int(f"$NG{d}")
            gd = self.term(probe.global_size[d], {})
            self.facts += [ld >= 1, ng >= 1, gd == ng * ld]
            if probe.local_size is not None and d < len(probe.local_size):
                self.facts.append(ld == self.term(probe.local_size[d], {}))
            local.append(ld)
            groups.append(ng)
            glob.append(gd)
        return sizes

    def _size_facts(self, probe: Probe) -> list[Any]:
        exprs: list[Arith] = list(probe.global_size) + list(probe.local_size or ())
        exprs += [info.count for info in self.flat.loops]
        exprs += [leaf.item.lo for leaf in self.flat.leaves if isinstance(leaf.item, Acc)]
        sizes = {v for e in exprs for v in free_vars(e) if v.name not in self.loop_vars}
        facts = range_constraints_z3(sizes, self.sizes)
        return facts + [self.sizes[v.name] >= 0 for v in sizes if v.name in self.sizes]

    def single(self, d: int) -> bool:
        """Whether work-groups have exactly one work-item in dimension `d`."""
        if d >= len(self.global_size):
            return True
        return self.local_size is not None and d < len(self.local_size) and self.local_size[d] == Cst(1)

    def term(self, e: Arith, env: dict[str, Any]) -> Any:
        """`e` in z3: loop variables from `env`, sizes shared by every copy."""
        for v in free_vars(e):
            if v.name not in env and v.name not in self.sizes:
                self.sizes[v.name] = z3.Int(v.name)
        return to_z3(e, {**self.sizes, **env})

    def copy(self, tag: str, group: list[Any] | None = None) -> Copy:
        """A work-item; `group` shares the group ids of another copy (same work-group)."""
        lid = [z3.Int(f"$lid{d}#{tag}") for d in range(DIMS)]
        grp = group if group is not None else [z3.Int(f"$grp{d}#{tag}") for d in range(DIMS)]
        c = Copy(tag, lid, grp)
        for d in range(DIMS):
            c.facts += [lid[d] >= 0, lid[d] < self.L[d]]
            if group is None:
                c.facts += [grp[d] >= 0, grp[d] < self.NG[d]]
        return c

    # ------------------------------------------------------------------- loops

    def enter(self, c: Copy, k: int) -> Any:
        """Constrain copy `c` to an iteration of loop `k`; returns the loop's trip."""
        if k in c.trips:
            return c.trips[k]
        info = self.flat.loops[k]
        v = z3.Int(f"{info.var.name}#{c.tag}")
        trip = z3.Int(f"{info.var.name}#k{c.tag}")
        c.env[info.var.name] = v
        c.trips[k] = trip
        count = self.term(info.count, c.env)
        start, step = self.start_step(info, c)
        c.facts += [trip >= 0, v == start + trip * step, v >= 0, v < count]
        if info.once:
            c.facts.append(trip == 0)
        return trip

    def start_step(self, info: LoopInfo, c: Copy) -> tuple[Any, Any]:
        """Where the work-item `c` starts loop `info`, and its stride."""
        d = info.dim
        match info.kind:
            case "lcl":
                return c.lid[d], self.L[d]
            case "wrg":
                return c.grp[d], self.NG[d]
            case "glb":
                return c.grp[d] * self.L[d] + c.lid[d], self.G[d]
        return z3.IntVal(0), z3.IntVal(1)

    def access(self, c: Copy, leaf: int) -> tuple[Any, Any]:
        """The first and last element (z3) that copy `c` touches with the access at `leaf`."""
        for k in self.flat.leaves[leaf].loops:
            self.enter(c, k)
        acc = self.flat.leaves[leaf].item
        assert isinstance(acc, Acc)
        for cond, low, hi in acc.when:
            zc = self.term(cond, c.env)
            c.facts += ([zc >= 0] if low else []) + ([zc < self.term(hi, c.env)] if hi is not None else [])
        lo = self.term(acc.lo, c.env)
        return lo, lo + (acc.width - 1)

    # ----------------------------------------------------------------- solving

    def solve(self, copies: tuple[Copy, ...], *goals: Any) -> z3.CheckSatResult:
        """sat / unsat / unknown for the model, the copies' facts and `goals`."""
        facts = [*self.facts, *(f for c in copies for f in c.facts), *goals]
        result, self.model = solve_isolated(facts, RLIMIT)  # a new z3 context: the cost is the same every time
        return result

    model: Any = None  # the model of the last satisfiable query

    def ids(self, c: Copy) -> str:
        """The local id of copy `c` in the last model, e.g. "(1, 0)"."""
        dims = max(len(self.global_size), 1)
        return "(" + ", ".join(str(self.model.eval(x, model_completion=True)) for x in c.lid[:dims]) + ")"


def distinct(a: list[Any], b: list[Any]) -> Any:
    """Two id vectors differ in some dimension."""
    return z3.Or([x != y for x, y in zip(a, b)])


def lex_before(a: list[Any], b: list[Any], strict: bool) -> Any:
    """`a` comes before `b` in lexicographic order (or equals it unless `strict`)."""
    out: Any = z3.BoolVal(not strict)
    for x, y in reversed(list(zip(a, b))):
        out = z3.Or(x < y, z3.And(x == y, out))
    return out


__all__ = ["Threads", "Copy", "distinct", "lex_before", "RLIMIT"]
