"""IR nodes: immutability, structural equality, labels and locations, printing, paths."""

from __future__ import annotations

import dataclasses

import pytest

import lift
from lift import Array, Float, fun, join, map, split
from lift.ir import ALL_NODE_TYPES, alpha_equal, at, canonical, children, replace_at, walk
from lift.ir import nodes as n
from programs import N, dot_program, stencil2d_program


def test_nodes_are_frozen_and_hashable():
    prog = dot_program()
    with pytest.raises(dataclasses.FrozenInstanceError):
        prog.body = None  # type: ignore[misc]
    assert hash(prog) == hash(prog)
    assert {prog: 1}[prog] == 1


def test_equality_is_structural_and_ignores_labels():
    x = lift.Param(Array(Float, N), "x")
    a = map(lift.mult, label="A") << lift.zip(x, x)
    b = map(lift.mult, label="B") << lift.zip(x, x)
    assert alpha_equal(a, b) and hash(canonical(a)) == hash(canonical(b))
    assert a.f.label == "A" and b.f.label == "B"
    c = map(lift.add) << lift.zip(x, x)
    assert not alpha_equal(a, c)
    m1, m2 = map(lift.id, label="A") << x, map(lift.id, label="B") << x
    assert m1 == m2 and hash(m1) == hash(m2)


def test_alpha_equivalence_renames_bound_parameters_only():
    f = fun([Array(Float, N)], lambda x: map(lambda v: v * 2.0) << x)
    g = fun([Array(Float, N)], lambda y: map(lambda w: w * 2.0) << y)
    h = fun([Array(Float, N)], lambda y: map(lambda w: w * 3.0) << y)
    assert f != g and alpha_equal(f, g) and not alpha_equal(f, h)
    assert canonical(canonical(f)) == canonical(f)


def test_params_compare_by_binding():
    p, q = lift.Param(Float, "v"), lift.Param(Float, "v")
    assert p != q and p == p


def test_every_node_records_the_users_line():
    prog = fun([Array(Float, N)], lambda x: join << map(map(lift.id)) << split(4) << x)  # LOCLINE
    here = prog.body.loc
    assert here is not None and here.file == __file__ and "LOCLINE" in here.text
    for _, node in walk(prog):
        if isinstance(node, n.FunCall):
            assert node.loc is not None and node.loc.file == __file__


def test_printer_uses_lift_notation():
    prog = fun([Array(Float, N)], lambda x: join << map(map(lift.id)) << split(4) << x)
    assert str(prog) == "(x) => join << map(map(id)) << split(4) << x"
    assert str(dot_program()) == "(x, y) => reduce(add, 0.0) << map(mult) << zip(x, y)"
    labelled = fun([Array(Float, N)], lambda x: map(lift.id, label="A") << x)
    assert str(labelled) == "(x) => map[A](id) << x"


def test_paths_address_every_subexpression():
    prog = stencil2d_program()
    paths = dict(walk(prog))
    assert paths[()] is prog
    for path, node in paths.items():
        assert at(prog, path) is node
        assert replace_at(prog, path, node) == prog


def test_replace_at_rebuilds_only_the_spine():
    prog = fun([Array(Float, N)], lambda x: map(lift.id) << (map(lift.id) << x))
    inner_path = (0, 1)
    inner = at(prog, inner_path)
    assert isinstance(inner, n.FunCall) and isinstance(inner.f, n.Map)
    swapped = replace_at(prog, inner_path, inner.args[0])
    assert str(swapped) == "(x) => map(id) << x"
    assert children(swapped.body)[0] is children(prog.body)[0]


def test_node_type_registry_is_complete():
    defined = {c for c in vars(n).values() if isinstance(c, type) and dataclasses.is_dataclass(c)
               and issubclass(c, (n.Expr, n.FunDecl))
               and c not in (n.Expr, n.FunDecl, n.Pattern, n.AbstractMap, n.AbstractReduce)}
    assert defined == set(ALL_NODE_TYPES)
