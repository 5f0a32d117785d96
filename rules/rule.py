"""Rewrite rules as values: `Rule(name, law, lhs, rhs, where=None, params={})`.

`lhs` is a pattern (`rules.match`); its bindings, with the rule's parameters, are the
keyword arguments of `where` and `rhs` (each receives only the names it declares, plus
`matched`, the matched node, if it asks). `where` returns True, False/None (does not
apply) or named size conditions (`SizeCondition`) for what cannot be decided now;
`rhs` returns the replacement or None. Every application checks that the type is
unchanged and is recorded as a `Step`.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from numbers import Integral
from typing import Any, cast

from lift.arith import Arith, Cst, as_arith, evaluate, free_vars, prove_divides
from lift.errors import LiftError, LiftTypeError, RewriteError, SourceLoc
from lift.ir.nodes import Expr, Node
from lift.ir.paths import Path, at, replace_at, walk
from lift.rules.match import match
from lift.typecheck import SizeCondition, type_of, typecheck
from lift.types import Type, types_equal

Condition = SizeCondition
REQUIRED = object()  # marks a parameter without a default


@dataclass(frozen=True)
class Step:
    """One rule application: the rule, where, the user's line, parameters and conditions."""

    rule: Rule
    path: Path
    loc: SourceLoc | None
    params: Mapping[str, Any] = field(default_factory=dict)
    conditions: tuple[Condition, ...] = ()

    def __str__(self) -> str:
        ps = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.rule.name}({ps}) at {self.path}"


