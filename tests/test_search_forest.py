"""The informed strategy's random forest (`lift.explore.forest`) and its use by `ModelBased`:
it learns an interaction of choices that an additive model cannot, its expected improvement
prefers a lower or a more uncertain prediction, and a skipped point's parameters are ignored."""

from __future__ import annotations

import numpy as np

from lift.choices import Choices
from lift.explore.evaluate import Record
from lift.explore.forest import Forest, expected_improvement
from lift.explore.points import joint, point
from lift.explore.search import ModelBased
from lift.explore.surrogate import features, improvement, predict


def _p(structural: dict, given: dict) -> Choices:
    """A search point (its map labels: the joint variables named like the solver's `m<k>`)."""
    return point(structural, given, maps=[k for k in given if k.startswith("m")])


def test_the_forest_learns_an_interaction_and_is_deterministic() -> None:
    """Slow only when both flags are set (times 8x); the forest says so for an unseen third value."""
    rng = np.random.default_rng(1)
    x = np.array([[a, b, c] for a in (0, 1) for b in (0, 1) for c in range(6)], dtype=float)
    y = np.where((x[:, 0] == 1) & (x[:, 1] == 1), 3.0, 0.0) + rng.normal(0, 0.05, len(x))
    q = np.array([[1, 1, 7], [1, 0, 7], [0, 1, 7], [0, 0, 7]], dtype=float)
    mean, sd = Forest(seed=3).fit(x, y).predict(q)
    assert mean[0] > 2.0 and max(mean[1:]) < 1.0, mean
    again, _ = Forest(seed=3).fit(x, y).predict(q)
    assert np.array_equal(mean, again) and sd.shape == (4,)


def test_expected_improvement_prefers_lower_and_more_uncertain_predictions() -> None:
    ei = expected_improvement(np.array([0.0, 1.0, 2.0, 2.0]), np.array([0.1, 0.1, 0.1, 2.0]), best=1.0)
    assert ei[0] > ei[1] > ei[2] >= 0.0 and ei[3] > ei[2]
    assert abs(ei[0] - 1.0) < 1e-6  # certain and better by 1: improves by 1


def _cand(layout: str, rows: int, m0: int, skip: bool = False) -> Choices:
    return _p({"auto_b0": {"skip": skip, "rows": rows, "layout": layout}}, {"m0": m0, "local_size_0": 8})


def test_the_model_proposes_from_the_family_that_pays_where_an_additive_model_does_not() -> None:
    """Time is short only with layout "copy" AND rows 4 (an interaction); the forest's pick is
    the untried candidate of that family, the ridge model's is not."""
    def time(c: Choices) -> float:
        s = c.points["auto_b0"]
        return (1.0 if (s["layout"], s["rows"]) == ("copy", 4) else 8.0 if s["layout"] == "copy" else 2.0) \
            * (1.0 + 0.01 * joint(c)["m0"] / 10)

    hist = [Record(c, True, time=time(c)) for c in
            (_cand(lay, r, m) for lay in ("copy", "keep") for r in (1, 2, 4) for m in (0, 10))]
    pool = [_cand("copy", 4, 30), _cand("copy", 1, 30), _cand("keep", 4, 30), _cand("keep", 2, 30)]
    mb = ModelBased(lambda h: None, warmup=2, explore=0.0, pool=lambda: pool)
    assert mb.propose(hist) == pool[0]
    assert int(np.argmax(improvement(hist, pool))) == 0
    assert int(np.argmin(predict(hist, pool))) != 0  # additive: "copy" is bad on average


def test_a_skipped_points_parameters_are_not_features() -> None:
    skipped = features(_cand("copy", 4, 0, skip=True))
    assert skipped["s.auto_b0.skip"] == 1.0 and not any("rows" in k or "layout" in k for k in skipped)
    applied = features(_p({"p": {"skip": False, "rows": 4, "cols": 2, "width": 8}}, {}))
    assert applied["s.p.block"] == 2 + 1 + 3  # log2 of the accumulators per work-item
