"""Tests of lift.arith: canonical forms, range-aware div/mod, provers, C and z3 output.

Random expression trees (plain tuples) are built twice: with the smart constructors,
and evaluated directly in Python (floor semantics). Every simplification must agree
with the direct evaluation at random in-range points, with z3, and with OpenCL C run
on PoCL; every proof must hold at random points and survive a z3 counterexample search.
"""

from __future__ import annotations

import math
import operator
import random
import time
import zlib
from collections.abc import Callable
from typing import Any

import pytest
import z3
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from lift.arith import (
    C_HELPERS,
    Arith,
    Cst,
    FloorDiv,
    Max,
    Min,
    Mod,
    Prod,
    Sum,
    Var,
    add,
    as_arith,
    evaluate,
    floordiv,
    free_vars,
    lower,
    max_,
    min_,
    mod,
    mul,
    prove_divides,
    prove_eq,
    prove_le,
    prove_lt,
    prove_nonneg,
    prove_positive,
    range_constraints_z3,
    size,
    substitute,
    to_c,
    to_z3,
    try_evaluate,
    upper,
)

N, M = size("N"), size("M")
VARS: dict[str, Arith] = {
    "i": Var("i", Cst(0), Cst(7)),
    "j": Var("j", Cst(0), Cst(3)),
    "t": Var("t", Cst(-5), Cst(5)),
    "u": Var("u"),  # unbounded
    "N": N,
    "M": M,
    "k": Var("k", Cst(0), N - 1),
    "q": Var("q", Cst(0), M * N - 1),
    "w": Var("w", N, 2 * N),
}
i, j, t, u, k, q, w = (VARS[n] for n in "ijtukqw")
NAMES = sorted(VARS)

