"""tests/fuzz_tc.py as a short seeded run (issue 39): a dozen grammar-drawn TC sources (C keywords,
OpenCL built-ins and liftcl's own names, extreme literals, deep nesting) through `lift.tc`, compile,
a run against the interpreter and `lift tc FILE`; no raw crash, hang, wrong result or unnamed refusal."""

from __future__ import annotations

import io

from fuzz_runner import print_counts
from fuzz_tc import OK_ROWS, ROWS, fuzz, judge


def test_a_short_seeded_run_is_clean() -> None:
    log = io.StringIO()
    table = fuzz(300, seed=5, timeout=120, log=log, limit=12)
    print_counts(table, ROWS, log)
    assert sum(table.values()) == 12, log.getvalue()
    assert not {r: table[r] for r in ROWS if r not in OK_ROWS and table[r]}, log.getvalue()


def test_the_judge_sorts_what_it_sees() -> None:
    """Each row the judge gives can come out: a source that compiles and agrees, one refused at
    its line, and a name C cannot read that used to reach the kernel."""
    assert judge("def f(float(N) x) -> (y) { y(i) = x(i) * 2.0 }", cli=True)[0] == "ok"
    assert judge("def f(float(int) x) -> (y) { y(i) = x(i) }")[0] == "refused"
    assert judge("def f(float(N) x) -> (y) { y(i) = " + "(" * 300 + "x(i)" + ")" * 300 + " }")[0] == "refused"
    assert judge("def f(float(N) x) -> (y) { y(i) = (3 > 0 ? x(i) : 1.0) }")[0] == "ok"
