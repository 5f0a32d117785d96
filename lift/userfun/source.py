"""Finding a user function's source: the AST of its def or lambda (several lambdas on a line are told
apart by column), its real file and lines, and the environment its free names resolve in."""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lift.errors import SourceLoc, UserFunError
from lift.types import ArrayType, ScalarType, TupleType, Type, VectorType
from lift.userfun.arrays import array_shape
from lift.userfun.ctypes import is_c_identifier


class SourceUnavailable(UserFunError):
    """The source of a user function cannot be found (it is then traced)."""


@dataclass(frozen=True)
class Source:
    """A user function's AST and the environment its free names resolve in."""

    fn: Callable[..., Any]
    node: ast.FunctionDef | ast.Lambda
    file: str
    params: tuple[str, ...]
    body: tuple[ast.stmt, ...]
    env: Mapping[str, Any]

def source_of(fn: Callable[..., Any]) -> Source:
    """The AST of `fn` (a def or a lambda, found in its file) and its free-name environment."""
    code = getattr(fn, "__code__", None)
    if code is None or not inspect.isfunction(fn):
        raise UserFunError(f"user functions must be Python functions or lambdas, not {type(fn).__name__}",
                           hint="write the body in OpenCL C with user_fun.c(...)")
    loc = SourceLoc(code.co_filename, code.co_firstlineno, code.co_name)
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    try:
        tree = ast.parse("".join(lines)) if lines else None
    except SyntaxError:
        tree = None
    node = _find_node(tree, code) if tree is not None else None
    if node is None:
        raise SourceUnavailable(f"the source of user function '{code.co_name}' is not available (defined in exec, "
                           "eval or an interactive prompt?)", loc=loc,
                           hint="define it in a file, or write the body in OpenCL C with user_fun.c(...)")
    env = dict(vars(builtins))
    env.update(fn.__globals__)
    for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            env[var] = cell.cell_contents
        except ValueError:  # an empty cell
            env.pop(var, None)
    args = node.args
    params = tuple(a.arg for a in args.posonlyargs + args.args)
    if isinstance(node, ast.Lambda):
        body: tuple[ast.stmt, ...] = (ast.copy_location(ast.Return(value=node.body), node.body),)
    else:
        body = tuple(node.body)
    return Source(fn, node, code.co_filename, params, body, env)


def _find_node(tree: ast.AST, code: Any) -> ast.FunctionDef | ast.Lambda | None:
    """The def or lambda in `tree` that compiled to `code` (several lambdas on a line: by column)."""
    first = code.co_firstlineno
    if code.co_name != "<lambda>":
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef) and n.name == code.co_name:
                if min([n.lineno] + [d.lineno for d in n.decorator_list]) == first:
                    return n
        return None
    names = code.co_varnames[: code.co_argcount]
    cands = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == first
             and tuple(a.arg for a in n.args.posonlyargs + n.args.args) == names]
    spots = [(p[0], p[2], p[1], p[3]) for p in code.co_positions()
             if None not in p and (p[0], p[2]) != (p[1], p[3])]

    def inside(n: ast.Lambda) -> bool:
        b = n.body
        lo, hi = (b.lineno, b.col_offset), (b.end_lineno, b.end_col_offset)
        return all(lo <= (l0, c0) and (l1, c1) <= hi for l0, c0, l1, c1 in spots)

    fits = [n for n in cands if inside(n)]
    fits.sort(key=lambda n: (n.body.end_lineno or 0, n.body.end_col_offset or 0))  # innermost first
    return fits[0] if fits else (cands[0] if len(cands) == 1 else None)


def check_signature(src: Source, in_types: Sequence[Type], name: str, out_type: Type | None) -> None:
    node, code = src.node, src.fn.__code__
    loc = SourceLoc(src.file, node.lineno, code.co_name)
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        raise UserFunError("user functions take positional parameters only (no *args, **kwargs or "
                           "keyword-only parameters)", loc=loc)
    if len(src.params) != len(in_types):
        raise UserFunError(f"user function '{code.co_name}' has {len(src.params)} parameters but "
                           f"{len(in_types)} input types were given", loc=loc,
                           expected=len(src.params), got=len(in_types))
    if not is_c_identifier(name):
        raise UserFunError(f"'{name}' is not a usable C function name", loc=loc)

    for t in in_types:
        if isinstance(t, ArrayType):
            array_shape(t, loc=loc)  # arrays of constant size are passed element by element
    for t in [*(t for t in in_types if not isinstance(t, ArrayType)), *([out_type] if out_type else [])]:
        if not isinstance(t, (ScalarType, VectorType, TupleType)):
            raise UserFunError(f"user functions take and return scalars, vectors and tuples, not {t}",
                               loc=loc)

