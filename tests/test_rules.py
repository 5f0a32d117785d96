"""The rewrite rules: catalogue, the property that every rule preserves type and value,
side conditions, errors, metadata, and the step-by-step dot product and tiled matmul."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

import lift
import lift.rules as R  # noqa: N812 - the rule catalogue
from lift import Array, Float, Int, Size, add, fun, join, map, mult, reduce, split, user_fun, zip
from lift.errors import RewriteError
from lift.ir import nodes as n
from lift.ir.paths import at, walk
from lift.rules import Rule
from lift.rules.match import call, expr
from lift.rules.match import fun as fvar
from lift.testing import assert_preserves, assert_same, check_rule, programs_for

N = Size("N")
REQUIRED_NAMES = """split_join join_split_id split_join_id map_fusion map_fission reduce_map_fusion
partial_reduce partial_reduce_split_join map_map_interchange map_reduce_interchange
transpose_transpose_id as_vector_as_scalar_id vectorise slide_tiling map_to_glb map_to_wrg map_to_lcl
map_to_seq reduce_to_seq to_private_memory to_local_memory to_global_memory add_copy let_intro
let_inline zip_map_fusion""".split()


# ------------------------------------------------------------------- catalogue


def test_catalogue_has_every_required_rule() -> None:
    names = [r.name for r in R.ALL]
    assert isinstance(R.ALL, tuple)
    assert set(REQUIRED_NAMES) <= set(names)
    assert len(names) == len(set(names))


@pytest.mark.parametrize("rule", R.ALL, ids=lambda r: r.name)
def test_rule_shows_its_law(rule: Rule) -> None:
    assert "->" in rule.law
    assert repr(rule) == f"{rule.name}: {rule.law}"
    assert rule.__doc__.splitlines()[0] == rule.law
    assert getattr(R, rule.name) is rule


# ---------------------------------------------------------------- the property


@pytest.mark.parametrize("rule", R.ALL, ids=lambda r: r.name)
def test_rule_preserves_type_and_value(rule: Rule) -> None:
    """Hypothesis: programs containing the rule's left-hand side; rewrite at a random match."""
    report = assert_preserves(rule)
    assert report.matched >= min(100, settings().max_examples), report


def _swapped_fusion() -> Rule:
    f, g, x = fvar("f"), fvar("g"), expr("x")
    from lift.rules.terms import compose, elem

    return Rule("bad_map_fusion", law="map(f) << map(g) << x -> map(g << f) << x",
                lhs=call(n.Map(f), call(n.Map(g), x)),
                rhs=lambda f, g, x: n.FunCall(n.Map(compose(g, f, elem(x))), (x,)))


def test_a_wrong_rule_is_caught() -> None:
    bad = _swapped_fusion()
    with pytest.raises(AssertionError, match="bad_map_fusion at"):
        assert_preserves(bad, programs=programs_for(R.map_fusion), max_examples=50)


def test_a_type_changing_rule_is_a_rewrite_error() -> None:
    x = expr("x")
    bad = Rule("drop_join", law="join << x -> x", lhs=call(n.Join(), x), rhs=lambda x: x)
    prog = fun([Array(Array(Float, 4), 2)], lambda a: join << a)
    with pytest.raises(RewriteError, match="changed the type") as err:
        bad.apply(prog, at=(0,))
    assert err.value.expected is not None and err.value.got is not None


# ------------------------------------------------------------- matching, errors


def test_matches_returns_paths_and_apply_rewrites_there() -> None:
    prog = fun([Array(Float, 8)], lambda x: map(lambda a: a * 2.0) << map(lambda a: a + 1.0) << x)
    paths = R.map_fusion.matches(prog)
    assert paths == [(0,)]
    new = R.map_fusion.apply(prog, at=paths[0])
    xs = np.arange(8, dtype=np.float32)
    assert_same(lift.interpret(prog, xs), lift.interpret(new, xs))
    assert len([m for _, m in walk(new) if isinstance(m, n.Map)]) == 1


