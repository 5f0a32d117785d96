"""z3's resource limits: every question the compiler asks z3 is bounded by z3's deterministic
resource counter (`rlimit`), never by the clock, so a compile's answers (a mapping, a tuning
value's simplification, a barrier) do not depend on how loaded the machine is.

z3 counts resource units as it works ("rlimit count" in a solver's statistics; one counter for
the whole context, so a question's cost is the difference before and after its check). A solver
given `s.set("rlimit", n)` answers "unknown" once one check has spent `n` more units, and every
site treats that "unknown" as it treated a timeout before (the same fallback). No z3 call sets a
wall-clock `timeout`: under load (load average 15 on 2 vCPUs) the 30-60 s guards of before were
reached by questions that take seconds on a quiet machine, and the TC example gconv compiled to
another mapping; tests/test_solver_limits.py compiles it with every wall-clock guard cut to 1 ms.
Each limit is also the hang guard: the counter runs at very different speeds (a barrier question
spends 1-2M units a second, a nonlinear proof of `tuning._proved` as little as 0.01M), so the
limits are the largest use seen times about 10-20 (more where that use is tiny), except where
questions that never finish would then run for many minutes: the proofs (2.4x) and the barrier
questions (lift/barriers/threads.py: 4.6x).

The cost of one question also depends on what the process solved before (z3 orders terms by their
ids): the figures below are the largest seen in a whole test run (`pytest -n 2`, 1,962 tests: each
worker solves hundreds of programs, including the examples' golden tests and the golden corpus),
not in a fresh process. The barrier questions, which varied most (gconv's: 0.9M to over 200M units
in-process), are asked in a new context (`solve_isolated`: 1.1M to 43M seen since). Measure again
with:

    LIFTCL_Z3_RECORD=/tmp/z3.jsonl python -m pytest -q -n 2   # one JSON line per z3 check
    python -m lift.constraints.limits /tmp/z3.jsonl            # the largest use per site
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

import z3

# The limits (z3 resource units). "largest seen": over the examples' golden tests, the golden
# corpus (seed workloads, Tensor Comprehensions, VGG-16 layers, GPU profiles) and the whole test
# suite, recorded as above (see each figure).

MODEL_RLIMIT = 10_000_000
"""One check of a `Model`'s solver (`Model.solver`: the unsat core, `is_valid`, sampling,
counting). Largest seen 0.58M (`Model.count`; 0.21M `_random_solution`, 29K `core`, 6.5K
`is_valid`, over 7,000 checks): 17x."""

MAPPING_RLIMIT = 40_000_000
"""All the questions of one `lex_optimum` together (`choose_mapping`). Largest seen 2.56M (one
question 2.5M; 609 mappings, none out of budget): 16x. The SAT encoding's questions are also cut
at `lexopt.MAX_CONFLICTS` conflicts (deterministic too): z3's counter hardly moves there."""

PREFER_RLIMIT = 50_000_000
"""The optimising query of `prefer.complete`, asked only when the concrete sampler finds no
completion: largest seen 1.3K units (32 queries, all unsat); kept at its earlier value, since a
satisfiable optimisation can take far more than these quick refutations."""

PROOF_RLIMIT = 5_000_000
"""One equivalence proof of `tuning.simplify` (`_proved`). Largest finished 2.1M units (3.4 s);
of about 300 proofs, 2-3 never finish (auto_nest's packed panels, a NaN row reduction): with a
20M budget they ran out after 19 s, 20 s and 274 s. 5M (2.4x) keeps that to a few seconds; a
proof out of budget is "not proved" (the constraints are kept as they are). The counter is a poor
clock here: four proofs of test_auto_nest (the default matmul blocks) used 1.0-1.7M units but
64-174 s on a loaded machine (niced), and ended "sat" (not proved, what a clock limit gave)."""

GPU_TILES_RLIMIT = 1_000_000
"""One validity check of a GPU tile choice (`gpu_tiles`). Largest seen 2.4K units (9,500
checks): a floor of 1M units (well under a second), not 20x of so little."""

RECORD_ENV = "LIFTCL_Z3_RECORD"
"""Name of the environment variable: a file to which each z3 check appends one JSON line."""


def limited(solver: Any, rlimit: int) -> Any:
    """`solver` (a z3 `Solver` or `Optimize`) with each check bounded by `rlimit` resource units."""
    solver.set("rlimit", rlimit)
    return solver