@dataclass(frozen=True, eq=False)
class Rule:
    """A local, typed, semantics-preserving rewrite; `repr` shows its law."""

    name: str
    law: str
    lhs: Any
    rhs: Callable[..., Node | None]
    where: Callable[..., Any] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    suggest: Callable[..., Mapping[str, Iterable[Any]]] | None = None
    doc: str = ""
    bound: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "__doc__", self.law + ("\n\n" + self.doc if self.doc else ""))

    def __repr__(self) -> str:
        return f"{self.name}: {self.law}"

    # ------------------------------------------------------------------ API edge

    def matches(self, expr: Node, **params: Any) -> list[Path]:
        """The paths in `expr` where the rule applies (for a suggested value of unset parameters)."""
        _check_expr(self.name, expr)
        self.check_params(params)
        return [p for p, n in walk(expr) if self.choices(n, **params)]

    def apply(self, expr: Node, at: Path = (), **params: Any) -> Node:
        """`expr` rewritten at `at`; `RewriteError` if the rule does not apply there."""
        return self.step(expr, at, **params)[0]

    def step(self, expr: Node, path: Path = (), **params: Any) -> tuple[Node, Step]:
        """Like `apply`, also returning the `Step` that records the application."""
        _check_expr(self.name, expr)
        path = check_path(path, f"rule {self.name}")
        self.check_params(params)
        try:
            node = at(expr, tuple(path))
        except (IndexError, AttributeError, TypeError) as err:
            raise RewriteError(f"rule {self.name}: path {path} leads nowhere in the program ({err})",
                               node=expr) from None
        done = self.rewrite(node, tuple(path), params)
        if done is None:
            raise RewriteError(f"rule {self.name} ({self.law}) does not apply at path {tuple(path)}",
                               node=node, hint=self._why_not(node, params))
        new, step = done
        out = replace_at(expr, tuple(path), new)
        check_program(expr, out, f"rule {self.name} at {tuple(path)}")
        return out, step

    def __call__(self, e: Node | None = None, path: Path = (), steps: list[Step] | None = None,
                 **params: Any) -> Any:
        """As a strategy: the rewrite of `e` at its root or None. Without `e`: bind `params`."""
        if e is None:
            return self.bind(**params)
        done = self.rewrite(e, path, params)
        if done is None:
            return None
        if steps is not None:
            steps.append(done[1])
        return done[0]

    def bind(self, **params: Any) -> Rule:
        """This rule with some parameters fixed: `split_join(n=128)`."""
        self.check_params(params)
        return replace(self, bound={**self.bound, **params})

    def check_params(self, params: Mapping[str, Any]) -> None:
        """`LiftTypeError` for an unknown parameter or a value of the wrong Python type."""
        unknown = set(params) - set(self.params)
        if unknown:
            raise LiftTypeError(f"rule {self.name} has no parameter(s) {sorted(unknown)}; it takes "
                                f"{sorted(self.params) or 'none'}", got=sorted(unknown))
        for k, v in params.items():
            _check_param(self.name, k, v, self.params[k])

    # ------------------------------------------------------------------- engine

    def bindings(self, node: Node, params: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """The pattern bindings at `node` if the rule applies there (for some parameters)."""
        env = match(self.lhs, node)
        if env is None:
            return None
        env["matched"] = node
        ps = {**{k: None for k in self.params}, **self.defaults(), **self.bound, **(params or {})}
        if self.where is not None and conditions(call_with(self.where, {**env, **ps})) is None:
            return None
        return env

    def choices(self, node: Node, **params: Any) -> list[dict[str, Any]]:
        """Values for the unset parameters at `node`: the suggestions that satisfy `where`.

        `[{}]` when every parameter is set (or has a default); `[]` where the rule does not apply."""
        env = self.bindings(node, params)
        if env is None:
            return []
        free = [k for k, v in self.params.items()
                if v is REQUIRED and k not in self.bound and k not in params]
        if not free:
            return [{}]
        hints = call_with(self.suggest, env) if self.suggest is not None else {}
        combos = (dict(zip(free, c)) for c in itertools.product(*(hints.get(k, ()) for k in free)))
        return [c for c in combos if self.bindings(node, {**params, **c}) is not None]

    def defaults(self) -> dict[str, Any]:
        """The parameters that have default values."""
        return {k: v for k, v in self.params.items() if v is not REQUIRED}

    def rewrite(self, node: Node, path: Path, params: Mapping[str, Any]) -> tuple[Node, Step] | None:
        """The replacement for `node` and its `Step`, or None where the rule does not apply."""
        ps = {**self.defaults(), **self.bound, **params}
        missing = [k for k in self.params if k not in ps]
        if missing:
            raise RewriteError(f"rule {self.name} needs parameter(s) {', '.join(missing)}", node=node)
        env = self.bindings(node, ps)
        if env is None:
            return None
        conds = () if self.where is None else conditions(call_with(self.where, {**env, **ps}))
        if conds is None:
            return None
        new = call_with(self.rhs, {**env, **ps})
        if new is None:
            return None
        if new.loc is None and node.loc is not None:
            new = replace(new, loc=node.loc)
        self._check(node, new, path)
        shown = {k: ps[k] for k in self.params}
        return new, Step(self, path, node.loc, shown, conds)

    def _check(self, old: Node, new: Node, path: Path) -> None:
        if not isinstance(old, Expr):
            return
        try:
            t_new = type_of(cast(Expr, new))
            for _, n in walk(new):
                if isinstance(n, Expr):
                    type_of(n)
        except LiftError as err:
            raise RewriteError(f"rule {self.name} at {path} built an ill-typed program: {err.message}",
                               node=old) from err
        t_old = type_of(old)
        if not same_type(t_old, t_new):
            raise RewriteError(f"rule {self.name} at {path} changed the type from {t_old} to {t_new}",
                               node=old, expected=t_old, got=t_new)

    def _why_not(self, node: Node, params: Mapping[str, Any]) -> str:
        if match(self.lhs, node) is None:
            return f"the expression is not of the form {self.law.split('->')[0].strip()}"
        return "a side condition does not hold"


def _check_expr(name: str, expr: Any) -> None:
    if not isinstance(expr, Node):
        raise LiftTypeError(f"rule {name} rewrites a program (an IR node), got {expr!r}", got=expr)


def check_path(path: Any, what: str) -> Path:
    """`path` as a tuple of non-negative ints, else `LiftTypeError`."""
    if isinstance(path, (tuple, list)) and all(
            isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in path):
        return tuple(path)
    raise LiftTypeError(f"{what}: a path is a tuple of child indices (ints >= 0), got {path!r}", got=path)


def _check_param(rule: str, name: str, v: Any, default: Any) -> None:
    """Parameter kinds by name: `n` a size, `dim` 0..2, `associative` a bool, `arg` a path."""
    if name == "n" and not (isinstance(v, Arith) or (isinstance(v, Integral) and not isinstance(v, bool))):
        raise LiftTypeError(f"rule {rule}: n must be an int or a symbolic size, got {v!r}", got=v)
    if name == "dim" and not (isinstance(v, Integral) and not isinstance(v, bool) and 0 <= int(v) <= 2):
        raise LiftTypeError(f"rule {rule}: dim must be 0, 1 or 2, got {v!r}", got=v)
    if isinstance(default, bool) and not isinstance(v, bool):
        raise LiftTypeError(f"rule {rule}: {name} must be True or False, got {v!r}", got=v)
    if name == "arg":
        check_path(v, f"rule {rule}: arg")


def check_program(old: Node, new: Node, what: str) -> None:
    """`RewriteError` unless `new` type-checks with the type of `old`."""
    try:
        t_new = typecheck(new)
    except LiftError as err:
        raise RewriteError(f"{what} built an ill-typed program: {err.message}", node=old) from err
    t_old = typecheck(old)
    if not same_type(t_old, t_new):
        raise RewriteError(f"{what} changed the type from {t_old} to {t_new}", node=old,
                           expected=t_old, got=t_new)


# ---------------------------------------------------------------- conditions


def conditions(result: Any) -> tuple[Condition, ...] | None:
    """A `where` result as the conditions it leaves open, or None if it fails."""
    if result is True:
        return ()
    if result is None or result is False:
        return None
    if isinstance(result, SizeCondition):
        return (result,)
    out: list[Condition] = []
    for r in result:
        more = conditions(r)
        if more is None:
            return None
        out.extend(more)
    return tuple(out)


def divides(d: Any, n: Any, node: Node, what: str = "") -> bool | Condition:
    """`d` divides `n`: True, False, or a named condition when it depends on sizes."""
    if d is None:
        return True  # the parameter is not chosen yet
    d, n = as_arith(d), as_arith(n)
    if isinstance(d, Cst) and d.value <= 0:
        return False
    if prove_divides(d, n):
        return True
    if not (free_vars(d) | free_vars(n)):
        return evaluate(n) % evaluate(d) == 0
    return SizeCondition("divides", d, n, node, f"{what or 'the rule'} needs {d} to divide {n}")


def same_type(a: Type, b: Type) -> bool:
    """Types equal up to provable size equality (exact division makes `n * (N / n) == N`; a rule's
    size conditions are already assumed by the types)."""
    return types_equal(a, b)


# ------------------------------------------------------------------- helpers


def call_with(fn: Callable[..., Any], env: Mapping[str, Any]) -> Any:
    """`fn` called with the bindings of `env` it names as parameters (all of them if it takes `**kw`)."""
    sig = inspect.signature(fn)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return fn(**env)
    return fn(**{k: env[k] for k in sig.parameters if k in env})
