"""The live memory service over HTTP: turns, idempotency, namespaces and scopes, attribution, every tool."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from ledgermem.gate.invariants import audit
from ledgermem.service.live import LiveStore
from ledgermem.service.live_questions import LIVE_QUESTIONS, LiveService
from tests.service.conftest import assert_no_secret, live_http


@dataclass
class Live:
    url: str
    store: LiveStore
    secrets: dict[str, str]

    def post(self, who: str, path: str, body: dict[str, Any]) -> requests.Response:
        return requests.post(self.url + path, json=body, headers=self._auth(who), timeout=60)

    def get(self, who: str, path: str, **params: Any) -> requests.Response:
        return requests.get(self.url + path, params=params, headers=self._auth(who), timeout=60)

    def _auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secrets[who]}"} if who else {}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    store = LiveStore(tmp_path / "mem")
    secrets = {name: store.tokens.create(ns, scopes)[1] for name, ns, scopes in (
        ("acme", "acme", "read,write"), ("acme_reader", "acme", "read"), ("acme_eraser", "acme", "read,erase"),
        ("globex", "globex", "read,write,erase"), ("user42", "acme/user-42", "read,write"))}
    with live_http(store) as url:
        yield Live(url, store, secrets)


S = "acme/user-42/session-7"
TURNS = [("My office is on floor 3.", "Noted."), ("I live in Lyon.", "OK."),
         ("Actually my office moved to floor 5.", "Noted, floor 5.")]


def record(live: Live, who: str = "acme", stream: str = S, **extra: Any) -> requests.Response:
    user, agent = extra.pop("turn", TURNS[0])
    return live.post(who, "/api/memory/turns", {"stream": stream, "user": user, "agent": agent, **extra})


def test_a_turn_is_recorded_and_attributed_to_its_token_never_its_secret(live: Live) -> None:
    r = record(live)
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["created"] and body["turn"] == 1 and body["stream"] == S and "turn_recorded" in body["events"]
    acme_id = live.store.tokens.authenticate(live.secrets["acme"]).token_id
    writes = live.store.writes(S)
    assert [w["operation"] for w in writes] == ["start_stream", "record_turn"]
    assert {w["token_id"] for w in writes} == {acme_id} and body["token_id"] == acme_id
    assert (writes[-1]["first_seq"], writes[-1]["last_seq"]) == (body["first_seq"], body["last_seq"])
    # Every event the server wrote is covered by exactly one attribution row.
    covered = sorted(s for w in writes for s in range(w["first_seq"], w["last_seq"] + 1))
    assert covered == list(range(1, live.store.ledger.last_seq + 1))
    ledger_bytes = (live.store.folder / "ledger.duckdb").read_bytes()
    assert_no_secret(live.secrets["acme"], ledger_bytes)


def test_a_retried_turn_with_its_idempotency_key_is_recorded_once(live: Live) -> None:
    first = record(live, idempotency_key="k-1")
    again = record(live, idempotency_key="k-1")
    assert first.status_code == 201 and again.status_code == 200, again.text
    assert again.json()["created"] is False
    assert (again.json()["turn"], again.json()["last_seq"]) == (first.json()["turn"], first.json()["last_seq"])
    assert live.get("acme", "/api/memory/values", stream=S).json()["turn"] == 1
    assert record(live, idempotency_key="k-2", turn=TURNS[1]).json()["turn"] == 2


def test_control_without_a_key_a_retry_records_a_second_turn(live: Live) -> None:
    record(live)
    record(live)
    assert live.get("acme", "/api/memory/values", stream=S).json()["turn"] == 2


def test_concurrent_retries_of_one_key_record_one_turn(live: Live) -> None:
    answers: list[requests.Response] = []
    threads = [threading.Thread(target=lambda: answers.append(record(live, idempotency_key="same")))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(a.status_code for a in answers) == [200] * 7 + [201]
    assert live.get("acme", "/api/memory/values", stream=S).json()["turn"] == 1


def test_a_key_reused_for_another_request_is_a_conflict(live: Live) -> None:
    record(live, idempotency_key="k")
    r = record(live, idempotency_key="k", turn=TURNS[1])
    assert r.status_code == 409 and r.json()["parameter"] == "idempotency_key"


def test_expected_version_conflict_answers_409_with_the_current_version(live: Live) -> None:
    version = record(live).json()["version"]
    stale = record(live, expected_version=version - 1, turn=TURNS[1])
    assert stale.status_code == 409 and stale.json()["detail"] == {"current_version": version}
    assert record(live, expected_version=version, turn=TURNS[1]).status_code == 201


@pytest.mark.parametrize("path,params", [("/api/memory/values", {}), ("/api/memory/render", {}),
                                         ("/api/memory/history", {"slot": "office"}),
                                         ("/api/memory/record", {"reference_id": "r0001"})])
def test_another_namespace_can_neither_read_nor_write(live: Live, path: str, params: dict[str, Any]) -> None:
    record(live)
    r = live.get("globex", path, stream=S, **params)
    assert r.status_code == 403 and "outside" in r.json()["error"]
    w = record(live, "globex", turn=("My office is on floor 9.", "ok"))
    assert w.status_code == 403
    assert live.get("acme", "/api/memory/values", stream=S).json()["turn"] == 1  # nothing was written
    assert live.get("globex", "/api/memory/streams").json()["streams"] == []
    assert live.get("globex", "/api/memory/streams", namespace="acme").status_code == 403


def test_a_narrower_namespace_covers_only_its_own_streams(live: Live) -> None:
    assert record(live, "user42").status_code == 201
    assert record(live, "user42", stream="acme/user-7/session-1").status_code == 403
    assert record(live, "acme", stream="acme/user-7/session-1").status_code == 201
    assert [s["stream"] for s in live.get("user42", "/api/memory/streams").json()["streams"]] == [S]
    assert len(live.get("acme", "/api/memory/streams").json()["streams"]) == 2


def test_scopes_are_enforced(live: Live) -> None:
    record(live)
    assert record(live, "acme_reader").status_code == 403
    assert live.get("acme_reader", "/api/memory/values", stream=S).status_code == 200
    erase = {"stream": S, "legal_basis": "GDPR art. 17", "slot": "office"}
    assert live.post("acme", "/api/memory/erase", erase).status_code == 403  # write is not erase


def test_no_token_or_a_wrong_one_is_401(live: Live) -> None:
    r = requests.get(live.url + "/api/memory/values", params={"stream": S}, timeout=30)
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
    bad = requests.get(live.url + "/api/memory/values", params={"stream": S}, timeout=30,
                       headers={"Authorization": "Bearer " + live.secrets["acme"][:-2] + "xx"})
    assert bad.status_code == 401


def test_a_foreign_host_is_refused_with_a_valid_token(live: Live) -> None:
    r = requests.get(live.url + "/api/memory/streams", timeout=30,
                     headers={"Authorization": f"Bearer {live.secrets['acme']}", "Host": "evil.example:80"})
    assert r.status_code == 421


def test_a_bad_address_is_400_naming_the_parameter(live: Live) -> None:
    r = record(live, stream="acme/../etc")
    assert r.status_code == 400 and r.json()["parameter"] == "stream"


def test_every_tool_over_http(live: Live) -> None:
    for i, turn in enumerate(TURNS):
        record(live, turn=turn, idempotency_key=f"t{i}")
    values = live.get("acme", "/api/memory/values", stream=S).json()
    assert {v["slot"]: v["value"] for v in values["values"]}["office"] == "floor 5"
    rendered = live.get("acme", "/api/memory/render", stream=S).json()
    assert "office=floor 5" in rendered["text"] and rendered["tokens"] > 0 and "window" in rendered["manifest"]
    history = live.get("acme", "/api/memory/history", stream=S, slot="office").json()["values"]
    assert [h["value"] for h in history] == ["floor 3", "floor 5"] and history[-1]["current"]
    blamed = live.get("acme", "/api/memory/blame", stream=S, slot="office").json()
    assert blamed["value"] == "floor 5" and blamed["overrides"] == [history[0]["summary_id"]]
    assert [r["user"] for r in blamed["raw"]] == [TURNS[2][0]]
    assert live.get("acme", "/api/memory/blame", stream=S, slot="car").status_code == 404
    pred = live.get("acme", "/api/memory/predecessor", stream=S, fact_key="office", exclude_value="floor 5").json()
    assert pred["ok"] and "value=floor 3" in pred["text"]
    summary_id = history[0]["summary_id"]
    summary = live.get("acme", "/api/memory/summary", stream=S, summary_id=summary_id).json()
    assert summary["ok"] and "superseded by" in summary["text"]
    raw = live.get("acme", "/api/memory/record", stream=S, reference_id="r0002").json()
    assert raw["ok"] and "I live in Lyon." in raw["text"]
    index = live.get("acme", "/api/memory/index", stream=S, index_id="i0001").json()
    assert index["ok"] is False and "no such id" in index["text"]  # three turns fold nothing into a title
    assert live.get("acme", "/api/memory/history", stream=S, slot="car").status_code == 404
    assert live.get("acme", "/api/memory/values", stream="acme/nobody/here").status_code == 404


def test_respond_answers_from_memory_and_records_the_turn_once(live: Live) -> None:
    record(live)
    body = {"stream": S, "user": "Which floor is my office on?", "idempotency_key": "ask-1"}
    first = live.post("acme", "/api/memory/respond", body)
    again = live.post("acme", "/api/memory/respond", body)
    assert first.status_code == 201 and "floor 3" in first.json()["reply"]
    assert again.status_code == 200 and again.json()["reply"] == first.json()["reply"]
    assert live.get("acme", "/api/memory/values", stream=S).json()["turn"] == 2


def test_erase_with_a_legal_basis_shreds_and_is_attributed(live: Live) -> None:
    for turn in TURNS:
        record(live, turn=turn)
    r = live.post("acme_eraser", "/api/memory/erase", {"stream": S, "legal_basis": "GDPR art. 17", "slot": "office"})
    assert r.status_code == 200, r.text
    receipt = r.json()["receipt"]
    assert receipt["legal_basis"] == "GDPR art. 17" and receipt["keys_shredded"]
    values = {v["slot"] for v in live.get("acme", "/api/memory/values", stream=S).json()["values"]}
    assert "office" not in values
    eraser = live.store.tokens.authenticate(live.secrets["acme_eraser"]).token_id
    assert any(w["operation"] == "erase" and w["token_id"] == eraser for w in live.store.writes(S))
    missing = {"stream": S, "legal_basis": "x"}
    assert live.post("acme_eraser", "/api/memory/erase", missing).status_code == 400
    again = live.post("acme_eraser", "/api/memory/erase", {"stream": S, "legal_basis": "x", "slot": "office"})
    assert again.status_code == 404


def test_the_openapi_document_is_generated_from_the_one_list(live: Live) -> None:
    doc = requests.get(live.url + "/openapi.json", timeout=30).json()
    operations = {op["operationId"]: (path, method) for path, ops in doc["paths"].items() for method, op in ops.items()}
    assert operations == {q.name: (q.path, q.method.lower()) for q in LIVE_QUESTIONS}
    assert doc["security"] == [{"bearer": []}]
    turns = doc["paths"]["/api/memory/turns"]["post"]
    assert "idempotency_key" in turns["requestBody"]["content"]["application/json"]["schema"]["properties"]
    assert {"403", "409"} <= set(turns["responses"]) and turns["x-scope"] == "write"


def test_the_live_ledger_verifies_and_audits_clean_after_writes_and_an_erasure(live: Live) -> None:
    for turn in TURNS:
        record(live, turn=turn)
    record(live, stream="acme/user-9/s1")
    live.post("acme_eraser", "/api/memory/erase", {"stream": S, "legal_basis": "GDPR art. 17", "value": "Lyon"})
    assert live.store.ledger.verify().ok
    report = audit(live.store.ledger, live.store.projections, run_id="live")
    assert report.ok, report.as_dict()


def test_an_append_nobody_asked_for_is_refused_not_left_unattributed(tmp_path: Path) -> None:
    """The control of attribution: a write outside a request has no token to name, so the ledger refuses it."""
    from ledgermem.ledger.store import StreamKey
    from ledgermem.memory.memory import Memory
    from ledgermem.service.errors import ServeError

    store = LiveStore(tmp_path / "mem")
    try:
        with pytest.raises(ServeError, match="outside a request"):
            Memory(store.ledger, StreamKey("live", "three_layer", "acme:x:y"), projections=store.projections)
        assert store.ledger.last_seq == 0 and store.writes() == []
    finally:
        store.close()


def test_idempotency_and_attribution_survive_a_restart(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    store = LiveStore(folder)
    token = store.tokens.authenticate(store.tokens.create("acme", "read,write")[1])
    service = LiveService(store)
    args = {"stream": S, "user": TURNS[0][0], "agent": TURNS[0][1], "idempotency_key": "once"}
    first = service.ask("record_turn", args, token)
    store.close()
    store = LiveStore(folder)
    try:
        again = LiveService(store).ask("record_turn", args, token)
        assert again["created"] is False and (again["turn"], again["last_seq"]) == (first["turn"], first["last_seq"])
        assert LiveService(store).ask("current_values", {"stream": S}, token)["turn"] == 1
        assert [w["operation"] for w in store.writes(S)] == ["start_stream", "record_turn"]
    finally:
        store.close()


def test_a_value_as_of_a_wall_clock_time_and_erased_values_stay_erased(live: Live) -> None:
    record(live, turn=TURNS[0])
    record(live, turn=TURNS[2])
    turns = [w for w in live.store.writes(S) if w["operation"] == "record_turn"]
    first_at = turns[0]["recorded_at"].isoformat() + "Z"
    before = live.get("acme", "/api/memory/as-of", stream=S, slot="office", at="2000-01-01T00:00Z").json()
    then = live.get("acme", "/api/memory/as-of", stream=S, slot="office", at=first_at).json()
    now = live.get("acme", "/api/memory/as-of", stream=S, slot="office", at="2999-01-01T00:00+02:00").json()
    assert (before["value"], before["seq"]) == (None, 0)
    assert then["value"] == "floor 3" and then["seq"] == turns[0]["last_seq"]
    assert now["value"] == "floor 5"
    bad = live.get("acme", "/api/memory/as-of", stream=S, slot="office", at="last tuesday")
    assert bad.status_code == 400 and bad.json()["parameter"] == "at"
    erased = live.post("acme_eraser", "/api/memory/erase", {"stream": S, "legal_basis": "GDPR", "slot": "office"})
    assert erased.status_code == 200, erased.text
    again = live.get("acme", "/api/memory/as-of", stream=S, slot="office", at=first_at).json()
    assert again["value"] is None and again["erased"] is True  # the past does not bring an erased value back
    assert "floor 3" not in json.dumps(again)


def test_a_shared_stream_is_read_by_several_agents_and_written_by_its_owner(live: Live) -> None:
    shared = "acme/shared/handbook"
    agents = [live.store.tokens.create(f"acme/user-{n}", "read,write", shared=[("acme/shared", "read")])[1]
              for n in (42, 7)]
    assert record(live, "acme", stream=shared, turn=("My office is on floor 2.", "ok")).status_code == 201
    for secret in agents:
        live.secrets["agent"] = secret
        values = live.get("agent", "/api/memory/values", stream=shared)
        assert values.status_code == 200 and values.json()["values"][0]["value"] == "floor 2"
        assert record(live, "agent", stream=shared, turn=("The office is on floor 9.", "ok")).status_code == 403
    live.secrets["agent"] = agents[0]
    assert record(live, "agent", stream="acme/user-7/s").status_code == 403  # the other agent's own streams


@pytest.mark.parametrize("body,parameter", [
    ({"stream": S, "user": "x", "admin": True}, "admin"),
    ({"stream": S, "user": 42}, "user"),
    ({"stream": S, "user": "x" * 32001}, "user"),
    ({"stream": S, "user": "x", "expected_version": "two"}, "expected_version"),
    ({"stream": S, "user": "x", "idempotency_key": "k" * 129}, "idempotency_key"),
    ({"stream": ["acme", "u", "s"], "user": "x"}, "stream"),
])
def test_a_malformed_turn_is_400_naming_the_field_and_records_nothing(live: Live, body: dict[str, Any],
                                                                       parameter: str) -> None:
    r = live.post("acme", "/api/memory/turns", body)
    assert r.status_code == 400 and r.json()["parameter"] == parameter, r.text
    assert live.store.ledger.last_seq == 0


def test_a_body_that_is_not_json_or_too_deep_is_400(live: Live) -> None:
    headers = {"Authorization": f"Bearer {live.secrets['acme']}", "Content-Type": "application/json"}
    for data in (b"{not json", b"[" * 100 + b"]" * 100, b'"a string"'):
        r = requests.post(live.url + "/api/memory/turns", data=data, headers=headers, timeout=30)
        assert r.status_code == 400, (data[:10], r.text)
    assert live.store.ledger.last_seq == 0


def test_an_error_names_no_path_of_the_server(live: Live) -> None:
    r = live.get("acme", "/api/memory/values", stream="acme/missing/s")
    assert r.status_code == 404 and "acme/missing/s" in r.json()["error"] and str(live.store.folder) not in r.text
