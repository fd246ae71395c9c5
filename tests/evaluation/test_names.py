"""Run ids are names, not paths: nothing outside `<runs_dir>/<id>` is written or deleted, whatever the id."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

import ledgermem.memory.names
import ledgermem.memory.runs
import ledgermem.evaluation.runner
from tests.invoke import invoke_in
from ledgermem.evaluation.cluster import run_cluster
from ledgermem.memory.errors import InvalidRunId, NotARunFolder, RunNotFound
from ledgermem.evaluation.merge import check_run_id
from ledgermem.memory.names import RUN_ID, remove_run, validate_run_id
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.memory.runs import ledger_path, resolve_run
from ledgermem.evaluation.sweep import _slug
from ledgermem.datasets.synthetic import generate_synthetic

BAD_IDS = ["../../x", "../x", "/tmp/ledgermem-abs", ".", "..", "a/b", "a\\b", "", ".hidden", "-x", "a b",
           "x" * 129, "run\n2", "ü"]
GOOD_IDS = ["demo", "run-20240101-120000", "a", "A.b_c-d", "0", "x" * 128, "v1..2"]


invoke = invoke_in


def tree(root: Path) -> set[str]:
    """Every path under root, relative, with file sizes: what a run may or may not have touched."""
    return {f"{p.relative_to(root)}:{p.stat().st_size if p.is_file() else 'dir'}" for p in root.rglob("*")}


@pytest.mark.parametrize("run_id", GOOD_IDS)
def test_names_pass(run_id: str) -> None:
    assert validate_run_id(run_id) == run_id
    assert check_run_id(run_id) == run_id  # merge and cluster use the same rule


@pytest.mark.parametrize("run_id", BAD_IDS)
def test_paths_and_odd_names_are_refused_in_one_line(run_id: str) -> None:
    with pytest.raises(InvalidRunId) as caught:
        validate_run_id(run_id)
    assert "\n" not in str(caught.value) and repr(run_id) in str(caught.value)
    with pytest.raises(InvalidRunId):
        check_run_id(run_id)
    with pytest.raises(InvalidRunId):
        ledger_path(Path("runs"), run_id)


def test_the_default_run_id_is_a_name(tmp_path: Path) -> None:
    result = invoke(tmp_path, "run", "--episodes", "1", "--turns", "4", "--systems", "three_layer",
                    "--memory-points", "0")
    assert result.exit_code == 0, result.output
    (made,) = (tmp_path / "runs").iterdir()
    assert re.fullmatch(r"run-\d{8}-\d{6}", made.name)
    assert validate_run_id(made.name) == made.name


def _arena(tmp_path: Path) -> Path:
    """parent/project/runs/keep (a real run), a file beside runs, a file in parent: all must survive."""
    work = tmp_path / "parent" / "project"
    work.mkdir(parents=True)
    (tmp_path / "parent" / "precious.txt").write_text("parent's file")
    (work / "notes.txt").write_text("project's file")
    result = invoke(work, "run", "--episodes", "1", "--turns", "4", "--systems", "three_layer",
                    "--memory-points", "0", "--run-id", "keep")
    assert result.exit_code == 0, result.output
    return tmp_path


@pytest.fixture()
def arena(tmp_path: Path) -> Path:
    return _arena(tmp_path)


@pytest.fixture(scope="module")
def shared_arena(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """For tests that must leave it as it was (and check that they did)."""
    return _arena(tmp_path_factory.mktemp("names"))


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("run_id", ["../../x", "../x", "/ABS", ".", "..", "a/b", "", ".hidden", "runs/keep"])
def test_run_with_a_path_as_id_touches_nothing(shared_arena: Path, run_id: str, force: bool) -> None:
    arena = shared_arena
    work = arena / "parent" / "project"
    run_id = run_id.replace("/ABS", str(arena / "abs-run"))
    before = tree(arena)
    result = invoke(work, "run", "--episodes", "1", "--turns", "4", "--systems", "three_layer",
                    "--memory-points", "0", "--run-id", run_id, *(["--force"] if force else []))
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "--run-id" in errors[0] and "not a run name" in errors[0]
    assert tree(arena) == before
    assert (work / "runs" / "keep" / "ledger.duckdb").is_file()


def test_control_without_the_check_a_path_id_escapes_the_runs_folder(arena: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Must-fail control: with validation switched off, `../escaped` writes outside runs/ and the tree check sees it."""
    monkeypatch.setattr(ledgermem.evaluation.runner, "validate_run_id", lambda run_id, **_: run_id)
    monkeypatch.setattr(ledgermem.memory.names, "validate_run_id", lambda run_id, **_: run_id)
    monkeypatch.setattr(ledgermem.memory.runs, "validate_run_id", lambda run_id, **_: run_id)
    runs = arena / "parent" / "project" / "runs"
    before = tree(arena)
    ds = generate_synthetic(n_episodes=1, turns=4)
    run(ds, RunOptions(run_id="../escaped", runs_dir=runs, memory_points=0))
    assert tree(arena) != before
    assert (runs.parent / "escaped" / "ledger.duckdb").is_file()


