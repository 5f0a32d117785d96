"""The compilation pipeline, the one module that imports every stage.

`compile`: typecheck -> (rewrite-point and mapping choices: later stages; `choices` is kept
on the result) -> default lowering of a high-level program -> code generation -> `Program`.
"""

from __future__ import annotations

from typing import Any

from lift.ir import nodes as n
from lift.ir.nodes import Node
from lift.ir.paths import walk
from lift.program import Program
from lift.runtime import CacheDir
from lift.typecheck import typecheck

SizeArg = int | tuple[int, ...] | None


def compile(expr: Node, device: Any = None, choices: Any = None, local_size: SizeArg = None,
            global_size: SizeArg = None, *, cache_dir: CacheDir = None,
            options: tuple[str, ...] = ()) -> Program:
    """Compile `expr` for `device` and build it: `lift.compile(dot)(x, y) == lift.interpret(dot, x, y)`."""
    from lift.codegen import generate  # lazily: the runtime imports without the code generator

    typecheck(expr)
    lowered = _lower(expr) if is_high_level(expr) else expr
    plan = generate(lowered, local_size=_dims(local_size), global_size=_dims(global_size))
    return Program(plan, device=device, choices=choices, node=expr, cache_dir=cache_dir, options=options)


def is_high_level(expr: Node) -> bool:
    """Whether `expr` has a `reduce`, or a `map` that computes (a map of layout patterns is a view)."""
    return any(isinstance(node, n.Reduce) or (isinstance(node, n.Map) and _computes(node.f))
               for _, node in walk(expr))


def _computes(f: Node) -> bool:
    """Whether `f` computes: it calls a user function, reduces, or makes a constant."""
    return any(isinstance(node, n.UserFun | n.AbstractReduce | n.Literal) for _, node in walk(f))


def _lower(expr: Node) -> Node:
    from lift.lower import lower

    return lower(expr)


def _dims(size: SizeArg) -> tuple[int, ...] | None:
    return (size,) if isinstance(size, int) else size
