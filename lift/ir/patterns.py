"""The public pattern constructors: `map`, `reduce`, `zip`, `split`, ... and `fun`.

Each takes an optional `label="A"`. Called with its function/size parameters it returns
a function (`map(f)`, `split(4)`); given the argument too, it applies at once
(`map(f, x)`). Patterns without parameters are values: `join << x`.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, cast

from lift.errors import LiftTypeError, SourceLoc, user_loc
from lift.ir import nodes as n
from lift.ir.build import (
    Deferred,
    apply,
    arity_of,
    as_size,
    elaborate,
    generalise_outer,
    literal,
    to_expr,
)
from lift.ir.nodes import Expr, Lambda, Literal, Param
from lift.types import ArrayType, ScalarType, TupleType, Type, VectorType, base_type


def _array(t: Type, what: str, loc: SourceLoc | None) -> ArrayType:
    if not isinstance(t, ArrayType):
        raise LiftTypeError(f"{what} expects an array, got {t}", loc=loc, got=t)
    return t


def _fixed(node: n.FunDecl, text: str, label: str | None, args: tuple[Any, ...]) -> Any:
    """A parameterless-function pattern: IR at once, applied if args are given."""
    d = Deferred(lambda ts, lab, loc: _relabel(node, lab, loc), text, label=label, loc=user_loc())
    return apply(d, args, label=label) if args else d


def _relabel(node: n.FunDecl, label: str | None, loc: SourceLoc | None) -> n.FunDecl:
    return dataclasses.replace(node, label=label, loc=loc)


def _higher(make: Callable[[tuple[Type, ...], str | None, SourceLoc | None], n.FunDecl],
            text: str, label: str | None, args: tuple[Any, ...]) -> Any:
    d = Deferred(make, text, label=label, loc=user_loc())
    return apply(d, args, label=label) if args else d


def _name(f: Any) -> str:
    return str(f) if isinstance(f, (n.FunDecl, Deferred)) else getattr(f, "__name__", "f")


# -------------------------------------------------------------------- maps


def _map_like(cls: type, f: Any, args: tuple[Any, ...], label: str | None, **extra: Any) -> Any:
    def make(ts: tuple[Type, ...], lab: str | None, loc: SourceLoc | None) -> Any:
        a = _array(ts[0], cls.__name__.lower(), loc)
        return cls(elaborate(f, [a.elem]), **extra, label=lab, loc=loc)

    name = {"Map": "map", "MapSeq": "map_seq", "MapGlb": "map_glb", "MapWrg": "map_wrg",
            "MapLcl": "map_lcl"}[cls.__name__]
    return _higher(make, f"{name}({_name(f)})", label, args)


def map(f: Any, *args: Any, label: str | None = None) -> Any:  # noqa: A001
    """`map(f) << x`: apply `f` to every element of `x`."""
    return _map_like(n.Map, f, args, label)


def map_seq(f: Any, *args: Any, label: str | None = None) -> Any:
    """A sequential loop over the elements."""
    return _map_like(n.MapSeq, f, args, label)


def map_glb(f: Any, *args: Any, dim: int = 0, label: str | None = None) -> Any:
    """Elements distributed over global work-items of dimension `dim`."""
    return _map_like(n.MapGlb, f, args, label, dim=_dim(dim))


def map_wrg(f: Any, *args: Any, dim: int = 0, label: str | None = None) -> Any:
    """Elements distributed over work-groups of dimension `dim`."""
    return _map_like(n.MapWrg, f, args, label, dim=_dim(dim))


def map_lcl(f: Any, *args: Any, dim: int = 0, label: str | None = None) -> Any:
    """Elements distributed over the local work-items of a group, dimension `dim`."""
    return _map_like(n.MapLcl, f, args, label, dim=_dim(dim))


def _dim(d: int) -> int:
    if d not in (0, 1, 2):
        raise LiftTypeError(f"OpenCL dimensions are 0, 1 or 2, not {d}", loc=user_loc())
    return d


# ---------------------------------------------------------------- reductions


def _reduce_like(cls: type[n.Reduce | n.ReduceSeq | n.ReduceAtomic], f: Any, init: Any, args: tuple[Any, ...],
                 label: str | None) -> Any:
    loc = user_loc()

    def run(x: Any, lab: str | None) -> Expr:
        xe = to_expr(x)
        a = _array(xe.type, "reduce", loc)
        init_e = _init(init, f, a.elem)
        g = elaborate(f, [init_e.type, a.elem])
        return apply(cls(g, label=lab, loc=loc), [init_e, xe], label=lab, loc=loc)

    name = {n.Reduce: "reduce", n.ReduceSeq: "reduce_seq"}.get(cls, "reduce_atomic")
    text = f"{name}({_name(f)}, {init!r})"
    if args:
        if len(args) != 1:
            raise LiftTypeError(f"{name} takes one array", loc=loc)
        return run(args[0], label)
    return _ReduceFn(run, text, label, loc)


class _ReduceFn(Deferred):
    """`reduce(f, init)`: applied to an array, builds `Reduce(f)(init, x)`."""

    __slots__ = ("run",)

    def __init__(self, run: Callable[..., Any], text: str, label: str | None, loc: SourceLoc | None):
        self.run = run

        def make(ts: tuple[Type, ...], lab: str | None, loc2: SourceLoc | None) -> n.FunDecl:
            p = Param(ts[0], "xs", loc=loc2)
            return Lambda((p,), run(p, lab), label=lab, loc=loc2)

        super().__init__(make, text, label=label, loc=loc)

    def __call__(self, *args: Any, label: str | None = None) -> Any:
        if not args:
            return _ReduceFn(self.run, self.text, label, user_loc())
        if len(args) != 1:
            raise LiftTypeError("reduce takes one array", loc=user_loc())
        return self.run(args[0], label if label is not None else self.label)

    def direct(self, args: Any, label: str | None) -> Expr | None:
        if len(args) != 1:
            raise LiftTypeError("reduce takes one array", loc=user_loc())
        return cast(Expr | None, self.run(args[0], label if label is not None else self.label))


def _init(init: Any, f: Any, elem: Type | None) -> Expr:
    """The initial value: an expression, a tuple of numbers (a tuple literal) or a number: a
    literal of the element type, a vector literal for vectors or tuples of one vector type
    (`reduce_seq(vectorise(add, 8), 0.0) << as_vector(8) << x` accumulates a float8)."""
    if isinstance(init, Expr):
        return init
    like = f.in_types[0] if isinstance(f, n.UserFun) else elem
    if isinstance(like, TupleType) and not isinstance(init, tuple) and len(set(like.elems)) == 1:
        like = like.elems[0]
    if isinstance(init, tuple):
        parts = like.elems if isinstance(like, TupleType) and len(like.elems) == len(init) else [None] * len(init)
        return apply(n.MakeTuple(len(init), loc=user_loc()), [_init(v, None, t) for v, t in builtins.zip(init, parts)])
    if isinstance(like, VectorType):
        return value(init, like)
    if isinstance(like, ScalarType):
        return literal(init, like)
    return literal(init)


def reduce(f: Any, init: Any, *args: Any, label: str | None = None) -> Any:
    """`reduce(f, init) << x`: fold `x` with `f` starting from `init`; a scalar result."""
    return _reduce_like(n.Reduce, f, init, args, label)


def reduce_seq(f: Any, init: Any, *args: Any, label: str | None = None) -> Any:
    """A sequential reduction with a private accumulator."""
    return _reduce_like(n.ReduceSeq, f, init, args, label)


def reduce_atomic(f: Any, init: Any, *args: Any, label: str | None = None) -> Any:
    """`reduce_atomic(f, init) << map_glb(g) << x`: each element the map computes is combined into
    the result with an OpenCL atomic (`f` add, max_ or min_; `init` its neutral element)."""
    return _reduce_like(n.ReduceAtomic, f, init, args, label)


# ------------------------------------------------------------------- layout


def zip(*xs: Any, label: str | None = None) -> Expr:  # noqa: A001
    """`zip(x, y, ...)`: the arrays' elements paired into tuples."""
    if not xs:
        raise LiftTypeError("zip needs at least one array", loc=user_loc())
    return apply(n.Zip(len(xs), label=label, loc=user_loc()), xs, label=label)


