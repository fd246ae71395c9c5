"""`import ledgermem` gives the public API, loaded on first use so the command starts without a database."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import ledgermem

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(set(ledgermem.__all__) - {"__version__"}))
def test_every_public_name_is_the_object_of_its_module(name: str) -> None:
    value = getattr(ledgermem, name)
    assert getattr(importlib.import_module(ledgermem._API[name]), name) is value
    assert name in dir(ledgermem)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        ledgermem.Nope  # noqa: B018


def test_importing_the_package_loads_no_database() -> None:
    script = "import sys, ledgermem\nprint('duckdb' in sys.modules, 'ledgermem.memory' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "False"], done.stderr
    # Control: using a name loads what defines it.
    script = "import sys, ledgermem\nledgermem.Memory\nprint('duckdb' in sys.modules, 'ledgermem.memory' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True"], done.stderr


def test_the_version_is_the_installed_distribution_s() -> None:
    from importlib import metadata

    assert ledgermem.__version__ == metadata.version("ledgermem")
