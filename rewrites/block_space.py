"""The choices of the `block_nest` point (rewrites/auto_nest.py) and their order: the domains of
its structural parameters, and the policy that puts the default first: the cost model of a
register block (`block_cost`: accumulators, loaded vectors and a broadcast in the device's
vector registers, then the loads per multiply-add), the first block of the output form
(`first_block`) and of the reduced form (`first_reduced`), the work-group of a reduced-form
kernel (`reduced_group`), and `space`, the choices of one placed point for its input sizes.
The registers are the device's (`Registers.of(device)`, from `lift.devices.Device.vector_bits`
and `vector_registers`; AVX2's 16 registers of float8 by default). `lift.decide` and the tuner
read the order; the point itself only builds what it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from lift.devices import Device
from lift.ir.nodes import Lambda, Param
from lift.userfun.facts import sums

from .auto_conv import chunk_lengths, offered
from .epilogue import Fusable, fusable
from .nest import known_size, nest_parts, rows_of
from .point import RewritePoint
from .shapes import TRANSPOSE, match_shape

LAYOUTS = ("copy", "keep", "gather", "pad")  # "pad": rewrites/auto_conv.py
# first values: the default choice (4 x 2 blocks of float8 along the output, packed); the blocks of
# 3, 5 and 6 are for sizes that powers of two do not divide (N = 1000: 2 x 5 blocks of float8)
ROWS = (4, 8, 2, 1, 6, 3, 5)
COLS = (2, 1, 4, 8, 5, 3, 6)
WIDTHS = (8, 16, 4, 1)
ALONG = ("output", "reduced")
PACKS = ("b", "ab", "a", "none")  # operands of the output form packed into panels (rewrites/packing.py)
EPILOGUES = ("fused", "kernel")  # a nest with an epilogue: applied to the accumulators, or a kernel of its own
TAILS = ("exact", "pad")  # "pad": N padded to the output form's block in B's panels (an epilogue kernel of its own)
PAD_WASTE = Fraction(1, 32)  # at most this share of padded columns in a default block


def epilogues(found: Fusable) -> tuple[str, ...]:
    """The `epilogue` choices of a nest with the epilogue `found`, the default first: fused, unless
    the epilogue reads a whole matrix (sgemm's `beta C`): a block's reads of C's rows at its end are
    scattered (a work-group's work-items take rows BM apart), where a kernel of its own streams
    them; sgemm 1024^3 on PoCL/Zen 3, interleaved, four runs: fused 18.1-23.2 ms, split 17.7-23.2
    (kernel-variant faster in three), gemm_bias_relu and mlp3 (a bias read per column) equal within
    noise, with fewer kernels fused."""
    return EPILOGUES[::-1] if any(leaf.kind == "both" for leaf in found.leaves) else EPILOGUES


REGISTERS = 16  # AVX2's vector registers: a block's accumulators, its loaded vectors and a broadcast


@dataclass(frozen=True)
class Registers:
    """The vector registers the blocks' cost model fills: `count` of them, each holding `lanes`
    floats (the device's native vector width, `lift.devices.Device.vector_bits` / 32). The default
    is AVX2's 16 registers of 8 floats; an AVX-512 target has 32 of 16."""

    count: int = REGISTERS
    lanes: int = 8

    @staticmethod
    def of(device: Device | None) -> Registers:
        """The registers of a CPU `device` from its facts (AVX2's where it has none, and off a CPU:
        a GPU's blocks are `lift.rewrites.gpu_tiles`')."""
        if device is None or device.kind != "cpu" or device.vector_bits < 128 or device.vector_registers < 1:
            return AVX2
        return Registers(device.vector_registers, device.vector_bits // 32)

    @property
    def widths(self) -> tuple[int, ...]:
        """`WIDTHS` in the order a block prefers them: the native width first."""
        return (self.lanes, *(w for w in WIDTHS if w != self.lanes)) if self.lanes in WIDTHS else WIDTHS

    def per(self, w: int) -> int:
        """The registers a vector of `w` floats takes (float16: 2 with AVX2, 1 with AVX-512)."""
        return max(1, -(-w // self.lanes))


AVX2 = Registers()


def first_block(rows: tuple[int, ...], cols: tuple[int, ...], n_out: int | None,
                 pad: bool = False, regs: Registers = AVX2) -> tuple[int, int, int] | None:
    """The default `(rows, cols, width)` of the output form among the offered `rows` and `cols`
    whose `cols * width` divides the output's `n_out` columns, chosen jointly: the first of
    `regs.widths` that fits (the native width first); then a block whose R x C accumulators, C
    loaded vectors of X and one broadcast of A fit in the `regs.count` registers (8 x 2 float8
    spills AVX2's 16); then the fewest loads per multiply-add, (R + C) / (R * C) (a step of the
    reduction loads R scalars and C vectors for R * C multiply-adds); then the domains' order
    (4 x 2 before 2 x 4: a broadcast is cheaper than a vector from the panel). On AVX2: 4 x 2
    float8 where it fits; with N = 1000 (gemm_bias_relu) 2 x 5 float8 (10 accumulators, 0.7 loads
    per multiply-add) rather than 8 x 1 (1.1): 2.51 against 3.23 ms for the 128x1000x1024
    product on PoCL/Zen 3 (hand-written kernels of both blocks, interleaved, medians of 15); 8 x 1
    float8 before 4 x 2 float4 (~1.8x). On AVX-512 (32 registers of 16 floats): 4 x 4 float16
    at N = 1024. None where no vector fits. `pad`: blocks whose columns do not divide N count too
    (B's panels padded, `tail` "pad"), native vectors and at most `PAD_WASTE` of the columns
    padding, after an equal dividing one."""
    if n_out is None:
        return None
    order = regs.widths

    def cost(b: tuple[int, int, int]) -> tuple[Any, ...]:
        r, c, w = b
        fit, loads, *rank = block_cost(r, c, (r * c + c) * regs.per(w) + 1, rows, cols, regs)
        return (order.index(w), fit, loads, n_out % (c * w) != 0, *rank)

    shapes = [(r, c, w) for w in order if w > 1 for c in cols for r in rows if n_out % (c * w) == 0
              or (pad and w == regs.lanes and Fraction(-n_out % (c * w), n_out) <= PAD_WASTE)]
    return min(shapes, key=cost) if shapes else None


SMALL_M = 256  # at most this many output rows: B's rows read along K as written, not packed
GROUP = 32  # work-items of a reduced-form block kernel's work-group


def first_reduced(rows: tuple[int, ...], cols: tuple[int, ...], w: int = 8,
                   regs: Registers = AVX2) -> tuple[int, int]:
    """The default `(rows, cols)` of the reduced form (both operands' rows read along K, one
    vector of `w` lanes of each per step): R x C accumulators and the R + C loaded vectors in the
    `regs.count` registers, then the fewest loads per multiply-add, then the domains' order (4 x 2)."""
    return min(((r, c) for r in rows for c in cols),
               key=lambda b: block_cost(b[0], b[1], (b[0] * b[1] + sum(b)) * regs.per(w), ROWS, COLS, regs))


def block_cost(r: int, c: int, used: int, rows: tuple[int, ...], cols: tuple[int, ...],
                regs: Registers = AVX2) -> tuple[Any, ...]:
    """A block's rank among the offered ones: `used` registers over `regs.count` last, then the
    loads per multiply-add, (R + C) / (R * C), then the domains' order."""
    return (used > regs.count, Fraction(r + c, r * c), rows.index(r), cols.index(c))


def reduced_group(rows: int, cols: int) -> tuple[int, int]:
    """The work-group of a reduced-form block kernel launched as a grid (column blocks in dimension
    0, row blocks in dimension 1): `GROUP` blocks, as many of B's rows as of A's (L0 * cols ~
    L1 * rows), so that both operands' rows are shared by the group (a CPU runs its work-items one
    after another): 8 x 4 for 4 x 2 blocks. On PoCL/Zen 3, tmm 128x1024x1024: 8 x 4, 16 x 4 and
    32 x 2 2.61-2.63 ms, 16 x 2 2.95, 32 x 1 3.30, the packed output form 3.98 (interleaved,
    medians of 45)."""
    l0 = 1
    while l0 * 2 <= GROUP and (l0 * 2) * cols <= (GROUP // (l0 * 2)) * rows:
        l0 *= 2
    return l0, GROUP // l0


def space(point: RewritePoint, sizes: Mapping[str, int], regs: Registers = AVX2) -> dict[str, tuple[Any, ...]]:
    """The structural choices of an automatic `block_nest` point for input `sizes`: blocks and
    widths that divide the sizes (1 where a size is unknown), `copy` first when it changes a layout;
    the first choice fills the vector registers `regs` of the device compiled for (AVX2's by default)."""
    body = point.f.body if isinstance(point.f, Lambda) else None
    parts = nest_parts(body) if body is not None else "not a lambda"
    whole = fusable(body) if isinstance(parts, str) and body is not None else None
    if isinstance(whole, Fusable):
        parts = nest_parts(whole.product)
    if isinstance(parts, str):
        return {}
    _, a, b, _, f, g = parts

    def known(size: Any) -> int | None:
        return known_size(size, sizes)

    (ka, m), (_, nn) = rows_of(a) or (1, 1), rows_of(b) or (1, 1)
    def fits(doms: tuple[int, ...], size: Any) -> tuple[int, ...]:
        v = known(size)
        return tuple(d for d in doms if v is not None and v % d == 0) or (1,)

    widths = fits(regs.widths, ka) if sums(f) else (1,)  # lane sums: an addition only
    kernels = getattr(point, "kernel", None) is not False  # False: a point inside a map
    transposed = [match_shape(TRANSPOSE, x) for x in (a, b)]  # A's, B's columns: transpose << X
    strided = kernels and any(t is not None for t in transposed)
    views = kernels and any(not isinstance(x, Param) and not (t is not None and isinstance(t["x"], Param))
                            for x, t in zip((a, b), transposed))
    layouts = tuple(x for x in LAYOUTS if x == "keep" or (x == "copy" and strided) or (x == "gather" and views)
                    or (x == "pad" and kernels and offered(a)))
    out: dict[str, tuple[Any, ...]] = {"rows": fits(ROWS, m), "cols": fits(COLS, nn), "width": widths,
                                       "layout": layouts, "along": ("reduced",), "pack": ("none",)}
    v = known(nn)
    first = first_block(out["rows"], out["cols"], v, regs=regs)
    cols = out["cols"][0] if first is None else first[1]
    along_out = tuple(w for w in regs.widths if w > 1 and v is not None and v % (cols * w) == 0)
    b_columns = transposed[1] is not None
    if (b_columns or kernels) and along_out:
        out["along"] = ALONG  # vectors along the output too (B's columns contiguous, or copied so)
        if first is not None:  # the block that fills the vector registers best comes first
            out["rows"] = (first[0], *(r for r in out["rows"] if r != first[0]))
            out["cols"] = (first[1], *(c for c in out["cols"] if c != first[1]))
        out["width"] = along_out + tuple(w for w in widths if w not in along_out)  # the first choice fits both
        out["layout"] = tuple(x for x in LAYOUTS if (x != "gather" or views) and (x != "pad" or offered(a))) \
            if kernels else ("keep",)
        out["pack"] = PACKS if kernels else ("none",)  # panels copied by kernels of their own
        if kernels and transposed[0] is not None:
            # A's rows are the given array's columns: a block's rows would stride a cache line per
            # k; A packed too (A^T B 2048^3 on PoCL 3.0-rc2/znver3, loaded 2-core machine,
            # interleaved: 317-400 ms against 587-761 with B's panels only; 1024^3 26-32 vs 33-38)
            out["pack"] = ("ab", *(x for x in out["pack"] if x != "ab"))
    if isinstance(whole, Fusable) and b_columns and kernels and v is not None and out["along"][0] == "output":
        out.update(_padded(out, whole, first, v, regs))
    if "pad" in out["layout"]:  # windows of a padded input: copy it first (rewrites/auto_conv.py)
        out["layout"] = ("pad", *(x for x in out["layout"] if x != "pad"))
        out["chunk"] = chunk_lengths(a, sizes) or (None,)
    elif _rows_first(out, a, b, known(m), widths):
        # Few output rows, both operands given as rows (A B^T: tmm): packing B's panels would cost
        # a copy of B reused by only M rows; each block reads both operands' rows along K as
        # written instead (tmm 128x1024x1024 on PoCL/Zen 3: 2.61 against 3.98 ms, 256 rows 4.97
        # against 6.34; 1024 rows 15.4 against 14.6: packed; interleaved). With an epilogue too,
        # split into a kernel of its own (the reduced form does not apply it to its sums): the
        # packing kernel was 0.6-0.7 ms of gemm_bias_relu's 2.9 (128x1024x1000; reduced and split
        # 2.21 against the fused output form's 2.89, numpy 2.78, interleaved); fused stays the
        # tuner's other choice.
        r, c = first_reduced(out["rows"], out["cols"], widths[0], regs)
        out["along"] = ("reduced", *(x for x in out["along"] if x != "reduced"))
        out["rows"] = (r, *(x for x in out["rows"] if x != r))
        out["cols"] = (c, *(x for x in out["cols"] if x != c))
        out["width"] = widths + tuple(w for w in out["width"] if w not in widths)
        out["layout"] = ("keep", *(x for x in out["layout"] if x != "keep"))
        out["pack"] = ("none", *(x for x in out["pack"] if x != "none"))
    if isinstance(whole, Fusable):  # applied to the accumulators of the output form's blocks
        fused = out["along"][0] == "output" and out["layout"][0] != "pad"
        later = out["along"] == ("reduced", "output")  # the reduced form first: fused with the output form
        out["epilogue"] = epilogues(whole) if fused else ("kernel", "fused") if later else ("kernel",)
    return out


def _padded(out: Mapping[str, Any], whole: Fusable, first: tuple[int, int, int] | None, n_out: int,
            regs: Registers = AVX2) -> dict[str, tuple[Any, ...]]:
    """The `tail` choices (and the block domains) of the output form of a nest with an epilogue
    over B = transpose << X: "pad" first where the epilogue is a kernel of its own by default (it
    reads the product from memory, truncated) and a block that does not divide N fits the
    registers better than every dividing one (sgemm at N = 1024: 4 x 3 float8, 12 accumulators,
    N padded to 1032, rather than 4 x 2). The columns that do not divide N are offered too."""
    cols = out["cols"] + tuple(c for c in COLS if c not in out["cols"])
    best = first_block(out["rows"], cols, n_out, pad=True, regs=regs)
    if best is None or best == first or n_out % (best[1] * best[2]) == 0 or epilogues(whole)[0] != "kernel":
        return {"tail": TAILS, "cols": cols}
    r, c, w = best
    return {"tail": ("pad", "exact"), "rows": (r, *(x for x in out["rows"] if x != r)),
            "cols": (c, *(x for x in cols if x != c)), "width": (w, *(x for x in out["width"] if x != w))}


def _rows_first(out: Mapping[str, Any], a: Any, b: Any, m: int | None, widths: tuple[int, ...]) -> bool:
    """Whether the reduced form comes first: both operands are inputs given as rows, the output has
    at most `SMALL_M` rows, vectors fit along K, and the output form is offered (kernels may be
    added) so the point chose between the two."""
    return (out["along"] == ALONG and isinstance(a, Param) and isinstance(b, Param) and m is not None
            and m <= SMALL_M and widths[0] > 1)

__all__ = ["LAYOUTS", "ROWS", "COLS", "WIDTHS", "ALONG", "PACKS", "EPILOGUES", "TAILS", "PAD_WASTE", "epilogues",
           "REGISTERS", "Registers", "AVX2", "first_block", "first_reduced", "block_cost", "reduced_group", "SMALL_M",
           "GROUP", "space"]
