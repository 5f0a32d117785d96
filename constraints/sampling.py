"""Cheap sampling of a `Model`: concrete checks over finite domains, z3 only to confirm.

Drawing a candidate with z3 pivots costs one or more solver checks per variable (15-40 ms a
sample on the joint spaces of matmul and conv). The variables all have small finite domains,
so a valid choice can instead be found by a randomised backtracking search that evaluates the
constraints concretely: every formula is compiled once into a Python function that works on
numpy arrays, and when a variable's turn comes, the constraints whose other variables are all
fixed are evaluated over its whole domain at once; a value is drawn uniformly among those
that pass. Variables go in order of domain size (random among equal sizes), so the launch
variables with large domains (`groups_d`) come last, where the constraints decide them.

The compiled formulas agree with z3 wherever z3's value is defined (tests/test_constraints_
sampling.py checks them elementwise); a zero divisor, uninterpreted in z3, gives 0 here, a value
z3 may choose too, so an assignment passing every compiled constraint is a solution. Where the
compiler skipped a formula it does not understand, `Model.sample` confirms each draw with one
incremental z3 check of the full assignment (1-4 ms): a skipped formula can cost a retry, never
a wrong choice. `Model.sample` falls back to the z3 pivots when this search keeps failing.
"""

from __future__ import annotations

import functools
import operator
import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

Fn = Callable[[Mapping[str, Any]], Any]

MAX_DOMAIN = 1 << 17  # a variable with a larger domain: no concrete sampling
NODE_LIMIT = 400  # assignments tried for one sample before giving up on it

class Unsupported(Exception):
    """A z3 term the concrete evaluator does not know."""


def compile_formula(e: Any) -> tuple[Fn, frozenset[str]]:
    """A Python function of an environment (variable name -> int or numpy array) computing the
    z3 formula `e` elementwise, and the names of the variables it reads. Read from `e.sexpr()`
    (one call into z3; walking the term through the Python API costs ~0.3 ms a node) and kept
    by that text, since the spaces of one program repeat most of their constraints."""
    text = e.sexpr()
    hit = _COMPILED.get(text)
    if hit is None:
        names: set[str] = set()
        hit = (build_fn(parse_sexpr(text), {}, names), frozenset(names))
        _COMPILED[text] = hit
        if len(_COMPILED) > CACHE_SIZE:
            _COMPILED.pop(next(iter(_COMPILED)))
    return hit


_COMPILED: dict[str, tuple[Fn, frozenset[str]]] = {}
CACHE_SIZE = 8192
_TOKEN = re.compile(r"\(|\)|\|[^|]*\||[^\s()]+")


def parse_sexpr(text: str) -> Any:
    """The s-expression `text` (z3's `sexpr()`) as nested lists of tokens; `Unsupported` if unbalanced."""
    stack: list[list[Any]] = [[]]
    for tok in _TOKEN.findall(text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) < 2:
                raise Unsupported("unbalanced s-expression")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1 or len(stack[0]) != 1:
        raise Unsupported("not one s-expression")
    return stack[0][0]


_NARY: dict[str, Callable[[Any, Any], Any]] = {"and": np.logical_and, "or": np.logical_or, "+": operator.add,
                                               "*": operator.mul}
