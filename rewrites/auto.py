"""Automatic rewrite points: a structural space derived from the program itself.

`auto_points(expr, sizes)` wraps the natural places of a program in labelled points
(labels start with `auto_`), so that `lift.tune` explores them like points the user wrote:

- a nested map-reduce `map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb)) << B) << A`
  (matmul, conv's windows x filters, batched dot products) over a reduction of at least
  `NEST_MIN_LENGTH` elements (32: the rows are reused across the other operand, so a short
  reduction pays too, e.g. tbmm's 500 batches of 26 x 26 dot products of 72) becomes a
  `block_nest` point (rewrites/auto_nest.py: register blocks, vector widths, layout of B and A;
  conv's windows read from one copy of the padded input: rewrites/auto_conv.py), placed over the
  nest's free variables so that its rewrite sees A and B whole; `map(map(..))` and
  `map(row => nest(row))` are first rewritten to a single nest (`split << nest(join << x)`) when
  that places one;
- a `reduce(f, z) [<< map(g)] << x` with `f` a built-in associative operator (`add`, `mult`,
  `max_`, `min_`) with neutral `z`, over an array of at least `MIN_LENGTH` elements (or of
  symbolic length), becomes a `reduce_chunks` point (chunk size `T_auto_rN`, a tuning
  variable; width 8, 16, 4 or 1 where the length allows it and the operator is `add`);
- a `map(uf) << x` (or `map(q => uf(q.0, ..)) << zip(..)`, or any element function of scalar
  user functions, e.g. one reading a scalar argument, or a stencil's `map(g) << slide(n, 1) <<
  pad(..) << x`) over long scalar arrays that computes the program's result (the outermost call
  of its body) becomes a `vectorise` point (width 8, 16 or 4), when that family can vectorise
  its shape (rewrites/vectorise.py, rewrites/lanes.py).

User points stay authoritative: nothing is placed inside a user point or around one, and a
program position is never wrapped twice. The points mean their bodies (the interpreter's
result is unchanged); `auto_space` gives their structural choices (`skip` first).
`default_points` places the `block_nest` points, the result's `vectorise` point and
`reduce_chunks` on reductions inside maps (gemv's rows), and only over constant sizes: what
`lift.compile` applies by default (`lift.compile._default_blocks`: the first choices of
`auto_space`; a map's width by the device).

    prog2 = auto_points(dot, {"N": 1 << 20})   # reduce_chunks[auto_r0](reduce(add, 0.0) << map(mult)) << zip(x, y)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast

from lift.arith import evaluate, free_vars
from lift.errors import LiftError
from lift.ir.nodes import (
    Expr,
    FunCall,
    Get,
    Join,
    Lambda,
    Let,
    Node,
    Pad,
    Param,
    Slide,
    Split,
    UserFun,
)
from lift.ir.paths import children, replace_at, walk, with_children
from lift.ir.registry import has
from lift.rules.match import call, either, expr, var
from lift.rules.normalise import is_view
from lift.rules.reduce import folds_in_order
from lift.rules.terms import free_ids, substitute
from lift.typecheck import type_of, typecheck
from lift.types import ArrayType

from .auto_colfold import ColFold, fold_parts
from .auto_colfold import space as fold_space
from .auto_colreduce import ColReduce
from .auto_colreduce import place as place_cols
from .auto_colreduce import space as cols_space
from .auto_nest import BlockNest
from .block_space import AVX2, Registers
from .block_space import space as nest_space
from .chunks import ReduceChunks, atomic_ok, reduce_parts, safe_widths, vector_form
from .epilogue import as_kernel, fusable, split_epilogue
from .nest import nest_parts
from .point import RewritePoint
from .shapes import IOTA, MAP, MAP_OF, REDUCE, ZIP, match_shape
from .vectorise import VectorisePoint

MIN_LENGTH = 256  # shorter reductions and maps are left as written
NEST_MIN_LENGTH = 32  # a nest's rows are reused across the other operand: blocked from 4 vectors of 8 up
MAP_WIDTHS = (8, 16, 4)  # the first: the default seed; 4 must divide a map's length
PAD_BLOCK = 1024  # lengths that are not a multiple of it get the tail step first
PREFIX = "auto_"
# a stencil's windows, `slide(size, step) << x` or `pad(left, right, value, mode) << x` (kept inside a point)
_WINDOWS = call(either(Slide(var("size"), var("step")), Pad(var("left"), var("right"), var("value"), mode=var("mode"))),
                expr("x"))


def is_auto(label: str | None) -> bool:
    """Whether a point label was placed by `auto_points`."""
    return label is not None and label.startswith(PREFIX)


def auto_points(expr: Node, sizes: Mapping[str, int] | None = None, *, min_length: int = MIN_LENGTH) -> Node:
    """`expr` with automatic points at its natural places (see the module docstring); arrays shorter
    than `min_length` are left as written."""
    placer = PointPlacer(dict(sizes or {}))
    placer.min_length = min_length
    return place_points(expr, placer)


def default_points(expr: Node) -> Node:
    """`expr` with the automatic points `lift.compile` applies by default: `block_nest` around the
    nested map-reduces whose sizes are all constants (so that the default blocks are known to divide
    them; with symbolic sizes the program is left as written), a `vectorise` point on a map of
    constant length computing the result, and `reduce_chunks` on reductions of constant length
    inside maps (a top-level reduction has its own default: rewrites/defaults.py)."""
    placer = PointPlacer({})
    placer.defaults = True
    return place_points(expr, placer)


def place_points(expr: Node, placer: PointPlacer) -> Node:
    """`expr` with `placer`'s points, or `expr` itself where it or the result does not type-check."""
    try:
        typecheck(expr)
    except LiftError:
        return expr
    placer.inputs = {p.id for p in getattr(expr, "params", ())}
    out = placer.go(expr, top=True)
    if out is expr:
        return expr
    try:
        typecheck(out)
    except LiftError:
        return expr
    return out


