"""The parallel-mapping model (thesis 5.3) on Listing 5.2 / Table 5.1 and the conv program."""

from __future__ import annotations

import builtins
import random

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, to_global, to_local, transpose, user_fun
from lift.constraints import CODES, choose_mapping, mapping_space
from lift.constraints import mapping as mp
from lift.errors import RewriteError, UnsatisfiableError
from tests.programs import conv_program, gemv_program, matmul_program, rand

I, J, K = Size("I"), Size("J"), Size("K")
SIZES = {"I": 4, "J": 8, "K": 16}

f = user_fun(lambda a: a * 2.0, [Float], Float, name="f")
g = user_fun(lambda a: a + 1.0, [Float], Float, name="g")


def listing_5_2():
    """Loops A..E of Listing 5.2: f writes a local buffer, g reads it transposed."""
    return fun([Array(Array(Array(Float, K), J), I)],
               lambda x: map(lambda xi: transpose << map(map(to_global(g), label="E"), label="D") << transpose
                             << map(map(to_local(f), label="C"), label="B") << xi, label="A") << x)


# Table 5.1 in Table 5.2 codes (A, B, C, D, E); V (vectorised) is a sequential map vectorised by 4.
TABLE_5_1 = {
    "M1": (30, 0, 0, 0, 0), "M2": (31, 30, 0, 30, 0), "M3": (0, 20, 10, 20, 10),
    "M4": (20, 10, 0, 10, 0), "M5": (20, 10, 0, 10, 0), "M6": (20, 10, 0, 0, 10),
}
VECTORISED = {"M5": {"E": 4}, "M6": {"C": 4}}


def choice(name: str) -> dict[str, int]:
    return dict(builtins.zip("ABCDE", TABLE_5_1[name]))


@pytest.fixture(scope="module")
def space():
    return mapping_space(listing_5_2(), "pocl-cpu", sizes=SIZES)


def test_listing_5_2_has_five_concrete_maps_and_two_chains(space) -> None:
    ctx = space.context
    assert set(ctx.maps) == set("ABCDE")
    assert set(ctx.kernel_chains(ctx.maps["A"].kernel)) == {("A", "B", "C"), ("A", "D", "E")}
    assert ctx.maps["C"].perfect and ctx.maps["E"].perfect and not ctx.maps["B"].perfect
    assert ctx.maps["B"].uses("local") and ctx.maps["E"].uses("local") and not ctx.maps["A"].uses("local")


@pytest.mark.parametrize("name, kind", [("M1", mp.SCOPE), ("M2", mp.SHARED), ("M3", mp.SHARED)])
def test_table_5_1_rejected_by_named_constraints(space, name: str, kind: str) -> None:
    assert not space.is_valid(choice(name))
    core = space.explain(choice(name))
    assert core and {c.kind for c in core} == {kind}
    with pytest.raises(UnsatisfiableError) as e:
        space.realise(choice(name))
    assert kind in str(e.value) and e.value.core == core


def test_m5_passes_the_model_but_fails_the_vectorisation_check(space) -> None:
    assert space.is_valid(choice("M5"))  # Table 5.2 has no code for V: vectorising is a check
    with pytest.raises(RewriteError, match="E cannot be vectorised by 4: consecutive iterations read elements K"):
        space.realise(choice("M5"), vectorise=VECTORISED["M5"])


@pytest.mark.parametrize("name", ["M4", "M6"])
def test_table_5_1_accepted_mappings_match_the_interpreter(space, name: str) -> None:
    prog = listing_5_2()
    low = space.realise(choice(name), vectorise=VECTORISED.get(name))
    text = str(low)
    assert "map_wrg[A]" in text and "map_lcl[B]" in text
    assert ("vectorise(f, 4)" in text) == (name == "M6")
    x = rand(4, 8, 16)
    assert np.allclose(lift.interpret(low, x), lift.interpret(prog, x))


@pytest.mark.device
@pytest.mark.parametrize("name", ["M4", "M6"])
def test_table_5_1_accepted_mappings_compile_and_run(space, name: str) -> None:
    from lift.compile import compile

    prog, x = listing_5_2(), rand(4, 8, 16)
    low = space.realise(choice(name), vectorise=VECTORISED.get(name))
    k = compile(low, local_size=(8,), global_size=(32,))
    assert np.allclose(k(x), lift.interpret(prog, x))
    print(f"{name}: {len(k.barriers)} barrier(s)")
    if name == "M4":  # the local buffer is written by one work-item, read by others
        assert len(k.barriers) >= 1 and "barrier(" in k.source
    else:  # M6: every work-item reads only what it wrote (Definition 5.4.2)
        assert len(k.barriers) == 0 and "barrier(" not in k.source


