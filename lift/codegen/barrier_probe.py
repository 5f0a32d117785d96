"""The probe of a kernel for barrier insertion: its C AST read as accesses, loops and barrier places.

Code generation runs once with `lift.barriers.candidates`, which puts a marked barrier after
every IR node; this module reads that C AST back as a `lift.barriers.graph.Probe`:
`For` loops become loops (kind, dimension, count, single trip), every read and write of a
local or global memory becomes an access with its index range (vector accesses cover their
lanes), in evaluation order (a statement's reads, then its write), and every marked barrier
becomes a point after the IR node it names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from lift.arith import Arith, Cst
from lift.barriers import PROBE_FENCE, probe_key
from lift.barriers.graph import Acc, Item, Loop, LoopInfo, Point, Probe
from lift.codegen.c_ast import (
    Assign,
    AtomicCombine,
    Barrier,
    Block,
    CBin,
    CCall,
    CCompound,
    CCond,
    CExpr,
    CIndex,
    CLane,
    CMember,
    CStmt,
    CVecLoad,
    Decl,
    For,
    If,
    VecStore,
)
from lift.codegen.printer import expr
from lift.ir.paths import Path
from lift.views import Mem

_DIM = re.compile(r"\((\d+)\)")


def probe(body: Block, uses: Mapping[str, Mem], loops: Mapping[Path, object], global_size: tuple[Arith, ...],
          local_size: tuple[Arith, ...] | None) -> Probe:
    """The probe of a kernel body generated with candidate barriers.

    `uses`: the memories the kernel touches, by name; `loops`: the loop variable of each
    map or reduction, by the path of its IR node (`KernelGen.loopvars`)."""
    paths = {getattr(v, "name", None): p for p, v in loops.items()}
    reader = _Reader(uses, paths)
    return Probe(tuple(reader.block(body)), global_size, local_size)


class _Reader:
    def __init__(self, uses: Mapping[str, Mem], paths: Mapping[str | None, Path]) -> None:
        self.uses = uses
        self.paths = paths

    def block(self, b: Block) -> list[Item]:
        out: list[Item] = []
        for s in b.stmts:
            out += self.stmt(s)
        return out

    def stmt(self, s: CStmt) -> list[Item]:
        match s:
            case For():
                return [Loop(self.loop(s), tuple(self.block(s.body)))]
            case Block():
                return self.block(s)
            case If(body=body):  # accesses under a condition: analysed as if unconditional
                return self.block(body)
            case Barrier(fence, comment) if fence == PROBE_FENCE:
                return [Point(probe_key(comment))]
            case Assign(lhs, rhs, comment):
                return self.reads(rhs, comment) + self.target(lhs, comment)
            case Decl(init=init, comment=comment) if init is not None:
                return self.reads(init, comment)
            case VecStore(n, value, base, offset):
                return self.reads(value, "") + self.acc(base, offset, n, True, f"vstore{n}", "")
            case AtomicCombine(value=value, comment=comment):  # atomics do not race; nothing in the
                return self.reads(value, comment)  # kernel reads the result (lift.allocation.check_atomic)
        return []

    def loop(self, s: For) -> LoopInfo:
        init = expr(s.init)
        m = _DIM.search(init)
        dim = int(m.group(1)) if m and s.kind != "seq" else 0
        return LoopInfo(s.var, s.kind, dim, s.bound, s.once, s.guard, s.comment, self.paths.get(s.var.name))

    def target(self, lhs: CExpr, where: str) -> list[Item]:
        """The write of an assignment (through struct fields and lanes)."""
        while isinstance(lhs, CMember | CLane):
            lhs = lhs.e
        if isinstance(lhs, CIndex):
            return self.index(lhs, True, where)
        return []

    def reads(self, e: CExpr, where: str) -> list[Item]:
        """The memory reads of an expression, left to right."""
        out: list[Item] = []
        _walk(e, (), lambda x, when: out.extend(self.read(x, where, when)))
        return out

    def read(self, e: CExpr, where: str, when: tuple = ()) -> list[Item]:
        if isinstance(e, CIndex):
            return self.index(e, False, where, when)
        if isinstance(e, CVecLoad):
            return self.acc(e.base, e.offset, e.n, False, expr(e), where, when)
        return []

    def index(self, e: CIndex, write: bool, where: str, when: tuple = ()) -> list[Item]:
        width = _width(e.cast) if e.cast else 1
        lo = e.index * width if e.cast else e.index
        return self.acc(e.base, lo, width, write, expr(e), where, when)

    def acc(self, base: str, lo: Arith, width: int, write: bool, text: str, where: str,
            when: tuple = ()) -> list[Item]:
        m = self.uses.get(base)
        space = m.space if m is not None else "global"
        if space == "private":
            return []
        return [Acc(base, space, write, lo if isinstance(lo, Arith) else Cst(lo), width, text, where, when)]


def _walk(e: CExpr, when: tuple, visit: Callable[[CExpr, tuple], None]) -> None:
    """Visit the memory reads of `e` in evaluation order, with the padding conditions they are under."""
    match e:
        case CIndex() | CVecLoad():
            visit(e, when)
        case CMember(x) | CLane(x):
            _walk(x, when, visit)
        case CCall(_, args) | CCompound(_, args):
            for a in args:
                _walk(a, when, visit)
        case CBin(_, left, right):
            _walk(left, when, visit)
            _walk(right, when, visit)
        case CCond(conds, then, orelse):
            _walk(then, when + tuple(conds), visit)
            _walk(orelse, when, visit)


def _width(cast: str) -> int:
    m = re.search(r"(\d+)$", cast)
    return int(m.group(1)) if m else 1


__all__ = ["probe"]
