"""Structural faults of a dataset file are refused with the file and the positions named, by every loader.

Two episodes with one id would be run as one ledger stream (the first one's
turns plus the second one's tail, the second's probes lost); `--inspect`
and `run` both say so instead.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.invoke import invoke_in
from ledgermem.datasets.model import DatasetError
from ledgermem.datasets.loaders import load_dataset
from ledgermem.datasets.loaders import inspect_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"


def _write(tmp_path: Path, document: Any, name: str = "data.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path


def _episode(episode_id: str | None = "ep-1", turns: int = 3, **extra: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"dialogues": [[f"My city is City{n}.", "Noted."] for n in range(turns)],
                            "facts": {"city": [[0, "City0"]]},
                            "probes": [{"type": "current_fact", "question": "Which city?", "answer": "City0"}]}
    if episode_id is not None:
        item["episode_id"] = episode_id
    item.update(extra)
    return item


def _fails(path: Path, *expected: str) -> str:
    """The load error (also what --inspect reports), checked to be one line holding every expected piece."""
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    for piece in expected:
        assert piece in message, message
    inspection = inspect_file(path)
    assert inspection.error == message
    return message


SEED_FAULTS: list[tuple[str, list[dict[str, Any]], tuple[str, ...]]] = [
    ("duplicate episode ids",
     [_episode("ep-1"), _episode("ep-2"), _episode("ep-3"), _episode("ep-1")],
     ("episodes[0] and episodes[3] both have episode_id 'ep-1'",)),
    ("a default id taken by another episode",
     [_episode("ep1"), _episode(None)],
     ("episodes[0] and episodes[1] (no episode_id, so 'ep1') both have episode_id 'ep1'",)),
    ("integer and string ids that read the same",
     [_episode("7"), _episode(7)],  # type: ignore[arg-type]
     ("episodes[0] and episodes[1] both have episode_id '7'",)),
    ("an empty dialogue",
     [_episode("a"), _episode("b", turns=0, facts={}, probes=[])],
     ("episodes[1]: the dialogue is empty",)),
    ("a fact past the dialogue",
     [_episode("a", facts={"city": [[0, "City0"], [5, "Rome"]]})],
     ("episodes[0].facts['city']: turn 5", "last turn 2")),
    ("duplicate probe ids in an episode",
     [_episode("a", probes=[{"probe_id": "q", "type": "t", "question": "Q1?", "answer": "x"},
                            {"probe_id": "z", "type": "t", "question": "Q2?", "answer": "y"},
                            {"probe_id": "q", "type": "t", "question": "Q3?", "answer": "z"}])],
     ("episodes[0]: probes[0] and probes[2] both have probe_id 'q'",)),
    ("a probe id of the generated memory_point form",
     [_episode("a", probes=[{"probe_id": "a:mp0", "type": "t", "question": "Q?", "answer": "x"}])],
     ("episodes[0].probes[0]: probe_id 'a:mp0'",)),
    ("an empty episode id", [_episode("")], ("episodes[0]: field 'episode_id' is empty",)),
    ("a blank episode id", [_episode("  ")], ("episodes[0]: field 'episode_id' is empty",)),
    ("a newline in an episode id", [_episode("a\nb")], ("episodes[0]: field 'episode_id'", "control character")),
    ("an empty probe id",
     [_episode("a", probes=[{"probe_id": "", "type": "t", "question": "Q?", "answer": "x"}])],
     ("episodes[0].probes[0]: field 'probe_id' is empty",)),
    ("evidence naming a turn that is not there",
     [_episode("a", probes=[{"type": "t", "question": "Q?", "answer": "x", "evidence": ["r0009"]}])],
     ("episodes[0].probes[0]: evidence 'r0009' names no turn", "3 turns")),
]


@pytest.mark.parametrize(("episodes", "expected"), [(e, x) for _, e, x in SEED_FAULTS],
                         ids=[name for name, _, _ in SEED_FAULTS])
def test_seed_faults_are_refused_with_positions(tmp_path: Path, episodes: list[dict[str, Any]],
                                                expected: tuple[str, ...]) -> None:
    _fails(_write(tmp_path, {"episodes": episodes}), *expected)


def test_control_a_well_formed_seed_file_loads(tmp_path: Path) -> None:
    """Must-fail control: the same builders without the fault load, so each refusal above is the fault's."""
    document = {"episodes": [_episode("ep-1"), _episode("ep-2", probes=[
        {"probe_id": "q", "type": "t", "question": "Q?", "answer": "x", "evidence": ["r0003"]},
        {"probe_id": "ep-2:mp", "type": "t", "question": "Q?", "answer": "x"}]), _episode(None)]}
    ds = load_dataset(_write(tmp_path, document))
    assert [e.episode_id for e in ds.episodes] == ["ep-1", "ep-2", "ep2"]
    assert inspect_file(_write(tmp_path, document)).error is None


