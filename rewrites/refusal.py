"""Why a rewrite point does not apply, as a value (ELEVATE's `Failure`): a `Refusal` carries the
message the user sees (in `Outcome.reason` and the `RewritePointSkipped` warning) and a `kind`
that code branches on, never the message's text.

A point's `rewrite` returns the rewritten expression or why not: a `Refusal`, or (the families
that never branch on why) its message as a plain `str`; `rewrites/apply.py` reports either by
its text.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class RefusalKind(Enum):
    """What kind of refusal: what a caller may try next depends on it."""

    OTHER = "other"
    INDIVISIBLE = "indivisible"  # a block, width or chunk does not divide a size: a smaller one may


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a point (or one of its forms) does not apply: `reason` is the text the user sees."""

    reason: str
    kind: RefusalKind = RefusalKind.OTHER

    def __str__(self) -> str:
        return self.reason


def indivisible(reason: str) -> Refusal:
    """A refusal because a block, width or chunk does not divide a size (`reason` says which)."""
    return Refusal(reason, RefusalKind.INDIVISIBLE)


__all__ = ["Refusal", "RefusalKind", "indivisible"]
