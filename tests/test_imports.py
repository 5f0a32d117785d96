"""Imports flow one way (STYLE 15): no module imports a later layer, except the allowlisted edges.

The layers, lowest first, are STYLE 15's chain with a place decided for every module it does
not name (see `LAYERS`). The test reads every module of `lift`, `lift.rules` (rules/),
`lift.rewrites` (rewrites/) and `lift.constraints` (constraints/) with `ast`, collects every
import of a `lift` module, module-level, function-local (lazy) and under `TYPE_CHECKING`
alike, and reports each back edge: an import of a module in a later layer. Imports within
one layer are free. `ALLOWED` lists the back edges that are there on purpose, each with its
reason; the test fails on a back edge that is not listed and on a listed edge that no longer
exists, so that the list stays true.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"lift": "lift", "rules": "lift.rules", "rewrites": "lift.rewrites", "constraints": "lift.constraints"}

# The layers, lowest first. STYLE 15: types, arith -> ir -> typecheck, interpret, userfun -> rules ->
# constraints -> rewrites -> memory -> layout -> barriers -> codegen -> runtime -> compile -> explore.
# Choices for what STYLE 15 does not name, or names together:
# - errors: the lowest layer; every stage raises `lift.errors`, and errors import nothing.
#   version (`__version__`, read by the runtime's build-cache key) imports nothing either.
#   files (writing a user's file at once: a temporary file renamed) imports nothing either.
# - devices: device profiles are plain records (pyopencl is queried lazily) that the constraints
#   read, so they sit just above errors; they import only errors.
# - choices (`lift.Choices`, the record of every decision `compile` takes) is a plain record that
#   imports only errors, with devices, so any stage may read it.
# - arith before types: types carry `Arith` sizes, and arith must not know about types.
# - lower (the default lowering) sits with constraints: both turn a rewritten program into a
#   mapped one, and `lift.compile` falls back from the z3 mapping to `lower`. realise (stage
#   "realised": the program a chosen mapping gives) sits with them too: it reads a constraint
#   space's analysis, and `Space.realise` calls it for users.
# - views (records and index arithmetic) sit low, under the IR, so a pattern's module (lift.gather)
#   defines its view beside its other cases; layout (views of the IR's memories and layout functions)
#   sits above allocation.
# - plan (`KernelSource`, what code generation hands to the runtime) sits with codegen.
# - program (`KernelSource -> Program`, runs through the runtime) sits with runtime.
# - decide (the policy: what compile plans), spaces (one program's rewritten forms and spaces,
#   kept) and specialise (a program's specialisations to its calls' sizes) sit with compile.
# - testing (public hypothesis strategies and oracles) and `lift.rules.instances` (hypothesis
#   instances of every rule's left-hand side, built from `lift.testing`'s strategies for it) are
#   test support above the pipeline; the `lift` package itself (the public API, re-exporting every
#   stage) is the top.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("lift.errors", "lift.version", "lift.files"),
    ("lift.devices", "lift.choices"),
    ("lift.arith",),
    ("lift.types",),
    ("lift.views",),  # view records and their index arithmetic: arith and types only, no IR
    ("lift.ir",),
    ("lift.typecheck", "lift.interpret", "lift.userfun", "lift.gather"),  # gather: every stage's case of one pattern
    ("lift.comprehension",),  # Tensor Comprehensions -> lift.fun programs (IR and user functions only)
    ("lift.rules",),
    ("lift.constraints", "lift.lower", "lift.realise"),
    ("lift.rewrites",),
    ("lift.allocation",),
    ("lift.layout",),
    ("lift.barriers",),
    ("lift.codegen", "lift.plan"),
    ("lift.runtime", "lift.arrays", "lift.program"),  # arrays: results kept on a device, between the two
    ("lift.compile", "lift.decide", "lift.spaces", "lift.specialise"),
    ("lift.explore",),
    ("lift.testing", "lift.spellings", "lift.rules.instances", "lift.rules.instantiate"),
    ("lift", "lift.cli", "lift.cli_tune", "lift.__main__"),
)

# Back edges that are there on purpose: (importer, imported) -> why. All of them are lazy
# (function-local) imports, so that importing the lower module does not import the higher one.
# (memory -> layout is gone: which functions only rearrange data is an IR predicate,
# lift/ir/layoutfun.py, that memory, layout and codegen all import from below.)
ALLOWED: dict[tuple[str, str], str] = {
    # `expr.type` is public API (DESIGN.md) on every expression; the rules that compute it need
    # the whole type system and size arithmetic of lift.typecheck, one layer up, and the types
    # live in its side table, so the property asks it on demand.
    ("lift.ir.nodes", "lift.typecheck"): "Expr.type property calls typecheck lazily",
    # The Deferred front end: `x + y` on expressions (`lift.ir.build.arith_op`) means a call of
    # the built-in user function `add` (`lift.userfun.builtins.OPERATORS`), which the userfun
    # translator (a layer up: it types and translates Python into C and numpy) builds.
    ("lift.ir.build", "lift.userfun.builtins"): "arith_op: operators on expressions call builtin user functions",
}
# (compile -> explore.reuse and specialise -> explore.reuse are gone: the tuning database is asked
# through the one hook `lift.decide.register_tuned`, which `lift.explore.reuse` registers.)


@dataclass(frozen=True)
class Import:
    """One import of a `lift` module: who imports what, where, and how."""

    importer: str
    imported: str
    file: Path
    line: int
    kind: str  # "module", "lazy" (inside a function) or "type-checking"

    def __str__(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}: {self.importer} -> {self.imported} ({self.kind})"


def modules() -> dict[str, Path]:
    """Every module of the four packages, by dotted name (a package by its `__init__.py`)."""
    out = {}
    for folder, package in PACKAGES.items():
        for file in sorted((ROOT / folder).rglob("*.py")):
            parts = list(file.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = file
    return out


def layer_of(module: str) -> int | None:
    """The index in `LAYERS` of the longest entry naming `module` or a package holding it."""
    best, index = "", None
    for k, layer in enumerate(LAYERS):
        for prefix in layer:
            named = module == prefix or (prefix != "lift" and module.startswith(prefix + "."))
            if named and len(prefix) > len(best):
                best, index = prefix, k
    return index


def _resolve(importer: str, file: Path, node: ast.ImportFrom, known: dict[str, Path]) -> list[str]:
    """The modules a `from ... import ...` imports: `from lift import devices` imports lift.devices."""
    if node.level:
        base = importer.split(".") if file.name == "__init__.py" else importer.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    return [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]


def _owner(module: str, known: dict[str, Path]) -> str:
    """The known module that `module` names or lies in (the longest known prefix)."""
    while module not in known and "." in module:
        module = module.rsplit(".", 1)[0]
    return module


def imports_of(importer: str, file: Path, known: dict[str, Path]) -> list[Import]:
    """Every import of a `lift` module in `file`, at any depth."""
    found: list[Import] = []

    def visit(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = kind
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = "lazy"
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                inner = "type-checking"
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                targets = _resolve(importer, file, child, known)
            else:
                targets = []
            for t in targets:
                if t == "lift" or t.startswith("lift."):
                    found.append(Import(importer, _owner(t, known), file, child.lineno, kind))
            visit(child, inner)

    visit(ast.parse(file.read_text(), filename=str(file)), "module")
    return found


def all_imports() -> list[Import]:
    known = modules()
    return [imp for name, file in known.items() for imp in imports_of(name, file, known)]


def back_edges() -> list[Import]:
    """Every import of a module in a later layer than its importer's."""
    out = []
    for imp in all_imports():
        src, dst = layer_of(imp.importer), layer_of(imp.imported)
        assert src is not None and dst is not None
        if dst > src:
            out.append(imp)
    return out


