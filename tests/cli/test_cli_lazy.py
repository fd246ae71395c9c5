"""The root command imports a command's module only when that command runs: `--version` stays light.

Its time and memory are measured in benchmarks/ (`cli_startup`); here: which
modules it loads, and that the table of command modules is whole and right.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from ledgermem.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[2]


def misplaced(group: click.Group, table: dict[str, str]) -> list[str]:
    """Commands the table does not name, or names under another module than the one that declares them."""
    found = {name: getattr(cmd.callback, "__module__", "?") for name, cmd in group.commands.items()}
    wrong = [f"{n}: declared in {m}, table says {table.get(n)}" for n, m in found.items() if table.get(n) != m]
    return sorted(wrong + [f"{n}: in the table, declared nowhere" for n in table if n not in found])


def test_the_table_names_every_command_and_its_module() -> None:
    from ledgermem.cli.commands import cli  # imports every command module

    assert misplaced(cli, COMMANDS) == []


def test_control_a_wrong_or_missing_entry_is_reported() -> None:
    from ledgermem.cli.commands import cli

    wrong = {**COMMANDS, "sql": "ledgermem.cli.temporal"}
    assert misplaced(cli, wrong) == ["sql: declared in ledgermem.cli.commands, table says ledgermem.cli.temporal"]
    missing = {k: v for k, v in COMMANDS.items() if k != "ddl"}
    assert misplaced(cli, missing) == ["ddl: declared in ledgermem.cli.temporal, table says None"]


def _loaded_after(*args: str) -> set[str]:
    script = ("import sys\nfrom ledgermem.cli.main import cli\n"
              "try:\n    cli.main(args=sys.argv[1:], prog_name='ledgermem')\nexcept SystemExit:\n    pass\n"
              "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    return set(done.stderr.split())


def test_version_loads_neither_duckdb_nor_the_harness() -> None:
    loaded = _loaded_after("--version")
    assert "click" in loaded  # the probe sees what was imported
    assert not {"duckdb", "pyarrow", "polars", "matplotlib", "ledgermem.cli.commands", "ledgermem.evaluation.runner"} & loaded


def test_control_a_command_loads_its_module() -> None:
    loaded = _loaded_after("ddl", "--help")
    assert "ledgermem.cli.temporal" in loaded and "ledgermem.cli.commands" not in loaded


def test_plotting_is_loaded_by_report_only() -> None:
    assert "matplotlib" not in _loaded_after("run", "--help")
    # Control: the probe sees matplotlib when the report module is loaded.
    script = "import sys, ledgermem.evaluation.report\nprint('matplotlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.stdout.strip() == "True"


def test_a_default_run_loads_neither_requests_nor_parquet(tmp_path: Path) -> None:
    """The heuristic backend makes no HTTP call and a run writes no Parquet: their libraries stay unloaded.
    Nor does a run load Arrow or numpy: its appends and flushes go by parameters and its (small) ledger is
    verified row by row, about 35 MiB less peak memory."""
    runs = str(tmp_path / "runs")
    loaded = _loaded_after("run", "--episodes", "1", "--turns", "6", "--runs-dir", runs, "--run-id", "lean", "--json")
    assert {"duckdb", "ledgermem.evaluation.runner", "ledgermem.evaluation.outputs"} <= loaded  # the run ran
    assert not {"requests", "urllib3", "ledgermem.ledger.parquet", "pyarrow.parquet", "pyarrow.fs"} & loaded
    assert not {"pyarrow", "numpy", "polars"} & loaded
    # Control: the probe sees Parquet loaded by the command that writes it, on the same run.
    exported = _loaded_after("export", "lean", "--runs-dir", runs, "--to", str(tmp_path / "export"))
    assert {"ledgermem.ledger.parquet", "pyarrow.parquet", "pyarrow", "numpy"} <= exported
    assert (tmp_path / "export").is_dir()


def test_control_an_http_backend_loads_requests() -> None:
    script = ("import sys\nfrom ledgermem.memory.http_backend import OpenAICompatibleBackend, HttpSettings\n"
              "print('requests' in sys.modules)\n"
              "OpenAICompatibleBackend(HttpSettings(preset='http', base_url='http://127.0.0.1:9/v1', model='m'), "
              "tokenizer='estimate:v1')\nprint('requests' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.stdout.split() == ["False", "True"], done.stderr[-800:]
