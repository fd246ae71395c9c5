"""Erasure in a run covers everything derived from the ledger, and its receipt tells the state as it is.

A `--dataset` run (personal data, sealed) of two episodes that share a
value (`flat white`, both people's coffee order). After an erasure by
subject, record, slot or value, no derived file of the run holds the erased
plaintext; the probe gold is sealed under the key of the turn that stated
it, so a record erasure makes it unreadable; the receipt scans only the
subject's streams and rows (the other episode keeps its value and the
receipt stays clean), names every stream and file it read, and a repeated
or interrupted erasure ends with the same clean receipt.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from ledgermem.evaluation import erasure as run_erasure
from tests.invoke import invoke_in
from ledgermem.evaluation.erasure import erase_in_run
from ledgermem.evaluation.outputs import FILES
from ledgermem.projections.events import EpisodeGold, KeyShredded, ProbeAsked, ProbeJudged
from ledgermem.ledger.keys import ERASED, KeyStore
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory import erasure as memory_erasure
from ledgermem.memory.erasure import keys_left, personal_texts, raw_keys_of
from ledgermem.projections.materialise import ProjectionStore

CONTACT = "Hey! Just letting you know my emergency contact is Lena Fischer"
MOVED = "I moved near Akureyri lately."  # the fact grammar extracts nothing from it
DATASET = {
    "episodes": [
        {
            "episode_id": "alice",
            "dialogues": [
                ["Hello there.", "Hi!"],
                [CONTACT, "Noted."],
                ["My coffee order is flat white.", "Noted."],
                [MOVED, "How nice."],
                ["Lovely weather today.", "Indeed."],
            ],
            "facts": {"emergency contact": [[1, "Lena Fischer"]], "coffee order": [[2, "flat white"]],
                      "home town": [[3, "Akureyri"]]},
            "probes": [
                {"type": "current_fact", "fact_key": "emergency contact", "question": "Who is my emergency contact?",
                 "answer": "Lena Fischer"},
                {"type": "current_fact", "fact_key": "coffee order", "question": "What is my coffee order?",
                 "answer": "flat white"},
                {"type": "current_fact", "fact_key": "home town", "question": "Where did I move?",
                 "answer": "Akureyri"},
            ],
        },
        {
            "episode_id": "bob",
            "dialogues": [["My coffee order is flat white.", "Noted."], ["Lovely weather.", "Yes."]],
            "facts": {"coffee order": [[0, "flat white"]]},
            "probes": [{"type": "current_fact", "fact_key": "coffee order", "question": "What is my coffee order?",
                        "answer": "flat white"}],
        },
    ]
}
SYSTEMS = ("three_layer", "full_context", "memgpt_style", "naive_chain")
DERIVED = (*FILES, "report.md")


def invoke(*args: str, cwd: Path) -> Result:
    return invoke_in(cwd, *args)


def make_run(tmp_path: Path) -> Path:
    data = tmp_path / "seed.json"
    data.write_text(json.dumps(DATASET), encoding="utf-8")
    result = invoke("run", "--dataset", str(data), "--run-id", "d", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert invoke("report", "d", cwd=tmp_path).exit_code == 0
    return tmp_path / "runs" / "d"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return make_run(tmp_path)


def erase(run: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    result = invoke("erase", "d", "--episode", "alice", "--legal-basis", "GDPR Art. 17 #7", "--json", *args,
                    cwd=run.parents[1])
    return result, json.loads(result.output)


def files_holding(folder: Path, needle: str) -> list[str]:
    """Every file under `folder` whose bytes hold `needle`, case-insensitive (the DuckDB files included)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and needle.lower().encode() in p.read_bytes().lower())


def rows_of(run: Path, episode: str) -> str:
    """The rows of `episode` in the derived CSV and JSON Lines files, as text."""
    out = []
    for name in ("probe_predictions.csv", "predictions.csv"):
        with (run / name).open(encoding="utf-8") as fh:
            out += [",".join(row.values()) for row in csv.DictReader(fh) if row["episode_id"] == episode]
    for line in (run / "episode_logs.jsonl").read_text(encoding="utf-8").splitlines():
        if json.loads(line)["episode_id"] == episode:
            out.append(line)
    return "\n".join(out)


def decrypted(run: Path, episode: str) -> str:
    with Ledger(run / "ledger.duckdb", read_only=True) as ledger:
        return "\n".join(t for s, _ in ledger.streams() if s.episode_id == episode
                         for r in ledger.read(stream=s) for t in personal_texts(r.event))


