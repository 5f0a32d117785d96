"""OpenCL runtimes installed from PyPI into the Python environment, made visible to the ICD loader.

Intel's CPU runtime (`pip install -e ".[intel]"`: intel-opencl-rt, intel-cmplr-lib-rt, tbb)
puts `libintelocl.so` into `<prefix>/lib`, and its own `.icd` file names a path that does not
exist (a conda placeholder), so the loader never lists it. On import of `lift.devices`, before
pyopencl asks the loader for platforms, `register()` writes an ICD folder under the liftcl cache
holding one `.icd` file for each runtime found plus the entries the loader would read otherwise
(the folder `OCL_ICD_VENDORS` names, else /etc/OpenCL/vendors), and points `OCL_ICD_VENDORS`
at it. The library finds its own dependencies (its RUNPATH is `$ORIGIN`), so `LD_LIBRARY_PATH`
is not needed. PyPI's PoCL is found by pyopencl's loader through `PYOPENCL_HOME` either way.

    register()  # -> ~/.cache/liftcl/icd/3f2a.../ (and os.environ["OCL_ICD_VENDORS"] set), or None
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")
# (the .icd file liftcl writes, the library in <prefix>/lib it names)
RUNTIMES = (("intel-cpu.icd", "libintelocl.so"),)


def installed(prefix: str | os.PathLike | None = None) -> list[tuple[str, Path]]:
    """The runtimes of `RUNTIMES` present in `<prefix>/lib` (prefix: this Python's environment)."""
    lib = Path(prefix if prefix is not None else sys.prefix) / "lib"
    return [(icd, lib / name) for icd, name in RUNTIMES if (lib / name).is_file()]


def loader_entries(vendors: str | None) -> dict[str, str]:
    """The .icd files the loader would read without liftcl: name -> content (a library name or path).

    `vendors` is `OCL_ICD_VENDORS`: a folder of .icd files, or one .icd file; None or empty
    means the system's folder."""
    where = Path(vendors) if vendors else SYSTEM_VENDORS
    files = [where] if where.is_file() else sorted(where.glob("*.icd")) if where.is_dir() else []
    out = {}
    for f in files:
        try:
            out[f.name] = f.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
    return out


def icd_folder(entries: dict[str, str], cache: Path) -> Path:
    """The folder under `cache` holding `entries` as .icd files (named by their content's hash;
    written once, atomically, so that processes starting together agree)."""
    digest = hashlib.sha256(repr(sorted(entries.items())).encode()).hexdigest()[:16]
    folder = cache / digest
    if all((folder / name).is_file() for name in entries):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in entries.items():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content + "\n")
        os.replace(tmp, folder / name)
    return folder


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/liftcl/icd`, else `~/.cache/liftcl/icd`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "liftcl" / "icd"


def register(prefix: str | os.PathLike | None = None, environ: dict[str, str] | None = None) -> Path | None:
    """Make the runtimes installed in `prefix` visible to the ICD loader through `OCL_ICD_VENDORS`.

    Returns the ICD folder (and sets `environ["OCL_ICD_VENDORS"]` to it: `os.environ` by
    default), or None when no runtime is installed or the folder cannot be written (the loader
    then sees what it saw before). Called on import of `lift.devices`; without effect once the
    loader has listed its platforms."""
    env = os.environ if environ is None else environ
    found = installed(prefix)
    if not found:
        return None
    current = env.get("OCL_ICD_VENDORS", "")
    entries = loader_entries(current)
    if all(str(lib) in entries.values() for _, lib in found):
        return None  # registered already (by liftcl in a parent process, or by hand)
    for icd, lib in found:
        name = icd if icd not in entries else f"liftcl-{icd}"
        entries[name] = str(lib)
    try:
        folder = icd_folder(entries, cache_dir())
    except OSError:
        return None
    env["OCL_ICD_VENDORS"] = str(folder)
    return folder
