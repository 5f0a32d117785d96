"""Alpha-equivalence: programs equal up to the names (ids) of their bound parameters."""

from __future__ import annotations

import dataclasses
import itertools

from lift.ir.nodes import Lambda, Node, Param
from lift.ir.paths import children, with_children


def canonical(e: Node) -> Node:
    """`e` with bound parameters renumbered in binding order (ids -1, -2, ...).

    Two programs are alpha-equal exactly when their canonical forms are equal, so the
    canonical form is the key for deduplication."""
    counter = itertools.count(1)

    def go(n: Node, env: dict[int, Param]) -> Node:
        if isinstance(n, Param):
            return env.get(n.id, n)
        if isinstance(n, Lambda):
            fresh = tuple(dataclasses.replace(p, id=-next(counter)) for p in n.params)
            inner = {**env, **{p.id: q for p, q in zip(n.params, fresh)}}
            return dataclasses.replace(n, params=fresh, body=go(n.body, inner))
        return with_children(n, tuple(go(c, env) for c in children(n)))

    return go(e, {})


def alpha_equal(a: Node, b: Node) -> bool:
    """True when `a` and `b` differ at most in the identity of bound parameters."""
    return a == b or canonical(a) == canonical(b)
