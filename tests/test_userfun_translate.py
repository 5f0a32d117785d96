"""Tests for lift.userfun.translate: the emitted C is built and run with pyopencl and compared with
the Python function called per element (numpy scalars) and with the numpy version (`np_fn`)."""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import math
import tempfile
from math import sqrt as square_root
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lift.errors import UserFunError
from lift.types import Bool, Double, Float, Int, Tuple, TupleType, Type, Vector, VectorType
from lift.userfun.ctypes import c_type, is_c_identifier, struct_decl
from lift.userfun.translate import infer_out_type, translate, translate_c

cl = pytest.importorskip("pyopencl")

N = 64
SCALE = 2.5
OFFSET = -3
FLAG = True


# ---------------------------------------------------------------- harness


@pytest.fixture(scope="module")
def ocl() -> Any:
    """A pyopencl context and queue on the default device, and a cache of built programs."""
    ctx = cl.create_some_context(interactive=False)
    return ctx, cl.CommandQueue(ctx), {}


def _leaves(t: Type, path: str = "") -> list[tuple[str, Type]]:
    if isinstance(t, TupleType):
        return [leaf for i, e in enumerate(t.elems) for leaf in _leaves(e, f"{path}._{i}")]
    return [(path, t)]


def _leaf_c(t: Type) -> str:
    return "uchar" if t == Bool else c_type(t)


def _leaf_dtype(t: Type) -> np.dtype:
    s = t.scalar if isinstance(t, VectorType) else t
    return np.dtype(np.uint8) if s == Bool else s.dtype


def _kernel(tr: Any) -> str:
    """A kernel applying the translated function element-wise; tuples are unpacked into arrays."""
    args, setup, call = [], [], []
    for k, t in enumerate(tr.in_types):
        leaves = _leaves(t)
        for j, (_, lt) in enumerate(leaves):
            args.append(f"global const {_leaf_c(lt)}* in{k}_{j}")
        if isinstance(t, TupleType):
            setup.append(f"{c_type(t)} p{k};")
            setup += [f"p{k}{path} = in{k}_{j}[i];" for j, (path, _) in enumerate(leaves)]
            call.append(f"p{k}")
        else:
            call.append(f"({c_type(t)})in{k}_0[i]")
    outs = _leaves(tr.out_type)
    args += [f"global {_leaf_c(lt)}* out{j}" for j, (_, lt) in enumerate(outs)]
    store = [f"out{j}[i] = ({_leaf_c(lt)})r{path};" for j, (path, lt) in enumerate(outs)]
    body = "\n  ".join(["size_t i = get_global_id(0);", *setup,
                        f"{c_type(tr.out_type)} r = {tr.name}({', '.join(call)});", *store])
    structs = "".join(struct_decl(s) for s in tr.structs)
    return (f"#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL FP_CONTRACT OFF\n"
            f"{structs}{tr.c_source}\n"
            f"kernel void k({', '.join(args)}) {{\n  {body}\n}}\n")


def run_c(ocl: Any, tr: Any, *inputs: Any) -> list[np.ndarray]:
    """Build and run the translated function on the device; one output array per result leaf."""
    ctx, queue, cache = ocl
    source = _kernel(tr)
    if source not in cache:
        cache[source] = cl.Kernel(cl.Program(ctx, source).build(), "k")
    mf = cl.mem_flags
    bufs = []
    for x, t in zip(inputs, tr.in_types):
        parts = x if isinstance(t, TupleType) else (x,)
        flat = _flatten(parts, t) if isinstance(t, TupleType) else [(parts[0], t)]
        for arr, lt in flat:
            host = np.ascontiguousarray(arr, dtype=_leaf_dtype(lt))
            bufs.append(cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host))
    outs = [np.empty((N, lt.n) if isinstance(lt, VectorType) else N, _leaf_dtype(lt))
            for _, lt in _leaves(tr.out_type)]
    out_bufs = [cl.Buffer(ctx, mf.WRITE_ONLY, o.nbytes) for o in outs]
    cache[source](queue, (N,), None, *bufs, *out_bufs)
    for o, b in zip(outs, out_bufs):
        cl.enqueue_copy(queue, o, b)
    return outs


