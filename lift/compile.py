"""The compilation pipeline, the one module that imports every stage.

`compile`: typecheck -> (rewrite-point and mapping choices: later stages; `choices` is kept
on the result) -> default lowering of a high-level program -> code generation -> `Program`.
"""

from __future__ import annotations

from typing import Any

from lift.ir.nodes import Node
from lift.lower import is_high_level, lower
from lift.program import Program
from lift.runtime import CacheDir
from lift.typecheck import typecheck

OneSize = int | tuple[int, ...] | None
SizeArg = OneSize | dict[str, OneSize]  # one size, or one per kernel name


def compile(expr: Node, device: Any = None, choices: Any = None, local_size: SizeArg = None,
            global_size: SizeArg = None, *, cache_dir: CacheDir = None,
            options: tuple[str, ...] = ()) -> Program:
    """Compile `expr` for `device` and build it: `lift.compile(dot)(x, y) == lift.interpret(dot, x, y)`.

    `local_size` / `global_size`: one size for the kernels it fits, or a dict of sizes per
    kernel name (see `lift.codegen.generate`)."""
    from lift.codegen import generate  # lazily: the runtime imports without the code generator

    typecheck(expr)
    lowered = lower(expr) if is_high_level(expr) else expr
    plan = generate(lowered, local_size=local_size, global_size=global_size)
    return Program(plan, device=device, choices=choices, node=expr, cache_dir=cache_dir, options=options)

