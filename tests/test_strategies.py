"""Strategies: ELEVATE-style combinators over `children`/`with_children`, with recorded steps."""

from __future__ import annotations

import numpy as np
import pytest

import lift
import lift.rules as R  # noqa: N812 - the rule catalogue
from lift import Array, Float, Size, add, fun, join, map, mult, reduce, split, zip
from lift.errors import RewriteError
from lift.ir import nodes as n
from lift.ir.paths import at, walk
from lift.rules.strategies import (
    all_,
    bottom_up,
    choice,
    everywhere,
    fail,
    id_,
    normalize,
    one,
    repeat,
    rewrite,
    seq,
    some,
    top_down,
    try_,
)
from lift.testing import assert_same

N = Size("N")


def three_maps() -> lift.Lambda:
    return fun([Array(Float, 16)], lambda x: map(lambda a: a + 1.0) << map(lambda a: a * 2.0)
               << map(lambda a: a - 3.0) << x)


def _kinds(e: n.Node, cls: type) -> int:
    return sum(1 for _, m in walk(e) if type(m) is cls)


def test_a_rule_is_a_strategy_at_the_root() -> None:
    prog = three_maps()
    assert R.map_fusion(prog) is None  # the root is the lambda
    assert R.map_fusion(prog.body) is not None


def test_top_down_applies_once_at_the_first_match_and_records_the_step() -> None:
    out = rewrite(three_maps(), top_down(R.map_fusion))
    assert _kinds(out.expr, n.Map) == 2
    assert [(s.rule.name, s.path) for s in out.steps] == [("map_fusion", (0,))]
    assert at(out.expr, out.steps[0].path) == out.expr.body


def test_bottom_up_applies_at_the_deepest_match() -> None:
    out = rewrite(three_maps(), bottom_up(R.map_fusion))
    assert out.steps[0].path == (0, 1)


def test_normalize_fuses_every_map() -> None:
    prog = three_maps()
    out = rewrite(prog, normalize(R.map_fusion))
    assert _kinds(out.expr, n.Map) == 1 and len(out.steps) == 2
    xs = np.arange(16, dtype=np.float32)
    assert_same(lift.interpret(prog, xs), lift.interpret(out.expr, xs))


def test_seq_choice_try_and_failure_rollback() -> None:
    prog = three_maps()
    assert seq(top_down(R.map_fusion), top_down(R.transpose_transpose_id))(prog) is None
    steps: list = []
    assert choice(seq(top_down(R.map_fusion), fail), id_)(prog, (), steps) is prog
    assert steps == []  # the failed branch left no steps behind
    assert try_(top_down(R.transpose_transpose_id))(prog) is prog
    with pytest.raises(RewriteError, match="failed"):
        rewrite(prog, fail)


def test_repeat_stops_when_the_strategy_fails() -> None:
    out = rewrite(three_maps(), repeat(top_down(R.map_to_seq)))
    assert _kinds(out.expr, n.MapSeq) == 3 and len(out.steps) == 3


def test_one_some_all_work_on_children() -> None:
    prog = fun([Array(Array(Float, 4), 4)], lambda x: map(map(lambda a: a + 1.0)) << x)
    call = prog.body
    assert one(R.map_to_seq)(call) is not None  # the child Map
    assert all_(R.map_to_seq)(call) is None  # the argument x is not a map
    assert some(R.map_to_seq)(call) is not None
    assert all_(id_)(call) is call


def test_everywhere_lowers_every_map() -> None:
    prog = fun([Array(Array(Float, 4), 4)], lambda x: map(map(lambda a: a + 1.0)) << x)
    out = rewrite(prog, everywhere(R.map_to_seq))
    assert _kinds(out.expr, n.MapSeq) == 2 and _kinds(out.expr, n.Map) == 0


def test_the_style_guide_example() -> None:
    prog = fun([Array(Float, N), Array(Float, N)], lambda x, y: reduce(add, 0.0) << map(mult) << zip(x, y))
    s = seq(top_down(R.split_join(n=128)), top_down(R.map_to_wrg), normalize(R.map_fusion))
    out = rewrite(prog, s)
    assert [st.rule.name for st in out.steps] == ["split_join", "map_to_wrg"]
    assert out.steps[0].params == {"n": 128} and out.steps[0].conditions
    x = np.random.default_rng(0).random(256, dtype=np.float32)
    assert_same(lift.interpret(prog, x, x), lift.interpret(out.expr, x, x), rtol=1e-5)


def test_bound_parameters_and_missing_ones() -> None:
    prog = fun([Array(Float, 8)], lambda x: join << split(2) << (map(lambda a: a + 1.0) << x))
    with pytest.raises(RewriteError, match="needs parameter"):
        rewrite(prog, top_down(R.split_join))
    with pytest.raises(TypeError):
        R.split_join(m=2)
    out = rewrite(prog, seq(top_down(R.join_split_id), top_down(R.split_join(n=4))))
    assert "split(4)" in str(out.expr) and "split(2)" not in str(out.expr)
