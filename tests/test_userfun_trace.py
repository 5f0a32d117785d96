"""User functions without source (a REPL, `python -c`, a script on stdin) are traced; `lift.select`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lift
from lift import Array, Float, Int, Size, fun, map, select, user_fun
from lift.errors import UserFunError

ROOT = Path(__file__).resolve().parents[1]
N = Size("N")


def _run_stdin(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, cwd="/tmp",
                          env=env, timeout=300)


def _readme_example() -> str:
    code = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    assert "lift.tune(" in code
    # the tuning lines (the search and the check of its winner) are left out; everything else runs as
    # written (tests/test_docs.py runs the whole example from a file)
    return "\n".join(line for line in code.splitlines() if "lift.tune(" not in line and "best." not in line)


def test_readme_example_typed_into_python_stdin_runs_and_matches() -> None:
    check = ("\nwant = lift.interpret(dot, x, y)\n"
             "assert abs(float(k(x, y)) - float(want)) <= 1e-4 * abs(float(want)), (k(x, y), want)\n"
             "print('MATCHES', mult.c_source.splitlines()[0])\n")
    out = _run_stdin(_readme_example() + check)
    assert out.returncode == 0, out.stderr
    assert "MATCHES float mult(float a, float b) {" in out.stdout


def test_stdin_function_errors_name_the_line_and_suggest_select() -> None:
    code = ("import lift\nfrom lift import Float, user_fun\n"
            "def f(a):\n    b = a * 2.0\n    if b > 1.0:\n        return b\n    return a\n"
            "try:\n    user_fun(f, [Float], Float)\nexcept lift.UserFunError as e:\n    print(e)\n")
    out = _run_stdin(code)
    assert out.returncode == 0, out.stderr
    assert "cannot be traced" in out.stdout and "at <stdin>:5 in f" in out.stdout
    assert "lift.select" in out.stdout


def _traced(fn, types, out=None, name=None):
    """`fn` translated as if its source were unavailable."""
    fn.__code__ = fn.__code__.replace(co_filename="<stdin>")
    return user_fun(fn, types, out, name=name)


def test_traced_arithmetic_math_select_and_calls_match_python() -> None:
    import math

    relu = _traced(lambda x: select(x > 0.0, x, 0.0), [Float], Float, name="relu")

    def g(a, b):
        c = math.exp(-abs(a)) + b ** 2 - a / (1.0 + b * b)
        return relu(c) + lift.mult(c, 0.5) + math.pi + float(int(b)) * 0.0

    uf = _traced(g, [Float, Float], Float)
    assert "exp(" in uf.c_source and "?" not in uf.c_source and "relu(" in uf.c_source
    a = np.linspace(-2, 2, 24).astype(np.float32)
    b = np.linspace(1, -1, 24).astype(np.float32)
    want = np.array([g(float(x), float(y)) for x, y in zip(a, b)], np.float32)
    p = fun([Array(Float, N), Array(Float, N)], lambda x, y: map(lambda t: uf(t[0], t[1])) << lift.zip(x, y))
    np.testing.assert_allclose(lift.interpret(p, a, b), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lift.compile(p)(a, b), want, rtol=1e-5, atol=1e-6)


def test_traced_window_loop_unrolls() -> None:
    def box(w):
        s = 0
        for i in range(len(w)):
            for j in range(len(w[i])):
                s = s + w[i][j] * (i + 1)
        return s

    uf = _traced(box, [Array(Array(Int, 3), 2)], Int)
    xs = np.arange(24, dtype=np.int32).reshape(4, 2, 3)
    p = fun([Array(Array(Array(Int, 3), 2), N)], lambda x: map(uf) << x)
    want = [box(w.tolist()) for w in xs]
    assert lift.interpret(p, xs).tolist() == lift.compile(p)(xs).tolist() == want


@pytest.mark.parametrize("body, words", [
    (lambda a: a if a > 0 else -a, "steer Python control flow"),
    (lambda a: max(a, 1.0), "steer Python control flow"),
    (lambda a: a > 0 and a < 1, "steer Python control flow"),
    (lambda a: np.float32(a) + 1, "cannot be traced"),
])
def test_what_tracing_cannot_express_is_a_user_fun_error(body, words) -> None:
    with pytest.raises(UserFunError, match=words) as info:
        _traced(body, [Float], None)
    assert "lift.select" in (info.value.hint or "")


def test_select_on_numbers_arrays_and_in_translated_functions() -> None:
    assert select(True, 1, 2) == 1 and select(False, 1, 2) == 2
    np.testing.assert_array_equal(select(np.array([True, False]), np.array([1, 2]), 0), [1, 0])

    @user_fun
    def clip(a: Float) -> Float:
        return lift.select(a > 1.0, 1.0, select(a < -1.0, -1.0, a))

    x = np.linspace(-3, 3, 9).astype(np.float32)
    p = fun([Array(Float, N)], lambda v: map(clip) << v)
    np.testing.assert_allclose(lift.compile(p)(x), np.clip(x, -1, 1))
    np.testing.assert_allclose(lift.interpret(p, x), np.clip(x, -1, 1))
