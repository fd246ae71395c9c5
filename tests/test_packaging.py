"""`pip install .` ships every package of the library (a wheel without one fails only after installing)."""

from __future__ import annotations

import re
from pathlib import Path

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
