"""Issue 39 rows 7 and 8: a name, a label or a literal a user hands liftcl reaches OpenCL C only in a
form C reads as meant, or is refused with a `LiftError` naming it: `Size` names that are not C
identifiers (or are C or OpenCL C words), labels with line breaks, Tensor Comprehensions names and
literals, and programs nested hundreds of patterns deep (never a `RecursionError`)."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, Int, Size, fun, map, user_fun
from lift.cli import main
from lift.errors import LiftError, LiftValueError, NestingError


@user_fun
def plus1(a: Float) -> Float:
    return a + 1.0


X = np.arange(1, 5, dtype=np.float32)


def compiled(f, *args):
    return np.asarray(lift.compile(f)(*args))


# ------------------------------------------------------------------------ row 7: sizes


@pytest.mark.parametrize("name", ["N+1", ";", "N;int x", "N\n", "é", "", " N", "9N", "int", "restrict", "kernel",
                                  "get_global_id", "float4", "__N", "CLK_LOCAL_MEM_FENCE", "INT_MAX", "as_float",
                                  "vload4", "atomic_add", "M_PI", "Tuple_x"])
def test_a_size_name_c_cannot_read_is_refused(name: str) -> None:
    with pytest.raises(LiftValueError, match="the size name") as err:
        Size(name)
    assert repr(name) in str(err.value) and err.value.got == name


@pytest.mark.parametrize("name", ["N", "rows", "n_2", "_N", "lift_x", "plus1", "x", "out"])
def test_a_size_named_like_a_c_variable_compiles(name: str) -> None:
    f = fun([Array(Float, Size(name))], lambda x: map(plus1) << x)  # plus1: also the user function's name
    assert np.array_equal(compiled(f, X), X + 1)


def test_a_size_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(LiftValueError, match="not a string"):
        Size(5)  # type: ignore[arg-type]


# ----------------------------------------------------------------------- row 7: labels


@pytest.mark.parametrize("label", ["A\n#define plus1(a) a", "A\r#define plus1(a) a", "A\\", "A\u2028#define plus1(a) a",
                                   "A*/ x /*", "é", "A\x0b\x0c", "A\n}\nkernel void k() {"])
def test_a_label_never_reaches_the_code(label: str) -> None:
    f = fun([Array(Float, Size("N"))], lambda x: map(plus1, label=label) << map(plus1) << x)
    prog = lift.compile(f)
    assert np.array_equal(np.asarray(prog(X)), X + 2)  # a line splice or a #define changed it before
    code = [ln.split("//")[0] for ln in prog.source.splitlines()]
    assert not any("#define plus1" in ln or "kernel void k()" in ln for ln in code)
    assert prog.source.isascii() or "é" in label


# ------------------------------------------------------------------------ row 8: TC

TC_REFUSED = {
    "size int": ("def f(float(int) x) -> (y) { y(i) = x(i) * 2.0 }", "size name 'int'"),
    "size restrict": ("def f(float(restrict) x) -> (y) { y(i) = x(i) * 2.0 }", "size name 'restrict'"),
    "size get_global_id": ("def f(float(get_global_id) x) -> (y) { y(i) = x(i) }", "size name 'get_global_id'"),
    "size 9N": ("def f(float(9N) x) -> (y) { y(i) = x(i) }", "size name '9N'"),
    "tensor exp": ("def f(float(N) exp) -> (y) { y(i) = exp(i) * 2.0 }", "'exp' has the name of a TC built-in"),
    "output max": ("def f(float(N) x) -> (max) { max(i) = x(i) }", "'max' has the name of a TC built-in"),
    "3e9 int": ("def f(int(N) x) -> (y) { y(i) = x(i) * 3000000000 }", "does not fit in an Int"),
    "big int": ("def f(int(N) x) -> (y) { y(i) = x(i) + 99999999999999999999 }", "does not fit in an Int"),
    "5000 digits": ("def f(float(N) x) -> (y) { y(i) = x(i) * " + "9" * 5000 + " }", "5000 digits"),
    "300 parentheses": ("def f(float(N) x) -> (y) { y(i) = " + "(" * 300 + "x(i)" + ")" * 300 + " }", "nests more"),
    "400 terms": ("def f(float(N) x) -> (y) { y(i) = " + " + ".join(["x(i)"] * 400) + " }", "operations deep"),
    "400 minus": ("def f(float(N) x) -> (y) { y(i) = " + "-" * 400 + "x(i) }", "unary operators"),
    "deep calls": ("def f(float(N) x) -> (y) { y(i) = " + "exp(" * 300 + "x(i)" + ")" * 300 + " }", "nests more"),
}


@pytest.mark.parametrize("case", sorted(TC_REFUSED))
def test_tc_names_and_literals_c_cannot_take_are_refused_at_their_line(case: str) -> None:
    source, said = TC_REFUSED[case]
    with pytest.raises(LiftError) as err:
        (prog,) = lift.tc(source).values()
        lift.compile(prog)
    assert said in str(err.value) and "line 1, column" in str(err.value), str(err.value)


TC_COMPILED = {
    "tensor int": ("def f(float(N) int) -> (y) { y(i) = int(i) * 2.0 }", lambda x: x * 2),
    "tensor restrict": ("def f(float(N) restrict) -> (y) { y(i) = restrict(i) * 2.0 }", lambda x: x * 2),
    "output get_global_id": ("def f(float(N) x) -> (get_global_id) { get_global_id(i) = x(i) * 2.0 }",
                             lambda x: x * 2),
    "index int": ("def f(float(N) x) -> (y) { y(int) = x(int) * 2.0 }", lambda x: x * 2),
    "tensor mult": ("def f(float(N) mult) -> (y) { y(i) = mult(i) * mult(i) }", lambda x: x * x),
    "3e9 float": ("def f(float(N) x) -> (y) { y(i) = x(i) * 3000000000 }", lambda x: x * np.float32(3e9)),
    "100 parentheses": ("def f(float(N) x) -> (y) { y(i) = " + "(" * 100 + "x(i)" + ")" * 100 + " }", lambda x: x),
    "100 nested sums": ("def f(float(N) x) -> (y) { y(i) = " + "x(i) + (" * 100 + "x(i)" + ")" * 100 + " }",
                        lambda x: x * 101),
    "128 terms": ("def f(float(N) x) -> (y) { y(i) = " + " + ".join(["x(i)"] * 128) + " }", lambda x: x * 128),
}


@pytest.mark.parametrize("case", sorted(TC_COMPILED))
def test_tc_names_that_are_c_words_compile_correctly(case: str) -> None:
    source, want = TC_COMPILED[case]
    (prog,) = lift.tc(source).values()
    x = np.arange(1, 9, dtype=np.float32)
    np.testing.assert_allclose(compiled(prog, x), want(x), rtol=1e-6)


def test_lift_tc_file_ends_in_one_message_not_a_traceback(tmp_path, capsys: pytest.CaptureFixture) -> None:
    for k, (source, said) in enumerate(TC_REFUSED.values()):
        path = tmp_path / f"bad{k}.tc"
        path.write_text(source + "\n")
        assert main(["tc", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("lift: ") and said in err and "Traceback" not in err


# ------------------------------------------------------------- deep programs through the API


def chain(n: int):
    def body(x):
        for _ in range(n):
            x = map(plus1) << x
        return x

    return fun([Array(Float, Size("N"))], body)


def test_300_chained_maps_compile_and_run() -> None:
    """Fused, they nest 300 calls in one C expression: OpenCL C compilers stop at 256 brackets."""
    assert np.array_equal(compiled(chain(300), X), X + 300)


def test_a_thousand_chained_maps_are_a_lift_error_never_a_recursion_error() -> None:
    f = chain(1000)
    for run in (lambda: lift.compile(f), lambda: lift.typecheck(f), lambda: lift.interpret(f, X)):
        try:
            out = run()
        except NestingError as err:
            assert "nests deeper" in str(err) and isinstance(err, LiftError)
        else:
            assert out is not None


def test_an_int_literal_past_32_bits_is_a_lift_error() -> None:
    with pytest.raises(LiftValueError, match="does not fit in an Int"):
        lift.value(3_000_000_000, Int)
    with pytest.raises(LiftValueError, match="does not fit in an Int"):
        lift.value(10**5000, Int)
