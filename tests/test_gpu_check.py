"""benchmarks/gpu_check.py on the attached device in quick mode (the JSON it writes), its parts
(the limit kernels, pytest's summary, the time limit of a phase), and that the float64
references it checks kernels against agree with the interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lift

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples"))

import gpu_check  # noqa: E402
import gpu_limits  # noqa: E402
import gpu_work  # noqa: E402

from lift.program import Program  # noqa: E402


def _run(tmp_path: Path, *args: str, timeout: float = 600) -> dict:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--quick", "--out", str(tmp_path), *args]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads((tmp_path / "gpu_check.json").read_text())


def _assert_row(row: dict, limit: float, budget: bool) -> None:
    assert row["default"]["check"] == "ok", row
    for kind in ("default", "tuned") if budget else ("default",):
        r = row[kind]
        assert r["check"] == "ok" and r["seconds"] > 0 and r["max_rel_error"] <= 1e-3, r
        assert r["rate"] > 0 and r["ratio"] == pytest.approx(r["rate"] / limit)
        assert r["target_met"] == (r["ratio"] >= row["target"])


@pytest.mark.device
def test_the_measure_phase_in_quick_mode_writes_checked_rates(tmp_path: Path) -> None:
    report = _run(tmp_path, "--phases", "measure", "--only", "axpy,matmul", "--tune", "0.5")
    chosen = report["device"]["chosen"]
    assert chosen["name"] == lift.devices.current().name and chosen["ctx"]
    assert any(d["usable"] and d["ctx"] == chosen["ctx"] for d in report["device"]["devices"])
    lim = report["measure"]["limits"]
    assert lim["copy"]["check"] == "ok" and lim["copy"]["gbs"] > 0
    assert lim["fma"]["check"] == "ok" and lim["fma"]["gflops"] > 0 and lim["fma"]["chains"] == gpu_limits.CHAINS
    rows = {r["name"]: r for r in report["measure"]["kernels"]}
    assert set(rows) == {"axpy", "matmul"} and report["scale"] == 2.0 ** -10
    assert rows["axpy"]["unit"] == "GB/s" and rows["matmul"]["unit"] == "GFLOP/s"
    _assert_row(rows["axpy"], lim["copy"]["gbs"], budget=True)
    _assert_row(rows["matmul"], lim["fma"]["gflops"], budget=True)
    assert rows["matmul"]["sizes"] == [[384, 384], [384, 384]]  # 4096 * 2^(-10/3), a multiple of 64
    assert set(report["phases"]) == {"device", "measure"} and report["total_seconds"] > 0


@pytest.mark.slow
@pytest.mark.device
def test_every_phase_in_quick_mode(tmp_path: Path) -> None:
    report = _run(tmp_path, "--test-files", "tests/test_device_facts.py", "--workers", "1", "--fuzz-minutes", "0.1",
                  "--limit-fuzz", "60")
    assert report["tests"]["rc"] == 0 and not report["tests"]["timed_out"], report["tests"]
    assert report["tests"]["counts"]["passed"] >= 2 and not report["tests"]["failures"]
    assert report["fuzz"]["rc"] == 0 and report["fuzz"]["table"][0].startswith("largest dimension")
    rows = report["measure"]["kernels"]
    assert [r["name"] for r in rows] == list(gpu_work.NAMES)
    assert all(r["default"]["check"] == "ok" and r["tuned"]["check"] == "ok" for r in rows), rows


@pytest.mark.device
def test_the_limit_kernels_compute_what_they_claim() -> None:
    x = np.arange(1 << 12, dtype=np.float32)
    np.testing.assert_array_equal(Program(gpu_limits.copy_plan())(x), x)
    seed = np.linspace(0, 1, 256, dtype=np.float32)
    got = Program(gpu_limits.fma_plan(100))(np.asarray(gpu_limits.FMA_ARGS, np.float32), seed)
    np.testing.assert_allclose(got, gpu_limits.fma_expected(seed, 100), rtol=1e-5)
    assert gpu_limits.fma_src(7).count("* b + c;") == gpu_limits.CHAINS and "t < 7;" in gpu_limits.fma_src(7)


@pytest.mark.parametrize("name", gpu_work.NAMES)
def test_the_references_agree_with_the_interpreter(name: str) -> None:
    w = next(w for w in gpu_work.WORKLOADS if w.name == name)
    program, args, want, amount = w.make(2.0 ** -14, True)
    got = lift.interpret(program, *args)
    assert gpu_work.check(got, want)[0] == "ok" and amount > 0


def test_pytest_counts_reads_the_summary_and_the_failures() -> None:
    out = ("....F.s\nFAILED tests/test_a.py::test_b - AssertionError: x\nERROR tests/test_c.py::test_d - E\n"
           "= 1 failed, 5 passed, 1 skipped, 2 deselected, 1 error in 3.2s =\n")
    got = gpu_work.pytest_counts(out)
    assert got["counts"] == {"failed": 1, "passed": 5, "skipped": 1, "deselected": 2, "error": 1}
    assert got["failures"] == ["tests/test_a.py::test_b - AssertionError: x", "tests/test_c.py::test_d - E"]


def test_a_phase_past_its_limit_is_interrupted_and_says_so(tmp_path: Path) -> None:
    code = ("import time\nprint('started', flush=True)\n"
            "try:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('summary')\n")
    res = gpu_check.run_limited([sys.executable, "-c", code], 2.0, tmp_path / "log")
    assert res["timed_out"] and res["seconds"] < 20 and "summary" in res["output"]
    assert (tmp_path / "log").read_text() == res["output"]
