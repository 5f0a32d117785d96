"""The syntax tree of Tensor Comprehensions (TC paper, section 3 and Figure 14) and its parser.

    def mv(float(M,K) A, float(K) x) -> (C) {
        C(i) +=! A(i,k) * x(k)
    }

parses to a `Function` whose one `Statement` assigns `C(i)` with the reduction `+=!`.
Every node carries its `Pos` (line and column in the TC source) for errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lift.errors import LiftValueError, SourceLoc

SCALAR_TYPES = ("float", "double", "int", "half", "byte", "uint32", "int32", "int64", "bool")
REDUCTIONS = ("+=!", "*=!", "max=!", "min=!", "+=", "*=", "max=", "min=")
_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+|\#[^\n]*)
  | (?P<nl>\n)
  | (?P<num>(?:\d+\.\d*(?:[eE][-+]?\d+)?f?|\d*\.\d+(?:[eE][-+]?\d+)?f?|\d+(?:[eE][-+]?\d+)f?|\d+)(?![A-Za-z_0-9]))
  | (?P<id>[A-Za-z_0-9]*[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>->|\+=!|\*=!|max=!|min=!|\+=|\*=|==|!=|<=|>=|&&|\|\||[-+*/%()<>{},:=?!.])
""", re.VERBOSE)


@dataclass(frozen=True, slots=True)
class Pos:
    """A place in the TC source: 1-based line and column, and the file name errors print."""

    line: int
    col: int
    file: str = "<tc>"
    function: str = "<tc>"

    def loc(self) -> SourceLoc:
        """The location as liftcl's errors print it (the line's text from `linecache`)."""
        return SourceLoc(self.file, self.line, self.function)

    def __str__(self) -> str:
        return f"line {self.line}, column {self.col}"


# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class Num:
    """A number literal; `is_float` when written with a point or exponent."""

    value: float | int
    is_float: bool
    pos: Pos = field(compare=False)


@dataclass(frozen=True, slots=True)
class Name:
    """An index variable or a scalar parameter."""

    name: str
    pos: Pos = field(compare=False)


@dataclass(frozen=True, slots=True)
class Call:
    """`id(e, ...)`: a tensor access or a built-in function call."""

    name: str
    args: tuple[Expr, ...]
    pos: Pos = field(compare=False)


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    arg: Expr
    pos: Pos = field(compare=False)


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    left: Expr
    right: Expr
    pos: Pos = field(compare=False)


@dataclass(frozen=True, slots=True)
class Ternary:
    cond: Expr
    then: Expr
    other: Expr
    pos: Pos = field(compare=False)


Expr = Num | Name | Call | Unary | Binary | Ternary


# --------------------------------------------------------------------------- declarations


@dataclass(frozen=True, slots=True)
class Param:
    """`float(M,K) A` (a tensor: `dims` the size names) or `float a` (a scalar: no dims)."""

    dtype: str
    name: str
    dims: tuple[str, ...] | None
    pos: Pos = field(compare=False)


@dataclass(frozen=True, slots=True)
class Where:
    """`where v in lo:hi`: v ranges over [lo, hi)."""

    var: str
    lo: Expr
    hi: Expr
    pos: Pos = field(compare=False)


@dataclass(frozen=True, slots=True)
class Statement:
    """`T(i, j) op rhs [where ...]`; `op` is `=` or one of `REDUCTIONS`."""

    tensor: str
    indices: tuple[Name, ...]
    op: str
    rhs: Expr
    wheres: tuple[Where, ...]
    pos: Pos = field(compare=False)


@dataclass(frozen=True, slots=True)
class Function:
    """`def name(params) -> (outputs) { statements }`."""

    name: str
    params: tuple[Param, ...]
    outputs: tuple[str, ...]
    statements: tuple[Statement, ...]
    pos: Pos = field(compare=False)


# --------------------------------------------------------------------------- parser


def syntax_error(message: str, pos: Pos, hint: str | None = None) -> LiftValueError:
    """A `LiftValueError` at a place of the TC source."""
    return LiftValueError(f"TC: {message} at {pos}", loc=pos.loc(), hint=hint)


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str
    text: str
    pos: Pos