def iota(count: Any, *, label: str | None = None) -> n.FunCall:
    """The indices `0 .. count-1` as an array `[Int]count` with no input buffer: each reader computes the
    element it reads (a view), e.g. an arg-min, the index of the smallest element:

        get(1) << reduce(smaller, (inf, -1)) << zip(x, iota(N))      x: [Float]N
    """
    loc = user_loc()
    return n.FunCall(n.Iota(as_size(count, "iota length"), label=label, loc=loc), (), loc=loc)


def get(i: int, *args: Any, label: str | None = None) -> Any:
    """Component `i` of a tuple."""
    if not isinstance(i, int):
        raise LiftTypeError(f"get needs an int index, got {i!r}", loc=user_loc())
    return _fixed(n.Get(i), f"get({i})", label, args)


def split(k: Any, *args: Any, label: str | None = None) -> Any:
    """`[T]n -> [[T]k]n/k`."""
    return _fixed(n.Split(as_size(k, "split size")), f"split({k})", label, args)


def slide(size: Any, step: Any, *args: Any, label: str | None = None) -> Any:
    """Windows of `size` elements every `step` elements."""
    return _fixed(n.Slide(as_size(size, "slide size"), as_size(step, "slide step")),
                  f"slide({size}, {step})", label, args)


def pad(left: Any, right: Any, value: Any = 0, *args: Any, mode: str = "constant", label: str | None = None) -> Any:
    """`left` and `right` elements around the array, a view (no copy): copies of a constant
    (`mode="constant"`, negative amounts truncate) or the array's own elements at a boundary
    mode, as numpy.pad pads (any width, amounts >= 0):

        pad(2, 2, 0.0) << [a b c]                 ->  [0 0 a b c 0 0]
        pad(2, 2, mode="clamp") << [a b c]        ->  [a a a b c c c]      numpy's "edge"
        pad(2, 2, mode="mirror") << [a b c]       ->  [b a a b c c b]      numpy's "symmetric"
        pad(2, 2, mode="wrap") << [a b c]         ->  [b c a b c a b]      numpy's "wrap"
    """
    if mode not in n.PAD_MODES:
        raise LiftTypeError(f"pad mode must be one of {', '.join(repr(m) for m in n.PAD_MODES)}, got {mode!r}",
                            loc=user_loc(), hint='numpy\'s "edge" is "clamp", "symmetric" is "mirror"')
    v = value.value if isinstance(value, Literal) else value
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise LiftTypeError(f"pad value must be a number, got {value!r}", loc=user_loc())
    if mode != "constant" and v != 0:
        raise LiftTypeError(f"pad mode {mode!r} takes no value (got {v!r}): its elements are the array's",
                            loc=user_loc())
    node = n.Pad(as_size(left, "pad amount"), as_size(right, "pad amount"), v, mode)
    text = f"pad({left}, {right}, {v!r})" if mode == "constant" else f"pad({left}, {right}, mode={mode!r})"
    return _fixed(node, text, label, args)


