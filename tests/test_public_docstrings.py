"""Every public function and class (`lift.__all__`, `lift.testing.__all__`) has a summary line.

STYLE 21: a docstring is one summary line, then the details. A class must have its own
docstring: neither one inherited from a base class nor the signature `@dataclass` writes
when there is none. The first line must be the summary, not blank.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import pytest

PUBLIC_MODULES = ("lift", "lift.testing")


def public_names() -> list[tuple[str, str]]:
    """(module, name) of every function or class in a public `__all__`."""
    out = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isroutine(obj):
                out.append((module_name, name))
    return out


def own_docstring(obj: Any) -> str | None:
    """The docstring written for `obj` itself, or None."""
    if not inspect.isclass(obj):
        return obj.__doc__
    doc = obj.__dict__.get("__doc__")
    if doc and dataclasses.is_dataclass(obj):
        generated = obj.__name__ + str(inspect.signature(obj)).replace(" -> None", "")
        if doc == generated:
            return None
    return doc


def summary_problem(obj: Any) -> str | None:
    """Why the docstring of `obj` has no summary line, or None when it has one."""
    doc = own_docstring(obj)
    if not doc or not doc.strip():
        return "no docstring"
    if not doc.splitlines()[0].strip():
        return "the first line of the docstring is blank"
    return None


PUBLIC = public_names()


def test_the_public_api_has_functions_and_classes() -> None:
    names = {n for _, n in PUBLIC}
    assert {"compile", "interpret", "map", "Program", "LiftError", "assert_same"} <= names


@pytest.mark.parametrize(("module", "name"), PUBLIC, ids=[f"{m}.{n}" for m, n in PUBLIC])
def test_public_name_has_a_summary_line(module: str, name: str) -> None:
    problem = summary_problem(getattr(importlib.import_module(module), name))
    assert problem is None, f"{module}.{name}: {problem}"


def test_the_checker_rejects_what_it_should() -> None:
    @dataclasses.dataclass
    class Bare:
        x: int

    class Child(Exception):
        pass

    def blank_first_line() -> None:
        """
        The summary comes too late.
        """

    def fine() -> None:
        """A summary."""

    assert summary_problem(Bare) == "no docstring"
    assert summary_problem(Child) == "no docstring"
    assert summary_problem(blank_first_line) == "the first line of the docstring is blank"
    assert summary_problem(fine) is None
