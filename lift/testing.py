"""Hypothesis strategies for well-typed liftcl programs, and a property check for rewrite rules.

    from lift.testing import assert_preserves, programs_for
    report = assert_preserves(lift.rules.map_fusion)        # programs where map_fusion matches
    assert report.matched >= 100

`programs()` draws random programs over the high-level patterns (nested maps, reductions
with associative operators and their neutral elements, zips, splits of divisible sizes,
slides, pads, transposes, lets) with matching inputs; `programs_for(rule)` draws programs
that contain the rule's left-hand side inside random context. Sizes are small, so that the
interpreter (the oracle) stays fast; a program with symbolic sizes gets sizes drawn for it
(`sizes_for`) that satisfy its size conditions.

Testing your own rule (a worked example; tests/test_testing_user_rules.py runs it):

    from lift import map
    from lift.ir.nodes import Map
    from lift.rules import Rule
    from lift.rules.match import call, expr, fun
    from lift.testing import assert_preserves

    f, g, x = fun("f"), fun("g"), expr("x")
    # map(f) << map(g) << x -> map(e => f(g(e))) << x: right
    fuse = Rule("my_fusion", law="map(f) << map(g) << x -> map(f << g) << x",
                lhs=call(Map(f), call(Map(g), x)),
                rhs=lambda f, g, x: map(lambda e: f(g(e))) << x)
    # map(f) << map(g) << x -> map(g) << map(f) << x: wrong (f and g need not commute)
    swap = Rule("my_swap", law="map(f) << map(g) << x -> map(g) << map(f) << x",
                lhs=call(Map(f), call(Map(g), x)),
                rhs=lambda f, g, x: map(g) << map(f) << x)

    report = assert_preserves(fuse)        # 100 programs, every one containing the pattern
    assert report.matched == report.examples
    assert_preserves(swap)                 # AssertionError: my_swap ... changed the value:
                                           #   before: ... after: ... (the smallest case found)

`programs_for(rule)` fills the pattern's variables (a function, an input, a size) from small pools
(the user functions `neg`, `x + 1`, `x * 0.5`, relu, `add`, `mult`, `max_`, `min_`, ...; inputs
`a, b: [Float]8` and `m: [[Float]4]6`, their zip, literals), keeps the fillings that type-check and
that the rule matches, and draws among them, wrapped in random context. A rule with a parameter
(`params={"n": Size}`) is tested with `assert_preserves(rule, params={"n": 2})` or through its
`suggest`. For patterns these pools cannot fill, pass `programs=` (a strategy, a program or a list).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import lift.spellings as _spellings
from lift.arith import Cst, as_arith, evaluate, free_vars
from lift.arith.ops import as_int
from lift.errors import LiftError, LiftValueError
from lift.interpret import interpret
from lift.ir.nodes import Expr, Lambda, Node
from lift.ir.paths import at
from lift.ir.patterns import as_scalar, fun, join, let, map, pad, reduce, slide, split, transpose
from lift.ir.patterns import zip as zip_
from lift.ir.printer import show
from lift.rules import ALL
from lift.rules.instantiate import instances
from lift.rules.rule import same_type
from lift.rules.terms import elem, length
from lift.typecheck import size_conditions, typecheck
from lift.types import ArrayType, Float, Int, ScalarType, TupleType, Type
from lift.userfun import user_fun
from lift.userfun.builtins import add, max_, min_, mult, neg
from lift.userfun.facts import Laws

Draw = Callable[..., Any]  # st.DrawFn: draw(strategy, label=...)


@dataclass(frozen=True)
class Case:
    """A program and arguments for it."""

    program: Lambda
    inputs: tuple[Any, ...]

    def __repr__(self) -> str:
        shapes = ", ".join(str(getattr(a, "shape", a)) for a in self.inputs)
        return f"Case({show(self.program)}; inputs {shapes})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


@dataclass
class Report:
    """What `assert_preserves` checked: examples run and examples where the rule matched."""

    rule: str
    examples: int = 0
    matched: int = 0
    failures: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ building blocks


def _inc(a: Float) -> Float:
    return a + 1.0


def _half(a: Float) -> Float:
    return a * 0.5


def _relu(a: Float) -> Float:
    return a if a > 0.0 else 0.0


def _decay(acc: Float, a: Float) -> Float:
    return acc * 0.5 + a


def _inc_i(a: Int) -> Int:
    return a + 1


def _relu_i(a: Int) -> Int:
    return a if a > 0 else 0


def _decay_i(acc: Int, a: Int) -> Int:
    return acc * 2 - a


UNARY: dict[ScalarType, tuple[Any, ...]] = {
    Float: (neg, user_fun(_inc), user_fun(_half), user_fun(_relu)),
    Int: (neg, user_fun(_inc_i), user_fun(_relu_i)),
}
MONOIDS: dict[ScalarType, tuple[tuple[Any, float | int], ...]] = {
    Float: ((add, 0.0), (mult, 1.0), (max_, -1e30), (min_, 1e30)),
    Int: ((add, 0), (max_, -(2**30)), (min_, 2**30)),
}
FOLDS: dict[ScalarType, tuple[tuple[Any, float | int], ...]] = {
    Float: (*MONOIDS[Float], (user_fun(_decay), 0.5)),
    Int: (*MONOIDS[Int], (user_fun(_decay_i), 1)),
}
BINARY = (add, mult, max_, min_)


def scalar_types() -> st.SearchStrategy[ScalarType]:
    """`Float` or `Int`."""
    return st.sampled_from((Float, Int))


def unary_funs(t: ScalarType = Float) -> st.SearchStrategy[Any]:
    """Scalar functions `t -> t` (user functions)."""
    return st.sampled_from(UNARY[t])


def monoids(t: ScalarType = Float) -> st.SearchStrategy[tuple[Any, Any]]:
    """Associative operators with their neutral elements: `(add, 0.0)`, `(mult, 1.0)`, ..."""
    return st.sampled_from(MONOIDS[t])


def folds(t: ScalarType = Float) -> st.SearchStrategy[tuple[Any, Any]]:
    """Operators for reductions, associative or not, with an initial value."""
    return st.sampled_from(FOLDS[t])


def _scalar(e: Expr) -> ScalarType:
    t = e.type
    while isinstance(t, ArrayType):
        t = t.elem
    return t if isinstance(t, ScalarType) else Float


def _len(e: Expr) -> int:
    return as_int(length(e))


def divisors(n: int) -> list[int]:
    """The divisors of `n` other than 1 and `n` (or [1] for a prime)."""
    return [d for d in range(2, n) if n % d == 0] or [1]


def element_fun(draw: Draw, t: Type) -> Any:
    """A random unary function on elements of type `t` (scalars, rows or pairs)."""
    if isinstance(t, ScalarType):
        f, g = draw(unary_funs(t)), draw(unary_funs(t))
        return draw(st.sampled_from((f, lambda a: f(g(a)))))
    if isinstance(t, ArrayType) and isinstance(t.elem, ScalarType):
        op, z = draw(folds(t.elem))
        f = draw(unary_funs(t.elem))
        return draw(st.sampled_from((map(f), lambda r: reduce(op, z) << r,
                                     lambda r: reduce(op, z) << map(f) << r)))
    if isinstance(t, TupleType):
        op = draw(st.sampled_from(BINARY))
        return lambda p: op(p[0], p[1])
    return lambda a: a


# ------------------------------------------------------------------ prefixes and suffixes


def prefix_1d(draw: Draw, a: Expr, b: Expr) -> Expr:
    """`a` ([S]n or [[S]m]n) turned into a 1-D array of scalars by random layout and maps."""
    s = _scalar(a)
    if isinstance(elem(a), ArrayType):
        op, z = draw(monoids(s))
        if draw(st.booleans()):
            return _join(a)
        return map(lambda r: reduce(op, z) << r) << a
    kind = draw(st.sampled_from(("id", "map", "zip", "pad", "let", "split", "slide")))
    f = draw(unary_funs(s))
    n = _len(a)
    if kind == "map":
        return map(f) << a
    if kind == "zip":
        op = draw(st.sampled_from(BINARY))
        return map(lambda p: op(p[0], p[1])) << zipped(a, b)
    if kind == "pad" and n <= 14:
        return pad(draw(st.integers(0, 2)), draw(st.integers(0, 2)), 0) << a
    if kind == "let":
        return let(lambda v: map(f) << v) << a
    if kind == "split" and n > 2:
        return _join(split(draw(st.sampled_from(divisors(n)))) << a)
    if kind == "slide" and n >= 4:

        op, z = draw(monoids(s))
        return map(lambda w: reduce(op, z) << w) << slide(3, 1) << a
    return a


def zipped(a: Expr, b: Expr) -> Expr:
    """`zip(a, b)`."""

    return zip_(a, b)


def _join(e: Expr) -> Expr:

    return join << e


def prefix_2d(draw: Draw, a: Expr, b: Expr) -> Expr:
    """`a` turned into a 2-D array of scalars."""

    if isinstance(elem(a), ArrayType):
        kind = draw(st.sampled_from(("id", "transpose", "map", "pad")))
        if kind == "transpose":
            return transpose << a
        if kind == "map":
            return map(map(draw(unary_funs(_scalar(a))))) << a
        if kind == "pad":
            return map(pad(1, 0, 0)) << a
        return a
    a = prefix_1d(draw, a, b)
    n = _len(a)
    kind = draw(st.sampled_from(("split", "slide", "transpose")))
    if kind == "slide" and n >= 3:
        return slide(draw(st.integers(2, min(3, n))), draw(st.integers(1, 2))) << a
    chunks = split(draw(st.sampled_from(divisors(n)))) << a
    return transpose << chunks if kind == "transpose" else chunks


def suffix(draw: Draw, e: Expr) -> Expr:
    """A random consumer of `e`'s value (possibly none)."""

    t = e.type
    if not isinstance(t, ArrayType) or draw(st.booleans()):
        return e
    if isinstance(t.elem, TupleType):
        return map(element_fun(draw, t.elem)) << e
    if not isinstance(t.elem, (ScalarType, ArrayType)):
        return as_scalar << e
    if isinstance(t.elem, ArrayType):
        kind = draw(st.sampled_from(("join", "transpose", "rows")))
        if kind == "join":
            return join << e
        if kind == "transpose":
            return transpose << e
        return map(element_fun(draw, t.elem)) << e
    if draw(st.booleans()):
        return map(draw(unary_funs(t.elem))) << e
    op, z = draw(folds(t.elem))
    return reduce(op, z) << e


