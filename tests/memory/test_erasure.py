"""Erasure by crypto-shredding: what goes, what stays, and that nothing is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledgermem.evaluation.replay import replay
from ledgermem.gate import erasure as erasure_module
from ledgermem.gate.erasure import raw_key, turn_key
from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.invariants import audit, check_i2, check_i5
from ledgermem.ledger.keys import ERASED
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.erasure import raw_keys_of
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore, projection_path
from ledgermem.projections.render import render
from ledgermem.projections.tokens import ESTIMATOR

STREAM = StreamKey("live", "three_layer", "alice")
CONFIG = MemoryConfig(tokenizer=ESTIMATOR, window_turns=2)
OLD, NEW = "Zanzibar-Stonetown", "Reykjavik-Hlidar"  # long and distinctive: greppable in file bytes
DIALOGUE = [
    (f"My home city is {OLD}.", "Noted."),
    ("My meeting time is 9am.", "Noted."),
    (f"My home city changed to {NEW}.", "Noted."),
    ("Lovely weather.", "Indeed."),
]


def open_memory(folder: Path, **kwargs: object) -> Memory:
    ledger = Ledger(folder / "l.duckdb")
    return Memory(ledger, STREAM, "heuristic", config=CONFIG, strict=True,
                  projections=ProjectionStore(projection_path(ledger.path)), **kwargs)  # type: ignore[arg-type]


def close(memory: Memory) -> None:
    memory.projections.close()
    memory.ledger.close()


def files_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    m = open_memory(tmp_path)
    for user, agent in DIALOGUE:
        m.add_turn(user, agent)
    assert m.ask("What is my home city now?").text == NEW
    return m


def test_values_are_sealed_in_the_ledger_file(memory: Memory, tmp_path: Path) -> None:
    close(memory)
    ledger_bytes = (tmp_path / "l.duckdb").read_bytes() + (
        (tmp_path / "l.duckdb.wal").read_bytes() if (tmp_path / "l.duckdb.wal").exists() else b"")
    assert OLD.encode() not in ledger_bytes and NEW.encode() not in ledger_bytes
    assert NEW.encode() in (tmp_path / "l.projections.duckdb").read_bytes() + (
        (tmp_path / "l.projections.duckdb.wal").read_bytes()
        if (tmp_path / "l.projections.duckdb.wal").exists() else b"")  # SQL users see plaintext


def test_erasing_the_current_value_falls_back_and_leaves_no_residue(memory: Memory, tmp_path: Path) -> None:
    receipt = memory.erase(slot="home city", value=NEW, legal_basis="GDPR Art. 17, request 1")
    assert receipt.clean, receipt.residue
    assert receipt.records == ("r0003",) and receipt.summaries == ("s0003",)
    assert any(k.endswith("#answer:") is False and "#answer:" in k for k in receipt.keys_shredded)  # the answer
    state = memory.state
    assert state.current_values()["home city"][0] == OLD  # newest surviving value
    assert not check_i2(str(STREAM), 0, state, render(state)) and not check_i5(str(STREAM), 0, state, memory.ledger.keys)
    assert memory.ask("What is my home city now?").text == OLD
    assert not memory.tool("get_raw_record", {"reference_id": "r0003"}).ok
    report = audit(memory.ledger, memory.projections)
    assert report.ok, report.as_dict()
    assert memory.ledger.verify().ok
    close(memory)
    assert NEW.encode() not in files_bytes(tmp_path)
    assert OLD.encode() in files_bytes(tmp_path)  # the surviving value is still there: the scan can see


def test_erasing_every_value_of_a_slot_leaves_nothing_in_the_registry(memory: Memory, tmp_path: Path) -> None:
    receipt = memory.erase(slot="home city", legal_basis="GDPR Art. 17")
    assert receipt.clean and {f[1] for f in receipt.facts} == {"home city"}
    assert "home city" not in memory.state.current_values()
    assert "meeting time" in memory.state.current_values()
    rows = memory.projections.conn.execute(
        "SELECT value, erased FROM fact_versions WHERE slot = 'home city' AND valid_to_seq IS NULL").fetchall()
    assert rows == [(None, True)]
    assert audit(memory.ledger, memory.projections).ok
    close(memory)
    data = files_bytes(tmp_path)
    assert OLD.encode() not in data and NEW.encode() not in data


def test_erasing_a_raw_record_erases_the_summaries_derived_from_it(memory: Memory) -> None:
    receipt = memory.erase(record_id="r0001", legal_basis="user request")
    assert receipt.clean and receipt.summaries == ("s0001",)
    both = {raw_key(str(STREAM), 1), turn_key(str(STREAM), 1)}  # the raw text's key and the summary's
    assert both <= set(receipt.keys_shredded)
    assert memory.ledger.keys is not None and not any(k in memory.ledger.keys for k in both)
    s1 = memory.state.summaries["s0001"]
    assert s1.text == ERASED and dict(s1.facts) == {"home city": ERASED}
    assert memory.state.current_values()["home city"][0] == NEW
    assert audit(memory.ledger, memory.projections).ok


def test_control_an_erasure_that_forgets_the_raw_key_leaves_the_raw_text_and_the_scan_finds_it(
        memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    # A plan that names the turn key only, also where the scan of the sealed values found the raw key.
    found = erasure_module.mentioning
    monkeypatch.setattr(erasure_module, "turn_keys", lambda prefix, turn, recorded: {turn_key(prefix, turn)})
    monkeypatch.setattr(erasure_module, "mentioning",
                        lambda sealed, values: tuple(k for k in found(sealed, values) if "#raw:" not in k))
    receipt = memory.erase(record_id="r0001", legal_basis="user request")
    assert raw_key(str(STREAM), 1) not in receipt.keys_shredded
    assert not receipt.clean and receipt.residue[f"events of {STREAM} (decrypted)"] > 0


def test_a_ledger_written_before_the_raw_key_is_erased_audited_and_replayed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as old_layout:  # every value of a turn under its turn key, as before
        old_layout.setattr(erasure_module, "RAW_EVENTS", ())
        old_layout.setattr(erasure_module, "RAW_PURPOSES", ())
        m = open_memory(tmp_path)
        for user, agent in DIALOGUE[:3]:
            m.add_turn(user, agent)
    m.add_turn(*DIALOGUE[3])  # continued by this version: the new turn's raw text has its own key
    prefix = str(STREAM)
    assert raw_keys_of(m.ledger, STREAM) == {1: (turn_key(prefix, 1),), 2: (turn_key(prefix, 2),),
                                             3: (turn_key(prefix, 3),), 4: (raw_key(prefix, 4),)}
    receipt = m.erase(record_id="r0001", legal_basis="user request")
    assert receipt.clean, receipt.residue
    assert turn_key(prefix, 1) in receipt.keys_shredded and raw_key(prefix, 1) not in receipt.keys_shredded
    assert m.state.raw["r0001"].user == ERASED and m.state.summaries["s0001"].text == ERASED
    subject = m.erase(subject=True, legal_basis="account deleted")
    assert subject.clean and raw_key(prefix, 4) in subject.keys_shredded
    report = audit(m.ledger, m.projections)
    assert report.ok, report.as_dict()
    replayed = replay(m.ledger, m.projections, run_id=STREAM.run_id)
    assert replayed.projections_identical
    close(m)
    data = files_bytes(tmp_path)
    assert OLD.encode() not in data and NEW.encode() not in data and b"Lovely weather" not in data


def test_erasing_the_subject_erases_everything(memory: Memory, tmp_path: Path) -> None:
    receipt = memory.erase(subject=True, legal_basis="account deleted")
    assert receipt.clean and len(receipt.records) == len(DIALOGUE)
    assert memory.state.current_values() == {} and memory.render().text == ""
    assert audit(memory.ledger, memory.projections).ok and memory.ledger.verify().ok
    close(memory)
    data = files_bytes(tmp_path)
    for needle in (OLD, NEW, "Lovely weather"):
        assert needle.encode() not in data


def test_the_erasure_survives_reopening(memory: Memory, tmp_path: Path) -> None:
    memory.erase(slot="home city", value=NEW, legal_basis="GDPR Art. 17")
    close(memory)
    reopened = open_memory(tmp_path)
    assert reopened.state.current_values()["home city"][0] == OLD
    assert audit(reopened.ledger, reopened.projections).ok


def test_a_crash_between_the_event_and_the_key_rewrite_is_finished_on_reopen(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledgermem.ledger.keys import KeyStore

    def power_cut(self: KeyStore, key_ids: object) -> list[str]:
        raise OSError("power cut")

    monkeypatch.setattr(KeyStore, "shred", power_cut)
    with pytest.raises(OSError):
        memory.erase(slot="home city", value=NEW, legal_basis="GDPR Art. 17")
    monkeypatch.undo()
    close(memory)
    reopened = open_memory(tmp_path)
    assert not [k for k in reopened.state.shredded_keys if k in reopened.ledger.keys]  # type: ignore[operator]
    assert reopened.state.current_values()["home city"][0] == OLD
    assert audit(reopened.ledger, reopened.projections).ok
    close(reopened)
    assert NEW.encode() not in files_bytes(tmp_path)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"slot": "home city", "legal_basis": " "}, "legal basis"),
        ({"slot": "no such slot", "legal_basis": "x"}, "nothing to erase"),
        ({"record_id": "r0404", "legal_basis": "x"}, "no raw record"),
        ({"legal_basis": "x"}, "name a slot"),
    ],
)
def test_bad_erasure_requests_are_refused_and_change_nothing(memory: Memory, kwargs: dict, fragment: str) -> None:
    before = memory.ledger.last_seq
    with pytest.raises(CommandRejected, match=fragment):
        memory.erase(**kwargs)
    assert memory.ledger.last_seq == before


def test_a_run_without_personal_data_cannot_be_crypto_shredded(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.duckdb")
    m = Memory(ledger, STREAM, "heuristic", config=MemoryConfig(tokenizer=ESTIMATOR, personal_data=False))
    m.add_turn(f"My home city is {OLD}.", "ok")
    with pytest.raises(CommandRejected, match="no personal data"):
        m.erase(slot="home city", legal_basis="x")
    assert ledger.keys is None  # nothing was sealed, no key store was made


def test_the_residue_scan_reads_exports_too(memory: Memory, tmp_path: Path) -> None:
    from ledgermem.ledger.parquet import export

    export(memory.ledger, tmp_path / "exp")
    receipt = memory.erase(slot="home city", value=NEW, legal_basis="GDPR Art. 17", exports=[tmp_path / "exp"])
    assert receipt.clean and f"export {tmp_path / 'exp'}" in receipt.residue
    assert memory.erase(slot="meeting time", legal_basis="GDPR Art. 17").clean  # the key store is still usable


MISSED = "Hafnarfjordur-Harbour"  # said in a phrasing the fact grammar does not extract


def test_erasing_a_value_without_a_slot_reaches_what_extraction_missed(memory: Memory, tmp_path: Path) -> None:
    from ledgermem.gate.lexicon import detect_facts

    said = f"We moved the boat to {MISSED} last week."
    assert detect_facts(said) == ()
    memory.add_turn(said, f"Nice, {MISSED.upper()} is pretty.")
    assert memory.ask("Where is the boat?").text is not None
    receipt = memory.erase(value=MISSED.lower(), legal_basis="GDPR Art. 17")  # case-insensitive
    assert receipt.clean, receipt.residue
    assert receipt.records == ("r0005",) and receipt.request.startswith("one value")
    assert MISSED.lower() not in receipt.request.lower()  # the receipt never names the value
    assert memory.state.raw["r0005"].user == ERASED
    assert memory.state.current_values()["home city"][0] == NEW  # nothing else went
    assert audit(memory.ledger, memory.projections).ok and memory.ledger.verify().ok
    with pytest.raises(CommandRejected, match="nothing to erase"):
        memory.erase(value=MISSED, legal_basis="GDPR Art. 17")
    close(memory)
    assert MISSED.lower().encode() not in files_bytes(tmp_path).lower()


def test_a_value_without_a_slot_erases_the_facts_that_carry_it(memory: Memory) -> None:
    receipt = memory.erase(value=NEW.upper(), legal_basis="GDPR Art. 17")
    assert receipt.clean and ("s0003", "home city", False) in receipt.facts
    assert memory.state.current_values()["home city"][0] == OLD


@pytest.mark.parametrize(
    "value, text, found",
    [
        ("new  york", "I live in New\nYork now", True),
        ("Reykjavik", "REYKJAVIK-Hlidar", True),
        ("29", "team size=29", True),
        ("29", "s0029 and 129", False),
        ("Reykjavik", "Reykjavikur", False),
    ],
)
def test_a_value_is_matched_as_a_whole_token_case_and_whitespace_insensitively(
    value: str, text: str, found: bool
) -> None:
    from ledgermem.gate.erasure import value_pattern

    assert bool(value_pattern(value).search(text)) is found


def test_an_empty_value_is_refused(memory: Memory) -> None:
    with pytest.raises(CommandRejected, match="empty"):
        memory.erase(value="   ", legal_basis="x")
