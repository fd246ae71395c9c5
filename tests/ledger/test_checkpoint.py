"""Signed checkpoints catch what the chain alone cannot: a rewrite with recomputed hashes, and removed events.

Each attack is run twice: against plain `verify` (the must-fail control: the
chain verifies, so it cannot be what catches the attack) and against the
checkpoint, which must name the seq.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledgermem.ledger.checkpoint import (
    Checkpoint,
    checkpoint_path,
    default_key_path,
    load_public_key,
    load_signing_key,
    public_key_path,
    read_checkpoints,
    sign_finished_run,
    verify_checkpoints,
    write_checkpoint,
)
from ledgermem.ledger.errors import CheckpointError
from ledgermem.projections.events import LlmCalled, TurnRecorded
from ledgermem.ledger.schema import canonical_bytes, chain_hash
from ledgermem.ledger.store import Ledger, StreamKey

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def build(path: Path, episodes: int = 3, turns: int = 30) -> None:
    """A ledger of a few streams, each turn a turn_recorded and an llm_called (episodes interleaved)."""
    with Ledger(path) as ledger:
        for t in range(1, turns + 1):
            for e in range(episodes):
                stream = StreamKey("run", "three_layer", f"ep{e}")
                ledger.append(stream, [
                    TurnRecorded(turn=t, record_id=f"r{e}-{t}", text=f"user {t}", agent=f"agent {t}"),
                    LlmCalled(purpose="summarize", backend="heuristic", model="heuristic-v1", prompt_hash=f"h{t}",
                              text=f"summary {e}/{t}"),
                ], expected_version=ledger.stream_version(stream))


def _rows(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    result = conn.execute("SELECT * FROM events ORDER BY seq")
    names = [d[0] for d in result.description or ()]
    return [dict(zip(names, r)) for r in result.fetchall()]


def forge_llm_response(path: Path, seq: int, text: str) -> None:
    """A forger's script: change the llm_called at `seq` and recompute every hash from there on."""
    conn = duckdb.connect(str(path))
    rows = _rows(conn)
    assert rows[seq - 1]["event_type"] == "llm_called"
    rows[seq - 1]["text"] = text
    payload = json.loads(rows[seq - 1]["payload"])
    rows[seq - 1]["payload"] = json.dumps({**payload, "model": "forged-model"}, separators=(",", ":"),
                                          sort_keys=True)
    prev = rows[seq - 2]["hash"] if seq > 1 else rows[0]["prev_hash"]
    for row in rows[seq - 1:]:
        row["prev_hash"] = prev
        row["hash"] = prev = chain_hash(prev, canonical_bytes(row))
        conn.execute("UPDATE events SET text = ?, payload = ?, prev_hash = ?, hash = ? WHERE seq = ?",
                     [row["text"], row["payload"], row["prev_hash"], row["hash"], row["seq"]])
    conn.close()


def drop_newest(path: Path, n: int) -> int:
    """A forger's script: delete the newest `n` events and lower the `streams` table to match."""
    conn = duckdb.connect(str(path))
    last = conn.execute("SELECT max(seq) FROM events").fetchone()[0]  # type: ignore[index]
    conn.execute("DELETE FROM events WHERE seq > ?", [last - n])
    conn.execute("UPDATE streams SET version = (SELECT max(stream_version) FROM events e "
                 "WHERE e.stream_no = streams.stream_no)")
    conn.execute("DELETE FROM streams WHERE version IS NULL")
    conn.close()
    return int(last - n)


@pytest.fixture
def key(tmp_path: Path) -> Ed25519PrivateKey:
    return load_signing_key(tmp_path / "keys" / "checkpoint.key")


@pytest.fixture
def signed(tmp_path: Path, key: Ed25519PrivateKey) -> Path:
    path = tmp_path / "run" / "ledger.duckdb"
    build(path)
    with Ledger(path) as ledger:
        write_checkpoint(ledger, key, now=NOW)
    return path


