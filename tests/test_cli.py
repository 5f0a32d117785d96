"""The `lift` command, driven through subprocesses on the default device: every subcommand,
exit statuses, a second tune from the database, a tune killed midway and resumed, and four
concurrent tunes of one program sharing one database."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from programs import DOT_PROGRAM_FILE

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = DOT_PROGRAM_FILE


def lift_cmd(*args: str, db: Path | None = None, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, **({"LIFTCL_TUNING_DB": str(db)} if db else {})}
    return subprocess.run([sys.executable, "-m", "lift", *args], capture_output=True, text=True, env=env,
                          timeout=kw.pop("timeout", 300), cwd=kw.pop("cwd", None), **kw)


def start(*args: str, db: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lift", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "LIFTCL_TUNING_DB": str(db)})


@pytest.fixture()
def prog(tmp_path: Path) -> Path:
    path = tmp_path / "dotprog.py"
    path.write_text(PROGRAM)
    return path


def finished_rows(db: Path) -> dict[str, float]:
    """{candidate: stored time} of the finished candidates."""
    if not db.exists():
        return {}
    try:
        with sqlite3.connect(db, timeout=30) as raw:
            return dict(raw.execute("SELECT cand, stored FROM candidates WHERE record IS NOT NULL").fetchall())
    except sqlite3.Error:
        return {}


def test_help_everywhere_and_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from lift.cli import main

    for sub in ((), ("tune",)):  # through the console entry, as a user types it
        got = lift_cmd(*sub, "--help")
        assert got.returncode == 0 and "usage: lift" in got.stdout, sub
    for sub in (("devices",), ("show",), ("bench",), ("db",)):  # in this process: each start costs a second
        with pytest.raises(SystemExit) as done:
            main([*sub, "--help"])
        assert done.value.code == 0 and f"usage: lift {sub[0]}" in capsys.readouterr().out
    assert lift_cmd().returncode == 2
    missing = lift_cmd("tune", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "lift: " in missing.stderr and "no such file" in missing.stderr
    (tmp_path / "empty.py").write_text("x = 1\n")
    assert "no module-level `program`" in lift_cmd("show", str(tmp_path / "empty.py")).stderr
    assert lift_cmd("db", "show", "zzzz", db=tmp_path / "db.sqlite").returncode == 2


@pytest.mark.device
def test_devices_lists_the_default_and_the_profiles() -> None:
    got = lift_cmd("devices")
    assert got.returncode == 0 and "default:" in got.stdout and "mali-g72" in got.stdout
    data = json.loads(lift_cmd("devices", "--json").stdout)
    assert data["default"] in {d.get("key") for d in data["devices"] if d["usable"]}


@pytest.mark.device
def test_show_prints_notation_type_choices_constraints_and_source(prog: Path) -> None:
    got = lift_cmd("show", str(prog), "--inputs", "256")
    assert got.returncode == 0, got.stderr
    out = got.stdout
    for part in ("program:", "reduce(", "type:", "=> Float", "choices:", "constraints:", "kernel void"):
        assert part in out, part
    mapped = prog.with_name("mulprog.py")
    mapped.write_text(PROGRAM.replace("reduce(lift.add, 0.0) << ", ""))  # an elementwise product: one map
    chosen = lift_cmd("show", str(mapped), "--choices", '{"m0": 0}')
    assert chosen.returncode == 0, chosen.stderr
    assert "m0 = 0 (map_seq)" in chosen.stdout  # a map's Table 5.2 code in words
    assert "map_glb" in lift_cmd("show", str(mapped)).stdout  # the solver's mapping
    bad = lift_cmd("show", str(prog), "--choices", "{nope")
    assert bad.returncode == 2 and "not JSON" in bad.stderr
    assert "run the program above: nothing to specialise" in got.stdout  # a dot product: the generic program


@pytest.mark.device
def test_show_prints_what_a_call_with_the_inputs_runs(tmp_path: Path) -> None:
    """A matmul with symbolic sizes specialises to the inputs' sizes (lift/specialise.py): show prints that program."""
    path = tmp_path / "mm.py"
    path.write_text(textwrap.dedent("""\
        import numpy as np

        import lift
        from lift import Array, Float, Size, fun, map, reduce, transpose, zip

        M, N, K = Size("M"), Size("N"), Size("K")
        program = fun([Array(Array(Float, K), M), Array(Array(Float, N), K)], lambda a, b: map(lambda r: map(
            lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << (transpose << b)) << a)


        def inputs(m=16, n=32, k=256):
            rng = np.random.default_rng(0)
            return rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
        """))
    got = lift_cmd("show", str(path))
    assert got.returncode == 0, got.stderr
    assert "run it specialised to K=256, M=16, N=32 (default points auto_b0" in got.stdout
    assert got.stdout.count("kernel void") > 1 and "specialised OpenCL source" in got.stdout


