"""The automatic `block_nest` point (rewrites/auto_nest.py): register blocks of a nested
map-reduce with vector widths and a layout change of `transpose << B`. Every structural choice of
its space preserves the interpreter's result; the compiled blocks keep their accumulators private;
user points stay authoritative."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, Size, fun, map, reduce, transpose, zip
from lift import rewrites as rw
from lift.arith import evaluate
from lift.ir.paths import walk
from lift.rewrites import block_space as an
from lift.rewrites.auto import default_points
from lift.spaces import profile_of
from programs import apply_choice

M, N, K = Size("M"), Size("N"), Size("K")


def matmul(transposed_b: bool = True):
    """C = A B with B [K][N] read through `transpose` (or B given as [N][K])."""
    if transposed_b:
        return fun([Array(Array(Float, K), M), Array(Array(Float, N), K)], lambda a, b: map(
            lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << (transpose << b)) << a)
    return fun([Array(Array(Float, K), M), Array(Array(Float, K), N)], lambda a, bt: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << bt) << a)


def batched_max():
    """A batched reduction with max: map(r => map(c => reduce(max) << map(mult) << zip(r, c)) << B) << A."""
    return fun([Array(Array(Float, K), M), Array(Array(Float, K), N)], lambda a, b: map(
        lambda r: map(lambda c: reduce(lift.max_, float("-inf")) << map(lift.mult) << zip(r, c)) << b) << a)


def conv1d():
    """Windows of x (a view: slide << pad) against N filters of 3 taps: A is gathered, B copied."""
    from lift import pad, slide

    return fun([Array(Float, M), Array(Array(Float, 3), N)], lambda x, w: map(
        lambda win: map(lambda k: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, k)) << w)
        << slide(3, 1) << pad(1, 1, 0.0) << x)


def _kinds(prog) -> dict[str, str]:
    return {lab: p.kind for lab, p in rw.points(prog).items() if rw.is_auto(lab)}


def _arrays(prog, sizes: dict[str, int], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in prog.params:
        shape, t = [], p.ptype
        while hasattr(t, "size"):
            shape.append(int(evaluate(t.size, sizes)))
            t = t.elem
        out.append(rng.random(shape, dtype=np.float32) - 0.5)
    return out


def _panels(compiled, sizes: dict[str, int], pack: str = "b") -> bool:
    """Whether the global temporaries of a compiled matmul are exactly the packed panels of `pack` (B's:
    K N elements, A's: M K; no partial sums in global memory)."""
    (m, k), (_, n) = ([int(evaluate(s, sizes)) for s in (t.size, t.elem.size)] for t in compiled.plan.param_types)
    temps = sorted(int(evaluate(b.count, sizes)) for b in compiled.plan.buffers if b.role == "temp")
    want = sorted([m * k] * ("a" in pack) + [k * n] * ("b" in pack))
    return temps == want and all(b.space == "global" for b in compiled.plan.buffers if b.role == "temp")


def test_a_matmul_nest_gets_a_block_point_with_a_layout_choice() -> None:
    sizes = {"M": 64, "N": 48, "K": 512}
    prog = rw.auto_points(matmul(), sizes)
    assert _kinds(prog) == {"auto_b0": "block_nest"}
    space = rw.auto_space(prog, sizes)["auto_b0"]
    assert space["layout"] == ("copy", "keep")  # B is read through transpose: a layout change is offered
    # divisors only; 4 x 3 float8 first (N = 48: 12 accumulators, fewer loads per multiply-add than 4 x 2)
    assert space["rows"] == (4, 8, 2, 1) and space["cols"] == (3, 2, 1, 4, 8, 6)
    assert space["pack"] == ("b", "ab", "a", "none")  # panels of the output form packed by kernels of their own
    assert space["width"] == (8, 16, 4, 1)  # widths along the output first (3 x 16 divides N = 48 too)
    assert space["along"] == ("output", "reduced")  # vectors along B's contiguous columns, or along k
    odd = rw.auto_space(rw.auto_points(matmul(), {"M": 6, "N": 5, "K": 300}), {"M": 6, "N": 5, "K": 300})["auto_b0"]
    assert odd["rows"] == (2, 1, 6, 3) and odd["cols"] == (1, 5) and odd["width"] == (4, 1)  # only divisors
    given_t = rw.auto_space(rw.auto_points(matmul(False), sizes), sizes)["auto_b0"]
    # B given as [N][K]: along k it is read as written, along the output it is copied transposed
    # first; with few rows (M = 64) reading both along k comes first, with many the packed panels
    assert given_t["layout"] == ("keep", "copy") and given_t["along"] == ("reduced", "output")
    assert given_t["pack"][0] == "none" and given_t["width"][0] == 8
    many = {**sizes, "M": 512}
    given_many = rw.auto_space(rw.auto_points(matmul(False), many), many)["auto_b0"]
    assert given_many["layout"] == ("copy", "keep") and given_many["along"] == ("output", "reduced")
    along_k = rw.auto_space(rw.auto_points(batched_max(), sizes), sizes)["auto_b0"]
    # max: no lane sums along k; along the output 3 x 16 divides N = 48 too
    assert along_k["width"] == (8, 16, 4, 1) and along_k["along"] == ("output", "reduced")


def test_user_points_stay_authoritative() -> None:
    user = fun([Array(Array(Float, K), M), Array(Array(Float, K), N)], lambda a, b: rw.tile_nested_map_reduce(
        map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << b), label="U") << a)
    placed = rw.auto_points(user, {"M": 64, "N": 64, "K": 512})
    assert placed is user  # nothing placed inside or around the user's point
    inner = fun([Array(Array(Float, K), M), Array(Array(Float, K), N)], lambda a, b: map(
        lambda r: map(lambda c: rw.reduce_chunks(reduce(lift.add, 0.0) << map(lift.mult), label="U")
                      << zip(r, c)) << b) << a)
    assert not _kinds(rw.auto_points(inner, {"M": 64, "N": 64, "K": 512}))  # a user point inside the nest


