"""The argument of a function application in kernel generation (`lift.codegen.kernel.KernelGen.apply`)."""

from __future__ import annotations

from dataclasses import dataclass

from lift.ir.nodes import Expr
from lift.ir.paths import Path
from lift.types import Type
from lift.views import View


@dataclass
class Arg:
    """An argument: an expression to generate at `path`, or an already available `view`."""

    type: Type
    expr: Expr | None = None
    path: Path | None = None
    view: View | None = None


__all__ = ["Arg"]
