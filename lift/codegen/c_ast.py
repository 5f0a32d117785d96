"""A small OpenCL C AST: just what the code generator emits, printed by `printer.py`.

Index expressions stay `lift.arith` values (`CInt`, `CIndex.index`, `For.bound`), so tests
compare them as arithmetic, not as strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lift.arith import Arith, Cst, Var

# ----------------------------------------------------------------- expressions


class CExpr:
    """Base of C expressions."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class CRaw(CExpr):
    """C text used as is: a literal, `get_global_id(0)`."""

    text: str


@dataclass(frozen=True, slots=True)
class CVar(CExpr):
    name: str


@dataclass(frozen=True, slots=True)
class CInt(CExpr):
    """An integer expression."""

    value: Arith


@dataclass(frozen=True, slots=True)
class CIndex(CExpr):
    """`base[index]`; with `cast`, `((space cast*)base)[index]` (a vector through a scalar pointer)."""

    base: str
    index: Arith
    space: str = "global"
    cast: str | None = None


@dataclass(frozen=True, slots=True)
class CVecLoad(CExpr):
    """`vloadN(0, base + offset)`: an unaligned vector read."""

    n: int
    base: str
    offset: Arith


@dataclass(frozen=True, slots=True)
class CMember(CExpr):
    """`e._k`, component `k` of a tuple struct."""

    e: CExpr
    k: int


@dataclass(frozen=True, slots=True)
class CLane(CExpr):
    """`e.sK`, a constant lane of a vector."""

    e: CExpr
    k: int


@dataclass(frozen=True, slots=True)
class CCall(CExpr):
    fn: str
    args: tuple[CExpr, ...]


@dataclass(frozen=True, slots=True)
class CCond(CExpr):
    """`(0 <= c && c < hi && ...) ? then : orelse`."""

    conds: tuple[tuple[Arith, bool, Arith | None], ...]
    then: CExpr
    orelse: CExpr


@dataclass(frozen=True, slots=True)
class CBin(CExpr):
    """`(left op right)`, an arithmetic operator on two values (vectors: lane by lane)."""

    op: str
    left: CExpr
    right: CExpr


@dataclass(frozen=True, slots=True)
class CCompound(CExpr):
    """A struct literal `(T){a, b}` or a vector literal `(float4)(a, b, c, d)`."""

    ctype: str
    parts: tuple[CExpr, ...]
    vector: bool = False


# ------------------------------------------------------------------ statements


class CStmt:
    """Base of C statements."""

    __slots__ = ()


@dataclass(slots=True)
class Block(CStmt):
    stmts: list[CStmt] = field(default_factory=list)

    def add(self, s: CStmt) -> None:
        self.stmts.append(s)


@dataclass(frozen=True, slots=True)
class Decl(CStmt):
    """`space ctype name[size] = init;` (size None: a scalar variable)."""

    ctype: str
    name: str
    init: CExpr | None = None
    space: str = "private"
    size: Arith | None = None
    comment: str = ""


@dataclass(frozen=True, slots=True)
class Assign(CStmt):
    lhs: CExpr
    rhs: CExpr
    comment: str = ""


@dataclass(frozen=True, slots=True)
class VecStore(CStmt):
    """`vstoreN(value, 0, base + offset)`: an unaligned vector write."""

    n: int
    value: CExpr
    base: str
    offset: Arith


@dataclass(frozen=True, slots=True)
class StreamStore(CStmt):
    """`LIFT_STREAM_STORE(&target, value)`: an aligned vector write of a program's result that
    nothing in the program reads again, printed as a non-temporal store where the OpenCL C
    compiler is clang for x86-64 (PoCL's CPU device: the line goes to memory without being read
    first, as STREAM's fastest kernels write) and as a plain assignment elsewhere
    (`lift.codegen.stream`)."""

    target: CIndex
    value: CExpr
    comment: str = ""


@dataclass(slots=True)
class For(CStmt):
    """`for (int var = init; var < bound; var += step)`; `once`: a single trip, no loop.

    `kind` is glb, wrg, lcl or seq; `comment` names the IR node (with its label)."""

    var: Var
    init: CExpr
    bound: Arith
    step: CExpr
    body: Block
    comment: str
    kind: str
    once: bool = False
    guard: bool = True
    unroll: bool = False  # `#pragma unroll`: a short constant loop, e.g. over a private block


UNROLL = 16  # sequential loops of at most this many constant trips are unrolled


def unrolled(count: Arith) -> bool:
    """Whether a sequential loop of `count` trips is unrolled (so private arrays it indexes can
    live in registers: register blocking)."""
    return isinstance(count, Cst) and count.value <= UNROLL


@dataclass(slots=True)
class If(CStmt):
    """`if (cond) { body }` (a work-item's share of a kernel, e.g. one component of a result tuple)."""

    cond: CExpr
    body: Block
    comment: str = ""


@dataclass(frozen=True, slots=True)
class Barrier(CStmt):
    fence: str
    comment: str = ""


@dataclass(frozen=True, slots=True)
class AtomicCombine(CStmt):
    """`fn(&target, value);`: an atomic read-modify-write of `target` (`lift.codegen.atomic`);
    with `guard`, `if (guard) fn(&target, value);`."""

    fn: str
    target: CExpr
    value: CExpr
    guard: str | None = None
    comment: str = ""


@dataclass(frozen=True, slots=True)
class Comment(CStmt):
    text: str


# ---------------------------------------------------------------------- units


@dataclass(frozen=True, slots=True)
class KParam:
    """A kernel parameter: `qual ctype name` (qual: "global", "local" or "" for ints)."""

    ctype: str
    name: str
    qual: str = ""
    const: bool = False


@dataclass(slots=True)
class KernelDef:
    name: str
    params: list[KParam]
    body: Block
    comment: str = ""
    index_type: str = "int"  # loop variables: "long" where an index can pass 2^31 - 1 (codegen/width.py)


@dataclass(slots=True)
class Unit:
    """A program: helpers, struct typedefs, user functions and kernels, in print order."""

    helpers: str
    structs: list[str]
    functions: list[str]
    kernels: list[KernelDef]


def walk_stmts(s: CStmt):
    """Every statement under `s`, pre-order."""
    yield s
    if isinstance(s, Block):
        for x in s.stmts:
            yield from walk_stmts(x)
    elif isinstance(s, For | If):
        yield from walk_stmts(s.body)


__all__ = [
    "CExpr", "CRaw", "CVar", "CInt", "CIndex", "CVecLoad", "CMember", "CLane", "CCall", "CCond",
    "CBin", "CCompound", "CStmt", "Block", "Decl", "Assign", "VecStore", "StreamStore", "For", "If", "Barrier",
    "Comment", "AtomicCombine",
    "KParam", "KernelDef", "Unit", "walk_stmts", "UNROLL", "unrolled",
]
