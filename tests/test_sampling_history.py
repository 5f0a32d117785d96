"""A compile's choices do not depend on what the process compiled before it. z3 orders terms by
their ids, so in the process's one context the cost of a check (and where a resource limit cuts
a search) depends on the terms built before it; `Model._sample_z3` therefore asks in a context of
its own. SRAD's statistics (a tuple sum bound by `let`, one open chunk size, the median of the
samples) got chunks of 128 elements compiled alone and 256 after ATAX before that."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import sys
import tempfile
sys.path.insert(0, "tests")
import test_golden_corpus as corpus
cases = corpus.cases()
for stem in sys.argv[1:]:
    source = corpus._source(*cases[stem], tempfile.mkdtemp())
print(source)
"""


def _source(*names: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", SCRIPT, *names], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=600, check=True)
    return out.stdout


def test_an_open_tuning_value_is_the_same_after_other_compiles():
    # the golden corpus's SRAD (the Xeon's profile), alone and after ATAX's
    alone = _source("suite-srad")
    assert "reduce_seq(add_pairs" in alone
    assert _source("suite-atax", "suite-srad") == alone