# ------------------------------------------------------------------ programs and inputs


def _input_types(draw: Draw, s: ScalarType, two_d: bool, nested: bool) -> Type:
    if two_d:
        t: Type = ArrayType(ArrayType(s, _c(draw(st.sampled_from((2, 3, 4, 6))))),
                            _c(draw(st.sampled_from((2, 4, 6, 8)))))
    else:
        t = ArrayType(s, _c(draw(st.sampled_from((4, 6, 8, 9, 12, 16)))))
    return ArrayType(t, _c(draw(st.sampled_from((2, 3))))) if nested else t


def _c(n: int) -> Any:

    return Cst(n)


Core = Callable[[Draw, Expr, Expr], Expr]


@st.composite
def _programs(draw: Draw, core: Core, s: ScalarType, nested: bool | None) -> Case:
    two_d = draw(st.booleans())
    nest = draw(st.booleans()) if nested is None else nested
    t = _input_types(draw, s, two_d, nest)

    def body(x: Expr, y: Expr) -> Expr:
        if nest:
            return map(lambda p: core(draw, p[0], p[1])) << zipped(x, y)
        return core(draw, x, y)

    program = fun([t, t], body)
    return Case(program, draw(inputs_for(program)))


def programs(*, scalar: ScalarType | None = None, nested: bool | None = None) -> st.SearchStrategy[Case]:
    """Random well-typed programs of two array inputs, with inputs."""
    def core(draw: Draw, a: Expr, b: Expr) -> Expr:
        e = draw(st.sampled_from((prefix_1d, prefix_2d)))(draw, a, b)
        return suffix(draw, suffix(draw, e))

    if scalar is None:
        return scalar_types().flatmap(lambda s: _programs(core, s, nested))
    return _programs(core, scalar, nested)


