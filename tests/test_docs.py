"""Every Python example in README.md and docs/ runs (issue 44).

Each ```python block of README.md and docs/**/*.md is one test, named by its file and line
(`test_block[calling.md:42]` for docs/calling.md). A block runs in a fresh namespace, as it would when copied into
a new interpreter, unless an HTML comment just before its fence says otherwise:

    <!-- docs: continue -->                       runs after the previous block, in its namespace
    <!-- docs: skip reason="needs a GPU" -->      not run (the reason is the skip's)

A continuation's test runs the whole chain (the blocks it continues, then itself) so that each test
stands alone under pytest-xdist. Blocks of other languages (```sh, ```text) are not run. The blocks
run with the current directory at the repository root (they may read examples/) and with the tuning
database in a temporary folder, so they neither read nor write the user's.
"""

from __future__ import annotations

import linecache
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
MARK = re.compile(r"^\s*<!--\s*docs:\s*(continue|skip)(?:\s+reason=\"([^\"]*)\")?\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it starts, its language, its code and its marker."""

    path: str
    line: int
    lang: str
    code: str
    mark: str | None = None
    reason: str = ""

    @property
    def id(self) -> str:
        """`README.md:7`, `calling.md:42` (docs/ left out: a `/` in a test id defeats selecting it
        by node id)."""
        return f"{self.path.removeprefix('docs/')}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file of the repository."""
    return blocks_in(path.read_text(), path.relative_to(ROOT).as_posix())


def blocks_in(text: str, rel: str) -> list[Block]:
    """The fenced blocks of Markdown `text` (the file `rel`), with the marker comment before each."""
    lines = text.splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(2):
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2), i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        mark = MARK.match(prev)
        out.append(Block(rel, start + 1, lang, "\n".join(body) + "\n",
                         mark.group(1) if mark else None, (mark.group(2) or "") if mark else ""))
        i += 1
    return out


def documents() -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def python_blocks() -> list[Block]:
    return [b for p in documents() for b in blocks_of(p) if b.lang == "python"]


def chain(block: Block, all_blocks: list[Block]) -> list[Block]:
    """The blocks to run for `block`: the ones it continues (back to one that is not a continuation)."""
    same = [b for b in all_blocks if b.path == block.path]
    k = same.index(block)
    start = k
    while same[start].mark == "continue":
        if start == 0:
            raise AssertionError(f"{block.id}: 'docs: continue' on the file's first Python block")
        start -= 1
    return same[start:k + 1]


def merged(run: list[Block]) -> str:
    """The blocks' code as one Python source: each block at its lines of the Markdown file."""
    lines: list[str] = []
    for b in run:
        lines.extend([""] * (b.line - len(lines)))
        lines.extend(b.code.splitlines())
    return "\n".join(lines) + "\n"


BLOCKS = python_blocks()


def test_blocks_found():
    """The collector sees the README's examples and the guides' (a broken fence would hide them)."""
    assert any(b.path == "README.md" for b in BLOCKS)
    assert any(b.path.startswith("docs/") for b in BLOCKS) or not (ROOT / "docs").exists()


def test_markers_are_well_formed():
    """A `docs:` comment that the pattern does not read would silently do nothing."""
    for p in documents():
        fenced = False  # markers quoted inside a code block are examples, not markers
        for n, line in enumerate(p.read_text().splitlines(), 1):
            if line.strip().startswith("```"):
                fenced = not fenced
            elif "<!-- docs:" in line and not fenced:
                m = MARK.match(line)
                assert m, f"{p.name}:{n}: unreadable marker {line.strip()!r}"
                assert m.group(1) != "skip" or m.group(2), f"{p.name}:{n}: a skip needs reason=\"...\""


SAMPLE = """# A page

<!-- docs: skip reason="needs a GPU" -->
```python
a = 1
```

```sh
not run
```

```python
b = 2
```

Text between.

<!-- docs: continue -->
```python
c = b + 1
```

1. In a list:

    ```python
    if True:
        d = 4
    ```
"""


def test_collector_reads_languages_markers_and_indented_fences():
    got = blocks_in(SAMPLE, "docs/sample.md")
    assert [(b.line, b.lang, b.mark, b.reason) for b in got] == [
        (4, "python", "skip", "needs a GPU"), (8, "sh", None, ""), (12, "python", None, ""),
        (19, "python", "continue", ""), (25, "python", None, "")]
    assert got[0].id == "sample.md:4" and got[3].code == "c = b + 1\n"
    assert got[4].code == "if True:\n    d = 4\n"  # the list item's indentation removed
    py = [b for b in got if b.lang == "python"]
    assert chain(py[2], py) == [py[1], py[2]] and chain(py[1], py) == [py[1]]
    namespace: dict[str, object] = {}
    exec(compile(merged(chain(py[2], py)), "sample.md", "exec"), namespace)
    assert namespace["c"] == 3


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("name", ["README.md", "ARCHITECTURE.md"])
def test_repository_links(name: str):
    """The relative links of the files outside the site (mkdocs checks docs/'s own) lead to files."""
    text = (ROOT / name).read_text()
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        assert (ROOT / path).exists(), f"{name}: the link {target!r} leads nowhere"


@pytest.mark.device
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    if block.mark == "skip":
        pytest.skip(block.reason)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("LIFTCL_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    run = chain(block, BLOCKS)
    for b in run:
        if b.mark == "skip":
            pytest.skip(f"continues {b.id}, which is not run: {b.reason}")
    filename = str(ROOT / block.path)
    source = merged(run)
    # The chain's code at its own lines of the Markdown file (blank elsewhere), known to linecache
    # under the file's name: tracebacks name the Markdown line, and user functions find their
    # source (liftcl reads it to translate them, as from a .py file).
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            exec(compile(source, filename, "exec"), {"__name__": "__docs__"})
    finally:
        linecache.cache.pop(filename, None)
    assert os.getcwd() == str(ROOT)
