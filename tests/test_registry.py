"""The per-pattern registry (lift.ir.registry) against the stages themselves: every IR node class
has a family; each stage has a registered case for exactly the classes the registry says it handles
and dispatches through the registry (no `match` on node classes); every stage runs on a program
using each node class (typecheck, batched == element-wise interpretation, the default lowering,
memory allocation and kernel generation); refusals are named `UnsupportedError`s; and a new
pattern is one module plus its registration (`Head` below)."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import textwrap
import warnings
from dataclasses import replace
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
from lift.allocation import KERNEL_CASES, KERNEL_REFUSED, kernel_case
from lift.arith import Arith, Cst, prove_nonneg
from lift.constraints.context import Val, analyse
from lift.devices import profile
from lift.interpret import Stats
from lift.interpret.batch import Batched, on_axes
from lift.interpret.element import Element, NotBatchable
from lift.interpret.values import axis_op
from lift.ir import nodes as n
from lift.ir import registry
from lift.ir.layoutfun import invertible, is_layout_fun
from lift.ir.paths import walk
from lift.ir.registry import REGISTRY, TRANSPARENT, Refused, case, define, entry_of, register, table
from lift.layout import apply_view
from lift.lower import is_high_level, lower, verify_lowered
from lift.testing import assert_same
from lift.typecheck import infer, typecheck, typed
from lift.types import ArrayType
from lift.userfun.builtins import neg
from lift.views import Mem, PadV

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SMALL = {"axpy": (6,), "dot": (13,), "gemv": (24, 40), "matmul": (32, 32, 8), "stencil2d": (20, 36),
         "conv": (6, 3, 8)}
N, M = Size("N"), Size("M")
BASES = (n.Node, n.Expr, n.FunDecl, n.Pattern, n.AbstractMap, n.AbstractReduce)
CALLED = ("typecheck", "interpret", "batched", "context")  # stages with a case for every function class
EXPRESSIONS = (n.Param, n.Literal, n.FunCall)


def _subclasses(c: type) -> set[type]:
    """Subclasses of `c`, recursively; the final classes only (a slotted dataclass replaces the
    class its decorator was given, which lingers in `__subclasses__`)."""
    out = {s for d in c.__subclasses__() for s in {d, *_subclasses(d)}}
    return {s for s in out if getattr(sys.modules[s.__module__], s.__name__, None) is s}


NODE_CLASSES = sorted((c for c in _subclasses(n.Node) if c not in BASES and c in REGISTRY
                       and c.__module__.startswith("lift.")), key=lambda c: c.__name__)  # lift.gather's too
FUNCTIONS = [c for c in NODE_CLASSES if issubclass(c, n.FunDecl)]


def test_every_node_class_has_a_family_with_every_stage_described():
    lifts = {c for c in REGISTRY if c.__module__.startswith("lift.")}  # not this file's Head
    assert lifts == set(NODE_CLASSES) >= set(n.ALL_NODE_TYPES)  # the built-in families, and lift.gather's
    others = [c for c in _subclasses(n.Node) if c not in BASES and c not in REGISTRY
              and c.__module__.startswith("lift.")]  # not this file's _Unknown
    assert others, "the rewrite points are node classes too"
    assert all(entry_of(c) is TRANSPARENT for c in others)
    for c in [*REGISTRY, *others]:
        s = entry_of(c)
        assert s is not None and c in REGISTRY or s is TRANSPARENT, f"{c.__name__} has no registry entry"
        for stage in ("typecheck", "interpret", "lower", "kernel"):
            e = getattr(s, stage)
            assert (e.reason if isinstance(e, Refused) else e), f"{c.__name__}.{stage} is empty"
    assert set(registry.FAMILIES.values()) == set(REGISTRY.values())


@pytest.mark.parametrize("stage", CALLED)
def test_each_stage_has_a_case_for_what_the_registry_says_it_handles(stage):
    for c in FUNCTIONS:
        handled = c in table(stage)
        refused = REGISTRY[c].refusal(stage) is not None
        assert handled != refused, f"{c.__name__}: {stage} {'refuses' if refused else 'handles'} it, " \
                                   f"{'a' if handled else 'no'} case is registered"
        assert not handled or REGISTRY[c].cases[stage][c] is table(stage)[c]
    assert registry.RewritePoint in table(stage), f"{stage} has no case for the rewrite points"


def test_the_view_cases_are_the_layout_functions_and_their_inverses():
    for c in FUNCTIONS:
        e = REGISTRY[c]
        composes = c in (n.Lambda, *n.MAPS)
        assert (c in table("view")) == (e.layout is not None or composes or c is n.Let), c.__name__
        assert (c in table("dest")) == (e.layout in ("reshape", "combine") or composes), c.__name__
    assert set(registry.INVERTIBLE) == {c for c in FUNCTIONS if REGISTRY[c].layout in ("reshape", "combine")}
    assert set(registry.IN_PLACE) < set(registry.INVERTIBLE)


def _node_matches(fn) -> set[str]:
    """The class names a function's `match` statements name in their class patterns."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return {p.cls.attr if isinstance(p.cls, ast.Attribute) else p.cls.id
            for p in ast.walk(tree) if isinstance(p, ast.MatchClass)}


