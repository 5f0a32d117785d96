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

from lift.arith.cnames import size_name_problem
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
_LEVEL = {op: k for k, ops in enumerate(_BINARY) for op in ops}
MAX_NESTING = 128  # parentheses, calls, ?: and unary operators nested in one expression
MAX_OPERATIONS = 128  # operations nested in one expression (`a + b + ... `: one per term): C compilers stop at 256
MAX_DIGITS = 300  # of a number literal (a float holds about 1e308)


class Parser:
    """A recursive-descent parser of Figure 14's grammar (function calls between TCs excepted)."""

    def __init__(self, source: str, file: str = "<tc>") -> None:
        self.toks = tokens(source, file)
        self.i = 0
        self.function = "<tc>"
        self.depth = 0  # expressions being parsed, one inside another

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
            found = self.comma_list(lambda: self.ident("a size name"))
            for d in found:  # a size is a kernel parameter `int d` in OpenCL C
                why = size_name_problem(d.text)
                if why is not None:
                    raise syntax_error(f"the size name {d.text!r} {why}", self._pos(d),
                                       hint="name sizes like C variables: N, M, rows, n_2")
            dims = tuple(t.text for t in found)
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

    # -- expressions (precedence climbing: one level of Python recursion per nesting, not per precedence)
    def expr(self) -> Expr:
        start = self.peek(skip_nl=False)
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise syntax_error(f"the expression nests more than {MAX_NESTING} deep (parentheses, calls, "
                                   "?:)", self._pos(start), hint="compute parts in statements of their own")
            c = self.binary(0)
            if self.at("?", skip_nl=False):
                q = self.next()
                a = self.expr()
                self.expect(":")
                b = self.expr()
                c = Ternary(c, a, b, self._pos(q))
        finally:
            self.depth -= 1
        if self.depth == 0:
            _check_operations(c, self._pos(start))
        return c

    def binary(self, level: int) -> Expr:
        left = self.unary()
        while True:
            t = self.peek(skip_nl=False)
            if t.kind != "op" or _LEVEL.get(t.text, -1) < level:
                return left
            op = self.next(skip_nl=False)
            right = self.binary(_LEVEL[op.text] + 1)
            left = Binary(op.text, left, right, self._pos(op))

    def unary(self) -> Expr:
        ops = []
        while self.at("-", skip_nl=False) or self.at("!", skip_nl=False) or self.at("+", skip_nl=False):
            ops.append(self.next(skip_nl=False))
        if len(ops) > MAX_NESTING:
            raise syntax_error(f"more than {MAX_NESTING} unary operators in a row", self._pos(ops[0]))
        e = self.primary()
        for op in reversed(ops):
            e = e if op.text == "+" else Unary(op.text, e, self._pos(op))
        return e

    def primary(self) -> Expr:
        t = self.next()
        if t.kind == "num":
            return self.number(t)
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
                self.depth += 1
                try:
                    if self.depth > MAX_NESTING:
                        raise syntax_error(f"the expression nests more than {MAX_NESTING} deep (parentheses, "
                                           "calls, ?:)", self._pos(t), hint="compute parts in statements of their own")
                    args = [] if self.at(")") else self.comma_list(self.expr)
                finally:
                    self.depth -= 1
                self.expect(")")
                return Call(t.text, tuple(args), self._pos(t))
            return Name(t.text, self._pos(t))
        raise syntax_error(f"expected an expression, got {t.text or 'the end'!r}", self._pos(t))

    def number(self, t: _Tok) -> Num:
        text = t.text.rstrip("f")
        if sum(c.isdigit() for c in text) > MAX_DIGITS:
            raise syntax_error(f"a number literal of {sum(c.isdigit() for c in text)} digits (at most {MAX_DIGITS})",
                               self._pos(t))
        is_float = any(c in text for c in ".eE")
        try:
            return Num(float(text) if is_float else int(text), is_float, self._pos(t))
        except (ValueError, OverflowError) as err:
            raise syntax_error(f"the number {t.text[:40]!r} cannot be read ({err})", self._pos(t)) from None


def _check_operations(e: Expr, pos: Pos) -> None:
    """Refuse an expression whose operations nest deeper than `MAX_OPERATIONS` (a sum of 400 terms
    nests 399 additions: one C call inside another, past what OpenCL C compilers accept)."""
    depth, level = -1, [e]
    while level:
        depth += 1
        nxt: list[Expr] = []
        for x in level:
            match x:
                case Binary(left=a, right=b):
                    nxt += (a, b)
                case Unary(arg=a):
                    nxt.append(a)
                case Ternary(cond=c, then=a, other=b):
                    nxt += (c, a, b)
                case Call(args=args):
                    nxt += args
        level = nxt
    if depth > MAX_OPERATIONS:
        raise syntax_error(f"the expression nests {depth} operations deep (at most {MAX_OPERATIONS}; each "
                           "+ - * / ?: and call is one)", pos,
                           hint="sum many terms with a reduction (`y(i) +=! x(j)`), or in several statements")


def parse(source: str, file: str = "<tc>") -> list[Function]:
    """The functions of a TC source."""
    return Parser(source, file).functions()
