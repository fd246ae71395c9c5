"""The read models of the pinned block, folded titles, capacity merges and turns kept as raw records only."""

from __future__ import annotations

from typing import Any

from ledgermem.projections.events import (
    ConstraintPinned,
    ConstraintReinjected,
    EpisodeStarted,
    IndexCreated,
    IndexFolded,
    KeyShredded,
    SummaryArchived,
    SummaryCreated,
    SummaryOverridden,
    TurnRecorded,
    WindowEvicted,
)
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore, rebuild, table_ddl
from ledgermem.projections.scd2 import TABLES, snapshot
from ledgermem.projections.sql_rebuild import rebuild_sql_ledger
from ledgermem.projections.state import EpisodeEvent, fold
from ledgermem.projections.tokens import ESTIMATOR
from ledgermem.temporal.ddl import postgres_ddl
from ledgermem.temporal.queries import Episode, as_of, diff
from tests.projections import golden

STREAM = StreamKey("run", "three_layer", "ep")
CONFIG = MemoryConfig(tokenizer=ESTIMATOR).to_dict()


def _both(events: list[EpisodeEvent]) -> dict[str, list[dict[str, Any]]]:
    """Both engines' history of one stream; they must agree."""
    ledger = Ledger(":memory:")
    ledger.append(STREAM, events, expected_version=0)
    folded = rebuild(ledger)
    assert rebuild_sql_ledger(ledger) == folded
    return folded


def _current(history: dict[str, list[dict[str, Any]]], table: str, key: str) -> dict[str, dict[str, Any]]:
    return {r[key]: r for r in history[table] if r["valid_to_seq"] is None}


def test_archived_by_capacity_leaves_its_title_and_overridden_keeps_it() -> None:
    events: list[EpisodeEvent] = [
        EpisodeStarted(config=CONFIG),
        SummaryCreated(turn=1, summary_id="s1", text="a", facts=(("floor", "3F"),), overrides=(), raw_ids=(),
                       inferences=(("mood", "calm"),)),
        SummaryCreated(turn=2, summary_id="s2", text="b", facts=(("team", "6"),), overrides=(), raw_ids=()),
        IndexCreated(turn=3, index_id="i1", members=("s1", "s2"), text="title"),
        SummaryCreated(turn=4, summary_id="s3", text="c", facts=(("floor", "7F"), ("team", "9")), overrides=(),
                       raw_ids=(), written_by="merge", merged_from=("s1", "s2")),
        SummaryOverridden(turn=4, summary_id="s1", superseded_by=("s3",)),
        SummaryArchived(turn=4, summary_id="s2", reason="merged", superseded_by=("s3",)),
    ]
    history = _both(events)
    now = _current(history, "summary_versions", "summary_id")
    assert (now["s1"]["status"], now["s1"]["archive_reason"], now["s1"]["index_id"]) == ("archived", "overridden", "i1")
    assert (now["s2"]["status"], now["s2"]["archive_reason"], now["s2"]["index_id"]) == ("archived", "merged", None)
    assert now["s2"]["superseded_by"] == ["s3"] and now["s3"]["merged_from"] == ["s1", "s2"]
    assert now["s1"]["inferences"] == [{"slot": "mood", "value": "calm"}] and now["s3"]["inferences"] == []
    assert [r["live_members"] for r in history["index_versions"]] == [2, 1, 0]
    # Inferences never reach the registry.
    assert {r["slot"] for r in history["fact_versions"]} == {"floor", "team"}


def test_a_turn_that_is_not_remembered_is_a_raw_record_but_never_in_the_window() -> None:
    events: list[EpisodeEvent] = [
        EpisodeStarted(config=CONFIG),
        TurnRecorded(turn=1, record_id="r1", text="hello", agent="ok"),
        TurnRecorded(turn=2, record_id="r2", text="tool output", agent="ok", source="tool", remember=False,
                     gated="source policy"),
        WindowEvicted(turn=3, record_id="r1"),
        # Recorded again under a kept id while out of the window: it stays out.
        TurnRecorded(turn=3, record_id="r1", text="hello again", agent="ok", remember=False),
    ]
    history = _both(events)
    assert {(r["record_id"], r["remember"]) for r in history["raw_records"] if r["valid_to_seq"] is None} == {
        ("r1", False), ("r2", False)}
    assert [(r["record_id"], r["valid_from_seq"], r["valid_to_seq"]) for r in history["window_versions"]] == [
        ("r1", 2, 4)]
    assert list(fold(events).window) == []