def _flatten(x: Any, t: Type) -> list[tuple[Any, Type]]:
    if isinstance(t, TupleType):
        return [leaf for xe, te in zip(x, t.elems) for leaf in _flatten(xe, te)]
    return [(x, t)]


def _element(x: Any, t: Type, i: int) -> Any:
    if isinstance(t, TupleType):
        return tuple(_element(xe, te, i) for xe, te in zip(x, t.elems))
    return x[i]


def _compare(got: np.ndarray, want: Any, t: Type, rtol: float) -> None:
    want = np.asarray(want, dtype=np.float64 if _leaf_dtype(t).kind == "f" else None)
    if _leaf_dtype(t).kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64))


def check(ocl: Any, fn: Any, in_types: list[Type], inputs: list[Any], *, out_type: Type | None = None,
          rtol: float = 2e-5, want_np: bool = True, per_element: bool = True) -> Any:
    """Translate, run on the device, compare with `fn` per element and with `np_fn`."""
    tr = translate(fn, in_types, name="uf", out_type=out_type)
    got = run_c(ocl, tr, *inputs)
    if per_element:
        expect = [fn(*(_element(x, t, i) for x, t in zip(inputs, in_types))) for i in range(N)]
        for j, (_, lt) in enumerate(_leaves(tr.out_type)):
            per_leaf = [_flatten(e, tr.out_type)[j][0] for e in expect]
            _compare(got[j], per_leaf, lt, rtol)
    assert (tr.np_fn is not None) == want_np
    if tr.np_fn is not None:
        np_out = tr.np_fn(*inputs)
        for j, ((leaf, lt), g) in enumerate(zip(_flatten(np_out, tr.out_type), got)):
            assert leaf.dtype == _leaf_dtype(lt) or lt == Bool, (j, leaf.dtype)
            _compare(leaf, g, lt, rtol)
    return tr


