"""Nightly-style fuzzing: random programs at sizes where bugs live, through interpret + compile + run.

    python tests/fuzz.py --minutes 15 [--seed 1] [--timeout 120] [--show 5] [--threads 4] [--nan]

Programs come from `lift.testing`'s building blocks (`prefix_1d`, `prefix_2d`, `suffix`) over
inputs of up to 2^12 elements per dimension (`large_programs`), with result layouts that need
a kernel boundary (pad, slide) and nested stages that need barriers or a sequential stage
(`_tail`), and, for a quarter of them, small programs rewritten by a random rule of `lift.rules.ALL`
(`rewritten_programs`), compiled with the compiler's work-group size or one of `LOCAL_SIZES`, so mappings,
work-groups and barriers meet real sizes. Each program runs in a worker process; one that does
not finish within `--timeout` seconds is a hang (the worker is killed and replaced). Every
program lands in one row: ok, wrong (the kernel disagrees with the interpreter), raw crash
(an exception that is not a `LiftError`), hang, refused (a `LiftError` from compiling or
running a program the interpreter accepts), fallback (a `MappingFallback` warning: compile no
longer has that path, so the row stays 0 unless it comes back), or
invalid (the interpreter rejects it: not a program to judge). The table is printed per size
class (the largest input dimension) at the end, after up to `--show` examples of each bad row.

Modes (tests/fuzz_modes.py): `--threads K` judges every program with K threads calling one shared
`Program` at once, each on inputs of its own; `--nan` adds float reductions over up to 2^20
elements salted with NaN and infinities (a third of the draws; fewer of the programs judged per minute,
being up to 2^20 elements), judged against the interpreter.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from typing import Any

import numpy as np
from fuzz_modes import judge_threaded, reduction_programs

ROWS = ("ok", "wrong", "raw crash", "hang", "refused", "fallback", "invalid")
DIMS = (1, 3, 4, 7, 16, 17, 64, 100, 128, 255, 256, 512, 1000, 1024, 2048, 4095, 4096)
MAX_ELEMENTS = 1 << 20  # per input: keeps the interpreter (the oracle) fast
LOCAL_SIZES = (None, None, 1, 7, 16, 64, 256)  # work-group sizes asked of lift.compile (None: its own)
KEPT = 100  # examples kept per bad row (--show prints fewer)


def large_programs(max_elements: int = MAX_ELEMENTS) -> Any:
    """Random well-typed programs of two inputs with up to 2^12 elements per dimension, with inputs."""
    from hypothesis import strategies as st

    from lift import fun
    from lift.arith import Cst
    from lift.testing import Case, inputs_for, prefix_1d, prefix_2d, scalar_types, suffix
    from lift.types import ArrayType

    @st.composite
    def make(draw: Any) -> Case:
        s = draw(scalar_types())
        rows = draw(st.sampled_from(DIMS))
        two_d = draw(st.booleans())
        cols = draw(st.sampled_from([d for d in DIMS if d * rows <= max_elements])) if two_d else 1
        t = ArrayType(ArrayType(s, Cst(cols)), Cst(rows)) if two_d else ArrayType(s, Cst(rows))

        def body(x: Any, y: Any) -> Any:
            e = draw(st.sampled_from((prefix_1d, prefix_2d)))(draw, x, y)
            return _tail(draw, suffix(draw, suffix(draw, e)))

        program = fun([t, t], body)
        return Case(program, draw(inputs_for(program)))

    return make()


def rewritten_programs() -> Any:
    """Programs of `lift.testing.programs_for(rule)` (small sizes) with a random rule of
    `lift.rules.ALL` applied at one of its matches: the rewritten forms the search compiles (fissions,
    interchanges, half-mapped programs), as in the issue's rule-based fuzzing."""
    from hypothesis import strategies as st

    import lift
    from lift.errors import LiftError
    from lift.testing import Case, programs_for

    @st.composite
    def make(draw: Any) -> Case:
        rule = draw(st.sampled_from(list(lift.rules.ALL)))
        case = draw(programs_for(rule))
        paths = rule.matches(case.program)
        if not paths:
            return case
        try:
            return Case(rule.apply(case.program, at=draw(st.sampled_from(paths))), case.inputs)
        except LiftError:
            return case

    return make()