def test_apply_where_the_rule_does_not_match_raises_and_keeps_the_program() -> None:
    prog = fun([Array(Float, 8)], lambda x: reduce(add, 0.0) << x)
    before = str(prog)
    with pytest.raises(RewriteError, match="does not apply"):
        R.map_fusion.apply(prog, at=(0,))
    with pytest.raises(RewriteError):
        R.map_fusion.apply(prog, at=(0, 5, 1))
    assert str(prog) == before


def test_split_join_needs_its_parameter_and_divisibility() -> None:
    prog = fun([Array(Float, 12)], lambda x: map(lambda a: a + 1.0) << x)
    with pytest.raises(RewriteError, match="needs parameter"):
        R.split_join.apply(prog, at=(0,))
    with pytest.raises(RewriteError, match="does not apply"):
        R.split_join.apply(prog, at=(0,), n=5)
    assert [c["n"] for c in R.split_join.choices(at(prog, (0,)))] == [2, 3, 4, 6]
    new = R.split_join(n=4).apply(prog, at=(0,))
    assert "split(4)" in str(new)


def test_symbolic_split_records_a_named_condition() -> None:
    prog = fun([Array(Float, N)], lambda x: map(lambda a: a + 1.0) << x)
    new, step = R.split_join.step(prog, (0,), n=4)
    assert [c.kind for c in step.conditions] == ["divides"]
    assert "4" in str(step.conditions[0]) and "N" in str(step.conditions[0])
    xs = np.arange(16, dtype=np.float32)
    assert_same(lift.interpret(prog, xs), lift.interpret(new, xs))


def test_partial_reduce_needs_an_associative_operator_with_its_neutral_element() -> None:
    decay = user_fun(lambda acc, a: acc * 0.5 + a, [Float, Float], Float, name="decay")
    assoc = fun([Array(Float, 8)], lambda x: reduce(add, 0.0) << x)
    wrong_init = fun([Array(Float, 8)], lambda x: reduce(add, 1.0) << x)
    not_assoc = fun([Array(Float, 8)], lambda x: reduce(decay, 0.0) << x)
    assert R.partial_reduce.matches(assoc) == [(0,)]
    assert R.partial_reduce.matches(wrong_init) == []
    assert R.partial_reduce.matches(not_assoc) == []
    vouched = R.partial_reduce.apply(wrong_init, at=(0,), n=4, associative=True)
    assert str(vouched).count("reduce(add, 1.0)") == 2


def test_max_is_idempotent_so_any_initial_value_works() -> None:
    prog = fun([Array(Int, 8)], lambda x: reduce(lift.max_, 3) << x)
    xs = np.array([1, 9, 2, 8, 0, 4, 5, 7], dtype=np.int32)
    check_rule(R.partial_reduce, prog, (xs,), (0,), {"n": 2})


def test_rules_copy_label_and_loc() -> None:
    prog = fun([Array(Float, 8)], lambda x: map(lambda a: a + 1.0, label="A") << x)
    lowered = R.map_to_wrg.apply(prog, at=(0, 0), dim=0)
    wrg = lowered.body.f
    assert isinstance(wrg, n.MapWrg) and wrg.label == "A" and wrg.loc == prog.body.f.loc
    tiled = R.split_join.apply(prog, at=(0,), n=4)
    assert tiled.body.loc == prog.body.loc
    assert [m.label for _, m in walk(tiled) if isinstance(m, n.Map)] == ["A", None]


def test_lowering_reaches_nested_maps() -> None:
    prog = fun([Array(Array(Float, 4), 2)], lambda x: map(map(lambda a: a * 2.0)) << x)
    assert len(R.map_to_lcl.matches(prog)) == 2
    inner = [p for p in R.map_to_lcl.matches(prog)][1]
    new = R.map_to_lcl.apply(prog, at=inner, dim=0)
    assert isinstance(new.body.f.f, n.MapLcl)


