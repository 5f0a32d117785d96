"""Streaming stores: a program's results written with non-temporal vector stores.

A kernel that writes a large result once (axpy, a stencil, a copy) moves, with ordinary
stores, three lines per line written: the line is read into the cache first (write-allocate),
then written back. A non-temporal store writes the whole line to memory without reading it;
on the 2-core Zen 1 here a float16 copy kernel went from 12 to 18 GB/s. It pays for data
nothing reads soon, so only the program's *results* (buffers of role "output", read next by
the host) get it, never a temporary the next kernel reads from the cache, and only aligned
vector stores (`((global floatN*)out)[i] = v`), whose lines are filled whole by consecutive
work-items.

The kernel source stays device-independent: `LIFT_STREAM_STORE(p, v)` is a macro that is
clang's `__builtin_nontemporal_store` where the OpenCL C compiler is clang for x86-64 (PoCL's
CPU device) and `*p = v` on every other compiler or target (GPU drivers, ARM). Ordering: an
x86 non-temporal store is weakly ordered (write-combining); it is made visible to other cores
by the locked instructions with which PoCL's worker threads finish a kernel (Intel SDM vol. 3,
8.2.5: a locked operation waits for all buffered writes to drain to memory; AMD's manual says
the same of locked instructions and write-combining buffers), before the host reads the result;
OpenCL orders nothing between work-groups within a kernel, and an output buffer the kernel
also reads keeps its plain stores.
"""

from __future__ import annotations

import re
from collections.abc import Set

from lift.codegen.c_ast import Assign, Block, CIndex, CStmt, For, If, KernelDef, StreamStore, walk_stmts
from lift.codegen.printer import print_kernel

MACRO = """#if defined(__clang__) && defined(__x86_64__)
#define LIFT_STREAM_STORE(p, v) __builtin_nontemporal_store((v), (p))
#else
#define LIFT_STREAM_STORE(p, v) (*(p) = (v))
#endif"""


def streamed(kdef: KernelDef, outputs: Set[str]) -> KernelDef:
    """`kdef` with its aligned vector stores to `outputs` streamed, when the kernel reads none of
    those buffers (in place: the kernel's statements are fresh from code generation)."""
    stores = [s.lhs.base for s in walk_stmts(kdef.body) if _vector_store(s, outputs)]
    written = {b for b in set(stores) if _mentions(kdef, b) == stores.count(b) + 1}  # + its parameter
    if written:
        _rewrite(kdef.body, written)
    return kdef


def uses_stream(kdef: KernelDef) -> bool:
    """Whether the kernel has a streaming store (its source needs `MACRO`)."""
    return any(isinstance(s, StreamStore) for s in walk_stmts(kdef.body))


def _vector_store(s: CStmt, outputs: Set[str]) -> bool:
    return (isinstance(s, Assign) and isinstance(s.lhs, CIndex) and s.lhs.base in outputs
            and s.lhs.space == "global" and s.lhs.cast is not None)


def _mentions(kdef: KernelDef, name: str) -> int:
    """How often the buffer `name` appears in the kernel's printed text, comments left out (its
    parameter, every read and every write: whatever kind of statement or expression holds it)."""
    text = "\n".join(line.split("//", 1)[0] for line in print_kernel(kdef).splitlines())
    return len(re.findall(rf"\b{re.escape(name)}\b", text))


def _rewrite(block: Block, written: Set[str]) -> None:
    for k, s in enumerate(block.stmts):
        if isinstance(s, Assign) and isinstance(s.lhs, CIndex) and _vector_store(s, written):
            block.stmts[k] = StreamStore(s.lhs, s.rhs, s.comment)
        elif isinstance(s, Block):
            _rewrite(s, written)
        elif isinstance(s, For | If):
            _rewrite(s.body, written)


__all__ = ["MACRO", "streamed", "uses_stream"]
