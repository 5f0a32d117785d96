"""The per-pattern registry (lift.ir.registry) against the stages themselves: every IR node class
has an entry; each stage's dispatch names the classes the registry says it handles; every stage
runs on a program using each node class (typecheck, batched == element-wise interpretation, the
default lowering, memory allocation and kernel generation); refusals are named `UnsupportedError`s."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import textwrap
import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import lift
import lift.rewrites  # noqa: F401 - its rewrite points are IR node classes too
from lift import (
    Array,
    Float,
    Int,
    Size,
    fun,
    iterate,
    map,
    map_glb,
    map_seq,
    reduce_atomic,
    split,
    to_private,
    transpose_w,
)
from lift.devices import profile
from lift.interpret import Stats
from lift.interpret.batch import Batched
from lift.interpret.element import Element
from lift.ir import nodes as n
from lift.ir.paths import walk
from lift.ir.registry import REGISTRY, Refused, stages_of
from lift.lower import is_high_level, lower, verify_lowered
from lift.memory import KERNEL_CASES, KERNEL_REFUSED, kernel_case
from lift.testing import assert_same
from lift.typecheck import infer, typecheck
from lift.userfun.builtins import neg

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SMALL = {"axpy": (6,), "dot": (13,), "gemv": (24, 40), "matmul": (32, 32, 8), "stencil2d": (20, 36),
         "conv": (6, 3, 8)}
N, M = Size("N"), Size("M")
BASES = (n.Node, n.Expr, n.FunDecl, n.Pattern, n.AbstractMap, n.AbstractReduce)


def _subclasses(c: type) -> set[type]:
    """Subclasses of `c`, recursively; the final classes only (a slotted dataclass replaces the
    class its decorator was given, which lingers in `__subclasses__`)."""
    out = {s for d in c.__subclasses__() for s in {d, *_subclasses(d)}}
    return {s for s in out if getattr(sys.modules[s.__module__], s.__name__, None) is s}


NODE_CLASSES = sorted((c for c in _subclasses(n.Node) if c not in BASES and c.__module__ == "lift.ir.nodes"),
                      key=lambda c: c.__name__)


def test_every_node_class_has_an_entry_for_every_stage():
    assert set(REGISTRY) == set(n.ALL_NODE_TYPES) == set(NODE_CLASSES)
    others = [c for c in _subclasses(n.Node) if c not in BASES and c not in REGISTRY
              and c.__module__.startswith("lift.")]  # not this file's _Unknown
    assert others, "the rewrite points are node classes too"
    for c in [*REGISTRY, *others]:
        s = stages_of(c)
        assert s is not None, f"{c.__name__} has no registry entry"
        for stage in ("typecheck", "interpret", "lower", "kernel"):
            e = getattr(s, stage)
            assert (e.reason if isinstance(e, Refused) else e), f"{c.__name__}.{stage} is empty"


def _matched(fn) -> set[type]:
    """The node classes a function's `match` statements name in their class patterns."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    names = {p.cls.attr if isinstance(p.cls, ast.Attribute) else p.cls.id
             for p in ast.walk(tree) if isinstance(p, ast.MatchClass)}
    return {getattr(n, k) for k in names if isinstance(getattr(n, k, None), type)}


@pytest.mark.parametrize(("stage", "dispatch"), [
    ("typecheck", (infer,)), ("interpret", (Element.call,)), ("interpret", (Batched.call, Batched.layout)),
])
def test_each_stage_dispatches_on_what_the_registry_says_it_handles(stage, dispatch):
    named = set().union(*(_matched(fn) for fn in dispatch))
    for c in NODE_CLASSES:
        if not issubclass(c, n.FunDecl):
            continue  # expressions: checked by running the stages below
        handled = any(issubclass(c, k) for k in named)
        refused = isinstance(getattr(REGISTRY[c], stage), Refused)
        assert handled != refused, f"{c.__name__}: {stage} {'refuses' if refused else 'handles'} it, the " \
                                   f"dispatch {'names' if handled else 'does not name'} it"


def test_the_kernel_traversal_dispatches_through_the_registry():
    for c in NODE_CLASSES:
        if issubclass(c, n.FunDecl):
            k = REGISTRY[c].kernel
            if isinstance(k, Refused):
                assert KERNEL_REFUSED[c] == k.reason and c not in KERNEL_CASES
            else:
                assert KERNEL_CASES[c] == k.split(":")[0]
    high = fun([Array(Float, N)], lambda x: lift.reduce(lift.add, 0.0) << map(neg) << x)
    for c in (n.Map, n.Reduce, n.OclKernel):
        node = n.OclKernel(high) if c is n.OclKernel else next(x for _, x in walk(high) if type(x) is c)
        with pytest.raises(lift.UnsupportedError) as err:
            kernel_case(node)
        assert REGISTRY[c].kernel.reason in str(err.value)  # type: ignore[union-attr]


