"""Every TC of the paper in examples/tc/: translated by `lift.tc`, interpreted and compiled, equal to numpy."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import lift

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples" / "tc"
RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return (RNG.random(shape, dtype=np.float32) - 0.5).astype(np.float32)


def conv(x: np.ndarray, w: np.ndarray, sh: int = 1, sw: int = 1) -> np.ndarray:
    """out(b,o,h,w) = sum_{c,kh,kw} x(b,c,sh*h+kh,sw*w+kw) * w(o,c,kh,kw), no padding."""
    kh, kw = w.shape[2:]
    oh, ow = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw].astype(np.float64)
            out += np.einsum("bchw,oc->bohw", patch, w[:, :, i, j].astype(np.float64))
    return out


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def _sgemm():
    a, b = np.float32(1.5), np.float32(-0.5)
    A, B, C = rand(6, 5), rand(5, 7), rand(6, 7)
    return (a, b, A, B, C), b * C + a * (A @ B)


def _mv():
    A, x = rand(7, 5), rand(5)
    return (A, x), A @ x


def _fcrelu():
    x, w, bias = rand(4, 6), rand(5, 6), rand(5)
    return (x, w, bias), relu(x @ w.T + bias)


def _conv2d():
    x, w = rand(2, 3, 7, 6), rand(4, 3, 3, 2)
    return (x, w), conv(x, w)


def _sconv2d():
    x, w, bias = rand(2, 3, 9, 8), rand(4, 3, 3, 2), rand(4)
    return (x, w, bias), conv(x, w, 2, 2) + bias[None, :, None, None]


def _maxpool2x2():
    x = rand(2, 3, 6, 8)
    return (x,), x.reshape(2, 3, 3, 2, 4, 2).max(axis=(3, 5))


def _conv1d():
    x, k = rand(11), rand(4)
    return (x, k), np.array([np.dot(k, x[i:i + 4]) for i in range(8)])


def _tmm():
    A, B = rand(6, 5), rand(7, 5)
    return (A, B), A @ B.T


def _tbmm():
    X, Y = rand(3, 4, 5), rand(3, 6, 5)
    return (X, Y), np.einsum("bnm,bkm->bnk", X, Y)


def _gconv():
    x, w, bias = rand(2, 2, 3, 6, 5), rand(2, 4, 3, 3, 2), rand(4)
    out = np.stack([conv(x[:, g], w[g]) for g in range(2)], axis=1)
    return (x, w, bias), out + bias[None, None, :, None, None]


def _mlp1():
    x, w, bias = rand(4, 6), rand(5, 6), rand(5)
    return (x, w, bias), relu(x @ w.T + bias)


def _mlp3():
    x = rand(4, 6)
    w2, b2, w3, b3, w4, b4 = rand(5, 6), rand(5), rand(3, 5), rand(3), rand(2, 3), rand(2)
    o2 = relu(x @ w2.T + b2)
    o3 = relu(o2 @ w3.T + b3)
    return (x, w2, b2, w3, b3, w4, b4), (o2, o3, relu(o3 @ w4.T + b4))


def _gather():
    x, idx = rand(9), RNG.integers(0, 9, (4, 3)).astype(np.int32)
    return (x, idx), x[idx]


def _2lut():
    lut1, lut2 = rand(7, 5), rand(6, 5)
    i1, i2 = RNG.integers(0, 7, (4, 3)).astype(np.int32), RNG.integers(0, 6, (4, 2)).astype(np.int32)
    return (lut1, i1, lut2, i2), (lut1[i1].sum(axis=1), lut2[i2].sum(axis=1))


CASES = {  # file -> (function name, inputs and numpy result, constants)
    "sgemm.tc": ("sgemm", _sgemm, None), "mv.tc": ("mv", _mv, None), "fcrelu.tc": ("fcrelu", _fcrelu, None),
    "conv2d.tc": ("conv2d", _conv2d, None), "sconv2d.tc": ("sconv2d", _sconv2d, {"sh": 2, "sw": 2}),
    "maxpool2x2.tc": ("maxpool2x2", _maxpool2x2, None), "conv1d.tc": ("conv1d", _conv1d, None),
    "tmm.tc": ("tmm", _tmm, None), "tbmm.tc": ("tbmm", _tbmm, None), "gconv.tc": ("gconv", _gconv, None),
    "mlp1.tc": ("MLP1", _mlp1, None), "mlp3.tc": ("MLP3", _mlp3, None),
    "gather.tc": ("gather", _gather, None), "2lut.tc": ("2LUT", _2lut, None),
}


def program(file: str) -> lift.Lambda:
    name, _, constants = CASES[file]
    return lift.tc((EXAMPLES / file).read_text(), constants=constants, file=str(EXAMPLES / file))[name]


def check(got, want) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w)
        return
    assert np.asarray(got).shape == np.asarray(want).shape
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("file", sorted(CASES))
def test_interpret_equals_numpy(file: str) -> None:
    args, want = CASES[file][1]()
    check(lift.interpret(program(file), *args), want)


SLOW = {"conv2d.tc", "sconv2d.tc", "gconv.tc", "mlp3.tc"}  # 20-110 s of compile each on the loaded 2-core machine


@pytest.mark.device
@pytest.mark.parametrize("file", [pytest.param(f, marks=pytest.mark.slow) if f in SLOW else f for f in sorted(CASES)])
def test_compile_equals_numpy(file: str) -> None:
    args, want = CASES[file][1]()
    check(lift.compile(program(file))(*args), want)  # symbolic sizes (gconv's overflowed the sampler once)


def test_every_tc_file_is_checked() -> None:
    unchecked = {p.name for p in EXAMPLES.glob("*.tc")} - set(CASES)
    assert not unchecked


@pytest.mark.parametrize("file", ["gather.tc", "2lut.tc"])
def test_gathers_read_their_tables_through_the_gather_pattern(file: str) -> None:
    assert "gather(" in str(program(file))


@pytest.mark.device
def test_a_gather_index_input_out_of_range_is_refused_before_the_kernels_run() -> None:
    (x, idx), _ = _gather()
    prog = lift.compile(program("gather.tc"))
    bad = idx.copy()
    bad[2, 1] = 9
    with pytest.raises(lift.LiftValueError, match="out of range"):
        prog(x, bad)
    with pytest.raises(lift.LiftValueError, match="out of range"):
        lift.interpret(program("gather.tc"), x, bad)
