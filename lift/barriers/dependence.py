"""Dependence between two accesses (thesis Definition 5.4.1), the cheapest proof first.

For accesses `a1` then `a2` to the same buffer (`a1` before `a2` in the same iteration of
the loops around both, or, `backward`, `a2` in a later iteration), `a2` depends on `a1` when
a work-item touches in `a2` an element that *another* work-item of its group touched in
`a1`, and one of the two writes it. The checks, in order:

1. two reads never depend on each other (private memory never reaches this module);
2. same view and same parallel mapping (Definition 5.4.2): when the write `a1` and the
   read `a2` index the buffer by the same expression of loops with the same kind,
   dimension and range, every work-item reads exactly the elements it wrote itself;
   when moreover the index is injective in those loops (a mixed-radix sum, proven with
   `lift.arith`) and they tell every two work-items apart, no element is touched by two
   work-items at all, whatever the kinds of the accesses;
3. the GCD test (a classic of dependence analysis): with both indices `c + sum(a_i * t_i)`
   for integer constants `a_i` and any integer terms `t_i` (loop variables, sizes, floor
   divisions), two elements can only coincide at a distance in `c1 - c2 + g*Z`, `g` the gcd
   of every `a_i` of both; when no such distance lies within the accesses' widths, they are
   disjoint for every work-item, group and iteration (a packing kernel's `tmp[8*gl + j]`
   stores, j = 0..7: 28 z3 queries of 0.05-0.3 s each before);
4. index ranges per work-item, with z3: two work-items `t != t'` of one group, iterations
   of every loop around the accesses (the loops around both at trips in the order the
   pair asks for), and the element ranges of `a1` at `t` and `a2` at `t'` overlapping.
   Unsatisfiable means independent; satisfiable or unknown means dependent.

`across_groups` asks the same question for two work-items of different groups, which no
barrier can order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cmp_to_key
from math import gcd

import z3

from lift.arith import Arith, Cst, free_vars, prove_le, substitute
from lift.arith.poly import to_poly
from lift.barriers.graph import MAG, Flat, common_loops
from lift.barriers.records import Dependence
from lift.barriers.threads import Copy, Threads, distinct, lex_before


@dataclass(frozen=True, slots=True)
class Pair:
    """Accesses `first` and `second` (leaf indices) in that order; `backward`: across iterations."""

    first: int
    second: int
    backward: bool


def pairs(mag: MAG) -> Iterator[Pair]:
    """Every ordered pair of accesses to one buffer that a barrier may have to order."""
    by_mem: dict[str, list[int]] = {}
    for v in mag.vertices:
        by_mem.setdefault(mag.access(v).mem, []).append(v)
    for accs in by_mem.values():
        for i, u in enumerate(accs):
            for v in accs[i:]:
                if not (mag.access(u).write or mag.access(v).write):
                    continue
                if u != v:
                    yield Pair(u, v, False)
                if common_loops(mag.flat, u, v):
                    yield Pair(v, u, True)


class Dependences:
    """Dependence questions about the accesses of one kernel."""

    def __init__(self, mag: MAG, threads: Threads) -> None:
        self.mag = mag
        self.flat = mag.flat
        self.threads = threads
        self.witnesses: dict[Pair, str] = {}  # a race z3 found, by pair

    def depends(self, p: Pair) -> bool:
        """Whether a barrier must order `p.first` and `p.second` (Definition 5.4.1)."""
        a1, a2 = self.mag.access(p.first), self.mag.access(p.second)
        if not (a1.write or a2.write):
            return False
        if a1.write and not a2.write and not p.backward and same_mapping(self.flat, p.first, p.second):
            return False
        if self.private_elements(p):
            return False
        return self.overlap(p, same_group=True)

    def private_elements(self, p: Pair) -> bool:
        """Whether each element touched by `p`'s accesses is touched by one work-item only.

        The accesses correspond (Definition 5.4.2), the index is injective in the loops, and
        those loops tell work-items apart in every dimension of the work-group (for an access
        paired with itself, distinct iterations suffice when every loop around it indexes)."""
        if not (corresponding(self.flat, p.first, p.second) and injective(self.flat, p.first)):
            return False
        if p.first == p.second and len(iterators(self.flat, p.first)) == len(self.flat.leaves[p.first].loops):
            return True
        dims = {self.flat.loops[k].dim for k in iterators(self.flat, p.first) if self.flat.loops[k].kind != "seq"}
        return all(d in dims or self.threads.single(d) for d in range(3))

    def across_groups(self, u: int, v: int) -> bool:
        """Whether work-items of two different groups may touch one element, one of them writing."""
        a1, a2 = self.mag.access(u), self.mag.access(v)
        if a1.space != "global" or u == v or not (a1.write or a2.write):
            return False
        if a1.write and not a2.write and same_mapping(self.flat, u, v):
            return False
        return self.overlap(Pair(u, v, False), same_group=False)

    def overlap(self, p: Pair, *, same_group: bool) -> bool:
        """The z3 question: may two distinct work-items touch one element in `p`'s accesses?"""
        a1, a2 = self.flat.acc(p.first), self.flat.acc(p.second)
        if gcd_disjoint(a1.lo, a1.width, a2.lo, a2.width):
            return False
        t = self.threads
        c1 = t.copy("1")
        c2 = t.copy("2", group=c1.grp if same_group else None)
        lo1, hi1 = t.access(c1, p.first)
        lo2, hi2 = t.access(c2, p.second)
        goals = [lo1 <= hi2, lo2 <= hi1]
        if same_group:
            goals += [distinct(c1.lid, c2.lid), self.order(c1, c2, p)]
        else:
            goals.append(distinct(c1.grp, c2.grp))
        result = t.solve((c1, c2), *goals)
        if result == z3.sat and t.model is not None and same_group:
            element = t.model.eval(lo2, model_completion=True)
            self.witnesses[p] = f"work-items {t.ids(c1)} and {t.ids(c2)} on element {element}"
        return result != z3.unsat

    def order(self, c1: Copy, c2: Copy, p: Pair) -> z3.BoolRef:
        """The trips of the loops around both accesses: equal or later (forward), later (backward)."""
        common = common_loops(self.flat, p.first, p.second)
        return lex_before([c1.trips[k] for k in common], [c2.trips[k] for k in common], p.backward)

    def describe(self, p: Pair) -> Dependence:
        """The record of a dependence, naming both accesses and the buffer."""
        a1, a2 = self.mag.access(p.first), self.mag.access(p.second)
        kind = {(True, False): "read-after-write", (False, True): "write-after-read"}.get(
            (a1.write, a2.write), "write-after-write")
        carried = None
        if p.backward:
            carried = self.flat.loops[common_loops(self.flat, p.first, p.second)[-1]].comment
        return Dependence(kind, a1.mem, a1.space, self.show(p.first), self.show(p.second), carried,
                          self.witnesses.get(p))

    def show(self, leaf: int) -> str:
        acc = self.mag.access(leaf)
        loops = self.flat.leaves[leaf].loops
        inside = f" in {self.flat.loops[loops[-1]].comment}" if loops else ""
        return f"{acc.where} [{acc.text}]{inside}"


