"""The `lift` command (also `python -m lift`): devices, show, tune, bench and the tuning database.

    lift devices                          every platform and device, usable or not, the default
    lift show FILE.py [--device D] [--choices JSON]
    lift tune FILE.py [--budget S] [--objective time|memory|pareto] [--plot [PNG]] [--json OUT] [--ray [ADDR]]
    lift tune-all FILE... [--budget S] [--ray [ADDR]]   (lift.tune_all: many programs, resumable)
    lift bench [NAMES...] [--tune S] [--json OUT]
    lift bench seeds [WORKLOADS...] [--quick] [--tune S] [--json OUT]   (benchmarks/seeds.py)
    lift db list | show KEY | export [OUT] | import FILE | clear [KEY]

A *program file* is a Python file that defines, at module level, `program` (a `lift.fun`
program) and `inputs()`, a function returning the tuple of arguments to run it on (numpy
arrays and scalars); `--inputs 'A,B'` passes Python literals to `inputs`. The examples/
follow it: `lift tune examples/dot.py`. The file's folder is put first on `sys.path`, so
it may import its neighbours.

The tuning database is `$LIFTCL_TUNING_DB`, else `<liftcl cache>/tuning.sqlite`; `--db PATH`
names another. Exit status: 0 success, 1 a failure (a program that does not compile, a tune
with no correct candidate), 2 a usage error (bad option, missing file, unknown key); the
message goes to standard error, prefixed with `lift:`.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lift
from lift import devices, runtime
from lift.constraints import describe, joint_space
from lift.errors import LiftError
from lift.explore import TuningDatabaseWarning, TuningDB, dbrepair
from lift.files import write_atomic
from lift.interpret import bind_sizes
from lift.ir.nodes import Lambda
from lift.lower import is_high_level
from lift.typecheck import typecheck

USAGE, FAILURE = 2, 1


class CliError(Exception):
    """A message for the user and an exit status."""

    def __init__(self, message: str, status: int = USAGE) -> None:
        super().__init__(message)
        self.status = status


# ------------------------------------------------------------------ program files


def load_program(path: str, inputs_args: str | None = None) -> tuple[Any, tuple[Any, ...], str]:
    """The `program`, the arguments `inputs(...)` returns, and a name, from a program file."""

    file = Path(path)
    if not file.is_file():
        raise CliError(f"{path}: no such file")
    sys.path.insert(0, str(file.resolve().parent))
    spec = importlib.util.spec_from_file_location(f"lift_program_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise CliError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except LiftError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's file failed to import
        raise CliError(f"{path}: {type(err).__name__}: {err}", FAILURE) from err
    program = getattr(module, "program", None)
    if not isinstance(program, Lambda):
        raise CliError(f"{path}: defines no module-level `program` (a lift.fun program); see `lift --help`")
    make = getattr(module, "inputs", None)
    if not callable(make):
        raise CliError(f"{path}: defines no `inputs()` function returning the program's arguments")
    args = parse_literals(inputs_args)
    try:
        arrays = make(*args)
    except Exception as err:  # noqa: BLE001
        raise CliError(f"{path}: inputs({', '.join(map(repr, args))}) failed: {type(err).__name__}: {err}") from err
    arrays = arrays if isinstance(arrays, tuple) else (arrays,)
    if len(arrays) != len(program.params):
        raise CliError(f"{path}: inputs() returned {len(arrays)} arguments; program takes {len(program.params)}")
    return program, arrays, file.stem


def parse_literals(text: str | None) -> tuple[Any, ...]:
    """The inputs written on the command line (`--inputs`), as Python literals; () for none."""
    if not text:
        return ()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as err:
        raise CliError(f"--inputs {text!r}: not Python literals ({err})") from None
    return value if isinstance(value, tuple) else (value,)


def device_arg(name: str | None) -> Any:
    """`--device`: an offline profile's name gives its `Device` (compile for it without it attached);
    any other name is matched against the attached devices."""

    if name is not None and name.lower() in devices.PROFILE_NAMES:
        return devices.profile(name)
    return name


def _db(opts: argparse.Namespace) -> Any:

    return TuningDB(opts.db)


# ------------------------------------------------------------------------- devices


def cmd_devices(opts: argparse.Namespace) -> int:

    rows = _device_rows()
    try:
        default = devices.current()
        default_key: str | None = default.key
    except LiftError as err:
        default, default_key = None, None
        print(f"lift: no usable default device: {err}", file=sys.stderr)
    profiles = {name: devices.profile(name) for name in devices.PROFILE_NAMES}
    if opts.json:
        out = {"devices": rows, "default": default_key,
               "profiles": {n: _profile_dict(p) for n, p in profiles.items()}}
        print(json.dumps(out, indent=2, default=str))
        return 0
    for r in rows:
        mark = "*" if r.get("default") or (default_key and r.get("key") == default_key) else " "
        state = "usable" if r["usable"] else f"unusable: {r['why']}"
        where = f"[{r['ctx']}] " if r.get("ctx") else ""
        print(f"{mark} {where}{r['platform']}: {r['name']} [{r.get('kind', '?')}] {state}")
        if r["usable"]:
            print(f"    {r['compute_units']} compute units, work-groups up to {r['max_work_group_size']}, "
                  f"{r['local_mem_bytes'] // 1024} KiB local memory, {r['global_mem_bytes'] / 2**30:.1f} GiB global")
            if r.get("facts"):
                print(f"    {r['facts']}")
    if not rows:
        print("no OpenCL platform found")
    print(f"default: {default.name if default else 'none'} (marked *; set device= or PYOPENCL_CTX to choose another)")
    print("offline profiles (compile for a device that is not attached: --device NAME):")
    for name, p in profiles.items():
        print(f"  {name:10s} {p.name} [{p.kind}], {p.compute_units} compute units, "
              f"work-groups up to {p.max_work_group_size}, {p.local_mem_bytes // 1024} KiB local memory")
        if p.vector_bits or p.l1d_bytes:
            print(f"  {'':10s} {devices.facts.summary(p)}")
    return 0


def _device_rows() -> list[dict[str, Any]]:
    """Every platform's devices, usable or not and why (`lift.devices.list` where there is one)."""

    listed = getattr(devices, "list", None)
    if callable(listed):
        rows = []
        for info in listed():
            why = info.reason + (f" ({info.explanation})" if info.explanation else "")
            row = {"platform": info.platform, "name": info.name or "-", "kind": info.kind, "ctx": info.ctx,
                   "usable": info.usable, "why": "" if info.usable else why, "default": info.default}
            if info.profile is not None:
                row.update(_profile_dict(info.profile))
            rows.append(row)
        return rows

    try:
        cl = devices.live._cl()  # only lift.devices and lift.runtime touch pyopencl
        platforms = cl.get_platforms()
    except Exception as err:  # noqa: BLE001 - no ICD loader, no platform
        return [{"platform": "OpenCL", "name": "-", "usable": False, "why": f"{type(err).__name__}: {err}"}]
    rows = []
    for p in platforms:
        try:
            found = p.get_devices()
        except Exception as err:  # noqa: BLE001
            rows.append({"platform": p.name, "name": "-", "usable": False, "why": str(err)})
            continue
        for d in found:
            row = {"platform": p.name, "name": d.name}
            try:
                dev = devices.describe(d)
                runtime.open_device(d)
                row.update(_profile_dict(dev), usable=True, why="")
            except Exception as err:  # noqa: BLE001 - report and go on
                row.update(usable=False, why=f"{type(err).__name__}: {str(err).splitlines()[0]}")
            rows.append(row)
    return rows