def check(path: Path, key: Ed25519PrivateKey, source: Path | None = None) -> Any:
    source = source or checkpoint_path(path)
    with Ledger(path, read_only=True) as ledger:
        return verify_checkpoints(ledger, read_checkpoints(source), key.public_key(), str(source))


def test_a_clean_ledger_holds_every_checkpoint(signed: Path, key: Ed25519PrivateKey) -> None:
    report = check(signed, key)
    assert report.ok and report.checked == 1 and report.newest_seq == report.last_seq == 180


def test_a_checkpoint_line_says_what_was_signed(signed: Path) -> None:
    [(line, cp)] = read_checkpoints(checkpoint_path(signed))
    with Ledger(signed, read_only=True) as ledger:
        head = ledger.conn.execute("SELECT hash FROM events WHERE seq = 180").fetchone()[0]  # type: ignore[index]
    assert (line, cp.seq, cp.events, cp.head_hash, cp.runs, cp.time) == (1, 180, 180, head, ("run",),
                                                                         "2026-03-01T12:00:00+00:00")
    assert checkpoint_path(signed).name == "ledger.checkpoints.jsonl"


def test_a_rewrite_with_recomputed_hashes_passes_the_chain_but_not_the_checkpoint(
        signed: Path, key: Ed25519PrivateKey) -> None:
    forge_llm_response(signed, 50, "the user agreed to everything")
    with Ledger(signed, read_only=True) as ledger:
        assert ledger.verify().ok  # the control: the chain alone cannot see it
        assert ledger.conn.execute("SELECT text FROM events WHERE seq = 50").fetchone() == (
            "the user agreed to everything",)
    report = check(signed, key)
    assert not report.ok and report.newest_seq is None
    [problem] = report.problems
    assert "checkpoint of seq 180" in problem and "between seq 1 and seq 180 was rewritten" in problem


