"""benchmarks/peers.py (issue 27 item 6): the peer compilers are an optional extra; without them
the seeds table says why and goes on; with them each row gets the best peer's time."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import peers  # noqa: E402
import seeds  # noqa: E402
from seed_programs import SEEDS  # noqa: E402


@pytest.fixture
def no_peers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LIFTCL_PEERS_PYTHON", str(tmp_path / "absent" / "python"))
    monkeypatch.delenv("PEERS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def test_without_a_peers_venv_every_peer_is_not_installed(no_peers: None) -> None:
    assert peers.peer_python() is None
    assert set(peers.status().values()) == {"not installed"}
    assert peers.best("col_sums", (np.zeros((4, 4), np.float32),), np.zeros(4)) == {"why": "peers not installed"}


def test_a_python_without_tinygrad_reports_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """This venv has no tinygrad: the child process says so, the parent does not fail."""
    pytest.importorskip("numpy")
    if __import__("importlib").util.find_spec("tinygrad") is not None:
        pytest.skip("tinygrad is installed in this python")
    monkeypatch.setenv("LIFTCL_PEERS_PYTHON", sys.executable)
    got = peers.status(timeout=120)
    assert got["tinygrad-cl"] == "not installed (tinygrad)" and got["tinygrad-cpu"] == "not installed (tinygrad)"
    best = peers.best("col_sums", (np.ones((4, 4), np.float32),), np.full(4, 4.0), timeout=120)
    assert "peer" not in best and "not installed (tinygrad)" in best["why"]


def test_every_seed_workload_has_a_tinygrad_program() -> None:
    assert {s.name for s in SEEDS} <= set(peers._tinygrad_programs())


def test_a_row_prints_the_best_peer_and_numpys_ratio_over_it() -> None:
    row = {"name": "col_sums", "sizes": [8, 4], "status": "ok", "kernel_s": 2e-3, "numpy_s": 1e-3,
           "peer": "tinygrad-cl", "peer_s": 4e-3, "peers": {"tinygrad-cl": 4e-3}}
    line = seeds.format_row(row)
    assert "tinygrad-cl" in line and "4.000 ms" in line and "x  0.250" in line
    assert seeds.format_row({**row, "peer": None, "peer_s": None, "peers": "peers not installed"}).endswith("peers -")