def _profile_dict(p: Any) -> dict[str, Any]:
    keys = ("name", "kind", "compute_units", "max_work_group_size", "local_mem_bytes", "global_mem_bytes",
            "platform", "driver_version", "vector_bits", "vector_registers", "target", "vector_source", "l1d_bytes",
            "l2_bytes", "l3_bytes")
    return {**{k: getattr(p, k) for k in keys}, "key": p.key, "facts": devices.facts.summary(p)}


# ---------------------------------------------------------------------------- show


def cmd_show(opts: argparse.Namespace) -> int:

    program, arrays, _ = load_program(opts.file, opts.inputs)
    print(f"program:\n  {program}\n\ntype:\n  {typecheck(program)}\n")
    choices = _json_arg(opts.choices, "--choices") if opts.choices else None
    device = device_arg(opts.device)
    prog = lift.compile(program, device=device, choices=choices)
    report, maps = _constraints(program, arrays, device)
    print("choices:")
    print(_indent(_describe_choices(prog.choices, maps)))
    print("\nconstraints:")
    print(_indent(report))
    print(f"\nOpenCL source ({', '.join(prog.kernels)}):")
    print(prog.source)
    _show_specialised(prog, arrays, maps)
    return 0


def _show_specialised(prog: Any, arrays: tuple[Any, ...], maps: set[str]) -> None:
    """What a call with the file's inputs runs when the program specialises to their sizes (lift/specialise.py)."""
    if not prog.specialises:
        return
    try:
        special = prog.specialised(*arrays)
    except LiftError:
        return  # the inputs do not fit the program: calling it says why
    rec = prog.specialisations[-1]
    sizes = ", ".join(f"{k}={v}" for k, v in rec.sizes.items())
    if special is prog:
        print(f"\ncalls with these inputs ({sizes}) run the program above: {rec.reason}")
        return
    print(f"\ncalls with these inputs run it specialised to {sizes} ({rec.reason}; compiled in {rec.seconds:.2f} s);"
          " its choices:")
    print(_indent(_describe_choices(special.choices, maps)))
    print(f"\nspecialised OpenCL source ({', '.join(special.kernels)}):")
    print(special.source)


