"""Given events, when a command, then events: the decider with no infrastructure."""

from __future__ import annotations

import pytest

from ledgermem.gate.commands import StartEpisode
from ledgermem.gate.decide import decide, validate_overrides
from ledgermem.gate.errors import CommandRejected
from ledgermem.projections.events import (
    EpisodeStarted,
    IndexCreated,
    LlmCalled,
    OverrideRejected,
    SummaryCreated,
    SummaryOverridden,
    TurnRecorded,
    WindowEvicted,
)
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.state import EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR
from tests.turns import called, record_turn

CONFIG = MemoryConfig(window_turns=2, tokenizer=ESTIMATOR)


def started(config: MemoryConfig = CONFIG) -> EpisodeState:
    return fold([EpisodeStarted(config=config.to_dict())])


def turn(state: EpisodeState, n: int, response: str | None, user: str | None = None) -> tuple[EpisodeState, tuple]:
    """One turn; by default the user said what the summary claims, so its facts are grounded."""
    user = user if user is not None else (response or "u")
    events = decide(state, record_turn(state, turn=n, user=user, agent="a",
                                       summarizer=called(response, n) if response else None))
    return fold(list(events), state), events


def test_start_episode_records_the_validated_config() -> None:
    events = decide(EpisodeState(), StartEpisode(config=CONFIG, lang="en"))
    assert events == (EpisodeStarted(turn=0, config=CONFIG.to_dict(), lang="en"),)


def test_start_twice_is_impossible() -> None:
    with pytest.raises(CommandRejected, match="already started"):
        decide(started(), StartEpisode(config=CONFIG))


def test_turn_before_start_and_non_increasing_turns_are_impossible() -> None:
    with pytest.raises(CommandRejected, match="not started"):
        decide(EpisodeState(), record_turn(EpisodeState(), turn=1, user="u", agent="a"))
    s, _ = turn(started(), 1, None)
    with pytest.raises(CommandRejected, match="turns must increase"):
        decide(s, record_turn(s, turn=1, user="u", agent="a"))


def test_turn_with_nothing_to_remember() -> None:
    _, events = turn(started(), 1, "NONE")
    assert [type(e) for e in events] == [TurnRecorded, LlmCalled]
    assert events[0].record_id == "r0001"


def test_summary_with_facts_and_raw_ref() -> None:
    _, events = turn(started(), 1, "User's floor.\n[FACTS: floor=3F]\n[OVERRIDES: none]")
    created = events[-1]
    assert isinstance(created, SummaryCreated)
    assert (created.summary_id, created.facts, created.raw_ids, created.overrides) == (
        "s0001", (("floor", "3F"),), ("r0001",), ()
    )


def test_window_evicts_oldest_beyond_k() -> None:
    s = started()
    for n in (1, 2):
        s, events = turn(s, n, None)
        assert not any(isinstance(e, WindowEvicted) for e in events)
    s, events = turn(s, 3, None)
    assert [e.record_id for e in events if isinstance(e, WindowEvicted)] == ["r0001"]
    assert s.window == ("r0002", "r0003")


def test_override_moves_old_summary_to_archive() -> None:
    s, _ = turn(started(), 1, "a\n[FACTS: floor=3F]\n[OVERRIDES: none]")
    s, events = turn(s, 2, "b\n[FACTS: floor=7F]\n[OVERRIDES: s1]")  # short id form
    assert SummaryOverridden(turn=2, summary_id="s0001", superseded_by=("s0002",)) in events
    assert s.summaries["s0001"].status == "archived"
    assert s.current_values() == {"floor": ("7F", "s0002")}


def test_hallucinated_and_archived_override_ids_are_dropped_and_counted() -> None:
    s, _ = turn(started(), 1, "a\n[FACTS: floor=3F]\n[OVERRIDES: none]")
    s, _ = turn(s, 2, "b\n[FACTS: floor=7F]\n[OVERRIDES: s0001]")
    s, events = turn(s, 3, "c\n[FACTS: floor=9F]\n[OVERRIDES: s0001, s0099, s0002]")
    rejected = {e.reason: e.rejected for e in events if isinstance(e, OverrideRejected)}
    assert rejected == {"already archived": ("s0001",), "not in the chain": ("s0099",)}
    assert [e.summary_id for e in events if isinstance(e, SummaryOverridden)] == ["s0002"]
    assert s.overrides_rejected == 2


