"""`lift tune FILE.py`: search for the best compilation of a program file's program (lift.tune),
print the winner and the time/memory Pareto front, optionally as JSON and as a picture.
`lift tune-all FILE...`: tune every program of several files (lift.tune_all), resumably;
`--ray [ADDRESS]` runs either on a Ray cluster (lift.explore.cluster)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import lift
from lift.cli import device_arg, load_program, parse_literals, write_user_file
from lift.explore import TuningDB
from lift.explore.dbkeys import encode_choices
from lift.explore.effort import EFFORTS, effort_of
from lift.explore.points import describe, is_default
from lift.explore.search import STRATEGIES


def add_tune(sub: Any, program_args: Callable[[argparse.ArgumentParser], None]) -> None:
    """The `tune` subcommand's parser."""
    p = sub.add_parser("tune", help="tune a program file's program (lift.tune) and keep the winner")
    program_args(p)
    p.add_argument("--budget", type=float, default=None, metavar="S",
                   help="seconds of search (default: the effort's, 60 for normal)")
    p.add_argument("--effort", choices=tuple(EFFORTS), default="normal",
                   help="how much to explore (lift.tune's effort=): quick (the default lowering, winners "
                        "tuned at other sizes, seeds, a few more; 20 s), normal (until the budget; 60 s), "
                        "exhaustive (no uniqueness constraints; 600 s)")
    p.add_argument("--objective", choices=("time", "memory", "pareto"), default="time",
                   help="what to minimise; pareto keeps the time/memory front, the fastest as the winner")
    p.add_argument("--strategy", choices=STRATEGIES, default="random-local",
                   help="the search strategy (default random-local: random sampling, then hill climbing)")
    p.add_argument("--seed", type=int, default=0, help="the search's random seed")
    p.add_argument("--refresh", action="store_true", help="measure and search again, ignoring the database")
    p.add_argument("--no-auto", action="store_true", help="no automatic rewrite points (only the program's own)")
    p.add_argument("--db", help="the tuning database file (default: $LIFTCL_TUNING_DB or the liftcl cache)")
    p.add_argument("--no-db", action="store_true", help="use no tuning database")
    p.add_argument("--json", metavar="OUT", help="write the result (winner, Pareto front, candidates) as JSON")
    p.add_argument("--plot", nargs="?", const="", metavar="PNG",
                   help="draw the candidates and the Pareto front (needs matplotlib; default FILE-OBJECTIVE.png)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _ray_arg(p)
    p.set_defaults(run=cmd_tune)
    add_tune_all(sub)


def _ray_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ray", nargs="?", const="ray", metavar="ADDRESS",
                   help="build and run candidates on a Ray cluster: ADDRESS (ray://host:10001, auto), "
                        "else a Ray started here (needs pip install 'liftcl[ray]')")
    p.add_argument("--builders", type=int, metavar="N", help="with --ray: build tasks in flight (default: its CPUs)")


