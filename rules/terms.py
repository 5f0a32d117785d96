"""Term helpers for rules: fresh lambdas, substitution, beta and eta, and metadata.

Parameters have unique ids, so substitution never captures; a term copied into
several places gets fresh bound parameters in every copy after the first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from lift.arith import Arith
from lift.ir.alpha import refresh as refresh  # the IR's one substitution helper (lift/ir/alpha.py)
from lift.ir.alpha import substitute as substitute
from lift.ir.nodes import Expr, FunCall, FunDecl, Lambda, Literal, MakeTuple, Node, Param
from lift.ir.paths import at, children, replace_at, walk
from lift.types import ArrayType, Type


def meta(n: Node | None) -> dict[str, Any]:
    """The metadata (`label`, `loc`) of `n`, as keyword arguments for a new node."""
    if n is None:
        return {}
    return {"label": n.label, "loc": n.loc}


def ids(params: Iterable[Param]) -> frozenset[int]:
    """The ids of some parameters."""
    return frozenset(p.id for p in params)


def mentions(n: Node, params: Iterable[Param]) -> bool:
    """Whether `n` uses any of `params`."""
    want = ids(params)
    return any(isinstance(m, Param) and m.id in want for _, m in walk(n))


def uses(n: Node, p: Param) -> int:
    """How many times `n` uses parameter `p`."""
    return sum(1 for _, m in walk(n) if isinstance(m, Param) and m.id == p.id)


def lam(types: Sequence[Type], body: Callable[..., Expr], names: Sequence[str] = (),
        **kw: Any) -> Lambda:
    """`(p1, ..., pk) => body(p1, ..., pk)` with fresh parameters of `types`."""
    ps = tuple(Param(t, names[i] if i < len(names) else "p") for i, t in enumerate(types))
    return Lambda(ps, body(*ps), **kw)


def eta(f: FunDecl) -> FunDecl:
    """`g` for `(p1..pk) => g(p1..pk)` when `g` does not use the parameters, else `f`."""
    if isinstance(f, Lambda) and isinstance(f.body, FunCall):
        b = f.body
        if tuple(b.args) == tuple(f.params) and not mentions(b.f, f.params):
            return eta(b.f)
    return f


def _cheap(e: Expr) -> bool:
    return isinstance(e, (Param, Literal))


def call(f: FunDecl, args: Sequence[Expr], **kw: Any) -> Expr:
    """`f(args)`, beta-reduced when `f` is a lambda whose parameters are used at most once."""
    if isinstance(f, Lambda) and len(f.params) == len(args):
        if all(_cheap(a) or uses(f.body, p) <= 1 for p, a in zip(f.params, args)):
            return as_expr(substitute(f.body, {p.id: a for p, a in zip(f.params, args)}))
    return FunCall(eta(f), tuple(args), **kw)


def compose(f: FunDecl, g: FunDecl, t: Type, **kw: Any) -> FunDecl:
    """`f << g` as a function of one argument of type `t` (eta-reduced where possible)."""
    return eta(lam([t], lambda p: call(f, [call(g, [p])]), ["x"], **kw))


def array_type(e: Expr) -> ArrayType:
    """The type of an array expression (a `TypeError` if it is not an array)."""
    t = e.type
    if not isinstance(t, ArrayType):
        raise TypeError(f"not an array: {t}")
    return t


def length(e: Expr) -> Arith:
    """The outer length of an array expression."""
    return array_type(e).size


def elem(e: Expr) -> Type:
    """The element type of an array expression."""
    return array_type(e).elem


def constant(e: Node) -> bool:
    """Whether `e` is a literal or a tuple of constants (`tuple(0.0, 0.0)`, a reduction's initial
    value): computed where it is read, in a kernel, never passed to one."""
    if isinstance(e, Literal):
        return True
    return isinstance(e, FunCall) and isinstance(e.f, MakeTuple) and all(constant(a) for a in e.args)


def as_call(n: Node) -> FunCall:
    """`n` as a call, where a rule's pattern or a caller guarantees one (a `TypeError` if not)."""
    if not isinstance(n, FunCall):
        raise TypeError(f"expected a call, got {type(n).__name__}")
    return n


def compare_fields(n: Node) -> tuple[str, ...]:
    """The names of the fields of `n` that take part in equality (its children and parameters, in
    order; `label` and `loc` are not among them), as `lift.ir.nodes.node` records them."""
    names: tuple[str, ...] = getattr(type(n), "_compare_fields")  # noqa: B009 - set by the decorator
    return names


def as_expr(n: Node) -> Expr:
    """`n` as an expression, where a rebuilt expression is one (a `TypeError` if not)."""
    if not isinstance(n, Expr):
        raise TypeError(f"expected an expression, got {type(n).__name__}")
    return n


def fun_of(n: Node) -> FunDecl:
    """The function a pattern applies (`f` of `map(f)`, `reduce(f)`, `to_local(f)`; a `TypeError` if none)."""
    f = getattr(n, "f", None)
    if not isinstance(f, FunDecl):
        raise TypeError(f"{type(n).__name__} applies no function")
    return f


def as_fun(n: Node) -> FunDecl:
    """`n` as a function declaration, where a pattern guarantees one (a `TypeError` if not)."""
    if not isinstance(n, FunDecl):
        raise TypeError(f"expected a function, got {type(n).__name__}")
    return n


def bound_ids(n: Node) -> frozenset[int]:
    """The ids of the parameters bound by lambdas inside `n`."""
    return frozenset(p.id for _, m in walk(n) if isinstance(m, Lambda) for p in m.params)


def free_ids(n: Node) -> frozenset[int]:
    """The ids of the parameters `n` uses but does not bind."""
    used = frozenset(m.id for _, m in walk(n) if isinstance(m, Param))
    return used - bound_ids(n)


def under_lambda(n: Node, path: tuple[int, ...]) -> bool:
    """Whether the node at `path` in `n` lies inside a lambda of `n`."""
    for i in path:
        if isinstance(n, Lambda):
            return True
        n = children(n)[i]
    return False


def liftable(e: Node, *, top_level: bool = False) -> list[tuple[int, ...]]:
    """Paths (below the root) of the sub-expressions of `e` that use no parameter bound in `e`:
    calls and parameters; with `top_level`, only those outside every lambda of `e`."""
    inner = bound_ids(e)
    out = []
    for path, s in walk(e):
        if not path or not isinstance(s, (FunCall, Param)):
            continue
        if top_level and under_lambda(e, path):
            continue
        if not (free_ids(s) & inner):
            out.append(path)
    return out


def abstract(e: Expr, path: tuple[int, ...], name: str = "v") -> tuple[Lambda, Expr]:
    """`(v => e[v at path], s)` where `s` is the sub-expression of `e` at `path`."""

    s = at(e, path)
    assert isinstance(s, Expr)
    v = Param(s.type, name)
    return Lambda((v,), as_expr(replace_at(e, path, v))), s