_BINARY = {"=": operator.eq, "<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}


def build_fn(t: Any, scope: Mapping[str, Fn], names: set[str]) -> Fn:  # noqa: C901 - one case per operator
    """The parsed s-expression `t` as a function of an environment of numpy arrays; adds the
    variables it reads to `names`. `Unsupported` for an operator it does not know."""
    if isinstance(t, str):
        if t in scope:
            return scope[t]
        if t.lstrip("-").isdigit():
            v = int(t)
            return lambda env: v
        if t in ("true", "false"):
            flag = t == "true"
            return lambda env: flag
        name = t[1:-1] if t.startswith("|") else t
        names.add(name)
        return lambda env: env[name]
    if not t or not isinstance(t[0], str):
        raise Unsupported(str(t))
    op, rest = t[0], t[1:]
    if op == "let":
        inner = dict(scope)
        for name, value in rest[0]:
            inner[name] = build_fn(value, scope, names)
        return build_fn(rest[1], inner, names)
    args = [build_fn(a, scope, names) for a in rest]
    if op in _NARY:
        return functools.partial(_fold, _NARY[op], args)
    if op in _BINARY and len(args) == 2:
        f, (a, b) = _BINARY[op], args
        return lambda env: f(a(env), b(env))
    if op == "not":
        return lambda env: np.logical_not(args[0](env))
    if op == "=>":
        a, b = args
        return lambda env: np.logical_or(np.logical_not(a(env)), b(env))
    if op == "-":
        if len(args) == 1:
            return lambda env: _exact(operator.sub, 0, args[0](env))
        return functools.partial(_fold, operator.sub, args)
    if op == "distinct":
        return lambda env: _distinct([f(env) for f in args])
    if op == "ite":
        c, a, b = args
        return lambda env: np.where(c(env), a(env), b(env))
    if op in ("div", "mod") and len(args) == 2:
        a, b = args
        div = op == "div"
        return lambda env: _euclid(a(env), b(env), div)
    raise Unsupported(op)


def _fold(op: Callable[[Any, Any], Any], args: Sequence[Fn], env: Mapping[str, Any]) -> Any:
    if not args:
        return op is np.logical_and or op is operator.mul
    acc = args[0](env)
    arith = op in (operator.add, operator.mul, operator.sub)
    for f in args[1:]:
        acc = _exact(op, acc, f(env)) if arith else op(acc, f(env))
    return acc


_SAFE = float(1 << 62)  # int64 results at most this large (in a float estimate) cannot have wrapped


def _exact(op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    """`op(a, b)` on integers without int64 overflow: numpy's int64 where the result fits (checked
    against a float64 estimate), else Python's unbounded integers (object arrays). Symbolic sizes
    make big constants (a bound like `N*G*C*H*W <= 2**31`, products of several domains), whose
    int64 arithmetic would raise OverflowError or, worse, wrap silently."""
    try:
        with np.errstate(over="ignore"):
            r = op(a, b)
    except OverflowError:
        return op(_unbounded(a), _unbounded(b))
    if isinstance(r, (int, bool)) or getattr(r, "dtype", None) is None or r.dtype.kind not in "iu":
        return r  # Python integers (exact), booleans, or already object arrays
    est = op(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    if np.any(np.abs(est) >= _SAFE):
        return op(_unbounded(a), _unbounded(b))
    return r


def _unbounded(x: Any) -> Any:
    """`x` with Python integers: an object array for an array, an int for a scalar."""
    if isinstance(x, np.ndarray):
        return x.astype(object)
    return int(x) if isinstance(x, (np.integer, int)) and not isinstance(x, bool) else x


def _distinct(vals: list[Any]) -> Any:
    out: Any = True
    for i in range(len(vals)):
        for j in range(i + 1, len(vals)):
            out = np.logical_and(out, vals[i] != vals[j])
    return out


def _euclid(a: Any, b: Any, div: bool) -> Any:
    """z3's integer `div`/`mod` (Euclidean: the remainder is never negative); a zero divisor
    (uninterpreted in z3) gives 0 here, and the z3 confirmation decides."""
    b0 = np.where(b == 0, 1, b)
    r = np.mod(a, np.abs(b0))
    if not div:
        return np.where(b == 0, 0, r)
    q = (a - r) // b0
    return np.where(b == 0, 0, q)


class Sampler:
    """Randomised backtracking over a model's finite domains with concrete constraint checks.

    The variables with small domains (mapping codes, work-group sizes: `SMALL` values or fewer)
    are enumerated together once, as far as `BLOCK` combinations: the valid combinations of that
    block are a table, and a sample starts from a random row of it. The other variables follow one
    at a time, each next the one that completes the most constraints (ties: the smaller domain,
    then at random); a variable left without a value sends the search back to the latest variable
    it shares a constraint with."""

    SMALL = 16
    BLOCK = 1 << 16

    def __init__(self, domains: Mapping[str, Sequence[int]], constraints: Sequence[Any]) -> None:
        self.domains = {k: np.asarray(v, dtype=np.int64) for k, v in domains.items()}
        self.checks: list[tuple[Fn, frozenset[str]]] = []
        self.skipped = 0
        for f in constraints:
            try:
                fn, names = compile_formula(f)
            except Unsupported:
                self.skipped += 1
                continue
            if names and names <= set(self.domains):
                self.checks.append((fn, names))
            else:
                self.skipped += 1
        self.block, self.rows = self._enumerate()

    @staticmethod
    def usable(domains: Mapping[str, Sequence[int]]) -> bool:
        return all(0 < len(d) <= MAX_DOMAIN for d in domains.values())

    def _enumerate(self) -> tuple[list[str], dict[str, np.ndarray]]:
        """The block of small variables and its valid combinations (a column per variable)."""
        block: list[str] = []
        size = 1
        for k in sorted(self.domains, key=lambda k: (len(self.domains[k]), k)):
            n = len(self.domains[k])
            if n > self.SMALL or size * n > self.BLOCK:
                break
            block.append(k)
            size *= n
        if not block:
            return [], {}
        grids = np.meshgrid(*(self.domains[k] for k in block), indexing="ij")
        env = {k: g.ravel() for k, g in zip(block, grids)}
        mask = np.ones(size, dtype=bool)
        inside = set(block)
        with np.errstate(all="ignore"):
            for fn, names in self.checks:
                if names <= inside:
                    mask &= np.broadcast_to(np.asarray(fn(env), dtype=bool), mask.shape)
        return block, {k: v[mask] for k, v in env.items()}

    def _order(self, rng: random.Random) -> tuple[list[str], list[list[tuple[Fn, frozenset[str]]]]]:
        """The variables after the block, and the constraints each completes."""
        done = set(self.block)
        rest = [k for k in self.domains if k not in done]
        rng.shuffle(rest)
        pending = [c for c in self.checks if not c[1] <= done]
        order: list[str] = []
        due: list[list[tuple[Fn, frozenset[str]]]] = []
        while rest:
            gain = {k: sum(1 for _, names in pending if k in names and names <= done | {k}) for k in rest}
            best = min(rest, key=lambda k: (-gain[k], len(self.domains[k])))
            rest.remove(best)
            done.add(best)
            due.append([c for c in pending if c[1] <= done])
            pending = [c for c in pending if not c[1] <= done]
            order.append(best)
        return order, due

    def one(self, rng: random.Random) -> dict[str, int] | None:
        """A random assignment passing every compiled constraint, or None (gave up)."""
        rows = list(range(len(next(iter(self.rows.values()))))) if self.block else [0]
        return self._search(rng, rows, {}, lambda options: options.pop(rng.randrange(len(options))))

    def best(self, fixed: Mapping[str, int], prefer: Callable[[str, list[int]], list[int]],
             row_cost: Callable[[Mapping[str, np.ndarray]], np.ndarray]) -> dict[str, int] | None:
        """The first assignment (extending `fixed`) in preference order: block rows by `row_cost`
        (lowest first), then each variable's values in the order `prefer(name, values)` gives;
        None when there is none or the search gave up."""
        keep = np.ones(len(next(iter(self.rows.values()))) if self.block else 1, dtype=bool)
        for k, v in fixed.items():
            if k in self.rows:
                keep &= self.rows[k] == v
        idx = np.flatnonzero(keep)
        if self.block:
            idx = idx[np.argsort(np.asarray(row_cost(self.rows))[idx], kind="stable")]
        rows = idx[::-1].tolist()  # popped from the end: the cheapest first

        def pick(options: list[int]) -> int:
            return options.pop()

        return self._search(random.Random(0), rows, fixed, pick, prefer)

    def _search(self, rng: random.Random, rows: list[int], fixed: Mapping[str, int],
                take: Callable[[list[int]], int],
                prefer: Callable[[str, list[int]], list[int]] | None = None) -> dict[str, int] | None:
        """Backtracking from the block's `rows` (taken by `take`), then the other variables."""
        order, due = self._order(rng)
        pos = {k: i for i, k in enumerate(order)}
        env: dict[str, Any] = {}
        left: list[list[int] | None] = [None] * len(order)
        level, nodes = -1, 0  # level -1: the block
        while level < len(order):
            if nodes >= NODE_LIMIT:
                return None
            if level < 0:
                if not rows:
                    return None
                row = take(rows)
                env.update({k: int(v[row]) for k, v in self.rows.items()})
                nodes, level = nodes + 1, 0
                continue
            name = order[level]
            if left[level] is None:
                values = self._feasible(name, [fn for fn, _ in due[level]], env)
                if name in fixed:
                    values = [v for v in values if v == fixed[name]]
                left[level] = values if prefer is None else prefer(name, values)[::-1]
            options = left[level]
            if options:
                nodes += 1
                env[name] = take(options)
                level += 1
                continue
            back = max((pos.get(k, -1) for _, names in due[level] for k in names if pos.get(k, -1) < level),
                       default=level - 1)  # the latest variable this one depends on
            for lv in range(back + 1, level + 1):
                left[lv] = None
                env.pop(order[lv], None)
            level = back
        return {k: int(v) for k, v in env.items()}

    def _feasible(self, name: str, fns: Sequence[Fn], env: dict[str, Any]) -> list[int]:
        dom = self.domains[name]
        mask = np.ones(len(dom), dtype=bool)
        env[name] = dom
        try:
            with np.errstate(all="ignore"):
                for fn in fns:
                    mask &= np.broadcast_to(np.asarray(fn(env), dtype=bool), mask.shape)
                    if not mask.any():
                        break
        finally:
            del env[name]
        return dom[mask].tolist()


__all__ = ["Sampler", "compile_formula", "Unsupported"]
