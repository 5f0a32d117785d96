"""The normalisation stage: one canonical spelling for every spelling of a program.

    normalise(expr) -> expr'        interpret(expr') == interpret(expr), bit for bit in float32

A terminating rewrite system (every rule makes the program smaller or moves it down a fixed order,
applied children first until nothing changes), driven by the algebraic facts of
`lift.userfun.facts`, never by a function's name:

    (a, b) => op(b, a)                   -> op            a lambda computing a built-in operator
                                                          (user functions stay: points ask facts)
    map(p => p[0] (*) p[1])              -> map(op)       a pair function over zipped arrays
    reduce((acc, x) => acc (+) g(x), z)  -> reduce(op, z) << map(g)        a fused fold step split
    map(op) << zip(b, a)                 -> map(op) << zip(a, b)           op commutative: operands in
                                                          binding order (lambda-bound before the
                                                          program's own, outer lambdas first; a
                                                          component `get(i) << p` stands where p does)
    transpose << transpose << x          -> x
    transpose << map(r => map(g) << slide(n, s) << pad(a, b, v) << r) << transpose << x
                                         -> map(w => map(g) << transpose << w) << slide(n, s) << pad(a, b, v) << x
                                                          a stencil down the columns, read along the rows
    map(c => F(window << G(c))) << x     -> map(g => F(window << g)) << map(G) << x
                                                          a stage read through windows (slide, pad,
                                                          transpose) by the next is computed for every
                                                          c first (zip(x, ..) where F reads c too)
    map(c => reduce(f, z) << c) << map(g) << x  -> map(c => reduce(f, z) << g(c)) << x
    let(v => body) << e                  -> body[v := e]  v used once, not under another lambda
    map^k(p => F(V(p))) << x             -> map^k(q => F(q)) << map^k(V) << x
                                                          V a reshaping view (join, split chains) and
                                                          p read only through it (a flattened window
                                                          or filter: the view hoisted out of the nest)

Why a rewrite system and not an e-graph (egglog): the forms the automatic points recognise are a
handful of local shapes, each reached by one rule whose left side never reappears on its right side,
so rewriting children first to a fixed point reaches the same forms an e-graph's extraction would,
in one pass over the program (~1-5 ms for the examples), with no saturation budget to tune. A
program already canonical comes back as the same object, so its generated code cannot change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from lift.ir.layoutfun import computes
from lift.ir.nodes import (
    Expr,
    FunCall,
    FunDecl,
    Get,
    Join,
    Lambda,
    Let,
    Literal,
    Map,
    Node,
    Pad,
    Param,
    Reduce,
    Slide,
    Split,
    Transpose,
    UserFun,
    Zip,
)
from lift.ir.paths import at, children, replace_at, walk, with_children
from lift.ir.registry import has
from lift.rules.match import any_, either, exact, expr, fun, named, var
from lift.rules.match import call as pattern
from lift.rules.terms import as_call, call, elem, free_ids, lam, mentions, meta, substitute, under_lambda, uses
from lift.typecheck import type_of, typecheck
from lift.types import ArrayType, ScalarType, TupleType, Type
from lift.userfun import builtins, facts

# The left-hand sides of the rules below, as patterns of the program as written (`exact`: no lambda
# eta-reduced); a bound function's side condition is its pattern variable's test.
_f, _g, _x = fun("f"), fun("g"), expr("x")
_R = var("r", Param)
_LAMBDA_1 = var("f", Lambda, lambda f: len(f.params) == 1)  # a lambda of one parameter
_MAP_FUN = Map(_g)  # map(g), the function itself
_FOLD = pattern(named("red", Reduce(_f)), expr("z"), _x)  # reduce(f, z) << x
_ZIPPED_PAIRS = pattern(Map(_f), named("zip", pattern(Zip(any_()), expr("a"), expr("b"))))  # map(f) << zip(a, b)
_COMPONENT = pattern(Get(var("i")), _x)  # get(i) << x
_TWO_TRANSPOSES = pattern(Transpose(), pattern(Transpose(), _x))  # transpose << transpose << x
# transpose << map(f) << transpose << x, and f = r => map(g) << slide(..) [<< pad(..)] << r
_COLUMN_WINDOWS = pattern(Transpose(), named("m", pattern(Map(var("f", Lambda)),
                                                          named("t", pattern(Transpose(), _x)))))
_PADDED: Any = pattern(named("pad", Pad(any_(), any_(), any_(), any_())), _R)
_ROW_WINDOWS = Lambda((_R,), cast(Any, named("body", pattern(Map(_g), pattern(named("slide", Slide(any_(), any_())),
                                                                              either(_PADDED, _R))))))
_NEST = pattern(Map(_LAMBDA_1), _x)  # map(c => ..) << x
_STAGE = FunCall(Map(var("_", FunDecl, computes)), var("_", tuple))  # a computing map's call
_REDUCE_OF_MAP = pattern(Map(_LAMBDA_1), named("inner", pattern(Map(_g), _x)))  # map(c => ..) << map(g) << x
# reduce(_, _) << c or reduce(_, _) << map(_) << c, for a given c
_REDUCTION_OF = pattern(Reduce(any_()), any_(), either(pattern(Map(any_()), expr("c")), expr("c")))
_LET = pattern(Let(_LAMBDA_1), _x)  # let(v => ..) << x
_RESHAPE = either(pattern(Join(), _x), pattern(Split(any_()), _x))  # join << x, split(n) << x

_DONE: dict[tuple[Node, tuple[tuple[Any, ...], ...]], Node] = {}  # by program and labels (_memo_key)
_ROUNDS = 8  # rules applied at one node before moving up (each application shrinks or orders it)
_PASSES = 4  # passes over the whole program (a second one orders the zips of lambdas the first built)


def normalise(expr: Node) -> Node:
    """`expr` in canonical form (the same object when it already is)."""
    key = _memo_key(expr)
    if key in _DONE:
        return _DONE[key]
    out = expr
    for _ in range(_PASSES):  # again while a pass changes it: the parameters of the lambdas a pass
        order = _binding_order(out)  # builds get their places in the zip order only then
        def local(n: Node, placed: bool, order: dict[int, tuple[int, int, int]] = order) -> Node:
            return _local(n, order, placed)

        new = _bottom_up(out, local, root=True)
        if new is out:
            break
        out = new
    if out is not expr:

        typecheck(out)
    if len(_DONE) > 256:
        _DONE.clear()
    _DONE[key] = out
    return out


def _memo_key(expr: Node) -> tuple[Node, tuple[tuple[Any, ...], ...]]:
    """The memo's key: `expr` with what its equality ignores (each node's label and location, each
    parameter's name), so a program differing from a memoised one only there is normalised afresh."""
    return expr, tuple((getattr(x, "label", None), getattr(x, "loc", None), x.name if isinstance(x, Param) else None)
                       for _, x in walk(expr))


