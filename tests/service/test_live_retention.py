"""Retention policies of the live service: declared in the folder, applied as events, crypto-shredded, pins kept."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner

from ledgermem.cli.main import cli
from ledgermem.gate.invariants import audit
from ledgermem.gate.retention import RetentionPolicy
from ledgermem.projections.events import FactErased, FactExpired, KeyShredded, RetentionApplied
from ledgermem.service.errors import ServeError
from ledgermem.service.live import LiveStore, Write
from ledgermem.service.live_questions import LiveService
from ledgermem.service.retention import (POLICY_FILE, SCHEDULE_TOKEN_ID, RetentionPolicies, RetentionSchedule,
                                         apply_everywhere, apply_retention)
from tests.service.conftest import live_http

S = "acme/user-42/session-7"
TURNS = ["My office is on floor 3 of the Zephyrine tower.", "I live in Quimperlé-sur-Mer.",
         "My team size is 6.", "My favourite tea is Lapsang Marchetti."]


@pytest.fixture
def live(tmp_path: Path) -> Iterator[dict[str, Any]]:
    store = LiveStore(tmp_path / "mem")
    secrets = {name: store.tokens.create(ns, scopes)[1] for name, ns, scopes in (
        ("writer", "acme", "read,write"), ("eraser", "acme", "read,erase"), ("globex", "globex", "read,erase"))}
    with live_http(store) as url:
        yield {"url": url, "store": store, "secrets": secrets}


def post(live: dict[str, Any], who: str, path: str, body: dict[str, Any]) -> requests.Response:
    return requests.post(live["url"] + path, json=body, timeout=60,
                         headers={"Authorization": f"Bearer {live['secrets'][who]}"})


def get(live: dict[str, Any], who: str, path: str, **params: Any) -> requests.Response:
    return requests.get(live["url"] + path, params=params, timeout=60,
                        headers={"Authorization": f"Bearer {live['secrets'][who]}"})


def record_all(live: dict[str, Any], pin_after: int | None = None) -> None:
    for n, user in enumerate(TURNS, 1):
        r = post(live, "writer", "/api/memory/turns", {"stream": S, "user": user, "agent": "Noted."})
        assert r.status_code == 201, r.text
        if n == pin_after:
            store: LiveStore = live["store"]
            token = store.tokens.authenticate(live["secrets"]["writer"])
            with store.holding(tuple(S.split("/"))), store.writing(Write(S, "pin", token.token_id)):
                store.memory(tuple(S.split("/")), token).pin("Never book meetings before 10:00 at Zephyrine.")


def folder_bytes(store: LiveStore) -> bytes:
    """Every file of the live folder that could hold plaintext: ledger, projections, keys, with their logs."""
    return b"".join(p.read_bytes() for p in sorted(store.folder.iterdir()) if p.is_file())


def test_raw_turns_expire_as_events_and_no_raw_text_is_left_in_the_files(live: dict[str, Any]) -> None:
    store: LiveStore = live["store"]
    RetentionPolicies(store.folder).set(RetentionPolicy(namespace="acme", raw_turns=2))
    record_all(live)
    store.projections.conn.execute("CHECKPOINT")
    # Control: before the policy is applied the projection file holds the turns in plaintext, so the scan can fail.
    assert TURNS[0].encode() in folder_bytes(store) and "Quimperl".encode() in folder_bytes(store)
    refused = post(live, "writer", "/api/memory/retention/apply", {"stream": S})
    assert refused.status_code == 403  # applying retention destroys data: it needs the erase scope
    r = post(live, "eraser", "/api/memory/retention/apply", {"stream": S})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["applied"] and body["expired_turns"] == [1, 2] and body["rules"] == ["raw_turns", "raw_turns"]
    assert body["policy"] == {"namespace": "acme", "raw_turns": 2, "fact_ttl_seconds": None}
    assert body["clean"], body["residue"]
    # Only the raw text expired: the raw keys of the turns, no fact, no summary.
    assert len(body["keys_shredded"]) == 2 and all("#raw:" in k for k in body["keys_shredded"])
    assert body["facts"] == [] and body["summaries"] == [] and body["records"] == ["r0001", "r0002"]
    store.ledger.conn.execute("CHECKPOINT")
    store.projections.conn.execute("CHECKPOINT")
    data = folder_bytes(store)
    assert TURNS[0].encode() not in data and "Quimperl".encode() not in data
    assert b"Zephyrine" in data and b"Lapsang" in data  # the fact of turn 1 and the newest turns are kept
    # Every application is an event carrying its policy, attributed to the token that asked.
    stream = next(s for s, _ in store.ledger.streams("live"))
    events = [r.event for r in store.ledger.read(stream=stream)]
    applied = [e for e in events if isinstance(e, RetentionApplied)]
    assert len(applied) == 1 and applied[0].policy == body["policy"] and applied[0].turns == (1, 2)
    assert list(applied[0].key_ids) == body["keys_shredded"]
    assert not any(isinstance(e, (FactExpired, FactErased)) for e in events)
    assert "retention policy of 'acme'" in next(e for e in events if isinstance(e, KeyShredded)).legal_basis
    eraser = store.tokens.authenticate(live["secrets"]["eraser"]).token_id
    retention_writes = [w for w in store.writes(S) if w["operation"] == "retention"]
    assert len(retention_writes) == 1 and retention_writes[0]["token_id"] == eraser
    assert (retention_writes[0]["first_seq"], retention_writes[0]["last_seq"]) == (body["first_seq"], body["last_seq"])
    # The raw tool shows the record erased; the fact taken from it reads as before, now and in history.
    record = get(live, "eraser", "/api/memory/record", stream=S, reference_id="r0001").json()
    assert record["ok"] is False and "floor 3" not in json.dumps(record) and "expired" in record["text"]
    history = get(live, "eraser", "/api/memory/history", stream=S, slot="team size").json()
    assert "6" in json.dumps(history)
    now = get(live, "eraser", "/api/memory/as-of", stream=S, slot="office", at="2999-01-01T00:00Z").json()
    assert now["value"] == "floor 3 of the Zephyrine tower" and not now["erased"]
    naive = get(live, "eraser", "/api/memory/as-of", stream=S, slot="office", at="2026-11-01T09:00")
    assert naive.status_code == 400 and naive.json()["parameter"] == "at" and "timezone" in naive.text
    report = audit(store.ledger, store.projections)
    assert report.ok, report.as_dict()
    # Applying again expires nothing and writes nothing.
    again = post(live, "eraser", "/api/memory/retention/apply", {"stream": S}).json()
    assert again["applied"] is False and again["expired_turns"] == []


def test_facts_expire_after_their_duration_and_pinned_constraints_never(live: dict[str, Any]) -> None:
    store: LiveStore = live["store"]
    RetentionPolicies(store.folder).set(RetentionPolicy(namespace="acme/user-42", fact_ttl_seconds=3600))
    RetentionPolicies(store.folder).set(RetentionPolicy(namespace="acme", raw_turns=100))  # the longer one wins
    record_all(live, pin_after=1)
    address = tuple(S.split("/"))
    token = store.tokens.authenticate(live["secrets"]["eraser"])
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with store.holding(address):
        state = store.memory(address, token).state
    stating = sorted({x.turn for x in state.summaries.values() if x.facts and not x.merged_from})
    assert 1 in stating and 4 in stating  # the turns the summarizer took facts from
    with store.holding(address):
        early = apply_retention(store, address, token, clock=lambda: now + timedelta(minutes=30))
        assert early["applied"] is False and early["policy"]["fact_ttl_seconds"] == 3600
        late = apply_retention(store, address, token, clock=lambda: now + timedelta(days=2))
    assert late["applied"] and 1 not in late["expired_turns"] and late["kept_pinned"] == [1]
    assert late["expired_turns"] == [t for t in stating if t != 1]
    assert {f["rule"] for f in late["facts"]} == {"fact_ttl"}
    rendered = get(live, "eraser", "/api/memory/render", stream=S).json()["text"]
    assert "Never book meetings before 10:00 at Zephyrine." in rendered  # the pinned constraint stays
    store.projections.conn.execute("CHECKPOINT")
    store.ledger.conn.execute("CHECKPOINT")
    data = folder_bytes(store)
    assert b"Lapsang" not in data
    assert ("Quimperl".encode() in data) == (2 not in late["expired_turns"])  # a turn without facts is kept
    assert b"Zephyrine" in data  # control: the pinned turn's plaintext is still in the projections


def test_a_token_of_another_namespace_cannot_apply_and_bad_policy_files_are_named(live: dict[str, Any]) -> None:
    store: LiveStore = live["store"]
    record_all(live)
    assert post(live, "globex", "/api/memory/retention/apply", {"stream": S}).status_code == 403
    nothing = post(live, "eraser", "/api/memory/retention/apply", {"stream": S}).json()
    assert nothing["policy"] is None and nothing["applied"] is False  # no policy: keep everything
    (store.folder / POLICY_FILE).write_text('{"policies": [{"namespace": "acme", "raw_turns": "two"}]}')
    with pytest.raises(ServeError, match=r"retention.json: policy 0: .*raw_turns must be an integer"):
        RetentionPolicies(store.folder).load()


def test_cli_sets_shows_and_clears_policies(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    folder.mkdir()
    runner = CliRunner()
    set_ = runner.invoke(cli, ["live", "retention", "set", str(folder), "--namespace", "acme/user-42",
                               "--keep-raw-turns", "20", "--expire-facts-after", "30d"])
    assert set_.exit_code == 0, set_.output
    shown = runner.invoke(cli, ["live", "retention", "show", str(folder), "--json"])
    assert json.loads(shown.output) == [{"namespace": "acme/user-42", "raw_turns": 20, "fact_ttl_seconds": 2592000}]
    bad = runner.invoke(cli, ["live", "retention", "set", str(folder), "--namespace", "acme",
                              "--expire-facts-after", "a month"])
    assert bad.exit_code != 0 and "--expire-facts-after" in bad.output and "not a duration" in bad.output
    bad_ns = runner.invoke(cli, ["live", "retention", "set", str(folder), "--namespace", "../x", "--keep-raw-turns", "2"])
    assert bad_ns.exit_code != 0 and "namespace" in bad_ns.output
    cleared = runner.invoke(cli, ["live", "retention", "clear", str(folder), "--namespace", "acme/user-42"])
    assert cleared.exit_code == 0 and RetentionPolicies(folder).load() == {}


def test_the_servers_schedule_applies_every_covered_stream_by_itself(live: dict[str, Any]) -> None:
    store: LiveStore = live["store"]
    record_all(live)
    other = "globex/user-1/s"
    globex = store.tokens.authenticate(store.tokens.create("globex", "read,write")[1])
    LiveService(store).ask("record_turn", {"stream": other, "user": "My office is on floor 9.", "agent": "ok"},
                           globex)
    RetentionPolicies(store.folder).set(RetentionPolicy(namespace="acme", raw_turns=2))
    schedule = RetentionSchedule(store, 0.05).start()
    try:
        for _ in range(400):
            with store.holding(None):
                applied = [r for r in store.ledger.read(event_types=["retention_applied"])]
            if applied:
                break
            threading.Event().wait(0.05)
        rounds = schedule.rounds
        while schedule.rounds < rounds + 2:  # later rounds find nothing more to expire
            threading.Event().wait(0.05)
    finally:
        schedule.stop()
    assert len(applied) == 1 and isinstance(applied[0].event, RetentionApplied)
    assert applied[0].event.turns == (1, 2)  # the newest two of four kept
    with store.holding(None):
        assert len(list(store.ledger.read(event_types=["retention_applied"]))) == 1  # applied once, not per round
        writes = [w for w in store.writes() if w["operation"] == "retention"]
        report = audit(store.ledger, store.projections, run_id="live")
    assert [(w["stream"], w["token_id"]) for w in writes] == [(S, SCHEDULE_TOKEN_ID)]  # globex has no policy
    assert report.ok, report.as_dict()


def test_control_without_the_schedule_nothing_expires_unasked(live: dict[str, Any]) -> None:
    store: LiveStore = live["store"]
    record_all(live)
    RetentionPolicies(store.folder).set(RetentionPolicy(namespace="acme", raw_turns=2))
    threading.Event().wait(0.3)
    with store.holding(None):
        assert list(store.ledger.read(event_types=["retention_applied"])) == []
    assert [a["stream"] for a in apply_everywhere(store)] == [S]  # what the schedule runs, run once by hand


def test_serve_refuses_a_schedule_that_is_not_a_duration(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["live", "serve", str(tmp_path / "mem"), "--retention-every", "hourly"])
    assert result.exit_code == 2 and "--retention-every" in result.output and "not a duration" in result.output
    assert not (tmp_path / "mem").exists()
