"""Barrier counts: the conservative pass next to the memory-access-graph pass (thesis 5.4), same results.

For every example variant, the thesis Listings 5.3-5.6 and the other barrier test programs,
compile with both passes, run both on the same random inputs on the default OpenCL device,
and print the number of barriers of each and whether the results agree (with each other and
with the interpreter).

    python benchmarks/barrier_counts.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "examples"), str(ROOT)]

import lift  # noqa: E402
from lift.barriers import insert_barriers, insert_barriers_conservative  # noqa: E402
from lift.codegen import build  # noqa: E402
from lift.errors import NotSynchronisableError  # noqa: E402
from lift.program import Program  # noqa: E402


def programs() -> list[tuple[str, object, dict, tuple]]:
    """(name, program, compile options, inputs) for every program compared."""
    import test_barrier_mutation as tm
    import test_barriers as tb
    import test_barriers_mag as mag

    rng = np.random.default_rng(0)
    out = []
    for name, sizes in tm.EXAMPLE_SIZES.items():
        module = __import__(name)
        out += [(f"{name}: {v.name}", v.program, v.compile_kw, module.inputs(*sizes)) for v in module.variants()]
    x = (rng.random(256, dtype=np.float32),)
    out += [("tiled transpose", tb.tiled_transpose(), {}, x),
            ("tiled transpose, 2 groups", tb.tiled_transpose(), {"global_size": 32, "local_size": 16}, x)]
    for name, (program, kw, shapes) in mag.CASES.items():
        out.append((name, program(), kw, tuple(rng.random(s, dtype=np.float32) for s in shapes)))
    out.append(("listing-5.4, rows not divisible", mag.listing_5_4(6, 4, 8), {"local_size": (4, 4)},
                (rng.random((6, 4, 8), dtype=np.float32),)))
    out.append(("Table 5.1 M4", tm.table_5_1_m4(), {"local_size": (8,), "global_size": (32,)},
                (rng.random((4, 8, 16), dtype=np.float32),)))
    return out


def run(program, kw: dict, args: tuple, barrier_pass) -> tuple[str, object]:
    """(the barrier count or why the pass rejects the program, the result or None)."""
    try:
        plan = build(program, barrier_pass=barrier_pass, **kw).source
    except NotSynchronisableError as e:
        return "rejected", e.message.split(",")[0]
    return str(len(plan.barriers)), Program(plan, cache_dir=False)(*args)


def main() -> bool:
    print(f"{'program':44s} {'conservative':>12s} {'MAG':>5s}  results")
    ok = True
    for name, program, kw, args in programs():
        old, old_result = run(program, kw, args, insert_barriers_conservative)
        new, new_result = run(program, kw, args, insert_barriers)
        want = lift.interpret(program, *args)
        results = [r for c, r in ((old, old_result), (new, new_result)) if c != "rejected"]
        same = all(np.allclose(np.reshape(r, np.shape(want)), want, rtol=1e-3, atol=1e-3) for r in results)
        fewer = new == "rejected" or old == "rejected" or int(new) <= int(old)
        ok = ok and same and fewer and not (new == "rejected" and old != "rejected")
        verdict = "same" if same else "DIFFERENT"
        print(f"{name[:44]:44s} {old:>12s} {new:>5s}  {verdict}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
