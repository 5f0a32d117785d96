"""`Choices`: every decision `lift.compile` takes for one program, in one frozen record.

    c = lift.Choices(points={"T": {"size": 64}}, mapping={"rows": 30}, tuning={"T_R": 64})
    prog = lift.compile(expr, choices=c)       # prog.choices: the Choices actually used
    lift.Choices.from_json(prog.choices.to_json()) == prog.choices

- `points`: rewrite-point label -> structural parameters (`{"skip": True}` skips the point);
- `mapping`: map label -> Table 5.2 code; None: the solver chooses (`choose_mapping`); the empty
  mapping `{}` on a high-level program is the default lowering (`lift.lower`);
- `tuning`: tuning-parameter name -> value;
- `vectorise`: sequential map label -> vector width;
- `launch`: the joint space's thread-configuration variables (`local_size_d`, `groups_d`);
- `sizes`: problem sizes the program is specialised for (None: symbolic sizes). With sizes, the
  mapping stage is the joint space for those sizes, as `lift.tune` explores it.

A plain dict (`{"T": {"size": 64}, "rows": 30, "T_R": 64}`, the older form) is converted once at
the edge of `compile` by `as_choices`; a `Choices` also reads as that flat dict (it is a
`Mapping` from label to decision), so code written against the dict form keeps working.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from lift.errors import LiftValueError

_LAUNCH = re.compile(r"(local_size|groups)_\d+")
_FORMAT = 1  # the version of the JSON form


def _frozen(d: Mapping[str, Any] | None, value: Any = int) -> Mapping[str, Any] | None:
    if d is None:
        return None
    return MappingProxyType({str(k): value(v) for k, v in sorted(d.items())})


def _params(ps: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType({str(k): _plain(v) for k, v in sorted(ps.items())})


def _plain(v: Any) -> Any:
    """A JSON-stable parameter value (numpy ints become ints, lists become tuples)."""
    if isinstance(v, bool) or v is None or isinstance(v, str | float):
        return v
    if isinstance(v, list | tuple):
        return tuple(_plain(x) for x in v)
    try:
        return int(v)
    except (TypeError, ValueError):
        raise LiftValueError(f"a choice value must be a number, a string or a list of them, not {v!r}") from None


@dataclass(frozen=True, eq=False)
class Choices(Mapping[str, Any]):
    """Rewrite points, mapping, tuning values, vectorisation and launch sizes (see the module)."""

    points: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    mapping: Mapping[str, int] | None = None
    tuning: Mapping[str, int] = field(default_factory=dict)
    vectorise: Mapping[str, int] = field(default_factory=dict)
    launch: Mapping[str, int] = field(default_factory=dict)
    sizes: Mapping[str, int] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # the frozen record's own constructor normalises its fields
        set_(self, "points", MappingProxyType({str(k): _params(v) for k, v in sorted(self.points.items())}))
        for name in ("mapping", "tuning", "vectorise", "launch", "sizes"):
            set_(self, name, _frozen(getattr(self, name)))

    # ------------------------------------------------------------------ forms

    def to_json(self) -> dict[str, Any]:
        """The stable JSON form (sorted keys; `Choices.from_json` reads it back)."""
        out: dict[str, Any] = {"format": _FORMAT,
                               "points": {k: {p: _json(v) for p, v in ps.items()} for k, ps in self.points.items()}}
        for f in fields(self)[1:]:
            v = getattr(self, f.name)
            out[f.name] = None if v is None else dict(v)
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any] | str | None) -> Choices:
        """The `Choices` of a `to_json()` form (a dict or its JSON text; anything else: `LiftValueError`)."""
        if isinstance(d, str):
            d = json.loads(d)
        if not isinstance(d, Mapping) or d.get("format") != _FORMAT:
            raise LiftValueError(f"not a lift.Choices JSON form (format {_FORMAT}): {str(d)[:200]}")
        kw: dict[str, Any] = {f.name: d.get(f.name) for f in fields(Choices) if d.get(f.name) is not None}
        return Choices(**kw)

    def key(self) -> str:
        """A canonical JSON string (for de-duplication and the tuning database)."""
        return json.dumps(self.to_json(), sort_keys=True)

    def flat(self) -> dict[str, Any]:
        """The plain-dict form `compile` also accepts: label -> decision (vectorisation and sizes apart)."""
        return {**{k: dict(v) for k, v in self.points.items()}, **(self.mapping or {}), **self.tuning,
                **self.launch}

    def replace(self, **changes: Any) -> Choices:
        """A copy with some fields changed."""
        return replace(self, **changes)

    # ------------------------------------------------- Mapping (the flat form)

    def __getitem__(self, key: str) -> Any:
        return self.flat()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.flat())

    def __len__(self) -> int:
        return len(self.flat())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Choices):
            return self.key() == other.key()
        if isinstance(other, Mapping):  # the plain-dict form
            return self.flat() == dict(other) and not self.vectorise and self.sizes is None
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        shown = [f"{f.name}={_show(getattr(self, f.name))}" for f in fields(self)
                 if getattr(self, f.name) not in (None, {}) and getattr(self, f.name)]
        if self.mapping is not None and not self.mapping:
            shown.append("mapping={}")
        return f"Choices({', '.join(shown)})"

    def __str__(self) -> str:
        parts = [f"{k}:{','.join(f'{p}={v}' for p, v in ps.items())}" for k, ps in self.points.items()]
        if self.mapping is not None and not self.mapping:
            parts.append("default lowering")
        parts += [f"{k}={v}" for k, v in {**(self.mapping or {}), **self.tuning, **self.launch}.items()]
        parts += [f"vec {k}={v}" for k, v in self.vectorise.items()]
        return " ".join(parts) or "solver's mapping"


def _json(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _show(v: Any) -> str:
    if not isinstance(v, Mapping):
        return repr(v)
    return repr({k: dict(x) if isinstance(x, Mapping) else x for k, x in v.items()})


def is_launch(name: str) -> bool:
    """A thread-configuration variable of the joint space (`local_size_d`, `groups_d`)."""
    return _LAUNCH.fullmatch(name) is not None


def joint_fields(joint: Mapping[str, int], map_labels: Iterable[str]) -> dict[str, dict[str, int]]:
    """A joint choice (the variables of `lift.constraints.joint_space`) sorted into the `Choices`
    fields: `mapping` (the codes of the labels in `map_labels`), `launch` and `tuning` (the rest)."""
    maps = set(map_labels)
    return {"mapping": {k: v for k, v in joint.items() if k in maps},
            "tuning": {k: v for k, v in joint.items() if k not in maps and not is_launch(k)},
            "launch": {k: v for k, v in joint.items() if is_launch(k)}}


def as_choices(choices: Choices | Mapping[str, Any] | None, map_labels: Iterable[str] = ()) -> Choices:
    """`choices` as a `Choices`: a plain dict's dict values are rewrite points, its ints launch
    variables, mapping codes (for a label in `map_labels`) or tuning values (the rest)."""
    if choices is None:
        return Choices()
    if isinstance(choices, Choices):
        return choices
    if not isinstance(choices, Mapping):
        raise LiftValueError(f"choices must be a lift.Choices or a dict, not {type(choices).__name__}")
    labels = set(map_labels)
    points = {k: v for k, v in choices.items() if isinstance(v, Mapping)}
    ints = {k: v for k, v in choices.items() if not isinstance(v, Mapping)}
    mapping = {k: v for k, v in ints.items() if k in labels}
    return Choices(points=points, mapping=mapping or None, launch={k: v for k, v in ints.items() if is_launch(k)},
                   tuning={k: v for k, v in ints.items() if k not in mapping and not is_launch(k)})
