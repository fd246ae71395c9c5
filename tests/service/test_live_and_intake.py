"""Serving a run while its writer holds it, the audited fact intake, erasure receipts, Parquet exports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests

from ledgermem.service.catalog import Catalog
from ledgermem.service.core import AuditFailed, Service, error_body
from ledgermem.gate.invariants import AuditReport, CheckResult, Violation
from ledgermem.ledger.parquet import export
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory import Memory
from tests.service.conftest import Served

WRITER = """
import sys
from ledgermem.ledger import Ledger, StreamKey
from ledgermem.memory import Memory, MemoryConfig
ledger = Ledger(sys.argv[1])
memory = Memory(ledger, StreamKey("live", "three_layer", "alice"), "heuristic",
                config=MemoryConfig(personal_data=False))
print("open", flush=True)
for line in sys.stdin:
    memory.add_turn(line.strip(), "Noted.")
    print("turn", memory.state.turn, flush=True)
ledger.close()
print("closed", flush=True)
"""


def values(server: Served, run: str, episode: str) -> dict[str, str]:
    answer = server.get(f"/api/runs/{run}/episodes/{episode}/values")
    assert answer.status_code == 200, answer.text
    return {r["slot"]: r["value"] for r in answer.json()["items"]}


def test_a_run_still_being_written_is_served_from_a_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "live.duckdb"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdin is not None and writer.stdout is not None

    def say(text: str) -> str:
        writer.stdin.write(text + "\n")  # type: ignore[union-attr]
        writer.stdin.flush()  # type: ignore[union-attr]
        return writer.stdout.readline().strip()  # type: ignore[union-attr]

    try:
        assert writer.stdout.readline().strip() == "open"
        assert say("My office floor is 3F.") == "turn 1"
        with pytest.raises(Exception, match="open for writing in another process"):
            Ledger(path, read_only=True)  # what the snapshot is for
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        server = Served(path, "--refresh", "0", tmpdir=scratch)
        try:
            run = server.get("/api/runs/live").json()
            assert run["live"] is True and run["events"] > 0
            assert values(server, "live", "alice") == {"office floor": "3F"}
            assert say("My office floor changed to 7F.") == "turn 2"
            assert values(server, "live", "alice") == {"office floor": "7F"}
            audited = server.get("/api/runs/live/audit").json()
            assert audited.get("ok") is True, audited
            writer.stdin.close()
            assert writer.stdout.readline().strip() == "closed"
            writer.wait(timeout=30)
            run = server.get("/api/runs/live").json()
            assert run["live"] is False
            assert values(server, "live", "alice") == {"office floor": "7F"}
            history = server.get("/api/runs/live/episodes/alice/history", slot="office floor").json()["items"]
            assert [h["value"] for h in history] == ["3F", "7F"]
            assert any(scratch.glob("ledgermem-serve-*/*/live.duckdb"))  # the snapshot it served from
        finally:
            server.stop()
        assert server.proc.returncode == 0 and not any(scratch.glob("ledgermem-serve-*"))  # SIGTERM: no copy left
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        for pipe in (writer.stdin, writer.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


@pytest.fixture
def chat_ledger(tmp_path: Path) -> Path:
    """A live agent's ledger with personal data sealed: two turns and an erasure."""
    path = tmp_path / "chat.duckdb"
    with Ledger(path) as ledger:
        memory = Memory(ledger, StreamKey("chat", "three_layer", "alice"), "heuristic")
        memory.add_turn("My home city is Lisbon.", "Noted.")
        memory.add_turn("My office floor is 3F.", "Noted.")
        assert memory.erase(legal_basis="GDPR Art. 17 request #12", slot="home city").clean
    return path


def post(server: Served, episode: str, body: Any, **kwargs: Any) -> requests.Response:
    return requests.post(f"{server.url}/api/runs/chat/episodes/{episode}/facts", json=body, timeout=60, **kwargs)