def test_an_earlier_checkpoint_narrows_down_where_the_rewrite_is(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    path = tmp_path / "ledger.duckdb"
    build(path, turns=10)  # seq 1..60
    with Ledger(path) as ledger:
        write_checkpoint(ledger, key)
        stream = StreamKey("run", "three_layer", "ep0")
        ledger.append(stream, [TurnRecorded(turn=11, record_id="r0-11", text="later", agent="a"),
                               LlmCalled(purpose="summarize", backend="b", model="m", prompt_hash="h", text="t")],
                      expected_version=ledger.stream_version(stream))
        write_checkpoint(ledger, key)
    forge_llm_response(path, 62, "rewritten")  # after the first checkpoint
    report = check(path, key)
    assert report.checked == 2 and report.newest_seq == 60
    [problem] = report.problems
    assert ":2: checkpoint of seq 62" in problem and "between seq 61 and seq 62 was rewritten" in problem


def test_dropping_the_newest_events_passes_the_chain_but_not_the_checkpoint(
        signed: Path, key: Ed25519PrivateKey) -> None:
    last = drop_newest(signed, 50)
    with Ledger(signed, read_only=True) as ledger:
        assert ledger.verify().ok and ledger.last_seq == last == 130  # the control
    report = check(signed, key)
    [problem] = report.problems
    assert "seq 180 is missing, the ledger ends at seq 130" in problem


def test_a_changed_checkpoint_line_fails_its_signature(signed: Path, key: Ed25519PrivateKey) -> None:
    """A forger who rewrote the ledger writes the new head into the checkpoint: without the key it fails."""
    forge_llm_response(signed, 50, "rewritten")
    with Ledger(signed, read_only=True) as ledger:
        new_head = ledger.conn.execute("SELECT hash FROM events WHERE seq = 180").fetchone()[0]  # type: ignore[index]
    doc = json.loads(checkpoint_path(signed).read_text())
    checkpoint_path(signed).write_text(json.dumps({**doc, "head_hash": new_head}) + "\n")
    [problem] = check(signed, key).problems
    assert "the signature does not verify" in problem and "checkpoint of seq 180" in problem


def test_a_checkpoint_re_signed_with_another_key_is_not_trusted(signed: Path, key: Ed25519PrivateKey,
                                                                tmp_path: Path) -> None:
    """The public key written in the line is the forger's: only the trusted key counts."""
    forge_llm_response(signed, 50, "rewritten")
    forger = Ed25519PrivateKey.generate()
    checkpoint_path(signed).unlink()
    with Ledger(signed, read_only=True) as ledger:
        write_checkpoint(ledger, forger)
    assert check(signed, forger).ok  # the control: the forged line is well signed, by the forger
    [problem] = check(signed, key).problems
    assert "the signature does not verify under the trusted key" in problem


def test_a_broken_chain_is_never_signed(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    path = tmp_path / "ledger.duckdb"
    build(path, turns=3)
    conn = duckdb.connect(str(path))
    conn.execute("UPDATE events SET text = 'naive edit' WHERE seq = 4")
    conn.close()
    with Ledger(path, read_only=True) as ledger, pytest.raises(CheckpointError, match="does not verify: seq 4"):
        write_checkpoint(ledger, key)
    assert not checkpoint_path(path).exists()


def test_the_key_is_made_private_with_its_public_half_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "ledgermem" / "checkpoint.key"
    key = load_signing_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_signing_key(path).public_key() == key.public_key()  # the same key the next time
    assert load_public_key(public_key_path(path)) == key.public_key() == load_public_key(path)
    path.chmod(0o644)
    with pytest.raises(CheckpointError, match="accessible to other users.*chmod 600"):
        load_signing_key(path)
    with pytest.raises(CheckpointError, match="no checkpoint signing key here"):
        load_signing_key(tmp_path / "absent.key", create=False)


def test_the_default_key_lives_outside_the_run() -> None:
    assert default_key_path({"LEDGERMEM_CHECKPOINT_KEY": "/k/ck.key"}) == Path("/k/ck.key")
    assert default_key_path({"XDG_CONFIG_HOME": "/cfg"}) == Path("/cfg/ledgermem/checkpoint.key")
    assert default_key_path({}) == Path.home() / ".config" / "ledgermem" / "checkpoint.key"


@pytest.mark.parametrize("damage, message", [
    (lambda s: s[:-5], "not a JSON line"),
    (lambda s: s.replace('"seq":180', '"seq":"180"'), "field 'seq' is missing or not a int"),
    (lambda s: s.replace("ledgermem-checkpoint/1", "other/1"), "not a ledgermem-checkpoint/1 line"),
])
def test_a_malformed_line_is_named(signed: Path, damage: Callable[[str], str], message: str) -> None:
    file = checkpoint_path(signed)
    line = file.read_text().strip()
    file.write_text(line + "\n" + damage(line) + "\n")
    with pytest.raises(CheckpointError, match=f"{file.name}:2: {message}"):
        read_checkpoints(file)


def test_the_run_end_checkpoint_goes_beside_the_ledger_and_to_the_outside_copy(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    build(path, turns=2)
    env = {"LEDGERMEM_CHECKPOINT_KEY": str(tmp_path / "k.key"), "LEDGERMEM_CHECKPOINT_OUT": str(tmp_path / "o.jsonl")}
    with Ledger(path) as ledger:
        note = sign_finished_run(ledger, env)
    assert note.startswith("seq 12 signed with key ") and str(tmp_path / "o.jsonl") in note
    assert checkpoint_path(path).read_text() == (tmp_path / "o.jsonl").read_text()
    env["LEDGERMEM_CHECKPOINT_KEY"] = str(tmp_path / "missing-dir-file" / "x")
    (tmp_path / "missing-dir-file").write_text("a file where a folder should be")
    with Ledger(path) as ledger:
        assert sign_finished_run(ledger, env).startswith("NOT written: ")


def test_a_checkpoint_round_trips_through_its_line(signed: Path, key: Ed25519PrivateKey) -> None:
    [(_, cp)] = read_checkpoints(checkpoint_path(signed))
    assert isinstance(cp, Checkpoint) and cp.signed_by(key.public_key())
    assert json.loads(cp.to_line()) == json.loads(checkpoint_path(signed).read_text())
