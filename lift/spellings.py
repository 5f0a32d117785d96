"""Equivalent spellings of a program: what `lift.rules.normalise` must bring back to one form.

    spell(prog, "own_ops", "fused")        every site of those spellings rewritten (deterministic)
    spellings(prog)                        a hypothesis strategy drawing sites and spellings

The spellings (each keeps the program's meaning; float32 results equal the original's):

    own_ops      a built-in operator replaced by the user's own copy (`def add(a, b): return a + b`),
                 addition and multiplication also with commuted operands (`b + a`)
    pair         `map(op) << zip(a, b)` with a function of the pair (`p => p[0] * p[1]`)
    fused        `reduce(op, z) << map(g) << xs` as one fold step `(acc, x) => op(acc, g(x))`
    zip_order    `map(op) << zip(a, b)` as `map(op) << zip(b, a)` for a commutative `op`
    transposes   an input matrix `x` read as `transpose << transpose << x`
    fission      `map(c => reduce(f, z) << e(c))` as `map(c => reduce(f, z) << c) << map(c => e(c))`
    let          a sub-expression bound by `let` before its one use
    flatten      `map^k(q => F(q)) << map^k(x => join << join << x) << xs` (a nest over flattened
                 windows or filters) as `map^k(p => F(join << join << p)) << xs`: the reshaping view
                 applied inside the nest, to its parameter (joins and splits)

Sizes: a program of constant sizes is one spelling; `lift.compile` specialises a program of
symbolic sizes to the sizes of its calls (`lift.specialise`), where the same forms are reached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from lift.errors import LiftValueError
from lift.ir.nodes import (
    Expr,
    FunCall,
    FunDecl,
    Join,
    Lambda,
    Let,
    Map,
    Node,
    Param,
    Reduce,
    Split,
    Transpose,
    UserFun,
    Zip,
)
from lift.ir.paths import children, replace_at, walk, with_children
from lift.rules.terms import as_expr, bound_ids, call, elem, lam, mentions, meta, substitute
from lift.typecheck import type_of, typecheck
from lift.types import ArrayType, TupleType
from lift.userfun import facts, user_fun

Chooser = Callable[[str, Node], bool]  # whether to rewrite this site with this spelling


def _my_add(a, b):  # noqa: ANN001, ANN202 - translated user functions take their types from user_fun
    return a + b


def _my_add_r(a, b):  # noqa: ANN001, ANN202
    return b + a


def _my_mult(a, b):  # noqa: ANN001, ANN202
    return a * b


def _my_mult_r(a, b):  # noqa: ANN001, ANN202
    return b * a


def _pair_add(p):  # noqa: ANN001, ANN202
    return p[0] + p[1]


def _pair_mult(p):  # noqa: ANN001, ANN202
    return p[0] * p[1]


def _pair_mult_r(p):  # noqa: ANN001, ANN202
    return p[1] * p[0]


_COPIES = {"add": (_my_add, _my_add_r), "mult": (_my_mult, _my_mult_r)}
_PAIRS = {"add": (_pair_add,), "mult": (_pair_mult, _pair_mult_r)}


def _variant(kind: str, table: dict[str, tuple[Any, ...]], salt: int) -> Any:
    options = table.get(kind, ())
    return options[salt % len(options)] if options else None


# ------------------------------------------------------------------------------- the spellings


def _own_ops(n: Node, salt: int) -> Node | None:
    if not isinstance(n, UserFun):
        return None
    op = facts.operator(n)
    if op is None or op.vouched or op.on(n.out_type) != n:
        return None
    fn = _variant(op.kind, _COPIES, salt) or op.fun.fn  # max_/min_: a copy of the built-in's own body
    return user_fun(fn, [n.out_type, n.out_type], n.out_type, name=f"my_{op.kind.rstrip('_')}{salt % 2}")


def _pair_op(f: Any) -> tuple[facts.Operator, UserFun] | None:
    """(op, uf) when `f` is `p => uf(p.0, p.1)` with `uf` an operator."""
    uf = facts.pair_call(f)
    op = facts.operator(uf) if uf is not None else None
    return (op, cast(UserFun, uf)) if op is not None else None


def _pair(n: Node, salt: int) -> Node | None:
    if not isinstance(n, Map):
        return None
    found = _pair_op(n.f)
    if found is None:
        return None
    fn = _variant(found[0].kind, _PAIRS, salt)
    if fn is None:
        return None
    t = found[1].out_type
    return Map(user_fun(fn, [TupleType((t, t))], t, name=f"pair_{found[0].kind}{salt % 2}"), **meta(n))


def _map_call(e: Node) -> tuple[FunDecl, Expr] | None:
    """`(g, x)` when `e` is `map(g) << x` (a plain map, not a lowered one); else None."""
    if isinstance(e, FunCall) and type(e.f) is Map and len(e.args) == 1:
        return e.f.f, e.args[0]
    return None


def _reduce_call(e: Node) -> tuple[Reduce, Expr, Expr] | None:
    """`(r, z, xs)` when `e` is `r << (z, xs)`, `r` a plain `reduce(f, z)`; else None."""
    if isinstance(e, FunCall) and type(e.f) is Reduce and len(e.args) == 2:
        return e.f, e.args[0], e.args[1]
    return None


def _fused(n: Node, salt: int) -> Node | None:
    red = _reduce_call(n)
    mapped = _map_call(red[2]) if red is not None else None
    if red is None or mapped is None:
        return None
    (r, z, _), (g, x) = red, mapped
    f = r.f

    acc_t, elem_t = type_of(z), elem(x)
    step = lam([acc_t, elem_t], lambda acc, e: call(f, [acc, call(g, [e])]), ["acc", "x"])
    return FunCall(Reduce(step, **meta(r)), (z, x), **meta(n))


def _zip_order(n: Node, salt: int) -> Node | None:
    mapped = _map_call(n)
    if mapped is None or not isinstance(n, FunCall):
        return None
    found, z = _pair_op(mapped[0]), mapped[1]
    if found is None or not found[0].commutative or not (isinstance(z, FunCall) and isinstance(z.f, Zip)
                                                        and len(z.args) == 2):
        return None
    return FunCall(n.f, (FunCall(z.f, z.args[::-1], **meta(z)),), **meta(n))


def _fission(n: Node, salt: int) -> Node | None:
    mapped = _map_call(n)
    if mapped is None or not isinstance(n, FunCall):
        return None
    f = mapped[0]
    if not (isinstance(f, Lambda) and len(f.params) == 1):
        return None
    red = _reduce_call(f.body)
    if red is None or red[2] == f.params[0] or mentions(red[1], f.params):
        return None

    (r, z, e), params = red, f.params
    produce = Lambda(params, e)
    consume = lam([type_of(e)], lambda c: FunCall(r, (z, c), **meta(f.body)), [params[0].name])
    return FunCall(Map(consume, **meta(n.f)), (FunCall(Map(produce), n.args),), **meta(n))


def _flatten(n: Node, salt: int) -> Node | None:
    if not (isinstance(n, FunCall) and len(n.args) == 1 and isinstance(n.args[0], FunCall)
            and len(n.args[0].args) == 1):
        return None
    outer, inner = _maps(n.f), _maps(n.args[0].f)
    if outer is None or inner is None or len(outer[0]) != len(inner[0]):
        return None
    (maps, f), (_, v) = outer, inner
    if not (isinstance(f, Lambda) and len(f.params) == 1 and isinstance(v, Lambda) and len(v.params) == 1
            and _reshapes(v.body, v.params[0])):
        return None
    p = Param(v.params[0].ptype, f.params[0].name)
    body: FunDecl = Lambda((p,), as_expr(substitute(f.body, {f.params[0].id: substitute(v.body, {v.params[0].id: p})})),
                        **meta(f))
    for m in reversed(maps):
        body = Map(body, **meta(m))
    return FunCall(body, n.args[0].args, **meta(n))


def _maps(f: Node) -> tuple[list[Map], Node] | None:
    """The plain maps `map(map(..(g)))` nest around `g`, and `g`; None when `f` is no map."""
    maps = []
    while type(f) is Map:
        maps.append(f)
        f = f.f
    return (maps, f) if maps else None


def _reshapes(e: Node, p: Param) -> bool:
    """Whether `e` is a non-empty chain of joins and splits of `p`."""
    depth = 0
    while isinstance(e, FunCall) and type(e.f) in (Join, Split) and len(e.args) == 1:
        e, depth = e.args[0], depth + 1
    return depth > 0 and isinstance(e, Param) and e.id == p.id


_LOCAL = {"own_ops": _own_ops, "pair": _pair, "fused": _fused, "zip_order": _zip_order, "fission": _fission,
          "flatten": _flatten}
KINDS = ("own_ops", "pair", "fused", "zip_order", "transposes", "fission", "let", "flatten")


def _transposes(prog: Node, choose: Chooser) -> Node:
    """Each 2-D input `x` (chosen) read as `transpose << transpose << x`."""
    if not isinstance(prog, Lambda):
        return prog
    env = {p.id: FunCall(Transpose(), (FunCall(Transpose(), (p,)),)) for p in prog.params
           if isinstance(p.ptype, ArrayType) and isinstance(p.ptype.elem, ArrayType) and choose("transposes", p)}
    return Lambda(prog.params, as_expr(substitute(prog.body, env)), **meta(prog)) if env else prog


def _let(prog: Node, choose: Chooser) -> Node:
    """One call (chosen) outside every lambda, or using only the program's inputs, bound by `let`
    before its use."""
    if not isinstance(prog, Lambda):
        return prog

    typecheck(prog)
    top = {p.id for p in prog.params}
    for path, m in walk(prog.body):
        if not path or not isinstance(m, FunCall) or not choose("let", m):
            continue
        if _under_lambda(prog.body, path) and not _free_in(m, top):
            continue
        v = Param(type_of(m), "v")
        body = replace_at(prog.body, path, v)
        return Lambda(prog.params, FunCall(Let(Lambda((v,), body)), (m,)), **meta(prog))
    return prog


def _free_in(e: Node, top: set[int]) -> bool:
    """Whether every parameter `e` uses is one of `top` (the program's own)."""

    bound = bound_ids(e)
    return all(m.id in top or m.id in bound for _, m in walk(e) if isinstance(m, Param))


def _under_lambda(body: Node, path: tuple[int, ...]) -> bool:
    node = body
    for i in path:
        if isinstance(node, Lambda):
            return True
        node = children(node)[i]
    return False


def respell(prog: Node, choose: Chooser, salt: Callable[[], int] = lambda: 0) -> Node:
    """`prog` with every site `choose` accepts rewritten by its spelling (children first)."""
    def local(n: Node) -> Node:
        for kind, fn in _LOCAL.items():
            if kind in ("own_ops",):
                continue
            new = fn(n, salt())
            if new is not None and choose(kind, n):
                n = new
        return n

    def own(n: Node) -> Node:
        new = _own_ops(n, salt())
        return new if new is not None and choose("own_ops", n) else n

    def bottom_up(n: Node, fn: Callable[[Node], Node]) -> Node:
        return fn(with_children(n, tuple(bottom_up(c, fn) for c in children(n))))

    out = bottom_up(prog, local)
    out = bottom_up(out, own)  # operators last: the other spellings look for the built-ins' pairs
    out = _transposes(out, choose)
    out = _let(out, choose)

    typecheck(out)
    return out


def spell(prog: Node, *kinds: str) -> Node:
    """`prog` with every site of the named spellings (`KINDS`) rewritten."""
    unknown = set(kinds) - set(KINDS)
    if unknown:

        raise LiftValueError(f"unknown spellings {sorted(unknown)}; the spellings are {', '.join(KINDS)}")
    return respell(prog, lambda kind, _n: kind in kinds)


def spellings(prog: Node, *, kinds: tuple[str, ...] = KINDS) -> Any:
    """A hypothesis strategy of programs equal in meaning to `prog`, spelled differently: at each
    site a spelling of `kinds` applies to, it is drawn whether to apply it."""
    from hypothesis import strategies as st

    @st.composite
    def draw_spelling(draw: Any) -> Node:
        def choose(kind: str, _n: Node) -> bool:
            return kind in kinds and draw(st.booleans())

        return respell(prog, choose, lambda: draw(st.integers(0, 1)))

    return draw_spelling()
