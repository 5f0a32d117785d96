"""Writing a user's file all at once: a temporary file in the same folder, renamed on success.

    write_atomic("export.json", text)        # FILE is replaced only by a complete new FILE
    with replacing("plot.png") as tmp:        # for writers that take a path (matplotlib's savefig)
        fig.savefig(tmp)

A failure while writing (a full disk, an exception in the writer, an interrupt) leaves FILE as it
was and removes the temporary file; the rename is atomic, so a reader sees the old or the new file.

What liftcl keeps for itself (its caches, the tuning database) is private: `private_folder` and
`private_file` create folders 0700 and files 0600, and `owned` says whether a cached file is this
user's (another user's is never loaded).
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


def private_folder(folder: Path) -> None:
    """Make `folder` and its missing parents, each one created readable by this user only (0700);
    folders already there are left as they are. OSError when it cannot be made."""
    missing = []
    here = Path(folder)
    while not here.is_dir():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            if not d.is_dir():
                raise
        else:
            os.chmod(d, 0o700)  # mkdir's mode passes through the umask


def private_file(path: Path) -> None:
    """Create the empty file `path` readable and writable by this user only (0600), unless it
    exists; failures are left to whoever opens it next."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        pass


def owned(st: os.stat_result) -> bool:
    """Whether a cache file (its `os.stat`) belongs to this user: another user's file is not
    loaded (whoever can write it could recompute the checksum of a binary of their own)."""
    return not hasattr(os, "getuid") or st.st_uid == os.getuid()
