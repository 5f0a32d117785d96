"""What `lift.compile` produces depends on the program, the device and the choices only, never on
what the process compiled before (issue 43): the examples' sources, compiled in a fresh process
and again after 50 other programs of the golden corpus (their IR built, normalised, solved and
freed, so that ids of dead objects are reused), are byte-identical to the golden file.

A cache keyed by `id()` of an IR node, or a memo whose key ignores a label or a location, shows up
here as a source that differs after the others, not in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "examples.json"
OTHERS = 50

_SCRIPT = textwrap.dedent("""
    import gc, json, sys, tempfile
    sys.path[:0] = [{tests!r}]
    import test_golden, test_golden_corpus
    before = int(sys.argv[1])
    for stem in sorted(test_golden_corpus.cases())[:before]:
        make, device, arrays = test_golden_corpus.cases()[stem]
        with tempfile.TemporaryDirectory() as cache:
            test_golden_corpus._source(make, device, arrays, cache)
        gc.collect()
    out = {{}}
    for stem in sorted(test_golden.VARIANTS, reverse=bool(before)):
        with tempfile.TemporaryDirectory() as cache:
            out[stem] = test_golden.source(stem, cache)
    print(json.dumps(out))
""").format(tests=str(ROOT / "tests"))


def _sources(before: int) -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(before)], capture_output=True, text=True,
                          cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.device
def test_sources_do_not_depend_on_what_the_process_compiled_before() -> None:
    golden = json.loads(GOLDEN.read_text())
    fresh, after = _sources(0), _sources(OTHERS)
    assert set(fresh) == set(after) == set(golden)
    differ = sorted(s for s in golden if fresh[s] != golden[s] or after[s] != golden[s])
    assert not differ, f"sources that depend on the process's history: {differ}"


def _learning_program() -> Any:
    """A program whose first solver mapping the barrier pass refuses (tests/test_boundary.py): its
    compile learns a "no barrier placement" constraint."""
    import lift
    from lift import Array, Float, Size, fun, map, pad, reduce, slide, user_fun

    m, n = Size("M"), Size("N")
    inc = user_fun(lambda a: a + 1.0, [Float], Float, name="inc")
    return fun([Array(Array(Float, m), n)], lambda x: map(
        lambda row: map(reduce(lift.add, 0.0)) << slide(3, 1) << pad(1, 1, 0.0) << map(inc) << row) << x)


def _module_dicts() -> dict[str, int]:
    """The size of every module-level dict of the modules that plan a program."""
    import importlib

    names = ["lift.compile", "lift.decide", "lift.spaces", "lift.rules.normalise",
             *(f"lift.constraints.{m}" for m in ("space", "learn", "context", "mapping", "tuning",
                                                 "model", "launch", "boundary", "unique")),
             "lift.realise", "lift.rules.recompute", "lift.rules.prepare"]
    out = {}
    for name in names:
        mod = importlib.import_module(name)
        for k, v in vars(mod).items():
            if isinstance(v, dict) and not k.startswith("__"):
                out[f"{name}.{k}"] = len(v)
    return out


def test_a_compile_keeps_nothing_for_the_next() -> None:
    """No cache keyed by `id()` and no learnt constraint outlives a compile: a program compiled
    again (a new object each time, after others learnt constraints) gives the same source, and no
    module-level dict of the planning modules grows."""
    import lift
    from lift.constraints import mapping_space

    device = lift.devices.profile("pocl-cpu")
    first = lift.compile(_learning_program(), device=device).source
    before = _module_dicts()
    for _ in range(3):
        assert lift.compile(_learning_program(), device=device).source == first
    prog = _learning_program()
    lift.compile(prog, device=device)
    assert not [c for c in mapping_space(prog, device).constraints if c.kind == "no barrier placement"]
    after = _module_dicts()
    grown = {k for k in after if after[k] != before.get(k)}
    # normalise's memo is keyed by value (the program with its labels, locations and parameter names:
    # rules/normalise.py _memo_key) and bounded: each new program object is a new value (new parameters)
    assert grown <= {"lift.rules.normalise._DONE"}, grown
    from lift.rules import normalise as nm
    assert all(isinstance(k, tuple) and isinstance(k[0], lift.ir.nodes.Node) for k in nm._DONE)