def programs_for(rule: Any, *, scalar: ScalarType = Float, nested: bool | None = None,
                 params: dict[str, Any] | None = None) -> st.SearchStrategy[Case]:
    """Programs containing an instance of `rule`'s left-hand side inside random context.

    The rules of `lift.rules.ALL` have hand-written instance builders; for any other rule (your own)
    the left-hand side pattern is filled in with user functions, inputs and sizes, keeping the
    fillings that type-check and that the rule matches (with `params`), so that every drawn program
    contains a match. `LiftValueError` if no filling works (pass your own `programs=`)."""
    from lift.rules.instances import BUILDERS  # the left-hand side of every rule in ALL

    make = BUILDERS.get(rule.name)
    if make is None or not _is_library_rule(rule):
        return _instances_of(rule, params)

    def core(draw: Draw, a: Expr, b: Expr) -> Expr:
        return suffix(draw, make(draw, a, b))

    return _programs(core, scalar, nested)


def _is_library_rule(rule: Any) -> bool:

    return any(r is rule or (r.name == rule.name and r.law == rule.law) for r in ALL)


def _instances_of(rule: Any, params: dict[str, Any] | None) -> st.SearchStrategy[Case]:

    ps, found = instances(rule, params)
    if not found:
        raise LiftValueError(f"lift.testing could not build a program containing the left-hand side of "
                             f"rule {rule.name} ({rule.law}) from its pools of functions and inputs",
                             hint="pass programs= (a strategy, a program or a list of programs) to "
                                  "assert_preserves")

    @st.composite
    def case(draw: Draw) -> Case:
        e = draw(st.sampled_from(found), label="instance")
        program = Lambda(ps, suffix(draw, e))
        return Case(program, draw(inputs_for(program)))

    return case()