def add_tune_all(sub: Any) -> None:
    """The `tune-all` subcommand's parser."""
    p = sub.add_parser("tune-all", help="tune every program of several files (resumable), one line each")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="program files (`program` and `inputs()`, or `programs()` returning {name: (program, args)})")
    p.add_argument("--inputs", help="Python literals passed to each file's inputs()/programs()")
    p.add_argument("--budget", type=float, default=60.0, metavar="S", help="seconds of search per program")
    p.add_argument("--strategy", choices=STRATEGIES, default=None, help="the search strategy")
    p.add_argument("--device", help="the device (default: as lift.compile chooses)")
    p.add_argument("--refresh", action="store_true", help="measure and search again, ignoring the database")
    p.add_argument("--db", help="the tuning database file (default: $LIFTCL_TUNING_DB or the liftcl cache)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _ray_arg(p)
    p.set_defaults(run=cmd_tune_all)


def cmd_tune_all(opts: argparse.Namespace) -> int:
    def line(name: str, result: Any) -> None:
        st, best = result.stats, result.best_record
        how = "from the database" if result.cached else (
            f"{st['candidates']} candidates in {st['seconds']:.1f} s, {st.get('from_database', 0)} from the database")
        print(f"{name}: {_ms(best.time if best else None)} ({how})", flush=True)

    results = lift.tune_all(opts.files, budget=opts.budget, cluster=opts.ray, on_result=line,
                            inputs_args=parse_literals(opts.inputs), device=device_arg(opts.device),
                            db=TuningDB(opts.db), progress=not opts.quiet, refresh=opts.refresh,
                            strategy=opts.strategy, builders=opts.builders)
    print(f"{len(results)} programs tuned")
    return 0


def cmd_tune(opts: argparse.Namespace) -> int:
    program, arrays, name = load_program(opts.file, opts.inputs)
    db: Any = False if opts.no_db else TuningDB(opts.db)
    result = lift.tune(program, *arrays, budget=opts.budget, objective=opts.objective, device=device_arg(opts.device),
                       seed=opts.seed, db=db, progress=not opts.quiet, refresh=opts.refresh,
                       auto=not opts.no_auto, strategy=opts.strategy, cluster=opts.ray,
                       builders=opts.builders, effort=opts.effort)
    report(result, name, opts.budget if opts.budget is not None else effort_of(opts.effort).budget)
    if opts.json:
        write_user_file(opts.json, json.dumps(result.to_json(), indent=1, default=str) + "\n")
    if opts.plot is not None:
        path = opts.plot or f"{name}-{opts.objective}.png"
        result.plot(path, title=f"{name}: time and memory of {len(result.history)} candidates")
        print(f"plot: {path}")
    return 0


def report(result: Any, name: str, budget: float) -> None:
    """The winner, how the search went, and the Pareto front."""
    st, best = result.stats, result.best_record
    dev = result.best.device
    if result.cached:
        print(f"{name} on {dev.name}: from the tuning database ({st.get('searched', '?')} candidates tried before)")
    else:
        print(f"{name} on {dev.name}: {st['candidates']} candidates in {st['seconds']:.1f} s "
              f"(budget {budget:g} s), {st['rejected']} rejected, {st.get('measured', '?')} measured here, "
              f"{st.get('from_database', 0)} from the database, {st.get('redundant', 0)} redundant not built, "
              f"{st.get('transferred', 0)} transferred from other sizes")
    print(f"best: {_ms(best.time if best else None)}, {_mib(best.memory if best else None)}{_gain(st, best)}")
    print(f"choices: {json.dumps(encode_choices(result.choices), sort_keys=True)}")
    print(f"Pareto front of time and memory ({len(result.pareto)}):")
    for r in result.pareto:
        print(f"  {_ms(r.time):>12s} {_mib(r.memory):>12s}  {describe(r.candidate)}")
    sys.stdout.flush()


def _gain(stats: dict[str, Any], best: Any) -> str:
    """The winner against the default lowering: from the confirmation round where both were in it
    (timed interleaved: the figures that chose the winner), else from the search's own times
    (taken minutes apart on a noisy machine, so a winner can look slower there)."""
    if best is None or not best.time:
        return ""
    medians = {c["candidate"]: c["median_s"] for c in stats.get("confirmed", ())}
    won, base = medians.get(describe(best.candidate)), medians.get("default lowering")  # points.describe
    if won and base and is_default(best.candidate):
        return f", the default lowering (it won the confirmation round: {_ms(base)}, a median of interleaved rounds)"
    if won and base:
        return (f", {base / won:.2f}x the default lowering in the confirmation round ({_ms(won)} against "
                f"{_ms(base)}, medians of {stats.get('confirm_rounds', '?')} interleaved rounds)")
    default = stats.get("default_time")
    return f", {default / best.time:.2f}x the default lowering as searched ({_ms(default)})" if default else ""


def _ms(t: float | None) -> str:
    return f"{t * 1e3:.4f} ms" if t is not None else "? ms"


def _mib(b: int | None) -> str:
    return f"{b / 2**20:.3f} MiB" if b is not None else "? MiB"
