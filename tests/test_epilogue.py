"""Matrix products with epilogues split into a blocked product and an element-wise pass
(rewrites/epilogue.py, placed by rewrites.auto's default points)."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, fun, map, reduce, transpose, user_fun, zip
from lift.devices import profile
from lift.ir.nodes import Lambda
from lift.rewrites import block_space as an
from lift.rewrites.epilogue import Fusable, fusable, split_epilogue
from lift.rules.normalise import normalise
from lift.userfun.builtins import neg


@user_fun
def axpby(alpha: Float, ab: Float, beta: Float, c: Float) -> Float:
    return alpha * ab + beta * c


@user_fun
def bias_relu(x: Float, b: Float) -> Float:
    y = x + b
    return y if y > 0.0 else 0.0


def _dot(xs, ys):
    return reduce(lift.add, 0.0) << map(lift.mult) << zip(xs, ys)


def sgemm(m: int, k: int, n: int):
    """alpha A B + beta C, the TC paper's sgemm."""
    return fun([Float, Array(Array(Float, k), m), Array(Array(Float, n), k), Array(Array(Float, n), m), Float],
               lambda alpha, a, b, c, beta: map(lambda rc: map(
                   lambda cc: axpby(alpha, _dot(rc[0], cc[0]), beta, cc[1])) << zip(transpose << b, rc[1]))
               << zip(a, c))


def fc_relu(m: int, k: int, n: int):
    """relu(X W^T + bias)."""
    return fun([Array(Array(Float, k), m), Array(Array(Float, k), n), Array(Float, n)],
               lambda x, w, bias: map(lambda r: map(lambda wb: bias_relu(_dot(r, wb[0]), wb[1])) << zip(w, bias))
               << x)


