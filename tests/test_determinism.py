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
