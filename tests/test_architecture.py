"""The layering of the packages: imports only point down, all of them inside the `ledgermem` namespace.

    ledgermem (the public API)   cli   benchmarks
    service
    evaluation
    memory        datasets
    temporal   gate        (siblings: neither imports the other)
    projections
    ledger

Modules are named as installed (`ledgermem.ledger.store` for `ledger/store.py`);
the package of a module is the folder under the namespace.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "ledgermem"
_BELOW_SERVICE = ("evaluation", "datasets", "memory", "gate", "temporal", "projections", "ledger")

#: For each package, the sibling packages it may import.
ALLOWED: dict[str, frozenset[str]] = {
    "ledger": frozenset(),
    "projections": frozenset({"ledger"}),
    "temporal": frozenset({"projections", "ledger"}),
    "gate": frozenset({"projections", "ledger"}),
    "memory": frozenset({"gate", "temporal", "projections", "ledger"}),
    "datasets": frozenset({"projections", "ledger"}),
    "evaluation": frozenset({"datasets", "memory", "gate", "temporal", "projections", "ledger"}),
    "service": frozenset(_BELOW_SERVICE),
    "cli": frozenset({"service", *_BELOW_SERVICE}),
    "benchmarks": frozenset({"cli", "service", *_BELOW_SERVICE}),
    # `cli` for `python -m` only, `service` for `ledgermem.client` only
    "ledgermem": frozenset({"cli", "service", "memory", "temporal", "projections", "ledger"}),
}
PACKAGES = tuple(p for p in ALLOWED if p != NAMESPACE)


def package_of(name: str) -> str:
    """`ledgermem.gate.decide` -> `gate`; `ledgermem` -> `ledgermem`; a bare `gate.decide` -> `gate` too."""
    parts = name.split(".")
    if parts[0] == NAMESPACE:
        return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else NAMESPACE  # `ledgermem.__main__`: the API's
    return parts[0]


@dataclass(frozen=True, order=True)
class Edge:
    """One import of a project package from another module."""

    path: str
    line: int
    importer: str  # package of the importing module
    imported: str  # package it imports ("" if the import cannot be resolved)
    target: str  # the imported module as written, made absolute

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.importer} -> {self.imported or '?'} ({self.target})"


def module_name(path: Path, root: Path = ROOT) -> tuple[str, bool]:
    """Installed dotted module name of a file (`ledger/store.py` -> `ledgermem.ledger.store`), and whether it is a
    package `__init__`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    if parts[0] != NAMESPACE:
        parts.insert(0, NAMESPACE)
    return ".".join(parts), is_package


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str | None:
    """Absolute name of `from <level dots><target> import ...`; None if it climbs past the top."""
    if level == 0:
        return target or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 > len(package):
        return None
    base = package[: len(package) - (level - 1)]
    return ".".join(base + (target.split(".") if target else []))