def tokens(source: str, file: str = "<tc>") -> list[_Tok]:
    """The tokens of `source` (comments and blanks dropped, newlines kept: they end statements)."""
    out: list[_Tok] = []
    line, start, i = 1, 0, 0
    while i < len(source):
        m = _TOKEN.match(source, i)
        pos = Pos(line, i - start + 1, file)
        if m is None:
            raise syntax_error(f"unexpected character {source[i]!r}", pos)
        kind = m.lastgroup or ""
        if kind == "nl":
            out.append(_Tok("nl", "\n", pos))
            line, start = line + 1, m.end()
        elif kind != "ws":
            out.append(_Tok(kind, m.group(), pos))
        i = m.end()
    out.append(_Tok("eof", "", Pos(line, i - start + 1, file)))
    return out


_BINARY = [("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/", "%")]


class Parser:
    """A recursive-descent parser of Figure 14's grammar (function calls between TCs excepted)."""

    def __init__(self, source: str, file: str = "<tc>") -> None:
        self.toks = tokens(source, file)
        self.i = 0
        self.function = "<tc>"

    # -- token helpers
    def peek(self, skip_nl: bool = True) -> _Tok:
        j = self.i
        while skip_nl and self.toks[j].kind == "nl":
            j += 1
        return self.toks[j]

    def next(self, skip_nl: bool = True) -> _Tok:
        while skip_nl and self.toks[self.i].kind == "nl":
            self.i += 1
        t = self.toks[self.i]
        self.i += 1
        return t

    def at(self, text: str, skip_nl: bool = True) -> bool:
        return self.peek(skip_nl).text == text and self.peek(skip_nl).kind != "eof"

    def expect(self, text: str, what: str = "", skip_nl: bool = True) -> _Tok:
        t = self.next(skip_nl)
        if t.text != text or t.kind == "eof":
            raise syntax_error(f"expected {text!r}{what}, got {t.text or 'the end'!r}", self._pos(t))
        return t

    def ident(self, what: str) -> _Tok:
        t = self.next()
        if t.kind != "id":
            raise syntax_error(f"expected {what}, got {t.text or 'the end'!r}", self._pos(t))
        return t

    def _pos(self, t: _Tok) -> Pos:
        return Pos(t.pos.line, t.pos.col, t.pos.file, self.function)

    # -- declarations
    def functions(self) -> list[Function]:
        out = []
        while self.peek().kind != "eof":
            out.append(self.function_def())
        return out

    def function_def(self) -> Function:
        kw = self.ident("'def'")
        if kw.text != "def":
            raise syntax_error(f"expected 'def', got {kw.text!r}", self._pos(kw),
                               hint="a TC source is a sequence of `def name(...) -> (...) { ... }`")
        name = self.ident("a function name")
        self.function = name.text
        self.expect("(")
        params = [] if self.at(")") else self.comma_list(self.param)
        self.expect(")")
        self.expect("->")
        self.expect("(")
        outs = self.comma_list(lambda: self.ident("an output name"))
        self.expect(")")
        self.expect("{")
        stmts = []
        while not self.at("}"):
            stmts.append(self.statement())
        self.expect("}")
        return Function(name.text, tuple(params), tuple(t.text for t in outs), tuple(stmts), self._pos(name))

    def comma_list(self, item):  # noqa: ANN001, ANN201 - internal helper
        items = [item()]
        while self.at(","):
            self.next()
            items.append(item())
        return items

    def param(self) -> Param:
        ty = self.ident("a type")
        if ty.text not in SCALAR_TYPES:
            raise syntax_error(f"unknown type {ty.text!r}", self._pos(ty),
                               hint="types: " + ", ".join(SCALAR_TYPES))
        dims = None
        if self.at("("):
            self.next()
            dims = tuple(t.text for t in self.comma_list(lambda: self.ident("a size name")))
            self.expect(")")
        name = self.ident("a parameter name")
        return Param(ty.text, name.text, dims, self._pos(name))

    def statement(self) -> Statement:
        t = self.ident("a statement (`T(i, ...) op expression`)")
        if self.at("=") or self.at(","):
            raise syntax_error("calls between TC functions (`a, b = f(...)`) are not supported",
                               self._pos(t), hint="write the called function's statements inline")
        self.expect("(", " after the assigned tensor")
        idx = [] if self.at(")") else self.comma_list(self.index_name)
        self.expect(")")
        op = self.next()
        if op.kind == "id" and op.text in ("max", "min") and self.at("=", skip_nl=False):
            text = op.text + self.next(skip_nl=False).text
            if self.at("!", skip_nl=False):
                text += self.next(skip_nl=False).text
            op = _Tok("op", text, op.pos)
        if op.text not in ("=",) + REDUCTIONS:
            raise syntax_error(f"expected '=' or a reduction ({', '.join(REDUCTIONS)}), got {op.text!r}",
                               self._pos(op))
        rhs = self.expr()
        wheres: list[Where] = []
        if self.peek().kind == "id" and self.peek().text == "where":
            self.next()
            wheres = self.comma_list(self.where)
        end = self.peek(skip_nl=False)
        if end.kind not in ("nl", "eof") and end.text not in ("}", ";"):
            raise syntax_error(f"unexpected {end.text!r} after the statement", self._pos(end))
        if end.text == ";":
            self.next(skip_nl=False)
        return Statement(t.text, tuple(idx), op.text, rhs, tuple(wheres), self._pos(t))

    def index_name(self) -> Name:
        t = self.next()
        if t.kind != "id":
            raise syntax_error(f"the left-hand side is indexed by variables only, got {t.text!r}", self._pos(t),
                               hint="write `O(i) = I(i + 1)`, not `O(i - 1) = I(i)`")
        return Name(t.text, self._pos(t))

    def where(self) -> Where:
        v = self.ident("a variable")
        kw = self.ident("'in'")
        if kw.text != "in":
            raise syntax_error(f"expected 'in', got {kw.text!r}", self._pos(kw))
        lo = self.expr()
        self.expect(":", " (a range is `lo:hi`)")
        hi = self.expr()
        return Where(v.text, lo, hi, self._pos(v))

    # -- expressions (precedence climbing)
    def expr(self) -> Expr:
        c = self.binary(0)
        if self.at("?", skip_nl=False):
            q = self.next()
            a = self.expr()
            self.expect(":")
            b = self.expr()
            return Ternary(c, a, b, self._pos(q))
        return c

    def binary(self, level: int) -> Expr:
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek(skip_nl=False).text in _BINARY[level] and self.peek(skip_nl=False).kind == "op":
            op = self.next(skip_nl=False)
            right = self.binary(level + 1)
            left = Binary(op.text, left, right, self._pos(op))
        return left

    def unary(self) -> Expr:
        if self.at("-", skip_nl=False) or self.at("!", skip_nl=False) or self.at("+", skip_nl=False):
            op = self.next(skip_nl=False)
            arg = self.unary()
            return arg if op.text == "+" else Unary(op.text, arg, self._pos(op))
        return self.primary()

    def primary(self) -> Expr:
        t = self.next()
        if t.kind == "num":
            text = t.text.rstrip("f")
            is_float = any(c in text for c in ".eE")
            return Num(float(text) if is_float else int(text), is_float, self._pos(t))
        if t.text == "(":
            e = self.expr()
            self.expect(")")
            return e
        if t.kind == "id":
            after = self.peek(skip_nl=False)
            if self.at(".", skip_nl=False) or (after.kind == "num" and after.text.startswith(".")):
                raise syntax_error(f"`{t.text}.n` (a tensor's dimension) is not supported", self._pos(t),
                                   hint="name the size in the parameter's type, e.g. float(N, M)")
            if self.at("(", skip_nl=False):
                self.next()
                args = [] if self.at(")") else self.comma_list(self.expr)
                self.expect(")")
                return Call(t.text, tuple(args), self._pos(t))
            return Name(t.text, self._pos(t))
        raise syntax_error(f"expected an expression, got {t.text or 'the end'!r}", self._pos(t))


def parse(source: str, file: str = "<tc>") -> list[Function]:
    """The functions of a TC source."""
    return Parser(source, file).functions()