def _json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(Path(text[1:]).read_text() if text.startswith("@") else text)
    except (OSError, ValueError) as err:
        raise CliError(f"{what}: not JSON (or @FILE of JSON): {err}") from None
    except RecursionError:
        raise CliError(f"{what}: not JSON (or @FILE of JSON) liftcl reads: nested too deeply") from None


def _describe_choices(choices: Any, maps: set[str]) -> str:
    """The choices, one per line; a map's Table 5.2 code in words."""
    if not choices:
        return "none (nothing to choose: no rewrite point, map or tuning parameter is open)"
    data = choices.to_json() if hasattr(choices, "to_json") else choices
    if not isinstance(data, dict):
        return str(data)
    lines = []
    for k, v in data.items():
        if k == "format" or v is None or v == {}:
            continue
        if isinstance(v, dict):
            lines += [f"{k}:"] + [f"  {n} = {_shown(n, x, maps)}" for n, x in v.items()]
        else:
            lines.append(f"{k} = {_shown(k, v, maps)}")
    return "\n".join(lines) or "none"


def _shown(name: str, v: Any, maps: set[str]) -> str:

    if name in maps and isinstance(v, int):
        try:
            return f"{v} ({describe(v)})"
        except ValueError:
            pass
    return v if isinstance(v, str) else json.dumps(v)


def _constraints(program: Any, arrays: Sequence[Any], device: Any) -> tuple[str, set[str]]:
    """The joint space's constraint report and its map labels."""

    if not is_high_level(program):
        return "the program is already mapped (no mapping or tuning space)", set()
    try:
        sizes = bind_sizes([p.ptype for p in program.params], tuple(arrays), program)
        space = joint_space(program, device, sizes=sizes)
    except LiftError as err:
        return f"no constraint space: {type(err).__name__}: {str(err).splitlines()[0]}", set()
    return f"{space.report()}\nvariables: {', '.join(space.variables) or 'none'}", set(space.context.maps)


def _indent(text: str) -> str:
    return "\n".join("  " + ln for ln in text.splitlines())


# -------------------------------------------------------------------- db and bench