def _tail(draw: Any, e: Any) -> Any:
    """Sometimes a layout of the result that cannot be written in place (a slide or a pad: the
    kernel boundary or fused recomputation), or, over rows, a nested stage whose windows read what
    other work-items of the row wrote (the barrier pass's "no barrier placement")."""
    from hypothesis import strategies as st

    from lift import map, pad, reduce, slide
    from lift.testing import monoids, unary_funs
    from lift.types import ArrayType, ScalarType

    t = e.type
    if not isinstance(t, ArrayType) or int(t.size) < 4:
        return e
    kind = draw(st.sampled_from(("none", "none", "none", "none", "none", "slide", "pad", "rows")))
    if kind == "slide":
        size = draw(st.sampled_from((2, 3)))
        return slide(size, draw(st.integers(1, size))) << e
    if kind == "pad":
        return pad(draw(st.integers(0, 2)), draw(st.integers(1, 2)), 0) << e
    if kind == "rows" and isinstance(t.elem, ArrayType) and isinstance(t.elem.elem, ScalarType):
        s = t.elem.elem
        f = draw(unary_funs(s))
        op, z = draw(monoids(s))
        return map(lambda row: map(lambda w: reduce(op, z) << w) << slide(3, 1) << pad(1, 1, 0)
                   << map(f) << row) << e
    return e


def judge(program: Any, inputs: tuple, local_size: int | None = None) -> tuple[str, str]:
    """The row of one program and a one-line detail (`local_size`: the work-group size asked of
    `lift.compile`, for the kernels it fits; None: the compiler's)."""
    import lift
    from lift.errors import LiftError, MappingFallback
    from lift.testing import assert_same

    try:
        expected = lift.interpret(program, *inputs)
    except LiftError as err:
        return "invalid", f"interpret: {type(err).__name__}: {str(err).splitlines()[0]}"
    except Exception as err:  # noqa: BLE001 - what the fuzzer is for
        return "raw crash", f"interpret: {type(err).__name__}: {err}"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = lift.compile(program, local_size=local_size)(*inputs)
        fell = [w for w in caught if issubclass(w.category, MappingFallback)]
    except LiftError as err:
        return "refused", f"{type(err).__name__}: {str(err).splitlines()[0]}"
    except Exception as err:  # noqa: BLE001
        return "raw crash", f"{type(err).__name__}: {err} | {traceback.format_exc().splitlines()[-3].strip()}"
    try:
        assert_same(expected, got, rtol=1e-3, atol=1e-3)
    except AssertionError as err:
        return "wrong", str(err)[:200]
    if fell:
        return "fallback", str(fell[0].message).splitlines()[0]
    return "ok", ""


# 'spawn', not 'fork': a process that has already opened an OpenCL device (pytest, after other tests) forks a
# child whose PoCL worker threads are gone, and the child's first kernel never finishes (a false "hang").
_CTX = mp.get_context("spawn")


