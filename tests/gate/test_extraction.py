"""I4 extraction completeness, pure: given a folded stream and its gold, what was compared and what was captured."""

from __future__ import annotations

from ledgermem.gate.extraction import Gold, GoldFact, gold_of, measure_extraction
from ledgermem.gate.invariants import check_i4
from ledgermem.ledger.events import Event
from ledgermem.projections.events import (
    EpisodeGold,
    EpisodeStarted,
    FactErased,
    IndexCreated,
    SummaryCreated,
    SummaryOverridden,
    TurnRecorded,
)
from ledgermem.ledger.keys import ERASED, SEALED
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.state import EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR

START = EpisodeStarted(config=MemoryConfig(tokenizer=ESTIMATOR).to_dict())


def rec(n: int, user: str = "u", *, remember: bool = True) -> TurnRecorded:
    return TurnRecorded(turn=n, record_id=f"r{n:04d}", text=user, agent="a", remember=remember)


def summary(n: int, sid: str, *facts: tuple[str, str], raw: tuple[str, ...] | None = None) -> SummaryCreated:
    return SummaryCreated(turn=n, summary_id=sid, text="; ".join(f"{k}={v}" for k, v in facts), facts=facts,
                          overrides=(), raw_ids=raw if raw is not None else (f"r{n:04d}",))


def state(*events: Event) -> EpisodeState:
    return fold([START, *events])  # type: ignore[list-item]


def gold(*facts: tuple[int, str, str], evidence: tuple[str, ...] = ()) -> Gold:
    return Gold(tuple(GoldFact(f"r{t:04d}", slot, value) for t, slot, value in facts), evidence)


def test_gold_of_reads_the_episode_gold_event() -> None:
    found = gold_of([START, EpisodeGold(facts=(("floor", "3F"), ("team", "6")), fact_turns=(1, 4),
                                        evidence=("r0002", "r0004"))])
    assert found == Gold((GoldFact("r0001", "floor", "3F"), GoldFact("r0004", "team", "6")), ("r0002", "r0004"))
    assert not gold_of([START, rec(1)])


def test_slot_and_value_are_compared_normalised_as_the_judge_does() -> None:
    s = state(rec(1), summary(1, "s0001", ("My Office  Floor", "3f.")), rec(2), summary(2, "s0002", ("team", "6 people")))
    found = measure_extraction(s, gold((1, "office floor", "3F"), (2, "team", "6")))
    assert (found.source, found.compared, found.captured, found.recall, found.gaps) == ("gold facts", 2, 2, 1.0, ())


def test_a_value_is_a_whole_token_not_a_substring() -> None:
    s = state(rec(1), summary(1, "s0001", ("floor", "13F")))
    found = measure_extraction(s, gold((1, "floor", "3F")))
    assert found.captured == 0 and found.missed == (("r0001", ("floor",)),)


def test_a_gold_fact_needs_a_summary_written_from_its_record() -> None:
    # city Lisbon (turn 1) -> Osaka (2) -> Lisbon (3), and the summarizer missed turn 1: turn 3's summary holding
    # city=Lisbon does not make up for it.
    s = state(rec(1), rec(2), summary(2, "s0001", ("city", "Osaka")), rec(3), summary(3, "s0002", ("city", "Lisbon")))
    found = measure_extraction(s, gold((1, "city", "Lisbon"), (2, "city", "Osaka"), (3, "city", "Lisbon")))
    assert found.gaps == ("r0001:city",) and found.missed == (("r0001", ("city",)),) and found.recall == 0.6667


def test_archived_indexed_and_erased_captures_count() -> None:
    s = state(rec(1), summary(1, "s0001", ("floor", "3F")), rec(2), summary(2, "s0002", ("floor", "7F")),
              SummaryOverridden(turn=2, summary_id="s0001", superseded_by=("s0002",)),
              rec(3), summary(3, "s0003", ("team", "6")),
              IndexCreated(turn=3, index_id="i0001", members=("s0003",), text="turn 3: team=6"),
              rec(4), summary(4, "s0004", ("pet", "cat")),
              FactErased(turn=4, summary_id="s0004", slot="pet", legal_basis="test"))
    found = measure_extraction(s, gold((1, "floor", "3F"), (2, "floor", "7F"), (3, "team", "6"), (4, "pet", "cat")))
    assert found.captured == 4 and not found.missed