@n.node
class _Unknown(n.Pattern):
    """A pattern no stage knows."""


def test_an_unknown_pattern_is_refused_by_every_stage_by_name():
    node = _Unknown()
    p = n.Lambda((x := n.Param(Array(Float, N), "x"),), n.FunCall(node, (x,)))
    with pytest.raises(lift.UnsupportedError, match="_Unknown"):
        typecheck(p)
    with pytest.raises(lift.UnsupportedError, match="_Unknown"):
        Element({}, {}).call(node, [np.zeros(2, np.float32)], None, {})
    with pytest.raises(lift.UnsupportedError, match="_Unknown"):
        kernel_case(node)


# ------------------------------------------------------------ every stage on every node class


def _extra():
    """Programs for the node classes that no example variant uses (six of them)."""
    return {
        "at": (fun([Array(Float, N)], lambda x: map(lambda w: w[1]) << split(2) << x),
               (np.arange(8, dtype=np.float32),)),
        "iterate": (fun([Array(Array(Float, M), N)], lambda x: map(lambda r: iterate(2, map(neg)) << r) << x),
                    (np.arange(12, dtype=np.float32).reshape(3, 4),)),
        "to_private": (fun([Array(Array(Float, 4), N)], lambda a: map_glb(
            lambda r: map_seq(lift.id) << to_private(map_seq(lift.id)) << r) << a),
            (np.arange(12, dtype=np.float32).reshape(3, 4),)),
        "reduce_atomic": (fun([Array(Int, N)], lambda x: reduce_atomic(lift.add, 5) << map(
            lambda c: lift.reduce(lift.add, 0) << c) << split(4) << x), (np.arange(64, dtype=np.int32),)),
        "gather": (fun([Array(Array(Float, 3), N), Array(Int, M)], lambda t, i: map(
            lambda r: lift.reduce(lift.add, 0.0) << r) << lift.gather(t, i)),
            (np.arange(12, dtype=np.float32).reshape(4, 3), np.array([3, 0, 3, 1, 2], np.int32))),
        "transpose_w": (fun([Array(Array(Float, M), N)], lambda a: transpose_w << map_glb(map_seq(lift.id)) << a),
                        (np.arange(12, dtype=np.float32).reshape(3, 4),)),
    }


@cache
def _pool() -> dict[str, tuple]:
    """Name -> (program, inputs, compile keywords): every example variant and the extras."""
    out = {name: (p, args, {}) for name, (p, args) in _extra().items()}
    sys.path.insert(0, str(EXAMPLES))
    try:
        for mod in sorted(SMALL):
            module = importlib.import_module(mod)
            args = module.inputs(*SMALL[mod])
            for v in module.variants():
                out[f"{mod}: {v.name}"] = (v.program, args, v.compile_kw)
    finally:
        sys.path.remove(str(EXAMPLES))
    return out


@cache
def _classes_used() -> dict[str, set[type]]:
    """Name -> the node classes its program uses, before or after the default lowering."""
    out = {}
    for name, (p, _, _) in _pool().items():
        lowered = lower(p) if is_high_level(p) else p
        out[name] = {type(x) for prog in (p, lowered) for _, x in walk(prog)}
    return out


def _sample(cls: type) -> str:
    """The first program of the pool that uses `cls`."""
    for name, used in _classes_used().items():
        if cls in used:
            return name
    raise AssertionError(f"no program uses {cls.__name__}: add one to _extra()")


@pytest.mark.parametrize("cls", NODE_CLASSES, ids=lambda c: c.__name__)
def test_every_stage_runs_on_a_program_using_each_node_class(cls):
    _every_stage(_sample(cls))


@cache
def _every_stage(name: str) -> None:
    """Typecheck, interpret (batched == element-wise, no fallback), lower, compile (offline)."""
    program, args, compile_kw = _pool()[name]
    typecheck(program)
    stats = Stats()
    want = lift.interpret(program, *args, batched=False)
    got = lift.interpret(program, *args, stats=stats)
    assert np.array_equal(want, got, equal_nan=True) and not stats.fallbacks, name
    lowered = lower(program) if is_high_level(program) else program
    verify_lowered(lowered, program)
    assert_same(want, lift.interpret(lowered, *args))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = lift.compile(lowered, device=profile("nvidia"), **compile_kw)  # allocated, viewed, emitted
    assert "kernel void" in prog.source, name