def _worker(conn: Any, seed: int, modes: dict[str, Any] | None = None) -> None:
    """Generate programs from `seed` and report each (its text first, so a hang is attributed);
    `modes`: "threads" (K > 0: judge_threaded), "nan" (add reduction_programs), "max_elements"."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    from lift.ir.printer import show

    modes = modes or {}
    threads, most = int(modes.get("threads") or 0), int(modes.get("max_elements") or MAX_ELEMENTS)
    kinds = [large_programs(most), large_programs(most), large_programs(most), rewritten_programs()]
    if modes.get("nan"):
        kinds += [reduction_programs(most)] * 2

    @settings(max_examples=10**9, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(case=st.one_of(*kinds), local=st.sampled_from(LOCAL_SIZES))
    def run(case: Any, local: int | None) -> None:
        sizes = [tuple(int(d) for d in _dims(p.ptype)) for p in case.program.params]
        text = show(case.program) + (f"  local_size={local}" if local else "") + \
            (f"  threads={threads}" if threads else "")
        conn.send(("start", text, sizes[0]))
        row = judge_threaded(case.program, case.inputs, threads, local_size=local) if threads \
            else judge(case.program, case.inputs, local)
        nan = any(isinstance(a, np.ndarray) and a.dtype.kind == "f" and not np.isfinite(a).all() for a in case.inputs)
        conn.send(("done",) + row + (("threads " if threads else "") + ("nan" if nan else "plain"),))

    hseed(seed)(run)()


def _dims(t: Any) -> list[Any]:
    out = []
    while hasattr(t, "size") and hasattr(t, "elem"):
        out.append(t.size)
        t = t.elem
    return out


def _size_class(dims: tuple[int, ...]) -> str:
    m = max(dims, default=1)
    return "<= 16" if m <= 16 else "<= 256" if m <= 256 else "<= 4096"


def fuzz(seconds: float, *, seed: int = 1, timeout: float = 120.0, log: Any = None, show: int = 20,
         threads: int = 0, nan: bool = False, limit: int | None = None, max_elements: int = MAX_ELEMENTS,
         kinds: Counter | None = None) -> dict[str, Counter]:
    """Fuzz for `seconds` (or until `limit` programs are judged); the counts per size class, and up
    to `show` examples of every bad row in `log`. `threads`, `nan`: the modes (module docstring);
    `kinds` counts the programs judged per mode ("plain", "nan", "threads plain", "threads nan")."""
    table: dict[str, Counter] = defaultdict(Counter)
    examples: dict[str, list[str]] = defaultdict(list)
    end = time.monotonic() + seconds
    worker_seed, judged = seed, 0
    modes = {"threads": threads, "nan": nan, "max_elements": max_elements}
    while time.monotonic() < end and (limit is None or judged < limit):
        parent, child = mp.Pipe()
        proc = _CTX.Process(target=_worker, args=(child, worker_seed, modes), daemon=True)
        proc.start()
        current: tuple[str, tuple] | None = None
        while time.monotonic() < end and (limit is None or judged < limit):
            if not parent.poll(min(timeout, max(0.1, end - time.monotonic() + timeout))):
                if current is not None:  # a hang: the program started and never finished
                    _record(table, examples, "hang", current, f"no result within {timeout:.0f} s")
                break
            try:
                msg = parent.recv()
            except EOFError:  # the worker died (a crash of the process itself)
                if current is not None:
                    _record(table, examples, "raw crash", current, f"worker died (exit {proc.exitcode})")
                break
            if msg[0] == "start":
                current = (msg[1], tuple(msg[2]))
            else:
                _record(table, examples, msg[1], current, msg[2])
                current, judged = None, judged + 1
                if kinds is not None:
                    kinds[msg[3]] += 1
        proc.kill()
        proc.join()
        worker_seed += 1
    if log is not None:
        print_examples(examples, show, log)
    return table


def print_examples(examples: dict[str, list[str]], show: int, out: Any = None) -> None:
    """Up to `show` examples of each bad row (and how many more there were)."""
    out = out or sys.stdout
    for row, lines in examples.items():
        for line in lines[:max(show, 0)]:
            print(f"[{row}] {line}", file=out)
        if len(lines) > show:
            print(f"[{row}] ... and {len(lines) - max(show, 0)} more (a larger --show prints them)", file=out)


def _record(table: dict, examples: dict, row: str, current: Any, detail: str) -> None:
    text, dims = current if current is not None else ("?", ())
    table[_size_class(dims)][row] += 1
    if row not in ("ok", "invalid") and len(examples[row]) < KEPT:
        examples[row].append(f"{text}  sizes {dims}: {detail}")


def print_table(table: dict[str, Counter], out: Any = None) -> None:
    out = out or sys.stdout  # read at the call: pytest's capsys replaces it after import
    classes = [c for c in ("<= 16", "<= 256", "<= 4096") if c in table]
    print(f"{'largest dimension':<18}" + "".join(f"{r:>11}" for r in ("programs",) + ROWS), file=out)
    total: Counter = Counter()
    for c in classes:
        total.update(table[c])
        print(f"{c:<18}" + f"{sum(table[c].values()):>11}" + "".join(f"{table[c][r]:>11}" for r in ROWS), file=out)
    print(f"{'all':<18}" + f"{sum(total.values()):>11}" + "".join(f"{total[r]:>11}" for r in ROWS), file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=15.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a program is a hang")
    ap.add_argument("--show", type=int, default=20, metavar="N", help="examples printed per bad row (default 20)")
    ap.add_argument("--threads", type=int, default=0, metavar="K",
                    help="call each compiled program from K threads at once, on inputs of their own")
    ap.add_argument("--nan", action="store_true", help="add float reductions with NaN/inf-heavy inputs")
    args = ap.parse_args(argv)
    kinds: Counter = Counter()
    table = fuzz(args.minutes * 60, seed=args.seed, timeout=args.timeout, log=sys.stdout, show=args.show,
                 threads=args.threads, nan=args.nan, kinds=kinds)
    print_table(table)
    if kinds:
        print("programs per mode: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    bad = sum(t[r] for t in table.values() for r in ROWS if r not in ("ok", "invalid"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
