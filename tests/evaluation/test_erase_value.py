"""`ledgermem erase RUN --episode EP --value V` without a slot: a value the fact grammar never extracted.

A `--dataset` run (personal data, sealed) of a seed-format file where the
value is said in a phrasing the lexical detector does not recognise and is
also a probe's gold. After the erasure no file of the run folder holds it,
in any system's copy, in any derived file; other episodes keep theirs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result

from ledgermem.evaluation import erasure as run_erasure
from tests.invoke import invoke_in
from ledgermem.evaluation.erasure import erase_in_run
from ledgermem.gate.lexicon import detect_facts
from ledgermem.ledger.store import Ledger
from ledgermem.memory.erasure import personal_texts

MOVED = "I relocated to Reykjavik last spring."
HIKED = "We spent a week hiking near Akureyri."  # said in both episodes
DATASET = {
    "episodes": [
        {
            "episode_id": "alice",
            "dialogues": [
                ["Hello there.", "Hi!"],
                [MOVED, "How exciting, Reykjavik is lovely."],
                ["My meeting time is 9am.", "Noted."],
                [HIKED, "Sounds wonderful."],
                ["Lovely weather today.", "Indeed."],
            ],
            "facts": {"meeting time": [[2, "9am"]]},  # 0-based: the third dialogue
            "probes": [
                {"type": "current_fact", "fact_key": "home city", "question": "Which city do I live in now?",
                 "answer": "Reykjavik"},
                {"type": "current_fact", "fact_key": "meeting time", "question": "When is my meeting?",
                 "answer": "9am"},
            ],
        },
        {
            "episode_id": "bob",
            "dialogues": [[HIKED, "Nice."], ["My meeting time is 10am.", "Noted."]],
            "facts": {"meeting time": [[1, "10am"]]},
            "probes": [{"type": "current_fact", "fact_key": "trip", "question": "Where did we hike?",
                        "answer": "Akureyri"}],
        },
    ]
}


def invoke(*args: str, cwd: Path) -> Result:
    return invoke_in(cwd, *args)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    data = tmp_path / "seed.json"
    data.write_text(json.dumps(DATASET), encoding="utf-8")
    assert invoke("run", "--dataset", str(data), "--run-id", "v", cwd=tmp_path).exit_code == 0
    assert invoke("report", "v", cwd=tmp_path).exit_code == 0
    return tmp_path / "runs" / "v"


def files_holding(folder: Path, needle: str) -> list[str]:
    """Every file under `folder` whose bytes hold `needle`, ASCII case-insensitive."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and needle.lower().encode() in p.read_bytes().lower())


def decrypted(run: Path, episode: str) -> str:
    """Every personal field of every system's stream of `episode`, opened with the run's keys."""
    with Ledger(run / "ledger.duckdb", read_only=True) as ledger:
        return "\n".join(t for s, _ in ledger.streams() if s.episode_id == episode
                         for r in ledger.read(stream=s) for t in personal_texts(r.event))


def last_seq(run: Path) -> int:
    with Ledger(run / "ledger.duckdb", read_only=True) as ledger:
        return ledger.last_seq


def test_the_phrasings_escape_the_lexical_detector() -> None:
    assert detect_facts(MOVED) == () and detect_facts(HIKED) == ()