def cmd_db(opts: argparse.Namespace) -> int:
    db = _db(opts)
    foreign = dbrepair.foreign(db.path)
    if foreign is not None:  # a JSON export or a user's file given as --db: left alone
        raise CliError(f"the tuning database {foreign}", FAILURE)
    if opts.action == "list":
        rows = db.winners()
        for w in rows:
            i, e = w["info"], w["entry"]
            t = f"{e['time'] * 1e3:.4f} ms" if e.get("time") else "?"
            print(f"{w['key'][:12]}  {i.get('objective', '?'):6s} {t:>12s}  {e.get('candidates', '?'):>4} tried  "
                  f"{i.get('device_name', '?')}  {i.get('shapes', '')}")
        print(f"{len(rows)} tuned problems, {db.counts().get('candidates', 0)} measured candidates in {db.path}")
    elif opts.action == "show":
        w = _one(db, opts.key)
        print(json.dumps({**w, "measured": len(db.finished(w["info"].get("mkey", "")))}, indent=2, default=str))
    elif opts.action == "export":
        data = db.export()
        if db.broken or db.repaired:  # nothing to export: the user's FILE stays as it was
            why = f"moved aside to {db.repaired}" if db.repaired else db.broken
            raise CliError(f"nothing exported: the tuning database {db.path} is unusable ({why})", FAILURE)
        text = json.dumps(data, indent=1, default=str)
        if opts.key in (None, "-"):
            print(text)
        else:
            write_user_file(opts.key, text + "\n")
    elif opts.action == "import":
        if opts.key is None:
            raise CliError("db import needs a FILE (an export)")
        try:
            text = Path(opts.key).read_text()
        except (OSError, ValueError) as err:
            raise CliError(f"{opts.key}: {err}") from None
        skipped: list[str] = []
        try:
            with warnings.catch_warnings():  # the skipped rows are named below, once each
                warnings.simplefilter("ignore", TuningDatabaseWarning)
                n = db.import_json(json.loads(text), skipped=skipped)
        except RecursionError:
            raise CliError(f"{opts.key}: not an export: its JSON is nested too deeply", FAILURE) from None
        except ValueError as err:
            raise CliError(f"{opts.key}: {str(err).splitlines()[0]}", FAILURE) from None
        print(f"imported {n} rows into {db.path}")
        if skipped:
            shown = "; ".join(skipped[:5]) + (f"; and {len(skipped) - 5} more" if len(skipped) > 5 else "")
            raise CliError(f"{opts.key}: skipped {len(skipped)} malformed rows: {shown}", FAILURE)
    elif opts.action == "clear":
        if opts.key is not None and not opts.key:
            raise CliError("db clear KEY needs a non-empty key (a prefix from `lift db list`); "
                           "`lift db clear` with no KEY removes everything")
        n = db.clear(opts.key)
        if opts.key is not None and n == 0:
            raise CliError(f"no tuned problem with a key starting {opts.key!r}")
        print(f"removed {n} tuned problems from {db.path}")
    return 1 if db.broken else 0


def write_user_file(path: str, text: str) -> None:
    """Replace the user's file `path` with `text` at once (`lift.files.write_atomic`): on any failure
    the old file stays whole, and the failure is a CliError."""

    try:
        write_atomic(path, text)
    except OSError as err:
        raise CliError(f"cannot write {path}: {err}", FAILURE) from None


def _one(db: Any, key: str | None) -> dict[str, Any]:
    if not key:
        raise CliError("db show needs a KEY (a prefix from `lift db list`)")
    found = [w for w in db.winners() if w["key"].startswith(key)]
    if len(found) != 1:
        raise CliError(f"{len(found)} tuned problems have a key starting {key!r}")
    return found[0]


def cmd_bench(opts: argparse.Namespace) -> int:
    """A thin call of benchmarks/bench.py, or of benchmarks/seeds.py for `lift bench seeds [NAMES]`
    (the seed papers' workloads; NAMES narrow them), in the source tree."""
    common = [*(["--tune", str(opts.tune)] if opts.tune else []), *(["--json", opts.json] if opts.json else []),
              *(["--quick"] if opts.quick else []), *(["--repeat", str(opts.repeat)] if opts.repeat else [])]
    if opts.names[:1] == ["seeds"]:
        only = ["--only", ",".join(opts.names[1:])] if opts.names[1:] else []
        return _run_script("seeds.py", [*common, *only])
    return _run_script("bench.py", [*opts.names, *common])