def test_the_fact_intake_is_idempotent_and_audited(chat_ledger: Path) -> None:
    server = Served(chat_ledger, "--intake")
    try:
        assert "fact intake on" in server.banner
        before = server.get("/api/runs/chat").json()["events"]
        statement = {"user": "My office floor changed to 9F.", "after_turn": 2}
        created = post(server, "alice", statement)
        assert created.status_code == 201, created.text
        body = created.json()
        assert body["created"] is True and body["turn"] == 3 and body["record_id"] == "r0003"
        assert body["audit"]["ok"] is True and {c["invariant"] for c in body["audit"]["checks"]} >= {"I1", "I5"}
        assert {"slot": "office floor", "value": "9F", "summary_id": body["summaries"][0]} in body["registry"]
        events = server.get("/api/runs/chat").json()["events"]
        assert events > before
        again = post(server, "alice", statement)  # a retry after a lost answer
        assert again.status_code == 200 and again.json()["created"] is False
        assert again.json()["seqs"] == body["seqs"]
        assert server.get("/api/runs/chat").json()["events"] == events
        assert values(server, "chat", "alice")["office floor"] == "9F"
        other = post(server, "alice", {"user": "My office floor changed to 2F.", "after_turn": 2})
        assert other.status_code == 409 and "already holds a different statement" in other.json()["error"]
        ahead = post(server, "alice", {"user": "My desk is 4.", "after_turn": 7})
        assert ahead.status_code == 409 and "ahead" in ahead.json()["error"]
        new = post(server, "bob", {"user": "My team size is 6.", "after_turn": 0})
        assert new.status_code == 201 and new.json()["turn"] == 1
        unknown = post(server, "carol", {"user": "My team size is 6.", "after_turn": 3})
        assert unknown.status_code == 404
        missing = post(server, "alice", {"after_turn": 3})
        assert missing.status_code == 400 and missing.json()["parameter"] == "user"
        extra = post(server, "alice", {"user": "x", "after_turn": 3, "force": True})
        assert extra.status_code == 400 and "'force'" in extra.json()["error"]
        not_json = requests.post(f"{server.url}/api/runs/chat/episodes/alice/facts", data="user=x", timeout=30,
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert not_json.status_code == 400 and "must be JSON" in not_json.json()["error"]
        broken = requests.post(f"{server.url}/api/runs/chat/episodes/alice/facts", data="{", timeout=30,
                               headers={"Content-Type": "application/json"})
        assert broken.status_code == 400 and "not JSON" in broken.json()["error"]
        assert server.get("/api/runs/chat/audit").json()["ok"] is True
    finally:
        server.stop()


def test_an_audit_failure_after_an_intake_is_an_error(chat_ledger: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Must-fail control: the answer depends on the audit that ran after the write."""
    broken = AuditReport("chat", None, (CheckResult("I2", (Violation("I2", "chat/three_layer/alice", 9, ("x",),
                                                                     "not at the top level"),)),))
    monkeypatch.setattr("ledgermem.service.intake.audit", lambda *a, **k: broken)
    service = Service(Catalog(chat_ledger, hold=0), intake=True)
    try:
        with pytest.raises(AuditFailed, match="found violations: I2") as caught:
            service.ask("intake_fact", {"run": "chat", "episode": "alice", "user": "My desk is 4.", "after_turn": 2})
        status, body = error_body(caught.value)
        assert status == 500 and body["detail"]["created"] is True and body["detail"]["audit"]["ok"] is False
    finally:
        service.catalog.close()


def test_erasure_receipts_say_what_was_erased_and_that_it_stays_unreadable(chat_ledger: Path) -> None:
    service = Service(Catalog(chat_ledger, hold=0))
    try:
        receipts = service.ask("erasures", {"run": "chat"})["items"]
        assert len(receipts) == 1
        r = receipts[0]
        assert r["legal_basis"] == "GDPR Art. 17 request #12" and r["episode"] == "alice"
        assert [f["slot"] for f in r["facts"]] == ["home city"] and r["records"] == ["r0001"]
        assert r["keys_shredded"] and r["still_unreadable"] is True and r["i5_violations"] == []
        current = service.ask("current_values", {"run": "chat", "episode": "alice"})["items"]
        assert "Lisbon" not in str(current) and "Lisbon" not in str(service.ask("layers", {"run": "chat",
                                                                                           "episode": "alice"}))
    finally:
        service.catalog.close()


def _changed_slot() -> str:
    """A slot of the small run's first episode that changed (the phrasing corpus names the slots)."""
    from ledgermem.datasets.synthetic import generate_synthetic
    from tests.service.conftest import SMALL

    return next(s for s, h in generate_synthetic(**SMALL).episodes[0].facts if len(h) > 1)


def test_a_parquet_export_gives_the_answers_of_its_ledger(runs_dir: Path, tmp_path: Path) -> None:
    with Ledger(runs_dir / "small" / "ledger.duckdb", read_only=True) as ledger:
        export(ledger, tmp_path / "export")
    on_file = Service(Catalog(runs_dir, hold=0))
    on_export = Service(Catalog(tmp_path / "export"))
    try:
        assert on_export.ask("get_run", {"run": "small"})["format"] == "parquet"
        for name, args in [("current_values", {"seq": 40}), ("layers", {"turn": 5}), ("list_probes", {}),
                           ("history", {"slot": _changed_slot()}), ("timeline", {})]:
            full = {"run": "small", "episode": "syn-en-000", **args}
            assert on_export.ask(name, full) == on_file.ask(name, full), name
    finally:
        on_file.catalog.close()
        on_export.catalog.close()


def test_serving_nothing_is_a_clear_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "ledgermem", "serve", str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "no runs here" in proc.stderr and "Traceback" not in proc.stderr