def test_a_value_the_detector_missed_leaves_no_file_of_the_run_holding_it(run_dir: Path) -> None:
    cwd = run_dir.parents[1]
    # The scan below can see: before the erasure the value is in the projections and the derived files.
    assert {"ledger.projections.duckdb", "probe_predictions.csv", "episode_logs.jsonl", "report.md"} <= set(
        files_holding(run_dir, "reykjavik"))
    assert "reykjavik" in decrypted(run_dir, "alice").lower()
    result = invoke("erase", "v", "--episode", "alice", "--value", "  reykjavik ", "--legal-basis", "GDPR Art. 17",
                    "--json", cwd=cwd)
    assert result.exit_code == 0, result.output
    receipt = json.loads(result.output)
    assert receipt["clean"] is True and receipt["shared_elsewhere"] == []
    assert {s.split("/")[1] for s in receipt["streams"]} == {"three_layer", "full_context", "memgpt_style",
                                                             "naive_chain"}
    assert any("#answer:" in k for k in receipt["keys_shredded"])  # the probe whose gold it was
    streams = [f"v/{system}/alice" for system in ("three_layer", "full_context", "memgpt_style", "naive_chain")]
    for place in (*(f"events of {s} (decrypted)" for s in streams), *(f"projection rows of {s}" for s in streams),
                  *(f"rendered prompt of {s}" for s in streams), "file ledger.duckdb",
                  "file ledger.projections.duckdb", "file ledger.keys.duckdb",
                  "file probe_predictions.csv (rows of episode alice)", "file report.md (rows of episode alice)",
                  "file episode_logs.jsonl (rows of episode alice)", "file predictions.csv (rows of episode alice)",
                  "file run_metadata.json", "file metrics.csv"):
        assert place in receipt["places_scanned"], place
    assert files_holding(run_dir, "reykjavik") == []  # every file, every byte, the DuckDB files included
    assert "reykjavik" not in decrypted(run_dir, "alice").lower()
    rows = [ln for ln in (run_dir / "probe_predictions.csv").read_text().splitlines() if ",alice:p0," in ln]
    assert len(rows) == 4 and all("[erased]" in ln for ln in rows)
    assert "9am" in decrypted(run_dir, "alice")  # what did not mention the value stays readable
    assert invoke("verify", "v", cwd=cwd).exit_code == 0
    audit = invoke("audit", "v", "--json", cwd=cwd)
    assert audit.exit_code == 0
    assert next(c for c in json.loads(audit.output)["checks"] if c["invariant"] == "I5")["ok"] is True
    # A second call finds nothing readable: it appends nothing, and its receipt is clean.
    before = last_seq(run_dir)
    again = invoke("erase", "v", "--episode", "alice", "--value", "Reykjavik", "--legal-basis", "GDPR Art. 17",
                   "--json", cwd=cwd)
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["clean"] is True and json.loads(again.output)["keys_shredded"] == []
    assert last_seq(run_dir) == before


def test_a_value_in_two_episodes_is_erased_in_one_and_readable_in_the_other(run_dir: Path) -> None:
    receipt = erase_in_run(run_dir / "ledger.duckdb", system="three_layer", episode="alice",
                           legal_basis="GDPR Art. 17", value="Akureyri")
    assert receipt.clean, receipt.residue
    assert receipt.shared_elsewhere == ("ledger.projections.duckdb",)  # bob's rows show it: bytes not attributable
    assert "akureyri" not in decrypted(run_dir, "alice").lower()
    assert "Akureyri" in decrypted(run_dir, "bob")
    probes = (run_dir / "probe_predictions.csv").read_text()
    assert all("Akureyri" in ln for ln in probes.splitlines() if ",bob:p0," in ln)
    assert not any("Akureyri" in ln for ln in probes.splitlines() if ",alice," in ln)
    assert not any(k.split("/")[2].startswith("bob") for k in receipt.keys_shredded)


def test_control_an_erasure_that_keeps_the_old_derived_files_is_caught(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_erasure, "rebuild_run_files", lambda path, run_id: [])
    receipt = erase_in_run(run_dir / "ledger.duckdb", system="three_layer", episode="alice",
                           legal_basis="GDPR Art. 17", value="Reykjavik")
    assert not receipt.clean
    assert receipt.residue["file probe_predictions.csv (rows of episode alice)"] > 0
    assert receipt.residue["file report.md (rows of episode alice)"] > 0


def test_control_an_erasure_that_skips_the_baselines_is_caught(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_erasure, "_copies", lambda subject, stream: [])
    receipt = erase_in_run(run_dir / "ledger.duckdb", system="three_layer", episode="alice",
                           legal_basis="GDPR Art. 17", value="Reykjavik")
    assert not receipt.clean
    assert receipt.residue["events of v/full_context/alice (decrypted)"] > 0
    assert receipt.residue["rendered prompt of v/full_context/alice"] > 0


def test_control_the_file_scan_reads_this_episodes_rows(tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text("system,episode_id,gold\nx,alice,Reykjavik\nx,bob,Reykjavik\n")
    (tmp_path / "r.md").write_text("| alice | Reykjavik |\n| bob | Reykjavik |\nprose Reykjavik\n")
    (tmp_path / "l.jsonl").write_text('{"episode_id": "bob", "gold": "Reykjavik"}\n')
    residue = run_erasure.scan_run_files(tmp_path, "alice", {"bob"}, {"Reykjavik"})
    assert residue == {"file l.jsonl (rows of episode alice)": 0, "file p.csv (rows of episode alice)": 1,
                       "file r.md (rows of episode alice)": 2}


def test_a_run_recorded_without_encryption_refuses_a_value(tmp_path: Path) -> None:
    assert invoke("run", "--episodes", "1", "--turns", "6", "--run-id", "syn", cwd=tmp_path).exit_code == 0
    before = last_seq(tmp_path / "runs" / "syn")
    result = invoke("erase", "syn", "--episode", "syn-en-000", "--value", "9am", "--legal-basis", "x", cwd=tmp_path)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "without encryption" in lines[0] and "no personal data" in lines[0]
    assert last_seq(tmp_path / "runs" / "syn") == before
