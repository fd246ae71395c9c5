"""`pip install .` ships every package of the library under one namespace, `ledgermem`, and every data file beside
its modules (a wheel without one fails only after installing); nothing else lands at the top of site-packages."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "ledgermem"
FOLDERS = ("ledger", "projections", "temporal", "gate", "memory", "datasets", "evaluation", "service", "cli",
           "benchmarks")


def setuptools_table() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def folder_of(package: str, package_dir: dict[str, str]) -> Path:
    """The folder a package is built from: its own package-dir entry, or its parent's folder plus its name."""
    if package in package_dir:
        return ROOT / package_dir[package]
    parent, _, leaf = package.rpartition(".")
    return folder_of(parent, package_dir) / leaf


def expected_packages() -> set[str]:
    """Every folder with an `__init__.py` under the library's folders, named as installed."""
    found = {NAMESPACE}
    for top in FOLDERS:
        for init in (ROOT / top).rglob("__init__.py"):
            found.add(".".join((NAMESPACE, *init.parent.relative_to(ROOT).parts)))
    return found


def test_every_library_package_is_listed_under_the_namespace() -> None:
    table = setuptools_table()
    listed, package_dir = set(table["packages"]), table["package-dir"]
    assert expected_packages() == listed, (f"missing from pyproject: {sorted(expected_packages() - listed)}; "
                                           f"listed but absent: {sorted(listed - expected_packages())}")
    assert all(p == NAMESPACE or p.startswith(NAMESPACE + ".") for p in listed)
    for package in listed:
        assert (folder_of(package, package_dir) / "__init__.py").is_file(), package
    # the checkout's namespace folder links to the same folders, so it imports the way an installation does
    for top in FOLDERS:
        assert (ROOT / NAMESPACE / top).resolve() == (ROOT / top).resolve(), top


def unshipped(package_data: dict[str, list[str]], packages: set[str], package_dir: dict[str, str]) -> list[str]:
    """Files beside the library's modules (data the code reads) that no package-data pattern installs."""
    folders = {folder_of(p, package_dir).resolve(): p for p in packages}
    missing = []
    for top in FOLDERS:
        for path in sorted((ROOT / top).rglob("*")):
            relative = path.relative_to(ROOT)
            if (not path.is_file() or path.suffix in (".py", ".pyc")
                    or any(part.startswith((".", "__pycache__")) for part in relative.parts)):
                continue
            owner_dir = next(d for d in path.resolve().parents if d in folders)
            inside = path.resolve().relative_to(owner_dir).as_posix()
            if not any(fnmatch.fnmatch(inside, pattern) for pattern in package_data.get(folders[owner_dir], ())):
                missing.append(relative.as_posix())
    return missing


def test_every_data_file_is_installed_as_package_data() -> None:
    table = setuptools_table()
    data, packages, package_dir = table["package-data"], set(table["packages"]), table["package-dir"]
    assert unshipped(data, packages, package_dir) == []
    # Control: without the data glob the bundled sample dataset would not be installed.
    trimmed = {**data, "ledgermem.datasets": [p for p in data["ledgermem.datasets"] if p != "data/*.json"]}
    assert "datasets/data/sample_seed.json" in unshipped(trimmed, packages, package_dir)


def test_a_built_wheel_puts_only_the_namespace_at_the_top(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "runs", "__pycache__", "*.egg-info", "build", "dist", ".pytest_cache", ".mypy_cache"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                           "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("ledgermem-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {NAMESPACE}, sorted(tops)
    for module in ("ledgermem/__init__.py", "ledgermem/ledger/store.py", "ledgermem/cli/main.py",
                   "ledgermem/datasets/data/sample_seed.json", "ledgermem/service/explorer/index.html",
                   "ledgermem/datasets/phrasing/en.dev.json", "ledgermem/temporal/temporal.sql"):
        assert module in names, module
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "ledgermem = ledgermem.cli.main:main" in zipfile.ZipFile(wheel).read(entry).decode()
