"""The normalisation stage and the algebraic facts it uses: every spelling of a program interprets
equal to the canonical one, and `lift.compile` of it fires the same automatic points with the
same choices (lift/rules/normalise.py, lift/userfun/facts.py, lift/spellings.py)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, Tuple, fun, map, pad, reduce, slide, transpose, user_fun, zip
from lift.errors import UserFunError
from lift.ir.alpha import alpha_equal
from lift.rules.normalise import normalise
from lift.spellings import KINDS, respell, spell
from lift.testing import assert_vouched
from lift.userfun import facts

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------- facts


@user_fun
def plus_r(a: Float, b: Float) -> Float:
    return b + a


@user_fun
def times_via_local(a: Float, b: Float) -> Float:
    s = a * b
    return s


@user_fun
def minus(a: Float, b: Float) -> Float:
    return a - b


@user_fun
def axpb(a: Float, b: Float) -> Float:
    return a + 2.0 * b


@user_fun
def bigger(a: Float, b: Float) -> Float:
    return a if a > b or a != a else b  # NaN propagates, as in the built-in max_


@user_fun
def bigger_nan_blind(a: Float, b: Float) -> Float:
    return a if a > b else b  # lets NaN through in one order only: not associative, not max_


@user_fun
def pair_r(p: Tuple(Float, Float)) -> Float:
    return p[1] * p[0]


@user_fun
def fused_step(acc: Float, p: Tuple(Float, Float)) -> Float:
    return p[0] * p[1] + acc


@user_fun
def not_a_step(acc: Float, p: Tuple(Float, Float)) -> Float:
    return acc * 0.5 + p[0]


def test_operators_are_recognised_by_their_bodies_not_their_names() -> None:
    assert facts.operator(plus_r).kind == "add"
    assert facts.operator(times_via_local).kind == "mult"
    assert facts.operator(bigger).kind == "max_"
    assert facts.operator(lift.add.specialise(Float, Float)).kind == "add"
    assert facts.operator(minus) is None and facts.operator(axpb) is None
    assert facts.operator(bigger_nan_blind) is None
    assert facts.sums(plus_r) and not facts.sums(times_via_local)


def test_pair_functions_and_fold_steps() -> None:
    assert facts.pair_operator(pair_r).kind == "mult"
    op, g = facts.fold_step(fused_step)
    assert op.kind == "add" and g == ("bin", "*", ("get", ("arg", 1), 0), ("get", ("arg", 1), 1))
    assert facts.fold_step(not_a_step) is None
    assert facts.is_identity(user_fun(lambda x: x, [Float], Float)) and not facts.is_identity(plus_r)


def test_vouched_operator_is_trusted_and_checked() -> None:
    smooth = user_fun(lambda a, b: a + b + a * b, [Float, Float], Float, name="smooth",
                      associative=True, commutative=True, neutral=0.0)
    op = facts.operator(smooth)
    assert op.vouched and op.commutative and op.neutral == 0.0 and op.kind == ""
    assert_vouched(smooth)
    liar = user_fun(lambda a, b: a - b, [Float, Float], Float, name="liar", associative=True)
    with pytest.raises(AssertionError, match="not associative"):
        assert_vouched(liar)
    with pytest.raises(UserFunError, match="associative=True"):
        user_fun(lambda a, b: a - b, [Float, Float], Float, commutative=True)


# ------------------------------------------------------------------------------- families


def _matmul(n: int):
    t = [Array(Array(Float, n), n), Array(Array(Float, n), n)]
    return fun(t, lambda a, b: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c))
                                   << transpose << b) << a)


def _batched(n: int):
    t = [Array(Array(Array(Float, n), n), 4), Array(Array(Array(Float, n), n), 4)]
    return fun(t, lambda xs, ys: map(lambda ab: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << transpose << ab[1])
        << ab[0]) << zip(xs, ys))


def _gemv(n: int):
    return fun([Array(Array(Float, n), n), Array(Float, n)],
               lambda a, v: map(lambda row: reduce(lift.add, 0.0) << map(lift.mult) << zip(row, v)) << a)


def _dot(n: int):
    return fun([Array(Float, n), Array(Float, n)], lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))


def _conv(n: int, c: int = 32):
    """3x3, c -> c channels, padded, over [n][n][c]; weights [c][3][3][c]."""
    from lift import join_nd, map_nd, pad_nd, slide_nd

    t = [Array(Array(Array(Float, c), n), n), Array(Array(Array(Array(Float, c), 3), 3), c)]
    return fun(t, lambda inp, wts: map_nd(2, lambda win: map(
        lambda k: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, k)) << (map(join_nd(3)) << wts))
        << (map_nd(2, join_nd(3)) << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0.0) << inp))


def _stencil(n: int):
    """out[i] = x[i-1] + x[i] + x[i+1], zero outside."""
    return fun([Array(Float, n)], lambda x: map(lambda w: reduce(lift.add, 0.0) << w) << slide(3, 1)
               << pad(1, 1, 0.0) << x)


def _row_sums(n: int):
    return fun([Array(Array(Float, n), n)], lambda x: map(lambda row: reduce(lift.add, 0.0) << row) << x)


def _col_max(n: int):
    return fun([Array(Array(Float, n), n)], lambda x: map(lambda col: reduce(lift.max_, -3.0e38) << col)
               << transpose << x)


# (family, small size for the interpreter, size where the automatic points fire)
FAMILIES = {"matmul": (_matmul, 8, 256), "batched": (_batched, 8, 32), "gemv": (_gemv, 16, 512),
            "dot": (_dot, 64, 1 << 16), "conv": (_conv, 4, 16), "stencil": (_stencil, 32, 1 << 16),
            "row_sums": (_row_sums, 16, 512), "col_max": (_col_max, 16, 512)}


def _tmm(n: int):
    """A B^T: both operands read by rows."""
    t = [Array(Array(Float, n), n), Array(Array(Float, n), n)]
    return fun(t, lambda a, b: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << b)
               << a)


def _sgemm(n: int):
    """alpha A B + beta C: the product's operands are components of zipped rows and columns."""
    t = [Float, Array(Array(Float, n), n), Array(Array(Float, n), n), Array(Array(Float, n), n), Float]
    return fun(t, lambda alpha, a, b, c, beta: map(lambda rc: map(
        lambda cc: lift.add(lift.mult(alpha, reduce(lift.add, 0.0) << map(lift.mult) << zip(rc[0], cc[0])),
                            lift.mult(beta, cc[1]))) << zip(transpose << b, rc[1])) << zip(a, c))


