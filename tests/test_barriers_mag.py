"""Barrier insertion with the memory-access graph (thesis 5.4): Listings 5.3-5.6, the MAG, dependences, fences."""

from __future__ import annotations

import numpy as np
import pytest
import z3

from codegen_oracle import check, floats
from lift import (
    Array,
    Float,
    Size,
    fun,
    join,
    map_lcl,
    map_seq,
    map_wrg,
    split,
    to_global,
    to_local,
    transpose,
    user_fun,
    zip,
)
from lift.barriers import Analysis, Synchronised, insert_barriers, insert_barriers_conservative
from lift.barriers.dependence import corresponding, injective, pairs, same_mapping
from lift.barriers.graph import Point
from lift.barriers.threads import Threads
from lift.codegen import build, generate
from lift.codegen.c_ast import Barrier, For
from lift.errors import NotSynchronisableError

N, M, K = Size("N"), Size("M"), Size("K")
RNG = np.random.default_rng(5)

f = user_fun(lambda v: v * 2.0 + 1.0, [Float], Float, name="f")
g = user_fun(lambda v: v - 3.0, [Float], Float, name="g")


# ------------------------------------------------------------------ the listings


def listing_5_3():
    """mapSeq(mapSeq(g) o toLocal(mapLcl(f))): one local row buffer, reused by every iteration."""
    return fun([Array(Array(Float, M), N)],
               lambda x: map_seq(lambda row: map_seq(g) << to_local(map_lcl(f, label="F")) << row, label="S") << x)


def listing_5_3_global():
    """Listing 5.3 as printed: the buffer is global, so it has a row per iteration (nothing is overwritten)."""
    return fun([Array(Array(Float, M), N)],
               lambda x: map_seq(lambda row: map_seq(g) << map_lcl(f, label="F") << row, label="S") << x)


def listing_5_4(n=N, m=M, k=K):
    """mapLcl(1)(mapSeq(mapLcl(0)(g)) o mapLcl(0)(mapSeq(f))): a barrier inside the mapLcl over rows."""
    return fun([Array(Array(Array(Float, k), m), n)], lambda x: map_lcl(
        lambda rows: map_seq(map_lcl(g, dim=0)) << map_lcl(map_seq(f), dim=0) << rows, dim=1, label="rows") << x)


def listing_5_5():
    """mapSeq(mapLcl(g)) o mapSeq(mapLcl(toLocal(f))): same mapping on both sides, no dependence."""
    return fun([Array(Array(Float, M), N)],
               lambda x: map_seq(map_lcl(g)) << map_seq(map_lcl(to_local(f)), label="first") << x)


def listing_5_6():
    """mapLcl(mapSeq(g)) o mapSeq(mapLcl(toLocal(f))): the rows are read by other work-items."""
    return fun([Array(Array(Float, M), N)],
               lambda x: map_lcl(map_seq(g)) << map_seq(map_lcl(to_local(f)), label="first") << x)


def both_spaces():
    """A local and a global intermediate, both read permuted: one barrier with both fences."""
    def perm(a):
        return join << transpose << split(2) << a

    return fun([Array(Array(Float, 8), N)], lambda x: map_wrg(lambda r: map_lcl(lambda p: p[0] + p[1])
               << zip(perm(to_local(map_lcl(f)) << r), perm(to_global(map_lcl(g)) << r))) << x)


# name: (program, compile options, input shapes); used by the mutation test and benchmarks/barrier_counts.py
CASES = {
    "listing-5.3": (listing_5_3, {"local_size": 4}, [(3, 10)]),
    "listing-5.3-global": (listing_5_3_global, {"local_size": 4}, [(3, 10)]),
    "listing-5.4-uniform": (lambda: listing_5_4(6, 4, 8), {"local_size": (4, 3)}, [(6, 4, 8)]),
    "listing-5.4-made-uniform": (listing_5_4, {"local_size": (4, 2)}, [(7, 5, 6)]),
    "listing-5.5": (listing_5_5, {"local_size": 4}, [(3, 10)]),
    "listing-5.6": (listing_5_6, {"local_size": 4}, [(6, 5)]),
    "both-spaces": (both_spaces, {}, [(4, 8)]),
}


def inputs(name: str) -> list[np.ndarray]:
    return [floats(RNG, *s) for s in CASES[name][2]]


