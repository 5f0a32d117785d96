"""Type-check the `lift` package with mypy (issue 43), configured by pyproject.toml's [tool.mypy].

setup.cfg maps `lift.rules` -> rules/, `lift.rewrites` -> rewrites/, `lift.constraints` -> constraints/
(package_dir), which mypy cannot follow from the source tree. So this builds a staging tree in a
temporary directory (a `lift/` of symlinks to every entry of the real lift/ plus the mapped
subpackages), runs `python -m mypy -p lift` there, and prints mypy's report with the paths mapped
back to the real files (lift/rules/x.py -> rules/x.py). The exit status is mypy's.

    python .ci/typecheck.py [extra mypy arguments]
"""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_dirs() -> dict[str, str]:
    """setup.cfg's package_dir: {'lift': 'lift', 'lift.rules': 'rules', ...}."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    out: dict[str, str] = {}
    for line in cfg.get("options", "package_dir", fallback="").splitlines():
        if "=" in line:
            name, path = (s.strip() for s in line.split("=", 1))
            out[name] = path
    return out


def stage(tmp: Path, dirs: dict[str, str]) -> list[tuple[str, str]]:
    """Build the staging tree under tmp; return (staged prefix, real prefix) pairs, longest first."""
    top = tmp / "lift"
    top.mkdir()
    real_top = ROOT / dirs.get("lift", "lift")
    mapped = {name.split(".", 1)[1]: path for name, path in dirs.items() if name.startswith("lift.")}
    for entry in sorted(real_top.iterdir()):
        if entry.name not in mapped and entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    prefixes = [("lift/", dirs.get("lift", "lift").rstrip("/") + "/")]
    for sub, path in mapped.items():
        (top / sub).symlink_to(ROOT / path)
        prefixes.append((f"lift/{sub}/", path.rstrip("/") + "/"))
    return sorted(prefixes, key=lambda p: -len(p[0]))


def main(argv: list[str]) -> int:
    dirs = package_dirs()
    with tempfile.TemporaryDirectory(prefix="liftcl-typecheck-") as d:
        tmp = Path(d)
        prefixes = stage(tmp, dirs)
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--cache-dir", str(ROOT / ".mypy_cache"), "-p", "lift", *argv]
        env = dict(os.environ, MYPY_FORCE_COLOR="0")
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
    pattern = re.compile(r"^(" + "|".join(re.escape(s) for s, _ in prefixes) + r")", re.M)
    real = dict(prefixes)
    for text, stream in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
        stream.write(pattern.sub(lambda m: real[m.group(1)], text))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
