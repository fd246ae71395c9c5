"""`ledgermem checkpoint`, `verify --checkpoint` and the audit's checkpoint line, against a forger's edits.

Each forgery is first shown to pass plain `verify` (the must-fail control:
the chain alone cannot catch it), then to fail `verify --checkpoint`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

from ledgermem.cli.commands import cli
from ledgermem.cli.checkpoint import check
from ledgermem.ledger.errors import CheckpointError
from tests.ledger.test_checkpoint import drop_newest, forge_llm_response


def invoke(*args: str, cwd: Path, key: Path | None = None) -> Result:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with pytest.MonkeyPatch.context() as env:
            if key is not None:
                env.setenv("LEDGERMEM_CHECKPOINT_KEY", str(key))
            return CliRunner().invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A finished run (signed at its end), its signing key, and what `run` said about the checkpoint."""
    cwd = tmp_path_factory.mktemp("ckpt")
    key = cwd / "outside" / "checkpoint.key"
    result = invoke("run", "--episodes", "2", "--turns", "8", "--systems", "three_layer", "--run-id", "c",
                    cwd=cwd, key=key)
    assert result.exit_code == 0, result.output
    return cwd / "runs" / "c", key, result.output


@pytest.fixture
def run(made: tuple[Path, Path, str], tmp_path: Path) -> Path:
    """A fresh copy of the signed run to attack."""
    shutil.copytree(made[0], tmp_path / "runs" / "c")
    return tmp_path / "runs" / "c"


@pytest.fixture
def key(made: tuple[Path, Path, str]) -> Path:
    return made[1]


def _last_seq(run: Path) -> int:
    with duckdb.connect(str(run / "ledger.duckdb"), read_only=True) as conn:
        return int(conn.execute("SELECT max(seq) FROM events").fetchone()[0])  # type: ignore[index]


def _an_llm_call(run: Path) -> int:
    with duckdb.connect(str(run / "ledger.duckdb"), read_only=True) as conn:
        return int(conn.execute("SELECT min(seq) FROM events WHERE event_type = 'llm_called' AND seq > 20")
                   .fetchone()[0])  # type: ignore[index]


def test_a_run_signs_its_head_when_it_finishes(made: tuple[Path, Path, str]) -> None:
    run, key, output = made
    [line] = (run / "ledger.checkpoints.jsonl").read_text().splitlines()
    assert json.loads(line)["seq"] == _last_seq(run)
    assert f"checkpoint: seq {_last_seq(run)} signed with key " in output
    assert key.is_file() and not (run / key.name).exists()  # the key is outside the run


def test_a_clean_run_verifies_with_its_checkpoint(run: Path, key: Path) -> None:
    result = invoke("verify", "c", "--checkpoint", "--checkpoint-key", str(key), cwd=run.parents[1])
    assert result.exit_code == 0, result.output
    assert "ok: 1 checkpoint(s) signed by key" in result.output and f"the newest at seq {_last_seq(run)}" in result.output


def test_a_rewritten_llm_call_with_recomputed_hashes_is_caught_by_the_checkpoint(run: Path, key: Path) -> None:
    seq, last = _an_llm_call(run), _last_seq(run)
    forge_llm_response(run / "ledger.duckdb", seq, "I never said that")
    plain = invoke("verify", "c", cwd=run.parents[1], key=key)
    assert plain.exit_code == 0 and plain.output.startswith("ok:")  # the control: the chain verifies
    result = invoke("verify", "c", "--checkpoint", cwd=run.parents[1], key=key)
    assert result.exit_code == 1
    assert f"CHECKPOINT FAILED: runs/c/ledger.checkpoints.jsonl:1: checkpoint of seq {last}" in result.output
    assert f"between seq 1 and seq {last} was rewritten" in result.output


def test_dropping_the_newest_50_events_is_caught_by_the_checkpoint(run: Path, key: Path) -> None:
    last = _last_seq(run)
    drop_newest(run / "ledger.duckdb", 50)
    plain = invoke("verify", "c", cwd=run.parents[1], key=key)
    assert plain.exit_code == 0 and f"ok: {last - 50} events" in plain.output  # the control
    result = invoke("verify", "c", "--checkpoint", cwd=run.parents[1], key=key)
    assert result.exit_code == 1
    assert f"seq {last} is missing, the ledger ends at seq {last - 50}" in result.output


