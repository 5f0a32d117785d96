"""Views: layout patterns as index arithmetic (thesis 2.3.2.2)."""

from __future__ import annotations

from lift import Array, Float, Size, Tuple, Vector
from lift.arith import Cst, Var
from lift.layout import memory_view
from lift.types import ArrayType
from lift.views import (
    Access,
    AsScalarV,
    AsVectorV,
    ConstLeaf,
    JoinV,
    Load,
    Mem,
    PadV,
    Proj,
    Select,
    SlideV,
    SoA,
    SplitV,
    StructLeaf,
    TransposeV,
    VecOf,
    VectorLanes,
    resolve,
)

N, M = Size("N"), Size("M")
i = Var("i", Cst(0), N - 1)
j = Var("j", Cst(0), Cst(3))
k = Var("k", Cst(0), M - 1)
X = Mem("x", Array(Float, N), "global")
X2 = Mem("x", Array(Array(Float, M), N), "global")


def _index(v) -> object:
    leaf = resolve(v)
    assert isinstance(leaf, Load)
    return leaf.flat


def test_split_then_join_is_the_identity():
    assert _index(Access(JoinV(SplitV(X, Cst(4)), Cst(4)), i)) == i


def test_split_index_is_simplified():
    q = Var("q", Cst(0), N // 4 - 1)
    assert _index(Access(Access(SplitV(X, Cst(4)), q), j)) == 4 * q + j


def test_join_of_rows():
    t = Var("t", Cst(0), N * M - 1)
    assert _index(Access(JoinV(X2, M), t)) == t


def test_transpose_swaps_indices():
    assert _index(Access(Access(TransposeV(X2), k), i)) == i * M + k


def test_slide_window():
    assert _index(Access(Access(SlideV(X, Cst(3), Cst(1)), i), j)) == i + j


def test_pad_wraps_the_read_in_a_condition():
    p = Var("p", Cst(0), N + 3)  # pad(2, 2): the padded length is N + 4
    leaf = resolve(Access(PadV(X, Cst(2), N, 0.0), p))
    assert isinstance(leaf, Select) and isinstance(leaf.orelse, ConstLeaf)
    ((c, low, hi),) = leaf.conds
    assert c == p - 2 and low and hi == N


def test_provably_inside_padding_needs_no_condition():
    leaf = resolve(Access(PadV(X, Cst(2), N, 0.0), i + 2))
    assert isinstance(leaf, Load) and leaf.flat == i


def test_negative_padding_drops_elements_without_a_condition():
    t = Var("t", Cst(0), N - 2)  # pad(-1, 0): the first element is dropped
    leaf = resolve(Access(PadV(X, Cst(-1), N, 0.0), t))
    assert isinstance(leaf, Load) and leaf.flat == t + 1


def test_zip_and_get_select_a_memory():
    y = Mem("y", Array(Float, N), "global")
    z = SoA((X, y), 1, Tuple(Float, Float))
    leaf = resolve(Proj(Access(z, i), 1))
    assert isinstance(leaf, Load) and leaf.mem.name == "y" and leaf.flat == i
    whole = resolve(Access(z, i))
    assert isinstance(whole, StructLeaf) and len(whole.parts) == 2


def test_as_vector_reads_contiguous_lanes_as_one_vector():
    q = Var("q", Cst(0), N // 4 - 1)
    leaf = resolve(Access(AsVectorV(X, 4), q))
    assert isinstance(leaf, Load) and leaf.tail == (VecOf(4),) and leaf.flat == 4 * q


def test_as_vector_of_a_transposed_array_gathers_lanes():
    q = Var("q", Cst(0), Cst(1))
    leaf = resolve(Access(AsVectorV(Access(TransposeV(X2), k), 4), q))
    assert isinstance(leaf, VectorLanes) and len(leaf.parts) == 4


def test_as_scalar_reads_a_lane():
    v = Mem("v", Array(Vector(Float, 4), N), "global")
    t = Var("t", Cst(0), 4 * N - 1)
    leaf = resolve(Access(AsScalarV(v, 4), t))
    assert isinstance(leaf, Load) and leaf.flat == t // 4


def test_memory_view_of_tuples_is_struct_of_arrays():
    v = memory_view("out", ArrayType(Tuple(Float, Float), N), "global")
    assert isinstance(v, SoA) and [m.name for m in v.vs] == ["out_0", "out_1"]