_invoke = invoke_in


def test_run_and_inspect_refuse_duplicate_episode_ids(tmp_path: Path) -> None:
    path = _write(tmp_path, {"episodes": [_episode("ep-1"), _episode("ep-2"), _episode("ep-3"), _episode("ep-1")]})
    ran = _invoke(tmp_path, "run", "--dataset", str(path), "--run-id", "dup")
    assert ran.exit_code == 1
    assert ran.output.strip() == (f"error: {path}: episodes[0] and episodes[3] both have episode_id 'ep-1'; "
                                  "every episode_id must be unique in the file")
    assert not (tmp_path / "runs").exists()
    inspected = _invoke(tmp_path, "run", "--inspect", str(path))
    assert inspected.exit_code == 1
    assert "error: " in inspected.output and "episodes[0] and episodes[3] both have episode_id 'ep-1'" \
        in inspected.output
    as_json = _invoke(tmp_path, "run", "--inspect", str(path), "--json")
    assert "episodes[0] and episodes[3]" in json.loads(as_json.output)["error"]


def test_meme_duplicate_ids_and_faults(tmp_path: Path) -> None:
    document = json.loads((FIXTURES / "meme_variant_a.json").read_text())
    records = document["data"]
    assert load_dataset(_write(tmp_path, document, "ok.json")).episodes  # control: the fixture loads
    twice = {**document, "data": [*records, copy.deepcopy(records[0])]}
    _fails(_write(tmp_path, twice, "dup.json"),
           f"data[0] and data[{len(records)}] both have episode id {records[0]['conversation_id']!r}")
    past = copy.deepcopy(document)
    past["data"][0]["slots"] = {"office floor": [[0, "3F"], [99, "9F"]]}
    _fails(_write(tmp_path, past, "past.json"), "data[0]", "facts['office floor']: turn 99")
    probes = copy.deepcopy(document)
    first = probes["data"][0]["questions"]
    first.append(copy.deepcopy(first[0]))
    _fails(_write(tmp_path, probes, "probes.json"), f"questions[0] and questions[{len(first) - 1}] both have "
                                                    f"probe_id {first[0]['qid']!r}")


def test_locomo_duplicate_sample_ids(tmp_path: Path) -> None:
    samples = json.loads((FIXTURES / "locomo10_sample.json").read_text())
    _fails(_write(tmp_path, [*samples, copy.deepcopy(samples[0])]),
           "samples[0] (sample_id 'conv-a') and samples[2] (sample_id 'conv-a') both have episode id 'conv-a'")


def test_locomo_sample_without_any_utterance(tmp_path: Path) -> None:
    samples = json.loads((FIXTURES / "locomo10_sample.json").read_text())
    conversation = samples[1]["conversation"]
    for key in [k for k in conversation if k.startswith("session_") and isinstance(conversation[k], list)]:
        conversation[key] = []
    _fails(_write(tmp_path, samples), "samples[1] (sample_id 'conv-b'): the dialogue is empty")


def test_longmemeval_duplicate_question_ids_and_empty_haystacks(tmp_path: Path) -> None:
    questions = json.loads((FIXTURES / "longmemeval_oracle_sample.json").read_text())
    _fails(_write(tmp_path, [*questions, copy.deepcopy(questions[0])], "dup.json"),
           "questions[0] (question_id '830ce83f') and questions[2] (question_id '830ce83f') both have episode id")
    empty = copy.deepcopy(questions)
    empty[1]["haystack_sessions"] = [[] for _ in empty[1]["haystack_sessions"]]
    _fails(_write(tmp_path, empty, "empty.json"), "questions[1] (question_id 'gpt4_93159ced'): the dialogue is empty")


def test_max_turns_that_leaves_no_turn_is_refused(tmp_path: Path) -> None:
    question = {"question_id": "q1", "question_type": "single-session-user", "question": "Q?", "answer": "a",
                "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/01 (Mon) 08:00"],
                "haystack_sessions": [[{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"},
                                       {"role": "user", "content": "three"}]],
                "answer_session_ids": []}
    path = _write(tmp_path, [question])
    assert len(load_dataset(path, max_turns=2).episodes[0].turns) == 2  # control: the session fits
    with pytest.raises(DatasetError, match=r"episode 'q1': no turn is left to run \(max_turns"):
        load_dataset(path, max_turns=1)