def golds(run: Path, episode: str, probe: str) -> list[str]:
    """The gold of `probe` as every system's stream reads it now (asked, and judged against)."""
    with Ledger(run / "ledger.duckdb", read_only=True) as ledger:
        return [v for s, _ in ledger.streams() if s.episode_id == episode for r in ledger.read(stream=s)
                for v in ([r.event.gold] if isinstance(r.event, ProbeAsked) and r.event.probe_id == probe else
                          [r.event.value] if isinstance(r.event, ProbeJudged) and r.event.probe_id == probe else [])]


# -- every derived file is rebuilt ---------------------------------------------------------


@pytest.mark.parametrize(("how", "gone"), [
    (("--subject",), ("Lena Fischer", "flat white", "Akureyri")),
    (("--record", "r0002"), ("Lena Fischer",)),
    (("--record", "r0004"), ("Akureyri",)),
    (("--slot", "emergency contact"), ("Lena Fischer",)),
    (("--slot", "coffee order", "--value", "flat white"), ("flat white",)),
    (("--value", "Lena Fischer"), ("Lena Fischer",)),
])
def test_no_derived_file_holds_an_erased_value(run_dir: Path, how: tuple[str, ...], gone: tuple[str, ...]) -> None:
    for value in gone:  # the grep below can see: before the erasure the value is in the derived files
        assert value in rows_of(run_dir, "alice")
    result, receipt = erase(run_dir, *how)
    assert result.exit_code == 0 and receipt["clean"] is True, result.output
    for value in gone:
        assert value not in rows_of(run_dir, "alice")
        for name in DERIVED:
            text = (run_dir / name).read_text(encoding="utf-8")
            if value != "flat white":  # bob's rows hold his coffee order
                assert value.lower() not in text.lower(), (value, name)
        assert value.lower() not in decrypted(run_dir, "alice").lower()
    assert "flat white" in rows_of(run_dir, "bob")  # the other episode keeps the same value


def test_a_unique_erased_value_is_in_no_file_of_the_run_at_all(run_dir: Path) -> None:
    assert files_holding(run_dir, "Lena Fischer")  # the scan below can see it
    result, _ = erase(run_dir, "--subject")
    assert result.exit_code == 0, result.output
    assert files_holding(run_dir, "Lena Fischer") == [] and files_holding(run_dir, "Akureyri") == []


def test_control_skipping_the_rebuild_leaves_the_value_in_the_files(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_erasure, "rebuild_run_files", lambda path, run_id: [])
    result, receipt = erase(run_dir, "--subject")
    assert "Lena Fischer" in rows_of(run_dir, "alice")  # the grep of the test above would find it
    assert result.exit_code == 1 and receipt["clean"] is False
    assert receipt["residue"]["file probe_predictions.csv (rows of episode alice)"] > 0
    assert receipt["residue"]["file episode_logs.jsonl (rows of episode alice)"] > 0


# -- probe gold under the value's own key -----------------------------------------------------


def test_probe_gold_is_sealed_under_the_key_of_the_turn_that_stated_it(run_dir: Path) -> None:
    with Ledger(run_dir / "ledger.duckdb", read_only=True) as ledger:
        for system in SYSTEMS:
            stream = StreamKey("d", system, "alice")
            keys = ledger.sealed_keys(stream)
            for r in ledger.read(stream=stream, event_types=["probe_asked", "probe_judged", "episode_gold"]):
                if isinstance(r.event, EpisodeGold):
                    assert {f"d/{system}/alice#turn:{t}" for t in (2, 3, 4)} <= keys[r.seq]
                elif r.event.probe_id == "alice:p2":  # Akureyri, stated in turn 4
                    assert f"d/{system}/alice#turn:4" in keys[r.seq]


def test_the_raw_text_has_its_own_key_and_an_erasure_shreds_both_keys_of_the_turn(run_dir: Path) -> None:
    streams = [StreamKey("d", system, "alice") for system in SYSTEMS]
    with Ledger(run_dir / "ledger.duckdb", read_only=True) as ledger:
        for stream in streams:
            assert raw_keys_of(ledger, stream)[2] == (f"{stream}#raw:2",)  # the record of turn 2, in every system
        summaries = [r.seq for r in ledger.read(stream=streams[0], event_types=["summary_created"]) if r.event.turn == 2]
        assert summaries and all(ledger.sealed_keys(streams[0])[seq] == {f"{streams[0]}#turn:2"} for seq in summaries)
    result, receipt = erase(run_dir, "--record", "r0002")
    assert result.exit_code == 0 and receipt["clean"] is True, result.output
    for stream in streams:
        assert {f"{stream}#raw:2", f"{stream}#turn:2"} <= set(receipt["keys_shredded"])
    keys = KeyStore(run_dir / "ledger.keys.duckdb", read_only=True)
    try:
        assert not any(k in keys for s in streams for k in (f"{s}#raw:2", f"{s}#turn:2"))
        assert all(f"{s}#raw:3" in keys for s in streams)  # the other turns keep theirs
    finally:
        keys.close()