def _bottom_up(n: Node, fn: Callable[[Node, bool], Node], root: bool = False, placed: bool = False) -> Node:
    """`fn(m, placed)` applied to every node below `n`, children first; `placed`: inside a rewrite
    point the user placed (a transparent pattern with a label not starting `auto_`)."""
    label = str(getattr(n, "label", "") or "")
    placed = placed or (getattr(type(n), "transparent", False) and not label.startswith("auto_"))
    cs = tuple(_bottom_up(c, fn, placed=placed) for c in children(n))
    n = with_children(n, cs)
    return n if root else fn(n, placed)


def _local(n: Node, order: dict[int, tuple[int, int, int]], placed: bool = False) -> Node:
    for _ in range(_ROUNDS):
        new = _step(n, order, placed)
        if new is None:
            return n
        # the children a rule builds (a fold step's `map(g) << zip(c, r)`) are canonical too
        n = with_children(new, tuple(_bottom_up(c, lambda m, inner: _local(m, order, inner), placed=placed)
                                     for c in children(new)))
    return n


def _step(n: Node, order: dict[int, tuple[int, int, int]], placed: bool = False) -> Node | None:
    """One rule applied at `n` (its children are canonical already), or None."""
    if isinstance(n, Lambda):
        return _as_builtin(n)
    mapped = exact(_MAP_FUN, n)
    if mapped is not None:
        g = mapped["g"]
        op = facts.pair_operator(g) if facts.pair_call(g) is None else None
        if op is not None:
            return Map(_pair_fun(op, g), **meta(n))
        return None
    if not isinstance(n, FunCall):
        return None
    rules = _RULES if placed else (*_RULES, _hoist_reshape)  # a user point's body keeps its views' places
    for rule in rules:
        new = rule(n, order)
        if new is not None:
            return new
    return None