def test_let_inline_refreshes_duplicated_binders() -> None:
    prog = fun([Array(Float, 4)], lambda x: lift.let(lambda v: zip(v, v)) << (map(lambda a: a + 1.0) << x))
    new = R.let_inline.apply(prog, at=(0,))
    binders = [p.id for _, m in walk(new) if isinstance(m, n.Lambda) for p in m.params]
    assert len(binders) == len(set(binders))


# ------------------------------------------------ the dot product, step by step

L, S = 4, 4  # work-items per group, elements per work-item
GROUP = L * S


def _one(e: n.Node, pred) -> tuple[int, ...]:
    hits = [p for p, m in walk(e) if pred(m)]
    assert len(hits) == 1, hits
    return hits[0]


def _calls(cls: type):
    return lambda m: isinstance(m, n.FunCall) and type(m.f) is cls


class Derivation:
    """Applies named rules one at a time, checking the interpreter after every step."""

    def __init__(self, program: n.Lambda, *inputs: np.ndarray) -> None:
        self.e, self.inputs = program, inputs
        self.want = lift.interpret(program, *inputs)
        self.names: list[str] = []

    def apply(self, rule: Rule, which: int = 0, *, path: tuple[int, ...] | None = None, pred=None,
              **params) -> None:
        if path is None:
            paths = [p for p in rule.matches(self.e, **params) if pred is None or pred(at(self.e, p))]
            path = paths[which]
        self.e = check_rule(rule, self.e, self.inputs, path, params, rtol=1e-4, atol=1e-4)
        self.names.append(rule.name)


def two_stage_dot(x: np.ndarray, y: np.ndarray) -> Derivation:
    """reduce(add, 0) << map(mult) << zip(x, y)  ->  the back end's two-stage dot (examples/dot.py)."""
    d = Derivation(fun([Array(Float, N), Array(Float, N)],
                       lambda a, b: reduce(add, 0.0) << map(mult) << zip(a, b)), x, y)
    d.apply(R.split_join, n=GROUP)  # one chunk per work-group
    d.apply(R.partial_reduce_split_join)
    d.apply(R.map_fusion)
    d.apply(R.split_join, -1, n=S)  # inside a group: S elements per work-item
    d.apply(R.partial_reduce_split_join, -1)
    d.apply(R.map_fusion, -1)
    d.apply(R.reduce_map_fusion, -1)  # reduce_seq((acc, p) => acc + p0 * p1)
    d.apply(R.map_to_lcl, -1)
    d.apply(R.to_local_memory, pred=_calls(n.MapLcl))  # partial sums in local memory
    d.apply(R.partial_reduce, pred=lambda c: isinstance(c.args[1].f, n.ToLocal), n=L)
    d.apply(R.map_to_lcl, -1)
    d.apply(R.reduce_to_seq, -1)
    d.apply(R.to_global_memory, pred=lambda c: type(c.f) is n.ReduceSeq and isinstance(c.f.f, n.UserFun))
    d.apply(R.map_fission)
    d.apply(R.partial_reduce_join)  # reduce << join << map(group sums)
    d.apply(R.map_to_wrg)
    d.apply(R.reduce_to_seq)
    d.apply(R.ocl_kernel_intro, path=(0,), arg=(2,))  # the final reduction: a second kernel
    d.apply(R.ocl_kernel_intro, path=(0, 1), arg=(1, 1, 1))
    return d


def test_dot_product_rewrites_into_the_two_stage_low_level_dot() -> None:
    rng = np.random.default_rng(1)
    x, y = (rng.random(64, dtype=np.float32) for _ in range(2))
    d = two_stage_dot(x, y)
    kinds = {type(m) for _, m in walk(d.e)}
    assert {n.MapWrg, n.MapLcl, n.ReduceSeq, n.ToLocal, n.ToGlobal, n.OclKernel} <= kinds
    assert not kinds & {n.Map, n.Reduce}
    assert len(d.names) == 19
    assert_same(float(x.astype(np.float64) @ y), lift.interpret(d.e, x, y), rtol=1e-5)


