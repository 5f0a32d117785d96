"""MkDocs hook: the source tree the API reference is read from, as liftcl is installed.

setup.cfg installs three sibling folders inside the `lift` package (`rules/` as `lift.rules`,
`rewrites/` as `lift.rewrites`, `constraints/` as `lift.constraints`). mkdocstrings reads the
sources statically (griffe) and finds packages by their folders, so before the build this hook
lays out `build/api-src/lift/` as the installed package looks: a link to each entry of `lift/`
and to the three sibling folders. mkdocs.yml's `paths: [build/api-src]` points the reader there.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "api-src" / "lift"
SUBPACKAGES = {"rules": "rules", "rewrites": "rewrites", "constraints": "constraints"}


def lay_out() -> Path:
    """Make `build/api-src/lift` (links only) and return `build/api-src`."""
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    for entry in (ROOT / "lift").iterdir():
        if entry.name != "__pycache__":
            (OUT / entry.name).symlink_to(entry)
    for name, folder in SUBPACKAGES.items():
        (OUT / name).symlink_to(ROOT / folder)
    return OUT.parent


def on_startup(**_: Any) -> None:
    lay_out()


def on_pre_build(config: Any, **_: Any) -> None:
    lay_out()
