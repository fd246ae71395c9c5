"""One durable commit per turn: projection versions wait in the process, keys are made ahead, and the
marks still make every crash and every read exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledgermem.projections.events import KeyShredded
from ledgermem.ledger.keys import AHEAD, KeyStore, key_path
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore, projection_path, rebuild
from ledgermem.projections.tokens import ESTIMATOR

STREAM = StreamKey("run", "three_layer", "ep")
TURNS = [(f"My desk number is {n}.", "Noted.") if n % 3 else ("The weather is fine.", "Yes.") for n in range(1, 13)]


def memory(ledger: Ledger, store: ProjectionStore, *, sealed: bool = False, stream: StreamKey = STREAM) -> Memory:
    config = MemoryConfig(tokenizer=ESTIMATOR, personal_data=sealed)
    return Memory(ledger, stream, HeuristicBackend(tokenizer=ESTIMATOR), config=config, projections=store)


def file_marks(store: ProjectionStore) -> dict[tuple[str, ...], int]:
    """The marks as the file holds them, read past the store (no flush)."""
    return {tuple(r[:3]): int(r[3]) for r in store._conn.execute("SELECT * FROM projection_state").fetchall()}


def test_turns_wait_in_the_process_and_any_read_sees_them_all(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.duckdb") as ledger, ProjectionStore(projection_path(ledger.path)) as store:
        m = memory(ledger, store)
        started = file_marks(store)
        for user, agent in TURNS:
            m.add_turn(user, agent)
        assert store.pending_rows() > 0
        assert file_marks(store) == started  # no projection commit was made by the turns
        assert store.last_seq(STREAM) == ledger.last_seq  # what a reopened stream compares with
        assert store.read_tables() == rebuild(ledger)  # a read writes what waits first
        assert store.pending_rows() == 0 and file_marks(store)[STREAM.as_tuple()] == ledger.last_seq


def test_a_store_flushes_at_its_threshold(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.duckdb") as ledger:
        store = ProjectionStore(projection_path(ledger.path), flush_rows=8)
        m = memory(ledger, store)
        for user, agent in TURNS:
            m.add_turn(user, agent)
            assert store.pending_rows() < 8 + 40  # never more than one turn's versions past the threshold
        assert file_marks(store)[STREAM.as_tuple()] > 0
        store.close()
        with ProjectionStore(projection_path(ledger.path), read_only=True) as reread:
            reread.require_current(ledger)
            assert reread.read_tables() == rebuild(ledger)


def test_a_crash_with_versions_pending_is_caught_up_on_open(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    with Ledger(path) as ledger:
        store = ProjectionStore(projection_path(ledger.path))
        m = memory(ledger, store)
        for user, agent in TURNS[:6]:
            m.add_turn(user, agent)
        store.flush()
        for user, agent in TURNS[6:]:
            m.add_turn(user, agent)
        assert store.pending_rows() > 0
        store._conn.close()  # the process dies: what waited is lost, the ledger has every turn
        expected = rebuild(ledger)
    with Ledger(path) as ledger, ProjectionStore(projection_path(path)) as store:
        assert store.behind(ledger) is not None  # the marks show the loss
        m = memory(ledger, store)  # reopening the stream refolds it from the ledger
        assert m.state.turn == len(TURNS)
        assert store.behind(ledger) is None and store.read_tables() == expected


def test_a_failed_flush_keeps_everything_pending_and_the_next_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Ledger(tmp_path / "l.duckdb") as ledger, ProjectionStore(projection_path(ledger.path)) as store:
        m = memory(ledger, store)
        for user, agent in TURNS[:4]:
            m.add_turn(user, agent)
        store.flush()
        for user, agent in TURNS[4:]:  # closes of rows the file holds, and new rows
            m.add_turn(user, agent)
        calls = [0]
        original = ProjectionStore._insert

        def failing(self: ProjectionStore, spec: Any, rows: list[dict[str, Any]]) -> None:
            calls[0] += 1
            if calls[0] == 2:
                raise OSError("disk full")
            original(self, spec, rows)

        monkeypatch.setattr(ProjectionStore, "_insert", failing)
        pending = store.pending_rows()
        with pytest.raises(OSError):
            store.flush()
        assert store.pending_rows() == pending
        monkeypatch.setattr(ProjectionStore, "_insert", original)
        assert store.read_tables() == rebuild(ledger)


def test_versions_another_store_already_wrote_are_not_written_twice(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    with Ledger(path) as ledger:
        stale = ProjectionStore(projection_path(path))
        m = memory(ledger, stale)
        for user, agent in TURNS:
            m.add_turn(user, agent)
        fresh = ProjectionStore(projection_path(path))  # same file, same process: catches the stream up
        assert fresh.catch_up(ledger) is not None
        stale.flush()  # its versions are in the file already: dropped, not inserted again
        assert fresh.read_tables() == rebuild(ledger)
        stale.close()
        fresh.close()


def _count_key_commits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every key-store commit made from now on, in order."""
    stores: list[int] = []
    original = KeyStore._store

    def counted(self: KeyStore, new: Any) -> None:
        stores.append(len(new))
        original(self, new)

    monkeypatch.setattr(KeyStore, "_store", counted)
    return stores


