"""Tests for the seeded synthetic dataset generator."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledgermem.datasets.model import Dataset, Episode
from ledgermem.evaluation.judge import normalise
from ledgermem.datasets.synthetic import (
    CONSTRAINT_TABLES,
    OPEN_LOOP_SLOTS,
    OPEN_LOOP_TASKS,
    SLOT_TABLES,
    generate_synthetic,
)
from ledgermem.gate.lexicon import detect_facts

LANGS = sorted(SLOT_TABLES)
PROBE_TYPES = {"current_fact", "history_fact", "constraint", "open_loop"}
# Slot probes (current and history, interleaved per slot) come before constraints,
# which come before open loops.
PROBE_RANK = {"current_fact": 0, "history_fact": 0, "constraint": 1, "open_loop": 2}


def _planted(episode: Episode) -> dict[int, tuple[str, str]]:
    return {turn: (slot, value) for slot, history in episode.facts for turn, value in history}


def _kind(episode: Episode, slot: str) -> str:
    """Which table ``slot`` comes from: "slot", "constraint" or "open_loop"."""
    lang = episode.lang or ""
    if slot in dict(CONSTRAINT_TABLES[lang]):
        return "constraint"
    if slot in OPEN_LOOP_SLOTS[lang]:
        return "open_loop"
    assert slot in dict(SLOT_TABLES[lang])
    return "slot"


def _facts_of(episode: Episode, kind: str) -> dict[str, list[tuple[int, str]]]:
    return {slot: history for slot, history in episode.fact_dict().items()
            if _kind(episode, slot) == kind}


def _squashed(value: str) -> str:
    """The judge's normal form without spaces, so containment is checked strictly."""
    return normalise(value).replace(" ", "")


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return generate_synthetic(n_episodes=8, turns=40, seed=11)


def test_same_seed_is_deterministic_and_different_seed_differs() -> None:
    first = generate_synthetic(seed=21)
    assert first == generate_synthetic(seed=21)
    assert first.content_hash() == generate_synthetic(seed=21).content_hash()
    assert first.episodes != generate_synthetic(seed=22).episodes


def test_naming_and_language_alternation(dataset: Dataset) -> None:
    assert dataset.name == "synthetic"
    assert dataset.source == "synthetic(seed=11,n=8,turns=40,phrasing=dev,distractors=0.15)"
    langs = [episode.lang for episode in dataset.episodes]
    assert langs == ["en", "zh"] * 4
    assert [episode.episode_id for episode in dataset.episodes[:3]] == [
        "syn-en-000",
        "syn-zh-001",
        "syn-en-002",
    ]


def test_turns_without_a_planted_fact_are_at_least_30_percent(dataset: Dataset) -> None:
    for episode in dataset.episodes:
        planted = _planted(episode)
        others = [turn for index, turn in enumerate(episode.turns) if index not in planted]
        assert len(others) >= 0.3 * len(episode.turns)


def test_planted_values_are_in_their_turns_and_distractors_never_state_a_planted_history(dataset: Dataset) -> None:
    """Every planted value is written in its turn; a distractor names a value the slot never had."""
    for episode in dataset.episodes:
        planted = _planted(episode)
        for turn, (_slot, value) in planted.items():
            assert value in episode.turns[turn].user
        histories = {slot: {v for _, v in h} for slot, h in episode.facts}
        for index, turn in enumerate(episode.turns):
            if index in planted:
                continue
            for slot, values in histories.items():
                if slot in turn.user and _kind(episode, slot) == "slot":
                    named = [v for v in dict(SLOT_TABLES[episode.lang or ""]).get(slot, ()) if v in turn.user]
                    assert not set(named) & values - {episode.fact_dict()[slot][0][1]}, turn.user


