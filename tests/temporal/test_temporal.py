"""Temporal queries against live runs: history, as-of, diff, blame, manifest, anomalies, DDL."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore, projection_path
from ledgermem.projections.state import fold
from ledgermem.projections.tokens import ESTIMATOR
from ledgermem.projections.scd2 import TABLES
from ledgermem.temporal import Episode, anomalies, as_of, blame, diff, fact_history, install, manifest, postgres_ddl
from ledgermem.temporal.queries import _rows, queries
from ledgermem.temporal.errors import TemporalError

EP = Episode("run", "three_layer", "ep")
STREAM = StreamKey(EP.run_id, EP.system, EP.episode_id)
CONFIG = MemoryConfig(tokenizer=ESTIMATOR, window_turns=2, chain_budget=70, index_group_size=2)
SCRIPT = [  # (user, summarizer response)
    ("My desk is A1.", "desk A1 (first)\n[FACTS: desk=A1]\n[OVERRIDES: none]"),
    ("Desk is still A1.", "desk A1 (restated)\n[FACTS: desk=A1]\n[OVERRIDES: none]"),
    ("My desk is C3.", "desk C3 (the summarizer forgets to override)\n[FACTS: desk=C3]\n[OVERRIDES: none]"),
    ("My team size is 6.", "team of six\n[FACTS: team=6]\n[OVERRIDES: none]"),
    ("My desk changed to B2.", "desk moved to B2\n[FACTS: desk=B2]\n[OVERRIDES: s0003]"),
    ("My team size changed to 8.", "team of eight\n[FACTS: team=8]\n[OVERRIDES: s0004]"),
]


@pytest.fixture
def run(tmp_path: Path):
    ledger = Ledger(tmp_path / "l.duckdb")
    store = ProjectionStore(projection_path(ledger.path))
    responses = iter(r for _, r in SCRIPT)
    memory = Memory(ledger, STREAM, ScriptedBackend(lambda m, p: next(responses, "NONE") if p == "summarize" else "B2"),
                    config=CONFIG, projections=store)
    seqs = []
    for user, _ in SCRIPT:
        memory.add_turn(user, "Noted.")
        seqs.append(ledger.last_seq)
    memory.ask("Where is my desk?")
    return ledger, store, memory, seqs


def test_fact_history_lists_every_value_with_its_interval(run) -> None:
    _, store, _, _ = run
    rows = fact_history(store.conn, EP, "desk")
    assert [(r["value"], r["summary_id"]) for r in rows] == [("A1", "s0001"), ("A1", "s0002"), ("C3", "s0003"),
                                                            ("B2", "s0005")]
    assert rows[-1]["valid_to_turn"] is None and rows[-1]["valid_from_turn"] == 5
    assert all(a["valid_to_seq"] == b["valid_from_seq"] for a, b in zip(rows, rows[1:]))


@pytest.mark.parametrize("turn", [1, 3, 4, 6])
def test_as_of_turn_equals_the_fold_of_the_events_up_to_that_turn(run, turn: int) -> None:
    ledger, store, _, seqs = run
    layers = as_of(store.conn, EP, turn=turn)
    state = fold([r.event for r in ledger.read(stream=STREAM, to_seq=seqs[turn - 1])])
    assert {r["slot"]: r["value"] for r in layers["registry"]} == {k: v for k, (v, _) in state.current_values().items()}
    assert [r["summary_id"] for r in layers["chain"]] == [s.summary_id for s in state.active_chain()]
    assert [r["record_id"] for r in layers["window"]] == list(state.window)
    assert [r["index_id"] for r in layers["index"]] == list(state.indexes)
    assert layers == as_of(store.conn, EP, seq=seqs[turn - 1])  # event time and system time agree here


@pytest.mark.parametrize("axis", ["seq", "turn"])
def test_as_of_in_one_statement_gives_what_each_layer_query_gives(run, axis: str) -> None:
    """Control for the single statement: every layer's own query, run alone through the macros."""
    ledger, store, _, seqs = run
    conn = store.conn.cursor()
    install(conn)
    for at in [*seqs, ledger.last_seq] if axis == "seq" else range(0, len(seqs) + 2):
        params = {**EP.params(), "at": at}
        alone = {name: _rows(conn, queries()[f"{query}_as_of"].format(asof=f"as_of_{axis}"), params)
                 for name, query in (("pinned", "pins"), ("window", "window"), ("registry", "registry"),
                                     ("index", "index"), ("summaries", "summaries"))}
        together = as_of(store.conn, EP, **{axis: at})
        summaries = alone.pop("summaries")
        assert together == {**alone, **{layer: [s for s in summaries if s["status"] == status] for layer, status
                                         in (("chain", "active"), ("indexed", "indexed"), ("archive", "archived"))}}
    assert any(together.values())


