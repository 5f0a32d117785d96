"""Print the C AST as readable OpenCL C; every loop carries a comment naming its IR node."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from lift.arith import Arith, prove_nonneg, to_c
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
    CInt,
    CLane,
    CMember,
    Comment,
    CRaw,
    CStmt,
    CVar,
    CVecLoad,
    Decl,
    For,
    If,
    KernelDef,
    StreamStore,
    Unit,
    VecStore,
)

_IND = "  "


def _note(text: str) -> str:
    """`text` safe inside a `//` comment: a label is the user's text, and a newline (any line break
    C knows), a backslash (a line splice) or a control character would end the comment early and
    put the rest of it into the kernel; each becomes `?`."""
    return "".join(c if c.isprintable() and c != "\\" else "?" for c in text)


def print_unit(u: Unit) -> str:
    """The whole program text."""
    parts = [u.helpers.rstrip("\n")] if u.helpers else []
    parts += [s.rstrip("\n") for s in u.structs]
    parts += [f.rstrip("\n") for f in u.functions]
    parts += [print_kernel(k) for k in u.kernels]
    return "\n\n".join(p for p in parts if p) + "\n"


def print_kernel(k: KernelDef) -> str:
    params = ",\n    ".join(_param(p) for p in k.params)
    head = f"// {_note(k.comment)}\n" if k.comment else ""
    lines = [f"{head}kernel void {k.name}({params}) {{"]
    _block(k.body, 1, lines, k.index_type)
    lines.append("}")
    return "\n".join(lines)


def _param(p) -> str:
    if not p.qual:
        return f"{p.ctype} {p.name}"
    const = "const " if p.const else ""
    return f"{const}{p.qual} {p.ctype}* {'restrict ' if p.qual == 'global' else ''}{p.name}"


def _block(b: Block, depth: int, out: list[str], itype: str = "int") -> None:
    for s in b.stmts:
        _stmt(s, depth, out, itype)


def _stmt(s: CStmt, depth: int, out: list[str], itype: str = "int") -> None:
    pad = _IND * depth
    match s:
        case Decl(ctype, name, init, space, size, comment):
            q = "" if space == "private" else f"{space} "
            arr = "" if size is None else f"[{to_c(size)}]"
            ini = "" if init is None else f" = {expr(init)}"
            note = f"  // {_note(comment)}" if comment else ""
            out.append(f"{pad}{q}{ctype} {name}{arr}{ini};{note}")
        case Assign(lhs, rhs, comment):
            note = f"  // {_note(comment)}" if comment else ""
            out.append(f"{pad}{expr(lhs)} = {expr(rhs)};{note}")
        case StreamStore(target, value, comment):
            note = f"  // {_note(comment)}" if comment else ""
            out.append(f"{pad}LIFT_STREAM_STORE(&{expr(target)}, {expr(value)});{note}")
        case VecStore(n, value, base, offset):
            out.append(f"{pad}vstore{n}({expr(value)}, 0, {base} + {to_c(offset)});")
        case For():
            _for(s, depth, out, itype)
        case If(cond, body, comment):
            note = f"  // {_note(comment)}" if comment else ""
            out.append(f"{pad}if ({expr(cond)}) {{{note}")
            _block(body, depth + 1, out, itype)
            out.append(pad + "}")
        case Barrier(fence, comment):
            note = f"  // {_note(comment)}" if comment else ""
            out.append(f"{pad}barrier({fence});{note}")
        case Comment(text):
            out.append(f"{pad}// {_note(text)}")
        case AtomicCombine(fn, target, value, guard, comment):
            note = f"  // {_note(comment)}" if comment else ""
            guarded = f"if ({guard}) " if guard else ""
            out.append(f"{pad}{guarded}{fn}(&{expr(target)}, {expr(value)});{note}")
        case Block():
            out.append(pad + "{")
            _block(s, depth + 1, out, itype)
            out.append(pad + "}")
        case _:
            raise TypeError(f"cannot print {s!r}")


def _for(s: For, depth: int, out: list[str], itype: str) -> None:
    pad = _IND * depth
    v = s.var.name
    if s.once:
        out.append(f"{pad}{{  // {_note(s.comment)}: one iteration per work-item")
        out.append(f"{pad}{_IND}{itype} {v} = {expr(s.init)};")
        if s.guard:
            out.append(f"{pad}{_IND}if ({v} < {to_c(s.bound)}) {{")
            _block(s.body, depth + 2, out, itype)
            out.append(f"{pad}{_IND}}}")
        else:
            _block(s.body, depth + 1, out, itype)
        out.append(f"{pad}}}")
        return
    step = "++" if isinstance(s.step, CRaw) and s.step.text == "1" else f" += {expr(s.step)}"
    if s.unroll:
        out.append(f"{pad}#pragma unroll")
    out.append(f"{pad}for ({itype} {v} = {expr(s.init)}; {v} < {to_c(s.bound)}; {v}{step}) {{  // {_note(s.comment)}")
    _block(s.body, depth + 1, out, itype)
    out.append(f"{pad}}}")


def expr(e: CExpr, names: Mapping[str, str] | None = None) -> str:
    """C text of an expression."""
    match e:
        case CRaw(text):
            return text
        case CVar(name):
            return name
        case CInt(value):
            return to_c(value)
        case CIndex(base, index, space, cast):
            if cast is None:
                return f"{base}[{to_c(index)}]"
            return f"(({space} {cast}*){base})[{to_c(index)}]"
        case CVecLoad(n, base, offset):
            return f"vload{n}(0, {base} + {to_c(offset)})"
        case CMember(x, k):
            return f"{_postfix(x)}._{k}"
        case CLane(x, k):
            return f"{_postfix(x)}.s{'0123456789abcdef'[k]}"
        case CCall(fn, args):
            return f"{fn}(" + ", ".join(expr(a) for a in args) + ")"
        case CCond(conds, then, orelse):
            return f"(({_conds(conds)}) ? {expr(then)} : {expr(orelse)})"
        case CBin(op, left, right):
            return f"({expr(left)} {op} {expr(right)})"
        case CCompound(ctype, parts, vector):
            inner = ", ".join(expr(p) for p in parts)
            return f"({ctype})({inner})" if vector else f"({ctype}){{{inner}}}"
    raise TypeError(f"cannot print {e!r}")


def _postfix(x: CExpr) -> str:
    s = expr(x)
    return s if isinstance(x, CVar | CIndex) else f"({s})"


def _conds(conds: tuple[tuple[Arith, bool, Arith | None], ...]) -> str:
    parts = []
    for c, low, hi in conds:
        if low and not prove_nonneg(c):
            parts.append(f"0 <= {to_c(c)}")
        if hi is not None:
            parts.append(f"{to_c(c)} < {to_c(hi)}")
    return " && ".join(parts) or "1"


__all__ = ["print_unit", "print_kernel", "expr"]


# ------------------------------------------------------------ any-alignment variant

_SCALARS = "char|uchar|short|ushort|int|uint|long|ulong|float|double"
_VECTOR_CAST = re.compile(rf"\(global (const )?({_SCALARS})(2|3|4|8|16)\*\)(\w+)")
_VECTOR_POINTER = re.compile(r"\b(?:char|uchar|short|ushort|int|uint|long|ulong|float|double)(?:2|3|4|8|16)\s*\*")


def unaligned_variant(source: str, buffers: Collection[str]) -> str:
    """`source` with every cast of one of the global `buffers` to a vector pointer (`expr`'s
    `((global float8*)x)[i]`, the aligned form) made to a vector type aligned like its scalar
    (`float8_u`: a typedef of clang's, `aligned(4)`): the same program for arguments that start
    anywhere a scalar may (a numpy array passed in place on a CPU runtime is aligned to 16 bytes;
    an aligned float8 load of it faults). On x86 an unaligned vector load of aligned data is as
    fast as the aligned one (PoCL 3.0, Zen 4: a 2^24-element dot 4.04 against 4.13 ms). The other
    buffers (results, temporaries: aligned by the runtime) keep their aligned and streaming stores."""
    found: set[tuple[str, str]] = set()

    def relax(m: re.Match) -> str:
        const, scalar, n, base = m.groups()
        if base not in buffers:
            return m.group(0)
        found.add((scalar, n))
        return f"(global {const or ''}{scalar}{n}_u*){base}"

    body = _VECTOR_CAST.sub(relax, source)
    if not found:
        return source
    typedefs = "\n".join(f"typedef {s}{n} {s}{n}_u __attribute__((aligned(sizeof({s}))));" for s, n in sorted(found))
    return f"{typedefs}\n\n{body}"


_SCALAR_BYTES = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4, "long": 8, "ulong": 8,
                 "float": 4, "double": 8}


def vector_alignment(source: str) -> int:
    """The alignment in bytes the global buffers of `source` need: that of its widest vector
    pointer cast (a 3-vector is aligned as a 4-vector), 1 without one."""
    return max((_SCALAR_BYTES[s] * (4 if n == "3" else int(n)) for _, s, n, _ in _VECTOR_CAST.findall(source)),
               default=1)


def relaxable(source: str) -> bool:
    """Whether every vector pointer of `source` is a cast `unaligned_variant` relaxes (generated
    code: always); a hand-written kernel may keep vector pointers in variables, and its arguments
    must then start where its vectors may (the runtime copies them there)."""
    return len(_VECTOR_POINTER.findall(source)) == len(_VECTOR_CAST.findall(source))
