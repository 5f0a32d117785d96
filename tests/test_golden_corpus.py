"""Golden OpenCL for a corpus beyond the examples: a refactor must leave generated code byte-identical.

`tests/test_golden.py` pins every variant of the six examples. This test pins what the rest of the
project compiles by default, where the policy of `lift.compile` (database, default reduction, default
register blocks and grid launch, automatic points, widths, specialisation, GPU tiles) decides the
code: each seed workload of the papers (`benchmarks/seed_programs.py`) generic and specialised to its
tiny and reduced sizes, each Tensor Comprehensions example (`examples/tc/`) at small sizes, the
VGG-16 layers at the small scale, LIFT's benchmark suite (`examples/lift_suite/`) at LIFT's small
sizes, and the examples' high-level programs for the offline GPU profiles.
Every program is compiled for an offline profile (so the z3 mapping does not depend on the attached
device) with a fresh cache folder (no tuning database). A compile that raises is pinned too: its
error class and message are the golden text.

    python tests/test_golden_corpus.py --update      # after checking the change in the diff
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "golden" / "corpus.json"  # {case: its OpenCL source}, one file
UPDATE = f"python tests/{Path(__file__).name} --update"

for extra in ("examples", "benchmarks"):
    if str(ROOT / extra) not in sys.path:
        sys.path.insert(0, str(ROOT / extra))

import golden_files  # noqa: E402

import lift  # noqa: E402
import lift.devices  # noqa: E402
from lift.errors import LiftError  # noqa: E402


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _source(make: Callable[[], Any], device: str, arrays: Callable[[], tuple[Any, ...]] | None,
            cache: str) -> str:
    """The OpenCL source of `make()` compiled for the profile `device`, specialised to `arrays()`
    when given; a `LiftError` becomes its class name and message."""
    try:
        prog = lift.compile(make(), device=lift.devices.profile(device), cache_dir=cache)
        if arrays is not None:
            prog = prog.specialised(*arrays())
        return prog.source
    except LiftError as err:
        return f"// {type(err).__name__}: {err}\n"


def _seed_cases() -> dict[str, tuple[Callable[[], Any], str, Any]]:
    from seed_programs import SEEDS

    out: dict[str, tuple[Callable[[], Any], str, Any]] = {}
    for seed in SEEDS:
        out.setdefault(f"seed-{seed.name}-generic", (seed.build, "pocl-cpu", None))
        for scale in ("tiny", "quick"):
            sizes = getattr(seed, scale)
            stem = f"seed-{seed.name}-{scale}-{'x'.join(map(str, sizes))}"
            out.setdefault(stem, (seed.build, "pocl-cpu", functools.partial(_inputs, seed, sizes)))
    return out


def _inputs(seed: Any, sizes: tuple[int, ...]) -> tuple[Any, ...]:
    return tuple(seed.inputs(sizes))


def _tc_cases() -> dict[str, tuple[Callable[[], Any], str, Any]]:
    out: dict[str, tuple[Callable[[], Any], str, Any]] = {}
    for path in sorted((ROOT / "examples" / "tc").glob("*.tc")):
        try:
            functions = lift.tc(path.read_text())
        except LiftError:
            continue  # a TC the front end refuses has no code to pin
        for name, prog in functions.items():
            out[f"tc-{slug(path.stem)}-{slug(name)}"] = (functools.partial(lambda p: p, prog), "pocl-cpu", None)
    return out


def _vgg_cases() -> dict[str, tuple[Callable[[], Any], str, Any]]:
    from vgg_layers import programs

    return {f"vgg-{slug(name)}": (functools.partial(lambda p: p, prog), "pocl-cpu", None)
            for name, (prog, _) in programs("small").items()}


def _suite_package() -> Any:
    """examples/lift_suite, loaded under a name of its own: `lift_suite` may be the benchmark script
    of that name (benchmarks/lift_suite.py), which other test modules' paths put first."""
    name = "lift_suite_programs"
    if name not in sys.modules:
        folder = ROOT / "examples" / "lift_suite"
        spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _suite_cases() -> dict[str, tuple[Callable[[], Any], str, Any]]:
    suite = _suite_package()
    return {f"suite-{slug(name)}": (functools.partial(lambda i: suite.make(i, False).program, i), "pocl-cpu", None)
            for i, (name, _) in enumerate(suite.entries(False))}


def _gpu_cases() -> dict[str, tuple[Callable[[], Any], str, Any]]:
    out: dict[str, tuple[Callable[[], Any], str, Any]] = {}
    for example in ("dot", "gemv", "matmul", "conv", "stencil2d", "axpy"):
        module = importlib.import_module(example)
        for v in module.variants():
            if "high-level" not in slug(v.name) or v.compile_kw:
                continue
            for device in ("nvidia", "mali-g72"):
                out[f"gpu-{device}-{example}-{slug(v.name)}"] = (functools.partial(lambda p: p, v.program),
                                                                 device, None)
    return out


@functools.cache
def cases() -> dict[str, tuple[Callable[[], Any], str, Any]]:
    return {**_seed_cases(), **_tc_cases(), **_vgg_cases(), **_suite_cases(), **_gpu_cases()}


# Cases whose code can differ on a heavily loaded machine (a non-strict expected failure there).
# None now: z3's questions are bounded by its resource counter, not the clock (tc-gconv-gconv was one
# until then; tests/test_solver_limits.py compiles it with every wall-clock guard cut to 1 ms).
UNSTABLE: dict[str, str] = {}


def golden() -> dict[str, str]:
    return golden_files.load(CORPUS)


def _ids() -> list[str]:
    return sorted(cases())


@pytest.mark.device
@pytest.mark.parametrize("stem", [pytest.param(s, marks=[pytest.mark.xfail(reason=UNSTABLE[s], strict=False)]
                                                if s in UNSTABLE else [], id=s) for s in _ids()])
def test_corpus_code_matches_golden(stem: str, tmp_path: Path) -> None:
    want = golden().get(stem)
    if want is None:
        pytest.fail(f"{CORPUS.relative_to(ROOT)} has no {stem}; write it with: {UPDATE}")
    make, device, arrays = cases()[stem]
    got = _source(make, device, arrays, str(tmp_path))
    if got != want:
        diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "now"))[:80])
        pytest.fail(f"{stem}: the generated OpenCL differs from {CORPUS.relative_to(ROOT)}; if intended: {UPDATE}\n"
                    f"{diff}")


def test_every_corpus_entry_belongs_to_a_case() -> None:
    stale = sorted(set(golden()) - set(cases()))
    assert not stale, f"golden entries of no corpus case (drop them with {UPDATE}): {stale}"


def update() -> None:
    golden_files.rewrite(CORPUS, _ids(), lambda stem, cache: _source(*cases()[stem], cache))


if __name__ == "__main__":
    golden_files.main(update, UPDATE)
