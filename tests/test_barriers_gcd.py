"""The GCD test of the dependence analysis (lift.barriers.dependence.gcd_disjoint) against
brute force: whenever it says two accesses are disjoint, no assignment of their atoms makes
them touch one element; and it does decide the packing kernel's interleaved stores."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from lift.arith import Cst, Var
from lift.barriers.dependence import gcd_disjoint

# Atoms of the two sides are independent (another work-item, another iteration), so side 1
# uses x0, x1 and side 2 y0, y1, plus a floor division (any integer atom counts).
X = [Var("x0", Cst(0), Cst(5)), Var("x1", Cst(0), Cst(5))]
Y = [Var("y0", Cst(0), Cst(5)), Var("y1", Cst(0), Cst(5))]

coef = st.integers(-12, 12)


def _index(atoms, cs, c0):
    e = Cst(c0)
    for a, c in zip(atoms, cs):
        e = e + c * a
    return e


def _value(cs, c0, vals):
    return c0 + sum(c * v for c, v in zip(cs, vals))


@given(st.lists(coef, min_size=2, max_size=2), st.integers(-20, 20), st.integers(1, 8),
       st.lists(coef, min_size=2, max_size=2), st.integers(-20, 20), st.integers(1, 8))
def test_disjoint_means_no_common_element(cs1, c1, w1, cs2, c2, w2):
    lo1, lo2 = _index(X, cs1, c1), _index(Y, cs2, c2)
    if not gcd_disjoint(lo1, w1, lo2, w2):
        return
    for xs in itertools.product(range(6), repeat=2):
        a = _value(cs1, c1, xs)
        for ys in itertools.product(range(6), repeat=2):
            b = _value(cs2, c2, ys)
            assert a + w1 - 1 < b or b + w2 - 1 < a, (lo1, w1, lo2, w2, xs, ys)


def test_interleaved_stores_are_disjoint():
    gl, gl2 = Var("gl", Cst(0), None), Var("gl2", Cst(0), None)
    for j, k in itertools.combinations(range(8), 2):
        assert gcd_disjoint(8 * gl + j, 1, 8 * gl2 + k, 1)
    assert not gcd_disjoint(8 * gl, 1, 8 * gl2, 1)       # the same slot of another work-item
    assert not gcd_disjoint(8 * gl, 2, 8 * gl2 + 1, 1)    # a 2-wide access covers slot 1 too
    assert gcd_disjoint(8 * gl, 4, 8 * gl2 + 4, 4)        # two halves of a float8
    assert not gcd_disjoint(8 * gl + 3, 1, gl2, 1)        # a unit stride reaches everything
    assert gcd_disjoint(Cst(3), 1, Cst(5), 1) and not gcd_disjoint(Cst(3), 3, Cst(5), 1)


def test_floor_divisions_are_integer_atoms():
    gl, gl2 = Var("gl", Cst(0), None), Var("gl2", Cst(0), None)
    assert gcd_disjoint(4 * (gl // 3) + 1, 1, 4 * (gl2 // 5) + 2 * gl2, 1)