@pytest.mark.device
def test_tune_then_again_from_the_database_then_db_commands(prog: Path, tmp_path: Path) -> None:
    db = tmp_path / "tuning.sqlite"
    out = tmp_path / "result.json"
    first = lift_cmd("tune", str(prog), "--budget", "3", "--json", str(out), "--plot", str(tmp_path / "f.png"),
                     "--objective", "pareto", db=db)
    assert first.returncode == 0, first.stderr
    assert "lift.tune:" in first.stderr and "Pareto front" in first.stdout
    result = json.loads(out.read_text())
    assert result["pareto"] and result["best"]["ok"] and not result["cached"]
    assert (tmp_path / "f.png").read_bytes().startswith(b"\x89PNG")
    t0 = time.perf_counter()
    again = lift_cmd("tune", str(prog), "--budget", "60", "--objective", "pareto", "--quiet", db=db)
    assert again.returncode == 0 and "from the tuning database" in again.stdout
    assert time.perf_counter() - t0 < 30  # a process start and one build, not a 60 s search
    listed = lift_cmd("db", "list", db=db)
    assert listed.returncode == 0 and "1 tuned problems" in listed.stdout
    key = listed.stdout.split()[0]
    shown = json.loads(lift_cmd("db", "show", key, db=db).stdout)
    assert shown["key"].startswith(key) and shown["measured"] == result["stats"]["candidates"]
    exported = tmp_path / "export.json"
    assert lift_cmd("db", "export", str(exported), db=db).returncode == 0
    other = tmp_path / "other.sqlite"
    imported = lift_cmd("db", "import", str(exported), db=other)
    assert imported.returncode == 0 and "imported" in imported.stdout
    assert "1 tuned problems" in lift_cmd("db", "list", db=other).stdout
    assert lift_cmd("db", "clear", key, db=db).returncode == 0
    assert "0 tuned problems" in lift_cmd("db", "list", db=db).stdout
    assert lift_cmd("db", "clear", key, db=db).returncode == 2  # nothing left with that key


@pytest.mark.device
def test_a_tune_killed_midway_resumes_without_measuring_again(prog: Path, tmp_path: Path) -> None:
    db = tmp_path / "tuning.sqlite"
    proc = start("tune", str(prog), "--budget", "120", "--quiet", db=db)
    deadline = time.time() + 180
    while len(finished_rows(db)) < 4 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = finished_rows(db)
    assert len(before) >= 4 and proc.returncode == -signal.SIGKILL
    out = tmp_path / "resumed.json"
    again = lift_cmd("tune", str(prog), "--budget", "3", "--quiet", "--json", str(out), db=db)
    assert again.returncode == 0, again.stderr
    stats = json.loads(out.read_text())["stats"]
    assert stats["from_database"] >= len(before)  # every finished candidate came back ...
    assert stats["measured"] + stats["from_database"] == stats["candidates"]
    after = finished_rows(db)
    assert all(after[c] == t for c, t in before.items())  # ... and none was measured (written) again


