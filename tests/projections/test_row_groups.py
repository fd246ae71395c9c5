"""A projection file keeps its small row groups through every writer's checkpoints (`ROW_GROUP_SIZE`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from ledgermem.ledger.errors import LedgerLocked
from ledgermem.projections.materialise import ROW_GROUP_SIZE, ProjectionStore
from ledgermem.projections.scd2 import TABLES, arrow_schema

SPEC = next(s for s in TABLES if s.name == "window_versions")
REPO = Path(__file__).resolve().parents[2]


def _rows(episode: str, n: int) -> pa.Table:
    return pa.Table.from_pylist([
        {"run_id": "run", "system": "three_layer", "episode_id": episode, "record_id": f"r{i:06d}", "turn": i,
         "version_id": f"{episode}-{i}", "valid_from_seq": i + 1, "valid_to_seq": None, "valid_from_turn": i,
         "valid_to_turn": None} for i in range(n)], schema=arrow_schema(SPEC))


def _append(conn: duckdb.DuckDBPyConnection, table: pa.Table) -> None:
    conn.register("_rows", table)
    conn.execute(f"INSERT INTO {SPEC.name} SELECT * FROM _rows")
    conn.unregister("_rows")


def _largest_row_group(path: Path) -> tuple[int, int]:
    """(rows in the largest row group, row groups) of the table in the file, read after every writer closed."""
    with duckdb.connect(str(path), read_only=True) as conn:
        sizes = [int(n) for (n,) in conn.execute(
            f"SELECT max(count) FROM pragma_storage_info('{SPEC.name}') GROUP BY row_group_id").fetchall()]
    return max(sizes), len(sizes)


def _written_twice(path: Path, second_writer: str) -> tuple[int, int]:
    """A store writes 2.5 row groups' worth of rows; a second writer, reopening the file, adds a few and closes."""
    with ProjectionStore(path) as store:
        _append(store.conn, _rows("ep-1", ROW_GROUP_SIZE * 5 // 2))
    if second_writer == "store":
        with ProjectionStore(path) as store:
            _append(store.conn, _rows("ep-2", 100))
    else:
        with duckdb.connect(str(path)) as conn:
            _append(conn, _rows("ep-2", 100))
            conn.execute("CHECKPOINT")
    return _largest_row_group(path)


def test_every_store_writes_and_keeps_row_groups_of_the_set_size(tmp_path: Path) -> None:
    largest, groups = _written_twice(tmp_path / "p.duckdb", "store")
    assert largest <= ROW_GROUP_SIZE
    assert groups >= 3


def test_control_a_writer_attaching_without_the_size_merges_the_row_groups(tmp_path: Path) -> None:
    """Must-fail control: DuckDB takes the size from the attach, not the file; a plain `duckdb.connect` writer's
    checkpoint merges the groups back to its own size, which the check above catches."""
    largest, groups = _written_twice(tmp_path / "p.duckdb", "plain")
    assert largest > ROW_GROUP_SIZE
    assert groups < 3


def test_two_stores_of_one_file_in_a_process_share_one_database(tmp_path: Path) -> None:
    path = tmp_path / "p.duckdb"
    with ProjectionStore(path) as first, ProjectionStore(path) as second:
        _append(first.conn, _rows("ep-1", 3))
        assert second.conn.execute(f"SELECT count(*) FROM {SPEC.name}").fetchone() == (3,)
    with ProjectionStore(path, read_only=True) as reader:
        assert reader.conn.execute(f"SELECT count(*) FROM {SPEC.name}").fetchone() == (3,)


HOLD = """
import sys
from ledgermem.projections.materialise import ProjectionStore
with ProjectionStore(sys.argv[1]):
    print("ready", flush=True)
    sys.stdin.readline()
"""


def test_a_file_another_process_writes_is_refused_as_locked(tmp_path: Path) -> None:
    path = tmp_path / "p.duckdb"
    ProjectionStore(path).close()
    with subprocess.Popen([sys.executable, "-c", HOLD, str(path)], cwd=REPO, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": ""}) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            assert proc.stdout.readline().strip() == "ready"
            with pytest.raises(LedgerLocked, match="open for writing in another process"):
                ProjectionStore(path)
        finally:
            proc.communicate("\n", timeout=60)
    assert proc.returncode == 0