NESTS = {"matmul, transpose << B": lambda: matmul(True), "matmul, B given transposed": lambda: matmul(False),
         "batched max": batched_max, "conv1d": conv1d}


@pytest.mark.parametrize("name", sorted(NESTS))
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_every_choice_of_the_space_preserves_the_interpreters_result(name: str, data) -> None:
    sizes = {"M": data.draw(st.sampled_from([2, 4, 8, 12])), "N": data.draw(st.sampled_from([1, 4, 6, 8])),
             "K": data.draw(st.sampled_from([4, 8, 16, 48]))}
    prog = rw.auto_points(NESTS[name](), sizes, min_length=1)
    space = rw.auto_space(prog, sizes)["auto_b0"]
    choice = {k: data.draw(st.sampled_from(v)) for k, v in space.items() if k != "skip"}
    args = _arrays(prog, sizes, 0)
    want = lift.interpret(NESTS[name](), *args)
    # every choice applies, but a width offered for one form that does not fit the other
    out, _ = apply_choice(prog, "auto_b0", choice, "does not divide", "lane sums")
    np.testing.assert_allclose(lift.interpret(out, *args), want, rtol=1e-5, atol=1e-5)


def test_a_block_that_does_not_divide_is_refused_with_the_reason() -> None:
    """`block_nest` written by the user, with constant sizes: rows 4 do not divide 6."""
    prog = fun([Array(Array(Float, 8), 6), Array(Array(Float, 4), 8)], lambda a, b: rw.block_nest(map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << (transpose << b)),
        label="P", rows=4, cols=2, width=8) << a)
    outcomes: list = []
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        out = rw.apply_all(prog, outcomes=outcomes)
    assert not outcomes[0].applied and "rows 4 does not divide 6" in outcomes[0].reason
    args = _arrays(prog, {}, 1)
    np.testing.assert_allclose(lift.interpret(out, *args), args[0] @ args[1], rtol=1e-5)
    ok = rw.apply_all(prog, {"P": {"rows": 2, "along": "reduced"}}, outcomes=outcomes)
    assert outcomes[-1].applied
    np.testing.assert_allclose(lift.interpret(ok, *args), args[0] @ args[1], rtol=1e-5)