# ------------------------------------------------------------------------------- tests


def test_every_module_has_a_layer() -> None:
    known = modules()
    assert {"lift", "lift.errors", "lift.rules.rule", "lift.rewrites.point", "lift.constraints.model"} <= set(known)
    unplaced = sorted(m for m in known if layer_of(m) is None)
    assert not unplaced, f"add these modules to LAYERS in {Path(__file__).name}: {unplaced}"


def test_every_layer_entry_names_a_module() -> None:
    known = set(modules())
    stale = [p for layer in LAYERS for p in layer if p not in known]
    assert not stale, f"LAYERS names modules that do not exist: {stale}"


def test_no_new_back_edges() -> None:
    new = [str(imp) for imp in back_edges() if (imp.importer, imp.imported) not in ALLOWED]
    header = "imports against the layer order (STYLE 15); remove them or allowlist them with a reason:"
    assert not new, "\n".join([header, *new])


def test_allowlisted_back_edges_still_exist() -> None:
    present = {(imp.importer, imp.imported) for imp in back_edges()}
    gone = sorted(set(ALLOWED) - present)
    assert not gone, f"these allowlisted back edges are gone; remove them from ALLOWED: {gone}"


def test_allowlisted_back_edges_are_lazy() -> None:
    eager = [str(imp) for imp in back_edges() if (imp.importer, imp.imported) in ALLOWED and imp.kind != "lazy"]
    assert not eager, "allowlisted back edges must stay function-local imports:\n" + "\n".join(eager)


def test_the_scanner_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The scanner itself, on a made-up module `lift.codegen.fake`."""
    fake = tmp_path / "fake.py"
    fake.write_text(
        "from typing import TYPE_CHECKING\n"
        "import numpy\n"
        "from lift import devices\n"
        "from . import names\n"
        "from ..ir.nodes import Expr\n"
        "if TYPE_CHECKING:\n"
        "    from lift.plan import KernelSource\n"
        "def f():\n"
        "    import lift.arith.expr\n"
        "    from lift.compile import compile\n"
    )
    found = {(i.imported, i.line, i.kind) for i in imports_of("lift.codegen.fake", fake, modules())}
    assert found == {("lift.devices", 3, "module"), ("lift.codegen.names", 4, "module"),
                     ("lift.ir.nodes", 5, "module"), ("lift.plan", 7, "type-checking"),
                     ("lift.arith.expr", 9, "lazy"), ("lift.compile", 10, "lazy")}


def test_compile_does_not_import_the_explorer() -> None:
    """Issue 24: `lift.compile` and `lift.decide` never import `lift.explore`; the explorer plugs
    its tuning database into the policy through `lift.decide.register_tuned`."""
    edges = [str(imp) for imp in back_edges() if imp.importer in ("lift.compile", "lift.decide", "lift.spaces",
                                                                   "lift.specialise")
             and imp.imported.startswith("lift.explore")]
    assert not edges, "\n".join(edges)
