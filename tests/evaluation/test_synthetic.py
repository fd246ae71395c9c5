"""Tests for the seeded synthetic dataset generator."""

from __future__ import annotations

from datetime import datetime

import pytest

from evaluation.datasets import Dataset, Episode
from evaluation.synthetic import SLOT_TABLES, generate_synthetic
from gate.lexicon import FactMention, detect_facts


def _planted(episode: Episode) -> dict[int, tuple[str, str]]:
    return {turn: (slot, value) for slot, history in episode.facts for turn, value in history}


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
    assert dataset.source == "synthetic(seed=11,n=8,turns=40)"
    langs = [episode.lang for episode in dataset.episodes]
    assert langs == ["en", "zh"] * 4
    assert [episode.episode_id for episode in dataset.episodes[:3]] == [
        "syn-en-000",
        "syn-zh-001",
        "syn-en-002",
    ]


def test_every_planted_fact_is_detected_exactly(dataset: Dataset) -> None:
    for episode in dataset.episodes:
        firsts = {history[0][0] for _, history in episode.facts}
        for turn, (slot, value) in _planted(episode).items():
            expected = FactMention(slot=slot, value=value, change=turn not in firsts)
            assert detect_facts(episode.turns[turn].user) == (expected,)


def test_distractors_detect_nothing_and_are_at_least_30_percent(dataset: Dataset) -> None:
    for episode in dataset.episodes:
        planted = _planted(episode)
        distractors = [turn for index, turn in enumerate(episode.turns) if index not in planted]
        assert len(distractors) >= 0.3 * len(episode.turns)
        for turn in distractors:
            assert detect_facts(turn.user) == ()
        for turn in episode.turns:
            assert detect_facts(turn.agent) == ()


def test_probes_carry_no_facts(dataset: Dataset) -> None:
    for episode in dataset.episodes:
        for probe in episode.probes:
            assert detect_facts(probe.question) == ()


def test_probe_questions_are_unique_per_episode(dataset: Dataset) -> None:
    for episode in dataset.episodes:
        questions = [probe.question for probe in episode.probes]
        assert len(questions) == len(set(questions))
        assert [p.probe_id for p in episode.probes] == [
            f"{episode.episode_id}:p{i}" for i in range(len(episode.probes))
        ]


def test_current_probe_answers_final_value(dataset: Dataset) -> None:
    for episode in dataset.episodes:
        facts = episode.fact_dict()
        current = [probe for probe in episode.probes if probe.type == "current_fact"]
        assert sorted(probe.fact_key or "" for probe in current) == sorted(facts)
        for probe in current:
            assert probe.answer == facts[probe.fact_key or ""][-1][1]


def test_history_golds_for_slots_updated_twice() -> None:
    ds = generate_synthetic(n_episodes=10, turns=60, seed=3, updates_per_slot=(2, 2))
    checked = 0
    for episode in ds.episodes:
        for slot, history in episode.facts:
            values = [value for _, value in history]
            assert len(values) == 3
            probes = {p.question: p.answer for p in episode.probes
                      if p.type == "history_fact" and p.fact_key == slot}
            assert len(probes) == 2
            for before, after in zip(values, values[1:]):
                matching = [answer for question, answer in probes.items() if after in question]
                assert matching == [before]
                checked += 1
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
        assert all(len(episode.facts) == 4 for episode in ds.episodes)
        assert all(len(h) >= 2 for episode in ds.episodes for _, h in episode.facts)


def test_timestamps_are_iso_and_increasing(dataset: Dataset) -> None:
    for episode in dataset.episodes:
        stamps = [datetime.fromisoformat(turn.occurred_at or "") for turn in episode.turns]
        assert all(a < b for a, b in zip(stamps, stamps[1:]))


def test_both_languages_present_with_native_text(dataset: Dataset) -> None:
    zh = [episode for episode in dataset.episodes if episode.lang == "zh"]
    en = [episode for episode in dataset.episodes if episode.lang == "en"]
    assert zh and en
    assert all(slot in dict(SLOT_TABLES["zh"]) for episode in zh for slot, _ in episode.facts)
    assert all(slot in dict(SLOT_TABLES["en"]) for episode in en for slot, _ in episode.facts)
    assert any("我的" in turn.user for episode in zh for turn in episode.turns)


@pytest.mark.parametrize("lang", sorted(SLOT_TABLES))
def test_slot_tables_are_safe_for_exact_matching(lang: str) -> None:
    table = SLOT_TABLES[lang]
    assert len(table) >= 8
    for _, values in table:
        assert len(values) >= 6 and len(set(values)) == len(values)
        for value in values:
            assert not any(sep in value for sep in ";=,，。?")
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