def test_pins_are_versioned_with_their_reinjections_and_redaction() -> None:
    events: list[EpisodeEvent] = [
        EpisodeStarted(config=CONFIG),
        ConstraintPinned(turn=1, pin_id="p1", kind="open_loop", text="call the bank", origin="detected",
                         record_id="r1", anchors=("call the bank",)),
        ConstraintPinned(turn=1, pin_id="p2", kind="constraint", text="no Mondays", origin="declared"),
        ConstraintReinjected(turn=2, pin_id="p1", reason="missing"),
        ConstraintReinjected(turn=3, pin_id="p1", reason="missing"),
        KeyShredded(turn=4, key_ids=("k",), legal_basis="b", request="r", pins=("p1", "p9")),
    ]
    history = _both(events)
    p1 = [(r["text"], r["reinjected"], r["shown"], r["valid_from_seq"]) for r in history["pin_versions"]
          if r["pin_id"] == "p1"]
    assert p1 == [("call the bank", 0, False, 2), ("call the bank", 1, True, 4), ("call the bank", 2, True, 5),
                  (ERASED, 2, True, 6)]
    assert [(r["shown"], r["valid_to_seq"]) for r in history["pin_versions"] if r["pin_id"] == "p2"] == [(True, None)]
    assert snapshot(fold(events))["pin_versions"][("p1",)] == ("open_loop", 1, ERASED, "detected", "r1", None, 2, True)


def test_folded_titles_count_the_summaries_under_them() -> None:
    events: list[EpisodeEvent] = [
        EpisodeStarted(config=CONFIG),
        *(SummaryCreated(turn=1, summary_id=s, text=s, facts=(), overrides=(), raw_ids=()) for s in ("s1", "s2", "s3")),
        IndexCreated(turn=2, index_id="i1", members=("s1", "s2"), text="one"),
        IndexCreated(turn=2, index_id="i2", members=("s3",), text="two"),
        IndexFolded(turn=3, index_id="i3", members=("i1", "i2"), text="fold", span="turn 1"),
        SummaryArchived(turn=4, summary_id="s2", reason="merged", superseded_by=("s1",)),
    ]
    history = _both(events)
    now = _current(history, "index_versions", "index_id")
    assert {i: (r["live_members"], r["folded_into"], r["level"]) for i, r in now.items()} == {
        "i1": (1, "i3", 1), "i2": (1, "i3", 1), "i3": (2, None, 2)}
    assert [r["live_members"] for r in history["index_versions"] if r["index_id"] == "i3"] == [3, 2]


def test_as_of_and_diff_show_the_pinned_block_and_folded_titles() -> None:
    store = ProjectionStore()
    for case in ("pins_reinjected_erased", "index_fold"):
        store.fill(golden.ledger_from(golden.events_path(case)))
    pins = Episode("golden", "three_layer", "ep-p")
    before = as_of(store.conn, pins, seq=13)["pinned"]
    after = as_of(store.conn, pins, seq=14)["pinned"]
    assert [(p["pin_id"], p["shown"], p["reinjected"]) for p in before] == [
        ("p0001", True, 0), ("p0002", False, 0), ("p0003", True, 0)]
    assert [(p["pin_id"], p["shown"], p["reinjected"]) for p in after][1] == ("p0002", True, 1)
    assert [p["text"] for p in as_of(store.conn, pins, turn=5)["pinned"]][1:] == [ERASED, ERASED]
    assert [p["pin_id"] for p in diff(store.conn, pins, 1, 8)["pinned"]["entered"]] == ["p0001", "p0002", "p0003"]
    titles = as_of(store.conn, Episode("golden", "three_layer", "ep-f"), turn=8)["index"]
    assert {t["index_id"]: (t["folded_into"], t["live_members"]) for t in titles} == {
        "i0001": ("i0003", 1), "i0002": ("i0003", 2), "i0003": (None, 3)}


def test_every_table_has_its_ddl_in_duckdb_and_postgres() -> None:
    ddl = postgres_ddl()
    for spec in TABLES:
        assert f"CREATE TABLE IF NOT EXISTS {spec.name} (" in ddl
        assert table_ddl(spec).startswith(f"CREATE TABLE IF NOT EXISTS {spec.name} (")
    assert "pin_versions" in {spec.name for spec in TABLES}
    assert "  inferences JSONB" in ddl and "  folded_into TEXT" in ddl and "  remember BOOLEAN" in ddl
    store = ProjectionStore()
    columns = {r[0] for r in store.conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'pin_versions'").fetchall()}
    assert {"pin_id", "kind", "text", "origin", "reinjected", "shown", "valid_from_seq"} <= columns
