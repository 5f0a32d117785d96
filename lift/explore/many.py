"""`lift.tune_all`: tune many programs, each on all runners, resumably (issue 29).

    results = lift.tune_all(["examples/matmul.py", "examples/vgg_layers.py"], budget=60, cluster="ray")
    lift tune-all examples/vgg_layers.py --budget 60 --ray          # the nine VGG-16 layers

A source is a program file (module-level `program` and `inputs()`, as `lift tune` takes), a
file whose `programs()` returns {name: (program, arguments)} (several programs, e.g. the nine
VGG layers), or a (name, program, arguments) tuple. The programs are tuned one after the
other, each with every runner of the back end (`cluster=`) measuring its candidates; every
candidate and every winner is written to the tuning database by this process (the driver) as
it arrives. Run again after a kill, a finished program is a database hit (no search) and an
interrupted one resumes with the candidates it had measured.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from lift.errors import LiftValueError
from lift.ir.nodes import Lambda

from .tune import tune

Source = Any  # a path (str or Path) or a (name, program, arguments) tuple


def load(source: Source, inputs_args: tuple = ()) -> list[tuple[str, Any, tuple]]:
    """The (name, program, arguments) of a source (see the module's docstring)."""
    if isinstance(source, tuple):
        name, program, arrays = source
        return [(str(name), program, tuple(arrays))]
    file = Path(source)
    if not file.is_file():
        raise LiftValueError(f"{source}: no such program file")
    folder = str(file.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(f"lift_program_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise LiftValueError(f"{source}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    many = getattr(module, "programs", None)
    if callable(many):
        return [(f"{file.stem}:{k}", p, tuple(a)) for k, (p, a) in many(*inputs_args).items()]
    program, make = getattr(module, "program", None), getattr(module, "inputs", None)
    if not isinstance(program, Lambda) or not callable(make):
        raise LiftValueError(f"{source}: defines neither `programs()` nor `program` and `inputs()`")
    arrays = make(*inputs_args)
    return [(file.stem, program, arrays if isinstance(arrays, tuple) else (arrays,))]


def programs(sources: Iterable[Source], inputs_args: tuple = ()) -> Iterator[tuple[str, Any, tuple]]:
    """Every (name, program, arguments) of `sources`, in order."""
    for s in sources:
        yield from load(s, inputs_args)


def tune_all(sources: Iterable[Source], *, budget: float = 60, cluster: str | None = None,
             on_result: Callable[[str, Any], None] | None = None, inputs_args: tuple = (),
             **tune_kw: Any) -> dict[str, Any]:
    """`lift.tune` every program of `sources` (files or (name, program, arguments) tuples), each
    with `budget` seconds, on the runners of `cluster` (None: this machine; "ray", "ray://...");
    `tune_kw` are `lift.tune`'s other keywords. Returns {name: TuneResult}; `on_result(name,
    result)` is called as each finishes. Resumable: see the module's docstring."""
    out: dict[str, Any] = {}
    for name, program, arrays in programs(sources, inputs_args):
        result = tune(program, *arrays, budget=budget, cluster=cluster, **tune_kw)
        out[name] = result
        if on_result is not None:
            on_result(name, result)
    return out


__all__ = ["tune_all", "load", "programs"]
