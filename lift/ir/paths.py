"""Generic traversal of the IR: children, rebuilding, and stable paths.

A path is a tuple of child indices from the root. The children of a node are, in order:
`FunCall`: the function then the arguments; `Lambda`: the body; a pattern with a
function parameter: that function; everything else: none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

from lift.errors import RewriteError
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Let, Node

Path = tuple[int, ...]
N = TypeVar("N", bound=Node)


def children(n: Node) -> tuple[Node, ...]:
    """The child nodes of `n`, in path order."""
    if isinstance(n, FunCall):
        return (n.f, *n.args)
    if isinstance(n, Lambda):
        return (n.body,)
    f = getattr(n, "f", None)
    return (f,) if isinstance(f, Node) else ()


def with_children(n: N, new: tuple[Node, ...]) -> N:
    """`n` with its children replaced (label and loc kept); `n` itself if unchanged."""
    old = children(n)
    if len(new) != len(old):
        raise ValueError(f"{type(n).__name__} has {len(old)} children, got {len(new)}")
    if all(a is b for a, b in zip(old, new)):
        return n
    if isinstance(n, FunCall):
        return cast(N, dataclasses.replace(n, f=cast(FunDecl, new[0]), args=cast(tuple[Expr, ...], new[1:])))
    if isinstance(n, Lambda):
        return cast(N, dataclasses.replace(n, body=cast(Expr, new[0])))
    return cast(N, dataclasses.replace(cast(Any, n), f=new[0]))


def walk(n: Node, path: Path = ()) -> Iterator[tuple[Path, Node]]:
    """Every (path, node) pair in pre-order."""
    yield path, n
    for i, c in enumerate(children(n)):
        yield from walk(c, path + (i,))


def at(n: Node, path: Path) -> Node:
    """The sub-expression of `n` at `path`."""
    for i in path:
        cs = children(n)
        if not 0 <= i < len(cs):
            raise RewriteError(f"no sub-expression at path {path}", node=n)
        n = cs[i]
    return n


def lambda_of(f: object) -> Lambda | None:
    """The lambda a call of `f` applies to its arguments: `f` itself, or the lambda of a let (the
    kernel traversal's "lambda" case; the plumbing the staging and the host code pass through);
    else None."""
    lam = f.f if isinstance(f, Let) else f
    return lam if isinstance(lam, Lambda) else None


def replace_at(n: N, path: Path, new: Node) -> N:
    """`n` with the node at `path` replaced by `new`."""
    if not path:
        return cast(N, new)
    cs = list(children(n))
    i = path[0]
    if not 0 <= i < len(cs):
        raise RewriteError(f"no sub-expression at path {path}", node=n)
    cs[i] = replace_at(cs[i], path[1:], new)
    return with_children(n, tuple(cs))


def transform_bottom_up(n: N, fn: Callable[[Any], Any]) -> N:
    """Apply `fn` (Node -> Node) to every node, children first."""
    cs = tuple(transform_bottom_up(c, fn) for c in children(n))
    return cast(N, fn(with_children(n, cs)))