def _values(rng: np.random.Generator, t: Type, sizes: dict[str, int] | None = None) -> Any:
    if isinstance(t, TupleType):
        return tuple(_values(rng, e, sizes) for e in t.elems)
    dims: list[int] = []
    while isinstance(t, ArrayType):
        dims.append(evaluate(t.size, sizes or {}))
        t = t.elem
    assert isinstance(t, ScalarType), f"no random values for {t}"
    if t == Int:
        return rng.integers(-5, 6, size=dims).astype(np.int32)
    return (rng.integers(-8, 9, size=dims) / 4).astype(t.dtype)


@st.composite
def sizes_for(draw: Draw, program: Lambda, *, max_size: int = 16) -> dict[str, int]:
    """Values for the symbolic sizes of `program`'s parameters (`N`, `M`) that satisfy its size
    conditions (a `split(4)` of `N` needs 4 | N); `{}` for concrete sizes."""
    names = sorted({v.name for p in program.params for v in _type_vars(p.ptype)})
    if not names:
        return {}

    conds = size_conditions(program)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="size seed"))
    pool = [k for k in range(1, max_size + 1)]
    for _ in range(500):  # a search, not a hypothesis filter: every draw gets sizes
        sizes = {n: int(rng.choice(pool)) for n in names}
        if all(_holds(c, sizes) for c in conds) and all(
                evaluate(d, sizes) >= 1 for p in program.params for d in _dims(p.ptype)):
            return sizes
    raise LiftValueError(f"no sizes up to {max_size} satisfy the size conditions of the program: "
                         + "; ".join(str(c) for c in conds), node=program)


def _holds(c: Any, sizes: dict[str, int]) -> bool:
    try:
        return bool(c.holds(sizes))
    except (ArithmeticError, KeyError, ValueError, LiftError):
        return False


def _dims(t: Type) -> list[Any]:
    out = []
    while isinstance(t, ArrayType):
        out.append(t.size)
        t = t.elem
    return out + [d for e in (t.elems if isinstance(t, TupleType) else ()) for d in _dims(e)]


def _type_vars(t: Type) -> set[Any]:
    return {v for d in _dims(t) for v in free_vars(as_arith(d))}


@st.composite
def inputs_for(draw: Draw, program: Lambda) -> tuple[Any, ...]:
    """Random arguments for a program; symbolic sizes are drawn first (`sizes_for`)."""
    sizes = draw(sizes_for(program))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return tuple(_values(rng, p.ptype, sizes) for p in program.params)


# ------------------------------------------------------------------ the property


