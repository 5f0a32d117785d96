"""The atomic combine of multi-block reductions (`reduce_atomic`, `reduce_chunks(combine=...)`) and
the neutral-element pad for lengths the chunks do not divide (issue 17 items 1 and 2).

The atomic combine is compared with the two-kernel combine on PoCL (int exactly, float within
Higham's bound: the combining order is not deterministic), and with the interpreter. Mutation
tests: with the atomic replaced by a plain read-modify-write, the barrier analysis exhibits the
race between work-groups (PoCL on the project's machine never showed a lost update, not even for a
hand-written racy kernel, so a wrong result cannot be the witness there); without the group-leader
guard of the work-group form, PoCL's result is wrong.
"""

from __future__ import annotations

import numpy as np
import pytest

import lift
from codegen_oracle import check
from lift import Array, Float, Int, Size, fun, map, map_glb, map_lcl, map_wrg, reduce, reduce_seq, split, to_local, zip
from lift.codegen import atomic as at
from lift.codegen.c_ast import Assign, CCall
from lift.errors import NotSynchronisableError, RewritePointSkipped, UnsupportedError
from lift.ir.patterns import reduce_atomic
from lift.rewrites.chunks import reduce_chunks

pytestmark = pytest.mark.device

N = Size("N")
U = 2.0 ** -24  # float32 unit roundoff
OPS = {"add": (lift.add, 0), "max": (lift.max_, None), "min": (lift.min_, None)}


def _init(op: str, t) -> float | int:
    if op == "add":
        return 0.0 if t is Float else 0
    big = np.inf if t is Float else np.iinfo(np.int32).max
    return -big if op == "max" else big