def _pair_fun(op: facts.Operator, like: FunDecl) -> Lambda:
    """`p => op(p.0, p.1)` on the pairs `like` takes."""
    pt = _in_type(like, 0)
    assert isinstance(pt, TupleType), pt  # the operator's pairs
    uf = op.on(pt.elems[0])
    return lam([pt], lambda q: FunCall(uf, (FunCall(Get(0), (q,)), FunCall(Get(1), (q,)))), ["p"])


def _in_type(f: FunDecl, i: int) -> Type:
    """The type of the `i`-th argument of `f`, a user function or a lambda."""
    if isinstance(f, UserFun):
        return f.in_types[i]
    if isinstance(f, Lambda):
        return f.params[i].ptype
    raise TypeError(f"{type(f).__name__} declares no argument types")


def _out_type(f: FunDecl) -> Type:
    """The result type of `f`, a user function or a lambda."""
    if isinstance(f, UserFun):
        return f.out_type
    if isinstance(f, Lambda):
        return type_of(f.body)
    raise TypeError(f"{type(f).__name__} declares no result type")


def _as_builtin(f: Lambda) -> Node | None:
    """The built-in operator a lambda computes (`(a, b) => add(b, a)`). A user function computing
    one stays as written (its C text is the user's): the points ask its facts, not its name."""
    op = facts.operator(f)
    if op is None or op.vouched:
        return None
    builtin = op.on(_out_type(f))
    return None if cast(Node, builtin) == f else builtin  # never equal: a user function is not a lambda


# ------------------------------------------------------------------------------- fold steps


def _split_fold(n: FunCall, order: Any) -> Node | None:
    """`reduce((acc, x) => acc (+) g(x), z) << xs -> reduce((+), z) << map(g) << xs`."""
    b = exact(_FOLD, n)
    if b is None or facts.operator(b["f"]) is not None:
        return None
    step = b["f"]
    found = facts.fold_step(step)
    if found is None:
        return None
    op, g = found
    xt = _in_type(step, 1)
    acc_t = _out_type(step)
    z, xs = b["z"], b["x"]
    red = Reduce(op.on(acc_t), **meta(n.f))
    if g == ("arg", 1):
        return FunCall(red, (z, xs), **meta(n))
    gfun = _function_of(g, xt, acc_t)
    if gfun is None:
        return None
    return FunCall(red, (z, FunCall(Map(gfun), (xs,))), **meta(n))


_SYMBOLS = {"+": "add", "-": "sub", "*": "mult", "/": "div"}  # term operators -> their built-ins


def _function_of(g: facts.Term, xt: Type, out: Type) -> FunDecl | None:
    """A function of `x : xt` computing the term `g` (of `("arg", 1)`) with built-ins, or None."""
    pair = (("get", ("arg", 1), 0), ("get", ("arg", 1), 1))
    if isinstance(xt, TupleType) and len(xt.elems) == 2 and g[0] == "bin" and g[2:] in (pair, pair[::-1]):
        for op in facts.operators():
            if facts.term(op.on(out)) == ("bin", g[1], ("arg", 0), ("arg", 1)):
                return _pair_fun(op, lam([xt], lambda x: x))  # map(op) << zip(..): op on each pair
    try:
        return lam([xt], lambda x: _expr_of(g, x, out), ["x"])
    except _NotExpressible:
        return None


class _NotExpressible(Exception):
    pass