Tree = Any  # a variable name, an int, or (op, *trees)
BUILD: dict[str, Callable[..., Arith]] = {
    "add": add, "sub": lambda a, b: a - b, "mul": mul, "div": floordiv, "mod": mod,
    "min": min_, "max": max_, "neg": lambda a: -a, "sq1": lambda a: a * a + 1,
    "odd": lambda a: 2 * a + 1, "opdiv": lambda a, b: a // b, "opmod": lambda a, b: a % b,
    "rem": lambda x, d1, d2: x - d1 * (x // d2), "rejoin": lambda x, d1, d2: (x // d2) * d1 + x % d2,
}
PY: dict[str, Callable[..., int]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.floordiv,
    "mod": operator.mod, "min": min, "max": max, "neg": operator.neg, "sq1": lambda a: a * a + 1,
    "odd": lambda a: 2 * a + 1, "opdiv": operator.floordiv, "opmod": operator.mod,
    "rem": lambda x, d1, d2: x - d1 * (x // d2), "rejoin": lambda x, d1, d2: (x // d2) * d1 + x % d2,
}


def build(tree: Tree) -> Arith:
    if isinstance(tree, str):
        return VARS[tree]
    if isinstance(tree, int):
        return Cst(tree)
    op, *args = tree
    return BUILD[op](*(build(a) for a in args))


def py(tree: Tree, env: dict[str, int]) -> int:
    if isinstance(tree, str):
        return env[tree]
    if isinstance(tree, int):
        return tree
    op, *args = tree
    return PY[op](*(py(a, env) for a in args))


_PY_SRC = {"add": "({} + {})", "sub": "({} - {})", "mul": "({} * {})", "div": "({} // {})",
           "mod": "({} % {})", "opdiv": "({} // {})", "opmod": "({} % {})", "min": "min({}, {})",
           "max": "max({}, {})", "neg": "(-{})", "sq1": "({0} * {0} + 1)", "odd": "(2 * {} + 1)",
           "rem": "({0} - {1} * ({0} // {2}))", "rejoin": "(({0} // {2}) * {1} + {0} % {2})"}


def _tree_src(tree: Tree) -> str:
    if isinstance(tree, (str, int)):
        return f"({tree})"
    return _PY_SRC[tree[0]].format(*(_tree_src(a) for a in tree[1:]))


def fast(src: str) -> Callable[[dict[str, int]], int]:
    """A compiled evaluator for a Python expression over NAMES (unbound names read 0)."""
    code = compile(src, "<arith>", "eval")
    return lambda env: eval(code, {"min": min, "max": max}, {n: env.get(n, 0) for n in NAMES})


def checked_fast(e: Arith, points: list[dict[str, int]]) -> Callable[[dict[str, int]], int]:
    """`evaluate(e, .)` made fast by compiling `str(e)`; checked against `evaluate` first."""
    fn = fast(str(e))
    for env in points[:4]:
        assert fn(env) == evaluate(e, env), (str(e), env)
    return fn


# ------------------------------------------------------------------ strategies

fixed_divisors = st.one_of(
    st.integers(1, 6), st.integers(-4, -1),
    st.sampled_from(["N", "M", "w", ("add", "N", 1), ("mul", 2, "N"), ("mul", "M", "N"),
                     ("sub", "w", "k"), ("neg", "N"), ("add", "N", 2), ("add", "j", 1),
                     ("max", "t", 1), ("min", "N", 3), ("odd", "t")]),
)


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    """Sums, products, min/max, and div/mod by divisors that are never zero: constants,
    sizes, max(x, 1), x*x + 1 and 2*x + 1 (of either sign); plus the split/join shapes
    x - d1*(x // d2) and (x // d2)*d1 + x % d2 (d1 == d2 often, to fold)."""
    divisors = st.one_of(fixed_divisors, st.tuples(st.just("max"), children, st.just(1)),
                         st.tuples(st.sampled_from(["sq1", "odd"]), children),
                         st.tuples(st.just("mul"), st.tuples(st.just("odd"), children), related))
    return st.one_of(
        st.tuples(st.sampled_from(["add", "sub", "mul", "min", "max"]), children, children),
        st.tuples(st.sampled_from(["div", "mod", "opdiv", "opmod"]), children, divisors),
        st.tuples(st.sampled_from(["rem", "rejoin"]), children, related, related),
    )


related = st.sampled_from(["N", ("add", "N", 1), ("mul", 2, "N"), 4, 2, ("add", "j", 1)])


_shapes = st.recursive(st.one_of(st.sampled_from([0, 1, 2]).map(str), st.integers(-6, 6)),
                       _extend, max_leaves=8)


def _rename(tree: Tree, palette: list[str]) -> Tree:
    if isinstance(tree, str):
        return palette[int(tree) % len(palette)] if tree.isdigit() else tree
    if isinstance(tree, int):
        return tree
    return (tree[0], *(_rename(a, palette) for a in tree[1:]))


@st.composite
def trees(draw: st.DrawFn) -> Tree:
    """A random tree over a palette of at most three variables (so they interact)."""
    palette = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    return _rename(draw(_shapes), palette)


def _pick(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from([lo, hi]), st.integers(lo, hi))  # ends are likely


@st.composite
def envs(draw: st.DrawFn) -> dict[str, int]:
    n, m = draw(_pick(1, 4)), draw(_pick(1, 4))
    return {
        "N": n, "M": m, "i": draw(_pick(0, 7)), "j": draw(_pick(0, 3)), "t": draw(_pick(-5, 5)),
        "u": draw(_pick(-9, 9)), "k": draw(_pick(0, n - 1)), "q": draw(_pick(0, m * n - 1)),
        "w": draw(_pick(n, 2 * n)),
    }


DOMAINS: dict[str, Callable[[dict[str, int]], range]] = {  # in dependency order
    "N": lambda e: range(1, 5), "M": lambda e: range(1, 5), "i": lambda e: range(8),
    "j": lambda e: range(4), "t": lambda e: range(-5, 6), "u": lambda e: range(-6, 7),
    "k": lambda e: range(e["N"]), "q": lambda e: range(e["M"] * e["N"]),
    "w": lambda e: range(e["N"], 2 * e["N"] + 1),
}
DEPENDS = {"k": {"N"}, "q": {"M", "N"}, "w": {"N"}}


def names_in(tree: Tree) -> set[str]:
    if isinstance(tree, str):
        return {tree} | DEPENDS.get(tree, set())
    if isinstance(tree, int):
        return set()
    return set().union(*(names_in(a) for a in tree[1:]))


def all_points(*trees_: Tree, cap: int = 250) -> list[dict[str, int]]:
    """Every in-range assignment of the trees' variables (a fixed sample past `cap`)."""
    names = set().union(*(names_in(x) for x in trees_))
    points: list[dict[str, int]] = [{}]
    for n, dom in DOMAINS.items():
        if n in names:
            points = [dict(p, **{n: v}) for p in points for v in dom(p)]
    if len(points) > cap:
        points = random.Random(zlib.crc32(repr(trees_).encode())).sample(points, cap)
    return points


def in_range(env: dict[str, int]) -> bool:
    for name, v in VARS.items():
        if isinstance(v, Var) and name in env:
            if v.lo is not None and env[name] < evaluate(v.lo, env):
                return False
            if v.hi is not None and env[name] > evaluate(v.hi, env):
                return False
    return True


# ------------------------------------------------------------- z3 helpers

ZV = {name: z3.Int(name) for name in NAMES}
RANGES = range_constraints_z3([v for v in VARS.values() if isinstance(v, Var)], ZV)


def z3_tree(tree: Tree) -> Any:
    """An independent z3 oracle for a tree (floor semantics for either divisor sign)."""
    if isinstance(tree, str):
        return ZV[tree]
    if isinstance(tree, int):
        return z3.IntVal(tree)
    op, *args = tree
    if op == "rem":
        x, d1, d2 = args
        return z3_tree(("sub", x, ("mul", d1, ("div", x, d2))))
    if op == "rejoin":
        x, d1, d2 = args
        return z3_tree(("add", ("mul", ("div", x, d2), d1), ("mod", x, d2)))
    xs = [z3_tree(a) for a in args]
    if op in ("div", "opdiv", "mod", "opmod"):
        a, b = xs
        quot = z3.If(b > 0, a / b, (-a) / (-b))
        return quot if op.endswith("div") else a - b * quot
    if op in ("min", "max"):
        a, b = xs
        return z3.If(a <= b, a, b) if op == "min" else z3.If(a >= b, a, b)
    return PY[op](*xs)


def z3_counterexample(claim: Any) -> dict[str, int] | None:
    """A model of the ranges where `claim` fails, or None (proved or unknown in time)."""
    s = z3.Solver()
    s.set("timeout", 100)
    s.add(*RANGES)
    s.add(z3.Not(claim))
    if s.check() != z3.sat:
        return None
    model = s.model()
    return {n: model.eval(v, model_completion=True).as_long() for n, v in ZV.items()}


def z3_value(term: Any, env: dict[str, int]) -> int:
    pairs = [(ZV[n], z3.IntVal(v)) for n, v in env.items()]
    return z3.simplify(z3.substitute(term, *pairs)).as_long()


def examples(n: int) -> int:
    """`n` examples under the default profile, scaled up by `--hypothesis-profile=slow`."""
    return max(1, n * settings().max_examples // 100)


PROP = settings(max_examples=examples(200), deadline=None)


# ----------------------------------------------------------- property tests


@PROP
@given(trees())
def test_evaluate_agrees_with_python(tree: Tree) -> None:
    e = build(tree)
    assert build(tree) == e and hash(build(tree)) == hash(e)  # deterministic and canonical
    assert free_vars(e) <= {v for v in VARS.values() if isinstance(v, Var)}
    points = all_points(tree)
    for env in points[:8]:
        assert evaluate(e, env) == py(tree, env), (tree, str(e), env)
    got, want = checked_fast(e, points), fast(_tree_src(tree))
    for env in points:
        assert got(env) == want(env), (tree, str(e), env)


SUBSTITUTIONS: list[dict[str, Arith | int]] = [
    {"N": 3}, {"i": j + 1}, {"N": M + 1}, {"t": i - 5}, {"u": 2 * k - t}, {"k": N - 1},
    {"w": N + k}, {"M": 2, "u": 7},
]


@settings(max_examples=examples(150), deadline=None)
@given(trees(), st.sampled_from(SUBSTITUTIONS))
def test_substitute_then_evaluate(tree: Tree, sub: dict) -> None:
    e = substitute(build(tree), sub)
    extra = [*sub] + [v.name for x in sub.values() for v in free_vars(as_arith(x))]
    points = all_points(tree, *extra, cap=120)
    points = [p2 for p2 in (dict(p, **{n: evaluate(as_arith(x), p) for n, x in sub.items()})
                            for p in points) if in_range(p2)]
    got, want = checked_fast(e, points), fast(_tree_src(tree))
    for env in points:
        assert got(env) == want(env), (tree, str(e), env)


@settings(max_examples=examples(100), deadline=None)
@given(trees(), st.lists(envs(), min_size=1, max_size=4))
def test_to_z3_agrees(tree: Tree, points: list[dict[str, int]]) -> None:
    e = build(tree)
    term = to_z3(e, ZV)
    for env in points:
        assert z3_value(term, env) == evaluate(e, env), (tree, str(e), env)
    bad = z3_counterexample(term == z3_tree(tree))  # the simplification, proved by z3
    if bad is not None:  # z3 and to_z3 are then wrong, or the simplification is
        assert z3_value(term, bad) == evaluate(e, bad) == py(tree, bad), (tree, str(e), bad)


@settings(max_examples=examples(150), deadline=None)
@given(trees(), trees(), fixed_divisors)
def test_provers_are_sound(ta: Tree, tb: Tree, td: Tree) -> None:
    a, b, d = build(ta), build(tb), build(td)
    points = all_points(ta, tb, td, cap=150)
    fa, fb, fd = (checked_fast(x, points) for x in (a, b, d))
    za, zb, zd = to_z3(a, ZV), to_z3(b, ZV), to_z3(d, ZV)
    claims: list[tuple[bool, Callable[[dict[str, int]], bool], Any]] = [
        (prove_nonneg(a), lambda v: fa(v) >= 0, za >= 0),
        (prove_positive(a), lambda v: fa(v) >= 1, za >= 1),
        (prove_le(a, b), lambda v: fa(v) <= fb(v), za <= zb),
        (prove_lt(a, b), lambda v: fa(v) < fb(v), za < zb),
        (prove_eq(a, b), lambda v: fa(v) == fb(v), za == zb),
        (prove_divides(d, a), lambda v: fa(v) % fd(v) == 0, za % zd == 0),
    ]
    for proved, holds, claim in claims:
        if proved:
            bad = next((env for env in points if not holds(env)), None)
            assert bad is None, (str(a), str(b), str(d), bad)
            bad = z3_counterexample(claim)
            assert bad is None or holds(bad), (str(a), str(b), str(d), bad)


@PROP
@given(trees())
def test_bounds_are_sound(tree: Tree) -> None:
    e = build(tree)
    lo, hi = lower(e), upper(e)
    points = all_points(tree)
    fe = checked_fast(e, points)
    flo = checked_fast(lo, points) if lo is not None else None
    fhi = checked_fast(hi, points) if hi is not None else None
    for env in points:
        v = fe(env)
        assert flo is None or flo(env) <= v, (str(e), str(lo), env)
        assert fhi is None or v <= fhi(env), (str(e), str(hi), env)
    # the shifted expression is provably non-negative whenever the bound is constant
    if isinstance(lo, Cst):
        assert prove_nonneg(e - lo)


bounded_divisors = st.sampled_from([("add", "j", 1), ("max", "t", 1), ("min", "N", 3), ("add", "i", 2)])


@PROP
@given(st.sampled_from(["div", "mod"]), trees(), st.one_of(bounded_divisors, st.integers(1, 5)))
def test_bounds_of_quotients(op: str, x: Tree, d: Tree) -> None:
    test_bounds_are_sound.hypothesis.inner_test((op, x, d))


TRICKY: list[Tree] = [  # each near the edge of one simplification rule
    ("rem", "u", "N", ("add", "N", 1)), ("rejoin", "u", ("add", "N", 1), "N"),
    ("rem", "u", ("add", "N", 1), ("add", "N", 1)), ("rejoin", "q", ("mul", 2, "N"), ("mul", 2, "N")),
    ("div", ("mod", "u", ("mul", ("odd", "t"), "N")), "N"), ("mod", ("mod", "u", ("odd", "t")), 3),
    ("div", ("div", "u", ("odd", "t")), 3), ("div", ("add", "i", 4), ("add", "j", 1)),
    ("div", ("add", "k", 1), "N"), ("mod", ("add", "k", 1), "N"), ("div", ("sub", "k", "N"), "N"),
    ("mod", ("sub", "k", "N"), "N"), ("mod", ("mod", "u", 12), 4), ("div", ("mod", "u", 12), 4),
    ("div", "t", ("max", "i", 1)), ("mod", "t", ("max", "i", 1)), ("div", ("neg", "i"), ("add", "j", 1)),
    ("mul", "t", "t"), ("sub", ("mul", "t", "t"), "t"), ("div", ("mul", "t", "t"), ("add", "t", 6)),
    ("min", ("mod", "u", "N"), ("sub", "N", 1)), ("max", ("mod", "k", 3), ("div", "k", 3)),
    ("div", ("mul", 6, "u"), ("mul", 4, "N")), ("mod", ("mul", "N", "u"), ("mul", "N", "M")),
    ("div", "u", ("neg", ("add", "N", 1))), ("mod", "u", ("neg", ("add", "N", 1))),
    ("mul", ("sub", "j", 2), "i"), ("mul", ("sub", "j", 2), ("add", "t", 1)),
    ("add", ("mul", ("sub", "j", 2), "k"), ("mul", ("sub", 1, "j"), "N")),
    ("div", ("div", "u", ("neg", ("odd", "t"))), 2), ("mod", ("div", "u", 4), ("odd", "t")),
]


@pytest.mark.parametrize("tree", TRICKY, ids=str)
def test_tricky_trees(tree: Tree) -> None:
    test_evaluate_agrees_with_python.hypothesis.inner_test(tree)
    test_bounds_are_sound.hypothesis.inner_test(tree)
    test_to_z3_agrees.hypothesis.inner_test(tree, all_points(tree, cap=20))
    e, points = build(tree), all_points(tree)
    fe = checked_fast(e, points)
    for proved, holds in ((prove_nonneg(e), lambda v: v >= 0), (prove_positive(e), lambda v: v > 0)):
        assert not proved or all(holds(fe(p)) for p in points), str(e)


# ------------------------------------------------------------- OpenCL C

_INT_LIMIT = 2**30


@pytest.fixture(scope="module")
def ocl() -> tuple[Any, Any, Any]:
    """(pyopencl, context, queue) on the device liftcl uses (not the first platform's: it may not build)."""
    import pyopencl as cl

    from lift import runtime

    dc = runtime.open_device()
    return cl, dc.context, dc.queue


def run_c(ocl: tuple[Any, Any, Any], exprs: list[str], points: list[dict[str, int]]) -> list[list[int]]:
    """Evaluate C expressions over variables NAMES at each point, in one kernel."""
    import numpy as np

    cl, ctx, queue = ocl
    reads = "".join(f"  const int {n} = e[{x}];\n" for x, n in enumerate(NAMES))
    body = "".join(f"  o[{x}] = {s};\n" for x, s in enumerate(exprs))
    src = (C_HELPERS + "__kernel void eval_all(__global const int *env, __global int *out) {\n"
           f"  const int g = get_global_id(0);\n  __global const int *e = env + g*{len(NAMES)};\n"
           f"{reads}  __global int *o = out + g*{len(exprs)};\n{body}}}\n")
    prg = cl.Program(ctx, src).build()
    host_env = np.array([[p.get(n, 0) for n in NAMES] for p in points], dtype=np.int32)
    out = np.zeros((len(points), len(exprs)), dtype=np.int32)
    mf = cl.mem_flags
    d_env = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host_env)
    d_out = cl.Buffer(ctx, mf.WRITE_ONLY, out.nbytes)
    prg.eval_all(queue, (len(points),), None, d_env, d_out)
    cl.enqueue_copy(queue, out, d_out)
    return out.tolist()


def _magnitude(e: Arith, env: dict[str, int]) -> tuple[int, int]:
    """(value, a bound on every intermediate value C computes for `e`) to avoid overflow."""
    match e:
        case Cst(v):
            return v, abs(v)
        case Var(name):
            return env[name], abs(env[name])
        case Sum(xs) | Prod(xs):
            parts = [_magnitude(x, env) for x in xs]
            vals = [abs(v) for v, _ in parts]
            whole = sum(vals) if isinstance(e, Sum) else math.prod(vals)
            return evaluate(e, env), max(whole, *(m for _, m in parts))
        case FloorDiv(a, b) | Mod(a, b) | Min(a, b) | Max(a, b):
            (_, ma), (_, mb) = _magnitude(a, env), _magnitude(b, env)
            v = evaluate(e, env)
            return v, max(abs(v), ma, mb)
    raise TypeError(e)


@pytest.mark.device
@settings(max_examples=examples(4), deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(st.lists(trees(), min_size=30, max_size=30), st.lists(envs(), min_size=32, max_size=32))
def test_to_c_agrees_on_pocl(ocl: tuple[Any, Any, Any], batch: list[Tree], points: list[dict[str, int]]) -> None:
    exprs = [e for e in map(build, batch) if all(_magnitude(e, p)[1] < _INT_LIMIT for p in points)]
    got = run_c(ocl, [to_c(e) for e in exprs], points)
    for x, e in enumerate(exprs):
        for p, row in zip(points, got):
            assert row[x] == evaluate(e, p), (str(e), to_c(e), p)


@pytest.mark.device
def test_c_helpers_floor_semantics(ocl: tuple[Any, Any, Any]) -> None:
    pairs = [(a, b) for a in range(-13, 14) for b in (-5, -3, -2, -1, 1, 2, 3, 7)]
    exprs = [f"lift_floordiv({a}, {b})" for a, b in pairs] + [f"lift_floormod({a}, {b})" for a, b in pairs]
    (row,) = run_c(ocl, exprs, [{}])
    assert row == [a // b for a, b in pairs] + [a % b for a, b in pairs]


@pytest.mark.device
def test_to_c_negative_dividends(ocl: tuple[Any, Any, Any]) -> None:
    exprs = [(t - 3) // 4, t % 4, (t * N - 7) % N, (t - k) // N, -(i // 3), (u - 1) % (w - k),
             t // -3, t % -3, u // (N + 1) - u % (N + 1), (i * t) // (2 * N), min_(t, k) % 3,
             max_(t, -2) // 2, (2 * t + 1) % 4, -((t + 5) // 2)]
    points = [{"N": n, "M": 1, "i": x % 8, "j": 0, "t": x % 11 - 5, "u": x - 10, "k": x % n,
               "q": 0, "w": n + x % (n + 1)} for x in range(20) for n in (1, 2, 3)]
    assert to_c(exprs[0]) == "lift_floordiv(t + 1, 4) - 1" and to_c(exprs[1]) == "lift_floormod(t, 4)"
    got = run_c(ocl, [to_c(e) for e in exprs], points)
    for x, e in enumerate(exprs):
        for p, row in zip(points, got):
            assert row[x] == evaluate(e, p), (str(e), to_c(e), p)


def test_to_c_parentheses() -> None:
    assert to_c((4 * i + 4 + j) // 4) == "i + 1"
    assert to_c((i + j) // 4) == "(i + j) / 4"
    assert to_c(2 * (i // 4)) == "2*(i / 4)"
    assert to_c(i - j // 2) == "i - j / 2"
    assert to_c(i - (j + k)) == "i - j - k"
    assert to_c(i * (N - k)) == "N*i - i*k"
    assert to_c(FloorDiv(i * j, Sum((N, Cst(1))))) == "i*j / (N + 1)"
    assert to_c(FloorDiv(FloorDiv(i, N), Prod((M, N)))) == "i / N / (M*N)"
    assert to_c(Mod(i, Sum((j, Cst(-2))))) == "lift_floormod(i, j - 2)"
    assert to_c(-i) == "-i" and to_c(i - 3) == "i - 3" and to_c(Cst(-3)) == "-3"
    assert to_c(t // 2) == "lift_floordiv(t, 2)" and to_c(-3 * i + 1) == "-3*i + 1"
    assert to_c(Prod((i, Cst(-2)))) == "i*(-2)" and to_c(Sum((i, Prod((Cst(-1), Cst(-2)))))) == "i - (-2)"
    assert to_c(min_(i, j + 4), {"i": "gid"}) == "min(gid, j + 4)"


# ------------------------------------------------------------- specific cases


def test_issue_acceptance() -> None:
    i0 = Var("i", Cst(0), None)
    assert (4 * i0 + j) // 4 == i0
    assert (4 * i0 + j) % 4 == j
    k0 = Var("j", Cst(0), N - 1)
    assert (i0 * N + k0) // N == i0
    assert (i0 * N + k0) % N == k0
    assert (N + 1) * (N - 1) == N * N - 1
    assert 2 * N // 4 == N // 2
    assert k % 3 + 3 * (k // 3) == k
    assert (k // N) == 0 and k % N == k


def test_equivalent_forms_are_equal() -> None:
    x = Var("x")
    assert (x % N) % N == x % N
    assert (x // N) * N + x % N == x
    assert x - N * (x // N) == x % N
    assert x - x % N == N * (x // N)
    assert (x % 12) % 4 == x % 4
    assert (x % 12) // 4 == (x // 4) % 3
    assert (x % (N * M)) // M == (x // M) % N
    assert (x // 4) // N == x // (4 * N)
    assert (6 * x + 3) // 6 == x and (6 * x + 3) % 6 == 3 and Cst(3) == 3 and hash(Cst(3)) == hash(3)
    assert (2 * x) // (2 * N) == x // N and (N * x) % (N * M) == N * (x % M)
    assert (x + 8 * k) % 4 == x % 4
    assert (x + 3) // -2 == (-x - 3) // 2
    assert x * 0 == Cst(0) and x // 1 == x and x % 1 == Cst(0)


def test_min_max_with_provable_order() -> None:
    assert min_(k, N - 1) == k and max_(k, 0) == k
    assert min_(N, N + 1) == N and max_(N, 1) == N
    assert min_(w, N) == N and max_(w, 2 * N) == 2 * N
    assert min_(i, j + 4) == min_(j + 4, i)  # canonical argument order
    assert isinstance(min_(i, j + 4), Min) and isinstance(max_(t, j), Max)
    assert min_(max_(t - 8, 0), 9) == Cst(0)


def test_bounds() -> None:
    assert lower(k) == Cst(0) and upper(k) == N - 1
    assert upper(Var("x", Cst(0), 4 * N - 1) // 4) == N - 1
    assert lower(i * j - t) == Cst(-5) and upper(i * j - t) == Cst(26)
    assert upper(N) is None and lower(N * N - 1) == Cst(0)
    assert upper(k % 5) == Cst(4) and upper(j % N) == Cst(3) and upper(k % w) == N - 1
    assert upper(min_(i, N)) == Cst(7) and lower(max_(t, N)) == Cst(1)
    assert prove_lt(Var("x", Cst(0), 4 * N - 1) // 4, N)
    assert prove_nonneg(k % 3 - 0) and not prove_nonneg(t) and not prove_positive(k)
    assert prove_divides(4, 8 * N + 4 * k) and prove_divides(N, N * M) and not prove_divides(3, N)
    assert not prove_divides(Var("y"), Var("y"))  # y may be zero


def test_substitute_updates_ranges() -> None:
    assert substitute(k // 8, {"N": 8}) == Cst(0)
    assert substitute((i * N + k) // N, {"N": 5}) == i
    assert substitute(k, {"N": M + 1}) == Var("k", Cst(0), M)
    assert try_evaluate(k + N, {"k": 1}) is None and evaluate(k + N, {"k": 1, "N": 3}) == 4


def test_same_name_different_ranges_order_deterministically() -> None:
    a, b = Var("x", Cst(0), Cst(3)), Var("x", Cst(0), Cst(7))
    assert a + b == b + a and str(a * b) == "x*x"


# --------------------------------------------- index expressions of views

wrg, widx = Var("wrg_i", Cst(0), None), Var("i", Cst(0), Cst(8))
width = Var("width", Cst(3), None)
lcl = Var("lcl_i", Cst(0), width - 3)


def test_thesis_listing_2_3_stencil_index() -> None:
    """slideND2(3,1,3,1) then join(window): element i of the window at (wrg_i, lcl_i)."""
    expected = widx % 3 + (widx // 3) * width + lcl + wrg * width
    flat = wrg * (width - 2) + lcl  # the output position, flattened then split again
    raw = (flat // (width - 2) + widx // 3) * width + flat % (width - 2) + widx % 3
    assert raw == expected
    # join of the 3x3 window, written through split(3): row = i // 3, col = i % 3
    row, col = (widx // 3), (widx - 3 * (widx // 3))
    assert (wrg + row) * width + (lcl + col) == expected
    assert to_c(expected) == "lcl_i + width*wrg_i + width*(i / 3) + i % 3"


def test_view_index_compositions() -> None:
    x = Var("x", Cst(0), 4 * N - 1)  # split(4) of [T]_{4N}, then join: identity
    assert (x // 4) * 4 + x % 4 == x
    a, b = Var("a", Cst(0), N - 1), Var("b", Cst(0), Cst(3))  # join then split(4)
    assert ((a * 4 + b) // 4, (a * 4 + b) % 4) == (a, b)
    c, d = Var("c", Cst(0), M - 1), Var("d", Cst(0), N - 1)  # transpose of split(M) of [T]_{N*M}
    y = c * N + d  # join(transpose(split(M, xs)))[y] == xs[(y % N) * M + y // N]
    assert (y % N) * M + y // N == d * M + c
    z = Var("z", Cst(0), 4 * M * N - 1)  # split(4) then split(M), joined twice
    assert ((z // 4) // M) * (M * 4) + ((z // 4) % M) * 4 + z % 4 == z
    s = Var("s", Cst(0), N - 1)  # slide(3, 1): window s, element j2 -> s + j2
    j2 = Var("j2", Cst(0), Cst(2))
    assert ((s + j2) // (N + 2), (s + j2) % (N + 2)) == (Cst(0), s + j2)
    p = Var("p", Cst(1), N)  # pad(1, 1) with clamping, interior points only
    assert min_(max_(p - 1, 0), N - 1) == p - 1


# --------------------------------------------------------------- performance


def test_micro_benchmark() -> None:
    """Builds view-like index expressions over fresh variables, so no cache helps (the
    time is printed, not asserted; about 1 ms per expression on a laptop)."""
    start = time.perf_counter()
    for n in range(50):
        size_n, wid = size(f"S{n}"), Var(f"W{n}", Cst(3), None)
        a, b = Var(f"a{n}", Cst(0), size_n - 1), Var(f"b{n}", Cst(0), Cst(7))
        flat = (a * 8 + b) * size_n + a  # split(S) then split(8) of a flattened 3D index
        e = (flat // size_n) // 8 * size_n + flat % size_n + ((flat // size_n) % 8) * 3
        assert e == a * size_n + a + 3 * b
        g, lc, x = Var(f"g{n}", Cst(0), None), Var(f"l{n}", Cst(0), wid - 3), Var(f"x{n}", Cst(0), Cst(8))
        out = g * (wid - 2) + lc
        raw = (out // (wid - 2) + x // 3) * wid + out % (wid - 2) + x % 3
        assert raw == x % 3 + (x // 3) * wid + lc + g * wid
        to_c(e), to_c(raw)
    elapsed = time.perf_counter() - start
    print(f"arith micro-benchmark: 100 index expressions in {elapsed * 1000:.1f} ms")


# ------------------------------------------------------------------ exact division


def test_exact_division_folds_with_its_divisor():
    from lift.arith import exact_div

    n, m = size("N"), size("M")
    q = exact_div(n, 4)
    assert 4 * q == n and 8 * q == 2 * n and 2 * q == exact_div(n, 2)
    assert exact_div(q, 2) == exact_div(n, 8)
    assert exact_div(8 * n + 4, 4) == 2 * n + 1
    assert exact_div(n * m, m) == n and m * exact_div(n, m) == n
    assert exact_div(-n, 4) * -2 == exact_div(n, 2)
    assert prove_positive(q) and lower(q) == 1


@given(st.integers(1, 6), st.integers(-3, 3), st.sampled_from([2, 3, 4, 6]), st.integers(1, 5), st.integers(1, 40))
def test_exact_division_agrees_with_integer_division_where_exact(a, b, d, c, nval):
    from lift.arith import exact_div

    n = size("N")
    num = a * n + b
    value = a * nval + b
    e = exact_div(num, d)
    if value % d == 0:
        assert evaluate(e, {"N": nval}) == value // d
        assert evaluate(c * d * e, {"N": nval}) == c * value
        assert evaluate(c * e, {"N": nval}) == c * value // d