def _literal_import_call(node: ast.Call) -> str | None:
    """`importlib.import_module("x")` / `import_module("x")` / `__import__("x")` with a literal name."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and not first.value.startswith("."):
        return first.value
    return None


def imported_modules(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str | None]]:
    """Every module a tree imports, anywhere in it (functions, classes, `if TYPE_CHECKING:`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            if base is None:
                yield node.lineno, None
            elif base == NAMESPACE:  # `from ledgermem import gate` imports a package; `... import Memory`, the API
                for alias in node.names:
                    yield node.lineno, f"{NAMESPACE}.{alias.name}" if alias.name in ALLOWED else NAMESPACE
            elif base:
                yield node.lineno, base
            else:  # `from .. import x` that lands at the top: each name is a module
                for alias in node.names:
                    yield node.lineno, alias.name
        elif isinstance(node, ast.Call):
            target = _literal_import_call(node)
            if target is not None:
                yield node.lineno, target


def project_edges(source: str, *, path: str, module: str, is_package: bool = False) -> list[Edge]:
    """Imports of project packages made by one module's source."""
    importer = package_of(module)
    tree = ast.parse(source, filename=path)
    edges = []
    for line, target in imported_modules(tree, module, is_package):
        if target is None:
            edges.append(Edge(path, line, importer, "", "<relative import beyond the top level>"))
            continue
        top = package_of(target)
        if top in ALLOWED and top != importer:
            edges.append(Edge(path, line, importer, top, target))
    return sorted(edges)


def check_source(source: str, *, path: str, module: str, is_package: bool = False) -> list[Edge]:
    """The imports in `source` that go against the layering."""
    importer = package_of(module)
    allowed = ALLOWED.get(importer, frozenset())
    return [
        e for e in project_edges(source, path=path, module=module, is_package=is_package)
        if e.imported not in allowed
    ]


def package_files() -> list[Path]:
    """Every module of every package (the real folders, not the namespace's links to them), and the API package."""
    return sorted([p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")] + list((ROOT / NAMESPACE).glob("*.py")))


def _scan() -> tuple[list[Edge], list[Edge]]:
    edges: list[Edge] = []
    violations: list[Edge] = []
    for path in package_files():
        module, is_package = module_name(path)
        source = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        edges += project_edges(source, path=rel, module=module, is_package=is_package)
        violations += check_source(source, path=rel, module=module, is_package=is_package)
    return edges, violations


# --- the real packages ---------------------------------------------------------------


def test_every_package_is_scanned() -> None:
    files = package_files()
    for pkg in PACKAGES:
        assert (ROOT / pkg / "__init__.py").is_file(), f"package {pkg} is missing"
    assert any(p.parent.name == "ledger" and p.name == "store.py" for p in files)
    edges, _ = _scan()
    # The collector sees real edges (so an empty violation list means something).
    assert any(e.importer == "projections" and e.imported == "ledger" for e in edges)


def test_imports_follow_the_layering() -> None:
    _, violations = _scan()
    assert not violations, "imports against the layering:\n" + "\n".join(str(v) for v in violations)


# --- the checker itself -----------------------------------------------------------------


def test_checker_reports_an_upward_import() -> None:
    source = "from __future__ import annotations\n\nimport json\nimport ledgermem.projections.state\n"
    violations = check_source(source, path="ledger/bad.py", module="ledgermem.ledger.bad")
    assert [str(v) for v in violations] == ["ledger/bad.py:4: ledger -> projections (ledgermem.projections.state)"]


@pytest.mark.parametrize(
    ("module", "is_package", "source", "line", "edge"),
    [
        ("ledgermem.ledger.store", False, "from ledgermem.projections.render import chain_tokens\n", 1,
         ("ledger", "projections")),
        ("ledgermem.ledger", True, "import os\nimport ledgermem.evaluation as ev\n", 2, ("ledger", "evaluation")),
        ("ledgermem.ledger.store", False, "from ..projections import state\n", 1, ("ledger", "projections")),
        ("ledgermem.ledger.sub.mod", False, "from ...gate.decide import decide\n", 1, ("ledger", "gate")),
        ("ledgermem.temporal.asof", False, "from .. import gate\n", 1, ("temporal", "gate")),
        ("ledgermem.gate.decide", False, "def f():\n    from ledgermem.temporal import asof\n    return asof\n", 2,
         ("gate", "temporal")),
        ("ledgermem.temporal.asof", False, "class C:\n    import ledgermem.gate.lexicon\n", 2, ("temporal", "gate")),
        ("ledgermem.projections.state", False,
         "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ledgermem.memory import Memory\n",
         3, ("projections", "memory")),
        ("ledgermem.memory.memory", False, "import importlib\nm = importlib.import_module('ledgermem.cli.commands')\n",
         2, ("memory", "cli")),
        ("ledgermem.projections.render", False, "x = __import__('ledgermem.gate')\n", 1, ("projections", "gate")),
        ("ledgermem.gate.decide", False, "import gate.lexicon\nfrom memory import Memory\n", 2, ("gate", "memory")),
        ("ledgermem.datasets.model", False, "from ledgermem import Memory\n", 1, ("datasets", "ledgermem")),
        ("ledgermem.evaluation.runner", False, "from ledgermem.service.core import Service\n", 1,
         ("evaluation", "service")),
    ],
    ids=[
        "from-absolute", "import-as", "relative", "relative-deep", "relative-top",
        "in-function", "in-class", "type-checking", "import_module", "dunder-import", "bare-name",
        "the-api-package", "harness-to-service",
    ],
)
def test_checker_reports_each_form_of_forbidden_import(
    module: str, is_package: bool, source: str, line: int, edge: tuple[str, str]
) -> None:
    path = module.replace(".", "/") + ("/__init__.py" if is_package else ".py")
    violations = check_source(source, path=path, module=module, is_package=is_package)
    assert [(v.line, v.importer, v.imported) for v in violations] == [(line, *edge)]
    assert str(violations[0]).startswith(f"{path}:{line}: {edge[0]} -> {edge[1]}")


def test_checker_reports_a_relative_import_past_the_top() -> None:
    violations = check_source("from .... import x\n", path="ledger/store.py", module="ledgermem.ledger.store")
    assert len(violations) == 1 and violations[0].imported == ""


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("ledgermem.ledger.store",
         "import duckdb\nfrom ledgermem.ledger.errors import LedgerError\nfrom . import schema\n"),
        ("ledgermem.projections.state",
         "from ledgermem.ledger.events import TurnRecorded\nfrom .config import MemoryConfig\n"),
        ("ledgermem.gate.decide", "from ledgermem.projections.state import evolve\nimport ledgermem.ledger\n"),
        ("ledgermem.temporal.asof",
         "from ledgermem.projections import scd2\nfrom ledgermem.ledger.store import Ledger\n"),
        ("ledgermem.memory.memory",
         "import ledgermem.gate, ledgermem.temporal, ledgermem.projections, ledgermem.ledger\n"),
        ("ledgermem.datasets.model", "from ledgermem.projections.state import slot_key\n"),
        ("ledgermem.evaluation.runner", "import ledgermem.memory, ledgermem.datasets, ledgermem.gate\n"),
        ("ledgermem.service.core", "from ledgermem.evaluation import metrics\nfrom ledgermem.temporal import as_of\n"),
        ("ledgermem.cli.commands", "import ledgermem.service, ledgermem.memory, ledgermem.ledger\nimport tests.conftest\n"),
    ],
    ids=["ledger", "projections", "gate", "temporal", "memory", "datasets", "evaluation", "service", "cli"],
)
def test_checker_accepts_downward_and_internal_imports(module: str, source: str) -> None:
    assert check_source(source, path=module.replace(".", "/") + ".py", module=module) == []


def test_checker_reports_every_offence_in_a_file() -> None:
    source = ("import ledgermem.gate\nfrom ledgermem.memory import Memory\n\n"
              "def later():\n    import ledgermem.cli.commands\n")
    violations = check_source(source, path="projections/x.py", module="ledgermem.projections.x")
    assert [str(v) for v in violations] == [
        "projections/x.py:1: projections -> gate (ledgermem.gate)",
        "projections/x.py:2: projections -> memory (ledgermem.memory)",
        "projections/x.py:5: projections -> cli (ledgermem.cli.commands)",
    ]


def test_every_import_of_our_packages_goes_through_the_namespace() -> None:
    """A bare `import gate` works from a checkout and fails once installed: none may be left."""
    bare = []
    for path in package_files():
        module, is_package = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, target in imported_modules(tree, module, is_package):
            if target and target.split(".")[0] in PACKAGES:
                bare.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert not bare, "imports outside the ledgermem namespace:\n" + "\n".join(bare)


# -- the picture in docs/architecture.md is this table -------------------------------------------

ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"


def documented_arrows(text: str) -> dict[str, frozenset[str]]:
    """The "Allowed arrows" list of docs/architecture.md: `- package → a, b` per line."""
    section = text.split("\n## Allowed arrows\n", 1)[1].split("\n## ", 1)[0]
    arrows: dict[str, frozenset[str]] = {}
    for line in section.splitlines():
        if not line.startswith("- "):
            continue
        package, _, targets = line[2:].partition("→")
        arrows[package.strip()] = frozenset(t.strip() for t in targets.split(",") if t.strip())
    return arrows


def test_the_documented_arrows_are_the_enforced_ones() -> None:
    assert documented_arrows(ARCHITECTURE_DOC.read_text(encoding="utf-8")) == ALLOWED


def test_control_a_documented_arrow_the_code_does_not_allow_is_caught() -> None:
    text = ARCHITECTURE_DOC.read_text(encoding="utf-8").replace("- gate → projections, ledger",
                                                                  "- gate → memory, projections, ledger")
    assert documented_arrows(text) != ALLOWED
    assert documented_arrows(text)["gate"] - ALLOWED["gate"] == {"memory"}


# -- no import circle between modules --------------------------------------------------------

#: Circles still to be taken apart, by package (none now).
KNOWN_CIRCLES: frozenset[str] = frozenset()


def module_graph(files: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """module -> the project modules it imports anywhere (a `from a import b` of a submodule counts as a.b)."""
    known = set(files)
    graph: dict[str, set[str]] = {m: set() for m in known}
    for module, (source, is_package) in files.items():
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _resolve(module, is_package, node.level, node.module)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names] if base \
                    else []
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    graph[module].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _project_sources() -> dict[str, tuple[str, bool]]:
    out = {}
    for path in package_files():
        module, is_package = module_name(path)
        out[module] = (path.read_text(encoding="utf-8"), is_package)
    return out


def test_no_import_circle_between_modules() -> None:
    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    found = [c for c in circles(module_graph(_project_sources()))
             if not all(".".join(m.split(".")[:2]) in KNOWN_CIRCLES for m in c)]
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_control_a_circle_is_found() -> None:
    files = {"ledgermem.memory.a": ("from ledgermem.memory.b import x\n", False),
             "ledgermem.memory.b": ("def f():\n    from ledgermem.memory import a\n", False),
             "ledgermem.memory": ("", True), "ledgermem.memory.c": ("import ledgermem.memory.a\n", False)}
    assert circles(module_graph(files)) == [["ledgermem.memory.a", "ledgermem.memory.b"]]