# families checked only by the normaliser (no compile): every pair of spellings at once
PAIRED = {**{k: v[0] for k, v in FAMILIES.items()}, "tmm": _tmm, "sgemm": _sgemm}
_PAIRS = [(a, b) for i, a in enumerate(KINDS) for b in KINDS[i + 1:] if "own_ops" not in (a, b)]


@pytest.mark.parametrize("family", sorted(PAIRED))
@pytest.mark.parametrize("kinds", _PAIRS, ids=["+".join(k) for k in _PAIRS])
def test_two_spellings_together_normalise_to_the_canonical_program(family: str, kinds: tuple[str, str]) -> None:
    """A rule's result is normalised again (a fused step split into `map(mult) << zip(c, r)` gets
    its operands ordered), and zip operands that are components of parameters are ordered too."""
    prog = PAIRED[family](4)
    assert normalise(prog) is prog
    spelled = spell(prog, *kinds)
    assert alpha_equal(normalise(spelled), prog), f"{spelled}\n -> {normalise(spelled)}"
    args = _inputs(prog)
    np.testing.assert_allclose(lift.interpret(spelled, *args), lift.interpret(prog, *args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", sorted(PAIRED))
def test_every_combination_of_spellings_normalises_to_the_canonical_program(family: str) -> None:
    """Three to six spellings at once: a lambda one rule builds (`fission` undone by joining the
    reduction back into its map) has its zips ordered in the next pass."""
    prog = PAIRED[family](4)
    kinds = [k for k in KINDS if k != "own_ops"]
    for r in range(3, len(kinds) + 1):
        for combo in itertools.combinations(kinds, r):
            spelled = spell(prog, *combo)
            assert alpha_equal(normalise(spelled), prog), f"{combo}: {spelled}\n -> {normalise(spelled)}"


def _inputs(prog, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, _shape(p.ptype)).astype(np.float32) for p in prog.params]


def _shape(t) -> tuple[int, ...]:
    out = []
    while isinstance(t, lift.types.ArrayType):
        out.append(int(t.size.value) if hasattr(t.size, "value") else int(t.size))
        t = t.elem
    return tuple(out)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_canonical_programs_are_fixed_points(family: str) -> None:
    make, small, _ = FAMILIES[family]
    prog = make(small)
    assert normalise(prog) is prog


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_spelling_at_once_normalises_to_the_canonical_points(family: str) -> None:
    make, small, _ = FAMILIES[family]
    prog = make(small)
    spelled = spell(prog, *KINDS)
    assert lift.interpret(spelled, *_inputs(prog)) == pytest.approx(lift.interpret(prog, *_inputs(prog)), rel=1e-4,
                                                                      abs=1e-4)
    without_own = spell(prog, *(k for k in KINDS if k != "own_ops"))
    assert alpha_equal(normalise(without_own), prog), f"{without_own}\n -> {normalise(without_own)}"


_COMPILED: dict[str, dict] = {}


def _points(prog) -> dict:
    return {k: dict(v) for k, v in lift.compile(prog).choices.points.items()}


@pytest.mark.device
@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=2)
@given(data=st.data())
def test_spellings_interpret_equal_and_compile_to_the_same_points(family: str, data: st.DataObject) -> None:
    make, small, big = FAMILIES[family]
    decisions = data.draw(st.lists(st.booleans(), min_size=24, max_size=24), label="decisions")
    salt = data.draw(st.integers(0, 1), label="salt")

    def spelt(prog):
        it = iter(decisions)
        return respell(prog, lambda kind, n: next(it, False), lambda: salt)

    canon, spelling = make(small), spelt(make(small))
    args = _inputs(canon)
    np.testing.assert_allclose(lift.interpret(spelling, *args), lift.interpret(canon, *args), rtol=1e-4, atol=1e-4)
    if family not in _COMPILED:
        _COMPILED[family] = _points(make(big))
    big_spelling = spelt(make(big))
    assert _points(big_spelling) == _COMPILED[family], str(big_spelling)