def as_vector(k: int, *args: Any, label: str | None = None) -> Any:
    """`[S]n -> [<S>k]n/k`."""
    if k not in (2, 3, 4, 8, 16):
        raise LiftTypeError(f"vector width must be 2, 3, 4, 8 or 16, not {k}", loc=user_loc())
    return _fixed(n.AsVector(k), f"as_vector({k})", label, args)


def value(v: Any, t: Type) -> Literal:
    """A constant of type `t`: a scalar, or the scalar `v` in every lane or element of a
    vector or array type (LIFT's `Value`), e.g. `value(0.0, Array(Float, 4))`."""
    b = base_type(t)
    scal = b.scalar if isinstance(b, VectorType) else b
    if not isinstance(scal, ScalarType):
        raise LiftTypeError(f"value needs a scalar, vector or array of them, got {t!r}", loc=user_loc())
    lit = literal(v, scal)
    return lit if t is scal else Literal(lit.value, t, loc=lit.loc)


join = Deferred(lambda ts, lab, loc: n.Join(label=lab, loc=loc), "join", loc=None)
transpose = Deferred(lambda ts, lab, loc: n.Transpose(label=lab, loc=loc), "transpose", loc=None)
transpose_w = Deferred(lambda ts, lab, loc: n.TransposeW(label=lab, loc=loc), "transpose_w", loc=None)
as_scalar = Deferred(lambda ts, lab, loc: n.AsScalar(label=lab, loc=loc), "as_scalar", loc=None)


