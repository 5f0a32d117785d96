"""The LIFT IR: immutable expression and function nodes (thesis 2.3.1, Fig. 2.8-2.13).

Expressions (`Expr`) are parameters, literals and calls; functions (`FunDecl`) are
lambdas, user functions and patterns. Nodes are frozen dataclasses that compare
structurally; `label` and `loc` are metadata, not part of equality. A node's hash is
computed once. Types are computed on demand by `lift.typecheck` (`expr.type`), a pure function of
the node's structure memoised on a call as its hash is (`Memo`); its record (`Typed`) holds them by
path.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, cast

from lift.arith import Arith
from lift.errors import SourceLoc, UnsupportedError
from lift.types import Type

_ids = itertools.count()

if TYPE_CHECKING:  # type checkers read `node` as the dataclass decorator it wraps
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_kw: Any) -> Any:
        return lambda f: f


def is_plain_value(x: Any) -> bool:
    """A Python or numpy number, or a tuple or list of them (not an IR value)."""
    if isinstance(x, (tuple, list)):
        return all(is_plain_value(e) for e in x)
    if isinstance(x, (bool, int, float)):
        return True
    return type(x).__module__ == "numpy" and hasattr(x, "dtype") and getattr(x, "ndim", 1) == 0


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def node(cls: Any) -> Any:
    """Make `cls` a frozen, slotted IR dataclass with a cached structural hash."""
    cls = dataclass(frozen=True, slots=True, repr=False)(cls)
    names = tuple(f.name for f in fields(cls) if f.compare)
    eq = cls.__eq__

    def __hash__(self: Any) -> int:
        h: int | None = self._h
        if h is None:
            h = hash((cls.__name__,) + tuple(getattr(self, n) for n in names))
            object.__setattr__(self, "_h", h)
        return h

    def __eq__(self: Any, other: object) -> bool:
        return self is other or cast(bool, eq(self, other))  # NotImplemented for another class

    cls.__hash__ = __hash__
    cls.__eq__ = __eq__
    cls._compare_fields = names
    return cls


class Memo:
    """A slot for what is a pure function of a node's structure, computed once and kept on it as
    its hash is (`lift.typecheck` keeps a call's type and size conditions there: `memo_of`); not a
    field, so neither equality, `dataclasses.replace`, copies nor pickles carry it."""

    __slots__ = ("__weakref__", "_memo")


def memo_of(e: Memo) -> Any:
    """What was memoised on `e`, or None."""
    return getattr(e, "_memo", None)


def set_memo(e: Memo, value: Any) -> None:
    """Memoise `value` on `e` (a value computed from `e`'s structure alone)."""
    object.__setattr__(e, "_memo", value)


@dataclass(frozen=True, slots=True, repr=False)
class Node(Memo):
    """Base of IR nodes: a `label` naming the node and the user's source `loc`."""

    label: str | None = field(default=None, compare=False, kw_only=True)
    loc: SourceLoc | None = field(default=None, compare=False, kw_only=True)
    _h: int | None = field(default=None, init=False, compare=False)

    def __str__(self) -> str:
        return printer.show(self)

    def __repr__(self) -> str:
        return str(self)


# --------------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True, repr=False)
class Expr(Node):
    """A value: a parameter, a literal or a function call."""

    @property
    def type(self) -> Type:
        """The type of this expression (checked on first use; `lift.typecheck` keeps it)."""
        from lift.typecheck import type_of

        return type_of(self)

    def __getitem__(self, i: Any) -> Expr:
        return build.index(self, i)

    def __add__(self, o: Any) -> Expr:
        return build.arith_op("add", self, o)

    def __radd__(self, o: Any) -> Expr:
        return build.arith_op("add", o, self)

    def __sub__(self, o: Any) -> Expr:
        return build.arith_op("sub", self, o)

    def __rsub__(self, o: Any) -> Expr:
        return build.arith_op("sub", o, self)

    def __mul__(self, o: Any) -> Expr:
        return build.arith_op("mult", self, o)

    def __rmul__(self, o: Any) -> Expr:
        return build.arith_op("mult", o, self)

    def __truediv__(self, o: Any) -> Expr:
        return build.arith_op("div", self, o)

    def __rtruediv__(self, o: Any) -> Expr:
        return build.arith_op("div", o, self)

    def __neg__(self) -> Expr:
        return build.arith_op("neg", self)


@node
class Param(Expr):
    """A lambda parameter; each has a fresh `id`, so equality is identity of binding."""

    ptype: Type
    name: str = field(default="p", compare=False)
    id: int = field(default_factory=lambda: next(_ids))


@node
class Literal(Expr):
    """A constant: `value(0.0, Float)`; with a vector or array type, every lane and element
    is `value` (`value(0.0, Array(Float, 4))`, LIFT's `Value`, used for accumulators)."""

    value: float | int | bool
    ltype: Type


@node
class FunCall(Expr):
    """`f(args)`, written `f << x` for one argument."""

    f: FunDecl
    args: tuple[Expr, ...]


# ----------------------------------------------------------------------- functions


@dataclass(frozen=True, slots=True, repr=False)
class FunDecl(Node):
    """A function: a lambda, a user function or a pattern. `f << x` applies it."""

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return build.call_fundecl(self, args, kw)

    def __lshift__(self, other: Any) -> Any:
        return build.lshift(self, other)

    @property
    def arity(self) -> int:
        return 1


@node
class Lambda(FunDecl):
    """`(p1, ..., pk) => body`."""

    params: tuple[Param, ...]
    body: Expr

    @property
    def arity(self) -> int:
        return len(self.params)


@node
class UserFun(FunDecl):
    """A scalar function with an OpenCL C body and a Python (numpy) meaning."""

    name: str
    params: tuple[str, ...]
    in_types: tuple[Type, ...]
    out_type: Type
    c_source: str
    structs: tuple[Type, ...] = field(default=(), compare=False)
    py_fn: Any = field(default=None, compare=False)
    np_fn: Any = field(default=None, compare=False)
    deps: tuple[Any, ...] = field(default=(), compare=False)  # the UserFuns `c_source` calls
    laws: Any = field(default=None, compare=False)  # lift.userfun.facts.Laws its author vouched for

    def __call__(self, *args: Any, **kw: Any) -> Any:
        """On IR values: the call, as IR. On numbers (as when one user function calls another in
        the interpreter): the value, from the function's Python meaning."""
        if args and not kw and all(is_plain_value(a) for a in args):
            if self.py_fn is None:
                raise UnsupportedError(f"user function {self.name} has no Python meaning", node=self)
            return self.py_fn(*args)
        trace = next((a for a in args if hasattr(a, "__liftcl_trace__")), None)
        if trace is not None and not kw:  # a symbolic value: record the call (lift.userfun.trace)
            return trace.__liftcl_trace__(self, args)
        return FunDecl.__call__(self, *args, **kw)

    @property
    def arity(self) -> int:
        return len(self.in_types)


class Pattern(FunDecl):
    """Base of the built-in patterns."""

    __slots__ = ()


class AbstractMap(Pattern):
    """Base of `map` and its OpenCL forms; `f` is applied to every element."""

    __slots__ = ()
    f: FunDecl  # declared by each map class (a field there)


@node
class Map(AbstractMap):
    f: FunDecl


@node
class MapSeq(AbstractMap):
    f: FunDecl


@node
class MapGlb(AbstractMap):
    f: FunDecl
    dim: int = 0


@node
class MapWrg(AbstractMap):
    f: FunDecl
    dim: int = 0


@node
class MapLcl(AbstractMap):
    f: FunDecl
    dim: int = 0


class AbstractReduce(Pattern):
    """Base of `reduce` forms, called as `reduce(f)(init, x)`; the result is a scalar."""

    __slots__ = ()
    f: FunDecl  # declared by each reduce class (a field there)

    @property
    def arity(self) -> int:
        return 2


@node
class Reduce(AbstractReduce):
    f: FunDecl


@node
class ReduceSeq(AbstractReduce):
    f: FunDecl


@node
class ReduceAtomic(AbstractReduce):
    """`reduce_atomic(f, z) << map_glb(g) << xs`: each element the map computes is combined into
    the result with an OpenCL atomic as soon as it is computed (no array of partial results, no
    second kernel); the result is pre-filled with `z`, which must be `f`'s neutral element. The
    order of the combination is not deterministic (a float sum may differ in its last bits)."""

    f: FunDecl


@node
class Zip(Pattern):
    n: int

    @property
    def arity(self) -> int:
        return self.n


@node
class MakeTuple(Pattern):
    """`tuple(x1, ..., xn)`; a Python tuple returned by a lambda builds one."""

    n: int

    @property
    def arity(self) -> int:
        return self.n


@node
class Get(Pattern):
    """Component `i` of a tuple."""

    i: int


@node
class At(Pattern):
    """Element `index` of an array (`x[i]`)."""

    index: Arith


@node
class Iota(Pattern):
    """`iota(n)`: the indices `0 .. n-1` as an array `[Int]n`, applied to no argument; a view
    generated where it is read (no input buffer). Semantics, views and code: `lift.iota`."""

    n: Arith

    @property
    def arity(self) -> int:
        return 0


@node
class Split(Pattern):
    n: Arith


@node
class Join(Pattern):
    pass


@node
class Slide(Pattern):
    size: Arith
    step: Arith


@node
class Pad(Pattern):
    """Pad `left` and `right` elements around an array: copies of `value` (mode "constant";
    negative amounts truncate), or elements of the array itself at a boundary `mode` (a view:
    "clamp" repeats the edge, numpy's `edge`; "mirror" reflects it, numpy's `symmetric`; "wrap"
    continues periodically, numpy's `wrap`; amounts >= 0, any width)."""

    left: Arith
    right: Arith
    value: float | int
    mode: str = "constant"


PAD_MODES = ("constant", "clamp", "mirror", "wrap")


@node
class Transpose(Pattern):
    pass


@node
class TransposeW(Pattern):
    pass


@node
class Let(Pattern):
    """`let(f) << x`: evaluate `x` once, then `f`."""

    f: FunDecl


@node
class Iterate(Pattern):
    """Apply `f` `n` times."""

    n: int
    f: FunDecl


@node
class ToGlobal(Pattern):
    f: FunDecl

    @property
    def arity(self) -> int:
        return self.f.arity


@node
class ToLocal(Pattern):
    f: FunDecl

    @property
    def arity(self) -> int:
        return self.f.arity


@node
class ToPrivate(Pattern):
    f: FunDecl

    @property
    def arity(self) -> int:
        return self.f.arity


@node
class AsVector(Pattern):
    n: int


@node
class AsScalar(Pattern):
    pass


@node
class Vectorise(Pattern):
    """Apply a scalar function lane-wise to vectors of width `n`."""

    f: FunDecl
    n: int

    @property
    def arity(self) -> int:
        return self.f.arity


@node
class OclKernel(Pattern):
    """The body becomes a separate OpenCL kernel."""

    f: FunDecl

    @property
    def arity(self) -> int:
        return self.f.arity


# The groupings of node classes (MAPS, REDUCES, ADDRESS_SPACES, WRAPPERS, ALL_NODE_TYPES)
# are the registry's, derived from its families; imported here (after the classes it registers)
# so that `lift.ir.nodes` keeps offering them.
from lift.ir.registry import ADDRESS_SPACES as ADDRESS_SPACES  # noqa: E402
from lift.ir.registry import ALL_NODE_TYPES as ALL_NODE_TYPES  # noqa: E402
from lift.ir.registry import MAPS as MAPS  # noqa: E402
from lift.ir.registry import REDUCES as REDUCES  # noqa: E402
from lift.ir.registry import WRAPPERS as WRAPPERS  # noqa: E402

# isort: split
# The front end and the printer build on these classes; imported last (they import this module),
# so that operators on nodes (`f << x`, `x + y`, `str(e)`) reach them without function-local imports.
from lift.ir import build, printer  # noqa: E402