def test_distractors_appear_at_the_stated_rate() -> None:
    with_none = generate_synthetic(n_episodes=4, turns=60, seed=2, distractor_rate=0.0)
    with_all = generate_synthetic(n_episodes=4, turns=60, seed=2, distractor_rate=1.0)
    small_talk = {u for lang in ("en", "zh") for u, _ in __import__("ledgermem.datasets.synthetic", fromlist=["x"])
                  ._PHRASEBOOKS[lang].small_talk}
    plain = [t.user for e in with_none.episodes for i, t in enumerate(e.turns) if i not in _planted(e)]
    swapped = [t.user for e in with_all.episodes for i, t in enumerate(e.turns) if i not in _planted(e)]
    assert all(u in small_talk for u in plain)
    assert sum(u not in small_talk for u in swapped) >= 0.9 * len(swapped)


@pytest.mark.parametrize("phrasing", ["dev", "heldout"])
def test_phrasing_halves_draw_their_own_slots(phrasing: str) -> None:
    from ledgermem.datasets.synthetic import slot_table
    ds = generate_synthetic(n_episodes=2, turns=30, seed=4, phrasing=phrasing)
    for episode in ds.episodes:
        table = dict(slot_table(episode.lang or "", phrasing))
        slots = [slot for slot, _ in episode.facts if _kind_in(episode, slot, table) == "slot"]
        assert slots and all(slot in table for slot in slots)


def _kind_in(episode: Episode, slot: str, table: dict[str, tuple[str, ...]]) -> str:
    lang = episode.lang or ""
    if slot in dict(CONSTRAINT_TABLES[lang]):
        return "constraint"
    if slot in OPEN_LOOP_SLOTS[lang]:
        return "open_loop"
    return "slot" if slot in table else "other"


def test_probe_questions_are_unique_per_episode(dataset: Dataset) -> None:
    for episode in dataset.episodes:
        questions = [probe.question for probe in episode.probes]
        assert len(questions) == len(set(questions))
        assert [p.probe_id for p in episode.probes] == [
            f"{episode.episode_id}:p{i}" for i in range(len(episode.probes))
        ]


def test_current_probe_answers_final_value(dataset: Dataset) -> None:
    for episode in dataset.episodes:
        facts = _facts_of(episode, "slot")
        current = [probe for probe in episode.probes if probe.type == "current_fact"]
        assert sorted(probe.fact_key or "" for probe in current) == sorted(facts)
        for probe in current:
            assert probe.answer == facts[probe.fact_key or ""][-1][1]


def test_history_golds_for_slots_updated_twice() -> None:
    ds = generate_synthetic(n_episodes=10, turns=60, seed=3, updates_per_slot=(2, 2))
    checked = 0
    for episode in ds.episodes:
        for slot, history in _facts_of(episode, "slot").items():
            values = [value for _, value in history]
            assert len(values) == 3
            probes = {p.question: p.answer for p in episode.probes
                      if p.type == "history_fact" and p.fact_key == slot}
            assert len(probes) == 2
            # Asked as "before <new value>", as the previous value or as the original one.
            assert sorted(probes.values()) == sorted(values[:-1])
            checked += 2
    assert checked == 10 * 4 * 2


def test_repeated_update_target_skips_ambiguous_history_probe() -> None:
    ds = generate_synthetic(n_episodes=12, turns=200, seed=5, updates_per_slot=(3, 3))
    ambiguous_seen = False
    for episode in ds.episodes:
        for slot, history in episode.facts:
            targets = [value for _, value in history][1:]
            probes = [p for p in episode.probes if p.type == "history_fact" and p.fact_key == slot]
            unique_targets = [value for value in targets if targets.count(value) == 1]
            ambiguous_seen |= len(unique_targets) < len(targets)
            assert len(probes) == len(unique_targets)
    assert ambiguous_seen


def test_each_update_changes_the_value() -> None:
    ds = generate_synthetic(n_episodes=6, turns=80, seed=9, updates_per_slot=(2, 2))
    for episode in ds.episodes:
        for _, history in episode.facts:
            values = [value for _, value in history]
            assert all(a != b for a, b in zip(values, values[1:]))
            turns = [turn for turn, _ in history]
            assert turns == sorted(turns) and len(set(turns)) == len(turns)