def analysed(program, **kw) -> list[Analysis]:
    """The MAG analysis of every kernel of `program` (from the probe code generation hands over)."""
    out: list[Analysis] = []

    def spy(root, alloc, probe):
        out.append(Analysis(probe))
        return Synchronised(alloc, {})  # analysed, not synchronised

    build(program, barrier_pass=spy, **kw)
    return out


def barriers_in(stmts) -> list[Barrier]:
    return [s for s in stmts if isinstance(s, Barrier)]


def kernel_body(program, **kw):
    return build(program, **kw).unit.kernels[0].body.stmts


# --------------------------------------------------------------- Listing 5.3


def test_listing_5_3_gets_both_barriers():
    plan = generate(listing_5_3(), local_size=4)
    raw, war = plan.barriers
    assert raw.after == "map_lcl[F](f)" and raw.reason.startswith("read-after-write") and raw.buffers == ("tmp",)
    assert war.reason.startswith("write-after-read") and "next iteration of map_seq[S]" in war.reason
    assert raw.fence == war.fence == "CLK_LOCAL_MEM_FENCE"
    (outer,) = [s for s in kernel_body(listing_5_3(), local_size=4) if isinstance(s, For)]
    body = outer.body.stmts
    assert isinstance(body[-1], Barrier) and "write-after-read" in body[-1].comment  # before the overwrite
    assert len(barriers_in(body)) == 2


def test_listing_5_3_with_a_buffer_per_iteration_needs_one_barrier():
    (b,) = generate(listing_5_3_global(), local_size=4).barriers
    assert b.reason.startswith("read-after-write") and b.fence == "CLK_GLOBAL_MEM_FENCE"


@pytest.mark.device
@pytest.mark.parametrize("name", list(CASES))
def test_cases_match_the_interpreter(name):
    program, kw, _ = CASES[name]
    check(program(), *inputs(name), **kw)


# --------------------------------------------------------------- Listing 5.4


def test_listing_5_4_is_made_uniform_when_rows_do_not_divide_among_work_items():
    (b,) = generate(listing_5_4(), local_size=(4, 2)).barriers
    assert b.after == "map_lcl(map_seq(f))" and b.reason.startswith("read-after-write")
    assert "map_lcl[rows]" in b.reason and "made uniform" in b.reason and "rounded up to 2*((N + 1) / 2)" in b.reason
    (b,) = generate(listing_5_4(6, 4, 8), local_size=(4, 4)).barriers
    assert "its 6 iterations rounded up to 8" in b.reason


def test_listing_5_4_keeps_the_barrier_in_the_loop_when_the_rows_divide():
    (b,) = generate(listing_5_4(6, 4, 8), local_size=(4, 3)).barriers
    assert b.fence == "CLK_GLOBAL_MEM_FENCE" and b.after == "map_lcl(map_seq(f))"
    (rows,) = [s for s in kernel_body(listing_5_4(6, 4, 8), local_size=(4, 3)) if isinstance(s, For)]
    assert len(barriers_in(rows.body.stmts)) == 1


# ---------------------------------------------------------- Listings 5.5, 5.6


def test_listing_5_5_needs_no_barrier():
    assert generate(listing_5_5(), local_size=4).barriers == ()
    assert len(build(listing_5_5(), local_size=4, barrier_pass=insert_barriers_conservative).source.barriers) == 1


def test_listing_5_6_one_barrier_between_the_loop_nests():
    (b,) = generate(listing_5_6(), local_size=4).barriers
    assert b.after == "map_seq[first](map_lcl(to_local(f)))" and b.reason.startswith("read-after-write")
    first, barrier, second = kernel_body(listing_5_6(), local_size=4)
    assert isinstance(first, For) and isinstance(barrier, Barrier) and isinstance(second, For)
    assert not any(isinstance(s, Barrier) for s in _walk(first))


def _walk(s):
    yield s
    for x in getattr(getattr(s, "body", None), "stmts", ()):
        yield from _walk(x)


# ------------------------------------------------------------ records, fences


def test_barrier_records_name_both_accesses_and_the_buffer():
    plan = generate(listing_5_6(), local_size=4)
    (b,) = plan.barriers
    assert "f [tmp[M*i_first + l]] in map_lcl(to_local(f))" in b.reason and "g [tmp[M*l_1 + i]]" in b.reason
    assert b.buffers == ("tmp",) and "read by other work-items" in b.reason
    sync_deps = _placement(listing_5_6(), local_size=4).dependences
    assert [(d.kind, d.buffer, d.space) for d in sync_deps] == [("read-after-write", "tmp", "local")]


