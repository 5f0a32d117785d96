"""Golden OpenCL for the examples (STYLE 23): refactors must leave the generated code unchanged.

For every variant of every example (`examples/*.py`, `variants()`), the OpenCL source that
`lift.compile` generates is compared, as exact text, with its entry `<example>-<variant>` in
`tests/golden/examples.json` (one file; a failure shows a unified diff).
The device profile is pinned to the offline "pocl-cpu" profile, so the z3 mapping of the
high-level variants does not depend on the attached device (compiling still builds on PoCL).
A missing entry fails the test; write the entries (after checking the change in the diff) with

    python tests/test_golden.py --update
"""

from __future__ import annotations

import difflib
import importlib
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "examples.json"  # {variant: its OpenCL source}, one file
EXAMPLES = ("axpy", "dot", "gemv", "matmul", "stencil2d", "conv")
UPDATE = f"python tests/{Path(__file__).name} --update"

sys.path.insert(0, str(ROOT / "examples"))

import golden_files  # noqa: E402

import lift  # noqa: E402
import lift.devices  # noqa: E402

# Variants whose generated code is not yet reproducible from run to run (it differs between two
# compiles of the same program, even in one process); their comparison is a non-strict expected
# failure until the cause is fixed; then delete the entry and run the update.
UNSTABLE: dict[str, str] = {}  # variants whose code may vary between runs (none since the tie-breaks)


def slug(name: str) -> str:
    """A file-name form of a variant name: "two-stage, local memory" -> "two-stage-local-memory"."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def variants() -> dict[str, tuple[str, int]]:
    """Every example variant by golden-file stem ("dot-two-stage-local-memory"): (example, index)."""
    out: dict[str, tuple[str, int]] = {}
    for example in EXAMPLES:
        for k, v in enumerate(importlib.import_module(example).variants()):
            stem = f"{example}-{slug(v.name)}"
            assert stem not in out, f"two variants of {example} have the file name {stem}"
            out[stem] = (example, k)
    return out


VARIANTS = variants()


def source(stem: str, cache_dir: Any = None) -> str:
    """The OpenCL source `lift.compile` generates for the variant `stem`."""
    example, k = VARIANTS[stem]
    v = importlib.import_module(example).variants()[k]
    device = lift.devices.profile("pocl-cpu")
    return lift.compile(v.program, device=device, cache_dir=cache_dir, **v.compile_kw).source


def golden() -> dict[str, str]:
    """The golden sources by variant."""
    return golden_files.load(GOLDEN)


def _params() -> list[Any]:
    marks = {s: [pytest.mark.xfail(reason=UNSTABLE[s], strict=False)] if s in UNSTABLE else [] for s in VARIANTS}
    return [pytest.param(s, marks=marks[s], id=s) for s in VARIANTS]


@pytest.mark.device
@pytest.mark.parametrize("stem", _params())
def test_generated_code_matches_golden(stem: str, tmp_path: Path) -> None:
    want = golden().get(stem)
    if want is None:
        pytest.fail(f"{GOLDEN.relative_to(ROOT)} has no {stem}; write it with: {UPDATE}")
    got = source(stem, cache_dir=tmp_path)
    if got != want:
        diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "now"))[:80])
        pytest.fail(f"{stem}: the generated OpenCL differs from {GOLDEN.relative_to(ROOT)}; if the change is "
                    f"intended, rewrite it with: {UPDATE}\n{diff}")


def test_unstable_entries_name_variants() -> None:
    assert set(UNSTABLE) <= set(VARIANTS), f"UNSTABLE names no variant: {sorted(set(UNSTABLE) - set(VARIANTS))}"


def test_every_golden_entry_belongs_to_a_variant() -> None:
    stale = sorted(set(golden()) - set(VARIANTS))
    assert not stale, f"golden entries of no example variant (drop them with {UPDATE}): {stale}"


def update() -> None:
    """Write every variant's entry, and drop those of variants that no longer exist."""
    golden_files.rewrite(GOLDEN, VARIANTS, lambda stem, cache: source(stem, cache_dir=cache))


if __name__ == "__main__":
    golden_files.main(update, UPDATE)
