"""Short loops unrolled by their size: a sequential loop of constant trip count whose whole
unrolled body stays small (a stencil's or a short convolution's taps, a window's reduction).

`make_loop` marks loops of at most `c_ast.UNROLL` trips (register blocks); this pass, run on a
finished kernel, also marks a longer constant loop when `trips x statements` of its body is at
most `SHORT_WORK`. Why: on a CPU OpenCL device (PoCL) each work-item's body is vectorised across
work-items only when it is straight-line code; a loop left in it keeps the work-group's loop
scalar. A 17-tap correlation over 4M floats (`map(win => reduce(add, 0) << map(mult) << zip(win,
w)) << slide(17, 1) << x`) ran 40 ms with its tap loop and 3.0 ms unrolled (Zen 3, PoCL 3.0,
benchmarks/seeds.py conv1d_17). The unrolled body computes the same operations in the same order.
"""

from __future__ import annotations

from typing import cast

from lift.arith import Cst
from lift.codegen.c_ast import Barrier, Block, Comment, CRaw, CStmt, For, If, KernelDef, walk_stmts

SHORT_TRIPS = 64  # the longest loop unrolled for its size
SHORT_WORK = 64  # the most statements the unrolled loop may become


def short_loops_unrolled(kdef: KernelDef) -> KernelDef:
    """`kdef` with its small constant sequential loops marked for unrolling (in place: the
    kernel's statements are fresh from code generation)."""
    for s in walk_stmts(kdef.body):
        if isinstance(s, For) and _short(s):
            s.unroll = True
    return kdef


def _short(loop: For) -> bool:
    if loop.unroll or loop.once or loop.kind != "seq" or not _counted(loop):
        return False
    trips = cast(Cst, loop.bound).value
    work = _work(loop.body)
    return trips <= SHORT_TRIPS and work is not None and trips * work <= SHORT_WORK


def _counted(loop: For) -> bool:
    """`for (v = 0; v < constant; v++)`."""
    return isinstance(loop.bound, Cst) and isinstance(loop.init, CRaw) and loop.init.text == "0" and \
        isinstance(loop.step, CRaw) and loop.step.text == "1"


def _work(s: CStmt) -> int | None:
    """How many statements `s` becomes with its unrolled loops unrolled; None when it holds a loop
    that stays a loop or a barrier."""
    if isinstance(s, Block):
        total = 0
        for x in s.stmts:
            w = _work(x)
            if w is None:
                return None
            total += w
        return total
    if isinstance(s, For):
        if not (s.unroll and _counted(s)):
            return None
        inner = _work(s.body)
        return None if inner is None else cast(Cst, s.bound).value * inner
    if isinstance(s, If):
        return _work(s.body)
    if isinstance(s, Barrier):
        return None
    return 0 if isinstance(s, Comment) else 1


__all__ = ["short_loops_unrolled", "SHORT_TRIPS", "SHORT_WORK"]
