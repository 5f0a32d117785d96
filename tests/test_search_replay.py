"""Search strategies over recorded measurements (`lift.explore.search.replay`): the replay
is deterministic, proposes only recorded candidates, and the informed strategy finds the
best of a structured table sooner than uniform sampling."""

from __future__ import annotations

import json
import statistics

from lift.choices import Choices
from lift.explore.evaluate import Record
from lift.explore.points import joint, legacy_json, point
from lift.explore.points import key as point_key
from lift.explore.search import Evolution, ModelBased, Table, replay


def _p(structural: dict, given: dict) -> Choices:
    """A search point (its map labels: the joint variables named like the solver's `m<k>`)."""
    return point(structural, given, maps=[k for k in given if k.startswith("m")])


def _table() -> Table:
    """A 2-D space of tile sizes and work-group sizes whose time is smooth in log2 of both,
    with a fifth of the points rejected."""
    rows = {}
    for t in range(12):
        for ls in range(8):
            c = _p({"auto_r0": {"skip": False, "width": 8}}, {"T": 1 << t, "local_size_0": 1 << ls})
            ok = (t * 7 + ls * 3) % 5 != 0
            time = 1e-3 * (1 + (t - 8) ** 2 + 0.5 * (ls - 5) ** 2)
            rows[point_key(c)] = {"choices": c.to_json(), "ok": ok, "time": time if ok else None}
    return Table(rows)


def test_a_replay_is_deterministic_and_proposes_each_recorded_candidate_once() -> None:
    table = _table()
    a, b = replay(table, "informed", seed=3), replay(table, "informed", seed=3)
    assert a.keys == b.keys and a.times == b.times
    assert len(set(a.keys)) == len(a.keys) == len(table.rows)
    assert set(a.keys) == set(table.rows)
    u = replay(table, "uniform", seed=3)
    assert sorted(u.keys) == sorted(table.rows) and u.keys != a.keys


def test_a_table_round_trips_through_json_and_from_a_history() -> None:
    table = _table()
    again = Table.from_json(json.loads(json.dumps(table.to_json())))
    assert again.rows == table.rows and again.best_time() == table.best_time() == 1e-3
    cands = [Choices.from_json(r["choices"]) for r in list(table.rows.values())[:3]]
    hist = [Record(Choices(), True, time=5.0)] + [Record(c, True, time=1.0) for c in cands]
    assert len(Table.from_history(hist).rows) == 3  # the default lowering is left out


def test_evolution_needs_at_most_half_the_evaluations_of_uniform_on_a_smooth_table() -> None:
    table = _table()
    best = table.best_time()
    uni = [replay(table, "uniform", seed=s).evaluations_to(best) for s in range(5)]
    inf = [replay(table, "evolution", seed=s).evaluations_to(best) for s in range(5)]
    assert all(n is not None for n in uni + inf)
    assert statistics.mean(inf) <= statistics.mean(uni) / 2, (uni, inf)


def test_evolution_mutates_the_best_after_the_warm_up() -> None:
    picks = []

    def rand(history):
        return _p({}, {"T": 1000 + len(history)})

    def neighbours(c):
        picks.append(joint(c)["T"])
        return iter([_p({}, {"T": joint(c)["T"] + 1})])

    ev = Evolution(rand, neighbours, lambda r: r.time, seed=0, warmup=2, explore=0.0, elite=1)
    hist = [Record(_p({}, {"T": 5}), True, time=2.0), Record(_p({}, {"T": 9}), True, time=1.0)]
    assert joint(ev.propose(hist)) == {"T": 10} and picks == [9]


def test_the_model_proposes_the_candidate_it_predicts_fastest() -> None:
    fast, slow = {"m0": 30}, {"m0": 0}
    hist = [Record(_p({}, {**m, "T": t}), True, time=(1.0 if m is fast else 4.0))
            for m in (fast, slow) for t in (1, 2, 4, 8)]
    pool = [_p({}, {**slow, "T": 16}), _p({}, {**fast, "T": 16})]
    mb = ModelBased(lambda h: None, warmup=2, explore=0.0, pool=lambda: pool)
    assert mb.propose(hist) == pool[1]


def test_the_model_finds_a_middle_optimum_and_reads_any_choice() -> None:
    """Time is best at a middle tile size (log2 T = 4): the squared features let the model
    propose the untried T nearest to it; a new kind of choice (a string) is one-hot."""
    from lift.explore.surrogate import features, predict

    hist = [Record(_p({"p": {"layout": "row"}}, {"T": 2 ** k}), True, time=1.0 + (k - 4) ** 2)
            for k in (0, 1, 2, 6, 7, 8)]
    pool = [_p({"p": {"layout": "row"}}, {"T": 2 ** k}) for k in (3, 5, 9, 10)]
    pred = predict(hist, pool)
    assert min(zip(pred.tolist(), range(4)))[1] in (0, 1) and pred[3] > pred[0]
    f = features(_p({"p": {"layout": "col", "skip": False}}, {"m1": 31, "local_size_0": 8}))
    assert f["s.p.layout=col"] == 1.0 and f["s.p.skip"] == 0.0 and f["m.m1.dim"] == 1.0 and f["group_size"] == 3.0


def test_a_table_of_older_rows_reads_back_with_the_same_keys_and_replays_alike() -> None:
    """Tables recorded before search points were `Choices` hold the older JSON form."""
    table = _table()
    old = {"rows": [{**r, "choices": legacy_json(Choices.from_json(r["choices"]))} for r in table.rows.values()]}
    again = Table.from_json(json.loads(json.dumps(old)))
    assert list(again.rows) == list(table.rows)
    assert replay(again, "informed", seed=1).keys == replay(table, "informed", seed=1).keys