def gcd_disjoint(lo1: Arith, w1: int, lo2: Arith, w2: int) -> bool:
    """Whether elements `[lo1, lo1 + w1)` and `[lo2, lo2 + w2)` are disjoint for every value of
    every atom in them, each atom free on either side (another work-item, another iteration).

    `lo1 - lo2` is `c1 - c2` plus integer multiples of `g`, the gcd of the constant coefficients
    of every non-constant monomial of both: it lies in `r + g*Z`, `r = (c1 - c2) mod g`. The
    ranges overlap when `-(w1 - 1) <= lo1 - lo2 <= w2 - 1`; the two candidates nearest that
    interval are `r` and `r - g`. With no atom at all, `lo1 - lo2` is the constant itself."""
    p1, p2 = to_poly(lo1), to_poly(lo2)
    g = 0
    for p in (p1, p2):
        for m, c in p.items():
            if m:
                g = gcd(g, c)
    d = p1.get((), 0) - p2.get((), 0)
    if g == 0:
        return not (-(w1 - 1) <= d <= w2 - 1)
    r = d % g
    return r > w2 - 1 and r - g < -(w1 - 1)


def iterators(flat: Flat, leaf: int) -> tuple[int, ...]:
    """The loops around an access whose variables index the buffer (outermost first)."""
    names = {v.name for v in free_vars(flat.acc(leaf).lo)}
    return tuple(k for k in flat.leaves[leaf].loops if flat.loops[k].var.name in names)


