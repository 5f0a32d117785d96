"""The GPU tiling point `gpu_tiles` for nested map-reduce (matmul, batched matmul, gemv, conv):
two-level tiling with both inputs' tiles staged in local memory (thesis 6.2.5, Listings 6.6
and 6.7 combined as in LIFT's matrix multiplication for GPUs).

    gpu_tiles(map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb)) << B)) << A
        ->  join << map_wrg(1)(as => map(join) << transpose << map_wrg(0)(bs => tile(as, bs))
                   << split(TN) << B) << split(TM) << A
    tile(as, bs) = to_global(map_lcl(1)(map_lcl(0)(id)))
                   << reduce_seq((acc, (ka, kb)) => let(la => let(lb => blocks(acc, la, lb))
                                                        << copy(kb)) << copy(ka),
                                 copy(<z>[[S]TN]TM))
                   << zip(transpose << map(split(TK)) << as, transpose << map(split(TK)) << bs)
    copy(t)        = to_local(map_lcl(1)(map_lcl(0)(id))) << t     (cooperative; dimension 0 runs
                                                                    along a row of A or B: consecutive
                                                                    work-items, consecutive addresses)
    blocks(acc, la, lb) = the BM x BN register block of each work-item (map_lcl(1) over row blocks,
                   map_lcl(0) over column blocks), loaded from `acc` into registers, updated with the
                   TK steps of the k-tile read from the local tiles, stored back into `acc`
        (A : [[T]K]M, B : [[U]K]N; f associative with neutral z; g a scalar user function of the pair)

A work-group computes a TM x TN tile of the output with (TN/BN) x (TM/BM) work-items; for each
k-tile both inputs' TM x TK and TN x TK tiles are copied into local memory, and each work-item
accumulates its BM x BN block in registers (each value read from local memory reused BN or BM
times). The tile accumulator lives in local memory between k-tiles (private memory cannot be
indexed across a `map_lcl` here). The barriers are the MAG pass's (lift/barriers): after the
copies (read-after-write) and before the next k-tile's copies (write-after-read).

Structural parameters: `tm`, `tn` (the work-group's tile), `tk` (the k-tile), `bm`, `bn` (the
register tile), `vec` (1 or 4: the copies load and store `vec` consecutive scalars as one vector,
`map(as_scalar) << to_local(map_lcl(1)(map_lcl(0)(vectorise(id, 4)))) << map(as_vector(4))`; an
aligned `float4` load from global memory where the rows' lengths and strides are multiples of 4,
the local tile read back as scalars). Their domains, the device's limits on them and the preferred first choice are
`lift.constraints.gpu_tiles` (named z3 constraints). The launch follows from the choice: the
accumulator is zeroed block by block, so the kernel's first `map_lcl`s run TN/BN and TM/BM times
and the code generator's default work-group is (TN/BN, TM/BM), with (N/TN, M/TM) groups. Loops of
at most 16 constant trips (a k-tile of TK <= 16, the register tile) are unrolled by the code
generator (`lift.codegen.c_ast.UNROLL`); the loop over k-tiles is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

from lift.arith import Cst, evaluate
from lift.constraints.gpu_tiles import ReduceSpace, TileSpace
from lift.ir import nodes as nd
from lift.ir import patterns as p
from lift.ir.nodes import FunCall, FunDecl, Lambda, Literal, UserFun, node
from lift.ir.paths import at, replace_at, walk
from lift.rules.terms import eta
from lift.typecheck import type_of
from lift.types import ArrayType
from lift.userfun.builtins import id as copy
from lift.userfun.compose import fused

from .apply import points
from .auto import PREFIX, PointPlacer, place_points
from .auto_nest import BlockNest
from .chunks import reduce_parts
from .gpu_reduce import GpuReduce, GpuRows, reduce_point, row_parts
from .nest import divides, nest_parts, rows_of
from .point import Nested, RewritePoint, constructor
from .shapes import MAP_OF, TRANSPOSE, match_shape

TILES = (64, 32, 16, 128, 8)  # a work-group's tile of the output, each dimension
K_TILES = (16, 8, 32, 4)  # the k-tile: one k step of both tiles in local memory
BLOCKS = (4, 8, 2, 1)  # a work-item's register block, each dimension
VECS = (1, 4)  # scalars per load of the copies into local memory (1 first: a choice given without it)
PARAMS = ("tm", "tn", "tk", "bm", "bn", "vec")
MIN_LENGTH = 16  # shortest reduction tiled (a k-tile of 4 at least 4 times)


def copy_local(t: Any, vec: int = 1) -> Any:
    """`t` (a 2-D array of scalars) copied by the work-group into local memory: rows over local
    dimension 1, the elements of a row over dimension 0 (consecutive work-items, consecutive
    addresses). With `vec` > 1, each work-item copies `vec` consecutive scalars as one vector
    (one aligned load and store where the row length and stride allow it: `TileSpace`'s
    "vector loads aligned"), read back as scalars."""
    if vec == 1:
        return p.to_local(p.map_lcl(lambda r: p.map_lcl(copy, dim=0) << r, dim=1)) << t
    lanes = p.vectorise(copy, vec)
    return p.map(p.as_scalar) << p.to_local(p.map_lcl(lambda r: p.map_lcl(lanes, dim=0) << r, dim=1)) \
        << p.map(p.as_vector(vec)) << t


def by_blocks(fn: Any, x: Any, bm: int, bn: int) -> Any:
    """`fn` applied to each BM x BN block of `x` ([[S]TN]TM), a block per work-item: row blocks
    over local dimension 1, column blocks over 0. As the kernel's first `map_lcl`s, their trip
    counts (TN/BN, TM/BM) are the default work-group (`lift.codegen.kernel`)."""
    def row(r: Any) -> Any:
        return p.map(p.join) << p.transpose << p.map_lcl(fn, dim=0) << p.transpose << p.map(p.split(bn)) << r

    return p.join << p.map_lcl(row, dim=1) << p.split(bm) << x


def step_fun(f: FunDecl, g: UserFun) -> Any:
    """`(acc, x, y) => f(acc, g(x, y))` as one fused user function where possible (the OpenCL
    compiler contracts a multiply-add only within one expression), else a function of three."""
    ff = eta(f)
    one = fused(ff, g, 1) if isinstance(ff, UserFun) else None
    if one is not None:
        return lambda acc, x, y: FunCall(one, (acc, x, y))
    return lambda acc, x, y: FunCall(ff, (acc, FunCall(g, (x, y))))


def tiled(a: Any, b: Any, f: FunDecl, g: UserFun, z: Literal, sizes: Mapping[str, int]) -> Any:
    """The two-level tiled nest over `a` ([[T]K]M) and `b` ([[U]K]N) (see the module)."""
    tm, tn, tk, bm, bn, vec = (sizes[k] for k in PARAMS)
    s_t = cast(Any, eta(f)).in_types[0]
    upd = step_fun(f, g)
    acc_t = ArrayType(ArrayType(s_t, Cst(tn)), Cst(tm))

    def block(q: Any, a_rows: Any) -> Any:  # q: (acc block [[S]BN]BM, B's rows [[U]TK]BN)
        def k_step(acc: Any, ab: Any) -> Any:  # ab: (BM values of A, BN values of B) at one k
            return p.map_seq(lambda ra: p.map_seq(lambda cb: upd(cb[0], ra[1], cb[1]))
                             << p.zip(ra[0], ab[1])) << p.zip(acc, ab[0])

        regs = p.to_private(p.map_seq(p.map_seq(copy))) << q[0]
        acc = p.reduce_seq(k_step, regs) << p.zip(p.transpose << a_rows, p.transpose << q[1])
        return p.to_local(p.map_seq(p.map_seq(copy))) << acc

    def blocks(acc: Any, la: Any, lb: Any) -> Any:
        def row(r: Any) -> Any:  # r: (acc rows [[S]TN]BM, A's rows [[T]TK]BM)
            acc_blocks = p.transpose << p.map(p.split(bn)) << r[0]
            return p.map(p.join) << p.transpose << p.map_lcl(lambda q: block(q, r[1]), dim=0) \
                << p.zip(acc_blocks, p.split(bn) << lb)

        return p.join << p.map_lcl(row, dim=1) << p.zip(p.split(bm) << acc, p.split(bm) << la)

    (tiles_a, k_tiles_a, view_a), (tiles_b, k_tiles_b, view_b) = _side(a, tm, tk), _side(b, tn, tk)

    def k_tile(acc: Any, kt: Any) -> Any:
        return p.let(lambda la: p.let(lambda lb: blocks(acc, view_a(la), view_b(lb))) << copy_local(kt[1], vec)) \
            << copy_local(kt[0], vec)

    def group(ar: Any, br: Any) -> Any:
        kts = p.zip(k_tiles_a(ar), k_tiles_b(br))
        zero = p.to_local(lambda x: by_blocks(p.map_seq(p.map_seq(copy)), x, bm, bn)) << Literal(z.value, acc_t)
        acc = p.reduce_seq(k_tile, zero) << kts
        return p.to_global(p.map_lcl(lambda r: p.map_lcl(copy, dim=0) << r, dim=1)) << acc

    return p.join << p.map_wrg(lambda ar: p.map(p.join) << p.transpose << p.map_wrg(
        lambda br: group(ar, br), dim=0) << tiles_b, dim=1) << tiles_a


def _side(x: Any, t: int, tk: int) -> tuple[Any, Any, Any]:
    """`(tiles, k_tiles, view)` of an operand `x` ([[T]K]M) with output tiles of `t` rows: its tiles,
    a tile's k-tiles, and the view of a k-tile's local copy as [[T]tk]t. Where `x` is `transpose << X`
    (X: [[T]M]K, B of `A x B` not given transposed), the tiles are taken from X and copied as X's
    [[T]t]tk blocks (rows along M: consecutive work-items read consecutive addresses) and read
    transposed from local memory, instead of copying strided columns."""
    if (columns := match_shape(TRANSPOSE, x)) is not None:
        return (p.transpose << p.map(p.split(t)) << columns["x"], lambda xs: p.split(tk) << xs,
                lambda local: p.transpose << local)
    return p.split(t) << x, lambda xs: p.transpose << p.map(p.split(tk)) << xs, lambda local: local


@node
class GpuTiles(RewritePoint):
    """`gpu_tiles(map(ra => map(rb => reduce(f, z) << map(g) << zip(ra, rb)) << B))`: work-group
    tiles of both inputs in local memory, a register tile per work-item (see the module)."""

    f: FunDecl
    tm: Any = None
    tn: Any = None
    tk: Any = None
    bm: Any = None
    bn: Any = None
    vec: Any = None
    known: Any = None  # ((size name, value), ..): the input sizes it was placed for
    kind: ClassVar[str] = "gpu_tiles"
    placed: ClassVar[tuple[str, ...]] = ("known",)

    def structural(self) -> dict[str, tuple[Any, ...]]:
        doms = {"tm": TILES, "tn": TILES, "tk": K_TILES, "bm": BLOCKS, "bn": BLOCKS, "vec": VECS}
        return {k: v for k, v in doms.items() if getattr(self, k) is None}

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        parts = nest_parts(call)
        if isinstance(parts, str):
            return parts
        _, a, b, r_call, f, g = parts
        sizes = {k: int(params.get(k) or getattr(self, k) or 1) for k in PARAMS}
        ra, rb = rows_of(a), rows_of(b)
        if ra is None or rb is None:
            return "A and B must be arrays of rows of scalars"
        known = dict(self.known or ())
        for k, size, what in ((sizes["tm"], ra[1], "tm"), (sizes["tn"], rb[1], "tn"), (sizes["tk"], ra[0], "tk")):
            if not divides(k, size, known):
                return f"{what} {k} does not divide {size}"
        for blk, tile in (("bm", "tm"), ("bn", "tn"), ("vec", "tk"), ("vec", "tm"), ("vec", "tn")):
            if sizes[tile] % sizes[blk]:
                return f"{blk} {sizes[blk]} does not divide {tile} {sizes[tile]}"
        if sizes["vec"] not in VECS:
            return f"vec {sizes['vec']} is not one of {VECS}"
        return tiled(a, b, f, g, r_call.args[0], sizes)


def nest_sizes(point: GpuTiles, sizes: Mapping[str, int] | None = None) -> tuple[int, int, int] | None:
    """`(M, N, K)` of the nest a `gpu_tiles` point wraps (its sizes known), or None."""
    if not isinstance(point.f, Lambda):
        return None
    parts = nest_parts(point.f.body)
    if isinstance(parts, str):
        return None
    ra, rb = rows_of(parts[1]), rows_of(parts[2])
    if ra is None or rb is None:
        return None
    env = {**dict(point.known or ()), **dict(sizes or {})}
    try:
        m, n, k = (int(evaluate(x, env)) for x in (ra[1], rb[1], ra[0]))
    except Exception:  # noqa: BLE001 - symbolic
        return None
    return m, n, k


def elem_bytes(point: GpuTiles) -> int:
    """Bytes of a scalar of the nest's inputs and accumulator (the largest)."""
    parts = nest_parts(point.f.body) if isinstance(point.f, Lambda) else "no"
    if isinstance(parts, str):
        return 4
    ts = [cast(Any, type_of(parts[1])).elem.elem, cast(Any, type_of(parts[2])).elem.elem,
          cast(Any, eta(parts[4])).in_types[0]]
    return max(getattr(getattr(t, "dtype", None), "itemsize", 4) for t in ts)