@pytest.mark.parametrize("dispatch", [infer, Element.call, Element.eval, Batched.call, Batched.eval, apply_view],
                         ids=lambda f: f.__qualname__)
def test_the_stages_dispatch_through_the_registry(dispatch):
    assert not _node_matches(dispatch) & {c.__name__ for c in _subclasses(n.Node)}
    assert "case(" in inspect.getsource(dispatch) or dispatch in (Element.eval, Batched.eval)


def test_registration_is_checked():
    with pytest.raises(ValueError, match="no family"):
        register(_Unknown, stage="typecheck")(lambda *a: None)
    with pytest.raises(ValueError, match="unknown stage"):
        register(n.Split, stage="codegen")
    with pytest.raises(ValueError, match="another case"):
        register(n.Split, stage="typecheck")(lambda *a: None)
    with pytest.raises(ValueError, match="defined already"):
        define("split", n.Split, typecheck="", interpret="", lower="", kernel="")


def test_the_kernel_traversal_dispatches_through_the_registry():
    for c in NODE_CLASSES:
        if issubclass(c, n.FunDecl):
            k = REGISTRY[c].kernel
            if isinstance(k, Refused):
                assert KERNEL_REFUSED[c] == k.reason and c not in KERNEL_CASES
            else:
                assert KERNEL_CASES[c] == REGISTRY[c].emit and k.startswith(KERNEL_CASES[c])
    high = fun([Array(Float, N)], lambda x: lift.reduce(lift.add, 0.0) << map(neg) << x)
    for c in (n.Map, n.Reduce, n.OclKernel):
        node = n.OclKernel(high) if c is n.OclKernel else next(x for _, x in walk(high) if type(x) is c)
        with pytest.raises(lift.UnsupportedError) as err:
            kernel_case(node)
        assert REGISTRY[c].refusal("kernel") in str(err.value)


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
    with pytest.raises(NotBatchable, match="_Unknown"):
        Batched({}, {}, Stats()).call(node, [np.zeros(2, np.float32)], None, {}, ())
    with pytest.raises(lift.UnsupportedError, match="computes"):
        apply_view(node, [Mem("x", Array(Float, N), "global")], [Array(Float, N)], {})
    with pytest.raises(lift.UnsupportedError, match="_Unknown"):
        kernel_case(node)
    assert case("typecheck", node) is None and "_Unknown" in registry.refusal("typecheck", node)


# ---------------------------------------------- a new pattern: one module plus its registration
# (what a module adding a layout pattern holds: its node class, its family, its stages' cases)


@n.node
class Head(n.Pattern):
    """The first `m` elements of an array: `head(m) << x`, [T]_n -> [T]_m with m <= n."""

    m: Arith


define("head", Head, typecheck="[T]_n -> [T]_m; m <= n", interpret="a prefix (a view)", lower="kept",
       kernel="layout: a prefix view, read through its view", layout="select", emit="layout")