def test_a_checkpoint_line_given_the_forged_head_fails_its_signature(run: Path, key: Path) -> None:
    forge_llm_response(run / "ledger.duckdb", _an_llm_call(run), "forged")
    with duckdb.connect(str(run / "ledger.duckdb"), read_only=True) as conn:
        head = conn.execute("SELECT hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()[0]  # type: ignore[index]
    file = run / "ledger.checkpoints.jsonl"
    file.write_text(json.dumps({**json.loads(file.read_text()), "head_hash": head}) + "\n")
    result = invoke("verify", "c", "--checkpoint", cwd=run.parents[1], key=key)
    assert result.exit_code == 1 and "the signature does not verify under the trusted key" in result.output


def test_an_outside_copy_catches_a_forger_who_also_deleted_the_run_s_checkpoints(run: Path, key: Path,
                                                                                tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "c.checkpoints.jsonl"
    signed = invoke("checkpoint", "c", "--checkpoint-key", str(key), "--checkpoint-out", str(outside),
                    cwd=run.parents[1])
    assert signed.exit_code == 0 and f"signed seq {_last_seq(run)}" in signed.output
    last = _last_seq(run)
    drop_newest(run / "ledger.duckdb", 50)
    (run / "ledger.checkpoints.jsonl").unlink()
    gone = invoke("verify", "c", "--checkpoint", cwd=run.parents[1], key=key)
    assert gone.exit_code == 1 and "no checkpoint file here" in gone.output  # never a silent pass
    result = invoke("verify", "c", "--checkpoint", str(outside), "--public-key", str(key) + ".pub",
                    cwd=run.parents[1], key=tmp_path / "not-the-signer.key")
    assert result.exit_code == 1 and f"seq {last} is missing" in result.output


def test_verify_json_carries_the_checkpoint_report(run: Path, key: Path) -> None:
    result = invoke("verify", "c", "--json", "--checkpoint", cwd=run.parents[1], key=key)
    doc = json.loads(result.output)
    assert result.exit_code == 0 and doc["ok"] and doc["checkpoint"]["ok"] and doc["checkpoint"]["checked"] == 1


def test_without_a_trusted_key_the_checkpoint_is_not_taken_on_its_own_word(run: Path, tmp_path: Path) -> None:
    result = invoke("verify", "c", "--checkpoint", cwd=run.parents[1], key=tmp_path / "none.key")
    assert result.exit_code == 1
    assert result.output.startswith("error: no trusted key to check checkpoints with") and not (
        tmp_path / "none.key").exists()


def test_a_ledger_that_does_not_verify_is_not_signed(run: Path, key: Path) -> None:
    with duckdb.connect(str(run / "ledger.duckdb")) as conn:
        conn.execute("UPDATE events SET text = 'naive edit' WHERE seq = 3")
    before = (run / "ledger.checkpoints.jsonl").read_text()
    result = invoke("checkpoint", "c", cwd=run.parents[1], key=key)
    assert result.exit_code == 1 and "will not sign a ledger that does not verify: seq 3" in result.output
    assert (run / "ledger.checkpoints.jsonl").read_text() == before


def test_the_audit_shows_the_checkpoint_and_fails_on_a_forgery(run: Path, key: Path) -> None:
    clean = invoke("audit", "c", cwd=run.parents[1], key=key)
    assert "checkpoint: 1 signed checkpoint(s) hold" in clean.output
    drop_newest(run / "ledger.duckdb", 50)
    result = invoke("audit", "c", "--json", cwd=run.parents[1], key=key)
    doc = json.loads(result.output)
    assert result.exit_code == 1 and doc["checkpoint"]["ok"] is False
    assert "is missing" in doc["checkpoint"]["problems"][0]


def test_the_audit_catches_a_re_hashed_llm_call_only_through_the_checkpoint(run: Path, key: Path) -> None:
    forge_llm_response(run / "ledger.duckdb", _an_llm_call(run), "forged")
    (run / "ledger.checkpoints.jsonl").rename(run.parent / "aside.jsonl")
    unanchored = invoke("audit", "c", cwd=run.parents[1], key=key)
    assert unanchored.exit_code == 0 and "checkpoint: none" in unanchored.output  # the control
    (run.parent / "aside.jsonl").rename(run / "ledger.checkpoints.jsonl")
    result = invoke("audit", "c", cwd=run.parents[1], key=key)
    assert result.exit_code == 1 and "checkpoint: FAILED:" in result.output and "was rewritten" in result.output
    assert result.output.rstrip().endswith("audit: VIOLATED checkpoint")


def test_the_run_s_checkpoint_vouches_for_its_parquet_export(run: Path, key: Path, tmp_path: Path) -> None:
    assert invoke("export", "c", "--to", str(tmp_path / "x"), cwd=run.parents[1]).exit_code == 0
    with pytest.raises(CheckpointError, match="name the ledger's: --checkpoint FILE"):
        check(tmp_path / "x", "", None, str(key))
    report = check(tmp_path / "x", str(run / "ledger.checkpoints.jsonl"), None, str(key))
    assert report.ok and report.newest_seq == _last_seq(run)


def test_verify_opens_a_parquet_export_and_checks_the_ledgers_checkpoints_against_it(run: Path, key: Path) -> None:
    export = run.parent.parent / "exported"
    assert invoke("export", "c", "--to", str(export), cwd=run.parent.parent).exit_code == 0
    plain = invoke("verify", str(export), cwd=run.parent.parent, key=key)
    assert plain.exit_code == 0, plain.output
    assert plain.output.startswith("ok: ") and "(" + str(export) in plain.output
    anchored = invoke("verify", str(export), "--checkpoint", str(run / "ledger.checkpoints.jsonl"),
                      cwd=run.parent.parent, key=key)
    assert anchored.exit_code == 0, anchored.output
    assert "checkpoint(s) signed by key" in anchored.output
    # Control: an export of a ledger whose newest events were dropped falls short of the signed head.
    drop_newest(run / "ledger.duckdb", 5)
    short = run.parent.parent / "short"
    assert invoke("export", "c", "--to", str(short), cwd=run.parent.parent).exit_code == 0
    cut = invoke("verify", str(short), "--checkpoint", str(run / "ledger.checkpoints.jsonl"),
                 cwd=run.parent.parent, key=key)
    assert cut.exit_code == 1
    assert "missing" in cut.output