def test_a_record_erasure_makes_the_gold_it_stated_unreadable(run_dir: Path) -> None:
    assert set(golds(run_dir, "alice", "alice:p2")) == {"Akureyri"}
    result, receipt = erase(run_dir, "--record", "r0004")
    assert result.exit_code == 0 and receipt["clean"] is True, result.output
    assert golds(run_dir, "alice", "alice:p2") == [ERASED] * 2 * len(SYSTEMS)
    assert set(golds(run_dir, "alice", "alice:p1")) == {"flat white"}  # the other gold stays readable
    assert "Lena Fischer" in decrypted(run_dir, "alice")


def test_control_gold_under_the_answer_key_survives_a_record_erasure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As before: the gold sealed with the answer, and the erasure looking only for what the grammar extracted.
    monkeypatch.setattr(memory_erasure, "gold_keys", lambda prefix, answer, events, planted: {})
    monkeypatch.setattr(run_erasure, "gold_to_erase", lambda planted, request: set())
    run = make_run(tmp_path)
    result, _ = erase(run, "--record", "r0004")
    assert result.exit_code == 0, result.output
    assert "Akureyri" in golds(run, "alice", "alice:p2")  # what the test above catches


# -- the receipt: the subject's streams and rows, every place named ---------------------------


def test_a_value_another_episode_holds_does_not_make_the_receipt_cry_wolf(run_dir: Path) -> None:
    result, receipt = erase(run_dir, "--subject")
    assert result.exit_code == 0 and receipt["clean"] is True, result.output
    assert "flat white" in rows_of(run_dir, "bob") and "flat white" in decrypted(run_dir, "bob")
    assert "flat white" not in rows_of(run_dir, "alice")
    assert not any("/bob" in k for k in receipt["keys_shredded"])