@pytest.mark.slow  # four tunes at once load the 2 cores: budget-bound tests running beside it would starve
@pytest.mark.device
def test_four_concurrent_tunes_share_one_consistent_database(prog: Path, tmp_path: Path) -> None:
    db = tmp_path / "tuning.sqlite"
    outs = [tmp_path / f"r{i}.json" for i in range(4)]
    procs = [start("tune", str(prog), "--budget", "5", "--quiet", "--json", str(o), db=db) for o in outs]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    stats = [json.loads(o.read_text())["stats"] for o in outs]
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        winners = raw.execute("SELECT entry FROM winners").fetchall()
        rows = raw.execute("SELECT record FROM candidates").fetchall()
    assert len(winners) == 1 and all(r[0] is not None for r in rows)  # one winner, no claim left
    assert sum(s["measured"] for s in stats) == len(rows)  # every candidate measured by one process only
    times = [json.loads(r[0])["time"] for r in rows if json.loads(r[0])["ok"]]
    assert json.loads(winners[0][0])["time"] <= min(times)


@pytest.mark.device
def test_bench_is_a_thin_call_of_the_benchmark_script(tmp_path: Path) -> None:
    got = lift_cmd("bench", "axpy", "--quick", "--repeat", "1", timeout=600)
    assert got.returncode == 0, got.stderr
    assert "liftcl benchmarks on" in got.stdout and "axpy" in got.stdout
    alone = lift_cmd("bench", "axpy", "--json", str(tmp_path / "t.json"))
    assert alone.returncode == 2 and "go with --tune" in alone.stderr  # never silently ignored


@pytest.mark.device
def test_bench_seeds_runs_the_seed_workloads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lift.cli import main

    out = tmp_path / "seeds.json"
    assert main(["bench", "seeds", "two_reductions", "--quick", "--repeat", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "seed workloads (quick sizes)" in printed and "two_reductions" in printed and " ok " in printed
    rows = json.loads(out.read_text())["rows"]
    assert [r["name"] for r in rows] == ["two_reductions"] and rows[0]["kernels"] == 1  # one kernel, two outputs


@pytest.mark.device
def test_tune_takes_a_named_strategy(prog: Path, tmp_path: Path) -> None:
    got = lift_cmd("tune", str(prog), "--budget", "3", "--strategy", "evolution", "--no-db", "--quiet")
    assert got.returncode == 0, got.stderr
    bad = lift_cmd("tune", str(prog), "--strategy", "nope", "--no-db")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_tune_compares_the_winner_with_the_default_where_they_were_timed_together() -> None:
    """The summary line's ratio to the default lowering is taken from the confirmation round
    (the interleaved medians that chose the winner), not from search times minutes apart: a
    winner confirmed faster never reads as slower than the default."""
    from types import SimpleNamespace as Ns

    from lift.choices import Choices
    from lift.cli_tune import _gain
    from lift.explore.points import describe

    won = Choices(points={"auto_r0": {"width": 16}}, mapping={"m0": 1})
    best = Ns(time=0.6e-3, candidate=won)
    stats = {"default_time": 0.5e-3, "confirm_rounds": 5,
             "confirmed": [{"candidate": describe(won), "search_s": 0.6e-3, "median_s": 0.5e-3},
                           {"candidate": "default lowering", "search_s": 0.5e-3, "median_s": 0.6e-3}]}
    assert "1.20x the default lowering in the confirmation round" in _gain(stats, best)
    assert "0.83x the default lowering as searched" in _gain({"default_time": 0.5e-3}, best)
    default = Ns(time=0.5e-3, candidate=Choices())
    assert describe(default.candidate) == "default lowering"
    assert "the default lowering (it won the confirmation round" in _gain(stats, default)
    assert _gain({}, best) == ""