def same_mapping(flat: Flat, w: int, r: int) -> bool:
    """Definition 5.4.2 plus an unchanged view: read `r` touches, per work-item, what write `w` wrote.

    The accesses correspond (`corresponding`) and the writer runs no loop of its own that
    does not index (each element is written once per iteration of the loops around both)."""
    common = set(common_loops(flat, w, r))
    iw = iterators(flat, w)
    if any(k not in iw for k in flat.leaves[w].loops if k not in common):
        return False
    return corresponding(flat, w, r)


def corresponding(flat: Flat, a: int, b: int) -> bool:
    """Same view and same parallel mapping: `b` touches, per work-item, what `a` touches.

    The iterators must correspond one to one (same kind, dimension and range; a loop around
    both corresponds to itself), every loop around either access that tells work-items of a
    group apart (map_lcl, map_glb) must be one of them, and renaming the iterators of `b` to
    those of `a` must give the index expression of `a`."""
    xa, xb = flat.acc(a), flat.acc(b)
    ia, ib = iterators(flat, a), iterators(flat, b)
    if xa.width != xb.width or len(ia) != len(ib):
        return False
    common = set(common_loops(flat, a, b))
    for x, y in zip(ia, ib):
        if (x in common or y in common) and x != y:
            return False
        if _signature(flat, x) != _signature(flat, y):
            return False
    for leaf, its in ((a, ia), (b, ib)):
        if any(flat.loops[k].kind in ("lcl", "glb") and k not in its for k in flat.leaves[leaf].loops):
            return False
    rename = {flat.loops[y].var.name: flat.loops[x].var for x, y in zip(ia, ib) if x != y}
    return substitute(xb.lo, rename) == xa.lo


def injective(flat: Flat, leaf: int) -> bool:
    """Whether distinct iterations of the access's iterators touch disjoint elements.

    The index must be `base + sum(c_v * v)` over the iterators `v`, each `c_v` free of loop
    variables, and the coefficients must form a mixed radix: sorted increasingly, each one
    exceeds the largest value the smaller terms (and the access's width) can reach."""
    acc = flat.acc(leaf)
    its = iterators(flat, leaf)
    loop_vars = {info.var.name for info in flat.loops}
    zero = {flat.loops[k].var.name: 0 for k in its}
    base = substitute(acc.lo, zero)
    terms, total = [], base
    for k in its:
        v = flat.loops[k].var
        c = substitute(acc.lo, {**zero, v.name: 1}) - base
        if any(x.name in loop_vars for x in free_vars(c)):
            return False
        terms.append((c, flat.loops[k].count))
        total = total + c * v
    if total != acc.lo:
        return False
    span: Arith = Cst(acc.width - 1)
    for c, n in sorted(terms, key=cmp_to_key(_compare)):
        if not prove_le(span + 1, c):
            return False
        span = span + c * (n - 1)
    return True


def _compare(a: tuple[Arith, Arith], b: tuple[Arith, Arith]) -> int:
    if prove_le(a[0], b[0]):
        return -1
    return 1 if prove_le(b[0], a[0]) else 0


def _signature(flat: Flat, k: int) -> tuple:
    info = flat.loops[k]
    return info.kind, info.dim, info.count, info.once, info.guard


__all__ = ["Pair", "pairs", "Dependences", "gcd_disjoint", "same_mapping", "corresponding", "injective", "iterators"]