def tile_space(point: GpuTiles, device: Any, sizes: Mapping[str, int] | None = None) -> Any:
    """The point's `lift.constraints.gpu_tiles.TileSpace` on `device` (its open parameters'
    domains, fixed ones as given), or None when the nest's sizes are not known."""
    mnk = nest_sizes(point, sizes)
    if mnk is None:
        return None
    open_ = point.structural()
    doms = {k: open_.get(k, (getattr(point, k),)) for k in PARAMS}
    return TileSpace(mnk, device, doms, elem_bytes(point))


def reduce_space(point: GpuReduce | GpuRows, device: Any) -> Any:
    """The `gpu_reduce` (or `gpu_rows`: `whole`) point's `lift.constraints.gpu_tiles.ReduceSpace`
    on `device`, or None."""
    if not isinstance(point.f, Lambda):
        return None
    rows = row_parts(point.f.body) if isinstance(point, GpuRows) else None
    parts = reduce_parts(point.f.body) if rows is None else None if isinstance(rows, str) else rows[2]
    n = getattr(type_of(parts[3]), "size", None) if parts is not None else None
    if not isinstance(n, Cst):
        return None
    open_ = point.structural()
    doms = {"local": open_.get("local", (point.local,))}
    doms["chunk"] = tuple(n.value // x for x in doms["local"] if n.value % x == 0) or (1,) if rows else \
        open_.get("chunk", (getattr(point, "chunk", 1),))
    size = getattr(getattr(type_of(cast(tuple[Any, ...], parts)[1]), "dtype", None), "itemsize", 4)
    return ReduceSpace(n.value, device, doms, size, whole=rows is not None)


def gpu_points(expr: Any) -> Any:
    """`expr` with a `gpu_tiles` point (label `auto_gN`) wherever `lift.rewrites.auto.default_points`
    places a `block_nest` (nested map-reduces of constant sizes: matmul, batched matmul, conv; here
    over reductions of at least `MIN_LENGTH` elements), its other automatic points kept; without
    one, a `gpu_reduce` point on a full reduction (`reduce_point`); else `expr` itself."""
    placer = PointPlacer({})
    placer.defaults, placer.min_length = True, MIN_LENGTH  # default_points, shorter reductions too
    out = as_tiles(place_points(expr, placer))
    if out is None:  # a full reduction: a tree per work-group (rewrites/gpu_reduce.py)
        return reduce_point(expr)
    return out


def as_tiles(placed: Any) -> Any:
    """`placed` (a program with automatic points) with each automatic `block_nest` (label
    `auto_bN`) replaced by a `gpu_tiles` point (label `auto_gN`, the sizes it was placed for),
    a batch map around it made `map_wrg(2)`; None when it has none."""
    found = [(path, x) for path, x in walk(placed)
             if isinstance(x, BlockNest) and (x.label or "").startswith(PREFIX + "b")]
    out = placed
    for path, x in sorted(found, key=lambda e: -len(e[0])):
        label = PREFIX + "g" + cast(str, x.label)[len(PREFIX) + 1:]
        out = replace_at(out, path, GpuTiles(x.f, known=x.known, label=label, loc=x.loc))
        out = _batched(out, path)
    return out if found else None


def _batched(expr: Any, path: tuple[int, ...]) -> Any:
    """`expr` with the one `map` enclosing the point at `path` (a batch: batched matmul) made
    `map_wrg(2)`, the third dimension of work-groups; unchanged without one. With two enclosing
    maps the batch stays high-level (the mapping solver's)."""
    maps = [path[:k] for k in range(len(path)) if match_shape(MAP_OF, at(expr, path[:k])) is not None]
    if len(maps) != 1:
        return expr
    m = at(expr, maps[0])
    return replace_at(expr, maps[0], nd.MapWrg(cast(FunCall, m).f, dim=2, label=m.label, loc=m.loc))


def gpu_default(expr: Any, device: Any) -> tuple[Any, dict[str, dict[str, Any]]] | None:
    """`(program with gpu_tiles or gpu_reduce points, their choices)` for `lift.compile` on a GPU:
    each point's preferred valid choice (`TileSpace.first`, `ReduceSpace.first`), the other
    automatic points skipped; None when no point is placed or a space is empty."""
    placed = gpu_points(expr)
    if placed is expr:
        return None
    chosen: dict[str, dict[str, Any]] = {}
    for lab, pt in points(placed).items():
        if not isinstance(pt, (GpuTiles, GpuReduce, GpuRows)):
            chosen[lab] = {"skip": True}
            continue
        space = tile_space(pt, device) if isinstance(pt, GpuTiles) else reduce_space(pt, device)
        first = space.first() if space is not None else None
        if first is None:
            return None
        chosen[lab] = {"skip": False, **({"local": first["local"]} if isinstance(pt, GpuRows) else first)}
    return placed, chosen


gpu_tiles = constructor(GpuTiles, "gpu_tiles")

__all__ = ["GpuTiles", "gpu_tiles", "gpu_points", "as_tiles", "gpu_default", "tile_space", "reduce_space", "tiled",
           "nest_sizes", "elem_bytes", "TILES", "K_TILES", "BLOCKS", "VECS", "PARAMS", "MIN_LENGTH"]