def _expr_of(t: facts.Term, x: Param, out: Type) -> Expr:
    """The IR expression computing term `t` with `("arg", 1)` read as `x`."""

    if t == ("arg", 1):
        return x
    if t[0] == "get" and isinstance(t[2], int):
        return FunCall(Get(t[2]), (_expr_of(t[1], x, out),))
    if t[0] == "const" and isinstance(out, ScalarType):
        return Literal(t[1], out)
    if t[0] == "bin" and t[1] in _SYMBOLS:
        args = (_expr_of(t[2], x, out), _expr_of(t[3], x, out))
        return FunCall(getattr(builtins, _SYMBOLS[t[1]]).specialise(out, out), args)
    raise _NotExpressible(t)


# ------------------------------------------------------------------------------- zips, layouts


def _binding_order(expr: Node) -> dict[int, tuple[int, int, int]]:
    """Each parameter's place in the canonical zip order: (bound by the program itself, depth of
    its lambda, position)."""
    order: dict[int, tuple[int, int, int]] = {}

    def visit(n: Node, depth: int, root: bool) -> None:
        if isinstance(n, Lambda):
            for i, p in enumerate(n.params):
                order[p.id] = (int(root), depth, i)
            visit(n.body, depth + 1, False)
            return
        for c in children(n):
            visit(c, depth, False)

    visit(expr, 0, isinstance(expr, Lambda))
    return order


def _order_zip(n: FunCall, order: dict[int, tuple[int, int, int]]) -> Node | None:
    """`map(op) << zip(b, a) -> map(op) << zip(a, b)` for a commutative built-in `op`."""
    m = exact(_ZIPPED_PAIRS, n)
    uf = facts.pair_call(m["f"]) if m is not None else None
    if m is None or uf is None or not facts.commutes(uf):
        return None
    z, a, b = cast(FunCall, m["zip"]), m["a"], m["b"]
    ka, kb = _zip_key(a, order), _zip_key(b, order)
    if ka is None or kb is None or ka <= kb:
        return None
    return FunCall(n.f, (FunCall(z.f, (b, a), **meta(z)),), **meta(n))


def _zip_key(e: Node, order: dict[int, tuple[int, int, int]]) -> tuple[tuple[int, int, int], tuple[int, ...]] | None:
    """Where a zip operand stands in the canonical order: a parameter (`order`), or a component of one
    (`get(1) << get(0) << p`: p's place, then the path (0, 1)); None for anything else."""
    path: list[int] = []
    while (got := exact(_COMPONENT, e)) is not None:
        path.append(got["i"])
        e = got["x"]
    if not (isinstance(e, Param) and e.id in order):
        return None
    return order[e.id], tuple(reversed(path))


def _cancel_transposes(n: FunCall, order: Any) -> Node | None:
    """`transpose << transpose << x -> x`."""
    b = exact(_TWO_TRANSPOSES, n)
    return None if b is None else b["x"]


def _column_windows(n: FunCall, order: Any) -> Node | None:
    """`transpose << map(r => map(g) << slide(n, s) [<< pad(a, b, v)] << r) << transpose << x ->
    map(w => map(g) << transpose << w) << slide(n, s) [<< pad(a, b, v)] << x`: windows down the
    columns of `x` (a blur along y spelled as a blur of the transposed rows) are windows of rows,
    each transposed into the columns' windows; both outer transposes are gone, so a kernel reads
    and writes `x`'s rows in place instead of through a transposed temporary. Output element
    `[k][j]` is `g` of `x[k s + t][j]` (t < n) on both sides, pads read as the same value."""
    b = exact(_COLUMN_WINDOWS, n)
    w = None if b is None else exact(_ROW_WINDOWS, b["f"])
    if b is None or w is None or mentions(w["g"], [w["r"]]):
        return None
    m, t, f, r, body = as_call(b["m"]), as_call(b["t"]), cast(Lambda, b["f"]), w["r"], as_call(w["body"])
    slide_, pad_ = w["slide"], w.get("pad")
    data = t.args[0] if pad_ is None else FunCall(pad_, (t.args[0],))
    windows = FunCall(slide_, (data,))
    g = w["g"]
    rows = lam([elem(windows)], lambda q: FunCall(Map(g, **meta(body.f)), (FunCall(Transpose(), (q,)),)),
               [r.name], **meta(f))
    return FunCall(Map(rows, **meta(m.f)), (windows,), **meta(m))