def _identity() -> Deferred:
    def make(ts: tuple[Type, ...], lab: str | None, loc: SourceLoc | None) -> n.FunDecl:
        p = Param(ts[0], "x", loc=loc)
        return Lambda((p,), p, label=lab, loc=loc)

    return Deferred(make, "id_layout", loc=user_loc())


# --------------------------------------------------------------- functions


def _wrapper(cls: type, name: str, f: Any, args: tuple[Any, ...], label: str | None, **extra: Any) -> Any:
    def make(ts: tuple[Type, ...], lab: str | None, loc: SourceLoc | None) -> Any:
        return cls(elaborate(f, ts), **extra, label=lab, loc=loc)

    return _higher(make, f"{name}({_name(f)})", label, args)


def let(f: Any, *args: Any, label: str | None = None) -> Any:
    """`let(lambda v: body) << x`: evaluate `x` once and bind it to `v`."""
    return _wrapper(n.Let, "let", f, args, label)


def to_global(f: Any, *args: Any, label: str | None = None) -> Any:
    """`f` writes its result to global memory."""
    return _wrapper(n.ToGlobal, "to_global", f, args, label)


def to_local(f: Any, *args: Any, label: str | None = None) -> Any:
    """`f` writes its result to local memory."""
    return _wrapper(n.ToLocal, "to_local", f, args, label)


def to_private(f: Any, *args: Any, label: str | None = None) -> Any:
    """`f` writes its result to private memory."""
    return _wrapper(n.ToPrivate, "to_private", f, args, label)


def ocl_kernel(f: Any, *args: Any, label: str | None = None) -> Any:
    """`f` becomes a separate OpenCL kernel."""
    return _wrapper(n.OclKernel, "ocl_kernel", f, args, label)


def vectorise(f: Any, k: int, *args: Any, label: str | None = None) -> Any:
    """Apply a scalar function to each lane of width-`k` vectors (tuples of vectors: a function
    of tuples of scalars, lane by lane)."""
    if k not in (2, 3, 4, 8, 16) or isinstance(k, bool):
        raise LiftTypeError(f"vectorise needs a vector width of 2, 3, 4, 8 or 16, got {k!r}", loc=user_loc(), got=k)

    def make(ts: tuple[Type, ...], lab: str | None, loc: SourceLoc | None) -> n.FunDecl:
        scal = []
        for t in ts:
            if isinstance(t, VectorType) and t.n == k:
                scal.append(t.scalar)
            elif isinstance(t, TupleType) and t.elems and all(isinstance(e, VectorType) and e.n == k for e in t.elems):
                scal.append(cast(Any, TupleType(tuple(cast(VectorType, e).scalar for e in t.elems))))  # lanes of tuples
            else:
                raise LiftTypeError(f"vectorise(_, {k}) expects vectors (or tuples of vectors) of width {k}, got {t}",
                                    loc=loc, got=t)
        return n.Vectorise(elaborate(f, scal), k, label=lab, loc=loc)

    d = Deferred(make, f"vectorise({_name(f)}, {k})", label=label, loc=user_loc(), arity=arity_of(f))
    return apply(d, args, label=label) if args else d