def _data(t, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if t is Float:
        return rng.uniform(-1.0, 1.0, n).astype(np.float32)
    return rng.integers(-1000, 1000, n, dtype=np.int32)


def _chunked(t, op: str, combine: str, size: int, width: int = 1, pad: bool = False):
    f, _ = OPS[op]
    z = _init(op, t)
    return fun([Array(t, N)], lambda x: reduce_chunks(reduce(f, z), size=size, width=width, combine=combine,
                                                      pad=pad, label="R") << x)


def _close(got, want64: float, x: np.ndarray) -> None:
    """Within Higham's bound for a float32 sum in any order: |err| <= gamma_n sum|x| (+ the result's ulp)."""
    n = x.size
    bound = n * U / (1 - n * U) * float(np.abs(x.astype(np.float64)).sum()) + abs(want64) * U
    assert abs(float(got) - want64) <= bound, (got, want64, bound)


@pytest.mark.parametrize("t", [Float, Int], ids=["float", "int"])
@pytest.mark.parametrize("op", ["add", "max", "min"])
def test_atomic_combine_matches_the_two_kernel_combine(t, op: str) -> None:
    x = _data(t, 1 << 14)
    atomic = lift.compile(_chunked(t, op, "atomic", 16), local_size=8)  # 1024 work-items, 128 groups
    kernel = lift.compile(_chunked(t, op, "kernel", 16), local_size=8)
    assert "atomic" in atomic.source and len(kernel.kernels) == 2
    assert [r.kernel for r in atomic.ndrange] == ["lift_kernel_fill", "lift_kernel"]
    if t is Float and op != "add" or t is Int:
        want = lift.interpret(_chunked(t, op, "kernel", 16), x)
        assert atomic(x) == kernel(x) == want  # max/min and int sums are exact in any order
    else:
        _close(atomic(x), float(x.astype(np.float64).sum()), x)
        _close(kernel(x), float(x.astype(np.float64).sum()), x)
    if t is Float and op == "add":
        assert "atomic_cmpxchg" in atomic.source and "as_uint" in atomic.source
    if t is Int:
        assert {"add": "atomic_add", "max": "atomic_max", "min": "atomic_min"}[op] in atomic.source


def test_vectorised_chunks_with_the_atomic_combine_and_an_initial_value_that_is_not_neutral() -> None:
    x = _data(Float, 1 << 13, seed=3)
    prog = _chunked(Float, "add", "atomic", 32, width=8)
    _close(lift.compile(prog)(x), float(x.astype(np.float64).sum()), x)
    five = fun([Array(Int, N)], lambda x: reduce_atomic(lift.add, 5) << map(lambda c: reduce(lift.add, 0) << c)
               << split(4) << x)  # z is added once: the result is pre-filled with it
    xi = _data(Int, 64)
    assert lift.compile(five)(xi) == lift.interpret(five, xi) == 5 + xi.sum()


def test_work_group_blocks_combine_once_per_group() -> None:
    """Each work-group reduces its block (chunks per work-item into local memory, a barrier placed by
    the barrier pass, then the partials), and its local work-item 0 combines it atomically."""
    prog = fun([Array(Float, N)], lambda x: reduce_atomic(lift.add, 0.0) << map_wrg(
        lambda b: reduce_seq(lift.add, 0.0) << to_local(map_lcl(lambda c: reduce_seq(lift.add, 0.0) << c))
        << split(8) << b) << split(8 * 32) << x)
    x = _data(Float, 1 << 13, seed=1)
    plan = check(prog, x)
    assert at.GROUP_LEADER in plan.source and "barrier(CLK_LOCAL_MEM_FENCE)" in plan.source


def test_solver_and_default_lowering_keep_the_map_in_the_atomic_kernel() -> None:
    prog = fun([Array(Float, N)], lambda x: reduce_atomic(lift.add, 0.0) << map(lambda c: reduce(lift.add, 0.0) << c)
               << split(64) << x)
    x = _data(Float, 1 << 12, seed=2)
    for choices in (None, lift.Choices(mapping={})):
        p = lift.compile(prog, choices=choices)
        assert len(p.kernels) == 2 and "map_glb" in p.source  # the fill and one parallel kernel
        _close(p(x), float(x.astype(np.float64).sum()), x)


@pytest.mark.filterwarnings("error::lift.errors.RewritePointSkipped")  # every point applied
@pytest.mark.parametrize("n", [1000, 2176, 997])
@pytest.mark.parametrize("combine", ["kernel", "atomic"])
def test_irregular_lengths_are_padded_with_the_neutral_element(n: int, combine: str) -> None:
    x = _data(Float, n, seed=n)
    for width in (1, 4):
        prog = _chunked(Float, "max", combine, 16, width=1, pad=True)
        assert lift.compile(prog)(x) == lift.interpret(prog, x) == x.max()
        prog = _chunked(Float, "add", combine, 16, width=width, pad=True)
        _close(lift.compile(prog)(x), float(x.astype(np.float64).sum()), x)
    y = _data(Float, n, seed=n + 1)
    for width in (1, 4):
        got, want = lift.compile(_dot(combine, width))(x, y), float(np.dot(x.astype(np.float64), y.astype(np.float64)))
        _close(got, want, x * y)


def _dot(combine: str, width: int):
    """A chunked dot product padded where needed: mult(0, 0) == 0, so the pad is neutral."""
    return fun([Array(Float, N), Array(Float, N)], lambda a, b: reduce_chunks(
        lambda u, v: reduce(lift.add, 0.0) << map(lambda q: lift.mult(q[0], q[1])) << zip(u, v), a, b,
        size=32, width=width, combine=combine, pad=True, label="R"))


def test_pad_refused_where_it_is_not_neutral() -> None:
    from lift.userfun import user_fun

    inc = user_fun(lambda a: a + 1.0, [Float], Float, name="inc")
    prog = fun([Array(Float, N)], lambda x: reduce_chunks(reduce(lift.add, 0.0) << map(inc), size=16, pad=True,
                                                          label="R") << x)
    with pytest.warns(RewritePointSkipped, match="padding with 0.0 is not neutral"):
        p = lift.compile(prog)
    x = _data(Float, 1000)
    _close(p(x), float((x.astype(np.float64) + 1).sum()), x + 1)  # the point skipped: still right


def test_refusals_name_the_reason() -> None:
    double = fun([Array(lift.Double, N)], lambda x: reduce_atomic(lift.add, 0.0) << map_glb(
        lambda c: reduce_seq(lift.add, 0.0) << c) << split(4) << x)
    with pytest.raises(UnsupportedError, match="32-bit Float or Int"):
        lift.compile(double)
    nested = fun([Array(Array(Float, N), 4)], lambda m: map_glb(lambda row: reduce_atomic(lift.add, 0.0) << map_glb(
        lambda c: reduce_seq(lift.add, 0.0) << c, dim=1) << split(4) << row) << m)
    with pytest.raises(UnsupportedError, match="the kernel's result"):
        lift.compile(nested)


def test_mutation_plain_read_modify_write_is_a_race_the_analysis_exhibits(monkeypatch) -> None:
    prog = _chunked(Float, "add", "atomic", 4)
    lift.compile(prog, local_size=64)  # intact: compiles
    monkeypatch.setattr(at, "combine_stmt", lambda fn, target, value, guard, comment: Assign(
        target, CCall("add", (target, value)), "plain read-modify-write"))
    with pytest.raises(NotSynchronisableError, match="from different work-groups"):
        lift.compile(prog, choices={"R": {}, "m0": 30}, local_size=64)


def test_mutation_without_the_group_leader_guard_the_result_is_wrong(monkeypatch) -> None:
    prog = fun([Array(Int, N)], lambda x: reduce_atomic(lift.add, 0) << map_wrg(
        lambda b: reduce_seq(lift.add, 0) << to_local(map_lcl(lambda c: reduce_seq(lift.add, 0) << c))
        << split(4) << b) << split(4 * 16) << x)
    x = np.ones(1 << 12, np.int32)
    assert lift.compile(prog)(x) == x.size
    monkeypatch.setattr(at, "GROUP_LEADER", None)
    assert lift.compile(prog)(x) == x.size * 16  # every work-item of a group combined the block


@pytest.mark.filterwarnings("error::lift.errors.RewritePointSkipped")  # every point applied
@pytest.mark.parametrize("n", [1000, 2176, 997])
@pytest.mark.parametrize("combine", ["kernel", "atomic"])
def test_irregular_lengths_with_the_tail_step(n: int, combine: str) -> None:
    """The chunks cover take(m) with whole vectors; the rest is reduced first and is the initial value."""
    x = _data(Float, n, seed=n)
    prog = fun([Array(Float, N)], lambda a: reduce_chunks(reduce(lift.max_, -np.inf), size=16, width=1,
                                                           combine=combine, tail=True, label="R") << a)
    assert lift.compile(prog)(x) == lift.interpret(prog, x) == x.max()
    for width in (1, 8):
        p = lift.compile(_tail_sum(combine, width))
        assert "?" not in p.source.split("kernel void")[-1]  # no select in the chunk loop
        _close(p(x), float(x.astype(np.float64).sum()), x)
    xi = _data(Int, n, seed=n)
    prog = fun([Array(Int, N)], lambda a: reduce_chunks(reduce(lift.add, 0), size=16, combine=combine, tail=True,
                                                        label="R") << a)
    assert lift.compile(prog)(xi) == xi.sum()


def _tail_sum(combine: str, width: int):
    return fun([Array(Float, N)], lambda a: reduce_chunks(reduce(lift.add, 0.0), size=16, width=width,
                                                          combine=combine, tail=True, label="R") << a)


@pytest.mark.parametrize("n", [5, 997, 2176, 1 << 16])
def test_the_default_of_a_full_reduction_is_parallel_with_the_atomic_combine(n: int) -> None:
    total = fun([Array(Float, N)], lambda a: reduce(lift.add, 0.0) << a)
    biggest = fun([Array(Int, N)], lambda a: reduce(lift.max_, -(2 ** 31)) << a)
    p, q = lift.compile(total), lift.compile(biggest)
    for prog in (p, q):
        # the sequential tail with the atomic combination's initial value, then the parallel kernel
        assert "map_glb" in prog.source and "lift_atomic_" in prog.source and len(prog.kernels) == 2
    assert "float8" in p.source and "atomic_max" in q.source
    assert lift.compile(total, choices=p.choices).source == p.source  # the choices rebuild it
    x, xi = _data(Float, n, seed=7), _data(Int, n, seed=7)
    _close(p(x), float(x.astype(np.float64).sum()), x)
    assert q(xi) == xi.max()


def test_no_default_chunking_where_it_does_not_apply() -> None:
    short = fun([Array(Float, 1024)], lambda a: reduce(lift.add, 0.0) << a)  # shorter than one chunk
    assert len(lift.compile(short).kernels) == 1
    double = fun([Array(lift.Double, N)], lambda a: reduce(lift.add, 0.0) << a)  # no 64-bit atomics
    assert "atomic" not in lift.compile(double).source
    rows = fun([Array(Array(Float, N), 4)], lambda m: map(lambda r: reduce(lift.add, 0.0) << r) << m)
    assert "atomic" not in lift.compile(rows).source  # nested reductions keep their form


@pytest.mark.parametrize("n", [4096, 2176, 6000])
def test_the_default_of_a_concrete_length_has_a_tail_only_where_the_chunks_leave_one(n: int) -> None:
    """Regression (found by the fuzzer): for a concrete length the chunks divide, the default's tail
    step was an empty array (`pad(-n, 0)`), which the type checker refused."""
    total = fun([Array(Float, n)], lambda a: reduce(lift.add, 0.0) << a)
    prog = lift.compile(total)
    assert prog.choices.points["auto_r0"]["tail"] == (n % 2048 != 0)
    assert lift.compile(total, choices=prog.choices).source == prog.source
    x = _data(Float, n, seed=3)
    _close(prog(x), float(x.astype(np.float64).sum()), x)


def test_a_concrete_length_of_one_chunk_is_reduced_as_written() -> None:
    """2048 floats are one chunk of the default (2048 scalars a work-item): a chunks kernel of one
    work-item and a combine of one partial would be two launches for nothing, so the reduction
    compiles as written, one kernel."""
    total = fun([Array(Float, 2048)], lambda a: reduce(lift.add, 0.0) << a)
    prog = lift.compile(total)
    assert not any(not c.get("skip") for c in prog.choices.points.values())
    assert len(prog.ndrange) == 1 and "atomic" not in prog.source
    x = _data(Float, 2048, seed=3)
    _close(prog(x), float(x.astype(np.float64).sum()), x)