def _distribute_stages(n: FunCall, order: Any) -> Node | None:
    """`map(c => F(window << G(c))) << x -> map(g => F(window << g)) << map(c => G(c)) << x`, with
    `G(c)` a computing map with rows (an image) and `window` a slide, pad or transpose of its result
    (the per-channel blurs of an unsharp mask): one kernel per element of `x` could run the stages one after the
    other only with barriers between them, inside a work-group over `x`'s few elements; stage by
    stage, every stage is a kernel over all of `x` (written stage by stage, the same program).
    A nest with memory annotations or labelled maps (a mapping of the user's, Listing 5.2's local
    transpose) is left as written.
    Where F reads `c` too, the new map zips `x` (a view: read twice, computed nowhere) with the
    stage's results. Element-wise consumers (`zip`, `map`) keep their producer: fusion joins them."""
    b = exact(_NEST, n)
    if b is None:
        return None
    f, x = cast(Lambda, b["f"]), b["x"]
    c, body = f.params[0], f.body
    if any(has("address", m) or getattr(m, "label", None) for _, m in walk(n)):
        return None  # the user placed memories or named maps for a mapping: the nest is theirs
    outside = free_ids(f) | {c.id}
    found: tuple[tuple[int, ...], Any] | None = None
    for path, m in walk(body):
        is_stage = path and exact(_STAGE, m) is not None
        if not is_stage or under_lambda(body, path):
            continue
        parent = at(body, path[:-1])
        if not (isinstance(parent, FunCall) and has("window", parent.f) and len(parent.args) == 1):
            continue
        image = isinstance(t := type_of(cast(Expr, m)), ArrayType) and isinstance(t.elem, ArrayType)  # parallel inside
        if image and c.id in free_ids(m) and free_ids(m) <= outside and (found is None or len(path) > len(found[0])):
            found = (path, m)
    if found is None:
        return None
    path, g_call = found
    q = Param(type_of(g_call), "stage")
    rest = replace_at(body, path, q)
    stage = FunCall(Map(Lambda((c,), g_call)), (x,))
    if uses(rest, c) == 0:
        return FunCall(Map(Lambda((q,), rest, **meta(f)), **meta(n.f)), (stage,), **meta(n))
    if not is_view(x):
        return None  # zipping x with the stages would compute x twice
    pair = Param(TupleType((elem(x), q.ptype)), c.name)
    both = substitute(rest, {c.id: FunCall(Get(0), (pair,)), q.id: FunCall(Get(1), (pair,))})
    return FunCall(Map(Lambda((pair,), both, **meta(f)), **meta(n.f)), (FunCall(Zip(2), (x, stage)),), **meta(n))


def _fuse_reduce_map(n: FunCall, order: Any) -> Node | None:
    """`map(c => reduce(f, z) << c) << map(g) << x -> map(c => reduce(f, z) << g(c)) << x`: a
    reduction split from the map computing what it reduces, joined back."""
    b = exact(_REDUCE_OF_MAP, n)
    if b is None or not _reduces(b["f"].body, b["f"].params[0]):
        return None
    f, g, x = cast(Lambda, b["f"]), b["g"], b["x"]

    body = lam([elem(x)], lambda c: substitute(f.body, {f.params[0].id: call(g, [c])}),
               [f.params[0].name], **meta(f))
    return FunCall(Map(body, **meta(n.f)), (x,), **meta(n))


def _reduces(body: Node, c: Param) -> bool:
    """Whether `body` is `reduce(f, z) << c` or `reduce(f, z) << map(h) << c`, using `c` once."""
    return exact(_REDUCTION_OF, body, {"c": c}) is not None and uses(body, c) == 1


def _inline_let(n: FunCall, order: Any) -> Node | None:
    """`let(v => body) << e -> body[v := e]` when `body` uses `v` once, outside any lambda (so `e`
    is still computed once), or `e` only arranges its inputs (a view: nothing to recompute)."""
    b = exact(_LET, n)
    if b is None:
        return None
    f = cast(Lambda, b["f"])
    v = f.params[0]
    if uses(f.body, v) != 1 or (_under_lambda(f.body, v) and not is_view(n.args[0])):
        return None

    return substitute(f.body, {v.id: n.args[0]})