def _compiler():
    from lift.compile import compile as compile_

    return compile_


@pytest.mark.device
def test_derived_two_stage_dot_runs_on_the_device() -> None:
    compile_ = _compiler()
    rng = np.random.default_rng(2)
    x, y = (rng.random(256, dtype=np.float32) for _ in range(2))
    d = two_stage_dot(x, y)
    prog = compile_(d.e)
    assert len(prog.kernels) == 2 and "local" in prog.source
    assert_same(lift.interpret(d.e, x, y), prog(x, y), rtol=1e-4)


# ----------------------------------------------- tiled matrix multiplication

M, NN, K = Size("M"), Size("NN"), Size("K")
TM, TN = 4, 4


def _binds(name: str):
    return lambda f: isinstance(f, n.Lambda) and f.params[0].name == name


def _map_over(name: str):
    return lambda m: type(m) is n.Map and _binds(name)(m.f)


def _call_over(name: str):
    return lambda m: isinstance(m, n.FunCall) and _map_over(name)(m.f)


def _is_let(m: n.Node) -> bool:
    return isinstance(m, n.FunCall) and isinstance(m.f, n.Let)


def _is_copy(m: n.Node) -> bool:
    return isinstance(m, n.FunCall) and R.address_spaces.is_copy(m.f) and type(m.f) is n.Map


def tiled_matmul(a: np.ndarray, bt: np.ndarray) -> Derivation:
    """map(row => map(col => dot(row, col)) << bt) << a  ->  TM x TN tiles per work-group, the
    group's rows of A and of B^T copied into local memory, one output per work-item."""
    d = Derivation(fun([Array(Array(Float, K), M), Array(Array(Float, K), NN)],
                       lambda a_, b_: map(lambda row: map(
                           lambda col: reduce(add, 0.0) << map(mult) << zip(row, col)) << b_) << a_), a, bt)
    d.apply(R.split_join, path=_one(d.e, _call_over("row")), n=TM)
    d.apply(R.eta_expand, path=(0, 1))  # map(map(row => ...)) -> map(elem => map(row => ...) << elem)
    d.apply(R.split_join, path=_one(d.e, _call_over("col")), n=TN)
    d.apply(R.map_fission, path=_one(d.e, _call_over("row")))
    d.apply(R.map_map_interchange, path=_one(d.e, _call_over("row")))  # blocks of B^T outside
    d.apply(R.map_fission, path=_one(d.e, _call_over("elem")))  # the reordering leaves the kernel
    d.apply(R.map_fission, path=_one(d.e, _call_over("elem")))
    d.apply(R.let_intro, path=_one(d.e, _call_over("row")), arg=(0, 0, 0, 1))  # let(tile of B^T)
    d.apply(R.let_intro, path=_one(d.e, _call_over("row")), arg=(1,))  # let(tile of A)
    for p in [p for p, m in walk(d.e) if _is_let(m)]:
        d.apply(R.add_copy, path=p + (1,))
    for p in [p for p, m in walk(d.e) if _is_copy(m)][::-1]:
        d.apply(R.to_local_memory, path=p)
        d.apply(R.map_to_lcl, path=p + (0, 0), dim=1)
        d.apply(R.map_to_lcl, path=p + (0, 0, 0), dim=0)
    d.apply(R.map_to_wrg, path=_one(d.e, _map_over("elem")), dim=1)
    d.apply(R.map_to_wrg, path=_one(d.e, _map_over("b")), dim=0)
    d.apply(R.map_to_lcl, path=_one(d.e, _map_over("row")), dim=1)
    d.apply(R.map_to_lcl, path=_one(d.e, _map_over("col")), dim=0)
    d.apply(R.reduce_map_fusion)
    d.apply(R.to_global_memory, path=_one(d.e, _calls(n.ReduceSeq)))
    return d