@pytest.mark.parametrize("turns", [2, 5, 12, 300])
def test_works_across_lengths(turns: int) -> None:
    ds = generate_synthetic(n_episodes=2, turns=turns, seed=1)
    for episode in ds.episodes:
        assert len(episode.turns) == turns
        planted = _planted(episode)
        assert planted and all(0 <= turn < turns for turn in planted)
        assert turns - len(planted) >= 0.3 * turns
        assert any(probe.type == "current_fact" for probe in episode.probes)
    if turns >= 12:
        for episode in ds.episodes:
            slots = _facts_of(episode, "slot")
            # Short episodes give up slots before the constraint and the open loop.
            assert len(slots) == (3 if turns == 12 else 4)
            assert all(len(history) >= 2 for history in slots.values())
            assert len(_facts_of(episode, "constraint")) == 1
            assert len(_facts_of(episode, "open_loop")) == 1


def test_timestamps_are_iso_and_increasing(dataset: Dataset) -> None:
    for episode in dataset.episodes:
        stamps = [datetime.fromisoformat(turn.occurred_at or "") for turn in episode.turns]
        assert all(a < b for a, b in zip(stamps, stamps[1:]))


def test_both_languages_present_with_native_text(dataset: Dataset) -> None:
    zh = [episode for episode in dataset.episodes if episode.lang == "zh"]
    en = [episode for episode in dataset.episodes if episode.lang == "en"]
    assert zh and en
    for episode in zh + en:
        known = {*dict(SLOT_TABLES[episode.lang or ""]), *dict(CONSTRAINT_TABLES[episode.lang or ""]),
                 *OPEN_LOOP_SLOTS[episode.lang or ""]}
        assert {slot for slot, _ in episode.facts} <= known
    assert any("我的" in turn.user for episode in zh for turn in episode.turns)


@pytest.mark.parametrize("lang", sorted(SLOT_TABLES))
def test_slot_tables_are_safe_for_exact_matching(lang: str) -> None:
    table = SLOT_TABLES[lang]
    assert len(table) >= 8
    for _, values in table:
        assert len(values) >= 6 and len(set(values)) == len(values)
        for value in values:
            assert not any(sep in value for sep in ";=。?？")
            assert not any(value in other for other in values if other != value)


def test_invalid_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="turns"):
        generate_synthetic(turns=1)
    with pytest.raises(ValueError, match="langs"):
        generate_synthetic(langs=("fr",))
    with pytest.raises(ValueError, match="updates_per_slot"):
        generate_synthetic(updates_per_slot=(2, 1))
    with pytest.raises(ValueError, match="slots_per_episode"):
        generate_synthetic(slots_per_episode=0)
    with pytest.raises(ValueError, match="constraints must be in 0..7, got -1"):
        generate_synthetic(constraints=-1)
    with pytest.raises(ValueError, match="constraints"):
        generate_synthetic(constraints=len(CONSTRAINT_TABLES["en"]) + 1)
    with pytest.raises(ValueError, match="open_loops must be in 0..3, got 4"):
        generate_synthetic(open_loops=4)


# --------------------------------------------------------------------------
# Constraints, open loops and length scaling
# --------------------------------------------------------------------------


def test_new_parameters_are_deterministic_and_seeded() -> None:
    def make(seed: int) -> Dataset:
        return generate_synthetic(n_episodes=4, turns=60, seed=seed, constraints=3, open_loops=2)

    first = make(4)
    assert first == make(4)
    assert first.content_hash() == make(4).content_hash()
    assert first.episodes != make(5).episodes


def test_default_updates_match_the_documented_range_below_40_turns() -> None:
    assert generate_synthetic(turns=40) == generate_synthetic(turns=40, updates_per_slot=(1, 2))