def _args(prog, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for p in prog.params:
        t, shape = p.ptype, []
        while isinstance(t, lift.types.ArrayType):
            shape.append(int(t.size.value) if hasattr(t.size, "value") else int(t.size))
            t = t.elem
        out.append(rng.uniform(-1, 1, tuple(shape)).astype(np.float32) if shape else np.float32(0.75))
    return out


@pytest.mark.parametrize("make", [sgemm, fc_relu])
def test_the_split_means_the_same(make) -> None:
    prog = normalise(make(8, 12, 16))
    split = split_epilogue(prog.body)
    assert split is not None
    args = _args(prog)
    np.testing.assert_allclose(lift.interpret(Lambda(prog.params, split), *args), lift.interpret(prog, *args),
                               rtol=1e-5, atol=1e-5)


def test_plain_products_and_other_nests_are_not_split() -> None:
    plain = fun([Array(Array(Float, 8), 8), Array(Array(Float, 8), 8)],
                lambda a, b: map(lambda r: map(lambda c: _dot(r, c)) << b) << a)
    assert split_epilogue(plain.body) is None
    two = fun([Array(Array(Float, 8), 8), Array(Array(Float, 8), 8)],  # two reductions per output
              lambda a, b: map(lambda r: map(lambda c: lift.mult(_dot(r, c), reduce(lift.add, 0.0) << r))
                               << b) << a)
    assert split_epilogue(normalise(two).body) is None
    computed = fun([Array(Array(Float, 8), 8), Array(Array(Float, 8), 8)],  # the epilogue reads a computed row
                   lambda a, b: map(lambda r: map(lambda c: lift.mult(_dot(r, c), r[0])) << b) << map(map(neg)) << a)
    assert split_epilogue(normalise(computed).body) is None


@pytest.mark.device
@pytest.mark.parametrize("make", [sgemm, fc_relu])
def test_products_with_epilogues_get_register_blocks_by_default(make) -> None:
    prog = make(128, 256, 256)
    k = lift.compile(prog)
    assert any(lab.startswith("auto_b") for lab in k.choices.points), k.choices.points
    args = _args(prog, seed=1)
    np.testing.assert_allclose(k(*args), lift.interpret(prog, *args), rtol=1e-4, atol=1e-4)


def mlp3(m: int, k: int, n: int, h: int, w: int):
    """Three fully connected ReLU layers (the TC paper's MLP3), each layer's product blocked."""
    def layer(x, wt, b):
        return map(lambda r: map(lambda wb: bias_relu(_dot(r, wb[0]), wb[1])) << zip(wt, b)) << x
    return fun([Array(Array(Float, k), m), Array(Array(Float, k), n), Array(Float, n), Array(Array(Float, n), h),
                Array(Float, h), Array(Array(Float, h), w), Array(Float, w)],
               lambda x, w1, b1, w2, b2, w3, b3: layer(layer(layer(x, w1, b1), w2, b2), w3, b3))


def test_a_layer_chain_blocks_every_layer_in_kernels_of_its_own() -> None:
    from lift.ir.nodes import OclKernel
    from lift.ir.paths import walk
    from lift.rewrites import apply_all
    from lift.rewrites.auto import auto_space, default_points
    from lift.rewrites.auto_nest import BlockNest

    placed = default_points(normalise(mlp3(16, 256, 256, 256, 16)))
    blocks = [m for _, m in walk(placed) if isinstance(m, BlockNest)]
    assert len(blocks) == 3
    for b in blocks:  # each layer's point holds its epilogue (fused into its blocks by default)
        assert isinstance(fusable(b.f.body), Fusable)
        assert b.kernel is True
    first = {lab: {k: v[0] for k, v in doms.items() if k != "skip"} for lab, doms in auto_space(placed).items()}
    applied = apply_all(placed, lift.Choices(points=first))
    assert sum(isinstance(m, OclKernel) for _, m in walk(applied)) >= 3  # each layer a kernel of its own
    small = mlp3(4, 8, 8, 8, 4)
    args = _args(small)
    np.testing.assert_allclose(lift.interpret(default_points(normalise(small)), *args), lift.interpret(small, *args),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.device
def test_a_layer_chain_compiles_to_blocked_layers() -> None:
    prog = mlp3(16, 256, 256, 256, 16)
    k = lift.compile(prog)
    assert sum(lab.startswith("auto_b") for lab in k.choices.points) == 3, k.choices.points
    args = _args(prog, seed=2)
    np.testing.assert_allclose(k(*args), lift.interpret(prog, *args), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------- fused into the blocks


@user_fun
def scale_row(x: Float, s: Float) -> Float:
    return x * s


def row_scaled(m: int, k: int, n: int):
    """diag(s) A B^T: the epilogue reads a value per output row."""
    return fun([Array(Array(Float, k), m), Array(Float, m), Array(Array(Float, k), n)],
               lambda a, s, b: map(lambda rs: map(lambda c: scale_row(_dot(rs[0], c), rs[1])) << b) << zip(a, s))


def relu_of_sum(m: int, k: int, n: int):
    """max(X W^T + b, 0) written with built-ins and a literal (as `lift.tc` writes MLP layers)."""
    return fun([Array(Array(Float, k), m), Array(Array(Float, k), n), Array(Float, n)],
               lambda x, w, bias: map(lambda r: map(lambda wb: lift.max_(lift.add(_dot(r, wb[0]), wb[1]), 0.0))
                                      << zip(w, bias)) << x)


FUSABLE = {"sgemm": (sgemm, ("scalar", "scalar", "both")), "fc_relu": (fc_relu, ("col",)),
           "row_scaled": (row_scaled, ("row",)), "relu_of_sum": (relu_of_sum, ("col",))}


@pytest.mark.parametrize("name", sorted(FUSABLE))
def test_the_epilogue_is_found_with_what_it_reads(name: str) -> None:
    make, kinds = FUSABLE[name]
    prog = normalise(make(8, 16, 16))
    found = fusable(prog.body)
    assert isinstance(found, Fusable), found
    assert tuple(leaf.kind for leaf in found.leaves) == kinds
    assert all(isinstance(leaf.value, lift.ir.nodes.Param) for leaf in found.leaves)  # inputs, read in place
    assert len(found.fun.params) == 1 + len(kinds)


def test_an_epilogue_reading_what_is_not_an_input_element_is_not_fused() -> None:
    computed = fun([Array(Array(Float, 8), 8), Array(Array(Float, 8), 8)],  # the epilogue reads a computed row
                   lambda a, b: map(lambda r: map(lambda c: lift.mult(_dot(r, c), r[0])) << b) << map(map(neg)) << a)
    assert isinstance(fusable(normalise(computed).body), str)
    summed = fun([Array(Array(Float, 8), 8), Array(Array(Float, 8), 8)],  # a reduction in the epilogue
                 lambda a, b: map(lambda r: map(lambda c: lift.add(_dot(r, c), reduce(lift.add, 0.0) << c))
                                  << b) << a)
    assert isinstance(fusable(normalise(summed).body), str)


def _block_kernel(prog) -> str:
    return next(k for k in prog.source.split("kernel void ")[1:] if "acc[" in k)


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(FUSABLE))
@pytest.mark.parametrize("mode", ["fused", "kernel"])
def test_fused_and_split_epilogues_compute_the_program(name: str, mode: str) -> None:
    """Both epilogue choices of the blocks equal the interpreter; fused, the product is never
    stored: one kernel fewer, the epilogue called on the accumulators' vectors."""
    make, _ = FUSABLE[name]
    prog = make(32, 64, 64)
    args = _args(prog, seed=4)
    want = lift.interpret(prog, *args)
    plain = lift.compile(prog)
    (label,) = [lab for lab in plain.choices.points if lab.startswith("auto_b")]
    chosen = {**dict(plain.choices.points[label]), "epilogue": mode}
    if chosen["along"] == "reduced":  # the default of few rows: the output form's blocks fuse the epilogue
        chosen.update(along="output", layout="copy", pack="b")
    k = lift.compile(prog, choices={label: chosen})
    assert dict(k.choices.points[label])["epilogue"] == mode
    np.testing.assert_allclose(k(*args), want, rtol=1e-4, atol=1e-4)
    other = lift.compile(prog, choices={label: {**chosen, "epilogue": "kernel" if mode == "fused" else "fused"}})
    fewer = len(k.kernels) - len(other.kernels)
    assert fewer == (-1 if mode == "fused" else 1), (k.kernels, other.kernels)
    width = dict(k.choices.points[label])["width"]  # the device's vectors: 8 on AVX2, 16 on AVX-512
    assert (f"lambda_v{width}(acc[" in _block_kernel(k)) == (mode == "fused")


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(FUSABLE))
def test_the_reduced_form_splits_its_epilogue_into_a_kernel(name: str) -> None:
    """Blocks that read both operands along K (`along` "reduced", no copies of their own) with the
    epilogue split: the product is a kernel of its own, then the epilogue's (before, the product
    was left outside every kernel and the build failed)."""
    make, _ = FUSABLE[name]
    prog = make(32, 64, 64)
    args = _args(prog, seed=7)
    plain = lift.compile(prog)
    (label,) = [lab for lab in plain.choices.points if lab.startswith("auto_b")]
    chosen = {**dict(plain.choices.points[label]), "epilogue": "kernel", "along": "reduced", "layout": "keep",
              "pack": "none", "width": 8}
    k = lift.compile(prog, choices={label: chosen})
    assert dict(k.choices.points[label])["along"] == "reduced" and len(k.kernels) == 2, k.kernels
    np.testing.assert_allclose(k(*args), lift.interpret(prog, *args), rtol=1e-4, atol=1e-4)


MANY = an.SMALL_M * 2  # output rows above SMALL_M: the output form's blocks (packed panels) by default


@pytest.mark.device
def test_the_default_fuses_a_bias_and_splits_a_matrix_read() -> None:
    """A bias read per column is applied in the blocks; sgemm's `beta C` reads C's rows at every
    block's end, scattered: its own kernel comes first, fused is the tuner's other choice."""
    relu = lift.compile(fc_relu(MANY, 64, 64))
    gemm = lift.compile(sgemm(MANY, 64, 64))
    (r,) = relu.choices.points.values()
    (g,) = gemm.choices.points.values()
    assert (r["epilogue"], g["epilogue"]) == ("fused", "kernel")
    assert lift.rewrites.auto_space(lift.rewrites.auto.default_points(normalise(sgemm(MANY, 64, 64))))[
        "auto_b0"]["epilogue"] == ("kernel", "fused")


@pytest.mark.device
def test_few_rows_of_x_w_t_read_w_along_k_and_split_the_epilogue() -> None:
    """relu(X W^T + b) with at most SMALL_M rows: W's rows read along K as given (the reduced form,
    no packed copy of W), the epilogue a kernel of its own after the product's; the fused output
    form stays the tuner's other choice."""
    prog = fc_relu(32, 64, 64)
    k = lift.compile(prog)
    (r,) = k.choices.points.values()
    assert (r["along"], r["pack"], r["epilogue"]) == ("reduced", "none", "kernel"), r
    assert len(k.kernels) == 2, k.kernels  # the product's blocks, then the epilogue
    space = lift.rewrites.auto_space(lift.rewrites.auto.default_points(normalise(prog)))["auto_b0"]
    assert space["along"] == ("reduced", "output") and space["epilogue"] == ("kernel", "fused")
    args = _args(prog, seed=3)
    np.testing.assert_allclose(k(*args), lift.interpret(prog, *args), rtol=1e-4, atol=1e-4)


@pytest.mark.device
def test_a_layer_chain_fuses_every_layers_epilogue() -> None:
    prog = mlp3(MANY, 64, 64, 64, 16)
    k = lift.compile(prog)
    assert [dict(v)["epilogue"] for v in k.choices.points.values()] == ["fused"] * 3
    assert len(k.kernels) == 6  # per layer: B's panels and the blocks
    args = _args(prog, seed=5)
    np.testing.assert_allclose(k(*args), lift.interpret(prog, *args), rtol=1e-4, atol=1e-4)


@pytest.mark.device
def test_the_layers_of_a_chain_share_the_launch_kernels_work_group_shape() -> None:
    """The launch variables size one kernel (the last layer's blocks); the other layers' block
    kernels have the same shape and get its work-groups (one column panel, the row blocks of it),
    each dimension cut to a divisor of their own trip count; the packing kernels keep the
    driver's choice."""
    prog = mlp3(MANY, 64, 1000, 64, 16)  # layer 1: N = 1000, 2 x 5 blocks
    k = lift.compile(prog)
    sized = {nd.kernel: nd.local_size for nd in k.ndrange}
    blocks = [name for name in k.kernels if name.startswith("lift_main")]
    assert len(blocks) == 3 and sorted(blocks) == ["lift_main", "lift_main_1", "lift_main_2"], k.kernels
    main = tuple(int(s) for s in sized["lift_main"])
    assert main[0] == 1 and main[1] > 1, sized
    for name in blocks:
        local = tuple(int(s) for s in sized[name])
        glob = tuple(int(s) for s in next(nd.global_size for nd in k.ndrange if nd.kernel == name))
        assert local[0] == 1 and 1 < local[1] <= main[1] and glob[1] % local[1] == 0, (name, local, glob)
    assert all(sized[name] is None for name in k.kernels if name not in blocks)  # the panels' copies
    args = _args(prog, seed=6)
    want = np.asarray(lift.interpret(prog, *args))  # three layers of float32 sums: tolerance by scale
    np.testing.assert_allclose(k(*args), want, rtol=1e-3, atol=1e-5 * float(np.abs(want).max()))


# ------------------------------------------------------------------ blocks wider than N divides: tail "pad"


@pytest.mark.device
def test_sgemm_pads_b_panels_to_a_block_that_fits_the_registers_better() -> None:
    """sgemm's epilogue is a kernel of its own, which reads the product from memory: the product may
    have more columns than N. With N = 256 on AVX2 (the `cpu-avx2` profile, compiled offline: the
    choice does not depend on the machine running the test) the blocks are 4 x 3 float8 (12
    accumulators), B's panels padded with zeros to 264 columns (11 panels); that block, run on the
    device at hand, drops the padding as the epilogue reads it."""
    prog = sgemm(64, 32, 256)
    space = lift.rewrites.auto_space(lift.rewrites.auto.default_points(normalise(prog)))["auto_b0"]
    assert space["tail"] == ("pad", "exact") and 3 in space["cols"], space
    offline = lift.compile(prog, device=profile("cpu-avx2"))
    (chosen,) = offline.choices.points.values()
    assert (chosen["tail"], chosen["rows"], chosen["cols"], chosen["width"], chosen["epilogue"]) == (
        "pad", 4, 3, 8, "kernel"), chosen
    k = lift.compile(prog, choices=offline.choices)
    assert any(int(nd.global_size[0]) == 264 // 24 for nd in k.ndrange if nd.kernel.startswith("lift_main")), k.ndrange
    args = _args(prog, seed=8)
    np.testing.assert_allclose(k(*args), lift.interpret(prog, *args), rtol=1e-4, atol=1e-4)


@pytest.mark.device
@pytest.mark.parametrize("rows, cols", [(4, 3), (2, 5), (2, 6), (1, 3)])
def test_padded_blocks_compute_the_program(rows: int, cols: int) -> None:
    """Any block with B's panels padded (N = 40 is divided by none of these widths x 8) equals the
    interpreter; the padding never reaches the result."""
    prog = sgemm(16, 64, 40)
    k = lift.compile(prog)
    (label,) = [lab for lab in k.choices.points if lab.startswith("auto_b")]
    chosen = {**dict(k.choices.points[label]), "rows": rows, "cols": cols, "width": 8, "tail": "pad",
              "epilogue": "kernel", "along": "output", "pack": "b"}
    p = lift.compile(prog, choices={label: chosen})
    assert dict(p.choices.points[label])["tail"] == "pad"
    args = _args(prog, seed=9)
    np.testing.assert_allclose(p(*args), lift.interpret(prog, *args), rtol=1e-4, atol=1e-4)


def test_padded_blocks_need_the_epilogue_a_kernel_of_its_own() -> None:
    """Fused, the epilogue would write the padded columns into the output: the point is skipped
    and says why; so for the reduced form (no panels to pad)."""
    prog = sgemm(16, 64, 40)
    placed = lift.rewrites.auto.default_points(normalise(prog))
    for extra, why in (({"epilogue": "fused"}, "epilogue 'kernel'"), ({"along": "reduced"}, "along='output'")):
        chosen = {"rows": 4, "cols": 3, "width": 8, "tail": "pad", "epilogue": "kernel", "along": "output",
                  "pack": "b", "layout": "copy", **extra}
        with pytest.warns(lift.errors.RewritePointSkipped, match=why):
            lift.rewrites.apply_all(placed, {"auto_b0": chosen})
