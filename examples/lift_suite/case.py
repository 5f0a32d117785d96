"""A program of LIFT's benchmark suite with its inputs and its numpy reference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import lift
from lift import map, reduce, zip


@dataclass(frozen=True)
class Case:
    """One program at one size: `numpy(*inputs)` is what `lift.compile(program)(*inputs)` must equal."""

    name: str
    size: str
    program: Any  # a lift Lambda
    inputs: tuple
    numpy: Callable[..., Any]
    rtol: float = 1e-3
    atol: float = 1e-3


def dot(a: Any, b: Any) -> Any:
    """`reduce(add, 0) << map(mult) << zip(a, b)`: LIFT's dot product."""
    return reduce(lift.add, 0.0) << map(lift.mult) << zip(a, b)
