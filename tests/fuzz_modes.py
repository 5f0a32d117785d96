"""The fuzzer's extra modes (tests/fuzz.py `--threads K`, `--nan`), kept apart from its driver.

- `reduction_programs()`: reductions (`reduce(op, z) [<< map(f)] << x`, per row, or of a zip) over
  up to 2^20 floats (distinct ones in [0, 1) for max_/min_, quarter-integers, whose sums are exact,
  for add/mult) salted with NaN and infinities in a drawn pattern (one NaN, NaN at the ends,
  one element in ten NaN, infinities of both signs, NaN among infinities, all -inf), so the chunked
  and atomic combines meet them in every order; the interpreter is the oracle, never numpy.
- `judge_threaded(program, inputs, threads)`: one compiled `Program` shared by `threads` threads,
  started together (their first calls specialise at once), each calling it `calls` times on inputs
  of its own (the arrays rolled by the thread's number) and checking every result against the
  interpreter's for those inputs: a result of another thread's inputs is a "wrong" row.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

MAX_ELEMENTS = 1 << 20
NAN_PATTERNS = ("one nan", "nan at the ends", "nan-heavy", "infinities", "nan among infinities", "all -inf")
REDUCTION_SIZES = (1, 3, 7, 64, 1000, 2047, 2048, 2049, 4096, 10000, 65536, 1 << 20)
Judged = tuple[str, str]


def salted(rng: np.random.Generator, a: np.ndarray, pattern: str) -> np.ndarray:
    """`a` (floats) with NaN / infinities written in by `pattern` (one of `NAN_PATTERNS`)."""
    out = np.array(a, copy=True)
    flat = out.reshape(-1)
    n = flat.size
    if pattern == "one nan":
        flat[rng.integers(n)] = np.nan
    elif pattern == "nan at the ends":
        flat[0], flat[-1] = np.nan, np.nan
    elif pattern == "nan-heavy":
        flat[rng.random(n) < 0.1] = np.nan
    elif pattern == "infinities":
        flat[rng.random(n) < 0.05] = np.inf
        flat[rng.random(n) < 0.05] = -np.inf
    elif pattern == "nan among infinities":
        flat[rng.random(n) < 0.3] = np.inf
        flat[rng.integers(n)] = np.nan
    elif pattern == "all -inf":
        flat[:] = -np.inf
    else:
        raise ValueError(f"no NaN pattern {pattern!r}")
    return out


def reduction_programs(max_elements: int = MAX_ELEMENTS) -> Any:
    """Random float reductions with NaN/inf-heavy inputs (see the module docstring)."""
    from hypothesis import strategies as st

    import lift
    from lift import Array, Float, fun, map, reduce, zip
    from lift.testing import Case, unary_funs

    ops = ((lift.add, 0.0), (lift.max_, -np.inf), (lift.max_, -1e30), (lift.min_, np.inf), (lift.min_, 1e30),
           (lift.mult, 1.0))

    @st.composite
    def make(draw: Any) -> Case:
        op, z = draw(st.sampled_from(ops))
        f = draw(unary_funs(Float))
        shape = draw(st.sampled_from(("flat", "flat map", "rows", "zip")))
        n = draw(st.sampled_from([s for s in REDUCTION_SIZES if s <= max_elements]))
        if op is lift.mult:
            n = min(n, 64)  # a longer product of quarter-integers is only 0, inf or NaN
        if shape == "rows":
            cols = draw(st.sampled_from([c for c in (1, 7, 64, 2048, 4096) if c * 4 <= max(4, max_elements)]))
            rows = max(1, min(n // cols, 256))
            program = fun([Array(Array(Float, cols), rows)],
                          lambda x: map(lambda r: reduce(op, z) << map(f) << r) << x)
        elif shape == "zip":
            program = fun([Array(Float, n), Array(Float, n)],
                          lambda x, y: reduce(op, z) << map(lambda p: lift.mult(p[0], p[1])) << zip(x, y))
        elif shape == "flat map":
            program = fun([Array(Float, n)], lambda x: reduce(op, z) << map(f) << x)
        else:
            program = fun([Array(Float, n)], lambda x: reduce(op, z) << x)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        pattern = draw(st.sampled_from(NAN_PATTERNS))
        exact = op in (lift.max_, lift.min_)  # distinct values: which ones a NaN hides shows in the result
        inputs = tuple(salted(rng, (rng.random(_shape(p.ptype)) if exact else
                                    rng.integers(-8, 9, size=_shape(p.ptype)) / 4).astype(np.float32), pattern)
                       for p in program.params)
        return Case(program, inputs)

    return make()


def _shape(t: Any) -> tuple[int, ...]:
    dims = []
    while hasattr(t, "size") and hasattr(t, "elem"):
        dims.append(int(t.size))
        t = t.elem
    return tuple(dims)


def thread_inputs(inputs: tuple, k: int) -> tuple:
    """Thread `k`'s arguments: every array rolled by k * (its position + 1) along its first axis."""
    return tuple(np.roll(a, k * (i + 1), axis=0) if isinstance(a, np.ndarray) and a.ndim else a
                 for i, a in enumerate(inputs))


def judge_threaded(program: Any, inputs: tuple, threads: int, *, calls: int = 3, local_size: int | None = None,
                   compile: Callable[..., Any] | None = None) -> Judged:
    """The fuzz row of `program` called from `threads` threads at once (see the module docstring);
    `compile` replaces `lift.compile` (tests give it a broken program to see the rows)."""
    import lift
    from lift.errors import LiftError
    from lift.testing import assert_same

    mine = [thread_inputs(inputs, k) for k in range(threads)]
    try:
        expected = [lift.interpret(program, *args) for args in mine]
    except LiftError as err:
        return "invalid", f"interpret: {type(err).__name__}: {str(err).splitlines()[0]}"
    except Exception as err:  # noqa: BLE001 - what the fuzzer is for
        return "raw crash", f"interpret: {type(err).__name__}: {err}"
    try:
        prog = (compile or lift.compile)(program, local_size=local_size)
    except LiftError as err:
        return "refused", f"{type(err).__name__}: {str(err).splitlines()[0]}"
    except Exception as err:  # noqa: BLE001
        return "raw crash", f"compile: {type(err).__name__}: {err}"
    outcome: list[Judged | None] = [None] * threads
    start = threading.Barrier(threads)

    def run(k: int) -> None:
        start.wait()
        for call in range(calls):
            try:
                got = prog(*mine[k])
            except LiftError as err:
                outcome[k] = ("refused", f"thread {k} call {call}: {type(err).__name__}: {str(err).splitlines()[0]}")
                return
            except Exception as err:  # noqa: BLE001
                where = traceback.format_exc().splitlines()[-3].strip()
                outcome[k] = ("raw crash", f"thread {k} call {call}: {type(err).__name__}: {err} | {where}")
                return
            try:
                assert_same(expected[k], got, rtol=1e-3, atol=1e-3)
            except AssertionError as err:
                outcome[k] = ("wrong", f"thread {k} of {threads}, call {call}: {str(err)[:160]}")
                return

    workers = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    bad = [o for o in outcome if o is not None]
    order = ("raw crash", "wrong", "refused")
    return min(bad, key=lambda o: order.index(o[0])) if bad else ("ok", "")