def test_matmul_rewrites_into_a_tiled_local_memory_matmul() -> None:
    rng = np.random.default_rng(3)
    a, bt = rng.random((8, 5), dtype=np.float32), rng.random((12, 5), dtype=np.float32)
    d = tiled_matmul(a, bt)
    kinds = [type(m) for _, m in walk(d.e)]
    assert kinds.count(n.MapWrg) == 2 and kinds.count(n.ToLocal) == 2 and n.Reduce not in kinds
    assert_same(a @ bt.T, lift.interpret(d.e, a, bt), rtol=1e-5)


@pytest.mark.device
def test_derived_tiled_matmul_runs_on_the_device() -> None:
    compile_ = _compiler()
    rng = np.random.default_rng(4)
    a, bt = rng.random((16, 8), dtype=np.float32), rng.random((8, 8), dtype=np.float32)
    d = tiled_matmul(a, bt)
    prog = compile_(d.e)
    assert "barrier" in prog.source
    assert_same(a @ bt.T, prog(a, bt), rtol=1e-4)


# ------------------------------------------------- lowering, end to end


def _lowered(prog: n.Lambda) -> n.Node:
    from lift.rules.strategies import normalize, rewrite, seq, top_down, try_

    return rewrite(prog, seq(try_(top_down(R.map_to_glb)), normalize(R.map_to_seq),
                             normalize(R.reduce_to_seq), try_(top_down(R.to_global_memory)))).expr


LOWERING_CASES = {
    "map": (fun([Array(Float, N)], lambda x: map(lambda a: a * 2.0 + 1.0) << x), (16,)),
    "map of maps": (fun([Array(Array(Float, 4), N)], lambda x: map(map(lambda a: a + 1.0)) << x), (8, 4)),
    "map of reductions": (fun([Array(Array(Float, 8), N)], lambda x: map(lambda r: reduce(add, 0.0) << r) << x),
                          (4, 8)),
    "split map": (fun([Array(Float, N)], lambda x: join << map(map(lambda a: a * 3.0)) << split(4) << x), (16,)),
}


@pytest.mark.device
@pytest.mark.parametrize("name", list(LOWERING_CASES))
def test_lowering_rules_compile_to_the_interpreters_result(name: str) -> None:
    compile_ = _compiler()
    prog, shape = LOWERING_CASES[name]
    low = _lowered(prog)
    assert not any(type(m) in (n.Map, n.Reduce) for _, m in walk(low))
    xs = (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) % 7) / 4
    assert_same(lift.interpret(prog, xs), compile_(low)(xs))


def test_exact_reads_the_program_as_written_where_match_eta_reduces() -> None:
    """`exact` (the normaliser's and fusion's matcher) does not eta-reduce a lambda; `match` does;
    `any_` binds nothing and `var`'s test is a side condition."""
    from lift.rules.match import any_, exact, match, var

    g = user_fun(lambda a: a + 1.0, [Float], Float, name="g")
    t = Array(Array(Float, 4), 8)
    eta_map = fun([t], lambda x: map(lambda r: map(g) << r) << x).body  # map(r => map(g) << r) << x
    prog = fun([t], lambda x: map(map(g)) << x)
    x, plain = prog.params[0], prog.body
    nested = call(n.Map(n.Map(fvar("f"))), expr("x"))
    assert match(nested, eta_map) is not None
    assert exact(nested, eta_map) is None, "exact must not eta-reduce the lambda"
    b = exact(nested, plain)
    assert b is not None and b["f"] == g and b["x"] is x
    assert exact(call(n.Map(any_()), any_()), plain) == {}, "a wildcard binds nothing"
    only_maps = call(var("m", n.Map, lambda m: isinstance(m.f, n.Map)), expr("x"))
    assert exact(only_maps, plain) is not None
    flat = fun([t], lambda y: map(g) << join << y).body
    assert exact(only_maps, flat) is None, "the side condition refuses map(g)"
