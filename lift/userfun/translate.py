"""Python user functions to OpenCL C (and to numpy), from their `ast`; a closed world.

    translate(lambda acc, x: acc + x, [Float, Float], name="add").c_source
    == "float add(float acc, float x) {\n  return acc + x;\n}\n"

Every construct the translator does not know is a `UserFunError` naming it and the user's line.
The translator is one `ast.NodeVisitor` built up in layers, each importing only the one before:
values (Val, Translation, typing rules) and source (the AST) -> emitter (state, emission, conversions)
-> arithmetic -> calls -> expressions -> statements (the finished `Translator`) -> this entry point.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from lift.errors import SourceLoc, UserFunError, user_loc
from lift.types import Type
from lift.userfun.ctypes import c_type, is_c_identifier, struct_decl, tuple_types
from lift.userfun.emitter import Retype
from lift.userfun.frozen import code_globals, remember
from lift.userfun.source import SourceUnavailable, check_signature, source_of
from lift.userfun.statements import Translator
from lift.userfun.trace import trace
from lift.userfun.values import Translation

__all__ = ["Translation", "translate", "translate_c", "c_type", "struct_decl", "infer_out_type"]


def translate(fn: Callable[..., Any], in_types: Sequence[Type], *, name: str,
              out_type: Type | None = None) -> Translation:
    """Translate the Python function or lambda `fn` over `in_types` into the C function `name`."""
    traced = False
    try:
        src = source_of(fn)
    except SourceUnavailable:
        src, traced = trace(fn, in_types), True  # defined at a prompt, in python -c or on stdin: trace it
    check_signature(src, in_types, name, out_type)
    if fn in _ACTIVE:
        chain = " -> ".join(f.__name__ for f in (*_ACTIVE[_ACTIVE.index(fn):], fn))
        raise UserFunError(f"user function '{fn.__name__}' calls itself ({chain}); recursion is not supported in "
                           "user functions", loc=SourceLoc(src.file, src.node.lineno, fn.__name__),
                           hint="write the recursion as a for loop over range(...)")
    _ACTIVE.append(fn)
    try:
        overrides: dict[str, Type] = {}
        for _ in range(64):
            try:
                tr = Translator(src, tuple(in_types), out_type, name, overrides).run()
                if traced:
                    remember(tr.np_fn, code_globals(fn))
                return tr
            except Retype as r:
                if overrides.get(r.key) == r.t:  # widened before, narrowed again since: no fixed point
                    what = "the result" if r.key.startswith("<") else f"variable '{r.key}'"
                    raise UserFunError(f"the type of {what} does not settle: it must be {r.t} here, and "
                                       "another statement keeps it narrower", expected=r.t,
                                       loc=SourceLoc(src.file, r.line or src.node.lineno, fn.__name__),
                                       hint="give the variable one type throughout (or use two names)") from None
                overrides[r.key] = r.t
        raise UserFunError("the types of this function's variables do not settle",
                           loc=SourceLoc(src.file, src.node.lineno, fn.__name__))
    finally:
        _ACTIVE.remove(fn)


_ACTIVE: list[Callable[..., Any]] = []  # the functions being translated (a call among them recurses)


def infer_out_type(fn: Callable[..., Any], in_types: Sequence[Type]) -> Type:
    """The result type of `fn` applied to `in_types`."""
    return translate(fn, in_types, name="user_fun").out_type


def translate_c(name: str, params: Sequence[str], body_c: str, in_types: Sequence[Type],
                out_type: Type) -> Translation:
    """A user function given as a raw OpenCL C body (`return a + b;`, or just an expression)."""
    loc = user_loc()
    for ident in (name, *params):
        if not is_c_identifier(ident):
            raise UserFunError(f"'{ident}' is not a usable C identifier (reserved or malformed)", loc=loc)
    if len(params) != len(in_types):
        raise UserFunError(f"user function '{name}' has {len(params)} parameters but {len(in_types)} "
                           "input types", loc=loc, expected=len(params), got=len(in_types))
    body = inspect.cleandoc(body_c)
    if ";" not in body and "return" not in body:
        body = f"return {body};"
    args = ", ".join(f"{c_type(t)} {p}" for p, t in zip(params, in_types))
    lines = "".join(f"  {line}\n" if line else "\n" for line in body.splitlines())
    source = f"{c_type(out_type)} {name}({args}) {{\n{lines}}}\n"
    return Translation(name, tuple(params), tuple(in_types), out_type, source,
                       tuple_types([*in_types, out_type]), None)