def _placement(program, **kw):
    out = []

    def spy(root, alloc, probe):
        sync = insert_barriers(root, alloc, probe)
        out.extend(p for ps in sync.after.values() for p in ps)
        return sync

    build(program, barrier_pass=spy, **kw)
    (p,) = out
    return p


def test_one_barrier_with_both_fences_for_local_and_global_dependences():
    (b,) = generate(both_spaces()).barriers
    assert b.fence == "CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE"
    assert set(b.buffers) == {"tmp", "tmp_1"}


# ----------------------------------------------------------------------- MAG


def test_mag_vertices_edges_and_back_edges():
    (a,) = analysed(listing_5_3(), local_size=4)
    accesses = [a.mag.access(v) for v in a.mag.vertices]
    assert [(x.mem, x.write) for x in accesses] == [("x", False), ("tmp", True), ("tmp", False), ("out", True)]
    backs = [e for e in a.mag.edges if e.back is not None]
    assert {a.flat.loops[e.back].kind for e in backs} == {"seq", "lcl"}
    outer = next(e for e in backs if a.flat.loops[e.back].comment.startswith("map_seq[S]"))
    assert (a.mag.access(outer.src).mem, a.mag.access(outer.dst).mem) == ("out", "x")  # write-after-read edge
    keys = [a.flat.leaves[p].item.key for p in outer.points]
    assert keys and all(isinstance(a.flat.leaves[p].item, Point) for p in outer.points)
    reach = {a.flat.leaves[p].item.key: a.reach.reachable(p) for e in a.mag.edges for p in e.points}
    assert not all(reach.values()) and any(reach.values())  # points inside map_lcl over M are not reachable


def test_dependences_of_listing_5_3():
    (a,) = analysed(listing_5_3(), local_size=4)
    dependent = {(a.deps.describe(p).kind, p.backward) for p in a.dependent()}
    assert dependent == {("read-after-write", False), ("write-after-read", True)}


def test_same_mapping_is_proven_without_z3(monkeypatch):
    (a,) = analysed(listing_5_5(), local_size=4)
    w, r = (v for v in a.mag.vertices if a.mag.access(v).mem == "tmp")
    assert same_mapping(a.flat, w, r) and corresponding(a.flat, w, r) and injective(a.flat, w)

    def no_z3(*args):
        raise AssertionError("z3 asked")

    monkeypatch.setattr(Threads, "solve", no_z3)
    assert not any(a.deps.depends(p) for p in pairs(a.mag) if a.mag.access(p.first).mem == "tmp")


def test_unknown_counts_as_dependent(monkeypatch):
    (a,) = analysed(listing_5_3_global(), local_size=4)
    monkeypatch.setattr(Threads, "solve", lambda self, copies, *goals: z3.unknown)
    assert {a.deps.describe(p).kind for p in a.dependent()} == {"read-after-write", "write-after-read"}


def test_injective_index_needs_a_mixed_radix():
    (a,) = analysed(listing_5_6(), local_size=4)
    write, read = (v for v in a.mag.vertices if a.mag.access(v).mem == "tmp")
    assert injective(a.flat, write) and injective(a.flat, read)
    (t,) = analysed(both_spaces())
    permuted = next(v for v in t.mag.vertices if "/" in str(t.mag.access(v).lo))
    assert not injective(t.flat, permuted)  # l / 4 + 2 * (l % 4): not a sum of loop variables


def test_uniform_loops_are_reachable():
    (a,) = analysed(listing_5_4(6, 4, 8), local_size=(4, 3))
    kinds = {a.flat.loops[k].comment.split("(")[0]: a.reach.uniform(k) for k in range(len(a.flat.loops))}
    assert kinds["map_lcl[rows]"] and kinds["map_seq"]
    (b,) = analysed(listing_5_4(6, 4, 8), local_size=(4, 4))
    assert not b.reach.uniform(next(k for k, info in enumerate(b.flat.loops) if info.dim == 1))


def test_barriers_never_exceed_the_conservative_pass():
    for name, (program, kw, _) in CASES.items():
        new = generate(program(), **kw).barriers
        try:
            old = build(program(), barrier_pass=insert_barriers_conservative, **kw).source.barriers
        except NotSynchronisableError:
            continue  # the conservative pass rejects it (5.4 with uniform rows)
        assert len(new) <= len(old), name

