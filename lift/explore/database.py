"""The persistent tuning database: one JSON object per line in `<liftcl cache>/tuning.jsonl`.

An entry is keyed by the program's canonical hash (alpha-normalised IR printed in LIFT
notation, with the C source of its user functions), the argument shapes and dtypes, the
device key and the objective; it holds the winning choices and their measurements. The
last entry for a key wins; lines that are not valid entries (a crash mid-write, an edit)
are skipped.

    db = TuningDB()                 # or TuningDB(path)
    db.lookup(key) -> dict | None;  db.store(key, entry)
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lift.ir.nodes import Node, UserFun
from lift.ir.paths import walk

VERSION = 1
_REQUIRED = ("key", "choices", "version")


def program_hash(expr: Node) -> str:
    """sha256 of the canonical (alpha-normalised) program and its user functions' C bodies."""
    from lift.ir.alpha import canonical

    canon = canonical(expr)
    funs = sorted({f"{n.name}:{n.c_source}" for _, n in walk(canon) if isinstance(n, UserFun)})
    text = str(canon) + "\0" + "\0".join(funs) + "\0" + _points_text(canon)
    return hashlib.sha256(text.encode()).hexdigest()


def _points_text(expr: Node) -> str:
    """The rewrite points' parameters (printed with the program, listed again for safety)."""
    return ";".join(f"{type(n).__name__}{sorted(n.fixed().items())!r}" for _, n in walk(expr)
                    if getattr(n, "transparent", False))


def shapes_key(arrays: Sequence[Any]) -> str:
    """The argument shapes and dtypes, e.g. `float32[1048576],float32[1048576]`."""
    def one(a: Any) -> str:
        if isinstance(a, tuple):
            return "(" + ",".join(one(x) for x in a) + ")"
        arr = np.asarray(a)
        return f"{arr.dtype}{list(arr.shape)}"

    return ",".join(one(a) for a in arrays)


def tuning_key(expr: Node, arrays: Sequence[Any], device_key: str, objective: str) -> str:
    """The database key of a tuning problem."""
    parts = [program_hash(expr), shapes_key(arrays), device_key, objective, str(VERSION)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class TuningDB:
    """An append-only JSON-lines file of tuning winners."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        if path is None:
            from lift.runtime import default_cache_dir

            path = default_cache_dir() / "tuning.jsonl"
        self.path = Path(path)

    def entries(self) -> list[dict[str, Any]]:
        """Every valid entry, in file order (corrupt lines skipped)."""
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        out = []
        for line in text.splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict) and all(k in d for k in _REQUIRED) and d["version"] == VERSION \
                    and isinstance(d["choices"], dict):
                out.append(d)
        return out

    def lookup(self, key: str) -> dict[str, Any] | None:
        """The latest entry for `key`, or None."""
        found = None
        for d in self.entries():
            if d["key"] == key:
                found = d
        return found

    def store(self, key: str, entry: Mapping[str, Any]) -> None:
        """Append an entry for `key` (one line, written at once)."""
        d = {**entry, "key": key, "version": VERSION, "stored": time.time()}
        line = json.dumps(d, sort_keys=True, default=_jsonable) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)


def _jsonable(v: Any) -> Any:
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    return str(v)