def test_override_that_would_drop_a_newest_value_is_rejected() -> None:
    s, _ = turn(started(), 1, "a\n[FACTS: floor=3F; team=6]\n[OVERRIDES: none]")
    s, events = turn(s, 2, "b\n[FACTS: floor=7F]\n[OVERRIDES: s0001]")
    assert any(isinstance(e, OverrideRejected) and "team" in e.reason for e in events)
    assert s.summaries["s0001"].live
    assert s.current_values()["team"] == ("6", "s0001")


def test_validate_overrides_is_a_pure_split() -> None:
    s, _ = turn(started(), 1, "a\n[FACTS: x=1]\n[OVERRIDES: none]")
    applied, rejected = validate_overrides(s, (("x", "2"),), ("s0001", "nope"))
    assert applied == ("s0001",) and rejected == {"not in the chain": ["nope"]}


def test_long_summary_is_cut_and_marked() -> None:
    config = MemoryConfig(summary_max_tokens=5, tokenizer=ESTIMATOR)
    # Fifty different words: one word fifty times is refused as repetition (gate/validation.py), not cut.
    words = " ".join("the quick brown fox jumps over the lazy dog while seven wizards quietly judge boxing "
                     "matches and pack my box with five dozen liquor jugs before sphinx of black quartz hears "
                     "my vow then leaves town at dawn carrying maps bread water rope and a lantern for the "
                     "long road north".split()[:50])
    _, events = turn(started(config), 1, words + "\n[FACTS: x=1]\n[OVERRIDES: none]")
    created = next(e for e in events if isinstance(e, SummaryCreated))
    assert created.truncated and len(created.text.split()) <= 5


def _pressure_state(n: int, budget: int) -> EpisodeState:
    """n summaries of one slot that the summarizer never overrides: only the newest is protected."""
    s = started(MemoryConfig(chain_budget=budget, index_group_size=2, tokenizer=ESTIMATOR))
    for i in range(1, n + 1):
        s, _ = turn(s, i, f"note number {i} about the project with some words\n[FACTS: k=v{i}]\n[OVERRIDES: none]")
    return s


def test_capacity_is_quiet_below_the_high_water_mark() -> None:
    s = _pressure_state(2, budget=10_000)
    assert not s.indexes


def test_capacity_indexes_old_summaries_but_never_this_turn_or_a_newest_value() -> None:
    s = started(MemoryConfig(chain_budget=60, index_group_size=2, tokenizer=ESTIMATOR))
    seen_index = False
    for i in range(1, 10):
        response = f"note number {i} about the project with some words\n[FACTS: k=v{i}; t{i % 2}=x{i}]\n[OVERRIDES: none]"
        s, events = turn(s, i, response)
        created = next(e.summary_id for e in events if isinstance(e, SummaryCreated))
        members = {m for e in events if isinstance(e, IndexCreated) for m in e.members}
        seen_index |= bool(members)
        assert created not in members
        assert not members & s.newest_holders()
        assert all(e.tokens_after < e.tokens_before for e in events if isinstance(e, IndexCreated))
    assert seen_index, "the chain went over budget: index titles were expected"
    assert s.current_values()["k"] == ("v9", "s0009")


def test_hysteresis_compacts_down_to_the_low_water_mark() -> None:
    from ledgermem.projections.render import chain_tokens

    s = _pressure_state(12, budget=120)
    cfg = s.config
    assert s.indexes
    # After every turn the chain is either under the high mark, or nothing more could be indexed.
    eligible = [x for x in s.active_chain() if x.summary_id not in s.newest_holders()]
    assert chain_tokens(s) <= cfg.high_water * cfg.chain_budget or len(eligible) < 2
