"""ELEVATE-style strategies: functions `Expr -> Expr | None` built from a few combinators.

A strategy is called as `s(e)` and returns the rewritten node, or None where it fails.
It also takes the path of `e` in the whole program and a list to which rule applications
append their `Step`s; `rewrite(e, s)` runs a strategy and returns both. A failing
strategy leaves the list as it found it.

    rewrite(dot, seq(top_down(split_join(n=128)), top_down(map_to_wrg), normalize(map_fusion)))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from lift.errors import RewriteError
from lift.ir.nodes import Node
from lift.ir.paths import Path, children, with_children
from lift.rules.rule import Step, check_program


class Strategy(Protocol):
    """`s(e, path, steps) -> Node | None`."""

    def __call__(self, e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None: ...


@dataclass(frozen=True)
class Rewritten:
    """The result of running a strategy: the program and the steps that made it."""

    expr: Node
    steps: tuple[Step, ...]


def rewrite(e: Node, s: Strategy) -> Rewritten:
    """Run `s` on `e`; `RewriteError` if it fails."""
    steps: list[Step] = []
    out = s(e, (), steps)
    if out is None:
        raise RewriteError(f"strategy {_name(s)} failed", node=e)
    check_program(e, out, f"strategy {_name(s)}")
    return Rewritten(out, tuple(steps))


def _name(s: Callable[..., Any]) -> str:
    return getattr(s, "__qualname__", None) or repr(s)


def _attempt(s: Strategy, e: Node, path: Path, steps: list[Step] | None) -> Node | None:
    mark = None if steps is None else len(steps)
    out = s(e, path, steps)
    if out is None and steps is not None:
        del steps[mark:]
    return out


def id_(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
    """Always succeeds, unchanged."""
    return e


def fail(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
    """Always fails."""
    return None


def seq(*ss: Strategy) -> Strategy:
    """Each strategy in turn on the result of the one before; fails if any fails."""
    def run(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
        mark = None if steps is None else len(steps)
        cur: Node | None = e
        for s in ss:
            cur = s(cast(Node, cur), path, steps)  # not None: checked below
            if cur is None:
                if steps is not None:
                    del steps[mark:]
                return None
        return cur

    return run


def choice(*ss: Strategy) -> Strategy:
    """The first strategy that succeeds."""
    def run(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
        for s in ss:
            out = _attempt(s, e, path, steps)
            if out is not None:
                return out
        return None

    return run


def try_(s: Strategy) -> Strategy:
    """`s`, or the node unchanged where `s` fails."""
    return choice(s, id_)


def repeat(s: Strategy, *, limit: int = 10_000) -> Strategy:
    """`s` as often as it succeeds (at most `limit` times); always succeeds."""
    def run(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
        for _ in range(limit):
            out = _attempt(s, e, path, steps)
            if out is None:
                return e
            e = out
        return e

    return run


def all_(s: Strategy) -> Strategy:
    """`s` on every child; fails if it fails on one."""
    def run(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
        mark = None if steps is None else len(steps)
        new = []
        for i, c in enumerate(children(e)):
            out = s(c, path + (i,), steps)
            if out is None:
                if steps is not None:
                    del steps[mark:]
                return None
            new.append(out)
        return with_children(e, tuple(new))

    return run


def one(s: Strategy) -> Strategy:
    """`s` on the first child where it succeeds; fails if there is none."""
    def run(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
        cs = children(e)
        for i, c in enumerate(cs):
            out = _attempt(s, c, path + (i,), steps)
            if out is not None:
                return with_children(e, cs[:i] + (out,) + cs[i + 1:])
        return None

    return run


def some(s: Strategy) -> Strategy:
    """`s` on every child where it succeeds; fails if it succeeds on none."""
    def run(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
        cs = list(children(e))
        hit = False
        for i, c in enumerate(cs):
            out = _attempt(s, c, path + (i,), steps)
            if out is not None:
                cs[i], hit = out, True
        return with_children(e, tuple(cs)) if hit else None

    return run


def top_down(s: Strategy) -> Strategy:
    """`s` at the first node, in pre-order, where it succeeds."""
    def run(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
        return choice(s, one(run))(e, path, steps)

    return run


def bottom_up(s: Strategy) -> Strategy:
    """`s` at the first node, in post-order, where it succeeds."""
    def run(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
        return choice(one(run), s)(e, path, steps)

    return run


def everywhere(s: Strategy) -> Strategy:
    """`s` tried once at every node, top-down (`try_` at each); always succeeds."""
    def run(e: Node, path: Path = (), steps: list[Step] | None = None) -> Node | None:
        top = try_(s)(e, path, steps)
        return all_(run)(cast(Node, top), path, steps)  # try_ never fails

    return run


def normalize(s: Strategy, *, limit: int = 10_000) -> Strategy:
    """`s` anywhere, repeatedly, until it applies nowhere; always succeeds."""
    return repeat(top_down(s), limit=limit)


__all__ = ["Strategy", "Rewritten", "rewrite", "id_", "fail", "seq", "choice", "try_", "repeat",
           "all_", "one", "some", "top_down", "bottom_up", "everywhere", "normalize"]
