"""`lift.tc`: parsing, range inference (successes and errors), translation, and a hypothesis test of
random einsum-like contractions against `numpy.einsum`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lift
from lift.comprehension.syntax import parse


def one(source: str, **kw) -> lift.Lambda:
    (prog,) = lift.tc(source, **kw).values()
    return prog


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape, dtype=np.float32) - np.float32(0.5)


# ------------------------------------------------------------------------- translation


def test_contraction_is_the_matmul_spelling() -> None:
    prog = one("def mm(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }")
    assert str(prog) == ("(A, B) => map((m) => map((n) => reduce(add, 0.0) << map(mult) << zip(m, n)) "
                         "<< transpose << B) << A")
    assert str(lift.typecheck(prog)) == "([[Float]K]M, [[Float]N]K) => [[Float]N]M"


def test_several_functions_and_comments() -> None:
    progs = lift.tc("""
    # two functions
    def sum_rows(float(M,N) A) -> (s) { s(i) +=! A(i,j) }   # a comment
    def prod(float(N) x) -> (p) {
        p(i) *=! x(i + j) where j in 0:2
    }""")
    assert list(progs) == ["sum_rows", "prod"]
    a, x = rand(3, 4), rand(5)
    np.testing.assert_allclose(lift.interpret(progs["sum_rows"], a), a.sum(1), rtol=1e-5)
    np.testing.assert_allclose(lift.interpret(progs["prod"], x), x[:-1] * x[1:], rtol=1e-5)


@pytest.mark.parametrize("op, fn, init", [("max=!", np.max, None), ("min=!", np.min, None),
                                          ("+=", np.sum, 1.0), ("max=", np.max, 0.25)])
def test_reductions(op: str, fn, init) -> None:
    pre = "" if init is None else f"r(i) = {init}\n"
    prog = one(f"def f(float(M,N) A) -> (r) {{\n{pre}r(i) {op} A(i,j)\n}}")
    a = rand(4, 6)
    want = fn(a, axis=1)
    if init is not None:
        want = want + init if op == "+=" else np.maximum(want, init)
    np.testing.assert_allclose(lift.interpret(prog, a), want, rtol=1e-5)


def test_builtins_ternary_and_scalars() -> None:
    prog = one("""def f(float s, float(N) x) -> (y) {
        y(i) = x(i) > 0 ? s * tanh(x(i)) : exp(x(i)) - sqrt(fabs(x(i))) / 2
    }""")
    x = rand(9)
    want = np.where(x > 0, 1.5 * np.tanh(x), np.exp(x) - np.sqrt(np.abs(x)) / 2)
    np.testing.assert_allclose(lift.interpret(prog, np.float32(1.5), x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lift.compile(prog)(np.float32(1.5), x), want, rtol=1e-4, atol=1e-5)


def test_pointwise_statements_are_inlined() -> None:
    prog = one("""def f(float(N) x) -> (z) {
        y(i) = x(i) * 2
        z(i) = y(i + 1) + y(i)
    }""")
    assert "let" not in str(prog)
    x = rand(6)
    np.testing.assert_allclose(lift.interpret(prog, x), 2 * x[1:] + 2 * x[:-1], rtol=1e-5)


# ------------------------------------------------------------------------- range inference


def test_rounds_give_conv1d_its_range() -> None:
    prog = one("def conv1d(float(M) I, float(N) K) -> (O) { O(i) +=! K(x) * I(i + x) }")
    assert str(lift.typecheck(prog).out) == "[Float](M - N + 1)"


def test_intersection_of_ranges() -> None:
    prog = one("def f(float(M) A, float(N) B) -> (C) { C(i) = A(i) * B(i) }")
    assert "min(M, N)" in str(lift.typecheck(prog))
    a, b = rand(5), rand(3)
    np.testing.assert_allclose(lift.interpret(prog, a, b), a[:3] * b, rtol=1e-6)


def test_where_with_a_lower_bound_and_a_stride() -> None:
    prog = one("def f(float(M) I) -> (O) { O(i) +=! I(3 * i + k) where k in 1:3 }")
    x = rand(11)
    want = np.array([x[3 * i + 1] + x[3 * i + 2] for i in range(3)])
    np.testing.assert_allclose(lift.interpret(prog, x), want, rtol=1e-5)


def test_output_range_from_a_later_statement() -> None:
    prog = one("""def f(float(B,I) x, float(I) bias) -> (out) {
        out(i, j) = bias(j)
        out(b, j) += x(b, j)
    }""")
    assert str(lift.typecheck(prog).out) == "[[Float]I]B"


def test_ambiguous_ranges_ask_for_a_where_clause() -> None:
    with pytest.raises(lift.LiftValueError) as err:
        lift.tc("def f(float(M) I) -> (O) {\n  O(i) +=! I(i + x)\n}")
    e = err.value
    assert "cannot infer the range" in e.message and "line 2, column 5" in e.message
    assert "where" in e.hint and e.loc.line == 2 and "I(i + x)" in str(e)


def test_maxpool_without_where_fails() -> None:
    with pytest.raises(lift.LiftValueError, match="cannot infer the range of the index variable 'i'"):
        lift.tc("def p(float(H) in) -> (out) { out(i) max=! in(2 * i + kw) }")


# ------------------------------------------------------------------------- errors


@pytest.mark.parametrize("source, cls, words, col", [
    ("def f(float(N) A) -> (C) {\n C(i) +=! D(i)\n}", lift.LiftValueError, "unknown tensor", 11),
    ("def f(float(N,M) A) -> (C) {\n C(i) +=! A(i)\n}", lift.LiftTypeError, "2 dimension(s)", 11),
    ("def f(float(N,M) A) -> (C) {\n C(i) +=! A(i, i)\n}", lift.UnsupportedError, "diagonal", 11),
    ("def f(float(N,M) A) -> (C) {\n C(i) +=! A(i, j * j)\n}", lift.UnsupportedError, "multiplies", 18),
    ("def f(float(N) A) -> (C) {\n C(i) +=! A(i - j)\n}", lift.UnsupportedError, "subtracts", 15),
    ("def f(float(N) A) -> (C) {\n C(i) +=! A.0\n}", lift.LiftValueError, "dimension", 11),
    ("def f(float(N) A) -> (C) {\n C(i) = A(i) + A(k)\n}", lift.LiftValueError, "`=` with the reduction", 2),
    ("def f(float(N) A) -> (C) {\n C(i) += A(i)\n}", lift.LiftValueError, "previous value", 2),
    ("def f(float(N) A) -> (C) {\n A(i) = 1.0\n}", lift.LiftValueError, "is an input", 2),
    ("def f(float(N) A) -> (C) {\n C(i) @ A(i)\n}", lift.LiftValueError, "unexpected character", 7),
    ("def f(int sh, float(N) A) -> (C) {\n C(i) +=! A(sh * i)\n}", lift.UnsupportedError, "constants=", 13),
])
def test_errors_name_line_and_column(source: str, cls: type, words: str, col: int) -> None:
    with pytest.raises(cls) as err:
        lift.tc(source)
    text = str(err.value)
    assert words in text and f"line 2, column {col}" in text, text
    assert err.value.loc.line == 2 and err.value.loc.text


def test_parse_keeps_positions() -> None:
    (f,) = parse("def mv(float(M,K) A, float(K) x) -> (C) {\n  C(i) +=! A(i,k) * x(k)\n}")
    (s,) = f.statements
    assert (s.tensor, s.op, s.pos.line, s.pos.col) == ("C", "+=!", 2, 3)
    assert [p.dims for p in f.params] == [("M", "K"), ("K",)]


# ------------------------------------------------------------------------- einsum property


@st.composite
def contractions(draw: st.DrawFn) -> tuple[str, list[str], str, dict[str, int]]:
    """A random einsum `A_idx,B_idx->out` over up to 4 index letters, with sizes."""
    letters = "ijkl"[:draw(st.integers(1, 4))]
    sizes = {v: draw(st.integers(1, 4)) for v in letters}
    n_in = draw(st.integers(1, 2))
    ins = []
    for _ in range(n_in):
        rank = draw(st.integers(1, len(letters)))
        ins.append("".join(draw(st.permutations(letters))[:rank]))
    used = sorted(set("".join(ins)), key=letters.index)
    out = "".join(draw(st.permutations(used))[:draw(st.integers(1, len(used)))])
    return ",".join(ins), ins, out, sizes


@given(contractions(), st.integers(0, 2**16))
def test_random_contractions_compute_einsum(case, seed: int) -> None:
    spec, ins, out, sizes = case
    names = "AB"
    params = ", ".join(f"float({','.join('N' + v for v in idx)}) {names[t]}" for t, idx in enumerate(ins))
    rhs = " * ".join(f"{names[t]}({','.join(idx)})" for t, idx in enumerate(ins))
    prog = one(f"def f({params}) -> (O) {{ O({','.join(out)}) +=! {rhs} }}")
    args = [rand(*[sizes[v] for v in idx], seed=seed + t) for t, idx in enumerate(ins)]
    want = np.einsum(f"{spec}->{out}", *[a.astype(np.float64) for a in args])
    np.testing.assert_allclose(lift.interpret(prog, *args), want, rtol=1e-4, atol=1e-5)


@pytest.mark.device
@pytest.mark.parametrize("spec", ["ij,jk->ik", "bij,bkj->bik", "ijk,k->ji", "ij,kl->ljk"])
def test_contractions_compile_to_einsum(spec: str) -> None:
    ins, out = spec.split("->")
    idxs = ins.split(",")
    size = dict(i=3, j=4, k=5, l=2, b=2)
    params = ", ".join(f"float({','.join('N' + v for v in idx)}) {'AB'[t]}" for t, idx in enumerate(idxs))
    rhs = " * ".join(f"{'AB'[t]}({','.join(idx)})" for t, idx in enumerate(idxs))
    prog = one(f"def f({params}) -> (O) {{ O({','.join(out)}) +=! {rhs} }}")
    args = [rand(*[size[v] for v in idx], seed=t) for t, idx in enumerate(idxs)]
    np.testing.assert_allclose(lift.compile(prog)(*args), np.einsum(spec, *args), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------- command line


def test_cli_prints_each_function(tmp_path, capsys) -> None:
    from lift.cli import main

    src = tmp_path / "two.tc"
    src.write_text("def mv(float(M,K) A, float(K) x) -> (C) { C(i) +=! A(i,k) * x(k) }\n"
                   "def s(int st, float(N) x) -> (y) { y(i) = x(st * i) }\n")
    assert main(["tc", str(src), "--constants", "st=2"]) == 0
    out = capsys.readouterr().out
    assert "mv: ([[Float]K]M, [Float]K) => [Float]M" in out
    assert "(A, x) => map((i) => reduce(add, 0.0) << map(mult) << zip(i, x)) << A" in out
    assert "s: ([Float]N) => [Float]" in out
    src.write_text("def f(float(N) A) -> (C) {\n C(i) +=! D(i)\n}\n")
    assert main(["tc", str(src)]) != 0
    assert "unknown tensor or function 'D'" in capsys.readouterr().err


def test_two_statement_mv_of_the_paper() -> None:
    prog = one("def mv(float(M,K) A, float(K) x) -> (C) {\n  C(i) = 0\n  C(i) += A(i,k) * x(k)\n}")
    a, x = rand(4, 3), rand(3)
    np.testing.assert_allclose(lift.interpret(prog, a, x), a @ x, rtol=1e-5)
    np.testing.assert_allclose(lift.compile(prog)(a, x), a @ x, rtol=1e-4)


def test_in_place_update_is_fused_as_an_epilogue() -> None:
    prog = one("""def fc(float(B,I) x, float(O,I) w, float(O) bias) -> (out) {
        out(b,o) +=! x(b,i) * w(o,i)
        out(i,j) = fmaxf(out(i,j) + bias(j), 0)
    }""")
    assert str(prog) == ("(x, w, bias) => map((b) => map((o) => max_(add(reduce(add, 0.0) << map(mult) << "
                         "zip(b, get(0) << o), get(1) << o), 0.0)) << zip(w, bias)) << x")
    shifted = one("""def f(float(N,K) A) -> (s) {
        s(i) +=! A(i,k)
        s(i) = s(i) * s(0)
    }""")  # read at another point too: not an epilogue, inlined into the output
    a = rand(5, 3)
    np.testing.assert_allclose(lift.interpret(shifted, a), a.sum(1) * a.sum(1)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("source, hand", [
    ("def tmm(float(M,K) A, float(N,K) B) -> (C) { C(m,n) +=! A(m,kk) * B(n,kk) }",
     lambda a, b: lift.map(lambda r: lift.map(lambda c: lift.reduce(lift.add, 0.0) << lift.map(lift.mult)
                                              << lift.zip(r, c)) << b) << a),
    ("def tbmm(float(B,N,M) X, float(B,K,M) Y) -> (Z) { Z(b,n,k) +=! X(b,n,m) * Y(b,k,m) }",
     lambda x, y: lift.map(lambda xy: lift.map(lambda r: lift.map(lambda c: lift.reduce(lift.add, 0.0)
                                                                  << lift.map(lift.mult) << lift.zip(r, c))
                                               << xy[1]) << xy[0]) << lift.zip(x, y)),
])
def test_contractions_are_the_hand_written_programs(source: str, hand) -> None:
    """Up to parameter names, the program a hand-written lambda is (so every automatic point applies alike)."""
    from lift.ir.alpha import alpha_equal

    prog = one(source)
    assert alpha_equal(prog, lift.fun([p.type for p in prog.params], hand))


# ------------------------------------------------------------ let-bound intermediates, gathers

CHAIN = """
def chain(float(M,K) A, float(N,K) B, float(P,N) C) -> (T, U) {
    T(m,n) +=! A(m,k) * B(n,k)
    U(m,p) +=! T(m,n) * C(p,n)
}
"""


def test_a_version_read_twice_is_let_bound_and_copied_to_its_output() -> None:
    prog = one(CHAIN)
    text = str(prog)
    assert text.startswith("(A, B, C) => let((T) =>") and "map(map(id)) << T" in text
    a, b, c = rand(5, 4), rand(6, 4, seed=1), rand(3, 6, seed=2)
    t, u = lift.interpret(prog, a, b, c)
    np.testing.assert_allclose(t, a @ b.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(u, (a @ b.T) @ c.T, rtol=1e-5, atol=1e-5)


@pytest.mark.device
def test_a_let_bound_intermediate_compiles_with_symbolic_sizes() -> None:
    """The consumer of a let-bound version runs in a kernel after the one computing it (the
    mapping model's stages descend into the let's body), never across work-groups of one kernel
    (NotSynchronisableError before)."""
    prog = lift.compile(one(CHAIN))
    a, b, c = rand(9, 4), rand(7, 4, seed=1), rand(5, 7, seed=2)
    t, u = prog(a, b, c)
    np.testing.assert_allclose(t, a @ b.T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(u, (a @ b.T) @ c.T, rtol=1e-4, atol=1e-5)
    assert len(prog.kernels) >= 2


def test_the_mapping_model_stages_a_lets_body() -> None:
    from lift.constraints.context import analyse

    ctx = analyse(one(CHAIN))
    assert ctx.stages == ((0, 1), (0, 0, 0, 0))  # T (the let's argument), then its body: U and T's copy
    assert ctx.launches and len(ctx.launches[0]) == 2  # ... in one launch


def test_gathered_subscripts_bound_the_index_tensors_variables() -> None:
    prog = one("def emb(float(E,D) T, int(B,L) I) -> (O) { O(b,d) +=! T(I(b,l), d) }")
    assert str(lift.typecheck(prog)) == "([[Float]D]E, [[Int]L]B) => [[Float]D]B"
    t, i = rand(6, 3), np.random.default_rng(0).integers(0, 6, (4, 5)).astype(np.int32)
    np.testing.assert_allclose(lift.interpret(prog, t, i), t[i].sum(axis=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("source", "words"), [
    ("def f(float(N) X, int(M) I) -> (Z) { Z(i) = X(I(i) + 1) }", "whole subscript"),
    ("def f(float(N) X, float(M) I) -> (Z) { Z(i) = X(I(i)) }", "needs an int tensor"),
])
def test_unsupported_gathers_are_named(source: str, words: str) -> None:
    with pytest.raises(lift.LiftError, match=words) as err:
        one(source)
    assert err.value.loc is not None and err.value.loc.line == 1