def test_evidence_is_captured_by_any_summary_listing_the_record() -> None:
    s = state(rec(1), rec(2), rec(3), summary(3, "s0001", ("x", "y"), raw=("r0001", "r0003")))
    found = measure_extraction(s, gold(evidence=("r0001", "r0002", "r0003")))
    assert (found.source, found.compared, found.captured) == ("gold evidence", 3, 2)
    assert found.missed == (("r0002", ()),) and found.gaps == ("r0002",)
    assert found.label() == "gold evidence (3 records)"


def test_a_record_with_gold_facts_is_not_counted_again_as_evidence() -> None:
    s = state(rec(1), summary(1, "s0001", ("floor", "9F")))
    found = measure_extraction(s, gold((1, "floor", "3F"), evidence=("r0001",)))
    assert (found.facts, found.evidence, found.captured) == (1, 0, 0)  # a summary exists, but not with 3F


def test_unreadable_gold_values_are_compared_as_evidence() -> None:
    s = state(rec(1), summary(1, "s0001", ("floor", SEALED)), rec(2))
    found = measure_extraction(s, gold((1, "floor", ERASED), (2, "team", SEALED)))
    assert (found.facts, found.evidence, found.captured) == (0, 2, 1) and found.missed == (("r0002", ()),)


def test_records_not_recorded_yet_erased_or_not_remembered_are_skipped() -> None:
    erased = TurnRecorded(turn=2, record_id="r0002", text=ERASED, agent=ERASED)
    s = state(rec(1), summary(1, "s0001", ("floor", "3F")), erased, rec(3, remember=False))
    found = measure_extraction(s, gold((1, "floor", "3F"), (2, "team", "6"), (3, "pet", "cat"),
                                       evidence=("r0009",)))
    assert (found.compared, found.captured, found.skipped) == (1, 1, 3)


def test_only_skipped_gold_is_nothing_to_compare() -> None:
    found = measure_extraction(state(), gold((1, "floor", "3F")))
    assert found.recall is None and found.source == "nothing" and found.label().startswith("nothing to compare (1 ")


def test_without_gold_the_lexical_detector_is_the_second_source() -> None:
    s = state(rec(1, "My office floor is 3F."), summary(1, "s0001", ("office floor", "3F")),
              rec(2, "My team size is 6."))
    found = measure_extraction(s, Gold())
    assert (found.source, found.compared, found.captured, found.gaps) == ("lexical detector", 2, 1, ("r0002:team size",))
    assert found.label() == "lexical detector (2)"


def test_with_nothing_to_compare_recall_is_not_applicable() -> None:
    found = measure_extraction(state(rec(1, "Nice day.")), None)
    assert (found.source, found.compared, found.recall, found.label()) == ("nothing", 0, None, "nothing to compare")
    violations, detail = check_i4("s", 1, state(rec(1, "Nice day.")), floor=0.99)
    assert violations == [] and detail["recall"] is None


def test_missed_gold_records_are_violations_without_a_floor_and_the_floor_adds_one() -> None:
    s = state(rec(1), summary(1, "s0001", ("floor", "3F")), rec(2), summary(2, "s0002", ("team", "6")))
    g = gold((1, "floor", "3F"), (2, "team", "6"), (2, "pet", "cat"), evidence=("r0001",))
    violations, detail = check_i4("s", 9, s, None, g)
    assert violations == [] and detail["recall"] == 0.6667  # r0002 captured one of its two facts: a gap only
    violations, _ = check_i4("s", 9, s, 0.9, g)
    assert [v.ids for v in violations] == [("r0002:pet",)] and "under the floor 0.9" in violations[0].message
    violations, _ = check_i4("s", 9, state(rec(1), rec(2)), None, g)
    assert [v.ids for v in violations] == [("r0001", "floor"), ("r0002", "team", "pet")]
    assert all(v.invariant == "I4" and v.seq == 9 for v in violations)
