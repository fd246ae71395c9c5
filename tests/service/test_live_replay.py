"""A live folder's ledger replays, answers history and audits like a run's: the same commands, no LLM."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ledgermem.service.live import LiveStore
from ledgermem.service.live_questions import LiveService
from tests.invoke import invoke_in


def live_folder(folder: Path, streams: int = 3, turns: int = 4) -> None:
    store = LiveStore(folder)
    token = store.tokens.authenticate(store.tokens.create("acme", "read,write")[1])
    service = LiveService(store)
    try:
        for t in range(turns):
            for s in range(streams):
                service.ask("record_turn", {"stream": f"acme/u{s}/s", "user": f"My office is on floor {t + 1}.",
                                            "agent": "ok"}, token)
    finally:
        store.close()


def test_replay_history_and_audit_read_a_live_folder(tmp_path: Path) -> None:
    live_folder(tmp_path / "mem")
    replayed = invoke_in(tmp_path, "replay", "mem", "--json")
    assert replayed.exit_code == 0, replayed.output
    report = json.loads(replayed.output)
    assert report["run_id"] == "live" and report["identical"] and not report["harness"]
    assert {t["table"]: t["replayed_rows"] for t in report["tables"]}["raw_records"] == 12
    history = invoke_in(tmp_path, "history", "mem", "--episode", "acme:u1:s", "--slot", "office", "--json")
    assert history.exit_code == 0, history.output
    assert [row["value"] for row in json.loads(history.output)] == [f"floor {n}" for n in range(1, 5)]
    audited = invoke_in(tmp_path, "audit", "mem")
    assert audited.exit_code == 0 and "all invariants hold" in audited.output


def test_control_a_live_projection_file_that_differs_does_not_replay(tmp_path: Path) -> None:
    live_folder(tmp_path / "mem")
    with duckdb.connect(str(tmp_path / "mem" / "ledger.projections.duckdb")) as conn:
        conn.execute("UPDATE fact_versions SET value = 'floor 9' WHERE value = 'floor 2'")
    replayed = invoke_in(tmp_path, "replay", "mem", "--json")
    assert replayed.exit_code == 1
    report = json.loads(replayed.output)
    assert not report["identical"] and not report["projections_identical"]