def iterate(k: int, f: Any, *args: Any, label: str | None = None) -> Any:
    """Apply `f` `k` times; `f` may change the outer array length (e.g. halve it)."""
    if not isinstance(k, int) or k < 0:
        raise LiftTypeError(f"iterate count must be an int >= 0, got {k!r}", loc=user_loc())

    def make(ts: tuple[Type, ...], lab: str | None, loc: SourceLoc | None) -> n.FunDecl:
        return n.Iterate(k, elaborate(f, [generalise_outer(ts[0])]), label=lab, loc=loc)

    return _higher(make, f"iterate({k}, {_name(f)})", label, args)


def fun(param_types: Sequence[Type] | Type, body: Callable[..., Any], *, name: str | None = None,
        label: str | None = None) -> Lambda:
    """A program: `fun([Array(Float, N)], lambda x: map(f) << x)`."""
    if isinstance(param_types, Type):
        param_types = [param_types]
    if not isinstance(param_types, (list, tuple)):
        raise LiftTypeError(f"fun needs a list of parameter types, got {param_types!r}", loc=user_loc())
    for t in param_types:
        if not isinstance(t, Type):
            raise LiftTypeError(f"fun parameter types must be LIFT types, got {t!r}", loc=user_loc())
    if not callable(body):
        raise LiftTypeError(f"fun needs a callable body, got {body!r}", loc=user_loc())
    lam = elaborate(body, list(param_types))
    if not isinstance(lam, Lambda):
        p = tuple(Param(t, f"x{i}") for i, t in enumerate(param_types))
        lam = Lambda(p, apply(lam, p))
    return dataclasses.replace(lam, label=label or name, loc=lam.loc or user_loc())


# ------------------------------------------------------------------- macros


def map_nd(k: int, f: Any, *args: Any, label: str | None = None) -> Any:
    """`map(map(...(f)))`, k levels deep."""
    _check_rank(k)
    g = f
    for _ in range(k - 1):
        g = map(g)
    return map(g, *args, label=label)


def zip_nd(k: int, *xs: Any, label: str | None = None) -> Expr:
    """Zip k-dimensional arrays element-wise over their k outer dimensions."""
    _check_rank(k)
    if k == 1:
        return zip(*xs, label=label)
    m = len(xs)
    return cast(Expr, map(lambda t: zip_nd(k - 1, *[t[i] for i in builtins.range(m)]), label=label) << zip(*xs))


def split_nd(*sizes: Any, label: str | None = None) -> Deferred:
    """`split(m1) << ... << split(mk)`: `[T]n -> [...[[T]mk]...]m1]n/(m1*...*mk)`."""
    if not sizes:
        raise LiftTypeError("split_nd needs at least one size", loc=user_loc())
    g: Any = split(sizes[-1])
    for s in reversed(sizes[:-1]):
        g = split(s) << g
    return cast(Deferred, _labelled(g, label))


def join_nd(k: int, *args: Any, label: str | None = None) -> Any:
    """Flatten the k outer dimensions (k-1 joins)."""
    _check_rank(k)
    g: Any = _identity() if k == 1 else join
    for _ in range(k - 2):
        g = join << g
    g = _labelled(g, label)
    return apply(g, args) if args else g


def slide_nd(k: int, size: Any, step: Any, *args: Any, label: str | None = None) -> Any:
    """Slide a k-dimensional window; windows become the k inner dimensions."""
    _check_rank(k)
    sizes, steps = _per_dim(k, size, "size"), _per_dim(k, step, "step")
    g = _slide_nd(k, sizes, steps)
    g = _labelled(g, label)
    return apply(g, args) if args else g


