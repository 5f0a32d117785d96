"""The OpenCL stack's on-disk caches, checked before pyopencl first loads a driver.

    prepare()      # once per process, before `import pyopencl` (lift.devices.live, lift.runtime);
                   # also pins PoCL's worker threads to cores (lift.devices.affinity)

Two caches below liftcl write where the user may not be able to: PoCL's kernel cache
(`$POCL_CACHE_DIR`, else `$XDG_CACHE_HOME/pocl/kcache`, else `~/.cache/pocl/kcache`; when PoCL
cannot create it, it lists no device at all) and pyopencl's invoker cache (pytools'
`$XDG_CACHE_HOME/pytools`, else `~/.cache/pytools`: a raw `sqlite3.OperationalError` at the first
call of a kernel with new argument types). Each is tried by creating a file in it; an unwritable
one is replaced, for this process and the processes it starts (through the environment), by a
temporary folder (PoCL: removed at exit) or by no cache (pyopencl: `PYOPENCL_NO_CACHE`), with one
`CacheUnwritable` warning (for both) naming each folder, the error and the fallback. liftcl's own caches
(build cache, device verdicts, tuning database) already go on without writing.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from lift.devices import affinity
from lift.errors import LiftWarning

_DONE: list[bool] = []


class CacheUnwritable(LiftWarning):
    """A cache folder cannot be written; liftcl uses a temporary one or none (named in the message)."""


def pocl_cache_dir() -> Path:
    """Where PoCL keeps its kernel cache."""
    if os.environ.get("POCL_CACHE_DIR"):
        return Path(os.environ["POCL_CACHE_DIR"])
    return _xdg_cache() / "pocl" / "kcache"


def pytools_cache_dir() -> Path:
    """Where pytools (pyopencl's invoker cache) keeps its files."""
    return _xdg_cache() / "pytools"


def _xdg_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"))


def unwritable(folder: Path) -> str | None:
    """Why no file can be created in `folder` (made if missing), or None when one can."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".liftcl-probe-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as err:
        return f"{type(err).__name__}: {err}"
    return None


def prepare(*, again: bool = False) -> None:
    """Check both caches once per process (`again`: check now) and fall back where one is
    unwritable; PoCL's worker threads pinned to cores (lift.devices.affinity)."""
    if _DONE and not again:
        return
    _DONE.append(True)
    affinity.pin()
    said = []
    pocl = pocl_cache_dir()
    why = unwritable(pocl)
    if why is not None:
        tmp = tempfile.mkdtemp(prefix="liftcl-pocl-cache-")
        atexit.register(shutil.rmtree, tmp, True)
        os.environ["POCL_CACHE_DIR"] = tmp
        said.append(f"PoCL's kernel cache {pocl} cannot be written ({why}): using the temporary folder {tmp} "
                    "for this process (set POCL_CACHE_DIR to a writable folder to keep built kernels)")
    pytools = pytools_cache_dir()
    why = None if _no_pyopencl_cache() else unwritable(pytools)
    if why is not None:
        os.environ["PYOPENCL_NO_CACHE"] = "1"
        if "pyopencl" in sys.modules:  # imported already: it read the variable then
            sys.modules["pyopencl"]._PYOPENCL_NO_CACHE = True  # type: ignore[attr-defined]
        said.append(f"pyopencl's cache {pytools} cannot be written ({why}): running without it "
                    "(PYOPENCL_NO_CACHE=1: kernel-argument code is generated again in each process)")
    if said:
        warnings.warn(CacheUnwritable("; ".join(said)), stacklevel=3)


def _no_pyopencl_cache() -> bool:
    return os.environ.get("PYOPENCL_NO_CACHE", "").lower() not in ("", "0", "false", "no", "off")