@pytest.mark.parametrize("lang", LANGS)
def test_constraint_and_open_loop_tables_are_safe_for_exact_matching(lang: str) -> None:
    constraints, loops, tasks = CONSTRAINT_TABLES[lang], OPEN_LOOP_SLOTS[lang], OPEN_LOOP_TASKS[lang]
    assert len(constraints) >= 5 and all(len(values) >= 3 for _, values in constraints)
    assert len(loops) >= 3 and len(tasks) >= 8
    slots = [slot for slot, _ in SLOT_TABLES[lang]] + [slot for slot, _ in constraints] + list(loops)
    assert len(set(slots)) == len(slots)
    for slot in slots:
        assert not any(slot in other for other in slots if other != slot), slot
    others = [value for _, values in SLOT_TABLES[lang] + constraints for value in values] + list(tasks)
    assert len(set(others)) == len(others)
    for value in [value for _, values in constraints for value in values] + list(tasks):
        assert not any(sep in value for sep in ";=,，。?")
        mine = _squashed(value)
        for other in others:
            if other != value:
                assert mine not in _squashed(other) and _squashed(other) not in mine, (value, other)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("turns", [12, 40, 120, 500])
def test_every_probe_type_is_present_across_lengths(lang: str, turns: int) -> None:
    ds = generate_synthetic(n_episodes=3, turns=turns, seed=13, langs=(lang,))
    for episode in ds.episodes:
        assert len(episode.turns) == turns
        types = [probe.type for probe in episode.probes]
        assert set(types) == PROBE_TYPES
        assert types == sorted(types, key=PROBE_RANK.__getitem__)
        assert types.count("constraint") == types.count("open_loop") == 1
        assert len(_planted(episode)) <= 0.7 * turns


@pytest.mark.parametrize("turns", [2, 5, 6, 12, 13, 31, 40, 120, 500])
def test_constraints_come_early_and_open_loops_in_the_middle_third(turns: int) -> None:
    ds = generate_synthetic(n_episodes=4, turns=turns, seed=17, constraints=3, open_loops=3)
    for episode in ds.episodes:
        for turn in [t for history in _facts_of(episode, "constraint").values() for t, _ in history]:
            assert 4 * turn < turns
        for turn in [t for history in _facts_of(episode, "open_loop").values() for t, _ in history]:
            assert turns <= 3 * turn < 2 * turns
        for history in [*_facts_of(episode, "constraint").values(),
                        *_facts_of(episode, "open_loop").values()]:
            assert len(history) == 1


def test_several_constraints_and_open_loops_use_distinct_slots_and_values() -> None:
    ds = generate_synthetic(n_episodes=6, turns=60, seed=2, constraints=3, open_loops=3)
    for episode in ds.episodes:
        for kind in ("constraint", "open_loop"):
            facts = _facts_of(episode, kind)
            values = [history[0][1] for history in facts.values()]
            assert len(facts) == 3 and len(set(values)) == 3
            probes = [probe for probe in episode.probes if probe.type == kind]
            assert sorted(probe.fact_key or "" for probe in probes) == sorted(facts)


def test_constraint_and_open_loop_probes_ask_for_their_single_value() -> None:
    ds = generate_synthetic(n_episodes=4, turns=40, seed=19)
    for episode in ds.episodes:
        facts = episode.fact_dict()
        for probe in episode.probes:
            if probe.type in ("constraint", "open_loop"):
                assert facts[probe.fact_key or ""] == [(facts[probe.fact_key or ""][0][0], probe.answer)]
                assert probe.fact_key is not None and probe.fact_key in probe.question
                user = episode.turns[facts[probe.fact_key or ""][0][0]].user
                assert ("hard constraint" in user or "硬性约束" in user) == (probe.type == "constraint")


def test_constraint_and_open_loop_values_stand_alone_in_their_episode() -> None:
    ds = generate_synthetic(n_episodes=10, turns=150, seed=23, constraints=3, open_loops=3)
    for episode in ds.episodes:
        values = {value for _, history in episode.facts for _, value in history}
        for kind in ("constraint", "open_loop"):
            for history in _facts_of(episode, kind).values():
                mine = _squashed(history[0][1])
                assert all(mine not in _squashed(other) and _squashed(other) not in mine
                           for other in values if other != history[0][1])