def floats(seed: int, lo: float = -10.0, hi: float = 10.0, shape: Any = N, dtype: Any = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


def ints(seed: int, lo: int = -50, hi: int = 50, nonzero: bool = False) -> np.ndarray:
    x = np.random.default_rng(seed).integers(lo, hi, N).astype(np.int32)
    return np.where(x == 0, 7, x).astype(np.int32) if nonzero else x


def line_of(fn: Any, marker: str) -> int:
    """The file line of the first source line of `fn` containing `marker`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


# ---------------------------------------------------------------- supported constructs


def test_arithmetic(ocl: Any) -> None:
    tr = check(ocl, lambda a, b: a * b + a - b / 2.0 + 1, [Float, Float], [floats(1), floats(2)])
    assert tr.c_source == "float uf(float a, float b) {\n  return a * b + a - b / 2.0f + 1.0f;\n}\n"


def test_int_floor_division_and_modulo_negative(ocl: Any) -> None:
    def f(i, j):
        return (i // j, i % j, i // 4, i % -3, -i // 3)

    check(ocl, f, [Int, Int], [ints(3), ints(4, nonzero=True)])


def test_float_floor_division_and_modulo(ocl: Any) -> None:
    b = floats(6, 0.1, 3.0) * np.where(floats(7) > 0, 1, -1).astype(np.float32)
    check(ocl, lambda a, b: (a // b, a % b, a % 2.0, a // 0.5), [Float, Float], [floats(5), b])


def test_if_elif_else_multiple_returns(ocl: Any) -> None:
    def sign_scale(x, y):
        if x > 2.0:
            return x * y
        elif x < -2.0:
            if y > 0:
                return -1.0
            return y - x
        else:
            z = x + y
        return z * 0.5

    tr = check(ocl, sign_scale, [Float, Float], [floats(8), floats(9)])
    assert "} else if (x < -2.0f) {" in tr.c_source


def test_locals_augmented_assignment_and_retyping(ocl: Any) -> None:
    def f(x, n):
        acc = 0
        acc += x * 2
        acc -= n
        k = n * 3
        k //= 2
        acc *= 1.5
        return acc + k

    tr = check(ocl, f, [Float, Int], [floats(10), ints(11)])
    assert tr.out_type == Float and "float acc = 0.0f;" in tr.c_source


def test_variable_assigned_in_both_branches(ocl: Any) -> None:
    def f(x):
        if x > 0:
            y = x * 2.0
        else:
            y = -x
        return y + 1

    tr = check(ocl, f, [Float], [floats(12)])
    assert tr.c_source.splitlines()[1] == "  float y;"


def test_ternary_chained_comparison_and_bool_ops(ocl: Any) -> None:
    def f(a, b):
        inside = -1.0 < a <= b < 5.0
        return 1.0 if inside and not (a == b) or a > 9.0 else 0.0

    check(ocl, f, [Float, Float], [floats(13), floats(14)])


def test_bool_param_and_result(ocl: Any) -> None:
    check(ocl, lambda a, b: (a > 0.0) != b, [Float, Bool], [floats(15), floats(16) > 0])


def test_tuple_params_and_results(ocl: Any) -> None:
    def f(p, q):
        (x, n), (y, z) = p, q
        x, y = y, x
        if p[0] > 0:
            return (x + z, n)
        return (y, p[1] - 1)

    ins = [(floats(17), ints(18)), (floats(19), floats(20))]
    tr = check(ocl, f, [Tuple(Float, Int), Tuple(Float, Float)], ins)
    assert tr.out_type == Tuple(Float, Int) and tr.structs == (Tuple(Float, Int), Tuple(Float, Float))


def test_nested_tuple_result(ocl: Any) -> None:
    tr = check(ocl, lambda a, i: ((a, i), a * 2), [Float, Int], [floats(21), ints(22)])
    assert tr.structs == (Tuple(Float, Int), Tuple(Tuple(Float, Int), Float))


def test_float4_vector_arithmetic(ocl: Any) -> None:
    def f(v, w, s):
        u = v * s + w / 2.0 - 1
        return u * u + v[0] - w[-1]

    f4 = Vector(Float, 4)
    tr = check(ocl, f, [f4, f4, Float], [floats(23, shape=(N, 4)), floats(24, shape=(N, 4)), floats(25)])
    assert tr.out_type == f4 and "w.s3" in tr.c_source


def test_vector_math_and_components(ocl: Any) -> None:
    f4 = Vector(Float, 4)  # math.sqrt and min do not take arrays in Python: compare with numpy only
    v = floats(26, shape=(N, 4))
    tr = check(ocl, lambda v: math.sqrt(v * v + 1.0) + min(v, 0.5), [f4], [v], per_element=False)
    np.testing.assert_allclose(run_c(ocl, tr, v)[0], np.sqrt(v * v + 1) + np.fmin(v, 0.5), rtol=1e-5)
    check(ocl, lambda v: v[1] * v[2] + abs(v[3]), [f4], [floats(27, shape=(N, 4))])


MATH_CASES = [
    (lambda x: math.sqrt(x), (0.0, 10.0)), (lambda x: math.exp(x), (-5.0, 5.0)),
    (lambda x: math.log(x) + math.log2(x) + math.log10(x), (0.1, 10.0)),
    (lambda x: math.sin(x) + math.cos(x) + math.tan(x), (-1.0, 1.0)),
    (lambda x: math.tanh(x) + math.sinh(x) + math.cosh(x), (-2.0, 2.0)),
    (lambda x: math.asin(x) + math.acos(x) + math.atan(x), (-0.9, 0.9)),
    (lambda x: math.atan2(x, 2.0) + math.pow(abs(x), 1.5) + math.fabs(x), (-3.0, 3.0)),
    (lambda x: math.floor(x) + math.ceil(x) + math.trunc(float(x)) + math.fmod(x, 1.5), (-5.0, 5.0)),
    (lambda x: math.erf(x), (-2.0, 2.0)),
    (lambda x: math.copysign(2.0, x) + math.hypot(x, 3.0), (-4.0, 4.0)),
    (lambda x: math.expm1(x) + math.log1p(x + 1.0), (-0.5, 0.5)),
    (lambda x: square_root(x) * math.pi + math.e, (0.0, 4.0)),
    (lambda x: 1.0 if math.isnan(x) or math.isinf(x) else x ** 2 + x ** -2 + x ** 0.5, (0.5, 3.0)),
]


@pytest.mark.parametrize("case", range(len(MATH_CASES)))
def test_math_functions(ocl: Any, case: int) -> None:
    fn, (lo, hi) = MATH_CASES[case]
    check(ocl, fn, [Float], [floats(30 + case, lo, hi)], rtol=1e-4, want_np="erf" not in inspect.getsource(fn))


def test_min_max_abs(ocl: Any) -> None:
    check(ocl, lambda a, b, c: max(a, b, c) - min(a, 0.0) + abs(b), [Float] * 3,
          [floats(50), floats(51), floats(52)])
    check(ocl, lambda i, j: (max(i, j), min(i, -2), abs(i - j)), [Int, Int], [ints(53), ints(54)])


def test_casts_and_mixed_promotion(ocl: Any) -> None:
    def f(x, i):
        k = int(x) + i
        b = bool(i)
        return (float(k) * 0.5 + i, int(b) + k, x * i)

    check(ocl, f, [Float, Int], [floats(55), ints(56)])


def test_double(ocl: Any) -> None:
    def f(x, i):
        y = 0.1
        y += x * i
        return y / 3 + math.sqrt(abs(x))

    tr = check(ocl, f, [Double, Int], [floats(57, dtype=np.float64), ints(58)], rtol=1e-12)
    assert tr.out_type == Double and "double y = 0.1;" in tr.c_source


def test_globals_and_closures(ocl: Any) -> None:
    bias = np.float32(0.25)

    def f(x):
        return x * SCALE + OFFSET + bias if FLAG else x

    tr = check(ocl, f, [Float], [floats(59)])
    assert "2.5f" in tr.c_source and "-3.0f" in tr.c_source


def test_lambdas_on_one_line(ocl: Any) -> None:
    add, mul = (lambda a, b: a + b), (lambda a, b: a * b)
    assert "a + b" in check(ocl, add, [Int, Int], [ints(60), ints(61)]).c_source
    assert "a * b" in check(ocl, mul, [Int, Int], [ints(60), ints(61)]).c_source
    multi = (lambda x:
             x * 2 + 1)
    check(ocl, multi, [Float], [floats(62)])


def test_reserved_names_are_renamed(ocl: Any) -> None:
    def f(int, x):
        double = int * x
        kernel = double + 1
        return kernel

    tr = check(ocl, f, [Float, Float], [floats(63), floats(64)])
    assert "float kernel" not in tr.c_source and tr.params[1] == "x"


def test_weak_literal_results_and_declared_out_type(ocl: Any) -> None:
    tr = check(ocl, lambda x: 0 if x > 0 else 1, [Float], [floats(65)], out_type=Float)
    assert tr.out_type == Float and "0.0f" in tr.c_source
    assert infer_out_type(lambda x: 0 if x > 0 else 1, [Float]) == Int
    assert infer_out_type(lambda x, y: x + y, [Int, Double]) == Double


def test_docstring_and_pass(ocl: Any) -> None:
    def f(x):
        """Absolute value."""
        if x < 0:
            pass
            return -x
        return x

    check(ocl, f, [Int], [ints(66)])


def test_translate_c(ocl: Any) -> None:
    tr = translate_c("fma3", ["a", "b", "c"], "return a * b + c;", [Float] * 3, Float)
    assert tr.c_source == "float fma3(float a, float b, float c) {\n  return a * b + c;\n}\n"
    assert tr.np_fn is None
    out = run_c(ocl, tr, floats(67), floats(68), floats(69))[0]
    np.testing.assert_allclose(out, floats(67) * floats(68) + floats(69), rtol=1e-5)
    assert "return a + b;" in translate_c("plus", ["a", "b"], "a + b", [Int, Int], Int).c_source
    with pytest.raises(UserFunError):
        translate_c("f", ["float"], "return 1;", [Float], Float)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(i=st.lists(st.integers(-(2**31) + 1, 2**31 - 1), min_size=N, max_size=N),
       j=st.lists(st.integers(-100, 100).filter(bool), min_size=N, max_size=N))
def test_int_floor_semantics_property(ocl: Any, i: list[int], j: list[int]) -> None:
    tr = translate(lambda a, b: (a // b, a % b), [Int, Int], name="uf")
    a, b = np.array(i, np.int32), np.array(j, np.int32)
    q, r = run_c(ocl, tr, a, b)
    assert [int(x) for x in q] == [x // y for x, y in zip(i, j)]
    assert [int(x) for x in r] == [x % y for x, y in zip(i, j)]


_atoms = st.sampled_from(["a", "b", "c", "float(i)", "2", "0.5", "-1.5", "3", "math.pi"])
_unary = ["-{0}", "abs({0})", "({0}) ** 2", "+{0}"]
_binary = ["({0} + {1})", "({0} - {1})", "({0} * {1})", "({0} / (abs({1}) + 1.0))", "({0} // (abs({1}) + 0.5))",
           "({0} % (abs({1}) + 0.5))", "min({0}, {1})", "max({0}, {1})", "({0} if {0} < {1} else {1})",
           "({0} if {1} >= 1 and not {0} == {1} else -{1})", "({0} if -1 < {0} <= {1} or {1} > 2 else 1.0)"]
_exprs = st.recursive(_atoms, lambda inner: st.one_of(
    st.tuples(st.sampled_from(_unary), inner).map(lambda p: p[0].format(p[1])),
    st.tuples(st.sampled_from(_binary), inner, inner).map(lambda p: p[0].format(p[1], p[2]))), max_leaves=7)
_module_dir = tempfile.mkdtemp(prefix="liftcl_userfun_")
_module_ids = itertools.count()


def _load_function(body: str) -> Any:
    """A function `f(a, b, c, i)` returning `body`, defined in a fresh module file (so its source exists)."""
    path = f"{_module_dir}/gen_{next(_module_ids)}.py"
    with open(path, "w") as fh:
        fh.write(f"import math\n\n\ndef f(a, b, c, i):\n    return {body}\n")
    spec = importlib.util.spec_from_file_location(path.rsplit("/", 1)[1][:-3], path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_exprs)
def test_random_float_expressions(ocl: Any, body: str) -> None:
    """Precedence, literal typing and floor semantics: C, numpy and Python agree on random expressions."""
    fn = _load_function(body)
    ins = [floats(80, -4, 4), floats(81, -4, 4), floats(82, -4, 4), ints(83, -5, 5)]
    check(ocl, fn, [Float, Float, Float, Int], ins, rtol=1e-5)


_leaf_types = st.sampled_from([Float, Int, Bool, Double, Vector(Float, 4)])
_tuple_types = st.recursive(_leaf_types, lambda inner: st.lists(inner, min_size=1, max_size=3).map(
    lambda es: Tuple(*es)), max_leaves=6).filter(lambda t: isinstance(t, TupleType))


@settings(max_examples=200, deadline=None)
@given(a=_tuple_types, b=_tuple_types)
def test_struct_names_are_injective_identifiers(a: TupleType, b: TupleType) -> None:
    assert is_c_identifier(c_type(a)) or c_type(a).startswith("Tuple_")
    assert (c_type(a) == c_type(b)) == (a == b)
    assert struct_decl(a).endswith(f" }} {c_type(a)};\n")


def test_c_type_names() -> None:
    assert [c_type(t) for t in (Float, Double, Int, Bool, Vector(Float, 4))] == \
        ["float", "double", "int", "bool", "float4"]
    assert c_type(Tuple(Float, Int)) == "Tuple_float_int"
    assert struct_decl(Tuple(Float, Int)) == "typedef struct { float _0; int _1; } Tuple_float_int;\n"


# ---------------------------------------------------------------- rejections


def _reject(fn: Any, in_types: list[Type], marker: str, words: str, **kw: Any) -> UserFunError:
    with pytest.raises(UserFunError) as info:
        translate(fn, in_types, name="uf", **kw)
    err = info.value
    assert err.loc is not None and err.loc.file == __file__
    assert err.loc.line == line_of(fn, marker), str(err)
    assert words in err.message, err.message
    return err


def test_rejects_loops() -> None:
    def f(x):
        while x > 0:  # BAD
            x -= 1
        return x

    def g(x):
        y = x
        for _ in range(x):  # BAD
            y += 1
        return y

    _reject(f, [Int], "# BAD", "while loops are not supported")
    _reject(g, [Int], "# BAD", "range bounds in a user function must be Ints known")


def test_rejects_unknown_calls_and_attributes() -> None:
    def f(x):
        y = x + 1
        return print(y)  # BAD

    def g(x):
        return x.real  # BAD

    def h(x):
        return math.gamma(x)  # BAD

    _reject(f, [Float], "# BAD", "unknown function 'print'")
    _reject(g, [Float], "# BAD", "attribute access (.real)")
    _reject(h, [Float], "# BAD", "math.gamma is not supported")


def test_rejects_missing_return_on_a_path() -> None:
    def f(x):
        y = x * 2
        if y > 0:  # BAD
            return y

    _reject(f, [Float], "# BAD", "does not return a value on every path")


def test_rejects_int_true_division() -> None:
    def f(i, j):
        k = i + j
        return k / 2  # BAD

    err = _reject(f, [Int, Int], "# BAD", "Int / Int is ambiguous")
    assert err.hint is not None and "//" in err.hint


def test_rejects_declared_out_type_mismatch() -> None:
    def f(x, i):
        if x > 0:
            return 1
        return i  # BAD

    err = _reject(f, [Float, Int], "# BAD", "declared result type is Float", out_type=Float)
    assert (err.expected, err.got) == (Float, Int)


def test_rejects_other_constructs() -> None:
    def lists(x):
        return [x, x]  # BAD

    def strings(x):
        s = "x"  # BAD
        return s

    def truthiness(x):
        if x:  # BAD
            return 1.0
        return 0.0

    def unassigned(x):
        if x > 0:
            y = 1.0
        return y  # BAD

    def inner_lambda(x):
        f = lambda y: y  # BAD
        return f(x)

    def float_bool(x, b):
        return x and b  # BAD

    def changes_type(x, i):
        i = x * 2  # BAD
        return i

    _reject(lists, [Float], "# BAD", "lists are not supported")
    _reject(strings, [Float], "# BAD", "str constants are not supported")
    _reject(truthiness, [Float], "# BAD", "a condition must be a Bool")
    _reject(unassigned, [Float], "# BAD", "variable 'y' is used before it is assigned")
    _reject(inner_lambda, [Float], "# BAD", "lambdas inside user functions")
    _reject(float_bool, [Float, Bool], "# BAD", "a condition must be a Bool")
    _reject(changes_type, [Float, Int], "# BAD", "parameter 'i' of type Int")


def test_traces_functions_without_source_and_rejects_what_tracing_cannot_express() -> None:
    namespace: dict[str, Any] = {}
    exec("def f(x):\n    return x * 2.0 + 1.0\n", namespace)
    tr = translate(namespace["f"], [Float], name="uf")  # no source: traced
    assert "x * 2.0f" in tr.c_source and tr.np_fn is not None
    exec("def g(x):\n    if x > 0:\n        return x\n    return -x\n", namespace)
    with pytest.raises(UserFunError) as info:
        translate(namespace["g"], [Float], name="uf")
    assert "cannot be traced" in info.value.message and "lift.select" in (info.value.hint or "")


def test_rejects_wrong_arity() -> None:
    with pytest.raises(UserFunError) as info:
        translate(lambda a, b: a, [Float], name="uf")
    assert (info.value.expected, info.value.got) == (2, 1)
