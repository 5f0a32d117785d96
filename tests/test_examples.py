"""Every variant of every example compiles and matches numpy on small inputs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import axpy  # noqa: E402
import conv  # noqa: E402
import dot  # noqa: E402
import gemv  # noqa: E402
import matmul  # noqa: E402
import stencil2d  # noqa: E402

import lift  # noqa: E402
from lift.compile import compile  # noqa: E402


def _dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.asarray(np.dot(x.astype(np.float64), y))


CASES = {  # module, small input sizes, numpy reference
    "axpy": (axpy, (10,), lambda a, x, y: np.float64(a) * x + y),
    "dot": (dot, (13,), _dot),
    "gemv": (gemv, (24, 40), lambda a, v: a.astype(np.float64) @ v),
    "matmul": (matmul, (64, 32, 16), lambda a, bt: a.astype(np.float64) @ bt.T),
    "stencil2d": (stencil2d, (20, 36), lambda w, i: stencil2d.reference(w.astype(np.float64), i)),
    "conv": (conv, (6, 3, 8), lambda i, w: conv.reference(i.astype(np.float64), w.astype(np.float64))),
}
VARIANTS = [(name, k) for name, (module, _, _) in CASES.items() for k in range(len(module.variants()))]


@pytest.mark.device
@pytest.mark.parametrize(("name", "k"), VARIANTS, ids=[f"{n}-{k}" for n, k in VARIANTS])
def test_example_variant_matches_numpy(name: str, k: int, tmp_path: Path) -> None:
    module, sizes, reference = CASES[name]
    variant = module.variants()[k]
    arrays = module.inputs(*sizes)
    got = compile(variant.program, cache_dir=tmp_path, **variant.compile_kw)(*arrays)
    np.testing.assert_allclose(np.reshape(got, np.shape(reference(*arrays))), reference(*arrays),
                               rtol=1e-4, atol=1e-4)


# ------------------------------------------------- the vectorised variants' code

VECTORISED = {"axpy": (axpy, ("x", "y", "out")), "dot": (dot, ("x", "y")), "gemv": (gemv, ("a", "v"))}


@pytest.mark.parametrize("name", sorted(VECTORISED))
def test_vectorised_variant_uses_aligned_float8_pointers(name: str) -> None:
    """PoCL's fast form: float8 through aligned pointer casts, plain a*b+c, no vloadN/fma/mad."""
    from lift.codegen import generate

    module, buffers = VECTORISED[name]
    src = generate(module.vectorised()).source
    for b in buffers:
        assert f"((global float8*){b})[" in src
    for slow in ("vload", "vstore", "fma(", "mad(", "float16"):
        assert slow not in src


def test_vector_accumulators_stay_in_registers() -> None:
    from lift.codegen import generate

    for module in (dot, gemv):
        plan = generate(module.vectorised())
        assert "float8 acc;" in plan.source and all(b.space == "global" for b in plan.buffers)


@pytest.mark.device
def test_sizes_that_break_a_vector_width_are_rejected(tmp_path: Path) -> None:
    prog = compile(gemv.vectorised(), cache_dir=tmp_path)
    a, v = gemv.inputs(4, 12)
    with pytest.raises(lift.LiftValueError, match="as_vector\\(8\\) needs 8 to divide N, which fails for M=4, N=12"):
        prog(a, v)