def test_sealed_turns_make_their_keys_ahead_in_one_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stores = _count_key_commits(monkeypatch)
    with Ledger(tmp_path / "l.duckdb") as ledger, ProjectionStore(projection_path(ledger.path)) as store:
        m = memory(ledger, store, sealed=True)
        for user, agent in TURNS:
            m.add_turn(user, agent)
        assert ledger.keys is not None
        turn_keys = [k for k in ledger.keys.material() if "#turn:" in k]
        assert len(turn_keys) >= AHEAD
    assert len(stores) < len(TURNS) / 2  # not one key-store commit per turn
    reopened = KeyStore(key_path(tmp_path / "l.duckdb"))  # made durable before they sealed anything
    assert all(k in reopened for k in turn_keys)
    reopened.close()


@pytest.mark.parametrize("together", [True, False])
def test_a_turn_makes_its_raw_key_and_turn_key_series_in_one_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, together: bool) -> None:
    stores = _count_key_commits(monkeypatch)
    if not together:  # control: each event makes its own key when it is sealed, one commit per series
        monkeypatch.setattr(Ledger, "_ensure_keys", lambda self, plan: None)
    with Ledger(tmp_path / "l.duckdb") as ledger, ProjectionStore(projection_path(ledger.path)) as store:
        m = memory(ledger, store, sealed=True)
        m.add_turn("My desk number is 7.", "Noted.")  # a record (raw key) and a summary (turn key)
        assert ledger.keys is not None
        made = ledger.keys.material()
    prefix = str(STREAM)
    assert f"{prefix}#raw:{AHEAD}" in made and f"{prefix}#turn:{AHEAD}" in made
    assert stores == ([2 * AHEAD] if together else [AHEAD, AHEAD])


def test_a_numbered_key_brings_its_series_and_another_key_only_itself(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "k.duckdb")
    keys.ensure(["s#turn:5", "s#index:i1"])
    assert "s#turn:5" in keys and f"s#turn:{5 + AHEAD - 1}" in keys and f"s#turn:{5 + AHEAD}" not in keys
    assert "s#turn:4" not in keys and len(keys) == AHEAD + 1
    before = keys.material()
    keys.ensure([f"s#turn:{n}" for n in range(5, 5 + AHEAD)])  # all there: no new key, none replaced
    assert keys.material() == before
    keys.close()
    reopened = KeyStore(tmp_path / "k.duckdb")
    assert reopened.material() == before
    reopened.close()


def test_the_last_erasure_seq_is_kept_by_the_ledger(tmp_path: Path) -> None:
    path = tmp_path / "l.duckdb"
    query = "SELECT coalesce(max(seq), 0) FROM events WHERE event_type = 'key_shredded'"
    with Ledger(path) as ledger, ProjectionStore(projection_path(path)) as store:
        m = memory(ledger, store)
        for user, agent in TURNS[:3]:
            m.add_turn(user, agent)
        assert ledger.last_shredded_seq() == 0
        ledger.append(StreamKey("run", "three_layer", "other"),
                      [KeyShredded(turn=1, key_ids=("k",), legal_basis="b", request="r")], expected_version=0)
        assert ledger.last_shredded_seq() == ledger.last_seq == ledger.conn.execute(query).fetchall()[0][0]
        m.add_turn(*TURNS[3])  # the erasure is seen without a query: the projection file is rebuilt
        assert store.erasure_mark() == ledger.last_shredded_seq()
        assert store.behind(ledger) is None
    with Ledger(path) as reopened:
        assert reopened.last_shredded_seq() == reopened.conn.execute(query).fetchall()[0][0] > 0
