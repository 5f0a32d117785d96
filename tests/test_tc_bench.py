"""benchmarks/tc.py's workloads (section 6 of the Tensor Comprehensions paper, issue 30): the program
`lift.tc` makes from each TC compiles to the kernels of the same computation written by hand as a
lambda: the same automatic points, mapping and launch, and the same OpenCL up to the names of
parameters, buffers and user functions. The TC front end then costs nothing at run time by
construction; benchmarks/tc.py measures it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import tc as bench  # noqa: E402

import lift  # noqa: E402

_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\S")
_C = {"kernel", "void", "const", "global", "local", "float", "float2", "float4", "float8", "float16", "int",
      "restrict", "for", "if", "else", "return", "typedef", "struct", "pragma", "unroll", "barrier",
      "CLK_LOCAL_MEM_FENCE", "CLK_GLOBAL_MEM_FENCE", "get_global_id", "get_local_id", "get_group_id",
      "get_local_size", "get_num_groups", "get_global_size", "min", "max", "fma", "select", "include"}


def _shape(source: str) -> list[tuple[str, ...]]:
    """What decides a kernel's speed, without names: per line (comments dropped), the loop headers,
    declarations and signature whole, and of every other line its memory accesses (`x[..]`, vector
    accesses `((global float8*)x)[..]`), sorted. Identifiers other than C's and OpenCL's are renamed
    by first use; the names of called functions, the user's, are left out (an element-wise epilogue
    `bias_relu(x, b)` and `max_(add(b, x), 0.0f)` read the same elements)."""
    names: dict[str, str] = {}
    out: list[tuple[str, ...]] = []
    for line in re.sub(r"//[^\n]*", "", source).splitlines():
        toks = _WORD.findall(line)
        named = []
        for i, tok in enumerate(toks):
            if re.match(r"[A-Za-z_]", tok) and tok not in _C:
                call = i + 1 < len(toks) and toks[i + 1] == "("
                tok = "fn" if call else names.setdefault(tok, f"id{len(names)}")
            named.append(tok)
        if not named:
            continue
        if {"for", "kernel", "int", "float", "float8", "float4", "float2", "float16"} & set(named[:3]):
            out.append(tuple(named))
            continue
        accesses = []
        for i, tok in enumerate(named):
            if tok == "[" and i > 0:
                depth, j = 0, i
                while j < len(named):
                    depth += {"[": 1, "]": -1}.get(named[j], 0)
                    if depth == 0:
                        break
                    j += 1
                accesses.append(" ".join(named[i - 1:j + 1]))
        out.append(tuple(sorted(accesses)))
    return out


def _kernels(source: str) -> list[str]:
    """The kernel functions of `source` (user functions left out: their bodies are the user's)."""
    return [m.group(0) for m in re.finditer(r"kernel void .*?\n}\n", source, re.S)]


def _programs(w: bench.Workload) -> dict[str, lift.Program]:
    sizes = w.quick
    args = bench._inputs(w.shapes(*sizes))
    out = {}
    for kind, build in (("tc", w.tc), ("hand", w.hand)):
        prog = lift.compile(build(*sizes) if w.fixed else build())
        out[kind] = prog if w.fixed else prog.specialised(*args)
    return out


@pytest.mark.device
@pytest.mark.parametrize("w", bench.WORKLOADS, ids=[f"{w.name}-{'x'.join(map(str, w.quick))}" for w in bench.WORKLOADS])
def test_tc_programs_compile_to_the_hand_written_lambdas_kernels(w: bench.Workload) -> None:
    progs = _programs(w)
    tc, hand = progs["tc"].choices, progs["hand"].choices
    assert (tc.points, tc.mapping, tc.launch) == (hand.points, hand.mapping, hand.launch)
    got, want = _kernels(progs["tc"].source), _kernels(progs["hand"].source)
    assert len(got) == len(want) > 0
    for i, (g, h) in enumerate(zip(got, want, strict=True)):
        assert _shape(g) == _shape(h), f"kernel {i} of {w.name} differs:\n{g}\n---\n{h}"


def test_the_renaming_keeps_what_differs() -> None:
    """The comparison is not blind: a changed index, store or loop bound shows; which functions compute
    the stored value does not."""
    a = "kernel void k(global float* x) {\n  for (int i = 0; i < 8; i++) {\n    x[2*i] = f(x[i], 1.0f);\n  }\n}\n"
    assert _shape(a) == _shape(a.replace("x", "y"))
    assert _shape(a) != _shape(a.replace("2*i", "3*i"))
    assert _shape(a) != _shape(a.replace("x[i]", "x[i + 1]"))
    assert _shape(a) != _shape(a.replace("i < 8", "i < 9"))
    assert _shape(a) != _shape(a.replace("x[2*i] =", "x[2*i + 1] ="))
    assert _shape(a) == _shape(a.replace("f(x[i], 1.0f)", "g(h(1.0f, x[i]))"))
