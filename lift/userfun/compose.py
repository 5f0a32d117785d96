"""One user function for `f(.., g(..), ..)`, where both bodies are one C expression over scalars.

    fused(add, mult, 1) = (x, a, b) => x + (a * b)        (add(x, mult(a, b)), one C expression)

Why: OpenCL C contracts `a * b + c` into a fused multiply-add only within one expression
(FP_CONTRACT ON). Generated code calls each user function on its own (`add_v8(acc, mult_v8(a, b))`),
so LLVM keeps a multiply and an add: on PoCL/AVX2 the register-blocked matmul's inner loop had 16
vector operations where the hand-written kernel has 8 `vfmadd`s. The fused function's meaning is
the composition (its Python and numpy twins call f's and g's); a compiled contraction rounds once
instead of twice (within the usual float tolerance, as in every hand-written kernel).
"""

from __future__ import annotations

import re
from typing import Any

from lift.ir.nodes import UserFun
from lift.types import ScalarType
from lift.userfun.ctypes import c_type

_RETURN = re.compile(r"^[^{]*\{\s*return\s+([^;{}]*);\s*\}\s*$", re.S)
_FUSED: dict[tuple[UserFun, UserFun, int], UserFun | None] = {}


_BODY = re.compile(r"^[^{]*\{(.*)\}\s*$", re.S)
_LOCAL = re.compile(r"^\s*(?:const\s+)?\w+\s+(\w+)\s*=\s*([^;{}]*);\s*$")
_LAST = re.compile(r"^\s*return\s+([^;{}]*);\s*$")


def expression(u: UserFun) -> str | None:
    """The C expression `u` returns, when its body is `return <expr>;` over scalars calling nothing,
    or straight-line locals before it (`float _t0 = a * b; return _t0;`, as traced functions are
    written), each local replaced by its parenthesised value."""
    if u.deps or u.structs or not all(isinstance(t, ScalarType) for t in (*u.in_types, u.out_type)):
        return None
    m = _RETURN.match(u.c_source)
    if m:
        return m.group(1).strip()
    body = _BODY.match(u.c_source)
    lines = [ln for ln in (body.group(1).split("\n") if body else []) if ln.strip()]
    last = _LAST.match(lines[-1]) if lines else None
    if last is None:
        return None
    names: dict[str, str] = {}
    for ln in lines[:-1]:
        local = _LOCAL.match(ln)
        if local is None or local.group(1) in names or local.group(1) in u.params:
            return None
        names[local.group(1)] = f"({_renamed(local.group(2).strip(), names)})"
    return _renamed(last.group(1).strip(), names)


def _renamed(expr: str, names: dict[str, str]) -> str:
    """`expr` with its identifiers renamed at once (word boundaries, so `x` is not `x1`'s prefix)."""
    if not names:
        return expr
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in names) + r")\b")
    return pattern.sub(lambda m: names[m.group(1)], expr)


def fused(f: UserFun, g: UserFun, i: int) -> UserFun | None:
    """The user function `f` with its argument `i` computed by `g` (parameters: f's before `i`,
    g's, f's after `i`), as one C expression; None when a body is not a single expression or the
    types do not meet."""
    key = (f, g, i)
    if key not in _FUSED:
        _FUSED[key] = _fuse(f, g, i)
    return _FUSED[key]


def _fuse(f: UserFun, g: UserFun, i: int) -> UserFun | None:
    fe, ge = expression(f), expression(g)
    if fe is None or ge is None or not 0 <= i < len(f.in_types) or f.in_types[i] != g.out_type:
        return None
    gp = [f"{g.name}_{p}" for p in g.params]
    if set(gp) & set(f.params):
        return None
    params = (*f.params[:i], *gp, *f.params[i + 1:])
    in_types = (*f.in_types[:i], *g.in_types, *f.in_types[i + 1:])
    body = _renamed(fe, {f.params[i]: f"({_renamed(ge, dict(zip(g.params, gp)))})"})
    name = f"{f.name}_{g.name}"
    args = ", ".join(f"{c_type(t)} {p}" for p, t in zip(params, in_types))
    source = f"{c_type(f.out_type)} {name}({args}) {{\n  return {body};\n}}\n"
    k = len(g.params)

    def twin(fn_f: Any, fn_g: Any) -> Any:
        if fn_f is None or fn_g is None:
            return None

        def composed(*xs: Any) -> Any:
            return fn_f(*xs[:i], fn_g(*xs[i:i + k]), *xs[i + k:])

        return composed

    py = twin(f.py_fn, g.py_fn)
    if py is not None:
        py.__liftcl_raw_c__ = True  # vectorised by widening the C types
    return UserFun(name, params, in_types, f.out_type, source, (), py, twin(f.np_fn, g.np_fn))


__all__ = ["expression", "fused"]
