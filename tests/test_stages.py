"""Every IR function node is handled by the kernel stages (memory allocation and kernel generation
take the same case of `lift.memory.kernel_case`) or rejected with a named `UnsupportedError`;
the kernel stages run in the order `lift.compile` shows."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

import lift
from lift.codegen import stages
from lift.codegen.kernel import KernelGen
from lift.ir import nodes as n
from lift.memory import KERNEL_CASES, KERNEL_REFUSED, _Alloc, kernel_case

FUNCTION_NODES = sorted((c for c in vars(n).values() if isinstance(c, type) and issubclass(c, n.FunDecl)
                         and c not in (n.FunDecl, n.Pattern, n.AbstractMap, n.AbstractReduce)),
                        key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", FUNCTION_NODES, ids=lambda c: c.__name__)
def test_every_function_node_has_a_kernel_case_or_a_named_refusal(cls):
    assert (cls in KERNEL_CASES) != (cls in KERNEL_REFUSED), f"{cls.__name__}: handled xor refused"
    assert cls in n.ALL_NODE_TYPES


def _cases(method) -> set[str]:
    return set(re.findall(r'case "(\w+)"', inspect.getsource(method)))


def test_memory_allocation_and_kernel_generation_take_the_same_cases():
    every = set(KERNEL_CASES.values())
    assert _cases(_Alloc.apply) == every
    assert _cases(KernelGen.apply) == every


def test_a_refused_node_names_itself_and_the_reason():
    prog = lift.fun([lift.Array(lift.Float, lift.Size("N"))], lambda x: lift.map(lift.id) << x)
    mapped = prog.body.f
    with pytest.raises(lift.UnsupportedError, match="no OpenCL mapping; lower the program first"):
        kernel_case(mapped, prog.body)
    assert kernel_case(n.MapSeq(lift.id)) == "map" and kernel_case(n.Transpose()) == "layout"
    assert kernel_case(n.MapSeq(n.Transpose())) == "layout"  # a map of a layout pattern is a view
    assert kernel_case(prog) == "lambda"


def test_the_kernel_stages_run_in_the_documented_order():
    assert [s.__name__ for s in stages.KERNEL_STAGES] == ["allocated", "probed", "synchronised", "emitted",
                                                          "assembled"]
    src = inspect.getsource(importlib.import_module("lift.compile").link)
    assert "allocated, probed, synchronised, emitted, assembled" in src


def test_type_checking_runs_once_per_node_through_compile(monkeypatch):
    """Every call node of every program `lift.compile` goes through (the user's, the mapped one)
    is typed once: the stages read the call's memoised type afterwards."""
    from lift.devices import profile
    from lift.userfun.builtins import neg

    typecheck = importlib.import_module("lift.typecheck")
    seen: dict[int, int] = {}
    alive: list = []  # no id is reused while counting
    real = typecheck.set_memo

    def counting(e, got):
        seen[id(e)] = seen.get(id(e), 0) + 1
        alive.append(e)
        return real(e, got)

    monkeypatch.setattr(typecheck, "set_memo", counting)
    n_ = lift.Size("N")
    prog = lift.fun([lift.Array(lift.Array(lift.Float, n_), n_)],
                    lambda x: lift.map(lambda r: lift.reduce(lift.add, 0.0) << lift.map(neg) << r) << x)
    lift.compile(prog, device=profile("nvidia"), choices={})
    assert seen and max(seen.values()) == 1, {k: v for k, v in seen.items() if v > 1}
