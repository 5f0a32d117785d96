"""Rewrite points (thesis 6.2.1): identity wrappers around a function that name a rewrite.

`RewritePoint : (f : T => U, x : T) => U` means `f << x` until `apply_all` replaces it
with a rewritten `f` (or drops it). A point is an IR pattern node with one child `f`, so
the generic traversal (`lift.ir.paths.children`) sees through it; it is `transparent`:
the type checker, the interpreter and the printer treat it as its body.

Each family (`split_join`, `split_reduce`, `flatten`, `vectorise`, `fission`, ...) is a
subclass with its fixed parameters as fields, a `kind`, the structural parameters it
exposes (`structural`) and a `rewrite` of the call it wraps. The structural parameter
every point has is `skip` (eliminate the point, thesis Listing 6.1).

    tile = lift.rewrites.split_join(map(f), label="A")      # join << map(map(f)) << split(T_A)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from lift.arith import Arith, as_arith
from lift.errors import RewriteError, user_loc
from lift.ir.build import Deferred, apply, elaborate
from lift.ir.nodes import Expr, FunDecl, Pattern
from lift.rules.rule import call_with
from lift.rules.terms import compare_fields
from lift.types import Size

from .refusal import Refusal

Nested = Callable[[FunDecl], FunDecl]  # wraps a function in the points nested in this one


class RewritePoint(Pattern):
    """Base of the rewrite-point families: a transparent wrapper whose call means `f`."""

    __slots__ = ()
    f: FunDecl  # every family's first field (declared there): the function the point wraps
    transparent: ClassVar[bool] = True
    kind: ClassVar[str] = "point"
    places_nested: ClassVar[bool] = False  # whether `rewrite` places the nested points itself (thesis 6.2.3.2)
    placed: ClassVar[tuple[str, ...]] = ()  # fields the automatic placer records, not the point's parameters

    @property
    def arity(self) -> int:
        return self.f.arity

    def fixed(self) -> dict[str, Any]:
        """The parameters given when the point was written (fields other than `f` and `placed`)."""
        names = [n for n in compare_fields(self) if n != "f" and n not in self.placed]
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def point_text(self, inner: str) -> str:
        """LIFT notation for the point, given its printed body: `split_join[A](map(f), size=T)`."""
        lab = f"[{self.label}]" if self.label else ""
        ps = "".join(f", {k}={_show(v)}" for k, v in self.fixed().items())
        return f"{self.kind}{lab}({inner}{ps})"

    def structural(self) -> dict[str, tuple[Any, ...]]:
        """The structural parameters and their candidate values, beyond `skip`."""
        return {}

    def rewrite(self, call: Expr, params: Mapping[str, Any], nested: Nested) -> Expr | Refusal | str:
        """The rewritten `call` (the body applied to fresh parameters), or why it does not apply
        (a `Refusal`, or its message: rewrites/refusal.py).

        `nested` wraps a function in the points nested in this one; a family that does not
        use it gets them around its whole result (thesis Listing 6.1, line 13)."""
        raise NotImplementedError


def _show(v: Any) -> str:
    if isinstance(v, FunDecl):
        return str(v)
    return repr(v) if isinstance(v, str) else str(v)


def tuning_var(label: str, what: str = "T") -> Arith:
    """The size variable of a point's tuning parameter: `T_A` for the point labelled "A"."""
    return Size(f"{what}_{re.sub(r'[^0-9A-Za-z_]', '_', label)}")


def size_param(value: Any, params: Mapping[str, Any], label: str, name: str = "size") -> Arith:
    """The tile size of a point: chosen in `params`, fixed on the point, or a tuning variable."""
    if params.get(name) is not None:
        return as_arith(params[name])
    if value is not None:
        return as_arith(value)
    return tuning_var(label)


def constructor(cls: type, kind: str) -> Callable[..., Any]:
    """The public constructor of a family: `cls(f, *args, label=None, **params)`."""

    def make_point(f: Any, *args: Any, label: str | None = None, **params: Any) -> Any:
        def make(ts: Any, lab: str | None, loc: Any) -> Any:
            return cls(elaborate(f, ts), **params, label=lab, loc=loc)

        d = Deferred(make, f"{kind}({getattr(f, '__name__', f)})", label=label, loc=user_loc())
        return apply(d, args, label=label) if args else d

    make_point.__name__ = kind
    make_point.__qualname__ = kind
    make_point.__doc__ = cls.__doc__
    return make_point


@dataclass(frozen=True)
class Outcome:
    """What happened to one point: applied (with its parameters) or skipped (with why)."""

    label: str
    kind: str
    applied: bool
    params: Mapping[str, Any]
    reason: str = ""


def via_rule(rule: Any, call: Expr, **params: Any) -> Expr:
    """`rule` applied at the root of `call` with `params`, without the rule engine's type check
    (a symbolic tile size defeats its sampled size equality; `apply_all` checks the result)."""

    env = rule.bindings(call, params)
    if env is None:
        raise RewriteError(f"rule {rule.name} ({rule.law}) does not apply", node=call)
    new = call_with(rule.rhs, {**env, **rule.defaults(), **params})
    if new is None:
        raise RewriteError(f"rule {rule.name} ({rule.law}) does not apply", node=call)
    return cast(Expr, new)
