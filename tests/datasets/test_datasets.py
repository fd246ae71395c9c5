"""Tests for the dataset model and the seed JSON loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledgermem.datasets.model import (
    Dataset,
    DatasetError,
    Episode,
    Probe,
    Turn,
    dataset_to_json,
)
from ledgermem.datasets.loaders import load_dataset
from ledgermem.datasets.synthetic import generate_synthetic


def _write(tmp_path: Path, document: Any, name: str = "seed.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path


def _episode(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "episode_id": "e1",
        "dialogues": [{"user": "My office floor is 3F.", "agent": "Noted."}],
    }
    base.update(overrides)
    return base


def test_loads_both_turn_forms_and_optional_timestamps(tmp_path: Path) -> None:
    episode = _episode(
        dialogues=[
            {"user": "hi", "agent": "hello", "occurred_at": "2024-01-01T09:00:00+00:00"},
            ["My office floor is 3F.", "Noted."],
            {"user": "bye", "agent": "see you", "timestamp": "2024-01-01T09:05:00+00:00", "mood": "ok"},
        ]
    )
    ds = load_dataset(_write(tmp_path, {"episodes": [episode]}))
    assert ds.episodes[0].turns == (
        Turn(user="hi", agent="hello", occurred_at="2024-01-01T09:00:00+00:00"),
        Turn(user="My office floor is 3F.", agent="Noted."),
        Turn(user="bye", agent="see you", occurred_at="2024-01-01T09:05:00+00:00"),
    )


def test_facts_accept_numeric_string_turns_and_are_sorted(tmp_path: Path) -> None:
    episode = _episode(dialogues=[["turn", "ok"]] * 10, facts={"office floor": [["5", "7F"], [0, "3F"], [" 9 ", 12]]})
    ep = load_dataset(_write(tmp_path, {"episodes": [episode]})).episodes[0]
    assert ep.facts == (("office floor", ((0, "3F"), (5, "7F"), (9, "12"))),)
    assert ep.fact_dict() == {"office floor": [(0, "3F"), (5, "7F"), (9, "12")]}


def test_extra_keys_tolerated_and_defaults_filled(tmp_path: Path) -> None:
    document = {
        "meta": {"author": "someone"},
        "version": 3,
        "episodes": [
            {
                "dialogues": [["a", "b"]],
                "notes": "ignored",
                "probes": [
                    {"type": "current_fact", "question": "Q?", "answer": 7, "history_ref": 2},
                    {"id": 11, "type": "history_fact", "fact_key": "k", "question": "Q2?", "answer": "x"},
                ],
            },
            {"episode_id": 42, "dialogues": [["a", "b"]]},
        ],
    }
    path = _write(tmp_path, document, name="my_seed.json")
    ds = load_dataset(path)
    assert ds.name == "my_seed"
    assert ds.source == str(path)
    first, second = ds.episodes
    assert first.episode_id == "ep0"
    assert first.probes == (
        Probe(probe_id="ep0:p0", type="current_fact", question="Q?", answer="7"),
        Probe(probe_id="11", type="history_fact", question="Q2?", answer="x", fact_key="k"),
    )
    assert second.episode_id == "42"
    assert second.probes == () and second.facts == () and second.turns == (Turn(user="a", agent="b"),)


def test_top_level_list_of_episodes_and_absent_probes(tmp_path: Path) -> None:
    ds = load_dataset(_write(tmp_path, [_episode()]))
    assert ds.episodes == (
        Episode(
            episode_id="e1",
            turns=(Turn(user="My office floor is 3F.", agent="Noted."),),
            facts=(),
            probes=(),
        ),
    )


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(DatasetError, match="no such dataset file") as info:
        load_dataset(path)
    assert str(path) in str(info.value)


def test_invalid_json_reports_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "episodes": [\n    {"dialogues": [}\n  ]\n}', encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid JSON at line 3 column ")
    assert "\n" not in message


ERROR_CASES: list[tuple[str, Any, str, str]] = [
    ("top-level scalar", "just a string", "top level", "expected an object or a list"),
    ("episodes missing", {"meta": {}}, "top level", "'episodes'"),
    ("episodes not a list", {"episodes": {"a": 1}}, "top level", "'episodes' is not a list"),
    ("no episodes", {"episodes": []}, "episodes", "contains no episodes"),
    ("episode not object", {"episodes": [_episode(), 3]}, "episodes[1]", "expected an object"),
    ("dialogues missing", {"episodes": [{"episode_id": "x"}]}, "episodes[0]", "'dialogues'"),
    (
        "dialogue wrong shape",
        {"episodes": [_episode(dialogues=[["u", "a"], ["only one"]])]},
        "episodes[0].dialogues[1]",
        "[user, agent] pair",
    ),
    (
        "dialogue scalar",
        {"episodes": [_episode(dialogues=[["u", "a"], ["u", "a"], 5])]},
        "episodes[0].dialogues[2]",
        "expected an object or a [user, agent] pair",
    ),
    (
        "user not string",
        {"episodes": [_episode(), _episode(dialogues=[{"user": 1, "agent": "a"}])]},
        "episodes[1].dialogues[0]",
        "'user' is not a string",
    ),
    (
        "agent not string in pair",
        {"episodes": [_episode(dialogues=[["u", None]])]},
        "episodes[0].dialogues[0]",
        "'agent' is not a string",
    ),
    (
        "agent missing",
        {"episodes": [_episode(dialogues=[{"user": "u"}])]},
        "episodes[0].dialogues[0]",
        "missing field 'agent'",
    ),
    (
        "fact turn not integer",
        {
            "episodes": [
                _episode(),
                _episode(),
                _episode(facts={"office floor": [[0, "3F"], ["abc", "7F"]]}),
            ]
        },
        "episodes[2].facts['office floor'][1]",
        "turn 'abc' is not an integer",
    ),
    (
        "fact turn float",
        {"episodes": [_episode(facts={"desk": [[1.5, "3F"]]})]},
        "episodes[0].facts['desk'][0]",
        "turn 1.5 is not an integer",
    ),
    (
        "fact entry wrong shape",
        {"episodes": [_episode(facts={"desk": [[1, "3F", "extra"]]})]},
        "episodes[0].facts['desk'][0]",
        "[turn, value] pair",
    ),
    (
        "facts not object",
        {"episodes": [_episode(facts=[["desk", 1, "3F"]])]},
        "episodes[0]",
        "'facts' is not an object",
    ),
    (
        "probes not list",
        {"episodes": [_episode(probes={"question": "q"})]},
        "episodes[0]",
        "'probes' is not a list",
    ),
    *[
        (
            f"probe missing {field}",
            {
                "episodes": [
                    _episode(
                        probes=[
                            {"type": "t", "question": "q", "answer": "a"},
                            {k: v for k, v in {"type": "t", "question": "q", "answer": "a"}.items() if k != field},
                        ]
                    )
                ]
            },
            "episodes[0].probes[1]",
            f"missing field '{field}'",
        )
        for field in ("type", "question", "answer")
    ],
]


@pytest.mark.parametrize(
    ("document", "record", "detail"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_errors_name_file_record_and_field(tmp_path: Path, document: Any, record: str, detail: str) -> None:
    path = _write(tmp_path, document)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {record}: ")
    assert detail in message
    assert "\n" not in message


def test_dataset_error_is_value_error() -> None:
    assert issubclass(DatasetError, ValueError)


def test_round_trip_of_synthetic_dataset(tmp_path: Path) -> None:
    ds = generate_synthetic(n_episodes=4, turns=20, seed=3)
    path = _write(tmp_path, dataset_to_json(ds))
    loaded = load_dataset(path)
    assert loaded == ds
    assert loaded.content_hash() == ds.content_hash()


def test_content_hash_depends_only_on_episodes() -> None:
    ds = generate_synthetic(n_episodes=2, turns=12, seed=5)
    renamed = Dataset(name="other", source="elsewhere", episodes=ds.episodes)
    assert renamed.content_hash() == ds.content_hash()
    assert len(ds.content_hash()) == 64
    fewer = Dataset(name=ds.name, source=ds.source, episodes=ds.episodes[:1])
    assert fewer.content_hash() != ds.content_hash()