def _run_script(name: str, argv: list[str]) -> int:
    """`main(argv)` of benchmarks/NAME, loaded from the source tree."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / name
    if not script.is_file():
        raise CliError(f"the benchmark suite is not here ({script}); run lift bench from a liftcl source tree")
    spec = importlib.util.spec_from_file_location(f"lift_bench_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        status = module.main(argv)
    except SystemExit as done:  # the script's own argument errors
        status = done.code
    return status if isinstance(status, int) else (0 if status is None else USAGE)


def cmd_tc(opts: argparse.Namespace) -> int:
    """`lift tc FILE`: each TC function's `lift.fun` program and its type."""

    try:
        source = open(opts.file).read()
        constants = {k.strip(): int(v) for k, v in (kv.split("=") for kv in opts.constants.split(",") if kv)}
    except (OSError, ValueError) as err:
        raise CliError(f"tc: {err}", USAGE) from None
    for name, prog in lift.tc(source, constants=constants, file=opts.file).items():
        print(f"{name}: {lift.typecheck(prog)}\n  {prog}")
    return 0


# -------------------------------------------------------------------------- parser


def parser() -> argparse.ArgumentParser:

    top = argparse.ArgumentParser(prog="lift", description=__doc__.split("\n\n")[0],
                                  epilog=__doc__.split("\n\n", 2)[2],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"liftcl {_version()}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    p = sub.add_parser("devices", help="list OpenCL platforms and devices, the default, offline profiles")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_devices)
    p = sub.add_parser("show", help="a program file's notation, type, choices, constraints and OpenCL source")
    _program_args(p)
    p.add_argument("--choices", help="choices as JSON (or @FILE), as lift.compile(choices=...) takes them")
    p.set_defaults(run=cmd_show)
    from lift.cli_tune import add_tune  # lift.cli_tune reads this module's helpers (a cycle)

    add_tune(sub, _program_args)
    p = sub.add_parser("bench", help="the benchmark suite (benchmarks/bench.py); `bench seeds`: the seed "
                       "papers' workloads (benchmarks/seeds.py)")
    p.add_argument("names", nargs="*", help="examples (and 'baselines') to run, default all; or 'seeds' and "
                   "optionally seed workload names")
    p.add_argument("--tune", type=float, default=0.0, metavar="S", help="also tune each example for S seconds")
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--repeat", type=int, default=0, help="timed runs per kernel")
    p.set_defaults(run=cmd_bench)
    p = sub.add_parser("tc", help="a Tensor Comprehensions file: each function's lambda form and type")
    p.add_argument("file", metavar="FILE.tc", help="TC source: `def name(float(M,K) A, ...) -> (C) { ... }`")
    p.add_argument("--constants", metavar="NAME=INT,...", default="",
                   help="int scalar parameters used in subscripts, fixed (e.g. 'sh=2,sw=2')")
    p.set_defaults(run=cmd_tc)
    p = sub.add_parser("db", help="the tuning database: list, show KEY, export [OUT], import FILE, clear [KEY]")
    p.add_argument("action", choices=("list", "show", "export", "import", "clear"))
    p.add_argument("key", nargs="?", help="a key prefix (show, clear), an output file (export), an export (import)")
    p.add_argument("--db", help="the tuning database file (default: $LIFTCL_TUNING_DB or the liftcl cache)")
    p.set_defaults(run=cmd_db)
    return top


def _program_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE.py", help="a program file: module-level `program` and `inputs()`")
    p.add_argument("--device", help="a device name (substring) or an offline profile (see `lift devices`)")
    p.add_argument("--inputs", metavar="ARGS", help="Python literals passed to inputs(), e.g. '12' or '64, 64, 64'")


def _version() -> str:

    return str(getattr(lift, "__version__", "?"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (the console script exits with it)."""
    opts = parser().parse_args(argv)
    try:
        return int(opts.run(opts) or 0)
    except CliError as err:
        print(f"lift: {err}", file=sys.stderr)
        return err.status
    except LiftError as err:
        print(f"lift: {type(err).__name__}: {err}", file=sys.stderr)
        return FAILURE
    except RecursionError:  # what liftcl reads is nested deeper than it goes (a safety net: one line)
        print("lift: the input is nested too deeply for liftcl (Python's recursion limit)", file=sys.stderr)
        return FAILURE
    except KeyboardInterrupt:
        print("lift: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
