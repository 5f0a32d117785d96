"""Writing a user's file all at once: a temporary file in the same folder, renamed on success.

    write_atomic("export.json", text)        # FILE is replaced only by a complete new FILE
    with replacing("plot.png") as tmp:        # for writers that take a path (matplotlib's savefig)
        fig.savefig(tmp)

A failure while writing (a full disk, an exception in the writer, an interrupt) leaves FILE as it
was and removes the temporary file; the rename is atomic, so a reader sees the old or the new file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside `path` (same suffix) to write; renamed to `path` when the block ends
    without an exception, removed otherwise. A new file gets the umask's permissions, a replaced one
    keeps its own."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".",
                               prefix=f".{target.name}.", suffix=f".tmp{target.suffix}")
    os.close(fd)
    try:
        yield Path(tmp)
        try:
            mode = target.stat().st_mode & 0o7777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Replace the file at `path` with `data` (text as UTF-8) at once: all of it, or the old file."""
    with replacing(path) as tmp:
        with tmp.open("wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
