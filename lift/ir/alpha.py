"""Bound parameters: substitution, fresh binders and alpha-equivalence, in one place.

`substitute(n, {param.id: expr})` replaces parameters (copies after the first get fresh
binders, so a term used twice never shares a lambda); `refresh(n)` renames every binder of
`n` to a fresh parameter; `canonical(e)` renumbers them in binding order, so two programs
are alpha-equal exactly when their canonical forms are equal. All three are one traversal,
`rename_binders`. Parameters have unique ids, so substitution never captures.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping
from typing import cast

from lift.ir.nodes import Expr, Lambda, Node, Param
from lift.ir.paths import N, children, with_children


def rename_binders(e: N, fresh: Callable[[Param], Param]) -> N:
    """`e` with each parameter a lambda binds replaced by `fresh(parameter)`, uses included."""
    def go(n: Node, env: dict[int, Param]) -> Node:
        if isinstance(n, Param):
            return env.get(n.id, n)
        if isinstance(n, Lambda):
            new = tuple(fresh(p) for p in n.params)
            inner = {**env, **{p.id: q for p, q in zip(n.params, new)}}
            return dataclasses.replace(n, params=new, body=cast(Expr, go(n.body, inner)))
        return with_children(n, tuple(go(c, env) for c in children(n)))

    return cast(N, go(e, {}))


def refresh(n: N) -> N:
    """`n` with every parameter it binds renamed to a fresh one (alpha-renaming)."""
    return rename_binders(n, lambda p: Param(p.ptype, p.name, label=p.label, loc=p.loc))


def substitute(n: N, env: Mapping[int, Expr]) -> N:
    """`n` with parameters replaced by id; copies after the first get fresh binders."""
    seen: set[int] = set()

    def go(m: Node) -> Node:
        if isinstance(m, Param) and m.id in env:
            new = env[m.id]
            if m.id in seen:
                return refresh(new)
            seen.add(m.id)
            return new
        return with_children(m, tuple(go(c) for c in children(m)))

    return cast(N, go(n))


def canonical(e: N) -> N:
    """`e` with bound parameters renumbered in binding order (ids -1, -2, ...).

    Two programs are alpha-equal exactly when their canonical forms are equal, so the
    canonical form is the key for deduplication."""
    counter = itertools.count(1)
    return rename_binders(e, lambda p: dataclasses.replace(p, id=-next(counter)))


def alpha_equal(a: Node, b: Node) -> bool:
    """True when `a` and `b` differ at most in the identity of bound parameters."""
    return a == b or canonical(a) == canonical(b)
