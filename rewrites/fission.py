"""The kernel-fission rewrite point `fission` (thesis 6.2.5.4, Listing 6.9).

    f << g << x  ->  ocl_kernel(v => f << v) << ocl_kernel(s => g << s) << x

`g` (the first function computed) and `f` each become an OpenCL kernel; the result of `g`
is materialised in global memory between them. Built from the `ocl_kernel_intro` rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

from lift.ir.layoutfun import computes
from lift.ir.nodes import Expr, FunCall, FunDecl, Literal, node
from lift.ir.registry import has
from lift.rules import ocl_kernel_intro

from .point import Nested, RewritePoint, constructor


@node
class Fission(RewritePoint):
    """`fission(lambda x: f << g << x)`: compute `g` and `f` in separate kernels (Listing 6.9)."""

    f: FunDecl
    kind: ClassVar[str] = "fission"

    def rewrite(self, call: Any, params: Mapping[str, Any], nested: Nested) -> Any:
        if not isinstance(call, FunCall) or has("kernel", call.f):
            return f"expects f << g << x, got {call}"
        inner = [i for i, a in enumerate(call.args) if isinstance(a, FunCall) and computes(a)]
        if len(inner) != 1 or not computes(call.f):
            return "expects one computing function applied to the result of another (f << g << x)"
        k = inner[0]
        g_call = cast(FunCall, call.args[k])  # inner: the computing calls
        outer = ocl_kernel_intro.apply(call, arg=(k + 1,))
        data = [i for i, a in enumerate(g_call.args) if not isinstance(a, Literal)]
        if len(data) != 1:
            return "the first function must take one array argument"
        first = ocl_kernel_intro.apply(g_call, arg=(data[0] + 1,))
        return FunCall(cast(FunCall, outer).f, (cast(Expr, first),))


fission = constructor(Fission, "fission")

__all__ = ["Fission", "fission"]