def test_sampled_mappings_are_valid_distinct_and_realise(space) -> None:
    prog, x = listing_5_2(), rand(4, 8, 16)
    ref = lift.interpret(prog, x)
    samples = space.sample(40, seed=3)
    assert len(samples) == len({tuple(sorted(s.items())) for s in samples}) == space.count() == 31
    for s in samples:
        assert space.is_valid(s)
        assert np.allclose(lift.interpret(space.realise(s), x), ref), s


def test_fused_maps_are_realised_with_split_and_join(space) -> None:
    c = {"A": 20, "B": 10, "C": 1, "D": 10, "E": 1}
    text = str(space.realise(c))
    assert "split(K) << map_lcl[B](to_local(f)) << join" in text
    assert "split(J) << map_lcl[D](to_global(g)) << join" in text


def test_fusion_needs_perfect_nesting_and_an_outer_map(space) -> None:
    core = space.explain({"A": 1})
    assert core and core[0].kind == mp.PERFECT


def test_sequential_fusion_heuristic_is_an_option() -> None:
    off = mapping_space(listing_5_2(), "pocl-cpu", sizes=SIZES)
    on = mapping_space(listing_5_2(), "pocl-cpu", sizes=SIZES, fusion_heuristic=True)
    assert mp.FUSION not in off.stats() and on.stats()[mp.FUSION] == 2
    all_seq = dict.fromkeys("ABCDE", 0)
    assert off.is_valid(all_seq) and not on.is_valid(all_seq)
    assert on.count() < off.count()


def test_statistics_by_kind_like_table_5_4(space) -> None:
    stats = space.stats()
    for kind in (mp.SHARED, mp.SCOPE, mp.DUPLICATE, mp.DIMENSIONALITY, mp.HIERARCHY, mp.EXHAUSTIVE):
        assert stats[kind] >= 1, kind
    assert stats[mp.DUPLICATE] == 6  # A>B, A>C, B>C, A>D, A>E, D>E
    assert "# of instances" in space.report()


def test_private_memory_scoping() -> None:
    N, M = Size("N"), Size("M")
    prog = fun([Array(Array(Float, N), M)],
               lambda a: map(lambda r: map(to_global(g), label="Q") << map(lift.to_private(f), label="P") << r,
                             label="O") << a)
    sp = mapping_space(prog, "pocl-cpu")
    assert {c.kind for c in sp.explain({"O": 30, "P": 31, "Q": 0})} == {mp.PRIVATE}
    assert sp.is_valid({"O": 30, "P": 0, "Q": 0})


def test_duplicate_and_hierarchy_and_exhaustive() -> None:
    # matmul's two maps (gemv's map(mult) is fused into its reduction and has no variable)
    sp = mapping_space(matmul_program(), "pocl-cpu")
    outer, inner = "m0", "m1"
    assert sp.context.maps[inner].outer == (outer,)
    assert {c.kind for c in sp.explain({outer: 30, inner: 30})} >= {mp.DUPLICATE}
    assert {c.kind for c in sp.explain({outer: 10, inner: 20})} & {mp.HIERARCHY, mp.DIMENSIONALITY}
    assert sp.is_valid({outer: 31, inner: 30}) and sp.count() == 16
    gemv = mapping_space(gemv_program(), "pocl-cpu")
    assert list(gemv.context.maps) == ["m0"] and gemv.count() == 4


def test_unknown_label_is_an_error(space) -> None:
    with pytest.raises(KeyError, match="not a variable"):
        space.is_valid({"Z": 0})


def test_choose_mapping_is_valid_parallel_and_coalesced() -> None:
    c = choose_mapping(listing_5_2(), "pocl-cpu", sizes=SIZES)
    assert mapping_space(listing_5_2(), "pocl-cpu", sizes=SIZES).is_valid(c)
    assert c["A"] == 20 and 10 in (c["B"], c["C"])
    assert choose_mapping(gemv_program(), "pocl-cpu", sizes={"M": 64, "N": 64}) == {"m0": 30}


def test_random_encodings_rarely_satisfy_the_conv_model() -> None:
    """Thesis 5.5.4: 1 in 49,000 random candidates is valid there; the solver's are all valid."""
    sp = mapping_space(conv_program(3, 3, 1, 1), "mali-g72", sizes={"H": 6, "W": 6, "C": 2, "M": 4})
    labels = list(sp.context.maps)
    rng = random.Random(0)
    trials = 3000
    ok = sum(sp.is_valid({m: rng.choice(CODES) for m in labels}) for _ in range(trials))
    total, valid = len(CODES) ** len(labels), sp.count()
    solved = sp.sample(50, seed=1)
    assert all(sp.is_valid(s) for s in solved)
    print(f"conv: {len(labels)} maps, {valid} valid of {total} encodings ({valid / total:.2%}); "
          f"random: {ok}/{trials} = {ok / trials:.2%}; solver: {len(solved)}/{len(solved)} = 100%")
    assert ok / trials < 0.05 and abs(ok / trials - valid / total) < 0.01
