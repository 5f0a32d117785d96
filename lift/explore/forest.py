"""A small random forest (numpy only): the informed strategy's model of log time.

Regression trees on bootstrap samples, each split chosen among a random half of the features
by the least squared error (every threshold between distinct values tried at once with
cumulative sums). A forest suits the tuner's space: the choices are mixed (block sizes,
layouts, map codes, launch sizes), conditional (a skipped point's parameters mean nothing)
and interact (a width that pays along the output does not along the reduction), which an
additive model cannot say; the spread of the trees' predictions is the uncertainty that
expected improvement needs (as SMAC does, Hutter et al. 2011).
"""

from __future__ import annotations

import math

import numpy as np


class Forest:
    """`Forest(trees, min_leaf, seed).fit(x, y)`, then `predict(q) -> (mean, sd)` over the trees."""

    def __init__(self, trees: int = 24, min_leaf: int = 2, seed: int = 0, max_depth: int = 12) -> None:
        self.n_trees, self.min_leaf, self.max_depth = trees, min_leaf, max_depth
        self.rng = np.random.default_rng(seed)
        self.trees: list[tuple[np.ndarray, ...]] = []

    def fit(self, x: np.ndarray, y: np.ndarray) -> Forest:
        n = len(y)
        self.trees = [self._tree(x, y, self.rng.integers(0, n, n)) for _ in range(self.n_trees)]
        return self

    def predict(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        each = np.array([_route(t, q) for t in self.trees])
        return each.mean(0), each.std(0)

    def _tree(self, x: np.ndarray, y: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        feat, thr, left, right, value = [], [], [], [], []  # type: list[int], list[float], list[int], list[int], list[float]
        todo = [(rows, 0, -1, False)]
        while todo:
            idx, depth, parent, is_right = todo.pop()
            node = len(feat)
            if parent >= 0:
                (right if is_right else left)[parent] = node
            split = self._split(x, y, idx) if depth < self.max_depth else None
            feat.append(-1 if split is None else split[0])
            thr.append(0.0 if split is None else split[1])
            left.append(node)
            right.append(node)
            value.append(float(y[idx].mean()))
            if split is not None:
                go = x[idx, split[0]] <= split[1]
                todo.append((idx[go], depth + 1, node, False))
                todo.append((idx[~go], depth + 1, node, True))
        return (np.array(feat), np.array(thr), np.array(left), np.array(right), np.array(value))

    def _split(self, x: np.ndarray, y: np.ndarray, idx: np.ndarray) -> tuple[int, float] | None:
        """The (feature, threshold) with the least squared error of the two sides, or None."""
        n, m = len(idx), self.min_leaf
        if n < 2 * m or np.ptp(y[idx]) == 0:
            return None
        d = x.shape[1]
        feats = self.rng.choice(d, max(1, math.ceil(d / 2)), replace=False)
        xs = x[np.ix_(idx, feats)]
        order = np.argsort(xs, axis=0, kind="stable")
        xs = np.take_along_axis(xs, order, 0)
        ys = y[idx][order]
        s, s2 = np.cumsum(ys, 0), np.cumsum(ys * ys, 0)
        k = np.arange(1, n)[:, None]  # the left side's size
        sse = (s2[:-1] - s[:-1] ** 2 / k) + ((s2[-1] - s2[:-1]) - (s[-1] - s[:-1]) ** 2 / (n - k))
        ok = (xs[1:] > xs[:-1]) & (k >= m) & (n - k >= m)
        if not ok.any():
            return None
        sse = np.where(ok, sse, np.inf)
        i, j = np.unravel_index(int(np.argmin(sse)), sse.shape)
        if sse[i, j] >= (s2[-1, j] - s[-1, j] ** 2 / n) - 1e-12:
            return None
        return int(feats[j]), float(xs[i, j])  # <= goes left: exactly the first i + 1 rows


def _route(tree: tuple[np.ndarray, ...], q: np.ndarray) -> np.ndarray:
    feat, thr, left, right, value = tree
    node = np.zeros(len(q), dtype=np.int64)
    rows = np.arange(len(q))
    for _ in range(64):
        f = feat[node]
        inner = f >= 0
        if not inner.any():
            break
        go_left = q[rows, np.where(inner, f, 0)] <= thr[node]
        node = np.where(inner, np.where(go_left, left[node], right[node]), node)
    return value[node]


def expected_improvement(mean: np.ndarray, sd: np.ndarray, best: float) -> np.ndarray:
    """Expected improvement below `best` of normal predictions (mean, sd) (lower is better)."""
    sd = np.maximum(sd, 1e-9)
    z = (best - mean) / sd
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return (best - mean) * cdf + sd * pdf


__all__ = ["Forest", "expected_improvement"]
