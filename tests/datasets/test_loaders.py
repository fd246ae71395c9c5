"""Tests for the benchmark loaders (LoCoMo, LongMemEval, MEME), format detection and inspection.

The fixtures under tests/fixtures/datasets are small hand-written files in
the published shapes; the expected turns, record ids and evidence below
were worked out by hand from them.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ledgermem.datasets.model import (
    Dataset,
    DatasetError,
    Turn,
    dataset_to_json,
)
from ledgermem.datasets.loaders import FORMATS, LoadOptions, detect, inspect_file, load_dataset
from ledgermem.datasets.loaders.locomo import ADVERSARIAL_GOLD
from ledgermem.datasets.synthetic import generate_synthetic

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"
LOCOMO = FIXTURES / "locomo10_sample.json"
LOCOMO_SINGLE = FIXTURES / "locomo_single_conv.json"
LME_S = FIXTURES / "longmemeval_s_sample.json"
LME_ORACLE = FIXTURES / "longmemeval_oracle_sample.json"
MEME_A = FIXTURES / "meme_variant_a.json"
MEME_B = FIXTURES / "meme_variant_b.json"


def _write(tmp_path: Path, document: Any, name: str = "data.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path


def _types(ds: Dataset) -> dict[str, int]:
    return dict(Counter(p.type for ep in ds.episodes for p in ep.probes))


def _evidence(ds: Dataset) -> dict[str, tuple[str, ...]]:
    return {p.probe_id: p.evidence for ep in ds.episodes for p in ep.probes}


# --------------------------------------------------------------------------
# LoCoMo
# --------------------------------------------------------------------------


def test_locomo_list_turns_in_numeric_session_order() -> None:
    ds = load_dataset(LOCOMO)
    assert ds.name == "locomo10_sample"
    assert [ep.episode_id for ep in ds.episodes] == ["conv-a", "conv-b"]
    conv_a, conv_b = ds.episodes
    # Sessions 1, 2, 9, 10 (the file lists 1, 10, 2, 9); an odd session ends with a one-sided turn.
    assert [t.source_ids for t in conv_a.turns] == [
        ("D1:1", "D1:2"), ("D1:3",), ("D2:1", "D2:2"), ("D2:3", "D2:4"), ("D9:1", "D9:2"), ("D10:1", "D10:2"),
    ]
    assert [t.source_ids for t in conv_b.turns] == [("D1:1", "D1:2"), ("D1:3", "D1:4"), ("D2:1", "D2:2"), ("D2:3",)]
    assert conv_a.turns[1] == Turn(user="Caroline: Really powerful. I want to study counseling.", agent="",
                                   occurred_at="2023-05-08T13:56:00", source_ids=("D1:3",))
    # Two utterances of the same speaker make one turn.
    assert conv_a.turns[3].user.startswith("Melanie: Great!")
    assert conv_a.turns[3].agent == "Melanie: I'm going to sign up for another one in August."
    assert conv_a.record_ids()["D10:2"] == "r0006"
    assert conv_a.record_ids()["D2:4"] == "r0004"


def test_locomo_timestamps_parsed_or_kept() -> None:
    conv_a, conv_b = load_dataset(LOCOMO).episodes
    assert [t.occurred_at for t in conv_a.turns] == [
        "2023-05-08T13:56:00", "2023-05-08T13:56:00", "2023-06-27T10:37:00", "2023-06-27T10:37:00",
        "2023-07-20T20:56:00", "2023-08-02T18:10:00",
    ]
    assert conv_b.turns[0].occurred_at == "Tuesday evening"  # not a date: kept as written
    assert conv_b.turns[2].occurred_at == "2023-01-29T15:14:00"


def test_locomo_images_are_blocks_with_caption_and_source_and_urls_as_attachments() -> None:
    conv_a, conv_b = load_dataset(LOCOMO).episodes
    assert conv_a.turns[3].user == "Melanie: Great! It made me realise self-care is important."
    (race,) = conv_a.turns[3].blocks
    assert (race.mime, race.source, race.caption, race.data, race.side) == (
        "image/jpeg", "https://example.org/race.jpg", "a photo of runners crossing a finish line", None, "user")
    assert conv_a.turns[3].attachments == ("https://example.org/race.jpg",)
    (store,) = conv_b.turns[2].blocks
    assert (store.mime, store.caption) == ("image/png", "a screenshot of an online clothing store")
    assert "[image" not in conv_b.turns[2].user
    assert conv_b.turns[2].attachments == ("https://example.org/store.png",)
    assert all(not t.attachments and not t.blocks for t in conv_a.turns if t is not conv_a.turns[3])


def test_locomo_no_utterance_lost() -> None:
    raw = json.loads(LOCOMO.read_text(encoding="utf-8"))
    for sample, episode in zip(raw, load_dataset(LOCOMO).episodes):
        conversation = sample["conversation"]
        utterances = [u for key, value in conversation.items()
                      if key.startswith("session_") and isinstance(value, list) for u in value]
        text = "\n".join(f"{t.user}\n{t.agent}" for t in episode.turns)
        for u in utterances:
            assert f"{u['speaker']}: {u['text']}" in text
        held = [i for t in episode.turns for i in t.source_ids]
        assert sorted(held) == sorted(u["dia_id"] for u in utterances)


def test_locomo_probes_types_gold_and_evidence() -> None:
    ds = load_dataset(LOCOMO)
    assert _types(ds) == {"locomo_cat1": 2, "locomo_cat2": 3, "locomo_cat3": 3, "locomo_cat4": 4, "locomo_cat5": 2}
    assert _evidence(ds) == {
        "conv-a:q0": ("r0001",),
        "conv-a:q1": ("r0003",),
        "conv-a:q2": ("r0005",),  # D9:1 and D9:2 share a turn
        "conv-a:q3": ("r0002",),
        "conv-a:q4": ("r0004",),
        "conv-a:q5": ("r0004",),  # "D2:3; D2:4" split
        "conv-a:q6": ("r0006",),  # "D10:01" matches D10:1
        "conv-a:q7": ("r0005", "D99:1"),  # unknown id kept as written
        "conv-a:q8": ("r0001",),
        "conv-b:q0": ("r0001",),
        "conv-b:q1": ("r0002",),
        "conv-b:q2": ("r0002",),
        "conv-b:q3": ("r0003",),
        "conv-b:q4": (),
    }
    probes = {p.probe_id: p for ep in ds.episodes for p in ep.probes}
    assert probes["conv-a:q8"].answer == "2023"  # integer answers become text
    assert probes["conv-a:q0"].fact_key is None and probes["conv-a:q0"].distractor is None
    assert ds.notes == ("conv-a:q7: evidence 'D99:1' names no turn of the dialogue; kept as given",)


def test_locomo_adversarial_gold_and_distractor() -> None:
    probes = {p.probe_id: p for ep in load_dataset(LOCOMO).episodes for p in ep.probes}
    adversarial = probes["conv-a:q4"]
    assert adversarial.type == "locomo_cat5"
    assert adversarial.answer == ADVERSARIAL_GOLD == "Not mentioned in the conversation"
    assert adversarial.distractor == "self-care is important"
    assert probes["conv-b:q2"].distractor == "an online clothing store"


def test_locomo_single_conversation_file() -> None:
    ds = load_dataset(LOCOMO_SINGLE)
    (episode,) = ds.episodes
    assert episode.episode_id == "locomo_single_conv"  # no sample_id: the file's stem
    assert [t.source_ids for t in episode.turns] == [("D1:1", "D1:2"), ("D1:3", "D1:4"), ("D2:1", "D2:2")]
    assert episode.turns[2].user == "Andrew: I went hiking last weekend."
    assert [b.caption for b in episode.turns[2].blocks] == ["a photo of a mountain trail with snow"]
    assert episode.turns[2].occurred_at == "2023-01-29T14:32:00"
    assert _types(ds) == {"locomo_cat4": 1, "locomo_cat2": 1, "locomo_cat5": 1}
    assert _evidence(ds) == {"locomo_single_conv:q0": ("r0001",), "locomo_single_conv:q1": ("r0003",),
                             "locomo_single_conv:q2": ("r0001",)}


def test_locomo_single_sample_object_with_nested_conversation(tmp_path: Path) -> None:
    sample = json.loads(LOCOMO.read_text(encoding="utf-8"))[1]
    ds = load_dataset(_write(tmp_path, sample))
    assert [ep.episode_id for ep in ds.episodes] == ["conv-b"]
    assert _evidence(ds)["conv-b:q1"] == ("r0002",)
    assert detect(sample).kind == "locomo-single"


@pytest.mark.parametrize("name", ["5", "cat5", "locomo_cat5"])
def test_locomo_type_filter_names(name: str) -> None:
    ds = load_dataset(LOCOMO, question_types={name})
    assert [(ep.episode_id, [p.probe_id for p in ep.probes]) for ep in ds.episodes] == [
        ("conv-a", ["conv-a:q4"]), ("conv-b", ["conv-b:q2"]),
    ]


def test_locomo_truncation_keeps_evidence_sessions() -> None:
    ds = load_dataset(LOCOMO, question_types={"locomo_cat4"}, max_turns=3)
    conv_a, conv_b = ds.episodes
    # conv-a: sessions 1, 2 and 10 hold evidence; only session 9 may go, which is not enough.
    assert [t.source_ids[0] for t in conv_a.turns] == ["D1:1", "D1:3", "D2:1", "D2:3", "D10:1"]
    assert _evidence(ds)["conv-a:q6"] == ("r0005",)  # renumbered after the drop
    # conv-b: session 2 holds no cat-4 evidence and goes.
    assert [t.source_ids for t in conv_b.turns] == [("D1:1", "D1:2"), ("D1:3", "D1:4")]
    assert _evidence(ds)["conv-b:q0"] == ("r0001",)
    assert ds.notes == (
        ("conv-a: max_turns=3 dropped 1 of 4 sessions (1 turns), oldest without evidence first: session_9; "
         "the 3 evidence sessions kept hold 5 turns, more than max_turns"),
        "conv-b: max_turns=3 dropped 1 of 2 sessions (2 turns), oldest without evidence first: session_2",
    )


# --------------------------------------------------------------------------
# LongMemEval
# --------------------------------------------------------------------------


def test_longmemeval_questions_become_episodes() -> None:
    ds = load_dataset(LME_S)
    assert [ep.episode_id for ep in ds.episodes] == ["e47becba", "830ce83f", "gpt4_2f8be40d", "6f2a9d1c_abs"]
    assert [len(ep.turns) for ep in ds.episodes] == [5, 5, 6, 2]
    assert _types(ds) == {"lme_single-session-user": 1, "lme_knowledge-update": 1, "lme_temporal-reasoning": 1,
                          "lme_abstention": 1}
    # has_answer turns where marked; all turns of an evidence session that marks none.
    assert _evidence(ds) == {
        "e47becba": ("r0003",),
        "830ce83f": ("r0001", "r0004"),
        "gpt4_2f8be40d": ("r0001", "r0005", "r0006"),
        "6f2a9d1c_abs": ("r0001",),
    }
    first, _, temporal, _ = ds.episodes
    assert first.turns[0] == Turn(user="Can you suggest a quick pasta recipe?",
                                  agent="Try aglio e olio: garlic, olive oil, chili and parsley.",
                                  occurred_at="2023-05-20T02:21:00", source_ids=("sharegpt_a1:0", "sharegpt_a1:1"))
    assert first.turns[2].user.startswith("I graduated with a degree in Business Administration")
    (probe,) = first.probes
    assert (probe.question, probe.answer, probe.asked_at) == (
        "What degree did I graduate with?", "Business Administration", "2023-05-30T23:40:00")
    assert temporal.probes[0].answer == "14"
    # A trailing user message and an assistant-first session each give a one-sided turn.
    assert temporal.turns[1] == Turn(user="Brooks.", agent="", occurred_at="2023-04-02T11:00:00",
                                     source_ids=("answer_2f8be40d_1:2",))
    assert temporal.turns[2].user == "" and temporal.turns[2].agent == "Hello! How can I help?"
    assert ds.notes == ()


def test_longmemeval_type_filter_applies_before_limit() -> None:
    assert [ep.episode_id for ep in load_dataset(LME_S, limit=1).episodes] == ["e47becba"]
    ds = load_dataset(LME_S, question_types={"knowledge-update"}, limit=1)
    assert [ep.episode_id for ep in ds.episodes] == ["830ce83f"]
    for name in ("abstention", "lme_abstention"):
        assert [ep.episode_id for ep in load_dataset(LME_S, question_types={name}).episodes] == ["6f2a9d1c_abs"]
    both = load_dataset(LME_S, question_types={"lme_temporal-reasoning", "single-session-user"}, limit=5)
    assert [ep.episode_id for ep in both.episodes] == ["e47becba", "gpt4_2f8be40d"]


def test_longmemeval_truncation_drops_oldest_non_evidence_sessions() -> None:
    ds = load_dataset(LME_S, question_types={"knowledge-update"}, max_turns=3)
    (episode,) = ds.episodes
    assert [t.source_ids[0] for t in episode.turns] == ["answer_830ce83f_1:0", "answer_830ce83f_2:0",
                                                        "ultrachat_d4:0"]
    assert episode.probes[0].evidence == ("r0001", "r0002")
    assert ds.notes == ("830ce83f: max_turns=3 dropped 1 of 4 sessions (2 turns), oldest without evidence first: "
                        + "sharegpt_c3",)

    tight = load_dataset(LME_S, question_types={"knowledge-update"}, max_turns=1)
    (episode,) = tight.episodes
    assert [t.source_ids[0] for t in episode.turns] == ["answer_830ce83f_1:0", "answer_830ce83f_2:0"]
    assert tight.notes == (
        ("830ce83f: max_turns=1 dropped 2 of 4 sessions (3 turns), oldest without evidence first: sharegpt_c3, "
         "ultrachat_d4; the 2 evidence sessions kept hold 2 turns, more than max_turns"),
    )

    roomy = load_dataset(LME_S, max_turns=6)
    assert [len(ep.turns) for ep in roomy.episodes] == [5, 5, 6, 2] and roomy.notes == ()


def test_longmemeval_oracle_sessions_put_in_date_order() -> None:
    ds = load_dataset(LME_ORACLE)
    update, plants = ds.episodes
    assert [t.user for t in update.turns] == ["My friend Rachel just moved to Chicago.",
                                              "Rachel moved again, to the suburbs this time."]
    assert update.turns[0].occurred_at == "2023-05-01T08:00:00"
    assert _evidence(ds) == {"830ce83f": ("r0001", "r0002"), "gpt4_93159ced": ("r0001", "r0002")}
    assert _types(ds) == {"lme_knowledge-update": 1, "lme_multi-session": 1}
    assert plants.probes[0].answer == "5"
    assert ds.notes == ("sessions of 1 of 2 questions were put in date order",)


def test_longmemeval_unknown_answer_session_is_kept_and_noted(tmp_path: Path) -> None:
    item = json.loads(LME_ORACLE.read_text(encoding="utf-8"))[1]
    item["answer_session_ids"] = ["answer_93159ced_1", "answer_missing"]
    ds = load_dataset(_write(tmp_path, [item]))
    assert ds.episodes[0].probes[0].evidence == ("r0001", "answer_missing")
    assert ds.notes == ("gpt4_93159ced: evidence 'answer_missing' names no turn of the dialogue; kept as given",)


# --------------------------------------------------------------------------
# MEME
# --------------------------------------------------------------------------


def test_meme_variant_a_aliases() -> None:
    ds = load_dataset(MEME_A)
    assert ds.name == "meme-variant-a"
    a1, a2 = ds.episodes
    assert a1.episode_id == "a1"
    assert a1.turns[0] == Turn(user="My office is on 3F.", agent="Noted.", occurred_at="2024-03-01T09:00:00+00:00")
    assert a1.facts == (("office floor", ((0, "3F"), (2, "7F"))),)
    assert [(p.probe_id, p.type, p.fact_key, p.question, p.answer, p.evidence) for p in a1.probes] == [
        ("a1-q1", "current_fact", "office floor", "Which floor is my office on now?", "7F", ("r0003",)),
        ("a1-q2", "history_fact", "office floor", "Which floor was my office on before the move?", "3F", ("r0001",)),
    ]
    assert a2.turns == (Turn(user="My manager is Alice Chen.", agent="Got it."),
                        Turn(user="Please never book meetings before 9am.", agent="Understood."))
    assert [(p.type, p.evidence) for p in a2.probes] == [("current_fact", ()), ("constraint", ("r0002",))]
    assert ds.notes == ()


def test_meme_variant_b_messages_and_fact_objects() -> None:
    ds = load_dataset(MEME_B)
    (b1,) = ds.episodes
    assert (b1.episode_id, b1.lang) == ("b1", "zh")
    assert b1.turns == (
        Turn(user="我的办公室在3楼。", agent="好的，记下了。", occurred_at="2024-04-01T09:00:00", source_ids=("m1", "m2")),
        Turn(user="我们搬到了7楼。", agent="已更新。", occurred_at="2024-04-08T09:30:00", source_ids=("m3", "m4")),
        Turn(user="周五提醒我交报告。", agent="", source_ids=("m5",)),
    )
    assert b1.facts == (("办公室楼层", ((0, "3楼"), (1, "7楼"))),)
    assert [(p.probe_id, p.type, p.fact_key, p.answer, p.evidence) for p in b1.probes] == [
        ("b1:p0", "current_fact", "办公室楼层", "7楼", ("r0002",)),
        ("b1:p1", "history_fact", "办公室楼层", "3楼", ("r0001", "9")),
        ("b1:p2", "qa", None, "交报告", ("r0003",)),
    ]
    assert ds.notes == ("b1:p1: evidence 9 names no turn of the dialogue; kept as given",)


def test_meme_seed_names_with_an_alias_are_not_read_as_seed(tmp_path: Path) -> None:
    document = {"episodes": [{"dialogues": [["u", "a"]], "questions": [{"question": "q?", "answer": "x"}]}]}
    ds = load_dataset(_write(tmp_path, document))
    assert [(p.probe_id, p.type) for p in ds.episodes[0].probes] == [("ep0:p0", "qa")]


def test_meme_record_with_locomo_like_keys_is_meme() -> None:
    record = {"sample_id": "s1", "dialogue": [["I like tea.", "Noted."]],
              "qa": [{"question": "What do I like?", "answer": "tea"}]}
    assert detect([record]).kind == "meme"
    assert detect(record).kind == "meme"
    assert detect([{"sample_id": "s1", "qa": []}]).kind == "locomo-list"  # a sample that lost its conversation


MEME_ERRORS: list[tuple[str, Any, str, str]] = [
    ("two dialogue aliases differ",
     [{"id": "e", "turns": [["a", "b"]], "messages": [["c", "d"]]}],
     "records[0] (id 'e')", "fields 'turns', 'messages' all stand for 'dialogues' but differ"),
    ("probe without answer",
     [{"turns": [["a", "b"]], "questions": [{"query": "q?", "solution": "x"}]}],
     "records[0].questions[0]", "no field for answer: answer, gold, target"),
    ("turn maps to nothing",
     {"data": [{"turns": [{"human": "a", "bot": "b"}, {"who": "me", "said": "c"}]}]},
     "data[0].turns[1]", "cannot map this turn"),
    ("unknown role",
     [{"messages": [{"role": "narrator", "content": "x"}]}],
     "records[0].messages[0]", "field 'role' is 'narrator'"),
    ("fact object without value",
     [{"turns": [["a", "b"]], "facts": [{"key": "k", "turn": 0}]}],
     "records[0].facts[0]", "no value field"),
]


@pytest.mark.parametrize(("document", "record", "detail"), [c[1:] for c in MEME_ERRORS],
                         ids=[c[0] for c in MEME_ERRORS])
def test_meme_errors_name_record_and_fields(tmp_path: Path, document: Any, record: str, detail: str) -> None:
    path = _write(tmp_path, document)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {record}: ")
    assert detail in message and "\n" not in message


# --------------------------------------------------------------------------
# Malformed files
# --------------------------------------------------------------------------


MALFORMED: list[tuple[str, str, str]] = [
    ("locomo_missing_conversation.json", "samples[1] (sample_id 'conv-y')", "missing field 'conversation'"),
    ("locomo_session_not_list.json", "samples[0] (sample_id 'conv-z').conversation",
     "field 'session_2' is not a list of utterances (got object)"),
    ("locomo_turn_without_text.json", "top level (sample_id 'conv-t').session_1[1]", "missing field 'text'"),
    ("longmemeval_length_mismatch.json", "questions[1] (question_id 'q2')",
     "field 'haystack_dates' has 2 items but 'haystack_sessions' has 3"),
    ("meme_no_dialogue.json", "data[1] (conversation_id 'bad')",
     ("no dialogue field (one of dialogues, dialogue, dialog, conversation, turns, messages, history, utterances); "
      "could not map keys 'chat_log', 'quiz'")),
]


@pytest.mark.parametrize(("name", "record", "detail"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_fixture_fails_whole_load_naming_file_record_and_field(name: str, record: str, detail: str) -> None:
    path = FIXTURES / name
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {record}: ")
    assert detail in message and "\n" not in message
    # The error does not depend on which records the options would keep.
    with pytest.raises(DatasetError):
        load_dataset(path, limit=1)


def _locomo_sample(**changes: Any) -> dict[str, Any]:
    sample: dict[str, Any] = json.loads(LOCOMO.read_text(encoding="utf-8"))[1]
    sample.update(changes)
    return sample


def _lme_item(**changes: Any) -> dict[str, Any]:
    item: dict[str, Any] = json.loads(LME_S.read_text(encoding="utf-8"))[0]
    item.update(changes)
    return item


INLINE_ERRORS: list[tuple[str, Any, str, str]] = [
    ("locomo answer missing",
     [_locomo_sample(qa=[{"question": "q?", "evidence": [], "category": 4}])],
     "samples[0] (sample_id 'conv-b').qa[0]", "missing field 'answer'"),
    ("locomo category missing",
     [_locomo_sample(qa=[{"question": "q?", "answer": "a"}])],
     "samples[0] (sample_id 'conv-b').qa[0]", "missing field 'category'"),
    ("locomo evidence not a list",
     [_locomo_sample(qa=[{"question": "q?", "answer": "a", "category": 4, "evidence": "D1:1"}])],
     "samples[0] (sample_id 'conv-b').qa[0]", "field 'evidence' is not a list"),
    ("locomo no sessions",
     [_locomo_sample(conversation={"speaker_a": "A", "speaker_b": "B"})],
     "samples[0] (sample_id 'conv-b').conversation", "no 'session_N' field"),
    ("locomo sample not an object",
     [_locomo_sample(), ["not", "a", "sample"]],
     "samples[1]", "expected a sample object, got list"),
    ("lme role",
     [_lme_item(haystack_sessions=[[{"role": "system", "content": "x"}], [], []])],
     "questions[0] (question_id 'e47becba').haystack_sessions[0][0]", "field 'role' is 'system'"),
    ("lme session not a list",
     [_lme_item(haystack_sessions=[[], {"role": "user"}, []])],
     "questions[0] (question_id 'e47becba').haystack_sessions[1]", "expected a list of messages, got object"),
    ("lme question id missing",
     [_lme_item(), {k: v for k, v in _lme_item().items() if k != "question_id"}],
     "questions[1]", "missing field 'question_id'"),
    ("lme content not a string",
     [_lme_item(haystack_sessions=[[{"role": "user", "content": 3}], [], []])],
     "questions[0] (question_id 'e47becba').haystack_sessions[0][0]", "field 'content' is not a string"),
]


@pytest.mark.parametrize(("document", "record", "detail"), [c[1:] for c in INLINE_ERRORS],
                         ids=[c[0] for c in INLINE_ERRORS])
def test_inline_errors_name_record_and_field(tmp_path: Path, document: Any, record: str, detail: str) -> None:
    path = _write(tmp_path, document)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {record}: ")
    assert detail in message and "\n" not in message


def test_filter_that_matches_nothing_names_the_types_present() -> None:
    with pytest.raises(DatasetError, match=r"no probe has a type in \['nope'\]; types in the file: \['lme_"):
        load_dataset(LME_S, question_types={"nope"})


def test_max_turns_is_refused_for_turn_indexed_formats(tmp_path: Path) -> None:
    seed = _write(tmp_path, dataset_to_json(generate_synthetic(n_episodes=1, turns=12, seed=1)), "seed.json")
    for path in (seed, MEME_A):
        with pytest.raises(DatasetError, match="max_turns applies to session-based files"):
            load_dataset(path, max_turns=5)


@pytest.mark.parametrize("options", [{"limit": 0}, {"max_turns": -1}, {"question_types": set()}])
def test_bad_options(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        LoadOptions.of(**options)
    with pytest.raises(TypeError, match="not the string"):
        LoadOptions.of(question_types="knowledge-update")


# --------------------------------------------------------------------------
# Seed files keep their behaviour
# --------------------------------------------------------------------------


def test_seed_options_filter_then_limit(tmp_path: Path) -> None:
    ds = generate_synthetic(n_episodes=3, turns=20, seed=2)
    path = _write(tmp_path, dataset_to_json(ds), "seed.json")
    assert load_dataset(path) == ds
    only = load_dataset(path, question_types={"open_loop"}, limit=2)
    assert [ep.episode_id for ep in only.episodes] == [ep.episode_id for ep in ds.episodes[:2]]
    assert {p.type for ep in only.episodes for p in ep.probes} == {"open_loop"}


def test_seed_json_and_hash_carry_no_new_fields() -> None:
    ds = generate_synthetic(n_episodes=2, turns=12, seed=5)
    text = json.dumps(dataset_to_json(ds))
    for key in ("source_ids", "attachments", "evidence", "asked_at", "distractor", "notes"):
        assert f'"{key}"' not in text


@pytest.mark.parametrize("path", [LOCOMO, LME_S, MEME_B])
def test_benchmark_dataset_round_trips_through_seed_json(tmp_path: Path, path: Path) -> None:
    ds = load_dataset(path)
    again = load_dataset(_write(tmp_path, dataset_to_json(ds), "converted.json"))
    assert again == ds
    assert again.content_hash() == ds.content_hash()


# --------------------------------------------------------------------------
# Detection and inspection
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("fixture", "kind"), [
    (LOCOMO, "locomo-list"), (LOCOMO_SINGLE, "locomo-single"), (LME_S, "longmemeval"),
    (LME_ORACLE, "longmemeval"), (MEME_A, "meme"), (MEME_B, "meme"),
])
def test_detection_is_by_structure_not_name(tmp_path: Path, fixture: Path, kind: str) -> None:
    misleading = tmp_path / ("longmemeval_s.json" if kind.startswith("locomo") else "locomo10.json")
    shutil.copy(fixture, misleading)
    assert inspect_file(misleading).kind == kind
    # Only the episode id of a LoCoMo file without sample_id comes from the file name.
    assert [ep.turns for ep in load_dataset(misleading).episodes] == [ep.turns for ep in load_dataset(fixture).episodes]
    assert kind in FORMATS


INSPECTIONS: list[tuple[Path, str, int, int, dict[str, int], int, tuple[str, ...], tuple[str, ...]]] = [
    # fixture, kind, episodes, turns, probes by type, probes with evidence, unmapped fields, unmapped evidence
    (LOCOMO, "locomo-list", 2, 10,
     {"locomo_cat1": 2, "locomo_cat2": 3, "locomo_cat3": 3, "locomo_cat4": 4, "locomo_cat5": 2}, 13,
     (), ("conv-a:q7: D99:1",)),
    (LOCOMO_SINGLE, "locomo-single", 1, 3, {"locomo_cat2": 1, "locomo_cat4": 1, "locomo_cat5": 1}, 3, (), ()),
    (LME_S, "longmemeval", 4, 18,
     {"lme_abstention": 1, "lme_knowledge-update": 1, "lme_single-session-user": 1, "lme_temporal-reasoning": 1},
     4, (), ()),
    (LME_ORACLE, "longmemeval", 2, 4, {"lme_knowledge-update": 1, "lme_multi-session": 1}, 2, (), ()),
    (MEME_A, "meme", 2, 5, {"constraint": 1, "current_fact": 2, "history_fact": 1}, 3,
     ("episode.topic", "turn.mood"), ()),
    (MEME_B, "meme", 1, 3, {"current_fact": 1, "history_fact": 1, "qa": 1}, 3, (), ("b1:p1: 9",)),
]


@pytest.mark.parametrize(
    ("fixture", "kind", "episodes", "turns", "types", "with_evidence", "unmapped", "lost"),
    INSPECTIONS, ids=[case[0].name for case in INSPECTIONS])
def test_inspect_fixture(fixture: Path, kind: str, episodes: int, turns: int, types: dict[str, int],
                         with_evidence: int, unmapped: tuple[str, ...], lost: tuple[str, ...]) -> None:
    report = inspect_file(fixture)
    assert (report.kind, report.episodes, report.turns) == (kind, episodes, turns)
    assert dict(report.probes_by_type) == types
    assert report.probes_with_evidence == with_evidence
    assert report.unmapped_fields == unmapped
    assert report.unmapped_evidence == lost
    assert report.error is None
    text = report.render()
    assert text.splitlines()[0] == f"{fixture}: {kind}"
    assert f"episodes {episodes}, turns {turns}, probes {sum(types.values())}" in text
    data = json.loads(json.dumps(report.to_dict()))
    assert data["kind"] == kind and data["probes_by_type"] == types and data["unmapped_fields"] == list(unmapped)


def test_inspect_reports_known_fields_not_loaded() -> None:
    assert inspect_file(LOCOMO).ignored_fields == (
        "sample.event_summary", "sample.observation", "sample.session_summary", "utterance.query")
    assert inspect_file(LOCOMO_SINGLE).ignored_fields == ("conversation.events_session_N", "utterance.query")
    assert inspect_file(LOCOMO).evidence_ids == 13


def test_inspect_render_locomo() -> None:
    assert inspect_file(LOCOMO).render() == "\n".join([
        f"{LOCOMO}: locomo-list",
        "  recognised as: a list of 2 LoCoMo samples",
        "  episodes 2, turns 10, probes 14",
        "  probes by type: locomo_cat1 2, locomo_cat2 3, locomo_cat3 3, locomo_cat4 4, locomo_cat5 2",
        "  evidence: 13 of 14 probes name evidence (13 record ids); not mapped: conv-a:q7: D99:1",
        "  fields not mapped: none",
        ("  fields known, not loaded: sample.event_summary, sample.observation, sample.session_summary, "
         "utterance.query"),
        "  notes (1):",
        "    conv-a:q7: evidence 'D99:1' names no turn of the dialogue; kept as given",
    ])


@pytest.mark.parametrize(("name", "kind"), [
    ("locomo_missing_conversation.json", "locomo-list"), ("locomo_session_not_list.json", "locomo-list"),
    ("locomo_turn_without_text.json", "locomo-single"), ("longmemeval_length_mismatch.json", "longmemeval"),
    ("meme_no_dialogue.json", "meme"),
])
def test_inspect_malformed_fixture_describes_the_error(name: str, kind: str) -> None:
    report = inspect_file(FIXTURES / name)
    assert report.kind == kind
    assert report.error is not None and report.error.startswith(f"{FIXTURES / name}: ")
    assert "  error: " in report.render()


def test_inspect_unknown_and_seed(tmp_path: Path) -> None:
    unknown = inspect_file(_write(tmp_path, {"meta": {}, "rows": [1, 2]}))
    assert unknown.kind == "unknown"
    assert "no 'episodes' (seed)" in unknown.reason
    assert unknown.error is not None and "missing field 'episodes'" in unknown.error
    seed = inspect_file(_write(tmp_path, {"version": 2, "episodes": [
        {"episode_id": "e", "notes": "x", "dialogues": [{"user": "u", "agent": "a", "mood": "ok"}],
         "probes": [{"type": "current_fact", "question": "q", "answer": "a", "history_ref": 1}]}]}, "seed.json"))
    assert (seed.kind, seed.episodes, seed.turns, seed.probes) == ("seed", 1, 1, 1)
    assert seed.unmapped_fields == ("episode.notes", "probe.history_ref", "top.version", "turn.mood")


def test_inspect_unreadable_file_raises(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such dataset file"):
        inspect_file(tmp_path / "absent.json")


# --------------------------------------------------------------------------
# End to end
# --------------------------------------------------------------------------


def test_locomo_runs_end_to_end_and_probes_carry_evidence(tmp_path: Path) -> None:
    from ledgermem.evaluation.runner import RunOptions, run
    from ledgermem.ledger.store import Ledger
    from ledgermem.projections.config import MemoryConfig
    from ledgermem.projections.tokens import ESTIMATOR

    ds = load_dataset(LOCOMO)
    result = run(ds, RunOptions(run_id="x", runs_dir=tmp_path, systems=("three_layer", "full_context"),
                                memory=MemoryConfig(tokenizer=ESTIMATOR)))
    assert set(result.metrics) == {"three_layer", "full_context"}
    expected = _evidence(ds)
    with Ledger(result.ledger_path) as ledger:
        asked = [(r.stream.system, r.event.probe_id, r.event.probe_type, r.event.evidence)
                 for r in ledger.read(event_types=["probe_asked"])]
        recorded = {(r.stream.system, r.stream.episode_id, r.event.record_id)
                    for r in ledger.read(event_types=["turn_recorded"])}
    dataset_probes = [a for a in asked if a[1] in expected]
    assert len(dataset_probes) == 2 * 14
    for system, probe_id, probe_type, evidence in dataset_probes:
        assert evidence == expected[probe_id]
        assert probe_type.startswith("locomo_cat")
        episode_id = probe_id.split(":")[0]
        for record_id in evidence:
            if record_id != "D99:1":
                assert (system, episode_id, record_id) in recorded


def test_the_cli_inspects_a_file_and_runs_a_benchmark_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ledgermem.cli.commands import cli

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"
    shown = CliRunner().invoke(cli, ["run", "--inspect", str(fixture / "locomo10_sample.json")])
    assert shown.exit_code == 0 and "locomo-list" in shown.output and "probes by type: locomo_cat1 2" in shown.output
    assert not (Path.cwd() / "runs" / "x").exists()
    bad = CliRunner().invoke(cli, ["run", "--dataset", str(fixture / "locomo_turn_without_text.json"),
                                   "--runs-dir", str(tmp_path)])
    assert bad.exit_code == 1 and "missing field 'text'" in bad.output and not any(tmp_path.iterdir())
    ran = CliRunner().invoke(cli, ["run", "--dataset", str(fixture / "longmemeval_s_sample.json"), "--systems",
                                   "three_layer,full_context", "--question-types", "knowledge-update",
                                   "--run-id", "lme", "--runs-dir", str(tmp_path)], catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    rows = (tmp_path / "lme" / "probe_predictions.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + 2 and all("lme_knowledge-update" in r for r in rows[1:])  # one question, two systems