@register(Head, stage="typecheck")
def _head_type(f: Head, ts: list, call: n.Node, conds: list) -> ArrayType:
    a = ts[0]
    if not isinstance(a, ArrayType) or not prove_nonneg(a.size - f.m):
        raise lift.LiftTypeError(f"head({f.m}) needs an array of at least {f.m} elements, got {a}", node=call)
    return ArrayType(a.elem, f.m)


@register(Head, stage="interpret")
def _head_value(ev: Element, f: Head, vals: list, node: n.FunCall | None, env: dict) -> object:
    m = ev.size(f.m)
    return axis_op(vals[0], lambda a: a[:m], 0)


@register(Head, stage="batched")
def _head_batched(ev: Batched, f: Head, vals: list, node: object, env: dict, bs: tuple) -> object:
    m, d = ev.size(f.m), len(bs)
    return on_axes(vals[0], lambda a: a[(slice(None),) * d + (slice(0, m),)], 0)


@register(Head, stage="view")
def _head_view(f: Head, args: list, types: list, env: dict) -> object:
    assert isinstance(types[0], ArrayType)
    return PadV(args[0], Cst(0), types[0].size, 0)  # a pad by nothing, read only below m


@register(Head, stage="context")
def _head_context(w: object, f: Head, path: tuple, args: list[Val], ctx: object, call: n.Node) -> Val:
    return replace(args[0], type=infer(f, [args[0].type], call), dims=None, parts=None)


def test_a_new_pattern_is_one_module_plus_its_registration():
    x = n.Param(Array(Array(Float, 4), 5), "x")
    prog = n.Lambda((x,), n.FunCall(n.Map(Head(Cst(2))), (n.FunCall(Head(Cst(3)), (x,)),)))
    assert str(typecheck(prog)) == str(lift.types.FunType((x.ptype,), Array(Array(Float, 2), 3)))
    assert typed(prog).types[(0,)] == Array(Array(Float, 2), 3)
    a = np.arange(20, dtype=np.float32).reshape(5, 4)
    stats = Stats()
    got = lift.interpret(prog, a, stats=stats)
    assert np.array_equal(got, a[:3, :2]) and not stats.fallbacks
    assert np.array_equal(lift.interpret(prog, a, batched=False), a[:3, :2])
    assert is_layout_fun(Head(Cst(2))) and not invertible(Head(Cst(2)))
    assert isinstance(apply_view(Head(Cst(3)), [Mem("x", x.ptype, "global")], [x.ptype], {}), PadV)
    assert analyse(fun([Array(Float, 8)], lambda v: map(neg) << n.FunCall(Head(Cst(3)), (v,)))).maps
    with pytest.raises(lift.LiftTypeError, match="head"):
        typecheck(n.Lambda((x,), n.FunCall(Head(Cst(9)), (n.FunCall(Head(Cst(3)), (x,)),))))


def test_a_new_pattern_compiles_and_runs_through_its_registration():
    """The new pattern's kernel case is its family's `emit` (a view, read through `_head_view`):
    compiled for PoCL, its kernel computes what the interpreter does."""
    assert kernel_case(Head(Cst(2))) == "layout"
    flat = fun([Array(Float, 8)], lambda v: map(neg) << n.FunCall(Head(Cst(3)), (v,)))
    rows = fun([Array(Array(Float, 4), 5)],
               lambda v: map(map(neg)) << n.FunCall(n.Map(Head(Cst(2))), (n.FunCall(Head(Cst(3)), (v,)),)))
    for prog, a in ((flat, np.arange(8, dtype=np.float32)), (rows, np.arange(20, dtype=np.float32).reshape(5, 4))):
        compiled = lift.compile(prog)
        assert "kernel void" in compiled.source
        assert_same(lift.interpret(prog, a), compiled(a))


# ------------------------------------------------------------ every stage on every node class


def _extra():
    """Programs for the node classes that no example variant uses (seven of them)."""
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
        "iota": (fun([Array(Float, N)], lambda x: map(lambda t: t[0] * t[1]) << lift.zip(x, lift.iota(N))),
                 (np.arange(8, dtype=np.float32),)),
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
