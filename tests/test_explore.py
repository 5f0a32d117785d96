"""`lift.rules.explore` (rules/enumerate.py): distinct programs reachable in a few rule applications."""

from __future__ import annotations

import numpy as np

import lift
import lift.rules as R  # noqa: N812 - the rule catalogue
from lift import Array, Float, Size, add, fun, map, mult, reduce, zip
from lift.ir.alpha import canonical
from lift.testing import assert_same

N = Size("N")
BINDING = ("let_intro", "ocl_kernel_intro", "add_copy", "to_private_memory", "to_local_memory",
           "to_global_memory")
ALGORITHMIC_AND_LOWERING = tuple(r for r in R.ALL if r.name not in BINDING)


def dot() -> lift.Lambda:
    return fun([Array(Float, N), Array(Float, N)], lambda x, y: reduce(add, 0.0) << map(mult) << zip(x, y))


def _check_all(found: R.Explored, x: np.ndarray, y: np.ndarray) -> None:
    want = lift.interpret(dot(), x, y)
    keys = set()
    for prog, steps in found:
        lift.typecheck(prog)
        assert_same(want, lift.interpret(prog, x, y), rtol=1e-5)
        keys.add(canonical(prog))
        assert len(steps) <= found.depth
    assert len(keys) == found.count


def test_explore_dot_to_depth_3_finds_only_well_typed_equal_programs() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.random(64, dtype=np.float32), rng.random(64, dtype=np.float32)  # 64: three splits by 4
    found = R.explore(dot(), ALGORITHMIC_AND_LOWERING, 3, limit=5000)
    print(found)  # explore: 777 distinct programs within 3 steps, ...
    assert not found.truncated and found.count > 100
    assert str(found).startswith(f"explore: {found.count} distinct programs within 3 steps")
    _check_all(found, x, y)
    names = {s.rule.name for _, steps in found for s in steps}
    assert {"split_join", "partial_reduce", "map_to_glb", "reduce_map_fusion", "map_fission"} <= names


def test_explore_with_every_rule_stops_at_the_limit() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.random(64, dtype=np.float32), rng.random(64, dtype=np.float32)
    found = R.explore(dot(), R.ALL, 3, limit=600)
    assert found.truncated and found.count == 600 and "limit 600 reached" in str(found)
    _check_all(found, x, y)


def test_explore_deduplicates_alpha_equivalent_programs() -> None:
    found = R.explore(dot(), [R.map_to_seq, R.reduce_to_seq], 3)
    assert found.count == 4  # {map, map_seq} x {reduce, reduce_seq}: both orders give one program
    assert [len(steps) for steps in found.derivations] == [0, 1, 1, 2]


def test_explore_takes_parameter_values() -> None:
    prog = fun([Array(Float, 16)], lambda x: map(lambda a: a + 1.0) << x)
    found = R.explore(prog, [R.split_join], 1, params={"split_join": {"n": [2, 4, 8]}})
    assert found.count == 4
    assert sorted(steps[0].params["n"] for steps in found.derivations[1:]) == [2, 4, 8]