def test_control_a_residue_left_in_the_subjects_rows_is_found(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = run_erasure.rebuild_run_files

    def rebuild_then_leave(path: Path, run_id: str | None) -> list[Path]:
        written = real(path, run_id)
        with (path.parent / "probe_predictions.csv").open("a", encoding="utf-8") as fh:
            fh.write("three_layer,bob,bob:p9,current_fact,coffee order,q,flat white,flat white\n")  # bob's: fine
            fh.write("three_layer,alice,alice:p9,current_fact,coffee order,q,flat white,flat white\n")
        return written

    monkeypatch.setattr(run_erasure, "rebuild_run_files", rebuild_then_leave)
    result, receipt = erase(run_dir, "--subject")
    assert result.exit_code == 1 and receipt["clean"] is False
    assert receipt["residue"] == {**{k: 0 for k in receipt["residue"]},
                                  "file probe_predictions.csv (rows of episode alice)": 2,
                                  "file probe_predictions.csv (rows of episode alice the ledger does not hold)": 1}
    # A repeated call can no longer read the erased value, and still finds the row that outlived the erasure.
    text = invoke("erase", "d", "--episode", "alice", "--subject", "--legal-basis", "x", cwd=run_dir.parents[1])
    assert text.exit_code == 1 and "RESIDUE FOUND" in text.output
    assert "residue in file probe_predictions.csv (rows of episode alice the ledger does not hold): 1" in text.output


def test_the_receipt_names_every_stream_and_every_derived_file(run_dir: Path) -> None:
    result, receipt = erase(run_dir, "--slot", "emergency contact")
    assert result.exit_code == 0, result.output
    places = set(receipt["places_scanned"])
    for system in SYSTEMS:
        for kind in ("events of {} (decrypted)", "projection rows of {}", "rendered prompt of {}"):
            assert kind.format(f"d/{system}/alice") in places
    for name in ("probe_predictions.csv", "episode_logs.jsonl", "predictions.csv"):
        assert f"file {name} (rows of episode alice)" in places
    assert any(p.startswith("file report.md") for p in places)
    assert {"file metrics.csv", "file run_metadata.json",
            "file timing.csv", "file ledger.duckdb", "file ledger.projections.duckdb", "file ledger.keys.duckdb",
            "key store (keys named by the erasures of these streams)"} <= places
    assert not any("bob" in p for p in places)
    shown = invoke("erase", "d", "--episode", "alice", "--slot", "emergency contact", "--legal-basis", "x",
                   cwd=run_dir.parents[1])
    assert shown.exit_code == 0, shown.output
    for place in places:
        assert f"residue in {place}: 0" in shown.output


# -- a repeated or interrupted erasure ------------------------------------------------------


@pytest.mark.parametrize("how", [("--subject",), ("--record", "r0002"), ("--slot", "emergency contact")])
def test_erasing_twice_gives_the_same_clean_receipt(run_dir: Path, how: tuple[str, ...]) -> None:
    first_result, first = erase(run_dir, *how)
    again_result, again = erase(run_dir, *how)
    assert first_result.exit_code == 0 and again_result.exit_code == 0, again_result.output
    assert first["clean"] and again["clean"]
    assert again["places_scanned"] == first["places_scanned"]
    for field in ("facts", "records", "summaries", "keys_shredded", "streams"):
        assert again[field] == first[field], field  # the whole state, not what the second call appended


def test_every_stream_is_erased_by_one_decision_one_key_rewrite_and_one_rebuild(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    for owner, name in ((run_erasure, "plan_erasure"), (KeyStore, "shred"), (ProjectionStore, "rebuild_from")):
        monkeypatch.setattr(owner, name, _counted(calls, name, getattr(owner, name)))
    receipt = erase_in_run(run_dir / "ledger.duckdb", system="three_layer", episode="alice", legal_basis="b",
                           subject=True)
    assert receipt.clean, receipt.residue
    assert {s.split("/")[1] for s in receipt.streams} == set(SYSTEMS)  # four streams erased...
    assert calls == {"plan_erasure": 1, "shred": 1, "rebuild_from": 1}  # ...by one decision, carried out once


def _counted(calls: Counter[str], name: str, real: Any) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return real(*args, **kwargs)

    return counted


def test_an_erasure_interrupted_between_streams_is_finished_by_the_next_call(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Ledger.append
    calls = []

    def crash_after_one(self: Ledger, stream: StreamKey, events: Any, **kwargs: Any) -> Any:
        if any(isinstance(e, KeyShredded) for e in events):  # one stream's part of the erasure
            if calls:
                raise KeyboardInterrupt("killed between two streams")
            calls.append(stream)
        return real(self, stream, events, **kwargs)

    monkeypatch.setattr(Ledger, "append", crash_after_one)
    with pytest.raises(KeyboardInterrupt):
        erase_in_run(run_dir / "ledger.duckdb", system="three_layer", episode="alice", legal_basis="b", subject=True)
    assert len(calls) == 1  # one stream's erasure is in the ledger, the others' not
    assert "Lena Fischer" in rows_of(run_dir, "alice")  # half done: the derived files are the old ones
    monkeypatch.setattr(Ledger, "append", real)
    receipt = erase_in_run(run_dir / "ledger.duckdb", system="three_layer", episode="alice", legal_basis="b",
                           subject=True)
    assert receipt.clean, receipt.residue
    assert {s.split("/")[1] for s in receipt.streams} == set(SYSTEMS)
    assert files_holding(run_dir, "Lena Fischer") == [] and "flat white" not in rows_of(run_dir, "alice")


def test_an_erasure_interrupted_before_its_keys_were_destroyed_is_finished_and_shown(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = KeyStore.shred

    def crash(self: KeyStore, key_ids: Any) -> list[str]:
        raise KeyboardInterrupt("killed before the key file was rewritten")

    monkeypatch.setattr(KeyStore, "shred", crash)
    with pytest.raises(KeyboardInterrupt):
        erase_in_run(run_dir / "ledger.duckdb", system="three_layer", episode="alice", legal_basis="b", subject=True)
    # Control: the key store still holds keys that a committed erasure names, and a scan that needs no value sees it.
    with Ledger(run_dir / "ledger.duckdb", read_only=True) as ledger:
        assert keys_left(ledger, [StreamKey("d", s, "alice") for s in SYSTEMS]) > 0
    monkeypatch.setattr(KeyStore, "shred", real)
    receipt = erase_in_run(run_dir / "ledger.duckdb", system="three_layer", episode="alice", legal_basis="b",
                           subject=True)
    assert receipt.clean, receipt.residue
    assert receipt.residue["key store (keys named by the erasures of these streams)"] == 0
    assert files_holding(run_dir, "Lena Fischer") == [] and files_holding(run_dir, "Akureyri") == []
    assert invoke("verify", "d", cwd=run_dir.parents[1]).exit_code == 0