def assert_same(expected: Any, got: Any, *, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    """Equal values (tuples component-wise; floats up to reassociation error)."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), f"{got!r} != {expected!r}"
        for a, b in zip(expected, got):
            assert_same(a, b, rtol=rtol, atol=atol)
        return
    a, b = np.asarray(expected), np.asarray(got)
    assert a.shape == b.shape, f"shape {b.shape} != {a.shape}"
    finite = np.abs(a[np.isfinite(a)]) if a.dtype.kind == "f" else np.zeros(0)
    # the scale of the finite values only: an infinity in `expected` made the tolerance infinite,
    # and then every other element passed unchecked (infinities themselves must match exactly)
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    assert np.allclose(a, b, rtol=rtol, atol=atol * scale, equal_nan=True), f"{b} != {a}"


def check_rule(rule: Any, program: Node, inputs: Sequence[Any], path: tuple[int, ...],
               params: dict[str, Any] | None = None, *, rtol: float = 1e-4, atol: float = 1e-4) -> Node:
    """Apply `rule` at `path` and assert that the type and the value are unchanged."""

    try:
        new = rule.apply(program, at=path, **(params or {}))
    except LiftError as err:
        raise AssertionError(f"{rule.name} at {path} {params or ''} failed on {show(program)}:\n"
                             f"  {err}") from None
    before, after = typecheck(program), typecheck(new)
    assert same_type(before, after), f"{rule.name} changed the type {before} to {after}"
    expected = interpret(program, *inputs)
    try:
        assert_same(expected, interpret(new, *inputs), rtol=rtol, atol=atol)
    except (AssertionError, LiftError) as err:
        raise AssertionError(f"{rule.name} at {path} {params or ''} changed the value:\n"
                             f"  before: {show(program)}\n  after:  {show(new)}\n  {err}") from None
    return new


def assert_preserves(rule: Any, programs: Any = None, inputs: Any = None, *,
                     params: dict[str, Any] | None = None, max_examples: int | None = None,
                     rtol: float = 1e-4, atol: float = 1e-4) -> Report:
    """Property test: wherever `rule` matches a generated program, it keeps type and value.

    `programs`: a strategy of `Case`s or programs, a program, or a list of them (default:
    `programs_for(rule)`); `inputs`: arguments, or a function from a program to a strategy of
    arguments (default: `inputs_for`). Examples without a match are rejected (`assume`)."""
    report = Report(rule.name)
    progs = _as_strategy(programs if programs is not None else programs_for(rule, params=params))

    def check(case: Any, data: st.DataObject) -> None:
        prog, args = _case(case, inputs, data)
        report.examples += 1
        paths = rule.matches(prog, **(params or {}))
        assume(paths)
        path = data.draw(st.sampled_from(paths), label="path")
        choices = rule.choices(at(prog, path), **(params or {}))
        ps = {**(params or {}), **data.draw(st.sampled_from(choices), label="params")}
        check_rule(rule, prog, args, path, ps, rtol=rtol, atol=atol)
        report.matched += 1

    test = given(case=progs, data=st.data())(check)
    extra: dict[str, Any] = {} if max_examples is None else {"max_examples": max_examples}
    settings(report_multiple_bugs=False, **extra)(test)()
    return report


def _as_strategy(p: Any) -> st.SearchStrategy[Any]:
    if isinstance(p, st.SearchStrategy):
        return p
    if isinstance(p, (list, tuple)):
        return st.sampled_from(list(p))
    return st.just(p)


def _case(case: Any, inputs: Any, data: st.DataObject) -> tuple[Node, tuple[Any, ...]]:
    if isinstance(case, Case):
        return case.program, case.inputs
    if inputs is None:
        return case, data.draw(inputs_for(case), label="inputs")
    if callable(inputs):
        return case, data.draw(inputs(case), label="inputs")
    return case, tuple(inputs)


def assert_vouched(f: Any, *, samples: int = 200, seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Check on random inputs that a user function vouched for (`user_fun(..., associative=True,
    commutative=..., neutral=...)`) keeps its laws: `f(f(a, b), c) == f(a, f(b, c))` (to float
    rounding), `f(a, b) == f(b, a)` when commutative, `f(z, a) == a` for its neutral `z`.
    `AssertionError` naming the law and the inputs that break it."""

    laws = getattr(f, "laws", None)
    if not isinstance(laws, Laws):
        raise AssertionError(f"{f} vouches for no laws (pass associative=True to user_fun)")
    rng = np.random.default_rng(seed)
    dtype = f.out_type.dtype
    a, b, c = (rng.uniform(-4, 4, samples).astype(dtype) for _ in range(3))
    call = np.vectorize(f.py_fn, otypes=[dtype])
    checks = [("associative", call(call(a, b), c), call(a, call(b, c)))]
    if laws.commutative:
        checks.append(("commutative", call(a, b), call(b, a)))
    if laws.neutral is not None:
        checks.append((f"neutral {laws.neutral}", call(np.full_like(a, laws.neutral), a), a))
    for law, got, want in checks:
        bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
        if bad.any():
            i = int(np.argmax(bad))
            raise AssertionError(f"{f} is not {law}: at a={a[i]}, b={b[i]}, c={c[i]} got {got[i]}, want {want[i]}")


def spellings(prog: Any, **kw: Any) -> Any:
    """A hypothesis strategy of programs equal in meaning to `prog`, spelled differently
    (`lift.spellings`: own copies of built-ins, commuted operands, pair functions, fused fold
    steps, zip orders, cancelling transposes, map fission, `let`); `kinds=` selects spellings."""

    return _spellings.spellings(prog, **kw)


__all__ = [
    "Case", "Report", "scalar_types", "unary_funs", "monoids", "folds", "element_fun", "programs",
    "programs_for", "inputs_for", "assert_same", "check_rule", "assert_preserves", "divisors",
    "prefix_1d", "prefix_2d", "suffix", "sizes_for", "spellings", "assert_vouched",
]
