"""Must-fail controls: for each invariant, a deliberately broken variant that the checker must catch.

Each control breaks one thing through a test seam and asserts that the audit
reports exactly that invariant (or, where one break necessarily shows in two
places, that the named one is among them and the checker function alone
reports only it).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import ledgermem.gate.invariants as inv
from ledgermem.gate.invariants import audit, check_scd2
from ledgermem.projections.events import EpisodeGold, IndexCreated, SummaryOverridden, TurnRecorded
from ledgermem.ledger.keys import KeyStore
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore, projection_path
from ledgermem.projections.render import Part, Rendered
from ledgermem.projections.state import EpisodeState, evolve
from ledgermem.projections.tokens import ESTIMATOR

STREAM = StreamKey("run", "three_layer", "ep")
CONFIG = MemoryConfig(tokenizer=ESTIMATOR, window_turns=2, chain_budget=60, index_group_size=2)
TURNS = [
    ("My office floor is 3F.", "office floor=3F", "none"),
    ("My team size is 6.", "team size=6", "none"),
    ("My office floor changed to 7F.", "office floor=7F", "s0001"),
    ("Nice day.", None, None),
    ("My meeting time is 9am.", "meeting time=9am", "none"),
    ("My team size changed to 8.", "team size=8", "none"),  # the summarizer forgets to override s0002
    ("My office floor changed to 9F.", "office floor=9F", "s0003"),
    ("My meeting time changed to 2pm.", "meeting time=2pm", "none"),
]


def _summarizer() -> ScriptedBackend:
    responses = iter(
        "NONE" if facts is None else f"{user}\n[FACTS: {facts}]\n[OVERRIDES: {over}]" for user, facts, over in TURNS
    )
    return ScriptedBackend(lambda messages, purpose: next(responses, "NONE") if purpose == "summarize" else "I don't know.")


def build(folder: Path, *, personal: bool = True) -> tuple[Ledger, ProjectionStore, Memory]:
    ledger = Ledger(folder / "l.duckdb")
    store = ProjectionStore(projection_path(ledger.path))
    memory = Memory(ledger, STREAM, _summarizer(), config=replace(CONFIG, personal_data=personal), projections=store)
    for user, _, _ in TURNS:
        memory.add_turn(user, "Noted.")
    return ledger, store, memory


@pytest.fixture
def run(tmp_path: Path) -> tuple[Ledger, ProjectionStore, Memory]:
    ledger, store, memory = build(tmp_path)
    assert memory.state.indexes, "the fixture must exercise capacity (index titles)"
    report = audit(ledger, store)
    assert report.ok, report.as_dict()
    return ledger, store, memory


def failed(ledger: Ledger, store: ProjectionStore, **kwargs: object) -> list[str]:
    return audit(ledger, store, **kwargs).failed()  # type: ignore[arg-type]


def test_control_i1_a_capacity_step_that_drops_a_fact(run, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, store, _ = run

    def lossy(state: EpisodeState, event: object) -> EpisodeState:
        after = evolve(state, event)  # type: ignore[arg-type]
        if isinstance(event, IndexCreated):  # "merging" the members loses the first one's facts
            first = after.summaries[event.members[0]]
            after = replace(after, summaries={**after.summaries, first.summary_id: replace(first, facts=())})
        return after

    monkeypatch.setattr(inv, "evolve", lossy)
    assert failed(ledger, store) == ["I1"]


def test_control_i1_a_truncated_archive_text(run, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, store, _ = run

    def truncating(state: EpisodeState, event: object) -> EpisodeState:
        after = evolve(state, event)  # type: ignore[arg-type]
        if isinstance(event, SummaryOverridden):
            old = after.summaries[event.summary_id]
            after = replace(after, summaries={**after.summaries, old.summary_id: replace(old, text=old.text[:10])})
        return after

    monkeypatch.setattr(inv, "evolve", truncating)
    assert failed(ledger, store) == ["I1"]


def test_control_i2_an_index_that_hides_a_current_value(run, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, store, _ = run
    real = inv.render

    def hiding(state: EpisodeState, budget: int | None = None) -> Rendered:
        r = real(state, budget)
        # No registry, and the newest holders rendered only inside their index: the value is one hop down.
        return Rendered(tuple(Part(p.name, () if p.name in ("registry", "chain") else p.items) for p in r.parts),
                        r.budget, r.tokenizer)

    monkeypatch.setattr(inv, "render", hiding)
    assert failed(ledger, store) == ["I2"]


def test_control_i3_a_lost_raw_ref(run, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, store, _ = run

    def forgetful(state: EpisodeState, event: object) -> EpisodeState:
        after = evolve(state, event)  # type: ignore[arg-type]
        if isinstance(event, TurnRecorded) and event.turn == 2:
            after = replace(after, raw={k: v for k, v in after.raw.items() if k != event.record_id})
        return after

    monkeypatch.setattr(inv, "evolve", forgetful)
    assert failed(ledger, store) == ["I3"]


def test_control_i4_a_summarizer_that_misses_facts(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.duckdb")
    store = ProjectionStore(projection_path(ledger.path))
    memory = Memory(ledger, STREAM, ScriptedBackend(lambda m, p: "NONE"), config=CONFIG, projections=store)
    memory.add_turn("My office floor is 3F.", "Noted.")
    memory.add_turn("我的工位是7楼。", "好的。")
    report = audit(ledger, store, i4_floor=0.9)
    assert report.failed() == ["I4"]
    i4 = next(r for r in report.results if r.invariant == "I4")
    assert i4.detail["recall"] == 0.0 and i4.detail["compared"] == 2
    assert i4.detail["streams"][0]["against"] == "lexical detector (2)"  # no gold in this stream
    assert audit(ledger, store).ok  # without gold and without a floor, detector recall is reported, not enforced


# Gold facts: turn 2 states a fact the lexical detector cannot see; the summarizer writes NONE for it.
GOLD_TURNS = [
    ("My office floor is 3F.", "[FACTS: office floor=3F]\n[OVERRIDES: none]"),
    ("We are 6 people on the team now.", "NONE"),
    ("My meeting time is 9am.", "[FACTS: meeting time=9am]\n[OVERRIDES: none]"),
]
GOLD = EpisodeGold(facts=(("office floor", "3F"), ("team size", "6"), ("meeting time", "9am")),
                   fact_turns=(1, 2, 3), source="test")


def _gold_run(folder: Path, answers: list[str], gold: EpisodeGold = GOLD) -> tuple[Ledger, ProjectionStore]:
    ledger = Ledger(folder / "l.duckdb")
    store = ProjectionStore(projection_path(ledger.path))
    replies = iter(answers)
    memory = Memory(ledger, STREAM, ScriptedBackend(lambda m, p: next(replies) if p == "summarize" else "ok"),
                    config=CONFIG, projections=store)
    memory.commit([gold])  # as the runner records an episode's gold before its turns
    for user, _ in GOLD_TURNS:
        memory.add_turn(user, "Noted.")
    return ledger, store


def test_i4_gold_facts_hold_when_every_planted_fact_is_captured(tmp_path: Path) -> None:
    answers = [reply for _, reply in GOLD_TURNS]
    answers[1] = "[FACTS: team size=6]\n[OVERRIDES: none]"
    ledger, store = _gold_run(tmp_path, answers)
    report = audit(ledger, store, i4_floor=1.0)
    assert report.ok, report.as_dict()
    i4 = next(r for r in report.results if r.invariant == "I4")
    assert i4.detail["streams"][0]["against"] == "gold facts (3)"
    assert (i4.detail["compared"], i4.detail["captured"], i4.detail["recall"]) == (3, 3, 1.0)


def test_control_i4_a_gold_fact_turn_the_summarizer_wrote_none_for(tmp_path: Path) -> None:
    ledger, store = _gold_run(tmp_path, [reply for _, reply in GOLD_TURNS])
    report = audit(ledger, store)  # no floor: a gold record with nothing captured is a violation by itself
    assert report.failed() == ["I4"]
    i4 = next(r for r in report.results if r.invariant == "I4")
    [violation] = i4.violations
    assert violation.ids == ("r0002", "team size") and "r0002" in violation.message
    assert i4.detail["streams"][0]["gaps"] == ["r0002:team size"]
    assert (i4.detail["compared"], i4.detail["captured"], i4.detail["recall"]) == (3, 2, 0.6667)


def test_control_i4_a_gold_fact_captured_with_the_wrong_value(tmp_path: Path) -> None:
    answers = [reply for _, reply in GOLD_TURNS]
    answers[1] = "[FACTS: team size=7]\n[OVERRIDES: none]"
    ledger, store = _gold_run(tmp_path, answers)
    i4 = next(r for r in audit(ledger, store).results if r.invariant == "I4")
    assert [v.ids for v in i4.violations] == [("r0002", "team size")]


def test_control_i4_gold_evidence_a_memory_that_summarised_nothing(tmp_path: Path) -> None:
    gold = EpisodeGold(facts=(), fact_turns=(), evidence=("r0001", "r0003"))
    ledger, store = _gold_run(tmp_path, ["NONE"] * 3, gold)
    i4 = next(r for r in audit(ledger, store).results if r.invariant == "I4")
    assert [v.ids for v in i4.violations] == [("r0001",), ("r0003",)]
    assert "no summary at all" in i4.violations[0].message
    assert i4.detail["recall"] == 0.0 and i4.detail["streams"][0]["against"] == "gold evidence (2 records)"


def test_i4_with_nothing_to_compare_is_not_applicable_and_no_floor_applies(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.duckdb")
    store = ProjectionStore(projection_path(ledger.path))
    memory = Memory(ledger, STREAM, ScriptedBackend(lambda m, p: "NONE"), config=CONFIG, projections=store)
    memory.add_turn("Nice day.", "Indeed.")
    report = audit(ledger, store, i4_floor=0.9)
    assert report.ok
    i4 = next(r for r in report.results if r.invariant == "I4")
    assert i4.detail["recall"] is None and i4.detail["compared"] == 0
    assert i4.detail["streams"][0]["against"] == "nothing to compare"


def test_control_i5_an_erasure_that_only_flips_a_flag(run, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, store, memory = run
    monkeypatch.setattr(KeyStore, "shred", lambda self, key_ids: [])
    memory.erase(slot="office floor", value="9F", legal_basis="GDPR Art. 17")
    assert failed(ledger, store) == ["I5"]


def test_control_hash_chain_an_edited_event(run) -> None:
    ledger, store, _ = run
    seq = ledger.conn.execute("SELECT max(seq) FROM events WHERE event_type = 'llm_called'").fetchone()[0]
    ledger.conn.execute("UPDATE events SET payload = replace(payload, 'script', 'scrip7') WHERE seq = ?", [seq])
    report = audit(ledger, store)
    assert report.failed() == ["hash_chain"]
    assert next(r for r in report.results if r.invariant == "hash_chain").violations[0].seq == seq


def test_control_contiguity_a_lost_newest_event(run) -> None:
    ledger, store, _ = run
    ledger.conn.execute("DELETE FROM events WHERE seq = (SELECT max(seq) FROM events)")
    assert "contiguity" in failed(ledger, store)


def test_control_scd2_an_overlapping_interval(run) -> None:
    ledger, store, _ = run
    vid, to_seq = store.conn.execute(
        "SELECT version_id, valid_to_seq FROM fact_versions WHERE valid_to_seq IS NOT NULL LIMIT 1").fetchone()
    store.conn.execute("UPDATE fact_versions SET valid_to_seq = ? WHERE version_id = ?", [to_seq + 5, vid])
    tables = store.read_tables()
    violations = check_scd2(tables)
    assert violations and {v.invariant for v in violations} == {"scd2"}
    assert any("overlap" in v.message for v in violations)
    assert "scd2" in failed(ledger, store)


def test_control_replay_a_projection_that_disagrees_with_the_ledger(run) -> None:
    ledger, store, _ = run
    store.conn.execute("UPDATE raw_records SET agent_text = 'forged' WHERE record_id = 'r0002'")
    assert failed(ledger, store) == ["replay"]


def test_audit_as_of_an_earlier_seq_ignores_later_damage(run) -> None:
    ledger, store, memory = run
    early = ledger.last_seq
    memory.add_turn("My meeting time changed to 4pm.", "Noted.")
    store.conn.execute("UPDATE raw_records SET user_text = 'forged' WHERE valid_from_seq > ?", [early])
    assert failed(ledger, store) == ["replay"]
    assert audit(ledger, store, at_seq=early).ok