@pytest.mark.device
def test_the_issue_spellings_of_matmul_compile_to_register_blocks() -> None:
    """The README's spellings: own add/mult, a pair function, a fused step; all blocked like the
    built-in spelling, and all equal to A B."""
    canon = _matmul(256)
    a, b = _inputs(canon, seed=3)
    want = _points(canon)
    assert any(k.startswith("auto_b") for k in want), want
    for kinds in (("own_ops",), ("pair",), ("fused",), ("own_ops", "fused"), ("zip_order", "pair")):
        prog = spell(canon, *kinds)
        k = lift.compile(prog)
        assert {x: dict(v) for x, v in k.choices.points.items()} == want, kinds
        np.testing.assert_allclose(k(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_no_point_or_rule_branches_on_a_function_name() -> None:
    """The automatic points and the rules ask facts (lift.userfun.facts), never a name."""
    pattern = re.compile(r"""(\.name\s*(==|!=|in)\s*\(?["'](add|mult|max_|min_|id)["'])|\bbuiltin\(""")
    hits = [f"{p.relative_to(ROOT)}:{i}" for folder in ("rewrites", "rules", "constraints")
            for p in sorted((ROOT / folder).glob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


def test_the_tuner_searches_one_space_for_every_spelling() -> None:
    """lift.tune normalises first, so the structural space of its automatic points is the same."""
    from lift.explore.tune import _search_space

    canon = _matmul(256)
    want = _search_space(normalise(canon), {}, True)[1]
    assert any(k.startswith("auto_b") for k in want), want
    for kinds in (("own_ops", "fused"), ("pair", "zip_order"), ("fission", "let", "transposes")):
        assert _search_space(normalise(spell(canon, *kinds)), {}, True)[1] == want, kinds


def test_traced_user_functions_fuse_into_one_multiply_add() -> None:
    """A function without source (typed at a prompt) is traced into straight-line locals; its
    expression still fuses with another's, so the matmul's update is one contractible expression."""
    from lift.userfun.compose import expression, fused

    my_add = user_fun(eval("lambda a, b: a + b"), [Float, Float], Float, name="my_add")  # noqa: S307 - no source
    my_mul = user_fun(eval("lambda a, b: a * b"), [Float, Float], Float, name="my_mul")  # noqa: S307
    assert "_t0" in my_add.c_source
    assert expression(my_add) == "(a + b)"
    assert fused(my_add, my_mul, 1).c_source.count("return (a + ((my_mul_a * my_mul_b)))") == 1
    assert facts.operator(my_add).kind == "add" and facts.operator(my_mul).kind == "mult"


def test_a_pair_function_on_arrays_is_no_operator_and_compiles() -> None:
    """`map(p => p.0) << zip(x, y)` over 3-D arrays: the facts must not translate a built-in for
    array types (the threaded fuzzer found lift.compile refusing it: 'arithmetic on [[Float]6]8')."""
    t = Array(Array(Array(Float, 6), 8), 3)
    prog = fun([t, t], lambda x, y: map(lambda p: p[0]) << zip(x, y))
    assert facts.pair_operator(prog.body.f.f) is None
    x = np.random.default_rng(0).random((3, 8, 6), dtype=np.float32)
    np.testing.assert_array_equal(lift.compile(prog, local_size=1)(x, x + 1), x)


@user_fun
def _blur3(a: Float, b: Float, c: Float) -> Float:
    return 0.25 * a + 0.5 * b + 0.25 * c


@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("step", [1, 2])
def test_windows_down_the_columns_become_windows_of_rows(padded: bool, step: int) -> None:
    """`transpose << map(row => map(g) << slide << pad << row) << transpose << x` (a blur along y
    spelled through the transposed rows) normalises to windows of whole rows with no transpose of
    `x` left, bit for bit the same result."""
    def cols(x):
        def blur(row):
            src = pad(1, 1, 0.0) << row if padded else row
            return map(lambda w: _blur3(w[0], w[1], w[2])) << slide(3, step) << src
        return transpose << map(blur) << transpose << x

    prog = fun([Array(Array(Float, 9), 7)], lambda x: map(map(lambda v: _blur3(v, v, v))) << cols(x))
    out = normalise(prog)
    body = str(out)
    assert body.count("transpose") == 1 and "map((row) => map" in body and "<< transpose << row)" in body, body
    x = np.random.default_rng(step).random((7, 9), dtype=np.float32) - 0.5
    np.testing.assert_array_equal(lift.interpret(out, x), lift.interpret(prog, x))
    np.testing.assert_allclose(lift.compile(prog)(x), lift.interpret(prog, x), rtol=1e-6, atol=1e-6)


def test_column_windows_that_read_their_row_twice_are_left_alone() -> None:
    """The element function must not read the row beside its windows (it would need the column)."""
    prog = fun([Array(Array(Float, 9), 7)],
               lambda x: transpose << map(lambda row: map(lambda w: _blur3(w[0], w[1], row[0])) << slide(3, 1)
                                          << row) << transpose << x)
    assert str(normalise(prog)).count("transpose") == 2


def _blur_rows(img):
    return map(lambda row: map(lambda w: _blur3(w[0], w[1], w[2])) << slide(3, 1) << pad(1, 1, 0.0) << row) << img


def _count_maps_at_top(prog) -> int:
    """How many computing stages the program's body applies one after the other at its top."""
    e, n = prog.body, 0
    while hasattr(e, "args") and e.args:
        n += type(e.f).__name__ == "Map"
        e = e.args[-1]
    return n


@pytest.mark.parametrize("reads_channel", [False, True])
def test_a_stage_read_through_windows_is_computed_for_every_channel_first(reads_channel: bool) -> None:
    """`map(c => F(slide << G(c))) << x` (per channel: blur the rows, then blur the blurred rows'
    columns) becomes `map(F) << map(G) << x`, zipped with `x` where F reads the channel too; the
    same numbers, and the compiled stages match the interpreter."""
    t = Array(Array(Array(Float, 9), 7), 3)

    def channel(c):
        by = map(lambda rows: map(lambda col: _blur3(col[0], col[1], col[2])) << transpose << rows) \
            << slide(3, 1) << pad(1, 1, 0.0) << _blur_rows(c)
        if not reads_channel:
            return by
        return map(lambda rr: map(lambda p: _blur3(p[0], p[1], p[0])) << zip(rr[0], rr[1])) << zip(c, by)

    prog = fun([t], lambda x: map(channel) << x)
    out = normalise(prog)
    text = str(out)
    assert text.startswith("(x) => map(") and ("<< zip(x, map(" in text if reads_channel else
                                                 text.count("<< map(") >= 1), text
    assert _count_maps_at_top(out) == 2, text
    x = np.random.default_rng(3).random((3, 7, 9), dtype=np.float32) - 0.5
    np.testing.assert_array_equal(lift.interpret(out, x), lift.interpret(prog, x))
    np.testing.assert_allclose(lift.compile(prog)(x), lift.interpret(prog, x), rtol=1e-6, atol=1e-6)


def test_element_wise_stages_and_computed_inputs_stay_in_one_map() -> None:
    """A stage read element by element stays fused; a channel array that is itself computed is not
    zipped with the stages (it would be computed twice)."""
    t = Array(Array(Array(Float, 9), 7), 3)
    elementwise = fun([t], lambda x: map(lambda c: map(map(lambda v: _blur3(v, v, v))) << _blur_rows(c)) << x)
    assert _count_maps_at_top(normalise(elementwise)) == 1
    twice = fun([t], lambda x: map(lambda c: map(lambda rr: map(lambda p: _blur3(p[0], p[1], p[0]))
                                                  << zip(rr[0], rr[1]))
                                   << zip(c, map(lambda rows: map(lambda col: _blur3(col[0], col[1], col[2]))
                                                 << transpose << rows) << slide(3, 1) << pad(1, 1, 0.0)
                                          << _blur_rows(c)))
                << map(map(map(lambda v: _blur3(v, v, v)))) << x)
    out = normalise(twice)
    assert "zip(x" not in str(out) and _count_maps_at_top(out) == 2, str(out)


# ------------------------------------------------------------------------------- reshaping views


def _flat_conv(n: int, c: int):
    """The layer of `_conv`, written as the dot product of the flattened window with the flattened
    filter (`join` applied to both operands inside the nest): no point was offered for it before."""
    from lift import join_nd, map_nd, pad_nd, slide_nd

    t = [Array(Array(Array(Float, c), n), n), Array(Array(Array(Array(Float, c), 3), 3), c)]
    return fun(t, lambda inp, wts: map_nd(2, lambda win: map(
        lambda k: reduce(lift.add, 0.0) << map(lift.mult) << zip(join_nd(3) << win, join_nd(3) << k)) << wts)
        << (slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0.0) << inp))


def test_a_flattened_window_convolution_normalises_to_listing_4_1() -> None:
    """The normaliser hoists the joins out of the nest (`map^k(p => F(V(p))) -> map^k(F) << map^k(V)`):
    the canonical spelling, the same numbers."""
    prog = _flat_conv(4, 3)
    assert alpha_equal(normalise(prog), _conv(4, 3)), str(normalise(prog))
    args = _inputs(prog)
    np.testing.assert_array_equal(lift.interpret(normalise(prog), *args), lift.interpret(prog, *args))


@pytest.mark.device
def test_a_flattened_window_convolution_compiles_to_the_canonical_kernel() -> None:
    """At a size where the conv point fires: the same points and choices, the same kernel source
    (so the same speed), and the interpreter's result."""
    flat, canon = lift.compile(_flat_conv(16, 16)), lift.compile(_conv(16, 16))
    assert "layout" in str(flat.choices) and flat.choices.points == canon.choices.points
    assert flat.source == canon.source
    args = _inputs(_conv(16, 16))
    np.testing.assert_allclose(flat(*args), lift.interpret(_conv(16, 16), *args), rtol=1e-4, atol=1e-4)


def test_a_parameter_read_bare_and_flattened_keeps_its_nest() -> None:
    """Hoisting needs every read of the parameter through the same view: a row read whole and
    joined, or joined and split differently, stays as written (and `map(p => join << p)` itself is
    the view, not a nest around it)."""
    t = [Array(Array(Array(Float, 4), 3), 5)]
    both = fun(t, lambda x: map(lambda r: lift.add(reduce(lift.add, 0.0) << lift.join << r,
                                                   reduce(lift.add, 0.0) << map(lambda v: v[0]) << r)) << x)
    assert normalise(both) is both
    view = fun(t, lambda x: map(lambda r: lift.join << r) << x)
    assert normalise(view) is view
    labelled = fun(t, lambda x: map(lambda r: reduce(lift.add, 0.0) << lift.join << r, label="rows") << x)
    assert normalise(labelled) is labelled
    summed = fun(t, lambda x: map(lambda r: reduce(lift.add, 0.0) << lift.join << r) << x)
    assert normalise(summed) is summed  # a reduction of the view is `_fuse_reduce_map`'s form
    hoisted = fun(t, lambda x: map(lambda r: map(lambda v: lift.mult(v, v)) << lift.join << r) << x)
    out = normalise(hoisted)
    assert str(out) == "(x) => map(map((v) => mult(v, v))) << map(join) << x", str(out)
    np.testing.assert_array_equal(lift.interpret(out, *_inputs(hoisted)), lift.interpret(hoisted, *_inputs(hoisted)))