@pytest.mark.device
@pytest.mark.requires_cpu_device  # the first choices of the CPU's default blocks
def test_the_default_blocks_of_matmul_compile_without_a_global_tmp_for_partial_sums() -> None:
    sizes = {"M": 16, "N": 16, "K": 64}
    prog = rw.auto_points(matmul())  # symbolic sizes: placed
    a, b = _arrays(prog, sizes, 2)
    compiled = lift.compile(prog)  # the point's first choices: 4 x 2 blocks of float8 along the output, B packed
    assert compiled.choices.points["auto_b0"] == {"skip": False, "rows": 4, "cols": 2, "width": 8,
                                                  "layout": "copy", "along": "output", "pack": "b"}
    assert _panels(compiled, sizes)  # the partial sums stay in registers, the temporaries are the panels
    assert "float8 acc[8]" in compiled.source
    np.testing.assert_allclose(compiled(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    unpacked = lift.compile(prog, choices={"auto_b0": {"rows": 8, "cols": 2, "width": 8, "pack": "none"}})
    assert not [b for b in unpacked.plan.buffers if b.role == "temp"] and "float8 acc[16]" in unpacked.source
    np.testing.assert_allclose(unpacked(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    copy = lift.compile(prog, choices={"auto_b0": {"rows": 4, "cols": 4, "width": 8, "along": "reduced"}})
    temps = [b for b in copy.plan.buffers if b.role == "temp"]
    # along k: the one global temporary is B's transposed copy (K x N), the accumulators are private
    assert len(temps) == 1 and temps[0].space == "global", temps
    assert evaluate(temps[0].count, sizes) == sizes["K"] * sizes["N"], temps
    np.testing.assert_allclose(copy(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    keep = lift.compile(prog, choices={"auto_b0": {"rows": 2, "cols": 4, "width": 4, "layout": "keep",
                                                   "along": "reduced"}})
    assert not [b for b in keep.plan.buffers if b.role == "temp" and b.space == "global"]
    np.testing.assert_allclose(keep(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_the_nest_inside_a_2d_map_is_found() -> None:
    """map(map(win => map(k => ..) << W)) << X (conv's shape): the inner nest gets the point."""
    prog = fun([Array(Array(Array(Float, K), N), M), Array(Array(Float, K), N)], lambda x, w: map(map(
        lambda win: map(lambda k: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, k)) << w)) << x)
    placed = rw.auto_points(prog)
    assert _kinds(placed) == {"auto_b0": "block_nest"}
    args = _arrays(prog, {"M": 3, "N": 4, "K": 8}, 3)
    out = rw.apply_all(placed, {"auto_b0": {"rows": 2, "cols": 2, "width": 4, "layout": "keep"}})
    np.testing.assert_allclose(lift.interpret(out, *args), lift.interpret(prog, *args), rtol=1e-5)
    assert not any(rw.is_point(n) for _, n in walk(out))


def test_a_nest_inside_a_map_is_not_offered_packing() -> None:
    """A nest over a batch element (not the program's input) cannot add kernels: no pack choice, and
    a pack asked for is refused with the reason (the program as written)."""
    prog = fun([Array(Array(Float, K), M), Array(Array(Array(Float, N), K), 2)], lambda a, bs: map(
        lambda b: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c))
                      << (transpose << b)) << a) << bs)
    sizes = {"M": 8, "N": 16, "K": 8}
    placed = rw.auto_points(prog, sizes, min_length=1)
    space = rw.auto_space(placed, sizes)["auto_b0"]
    assert space["pack"] == ("none",) and "output" in space["along"]
    args = _arrays(prog, sizes, 8)
    outcomes: list = []
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        kept = rw.apply_all(placed, {"auto_b0": {"rows": 2, "cols": 2, "width": 8, "pack": "ab"}}, outcomes=outcomes)
    assert not outcomes[0].applied and "kernels of their own" in outcomes[0].reason
    np.testing.assert_allclose(lift.interpret(kept, *args), lift.interpret(prog, *args), rtol=1e-5)
    done = rw.apply_all(placed, {"auto_b0": {"rows": 2, "cols": 2, "width": 8, "pack": "none"}}, outcomes=outcomes)
    assert outcomes[-1].applied
    np.testing.assert_allclose(lift.interpret(done, *args), lift.interpret(prog, *args), rtol=1e-5)


def test_a_view_argument_can_be_gathered_first() -> None:
    sizes = {"M": 16, "N": 8}
    prog = rw.auto_points(conv1d(), sizes, min_length=1)
    space = rw.auto_space(prog, sizes)["auto_b0"]
    assert space["layout"] == ("pad", "copy", "keep", "gather") and space["along"] == ("output", "reduced")
    args = _arrays(prog, sizes, 5)
    out = rw.apply_all(prog, {"auto_b0": {"rows": 4, "cols": 1, "width": 8, "layout": "gather", "along": "output"}})
    kernels = [n for _, n in walk(out) if isinstance(n, lift.ir.nodes.OclKernel)]
    assert len(kernels) == 3  # the windows gathered, the filters transposed, the blocks
    np.testing.assert_allclose(lift.interpret(out, *args), lift.interpret(conv1d(), *args), rtol=1e-5)


@pytest.mark.device
def test_the_default_compile_of_a_constant_size_matmul_uses_register_blocks() -> None:
    """`lift.compile` of the plain program (constant sizes): the point's first valid choices, private
    accumulators and no global tmp; `Program.choices` rebuild it; symbolic sizes stay as written."""
    m, n, k = 16, 32, 256
    prog = fun([Array(Array(Float, k), m), Array(Array(Float, n), k)], lambda a, b: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << (transpose << b)) << a)
    a, b = _arrays(prog, {}, 4)
    compiled = lift.compile(prog)
    assert compiled.choices.points["auto_b0"]["along"] == "output" and not compiled.choices.points["auto_b0"]["skip"]
    width = compiled.choices.points["auto_b0"]["width"]
    assert width == an.Registers.of(profile_of(compiled.device)).lanes, (width, compiled.device)  # native vectors
    assert _panels(compiled, {}) and f"bcast{width}_float" in compiled.source
    np.testing.assert_allclose(compiled(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert lift.compile(prog, choices=compiled.choices).source == compiled.source
    assert "auto_b0" not in lift.compile(matmul()).choices.points  # symbolic sizes: no default blocks


def _constant_matmul(m: int, n: int, k: int):
    return fun([Array(Array(Float, k), m), Array(Array(Float, n), k)], lambda a, b: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << (transpose << b)) << a)


@pytest.mark.device
@pytest.mark.requires_cpu_device
def test_the_default_blocks_launch_in_groups_one_column_block_wide_on_a_cpu() -> None:
    """On a CPU the default register blocks are launched as the tuner's first seed launches them
    (lift.compile._grid_launch): column blocks in dimension 0, row blocks in dimension 1, groups of
    1 x 64 blocks; `Program.choices` hold the launch and rebuild the program."""
    prog = _constant_matmul(256, 256, 256)
    compiled = lift.compile(prog)
    launch = compiled.choices.launch
    assert (launch["local_size_0"], launch["local_size_1"]) == (1, 64), launch
    (main,) = [nd for nd in compiled.ndrange if nd.kernel == "lift_main"]
    block = compiled.choices.points["auto_b0"]  # 4 x 2 float8 on AVX2, 4 x 4 float16 on AVX-512
    per_block = (256 // (block["cols"] * block["width"]), 256 // block["rows"])
    assert tuple(int(evaluate(g, {})) for g in main.global_size) == per_block  # a work-item per block
    assert tuple(int(evaluate(s, {})) for s in main.local_size) == (1, 64)
    a, b = _arrays(prog, {}, 7)
    np.testing.assert_allclose(compiled(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert lift.compile(prog, choices=compiled.choices).source == compiled.source


def test_the_default_on_a_gpu_profile_is_local_tiles_not_register_blocks() -> None:
    """Groups one column block wide suit a CPU's work-items, which run one after another; on a GPU
    profile the default is the GPU space's first point (rewrites/gpu_tiles.py, tests/test_gpu_space.py),
    with no launch choice: its work-group is the code generator's default."""
    compiled = lift.compile(_constant_matmul(32, 64, 256), device=lift.devices.profile("nvidia"))
    assert compiled.device.kind == "gpu" and not compiled.choices.points["auto_g0"]["skip"]
    assert "auto_b0" not in compiled.choices.points and not compiled.choices.launch


@pytest.mark.device
@pytest.mark.parametrize("pack", ["ab", "b", "a"])
def test_packed_panels_compile_and_match_numpy(pack: str) -> None:
    """Every `pack` choice compiled on the device: the panels are kernels of their own and the result
    is the interpreter's (matmul with `transpose << B`, sizes that leave several blocks each way)."""
    sizes = {"M": 8, "N": 32, "K": 12}
    prog = rw.auto_points(matmul(), sizes, min_length=1)
    a, b = _arrays(prog, sizes, 6)
    compiled = lift.compile(prog, choices={"auto_b0": {"rows": 2, "cols": 2, "width": 8, "pack": pack}})
    temps = sorted(int(evaluate(x.count, sizes)) for x in compiled.plan.buffers if x.role == "temp")
    assert temps == sorted([8 * 12] * ("a" in pack) + [12 * 32] * ("b" in pack))
    assert len(compiled.plan.kernels) == 1 + len(pack)
    np.testing.assert_allclose(compiled(a, b), lift.interpret(matmul(), a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.device
@pytest.mark.parametrize("name", ["matmul, B given transposed", "conv1d"])
def test_packing_reads_through_views(name: str) -> None:
    """The panels of B given as [N][K] (read through a transpose) and of conv1d's windows (a view of
    the padded input, gathered while packing) compiled on the device."""
    sizes = {"M": 16, "N": 8, "K": 16}
    prog = rw.auto_points(NESTS[name](), sizes, min_length=1)
    args = _arrays(prog, sizes, 7)
    compiled = lift.compile(prog, choices={"auto_b0": {"rows": 4, "cols": 1, "width": 8, "pack": "ab"}})
    assert len(compiled.plan.kernels) == 3
    np.testing.assert_allclose(compiled(*args), lift.interpret(NESTS[name](), *args), rtol=1e-5, atol=1e-5)


def _constant_tmm(m: int, n: int, k: int):
    """A B^T with B given [N][K] (both operands read along K)."""
    return fun([Array(Array(Float, k), m), Array(Array(Float, k), n)], lambda a, b: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << b) << a)


@pytest.mark.device
@pytest.mark.requires_cpu_device
def test_a_small_m_a_b_transposed_reads_both_operands_along_k_in_square_groups() -> None:
    """A B^T with few rows (M = 32 <= SMALL_M): no copy of B into panels (each would be reused by
    32 rows only); the blocks read both operands' rows along K, one float8 of each per step, and
    are launched in groups of column blocks x row blocks that share both operands' rows
    (`reduced_group`: 8 x 4 for 4 x 2 blocks, cut to the 8 row blocks there are)."""
    prog = _constant_tmm(32, 64, 64)
    compiled = lift.compile(prog)
    chosen = compiled.choices.points["auto_b0"]
    assert not chosen["skip"] and chosen["along"] == "reduced" and chosen["pack"] == "none", chosen
    assert len(compiled.kernels) == 1  # no packing kernel
    launch = compiled.choices.launch
    want = an.reduced_group(chosen["rows"], chosen["cols"])
    assert (launch["local_size_0"], launch["local_size_1"]) == (want[0], min(want[1], 32 // chosen["rows"])), launch
    a, b = _arrays(prog, {}, 9)
    np.testing.assert_allclose(compiled(a, b), a.astype(np.float64) @ b.T, rtol=1e-4, atol=1e-4)


@pytest.mark.device
@pytest.mark.requires_cpu_device
def test_a_larger_m_a_b_transposed_gets_packed_blocks_and_groups_of_row_blocks() -> None:
    """A B^T with more rows than SMALL_M: B^T's panels are packed from B's rows (reused by every
    row block) and the blocks are launched in groups one column block wide."""
    prog = _constant_tmm(an.SMALL_M + 256, 64, 64)
    compiled = lift.compile(prog)
    chosen = compiled.choices.points["auto_b0"]
    assert not chosen["skip"] and chosen["along"] == "output" and "b" in chosen["pack"], chosen
    launch = compiled.choices.launch
    assert launch["local_size_0"] == 1 and launch["local_size_1"] > 1, launch
    a, b = _arrays(prog, {}, 9)
    np.testing.assert_allclose(compiled(a, b), a.astype(np.float64) @ b.T, rtol=1e-4, atol=1e-4)


@pytest.mark.device
def test_a_batch_of_small_nests_with_short_reductions_gets_register_blocks() -> None:
    """tbmm's shape (a batch of A B^T with 40-long dot products, 6 x 6 outputs each): the nest
    inside the batch map gets the default blocks (reduced vectors: no kernels inside a map), and
    the result is the interpreter's."""
    bsz, n, m, k = 3, 6, 40, 6
    prog = fun([Array(Array(Array(Float, m), n), bsz), Array(Array(Array(Float, m), k), bsz)],
               lambda a, b: map(lambda ab: map(lambda r: map(
                   lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << ab[1]) << ab[0]) << zip(a, b))
    compiled = lift.compile(prog)
    chosen = compiled.choices.points["auto_b0"]
    assert not chosen["skip"] and chosen["along"] == "reduced" and chosen["width"] == 8, chosen
    a, b = _arrays(prog, {}, 10)
    np.testing.assert_allclose(compiled(a, b), np.einsum("bnm,bkm->bnk", a.astype(np.float64), b),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(compiled(a, b), lift.interpret(prog, a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n,first", [(1000, (2, 5, 8)), (1024, (4, 2, 8)), (768, (4, 3, 8)), (12, (4, 3, 4)),
                                     (8, (8, 1, 8))])
def test_the_first_block_fills_the_vector_registers_jointly(n: int, first: tuple[int, int, int]) -> None:
    """The default (rows, cols, width) of the output form is chosen together: the widest vector
    that divides N, then the block with the fewest loads per multiply-add whose accumulators,
    loaded vectors and broadcast fit AVX2's 16 registers: with N = 1000 (gemm_bias_relu) cols 2
    would leave float4 only, and 2 x 5 float8 (10 accumulators) loads less than 8 x 1; 4 x 2
    float8 where 3 or 5 columns do not divide (4 x 4 and 8 x 2 spill); 4 x 3 where they do."""
    prog = default_points(_constant_tmm(an.SMALL_M * 2, n, 64))  # many rows: the output form first
    doms = rw.auto_space(prog, {})["auto_b0"]
    assert doms["along"][0] == "output" and (doms["rows"][0], doms["cols"][0], doms["width"][0]) == first, doms
