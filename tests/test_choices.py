"""`lift.Choices`: one frozen record of every decision, the same type from `compile` and `tune`,
a stable JSON form, and `lift.compile(expr, choices=...)` rebuilding a program exactly."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, reduce, zip
from lift import rewrites as rw
from lift.choices import as_choices
from tests.programs import gemv_program, mult, rand

N = Size("N")


def tiled_dot():
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: rw.split_reduce(lambda p: reduce(lift.add, 0.0) << map(mult) << p, label="R")
               << zip(x, y))


def test_choices_round_trip_through_json_and_are_frozen():
    c = lift.Choices(points={"R": {"skip": False, "width": (1, 4)}}, mapping={"m0": 30, "m1": 0},
                     tuning={"T_R": np.int64(64)}, vectorise={"m1": 4}, launch={"local_size_0": 8, "groups_0": 2},
                     sizes={"N": 1024})
    text = json.dumps(c.to_json())
    back = lift.Choices.from_json(json.loads(text))
    assert back == c and hash(back) == hash(c) and back.key() == c.key()
    assert lift.Choices.from_json(text) == c and back.tuning["T_R"] == 64
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.mapping = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        c.mapping["m0"] = 10  # type: ignore[index]
    with pytest.raises(lift.LiftValueError):
        lift.Choices.from_json({"structural": {}, "joint": {}})  # not the Choices form
    # None (the solver's mapping) and {} (the default lowering) stay apart
    assert lift.Choices.from_json(lift.Choices(mapping={}).to_json()).mapping == {}
    assert lift.Choices.from_json(lift.Choices().to_json()).mapping is None


def test_a_plain_dict_is_converted_once_and_compares_equal_to_its_choices():
    c = as_choices({"T": {"size": 16}, "rows": 30, "T_R": 64, "local_size_0": 4}, map_labels=["rows"])
    assert c.points == {"T": {"size": 16}} and c.mapping == {"rows": 30}
    assert c.tuning == {"T_R": 64} and c.launch == {"local_size_0": 4}
    assert c == {"T": {"size": 16}, "rows": 30, "T_R": 64, "local_size_0": 4}


@pytest.mark.device
def test_compile_records_the_choices_it_used_and_they_rebuild_the_program():
    prog = lift.compile(gemv_program())
    assert isinstance(prog.choices, lift.Choices) and prog.choices.mapping  # the solver's mapping
    again = lift.compile(gemv_program(), choices=lift.Choices.from_json(prog.choices.to_json()))
    assert again.source == prog.source and again.choices == prog.choices
    low = lift.compile(fun([Array(Float, N)], lambda x: lift.map_glb(lift.id) << x))
    assert low.choices == lift.Choices()


@pytest.mark.device
def test_tuned_choices_rebuild_the_tuned_program_exactly():
    x, y = rand(1 << 12), rand(1 << 12, seed=1)
    res = lift.tune(tiled_dot(), x, y, budget=120, trials=4, db=False, progress=False, auto=False)
    assert isinstance(res.choices, lift.Choices) and res.best.choices == res.choices
    for r in res.history:
        assert r.choices is None or isinstance(r.choices, lift.Choices)
    rebuilt = lift.compile(tiled_dot(), choices=lift.Choices.from_json(json.dumps(res.choices.to_json())))
    assert rebuilt.source == res.best.source
    np.testing.assert_allclose(rebuilt(x, y), np.dot(x.astype(np.float64), y), rtol=1e-3)
    # a specialised candidate (not only the default the budget always allows) rebuilds exactly
    from lift.explore.evaluate import Evaluator
    from lift.explore.tune import _sizes

    pipe = Evaluator(tiled_dot(), (x, y), None, _sizes(tiled_dot(), (x, y)))
    structural = {"R": {"skip": False}}
    joint = pipe.space(structural).sample(1, seed=0)[0]
    prog = pipe.build(pipe.point(structural, joint))
    assert prog.choices.sizes and prog.choices.points == structural
    again = lift.compile(pipe.expr, choices=lift.Choices.from_json(json.dumps(prog.choices.to_json())))
    assert again.source == prog.source


@pytest.mark.device
def test_an_explicit_mapping_must_name_every_map_and_only_maps():
    prog = fun([Array(Array(Float, N), Size("M"))],
               lambda a: map(lambda row: map(lambda v: v * 2.0, label="inner") << row, label="outer") << a)
    with pytest.raises(lift.LiftValueError, match="no code for the maps inner"):
        lift.compile(prog, choices={"outer": 30})
    with pytest.raises(lift.LiftValueError, match="names outr, which are not maps"):
        lift.compile(prog, choices=lift.Choices(mapping={"outr": 30, "inner": 0}))
    ok = lift.compile(prog, choices=lift.Choices(mapping={"outer": 30, "inner": 0}))
    x = rand(3, 5)
    np.testing.assert_allclose(ok(x), x * 2.0, rtol=1e-6)
