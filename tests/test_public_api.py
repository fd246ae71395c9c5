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


@pytest.mark.parametrize("first", ["ledgermem.Ledger", "control: ledgermem.ledger.store.Ledger"])
def test_a_run_ledger_reads_through_the_public_api_alone(tmp_path: Path, first: str) -> None:
    """A run's ledger holds the harness's events too; the public API reads them with no other import."""
    path = tmp_path / "ledger.duckdb"
    write = (
        "import sys; from ledgermem.ledger.store import Ledger, StreamKey\n"
        "from ledgermem.evaluation.events import RunStarted\n"
        "with Ledger(sys.argv[1]) as l: l.append(StreamKey('r', '', ''), [RunStarted(turn=0, systems=('three_layer',),"
        " config={}, versions={}, dataset={})], expected_version=0)\n"
    )
    subprocess.run([sys.executable, "-c", write, str(path)], check=True, timeout=120)
    opener = "ledgermem.Ledger" if first == "ledgermem.Ledger" else "ledgermem.ledger.store.Ledger"
    read = (f"import sys, ledgermem, ledgermem.ledger.store\n"
            f"with {opener}(sys.argv[1], read_only=True) as l: print([r.event.event_type for r in l.read()])\n")
    proc = subprocess.run([sys.executable, "-c", read, str(path)], capture_output=True, text=True, timeout=120)
    if first == "ledgermem.Ledger":
        assert proc.returncode == 0 and proc.stdout.strip() == "['run_started']", proc.stderr[-500:]
    else:  # the module alone registers only what it imports: the harness's type is unknown to it
        assert proc.returncode != 0 and "run_started" in proc.stderr and "not registered" in proc.stderr
