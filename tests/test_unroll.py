"""Short constant loops unrolled by their size (lift/codegen/unroll.py): a loop whose unrolled
body stays within SHORT_WORK statements is marked, a longer or nested one is not, and the
unrolled kernels compute what the interpreter computes."""

from __future__ import annotations

import re

import numpy as np
import pytest

import lift
from lift import Array, Float, fun, map, reduce, slide, zip
from lift.arith import Cst, Var
from lift.codegen.c_ast import Assign, Barrier, Block, CRaw, CVar, For, KernelDef
from lift.codegen.unroll import SHORT_TRIPS, SHORT_WORK, short_loops_unrolled
from lift.interpret import interpret


def _loop(trips: int, body: list, name: str = "i", unroll: bool = False) -> For:
    return For(Var(name, Cst(0), Cst(trips - 1)), CRaw("0"), Cst(trips), CRaw("1"), Block(body), "", "seq",
               unroll=unroll)


def _stmt() -> Assign:
    return Assign(CVar("acc"), CRaw("acc + 1.0f"))


def _marked(loop: For) -> bool:
    short_loops_unrolled(KernelDef("k", [], Block([loop])))
    return loop.unroll


def test_a_loop_is_unrolled_while_its_unrolled_body_stays_short():
    assert _marked(_loop(17, [_stmt()]))
    assert _marked(_loop(SHORT_TRIPS, [_stmt()])) == (SHORT_TRIPS <= SHORT_WORK)
    assert not _marked(_loop(SHORT_TRIPS + 1, [_stmt()]))
    assert not _marked(_loop(17, [_stmt()] * 4)), "68 statements unrolled: too long"
    assert _marked(_loop(16, [_stmt()] * 4))


def test_inner_loops_count_unrolled_and_a_remaining_loop_or_barrier_blocks_it():
    assert _marked(_loop(8, [_loop(4, [_stmt()], "j", unroll=True)]))
    assert not _marked(_loop(8, [_loop(9, [_stmt()], "j", unroll=True)])), "72 statements"
    assert not _marked(_loop(4, [_loop(100, [_stmt()], "j")])), "an inner loop that stays a loop"
    assert not _marked(_loop(4, [_stmt(), Barrier("CLK_LOCAL_MEM_FENCE")]))


def test_a_loop_of_symbolic_trips_is_not_unrolled():
    n = Var("N", Cst(1), None)
    loop = For(Var("i", Cst(0), n - 1), CRaw("0"), n, CRaw("1"), Block([_stmt()]), "", "seq")
    assert not _marked(loop)


@pytest.mark.device
@pytest.mark.parametrize("taps", [17, 24, 40, 65])
def test_correlations_with_long_tap_loops_match_the_interpreter(taps):
    n = 1000
    prog = fun([Array(Float, n), Array(Float, taps)],
               lambda x, w: map(lambda win: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, w))
               << slide(taps, 1) << x)
    rng = np.random.default_rng(taps)
    x, w = rng.random(n, dtype=np.float32) - 0.5, rng.random(taps, dtype=np.float32) - 0.5
    p = lift.compile(prog)
    unrolled = re.search(rf"#pragma unroll\s*\n\s*for \(int \w+ = 0; \w+ < {taps};", p.source) is not None
    assert unrolled == (taps <= SHORT_WORK), p.source
    np.testing.assert_allclose(p(x, w), interpret(prog, x, w), rtol=1e-5, atol=1e-5)