def auto_space(expr: Node, sizes: Mapping[str, int] | None = None, *,
               regs: Registers = AVX2) -> dict[str, dict[str, tuple[Any, ...]]]:
    """The structural choices of the automatic points of `expr` (by label, `skip` first); the
    register blocks' first choices fill the vector registers `regs` (`Registers.of(device)`)."""
    out: dict[str, dict[str, tuple[Any, ...]]] = {}
    for _, n in walk(expr):
        lab = n.label if isinstance(n, RewritePoint) else None
        if lab is None or not is_auto(lab):
            continue
        if isinstance(n, ColReduce):
            out[lab] = {"skip": (False, True), **cols_space(n, sizes)}
        elif isinstance(n, ColFold):
            out[lab] = {"skip": (False, True), **fold_space(n, sizes)}
        elif isinstance(n, BlockNest):
            out[lab] = {"skip": (False, True), **nest_space(n, sizes or {}, regs)}
        else:
            widths = _map_widths(cast(RewritePoint, n), sizes or {})
            chunks = n if isinstance(n, ReduceChunks) and isinstance(n.f, Lambda) else None
            parts = reduce_parts(cast(Lambda, chunks.f).body) if chunks is not None else None
            if parts is not None:
                widths = PointPlacer(dict(sizes or {})).widths(*parts)
            out[lab] = {"skip": (False, True), "width": widths}
            if isinstance(n, ReduceChunks):
                out[lab].update(PointPlacer(dict(sizes or {})).reduce_choices(n))
    return out


def _map_widths(point: RewritePoint, sizes: Mapping[str, int]) -> tuple[int, ...]:
    """The widths of a map's `vectorise` point: `MAP_WIDTHS` that divide the map's length (when
    known), 16 only where the user functions are safe at that width on PoCL (`safe_widths`)."""
    f = getattr(point, "f", None)
    body = f.body if isinstance(f, Lambda) else None
    if not (isinstance(body, FunCall) and len(body.args) == 1):
        return MAP_WIDTHS
    n = PointPlacer(dict(sizes)).length(body.args[0])
    funs = [m for _, m in walk(body) if isinstance(m, UserFun)]
    safe = safe_widths(funs)
    return tuple(w for w in MAP_WIDTHS if (w != 16 or 16 in safe) and (n is None or n % w == 0)) or MAP_WIDTHS