def test_constraints_and_open_loops_can_be_disabled() -> None:
    ds = generate_synthetic(n_episodes=4, turns=40, seed=3, constraints=0, open_loops=0)
    for episode in ds.episodes:
        assert {probe.type for probe in episode.probes} == {"current_fact", "history_fact"}
        assert {_kind(episode, slot) for slot, _ in episode.facts} == {"slot"}


@pytest.mark.parametrize(("turns", "expected"), [
    (2, set()), (4, set()), (5, {"constraint"}), (6, {"constraint", "open_loop"}),
])
def test_very_short_episodes_drop_open_loops_before_constraints(turns: int, expected: set[str]) -> None:
    ds = generate_synthetic(n_episodes=4, turns=turns, seed=29)
    for episode in ds.episodes:
        kinds = {probe.type for probe in episode.probes}
        assert kinds - {"current_fact", "history_fact"} == expected
        assert "current_fact" in kinds and ("history_fact" in kinds) == (turns > 2)


@pytest.mark.parametrize(("turns", "low", "high"), [(40, 1, 2), (41, 2, 4), (150, 2, 4), (151, 3, 6), (500, 3, 6)])
def test_default_updates_scale_with_length(turns: int, low: int, high: int) -> None:
    ds = generate_synthetic(n_episodes=6, turns=turns, seed=31)
    counts = [len(history) - 1 for episode in ds.episodes
              for history in _facts_of(episode, "slot").values()]
    assert all(low <= count <= high for count in counts)
    assert {low, high} <= set(counts)


def test_explicit_updates_override_the_length_default() -> None:
    ds = generate_synthetic(n_episodes=2, turns=300, seed=1, updates_per_slot=(1, 1))
    for episode in ds.episodes:
        assert all(len(history) == 2 for history in _facts_of(episode, "slot").values())


def _check_episode(episode: Episode, turns: int) -> None:
    facts = episode.fact_dict()
    planted = _planted(episode)
    assert len(episode.turns) == turns and turns - len(planted) >= 0.3 * turns
    questions = [probe.question for probe in episode.probes]
    assert len(questions) == len(set(questions))
    for probe in episode.probes:
        values = [value for _, value in facts[probe.fact_key or ""]]
        assert probe.fact_key is not None and probe.fact_key in probe.question
        match probe.type:
            case "current_fact":
                assert probe.answer == values[-1]
            case "history_fact":
                assert probe.answer in values[:-1]
            case "constraint" | "open_loop":
                assert values == [probe.answer]
            case other:
                raise AssertionError(f"unexpected probe type {other!r}")


@given(
    seed=st.integers(min_value=0, max_value=2**32),
    turns=st.integers(min_value=12, max_value=300),
    langs=st.sampled_from([("en",), ("zh",), ("en", "zh"), ("zh", "en")]),
    n_episodes=st.integers(min_value=1, max_value=3),
    constraints=st.integers(min_value=0, max_value=5),
    open_loops=st.integers(min_value=0, max_value=3),
)
def test_generator_never_raises_and_gold_answers_come_from_the_facts(
    seed: int, turns: int, langs: tuple[str, ...], n_episodes: int, constraints: int, open_loops: int
) -> None:
    ds = generate_synthetic(n_episodes=n_episodes, turns=turns, seed=seed, langs=langs,
                            constraints=constraints, open_loops=open_loops)
    for episode in ds.episodes:
        _check_episode(episode, turns)
        types = [probe.type for probe in episode.probes]
        # A request larger than its window (first quarter, middle third) is capped.
        assert types.count("constraint") == min(constraints, (turns + 3) // 4)
        assert types.count("open_loop") == min(open_loops, (2 * turns + 2) // 3 - (turns + 2) // 3)
        assert {"current_fact", "history_fact"} <= set(types)
        assert types == sorted(types, key=PROBE_RANK.__getitem__)
