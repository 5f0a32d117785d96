"""`reduce(add) << map(mult) << zip(xs, ys)` in the precise mode: one matrix product in numpy.

In the precise (float64) mode the order of a float sum is free (the reference is compared within a
tolerance derived from the reduction length), so summing the products of two arrays' elements along
the reduced axis is a contraction over the batch axes: the axes along which only `xs` varies become
rows, those along which only `ys` varies columns, those along which both vary a batch, and numpy
(BLAS) multiplies the matrices. A dot product, gemv and matmul (any nesting of maps around the
reduction) all take this path; whatever does not match it takes the general fold.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lift.interpret.twins import monoid
from lift.interpret.values import Zipped
from lift.ir import nodes as n
from lift.ir.nodes import FunCall, FunDecl, Lambda, Param


def is_product(h: FunDecl) -> bool:
    """`h` is `p => mult(get(0) << p, get(1) << p)` with `mult` a product user function."""
    if not (isinstance(h, Lambda) and len(h.params) == 1 and isinstance(h.body, FunCall)):
        return False
    p, body = h.params[0], h.body
    if monoid(body.f) != "mult" or len(body.args) != 2:
        return False
    return all(isinstance(a, FunCall) and isinstance(a.f, n.Get) and a.f.i == k and len(a.args) == 1
               and isinstance(a.args[0], Param) and a.args[0].id == p.id for k, a in enumerate(body.args))


def contract(acc: Any, ys: Any, d: int) -> np.ndarray | None:
    """`acc + sum_k x[..., k] * y[..., k]` over the reduced axis `d` of the float64 pair `ys`, or None
    when `ys` is not a pair of float64 arrays of scalars (the caller folds it the general way)."""
    if not (isinstance(ys, Zipped) and ys.ndim == 1 and len(ys.parts) == 2):
        return None
    x, y = (np.asarray(p) for p in ys.parts)
    if not (x.dtype == y.dtype == np.float64 and x.ndim == y.ndim == d + 1):
        return None
    b, i, j = [], [], []  # batch axes along which both, only x, only y vary
    for ax in range(d):
        (b if x.shape[ax] > 1 and y.shape[ax] > 1 else i if x.shape[ax] > 1 else j if y.shape[ax] > 1
         else []).append(ax)
    m = x.shape[d]
    size = [int(np.prod([x.shape[a] if a in i or a in b else y.shape[a] for a in axes], dtype=np.int64))
            for axes in (b, i, j)]
    xm = np.moveaxis(x, b + i + [d], range(len(b + i) + 1))  # (b..., i..., k, 1...)
    ym = np.moveaxis(y, b + [d] + j, range(len(b + j) + 1))  # (b..., k, j..., 1...)
    xm = xm.reshape(size[0], size[1], m)
    ym = ym.reshape(size[0], m, size[2])
    if size[1] == size[2] == 1:
        r = np.einsum("bk,bk->b", xm[:, 0], ym[:, :, 0])
    else:
        r = np.matmul(xm, ym)
    # back to the batch axes in their order, size 1 where neither varies
    shape = [x.shape[a] for a in b] + [x.shape[a] for a in i] + [y.shape[a] for a in j]
    r = r.reshape(shape)
    order = b + i + j
    r = np.moveaxis(r, range(len(order)), [sorted(order).index(a) for a in order])
    full = tuple(x.shape[a] if a in b or a in i else y.shape[a] if a in j else 1 for a in range(d))
    return np.add(acc, r.reshape(full))
