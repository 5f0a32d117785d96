"""Matrix products with epilogues split into a blocked product and an element-wise pass
(rewrites/epilogue.py, placed by rewrites.auto's default points)."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, fun, map, reduce, transpose, user_fun, zip
from lift.ir.nodes import Lambda
from lift.rewrites.epilogue import split_epilogue
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
    from lift.rewrites.auto import default_points
    from lift.rewrites.auto_nest import BlockNest

    placed = default_points(normalise(mlp3(16, 256, 256, 256, 16)))
    nodes = [m for _, m in walk(placed)]
    assert sum(isinstance(m, BlockNest) for m in nodes) == 3
    assert sum(isinstance(m, OclKernel) for m in nodes) >= 3  # each epilogue a kernel of its own
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
