"""Fuzzing the Tensor Comprehensions front end (issue 39): grammar-based TC sources whose names come
from C's keywords, OpenCL C's built-ins, TC's built-ins and liftcl's own names, with extreme
literals and deep nesting, through `lift.tc`, `lift.compile`, a run and `lift tc FILE`.

    python tests/fuzz_tc.py --minutes 10 [--seed 1] [--timeout 120] [--show 5]

A source is one of three shapes (a pointwise statement over two tensors, a reduction over a matrix,
a scalar parameter times a tensor) with every name drawn from the pools below and a right-hand side
drawn from a small grammar: tensor reads, number literals (3e9 as an int, 5000 digits, 1e400, ...),
unary minus, + - *, division by a literal, comparisons under ?:, TC built-ins, parentheses nested up
to 300 deep and sums of up to 400 terms. Rows:

- ok: translated, compiled, and the kernel's result agrees with `lift.interpret`;
- refused (ok too): a `LiftError` from `lift.tc` that names the TC line ("line L, column C");
- unnamed: a `LiftError` from `lift.tc` that does not name the TC line;
- compile refused: `lift.tc` gave a program the interpreter runs, and compiling it raised a `LiftError`;
- wrong: compiled and run, the result disagrees with the interpreter;
- raw crash: an exception that is not a `LiftError` (`lift tc FILE`: a traceback or an exit status other than 0/1);
- hang: no result within `--timeout`.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from fuzz_runner import main as fuzz_main
from fuzz_runner import run

ROWS = ("ok", "refused", "unnamed", "compile refused", "wrong", "raw crash", "hang")
OK_ROWS = ("ok", "refused")

C_WORDS = ("int", "float", "restrict", "kernel", "global", "local", "constant", "private", "void", "const",
           "return", "if", "for", "while", "struct", "typedef", "char", "double", "half", "bool", "true", "false",
           "volatile", "inline", "static", "sizeof", "signed", "unsigned", "size_t", "auto", "register")
OPENCL_BUILTINS = ("get_global_id", "get_local_id", "get_group_id", "get_global_size", "barrier", "mad", "clamp",
                   "vload4", "vstore4", "as_float", "convert_int", "atomic_add", "native_exp", "mem_fence", "dot",
                   "select", "mix", "fma", "pow", "sqrt", "INFINITY", "NAN", "M_PI", "CLK_LOCAL_MEM_FENCE",
                   "FLT_MAX", "printf", "float4", "int2")
TC_BUILTINS = ("exp", "max", "min", "fmaxf", "fminf", "tanh", "sigmoid", "fabs", "log", "sqrt")
LIFT_NAMES = ("mult", "add", "id", "tc_exp", "lift_kernel", "out", "x", "gl", "acc", "Tuple_float", "__x", "_",
              "LIFT_STREAM_STORE", "main")
PLAIN = ("A", "B", "C", "N", "M", "K", "i", "j", "k", "s", "O", "Y", "9N", "2LUT", "n_2", "rows")
NAMES = C_WORDS + OPENCL_BUILTINS + TC_BUILTINS + LIFT_NAMES + PLAIN
LITERALS = ("0", "1", "2", "0.5", "2.0f", "1e-3", "3000000000", "2147483647", "2147483648", "99999999999999999999",
            "1e39", "1e400", "1e-400", "0.0", "4294967296.0", "9" * 300, "9" * 301, "9" * 5000, "1" + "0" * 400)


# ------------------------------------------------------------------------------ grammar


def expressions(leaves: list[str], scalars: list[str]) -> Any:
    """Right-hand sides over `leaves` (tensor reads) and `scalars` (scalar parameter names)."""
    from hypothesis import strategies as st

    leaf = st.one_of(st.sampled_from(leaves), st.sampled_from(LITERALS),
                     st.sampled_from(scalars) if scalars else st.sampled_from(leaves))

    def grow(sub: Any) -> Any:
        return st.one_of(
            st.builds(lambda a: f"-{a}", sub),
            st.builds(lambda a, op, b: f"{a} {op} {b}", sub, st.sampled_from("+-*"), sub),
            st.builds(lambda a, d: f"({a}) / {d}", sub, st.sampled_from(["2", "4.0", "3e9", "0.5"])),
            st.builds(lambda c, a, b: f"({c} > 0 ? {a} : {b})", sub, sub, sub),
            st.builds(lambda f, a: f"{f}({a})", st.sampled_from(["tanh", "fabs", "sigmoid", "exp"]), sub),
            st.builds(lambda f, a, b: f"{f}({a}, {b})", st.sampled_from(["fmaxf", "fminf", "max", "min"]), sub, sub),
            st.builds(lambda a: f"({a})", sub))

    small = st.recursive(leaf, grow, max_leaves=6)
    deep = st.one_of(
        st.builds(lambda n, a: "(" * n + a + ")" * n, st.sampled_from([10, 100, 127, 128, 129, 300]), small),
        st.builds(lambda n, a: " + ".join([a] * n), st.sampled_from([2, 50, 127, 128, 129, 400]),
                  st.sampled_from(leaves)),
        st.builds(lambda n, a: "-" * n + a, st.sampled_from([2, 3, 129, 400]), st.sampled_from(leaves)),
        st.builds(lambda n, a: "tanh(" * n + a + ")" * n, st.sampled_from([3, 60, 130, 300]),
                  st.sampled_from(leaves)))
    return st.one_of(small, small, small, deep)


def sources() -> Any:
    """A TC source of one function, its names drawn from `NAMES`."""
    from hypothesis import strategies as st

    @st.composite
    def make(draw: Any) -> tuple[str, str]:
        shape = draw(st.sampled_from(["pointwise", "reduction", "scalar"]))
        names = st.one_of(st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from(PLAIN))  # a third plain
        fname, a, b, o, s = draw(st.lists(names, min_size=5, max_size=5, unique=True))
        sizes = st.one_of(names, st.sampled_from(PLAIN), st.sampled_from(PLAIN))  # most sizes plain: more compile
        size, size2, i, j = draw(st.lists(sizes, min_size=4, max_size=4, unique=True))
        if shape == "pointwise":
            rhs = draw(expressions([f"{a}({i})", f"{b}({i})"], []))
            return shape, f"def {fname}(float({size}) {a}, float({size}) {b}) -> ({o}) {{\n  {o}({i}) = {rhs}\n}}\n"
        if shape == "reduction":
            op = draw(st.sampled_from(["+=!", "max=!", "min=!", "+="]))
            rhs = draw(expressions([f"{a}({i}, {j})"], []))
            pre = f"  {o}({i}) = 0.5\n" if op == "+=" else ""
            return shape, f"def {fname}(float({size}, {size2}) {a}) -> ({o}) {{\n{pre}  {o}({i}) {op} {rhs}\n}}\n"
        rhs = draw(expressions([f"{a}({i})"], [s]))
        return shape, f"def {fname}(float {s}, float({size}) {a}) -> ({o}) {{\n  {o}({i}) = {rhs}\n}}\n"

    return make()


# ------------------------------------------------------------------------------ judge


def judge(source: str, *, cli: bool = False) -> tuple[str, str]:
    """Translate, compile, run and compare one source; its row and what happened."""
    import lift

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if cli:
                _cli(source)
            try:
                progs = lift.tc(source)
            except lift.LiftError as err:
                first = str(err).splitlines()[0]
                return ("refused" if "line " in first else "unnamed"), first[:200]
            for prog in progs.values():
                row = _run(prog)
                if row[0] != "ok":
                    return row
            return "ok", f"{len(progs)} programs"
        except Exception as err:  # noqa: BLE001 - every LiftError is handled above
            where = traceback.extract_tb(err.__traceback__)[-1]
            return "raw crash", f"{type(err).__name__}: {str(err)[:300]} at {where.filename}:{where.lineno}"


def _run(prog: Any) -> tuple[str, str]:
    import lift

    rng = np.random.default_rng(0)
    args = []
    for p in prog.params:
        dims, t = [], p.ptype
        while hasattr(t, "elem"):
            dims.append(8 if not dims else 5)
            t = t.elem
        args.append(np.float32(rng.uniform(-2, 2)) if not dims else rng.uniform(-2, 2, dims).astype(np.float32))
    try:
        want = np.asarray(lift.interpret(prog, *args), dtype=np.float64)
    except lift.LiftError as err:
        return "refused", f"the interpreter refuses it: {str(err).splitlines()[0][:200]}"
    try:
        got = np.asarray(lift.compile(prog)(*args), dtype=np.float64)
    except lift.LiftError as err:
        return "compile refused", f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-3, atol=1e-4 * scale, equal_nan=True):
        return "wrong", f"compiled {got.ravel()[:4]} interpreted {want.ravel()[:4]}"
    return "ok", ""


def _cli(source: str) -> None:
    """`lift tc FILE`: an exit status of 0 or 1 with a one-message error, never a traceback."""
    from lift.cli import main

    with tempfile.TemporaryDirectory(prefix="fuzz-tc-") as tmp:
        path = Path(tmp) / "f.tc"
        path.write_text(source)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["tc", str(path)])
        if status not in (0, 1) or "Traceback" in err.getvalue() or (status and not err.getvalue().startswith("lift:")):
            raise RuntimeError(f"lift tc FILE exited {status}: {err.getvalue()[:200]}")


# ----------------------------------------------------------------------------- worker


def _worker(conn: Any, seed: int) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    @settings(max_examples=10**9, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(case=sources(), cli=st.integers(0, 7))
    def one(case: tuple[str, str], cli: int) -> None:
        conn.send(("start", case[1]))
        conn.send(("done",) + judge(case[1], cli=cli == 0))

    hseed(seed)(one)()


def fuzz(seconds: float, *, seed: int = 1, timeout: float = 120.0, log: Any = None, show: int = 20,
         limit: int | None = None) -> Any:
    """Judge TC sources for `seconds` (or `limit` of them); the count per row."""
    return run(_worker, seconds, seed=seed, timeout=timeout, limit=limit, log=log, show=show, ok_rows=OK_ROWS)


def main(argv: list[str] | None = None) -> int:
    return fuzz_main(argv, __doc__, fuzz, ROWS, OK_ROWS, 120.0, "a source")


if __name__ == "__main__":
    sys.exit(main())