class PointPlacer:
    """Walks a program and wraps its natural places in automatic points (`auto_points`,
    `default_points`); also answers the lengths and widths those points may take."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes, self.count = sizes, 0
        self.min_length = MIN_LENGTH
        self.defaults = False  # only the points `lift.compile` applies by default (`default_points`)
        self.inputs: set[int] = set()  # the program's parameters (a point over only these may add kernels)

    def length(self, x: Any) -> int | None:
        """The length of the array `x` (None: symbolic and unknown)."""
        t = type_of(x)
        if not isinstance(t, ArrayType):
            return 0
        if {v.name for v in free_vars(t.size)} - set(self.sizes):
            return None
        try:
            return int(evaluate(t.size, self.sizes))
        except Exception:  # noqa: BLE001
            return None

    def long(self, x: Any) -> bool:
        n = self.length(x)
        return n is None or n >= self.min_length

    def label(self, kind: str) -> str:
        self.count += 1
        return f"{PREFIX}{kind}{self.count - 1}"

    def go(self, n: Node, top: bool = False) -> Node:
        if isinstance(n, RewritePoint):
            return n  # a user point: authoritative, nothing placed inside
        if isinstance(n, FunCall) and isinstance(n.f, RewritePoint):
            return n
        orig = n
        m = match_shape(MAP, n) if isinstance(n, FunCall) else None
        if isinstance(n, FunCall) and m is not None and match_shape(MAP_OF, m["f"]) is not None:
            n = _expanded(n)  # map(map(g)) << x  ->  map(row => map(g) << row) << x: a nest may be inside
        if isinstance(n, FunCall):
            n = _flattened(n) or n  # map(row => nest(row)) << x  ->  split << nest(join << x)
        if n is not orig:  # restructured only for a point placed inside
            out = self.go(n, top)
            return out if any(isinstance(x, RewritePoint) for _, x in walk(out)) else orig
        if isinstance(n, FunCall):
            placed = self.fold(n) or self.nest(n) or self.cols(n) or (self.map(n) if top else self.reduce(n)) \
                if self.defaults else \
                self.fold(n) or self.nest(n) or self.cols(n) or self.reduce(n) or (self.map(n) if top else None)
            if placed is not None:
                return placed
            placed = self.product(n, top)
            if placed is not None:
                return placed
        # the program's body is top level, and so is the value a component of it is taken from (an
        # arg-min's `get(0) << reduce`: its reduction has its own default, rewrites/defaults.py)
        inner = top and (isinstance(n, Lambda) or isinstance(n, FunCall) and isinstance(n.f, Get))
        return with_children(n, tuple(self.go(c, top=inner) for c in children(n)))

    def reduce(self, call: FunCall) -> Node | None:
        parts = reduce_parts(call)
        if parts is None:
            return None
        f, z, g, x = parts
        if not folds_in_order(f, z) or not self.long(x):
            return None
        if self.defaults and self.length(x) is None:
            return None  # symbolic length: a default width might not divide it
        ps, data, args = _abstract(x)
        xs = call.args[1]
        body_arg = dataclasses.replace(cast(Any, xs), args=(data,)) if g is not None else data
        body = Lambda(ps, dataclasses.replace(call, args=(z, body_arg)))
        point = ReduceChunks(body, label=self.label("r"), loc=call.loc)
        return FunCall(point, tuple(cast(Expr, self.go(a)) for a in args), loc=call.loc)

    def nest(self, call: FunCall) -> Node | None:
        """A `block_nest` point around a map-map-reduce nest over long rows (`auto_b`), or around
        such a nest with an element-wise epilogue the blocks apply before they store (sgemm's
        `alpha A B + beta C`, `relu(X W^T + b)`: rewrites/epilogue.py `fusable`) where it adds
        kernels of its own and the output form comes first (else `product` splits the epilogue)."""
        parts = nest_parts(call)
        whole = None
        if isinstance(parts, str):
            whole = fusable(call)
            if isinstance(whole, str):
                return None
            parts = nest_parts(whole.product)
            if isinstance(parts, str):
                return None
        fa, a, b, r_call, _, _ = parts
        k = self.length(r_call.args[1])
        if k is not None and k < min(self.min_length, NEST_MIN_LENGTH):
            return None  # too short to block (tbmm's 72-long dot products of 26 x 26 outputs are not)
        if self.defaults and any(self.length(x) is None for x in (a, b, r_call.args[1])):
            return None  # symbolic sizes: the default blocks might not divide them
        count = self.count
        mat, made = self.materialised(call, (a, b))
        if mat is None:
            self.count = count
            return None
        call = mat
        outer, body = _over_free(call)  # the nest over its free variables: A and B whole
        known = self.known()
        kernel = {x.id for x in outer} <= self.inputs | set(made)
        if whole is not None:
            point = BlockNest(body, known=known, kernel=kernel, loc=call.loc)
            if not kernel or "fused" not in nest_space(point, self.sizes).get("epilogue", ()):
                self.count = count
                return None  # the epilogue a kernel of its own: `product`
        point = BlockNest(body, known=known, kernel=kernel, label=self.label("b"), loc=call.loc)
        return FunCall(point, tuple(cast(Expr, made.get(x.id, x)) for x in outer), loc=call.loc)

    def materialised(self, call: FunCall, operands: tuple[Any, ...]) -> tuple[FunCall | None, dict[int, Node]]:
        """`call` with each operand that reduces (the previous layer of an MLP) replaced by a
        parameter, and {parameter id: the operand with its own points}, when those points give it
        kernels of its own (the nest's kernels then read it from memory); (None, {}) when they do
        not (a nest over a reduction it would recompute per block)."""
        made: dict[int, Node] = {}
        for x in operands:
            if is_view(x) or not any(match_shape(REDUCE, m) is not None for _, m in walk(x)):
                continue  # read in place (a view, or element-wise work the nest's kernels recompute)
            placed = self.go(x)
            if not any(has("kernel", m) or _fused_kernel(m) for _, m in walk(placed)):
                return None, {}
            q = Param(type_of(x), "layer")
            path = next((pth for pth, m in walk(call) if m is x), None)
            if path is None:
                return None, {}  # an operand the nest computes from its input (an epilogue's product)
            call = replace_at(call, path, q)
            made[q.id] = placed
        return call, made

    def product(self, call: FunCall, top: bool) -> Node | None:
        """A matrix product with an epilogue (`alpha A B + beta C`, `relu(X W^T + b)`) split into the
        product, which gets a `block_nest` point, and an element-wise epilogue (rewrites/epilogue.py);
        None when the product would not be blocked."""
        split = split_epilogue(call)
        if split is None:
            return None
        count = self.count
        rows = self.go(cast(FunCall, split).args[0])
        blocks = [m for _, m in walk(rows) if isinstance(m, BlockNest)]
        if not blocks:
            self.count = count  # nothing placed: the labels are not used up
            return None
        out = dataclasses.replace(cast(Any, split), args=(rows,))
        return as_kernel(out) if any(b.kernel is not False for b in blocks) else out

    def fold(self, call: FunCall) -> Node | None:
        """A `col_fold` point around a column reduction weighted by a row function of the same
        array (`auto_f`, rewrites/auto_colfold.py), over known sizes. The row function's value is
        bound once (`let`) when it was written inside the columns' function, and the body's own
        points (`col_reduce`, the row function's `reduce_chunks`) are placed inside the point for
        when it is skipped."""
        found = fold_parts(call)
        if isinstance(found, str):
            return None
        x, columns = found.x, found.columns
        if self.length(x) is None or self.length(FunCall(Join(), (x,))) is None or not self.long(FunCall(Join(), (x,))):
            return None
        let = call if isinstance(call.f, Let) else _bound(cast(FunCall, columns), found.value)
        count = self.count
        lab = self.label("f")
        inner = with_children(let, tuple(self.go(c) for c in children(let)))
        if isinstance(fold_parts(inner), str):  # X computed, and its two copies given different points
            self.count = count
            return None
        outer, body = _over_free(inner)
        point = ColFold(body, known=self.known(), label=lab, loc=call.loc)
        return FunCall(point, tuple(outer), loc=call.loc)

    def known(self) -> tuple[tuple[str, int], ...] | None:
        """The known sizes, as a point records them (`known`), or None."""
        return tuple(sorted((k, int(v)) for k, v in self.sizes.items())) or None

    def cols(self, call: FunCall) -> Node | None:
        """A `col_reduce` point around a reduction of every column (`auto_c`, rewrites/auto_colreduce.py)."""
        placed = place_cols(call, lambda: self.label("c"), self.long, self.sizes)
        return None if placed is None else dataclasses.replace(placed, args=tuple(self.go(a) for a in placed.args))

    def widths(self, f: Any, z: Any, g: Any, x: Any) -> tuple[int, ...]:
        """The vector widths `reduce_chunks` may take for `reduce(f, z) << map(g) << x` (`vector_form`):
        those its user functions run at (`safe_widths`) dividing a known length; else (1,)."""
        form = vector_form(f, z, g, x)
        if isinstance(form, str):
            return (1,)
        uf, comps, _ = form
        n = self.length(x)
        funs = [uf] if comps is None else [cf for cf, _ in comps]
        return tuple(w for w in safe_widths(funs) if n is None or n % w == 0)

    def reduce_choices(self, point: ReduceChunks) -> dict[str, tuple[Any, ...]]:
        """The combine (two kernels first; the atomic one where it applies), the tail step (first
        where the length is known and not a multiple of 1024, the largest chunk x width the tuner
        usually takes: sizes like 2176, 1000 or primes) and the neutral pad."""
        parts = reduce_parts(point.f.body) if isinstance(point.f, Lambda) else None
        if parts is None:
            return {}
        f, z, _, x = parts
        out: dict[str, tuple[Any, ...]] = {"combine": ("kernel", "atomic") if atomic_ok(f, z) else ("kernel",)}
        n = self.length(x)
        irregular = n is not None and n % PAD_BLOCK != 0
        out["tail"] = (True, False) if irregular else (False, True)
        out["pad"] = (False, True)
        return out

    def map(self, call: FunCall) -> Node | None:
        if match_shape(MAP, call) is None or not self.long(call.args[0]):
            return None
        n = self.length(call.args[0])
        if n is not None and n % MAP_WIDTHS[-1]:
            return None
        if self.defaults and n is None:
            return None  # symbolic length: a default width might not divide it
        ps, data, args = _abstract_layouts(call.args[0])
        body = dataclasses.replace(call, args=(data,))
        if isinstance(VectorisePoint(cast(Any, body)).rewrite(body, {"width": MAP_WIDTHS[-1]}, lambda f: f), str):
            return None  # a shape the vectorise point does not handle
        point = VectorisePoint(Lambda(ps, body), label=self.label("v"), loc=call.loc)
        return FunCall(point, tuple(cast(Expr, self.go(a)) for a in args), loc=call.loc)


def _over_free(call: Expr) -> tuple[list[Param], Lambda]:
    """`call`'s free parameters (by id) and `call` as a function of them: a point's body, applied
    to those parameters, sees its operands whole."""
    found: dict[int, Param] = {}
    free = free_ids(call)
    for _, m in walk(call):
        if isinstance(m, Param) and m.id in free:
            found.setdefault(m.id, m)
    outer = sorted(found.values(), key=lambda x: x.id)
    ps = tuple(Param(x.ptype, f"xs{i}") for i, x in enumerate(outer))
    return outer, Lambda(ps, substitute(call, {x.id: q for x, q in zip(outer, ps)}))


def _bound(columns: FunCall, value: Expr) -> FunCall:
    """`let(t => columns') << value` for a column reduction whose row operand `value` (the same
    for every column: `col_parts` checked that it does not mention the column) is written inside it."""
    path = next(pth for pth, m in walk(columns) if m is value)
    t = Param(type_of(value), "t")
    return FunCall(Let(Lambda((t,), replace_at(columns, path, t))), (value,), loc=columns.loc)


def _fused_kernel(m: Node) -> bool:
    """Whether `m` is a `block_nest` point over a nest with an epilogue that adds kernels: fused or
    split, its result is a kernel's (rewrites/auto_nest.py)."""
    return (isinstance(m, BlockNest) and m.kernel is not False and isinstance(m.f, Lambda)
            and not isinstance(fusable(m.f.body), str))


def _flattened(call: FunCall) -> FunCall | None:
    """`split(n) << map(f) << join << x` for `map(row => map(f) << row) << x` when `map(f)` is a
    map-map-reduce nest over the rows (its outer maps flattened into one), else None."""
    m = match_shape(MAP, call)
    if m is None or not isinstance(m["f"], Lambda):
        return None
    lam_, x = m["f"], m["x"]
    body = lam_.body
    inner = match_shape(MAP, body)
    if not (isinstance(body, FunCall) and len(lam_.params) == 1 and inner is not None and inner["x"] == lam_.params[0]):
        return None
    if any(isinstance(m, Param) and m.id == lam_.params[0].id for _, m in walk(body.f)):
        return None
    if isinstance(nest_parts(body), str):
        return None
    row_t = type_of(x)
    if not (isinstance(row_t, ArrayType) and isinstance(row_t.elem, ArrayType)):
        return None
    flat = FunCall(body.f, (FunCall(Join(), (x,)),), loc=body.loc)
    return FunCall(Split(row_t.elem.size), (flat,), loc=call.loc)


def _expanded(call: FunCall) -> FunCall:
    """`map(row => map(g) << row) << x` for `map(map(g)) << x` (the same function)."""
    t = type_of(call.args[0])
    assert isinstance(t, ArrayType)  # the argument of a map
    row = Param(t.elem, "row")
    return dataclasses.replace(call, f=dataclasses.replace(cast(Any, call.f),
                                                           f=Lambda((row,), FunCall(cast(Any, call.f).f, (row,)))))


def _abstract_layouts(x: Any) -> tuple[tuple[Param, ...], Any, tuple[Any, ...]]:
    """`_abstract` with a stencil's `slide` and `pad`s kept inside the point (its rewrite reads
    the windows from the array: rewrites/lanes.py)."""
    if (window := match_shape(_WINDOWS, x)) is not None:
        ps, data, args = _abstract_layouts(window["x"])
        return ps, dataclasses.replace(x, args=(data,)), args
    return _abstract(x)


def _positions(a: Any) -> bool:
    """`iota(n)`: a view with no argument (rewrites/argbest.py reads the positions in the point)."""
    return match_shape(IOTA, a) is not None


def _abstract(x: Any) -> tuple[tuple[Param, ...], Any, tuple[Any, ...]]:
    """`(params, data, args)`: `x` as a function of its arrays, the zip kept inside the point
    (a point's rewrite sees its body applied to parameters, so a zip must be in the body)."""
    if match_shape(ZIP, x) is not None:  # positions (`iota`, no buffer) stay inside too
        inner = {i: Param(type_of(a), f"xs{i}") for i, a in enumerate(x.args) if not _positions(a)}
        body = tuple(inner.get(i, a) for i, a in enumerate(x.args))
        return tuple(inner.values()), dataclasses.replace(x, args=body), tuple(x.args[i] for i in inner)
    p = Param(type_of(x), "xs")
    return (p,), p, (x,)


__all__ = ["auto_points", "auto_space", "default_points", "is_auto", "MIN_LENGTH", "NEST_MIN_LENGTH", "PREFIX"]
