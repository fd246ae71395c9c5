"""`pip install .` ships every package of the library and every data file beside its modules (a wheel without
one fails only after installing)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("ledger", "projections", "temporal", "gate", "memory", "evaluation")


def test_every_library_package_is_listed_for_installation() -> None:
    line = re.search(r"^packages = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.MULTILINE)
    assert line, "pyproject.toml lists its packages on one line"
    listed = set(re.findall(r'"([\w.]+)"', line.group(1)))
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in LIBRARY
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found == listed, f"missing from pyproject: {sorted(found - listed)}; listed but absent: {sorted(listed - found)}"


def unshipped(package_data: dict[str, list[str]], packages: set[str]) -> list[str]:
    """Files beside the library's modules (data the code reads) that no package-data pattern installs."""
    missing = []
    for top in LIBRARY:
        for path in sorted((ROOT / top).rglob("*")):
            relative = path.relative_to(ROOT)
            if (not path.is_file() or path.suffix in (".py", ".pyc")
                    or any(part.startswith((".", "__pycache__")) for part in relative.parts)):
                continue
            owner = next(".".join(relative.parts[:i]) for i in range(len(relative.parts) - 1, 0, -1)
                         if ".".join(relative.parts[:i]) in packages)
            inside = Path(*relative.parts[len(owner.split(".")):]).as_posix()
            if not any(fnmatch.fnmatch(inside, pattern) for pattern in package_data.get(owner, ())):
                missing.append(relative.as_posix())
    return missing


def test_every_data_file_is_installed_as_package_data() -> None:
    tomllib = pytest.importorskip("tomllib")

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    data, packages = setuptools["package-data"], set(setuptools["packages"])
    assert unshipped(data, packages) == []
    # Control: without the data glob the bundled sample dataset would not be installed.
    trimmed = {**data, "evaluation": [p for p in data["evaluation"] if p != "data/*.json"]}
    assert "evaluation/data/sample_seed.json" in unshipped(trimmed, packages)