def is_view(e: Node) -> bool:
    """Whether `e` only rearranges parameters (transpose, zip, get, join, split, slide, pad, maps
    of those): reading it computes nothing."""
    if isinstance(e, Param):
        return True
    return isinstance(e, FunCall) and _layout(e.f) and all(is_view(a) for a in e.args)


def _layout(f: Node) -> bool:
    """Whether applying `f` only rearranges its argument."""
    if isinstance(f, Lambda):
        return is_view(f.body)
    mapped = exact(_MAP_FUN, f)
    return has("reread", f) or (mapped is not None and _layout(mapped["g"]))


def _under_lambda(body: Node, v: Param) -> bool:
    for path, m in walk(body):
        if isinstance(m, Param) and m.id == v.id:
            node: Node = body
            for i in path:
                if isinstance(node, Lambda):
                    return True
                node = children(node)[i]
    return False


# ------------------------------------------------------------------------------- reshaping views


def _hoist_reshape(n: FunCall, order: Any) -> Node | None:
    """`map^k(p => F(V(p))) << x -> map^k(q => F(q)) << map^k(p => V(p)) << x` (k nested plain maps),
    with `V` a chain of joins and splits and every read of `p` in `F` through the same `V`: the
    dot product of a flattened window with a flattened filter (`zip(join << join << win, join <<
    join << k)`) reads the windows as `map_nd(2, join_nd(3)) << slide_nd(..)` (Listing 4.1's
    spelling) and the filters as `map(join_nd(3)) << wts`. A view computes nothing, so reading it
    before the nest or inside it is the same program; the points see the flattened operands as
    arguments of the nest. Maps the user labelled, and nests that place memories, stay as written."""
    if len(n.args) != 1:
        return None
    maps: list[Map] = []
    f: Node = n.f
    while (mapped := exact(_MAP_FUN, f)) is not None:
        maps.append(cast(Map, f))
        f = mapped["g"]
    if not maps or not (isinstance(f, Lambda) and len(f.params) == 1):
        return None
    if any(m.label for m in maps) or f.label:
        return None
    p, body = f.params[0], f.body
    if any(has("address", m) for _, m in walk(body)):
        return None
    chains = []
    for path, m in walk(body):
        if isinstance(m, Param) and m.id == p.id:
            chains.append(_reshape_chain(body, path))
    if not chains or any(c != chains[0] for c in chains[1:]):
        return None
    depth, view = chains[0]
    if not depth:
        return None
    if body == view:
        return None  # the body is the view itself: nothing around it to hoist from
    q = Param(type_of(view), p.name)
    rest = cast(Expr, _replace_equal(body, view, q))
    if mentions(rest, [p]) or _reduces(rest, q):
        return None  # a reduction of the view stays joined to it (`_fuse_reduce_map`'s form)
    hoisted: FunDecl = Lambda((p,), view)
    inner: FunDecl = Lambda((q,), rest, **meta(f))
    for m in reversed(maps):
        hoisted, inner = Map(hoisted), Map(inner, **meta(m))
    return FunCall(inner, (FunCall(hoisted, (n.args[0],)),), **meta(n))


def _reshape_chain(body: Node, path: tuple[int, ...]) -> tuple[int, Expr]:
    """The longest chain of joins and splits applied to the parameter at `path` in `body`: its
    length and its outermost call (the parameter itself for length 0)."""
    depth, top = 0, at(body, path)
    while path:
        parent = at(body, path[:-1])
        if exact(_RESHAPE, parent) is None or path[-1] != len(children(parent)) - 1:
            break
        depth, top, path = depth + 1, parent, path[:-1]
    return depth, cast(Expr, top)  # the parameter or a call


def _replace_equal(body: Node, old: Node, new: Node) -> Node:
    """`body` with every sub-term equal to `old` replaced by `new`."""
    if body == old:
        return new
    cs = children(body)
    if not cs:
        return body
    out = tuple(_replace_equal(c, old, new) for c in cs)
    return body if all(a is b for a, b in zip(out, cs)) else with_children(body, out)


_RULES = (_split_fold, _order_zip, _cancel_transposes, _column_windows, _fuse_reduce_map, _inline_let,
          _distribute_stages)