def test_as_of_installs_nothing_on_the_connection(run) -> None:
    _, store, _, seqs = run
    conn = store.conn.cursor()
    before = conn.execute("SELECT count(*) FROM duckdb_functions() WHERE NOT internal").fetchall()
    assert as_of(conn, EP, seq=seqs[-1])["chain"]
    assert conn.execute("SELECT count(*) FROM duckdb_functions() WHERE NOT internal").fetchall() == before


def test_as_of_without_the_projection_tables_is_a_temporal_error() -> None:
    with pytest.raises(TemporalError, match="does not see the run's tables"):
        as_of(duckdb.connect(), EP, seq=1)


def test_diff_shows_what_entered_and_left(run) -> None:
    _, store, _, seqs = run
    changes = diff(store.conn, EP, seqs[3], seqs[4])  # turn 5: desk A1 -> B2
    assert [r["summary_id"] for r in changes["chain"]["entered"]] == ["s0005"]
    assert [r["summary_id"] for r in changes["archive"]["entered"]] == ["s0003"]
    assert {(r["slot"], r["value"]) for r in changes["registry"]["entered"]} == {("desk", "B2")}
    assert {(r["slot"], r["value"]) for r in changes["registry"]["left"]} == {("desk", "C3")}
    assert diff(store.conn, EP, seqs[2], seqs[2]) == {k: {"entered": [], "left": []} for k in changes}


def test_blame_names_the_raw_record_through_override_index_title_and_capacity(run) -> None:
    ledger, store, memory, _ = run
    assert memory.state.summaries["s0001"].status == "indexed"  # the capacity move put it under a title
    receipt = memory.erase(slot="desk", value="B2", legal_basis="test")
    assert receipt.clean and memory.state.current_values()["desk"] == ("C3", "s0003")  # fell back to the archive
    memory.erase(slot="desk", value="C3", legal_basis="test")
    assert memory.state.current_values()["desk"] == ("A1", "s0002")
    b = blame(memory.projections.conn, EP, "desk")
    assert b.value == "A1" and b.summary is not None
    assert b.summary["summary_id"] == "s0002" and b.summary["status"] == "indexed" and b.summary["index_id"]
    assert [r["record_id"] for r in b.records] == ["r0002"]
    assert b.records[0]["user_text"] == "Desk is still A1."
    # The erased values left no trace in the rebuilt history: only the surviving earlier value remains.
    assert [(h["summary_id"], h["value"]) for h in b.overrode] == [("s0001", "A1")]


def test_blame_of_an_erased_slot_and_of_an_unknown_slot(run) -> None:
    _, _, memory, _ = run
    memory.erase(slot="team", legal_basis="test")
    assert blame(memory.projections.conn, EP, "team").erased
    with pytest.raises(TemporalError, match="never had a value"):
        blame(memory.projections.conn, EP, "nope")


def test_manifest_of_the_answer(run) -> None:
    ledger, store, _, _ = run
    conn = ledger.conn
    rows = manifest(conn, EP)
    assert len(rows) == 1 and rows[0]["purpose"] == "answer" and "slot:desk" in rows[0]["item_ids"]
    assert manifest(conn, EP, turn=99) == []


def test_anomalies_find_a_stale_live_summary(run) -> None:
    _, store, _, _ = run
    found = anomalies(store.conn, EP)
    stale = {(r["summary_id"], r["slot"]) for r in found["stale_live"]}
    assert stale == {("s0001", "desk"), ("s0002", "desk")}  # restatements never overridden: A1 while B2 is current
    assert found["flip_flop"] == []


def test_as_of_needs_exactly_one_time(run) -> None:
    _, store, _, _ = run
    with pytest.raises(TemporalError, match="exactly one"):
        as_of(store.conn, EP)


def test_postgres_ddl_covers_every_table_and_is_valid_sql_for_duckdb_parsing() -> None:
    ddl = postgres_ddl()
    for table in ("events", "summary_versions", "fact_versions", "index_versions", "raw_records", "window_versions"):
        assert f"CREATE TABLE IF NOT EXISTS {table} (" in ddl
    conn = duckdb.connect()
    conn.execute(ddl.replace("JSONB", "JSON").replace("DOUBLE PRECISION", "DOUBLE"))  # the DDL parses and runs
    assert conn.execute("SELECT count(*) FROM information_schema.tables").fetchone()[0] == len(TABLES) + 1
