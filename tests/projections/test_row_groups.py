"""A projection file written whole (`rebuild_file`) is stored in row groups of `ROW_GROUP_SIZE` rows."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.projections import materialise
from ledgermem.projections.events import TurnRecorded, WindowEvicted
from ledgermem.projections.materialise import ProjectionStore, rebuild_file
from ledgermem.temporal import Episode, as_of

SMALL = 2048  # DuckDB's smallest row group (its vector size): a few thousand turns fill several
TURNS = 2 * SMALL + 300
EPISODES = (StreamKey("run", "three_layer", "ep-a"), StreamKey("run", "three_layer", "ep-b"))


@pytest.fixture
def ledger(tmp_path: Path):
    """Two episodes of `TURNS` turns, a record leaving the window after each turn but the first."""
    with Ledger(tmp_path / "l.duckdb") as ledger:
        for stream in EPISODES:
            events = [TurnRecorded(turn=1, record_id="r-1", text="message 1", agent="reply 1")]
            for n in range(2, TURNS + 1):
                events += [TurnRecorded(turn=n, record_id=f"r-{n}", text=f"message {n}", agent=f"reply {n}"),
                           WindowEvicted(turn=n, record_id=f"r-{n - 1}")]
            ledger.append(stream, events, expected_version=0)
        yield ledger


def _row_groups(path: Path, table: str = "raw_records") -> list[int]:
    with duckdb.connect(str(path), read_only=True) as conn:
        return [int(n) for (n,) in conn.execute(
            f"SELECT max(count) FROM pragma_storage_info('{table}') GROUP BY row_group_id ORDER BY 1").fetchall()]


def test_a_rebuilt_file_has_row_groups_of_the_set_size(ledger: Ledger, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(materialise, "ROW_GROUP_SIZE", SMALL)
    path = tmp_path / "p.duckdb"
    rebuild_file(ledger, path)
    groups = _row_groups(path)
    assert sum(groups) == len(EPISODES) * TURNS
    assert max(groups) <= SMALL and len(groups) >= 4
    with ProjectionStore(path, read_only=True) as store:  # and it is a whole fold of the ledger, as before
        assert store.behind(ledger) is None
        window = as_of(store.conn, Episode(*EPISODES[1].as_tuple()), seq=ledger.last_seq)["window"]
        assert [r["record_id"] for r in window] == [f"r-{TURNS}"]


def test_control_a_plain_writer_merges_the_row_groups_back(ledger: Ledger, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Must-fail control for the check above: DuckDB takes the size from the attach, not from the file, so a
    writer that opens the file plainly and changes a table merges its groups on checkpoint."""
    monkeypatch.setattr(materialise, "ROW_GROUP_SIZE", SMALL)
    path = tmp_path / "p.duckdb"
    rebuild_file(ledger, path)
    with duckdb.connect(str(path)) as conn:
        conn.execute("DELETE FROM raw_records WHERE record_id = 'r-1' AND episode_id = 'ep-a'")
        conn.execute("CHECKPOINT")
    groups = _row_groups(path)
    assert max(groups) > SMALL
