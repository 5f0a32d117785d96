"""rewrites/refusal.py: a refusal is a value, its text what the user sees, its kind what code branches on."""

from __future__ import annotations

import dataclasses

import pytest

from lift.rewrites.refusal import Refusal, RefusalKind, indivisible


def test_a_refusal_reads_as_its_reason() -> None:
    why = Refusal("the inner map's function is not rb => reduce(..) << ..")
    assert str(why) == why.reason and why.kind is RefusalKind.OTHER


def test_indivisible_is_a_kind_not_a_text() -> None:
    why = indivisible("cols 4 x width 8 does not divide 100")
    assert why.kind is RefusalKind.INDIVISIBLE and str(why) == "cols 4 x width 8 does not divide 100"
    assert Refusal("does not divide, in words only").kind is RefusalKind.OTHER


def test_a_refusal_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(indivisible("x"), "reason", "y")  # noqa: B010 - assigning a frozen field on purpose