def _slide_nd(k: int, sizes: list[Any], steps: list[Any]) -> Any:
    if k == 1:
        return slide(sizes[0], steps[0])
    inner = _slide_nd(k - 1, sizes[1:], steps[1:])
    # [n1][n2..] -> map(inner) -> slide -> [w1][s1][w2..wk][s2..sk]; move s1 after wk
    order = list(builtins.range(1, k)) + [0] + list(builtins.range(k, 2 * k - 1))
    return map(transpose_nd(*order)) << slide(sizes[0], steps[0]) << map(inner)


def pad_nd(k: int, left: Any, right: Any, value: Any = 0, *args: Any, mode: str = "constant",
           label: str | None = None) -> Any:
    """Pad the k outer dimensions (`left`/`right` an int or a k-tuple) with a constant or at a
    boundary `mode` ("clamp", "mirror", "wrap": see `pad`), as `numpy.pad` pads k axes:
    `pad_nd(2, 1, 1, mode="clamp") << img` is `numpy.pad(img, 1, mode="edge")`."""
    _check_rank(k)
    ls, rs = _per_dim(k, left, "left"), _per_dim(k, right, "right")
    g: Any = pad(ls[0], rs[0], value, mode=mode)
    inner: Any = None
    for d in builtins.range(k - 1, 0, -1):
        one = pad(ls[d], rs[d], value, mode=mode)
        inner = one if inner is None else map(inner) << one
    if inner is not None:
        g = map(inner) << g
    g = _labelled(g, label)
    return apply(g, args) if args else g


def transpose_nd(*order: int, label: str | None = None) -> Any:
    """Reorder dimensions: output dimension i is input dimension `order[i]`."""
    k = len(order)
    if sorted(order) != list(builtins.range(k)):
        raise LiftTypeError(f"transpose_nd needs a permutation of 0..{k - 1}, got {order}", loc=user_loc())
    cur = list(builtins.range(k))
    g: Any = None
    for i in builtins.range(k):
        j = cur.index(order[i])
        while j > i:  # swap dimensions j-1 and j
            step: Any = transpose
            for _ in builtins.range(j - 1):
                step = map(step)
            g = step if g is None else step << g
            cur[j - 1], cur[j] = cur[j], cur[j - 1]
            j -= 1
    return _labelled(_identity() if g is None else g, label)


def take(m: Any, *args: Any, label: str | None = None) -> Any:
    """The first `m` elements (`pad` with a negative right amount)."""
    ms = as_size(m, "take count")

    def make(ts: tuple[Type, ...], lab: str | None, loc: SourceLoc | None) -> n.FunDecl:
        a = _array(ts[0], "take", loc)
        return n.Pad(as_size(0, ""), ms - a.size, 0, label=lab, loc=loc)

    d = Deferred(make, f"take({m})", label=label, loc=user_loc())
    return apply(d, args, label=label) if args else d


def _labelled(g: Any, label: str | None) -> Any:
    if label is None or not isinstance(g, Deferred):
        return g
    return Deferred(g.build, g.text, label=label, loc=user_loc())


def _per_dim(k: int, v: Any, what: str) -> list[Any]:
    if isinstance(v, (tuple, list)):
        if len(v) != k:
            raise LiftTypeError(f"{what} needs {k} values, got {len(v)}", loc=user_loc())
        return list(v)
    return [v] * k


MAX_RANK = 64  # more nested dimensions than any program has; a bigger k is a mistake, not a request


def _check_rank(k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_RANK:
        raise LiftTypeError(f"the number of dimensions must be an int in 1..{MAX_RANK}, got {k!r}",
                            loc=user_loc())


__all__ = [
    "map", "map_seq", "map_glb", "map_wrg", "map_lcl", "reduce", "reduce_seq", "reduce_atomic", "zip", "get",
    "iota", "split", "join", "slide", "pad", "transpose", "transpose_w", "as_vector", "as_scalar",
    "value", "let", "to_global", "to_local", "to_private", "ocl_kernel", "vectorise",
    "iterate", "fun", "map_nd", "zip_nd", "split_nd", "join_nd", "slide_nd", "pad_nd",
    "transpose_nd", "take",
]