def test_library_refuses_a_path_id_before_writing(arena: Path) -> None:
    runs = arena / "parent" / "project" / "runs"
    before = tree(arena)
    ds = generate_synthetic(n_episodes=1, turns=4)
    for run_id in ("../escaped", ".", "..", str(arena / "abs")):
        with pytest.raises(InvalidRunId):
            run(ds, RunOptions(run_id=run_id, runs_dir=runs, memory_points=0, force=True))
    assert tree(arena) == before


def test_force_replaces_only_its_own_run_folder(arena: Path) -> None:
    work = arena / "parent" / "project"
    args = ("run", "--episodes", "1", "--turns", "4", "--systems", "three_layer", "--memory-points", "0")
    assert invoke(work, *args, "--run-id", "other").exit_code == 0
    (work / "runs" / "other" / "extra.txt").write_text("goes with the run")
    keep = tree(work / "runs" / "keep")
    result = invoke(work, *args, "--run-id", "other", "--force")
    assert result.exit_code == 0, result.output
    assert not (work / "runs" / "other" / "extra.txt").exists()
    assert (work / "runs" / "other" / "ledger.duckdb").is_file()
    assert tree(work / "runs" / "keep") == keep
    assert (arena / "parent" / "precious.txt").is_file() and (work / "notes.txt").is_file()


def test_remove_run_refuses_what_is_not_a_run_folder(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "plain").mkdir(parents=True)
    (runs / "plain" / "data.txt").write_text("not a run")
    outside = tmp_path / "outside"
    (outside / "shards").mkdir(parents=True)  # looks like a run folder, but lies outside runs/
    (outside / "ledger.duckdb").write_text("")
    (runs / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(NotARunFolder, match="not a run folder"):
        remove_run(runs, "plain")
    with pytest.raises(NotARunFolder, match="symbolic link"):
        remove_run(runs, "link")
    with pytest.raises(InvalidRunId):
        remove_run(runs, "..")
    assert (runs / "plain" / "data.txt").is_file() and (outside / "ledger.duckdb").is_file()
    assert remove_run(runs, "missing") is False
    (runs / "real").mkdir()
    (runs / "real" / "ledger.duckdb").write_text("")
    assert remove_run(runs, "real") is True and not (runs / "real").exists()


def test_cluster_force_refuses_a_bad_id_and_a_folder_that_is_no_run(tmp_path: Path) -> None:
    """`run --cluster --force` deletes through remove_run too; refused before the cluster is asked anything."""
    runs = tmp_path / "runs"
    (runs / "plain").mkdir(parents=True)
    (runs / "plain" / "data.txt").write_text("not a run")
    ds = generate_synthetic(n_episodes=1, turns=4)
    base = RunOptions(run_id="plain", runs_dir=runs, force=True)
    with pytest.raises(NotARunFolder):
        run_cluster(ds, base, client=None)
    with pytest.raises(InvalidRunId):
        run_cluster(ds, replace(base, run_id=".."), client=None)
    assert (runs / "plain" / "data.txt").is_file()


def test_resolve_run_takes_existing_paths_and_names_only(shared_arena: Path) -> None:
    arena = shared_arena
    work = arena / "parent" / "project"
    runs = work / "runs"
    ledger = runs / "keep" / "ledger.duckdb"
    assert resolve_run("keep", runs) == ledger
    assert resolve_run(str(ledger), runs) == ledger
    assert resolve_run(str(runs / "keep"), runs) == ledger
    for bad in ("../x", "a/b", "..", "", str(arena / "nothing-here")):
        with pytest.raises(InvalidRunId):
            resolve_run(bad, runs)
    with pytest.raises(RunNotFound, match="known runs in"):
        resolve_run("missing", runs)


@pytest.mark.parametrize("args", [
    ("verify", "../x"), ("audit", "a/b"), ("replay", ".."), ("history", "../../x", "--episode", "e", "--slot", "s"),
])
def test_read_commands_refuse_a_path_that_is_not_there_as_an_id(shared_arena: Path, args: tuple[str, ...]) -> None:
    before = tree(shared_arena)
    result = invoke(shared_arena / "parent" / "project", *args)
    assert tree(shared_arena) == before
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0 and "is not a run name" in result.output


def test_merge_and_import_refuse_a_path_as_run_id(arena: Path) -> None:
    work = arena / "parent" / "project"
    before = tree(arena)
    merged = invoke(work, "merge", "../x", "--force")
    assert merged.exit_code == 1 and "is not a run name" in merged.output
    exported = invoke(work, "export", "keep", "--to", "exports")
    assert exported.exit_code == 0, exported.output
    imported = invoke(work, "import", "exports", "--to", "copy.duckdb", "--run-id", "../keep")
    assert imported.exit_code == 2 and "--run-id" in imported.output
    assert not (work / "copy.duckdb").exists()
    assert {p for p in tree(arena) if not p.startswith("parent/project/exports")} == before


def test_sweep_ids_from_long_dataset_paths_stay_names() -> None:
    label = "/".join(["a-very-long-folder-name"] * 12) + "/data.json"
    run_id = f"sweep-01-{_slug(label)}-pattern"
    assert RUN_ID.fullmatch(run_id), run_id
    assert validate_run_id(f"sweep-01-{_slug('../..//')}-off")
