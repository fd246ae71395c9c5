"""notebooks/analyze_run.ipynb runs top to bottom against a fresh run, synthetic and personal-data.

The notebook is executed in a `python3` kernel (the one ipykernel installs into the
environment) with `LEDGERMEM_RUN` pointing at a small run made here; every cell must
run without an error, the figures must be inline images, the blame cell must name the
raw record that `temporal.blame` finds, and nothing may be written to disk.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from nbclient import NotebookClient

from ledgermem.cli.commands import cli
from ledgermem.memory.runs import open_run
from ledgermem.temporal import Episode, blame

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "analyze_run.ipynb"
RUN_ARGS = ["run", "--episodes", "2", "--turns", "16", "--run-id", "nb",
            "--chain-budget", "100", "--summarizer-input-tokens", "60"]


def make_run(runs_dir: Path, *extra: str) -> Path:
    result = CliRunner().invoke(cli, [*RUN_ARGS, "--runs-dir", str(runs_dir), *extra], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return runs_dir / "nb"


def execute(workdir: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}).execute()
    return nb


def outputs(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def stdout_of(nb: nbformat.NotebookNode, tag: str) -> str:
    cells = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"expected one cell tagged {tag!r}"
    return "".join(o.text for o in cells[0].outputs if o.output_type == "stream" and o.name == "stdout")


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_the_stored_notebook_has_no_outputs_and_a_python3_kernel() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


@pytest.mark.parametrize("personal", [False, True], ids=["synthetic", "personal-data"])
def test_the_notebook_runs_against_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, personal: bool) -> None:
    run_dir = make_run(tmp_path / "runs", "--personal-data" if personal else "--no-personal-data")
    assert (run_dir / "ledger.keys.duckdb").exists() == personal
    monkeypatch.setenv("LEDGERMEM_RUN", str(run_dir))
    monkeypatch.delenv("LEDGERMEM_EPISODE", raising=False)
    before, notebooks_before = files_under(tmp_path), files_under(NOTEBOOK.parent)

    nb = execute(tmp_path)  # raises CellExecutionError naming the cell if any cell fails

    assert not [o for o in outputs(nb) if o.output_type == "error"]
    images = [o for o in outputs(nb) if "image/png" in o.get("data", {})]
    assert len(images) >= 3, f"{len(images)} inline images"
    assert files_under(tmp_path) == before, "the notebook wrote files next to the run"
    assert files_under(NOTEBOOK.parent) == notebooks_before, "the notebook wrote files next to itself"

    printed = stdout_of(nb, "blame")
    system, episode = re.search(r"^episode: (\S+)/(\S+)$", printed, re.MULTILINE).groups()
    slot = re.search(r"^slot: (.+)$", printed, re.MULTILINE).group(1)
    with open_run(run_dir / "ledger.duckdb") as (ledger, _):
        run_id = ledger.conn.execute("SELECT run_id FROM events WHERE event_type = 'run_started'").fetchall()[0][0]
        expected = blame(ledger.conn, Episode(run_id, system, episode), slot)
    assert expected.value is not None and expected.records
    assert f"value: {expected.value}\n" in printed
    for record in expected.records:
        assert f"raw record: {record['record_id']} " in printed
        assert record["user_text"] in printed  # plaintext, also when the events are sealed


def test_a_missing_run_names_the_command_that_makes_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    parameters = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    monkeypatch.setenv("LEDGERMEM_RUN", str(tmp_path / "no-such-run"))
    with pytest.raises(FileNotFoundError, match=r"ledgermem run --run-id demo"):
        exec(compile(parameters.source, "parameters", "exec"), {})