class Isolated:
    """The model of a question asked by `solve_isolated`; `eval` takes terms of the caller's context."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def eval(self, term: Any, model_completion: bool = False) -> Any:
        """`term` (of any context) evaluated in the model."""
        return self.model.eval(term.translate(self.model.ctx), model_completion=model_completion)


def solve_isolated(formulas: Sequence[Any], rlimit: int) -> tuple[Any, Isolated | None]:
    """sat / unsat / unknown for `formulas`, asked in a new z3 context (the formulas copied through
    their SMT-LIB text) within `rlimit` units, and the model when sat.

    In the process's one context the cost of a question depends on the terms built before it (z3
    orders and simplifies by term ids): the barrier question of the TC example gconv took from
    0.9M to over 200M units (then "unknown", and another mapping) depending on the programs
    compiled before and on Python's string hashing; asked from its text in a new context it
    takes 1.3M every time. Copying costs about 10 ms."""
    ctx = z3.Context()
    text = z3.Solver()
    text.add(*formulas)
    s = limited(z3.Solver(ctx=ctx), rlimit)
    s.add(*z3.parse_smt2_string(text.to_smt2(), ctx=ctx))
    result = s.check()
    return result, Isolated(s.model()) if result == z3.sat else None


def used(solver: Any) -> int:
    """z3's resource count so far (the whole context's: subtract two readings for one check)."""
    stats = solver.statistics()
    return int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else 0


# ------------------------------------------------------------------- recording


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder of lift/, constraints/
_PACKAGES = ("constraints", "rewrites", "rules", "lift")


def _site(depth: int = 2) -> str:
    """`path:function` of the first caller inside liftcl (not this module), e.g.
    "constraints/model.py:core"; "?" when there is none."""
    here = os.path.abspath(__file__)
    frame: Any = sys._getframe(depth)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        rel = os.path.relpath(path, _ROOT)
        if path != here and rel.split(os.sep)[0] in _PACKAGES:
            return f"{rel}:{frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


def note(site: str, units: int, result: str, seconds: float = 0.0, conflicts: int = 0) -> None:
    """Append one record to the file `$LIFTCL_Z3_RECORD` names (nothing when it is unset)."""
    path = os.environ.get(RECORD_ENV)
    if not path:
        return
    line = json.dumps({"site": site, "used": units, "result": result, "s": round(seconds, 4),
                       "conflicts": conflicts, "pid": os.getpid(), "test": os.environ.get("PYTEST_CURRENT_TEST", "")})
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def _recording(check: Any) -> Any:
    def recorded(self: Any, *assumptions: Any) -> Any:
        before, start = used(self), time.perf_counter()
        result = check(self, *assumptions)
        why = f" ({self.reason_unknown()})" if result == z3.unknown else ""
        stats = self.statistics()
        conflicts = max([int(stats.get_key_value(k)) for k in stats.keys() if k.endswith("conflicts")] or [0])
        note(_site(), used(self) - before, f"{result}{why}", time.perf_counter() - start, conflicts)
        return result

    recorded.__wrapped__ = check  # type: ignore[attr-defined]
    return recorded


def install_recorder() -> None:
    """Record every `Solver.check` and `Optimize.check` of this process (site, units used,
    answer, seconds) in `$LIFTCL_Z3_RECORD`; done on import when that variable is set."""
    for cls in (z3.Solver, z3.Optimize):
        if not hasattr(cls.check, "__wrapped__"):
            cls.check = _recording(cls.check)


def summary(lines: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Per site: checks, the largest use, seconds and conflicts, and the answers (from records)."""
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        r = json.loads(line)
        s = out.setdefault(r["site"], {"checks": 0, "max_used": 0, "max_s": 0.0, "max_conflicts": 0,
                                       "results": {}})
        s["checks"] += 1
        s["max_used"] = max(s["max_used"], r["used"])
        s["max_conflicts"] = max(s["max_conflicts"], r.get("conflicts", 0))
        s["max_s"] = max(s["max_s"], r["s"])
        s["results"][r["result"]] = s["results"].get(r["result"], 0) + 1
    return out


def main(argv: list[str]) -> int:
    """Print the summary of the record files named in `argv`."""
    lines: list[str] = []
    for name in argv:
        with open(name, encoding="utf-8") as f:
            lines += f.readlines()
    for site, s in sorted(summary(lines).items(), key=lambda kv: -kv[1]["max_used"]):
        print(f"{site:55s} {s['checks']:7d} checks  largest {s['max_used']:>13,d} units  {s['max_s']:7.2f} s  "
              f"{s['max_conflicts']:7d} conflicts  {s['results']}")
    return 0


if os.environ.get(RECORD_ENV):
    install_recorder()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


__all__ = ["MODEL_RLIMIT", "MAPPING_RLIMIT", "PREFER_RLIMIT", "PROOF_RLIMIT", "GPU_TILES_RLIMIT",
           "RECORD_ENV", "limited", "solve_isolated", "Isolated", "used", "note", "install_recorder", "summary"]
