"""The events table schema, the event codec and the canonical JSON spelling."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from ledgermem.ledger.errors import EventDecodeError, InvalidEvent, LedgerError, MalformedEvent, UnknownEventType
from ledgermem.ledger.events import EVENT_TYPES, TYPED_COLUMNS, Event
from ledgermem.projections.events import (
    CapacityMerged,
    CompactionChecked,
    ConstraintPinned,
    ConstraintReinjected,
    ContextRendered,
    EpisodeGold,
    EpisodeStarted,
    FactErased,
    FactExpired,
    IndexCreated,
    IndexFolded,
    KeyShredded,
    LlmCalled,
    MEMORY_EVENTS,
    MergeRejected,
    OverrideRejected,
    PagedIn,
    ProbeAsked,
    ProbeJudged,
    RetentionApplied,
    SlotAliasSuspected,
    SummaryArchived,
    SummaryCreated,
    SummaryOverridden,
    SummaryRejected,
    SummarySkipped,
    ToolCalled,
    TurnRecorded,
    WindowEvicted,
)
from ledgermem.evaluation.events import (
    HARNESS_EVENTS,
    BaselineDropped,
    BaselineWritten,
    ProbeAnswered,
    RunFinished,
    RunStarted,
)
from ledgermem.ledger.schema import (
    UPCASTERS,
    canonical_json,
    decode,
    encode,
    events_arrow_schema,
    events_ddl,
)

GOLDEN = Path(__file__).parent / "golden" / "events_schema.txt"
REGEN_ENV = "LEDGERMEM_REGEN_GOLDEN"

#: One realistic instance of every event type the memory and the harness declare. Shared with the store
#: contract tests, which append them and read them back.
SAMPLE_EVENTS: tuple[Event, ...] = (
    RunStarted(
        occurred_at="2024-05-01T09:00:00Z",
        systems=("ledgermem", "full_context"),
        config={"budget": 1024, "strategy": "index", "langs": ["en", "zh"], "judge": None},
        versions={"ledgermem": "0.1.0", "duckdb": "1.1.3"},
        dataset={"name": "synthetic", "seed": 7, "episodes": 20},
    ),
    RunFinished(
        metrics={
            "ledgermem": {"accuracy": 0.85, "probes": 40, "by_type": {"current_value": 0.9}},
            "full_context": {"accuracy": 0.5, "probes": 40, "by_type": {}},
        },
    ),
    EpisodeStarted(config={"window": 4, "budget": 1024, "summary_every": 2}, lang="zh"),
    TurnRecorded(
        turn=3,
        occurred_at="2024-05-01T09:03:00+08:00",
        record_id="r-0003",
        text="我的办公室现在在十二楼。🙂",
        agent="好的，我记住了：办公室在十二楼。",
        source=None,
    ),
    LlmCalled(
        turn=3,
        purpose="summarise",
        backend="openai",
        model="gpt-4o-mini",
        prompt_hash="9f2c4e1ab07d3c55",
        text="SUMMARY: 用户的办公室在十二楼\nFACTS: office floor=12F\nOVERRIDES: s-0001",
        usage={"prompt_tokens": 812, "completion_tokens": 64},
        latency_ms=431.5,
        retries=1,
        error=None,
        probe_id=None,
    ),
    SummaryCreated(
        turn=3,
        summary_id="s-0002",
        text="用户的办公室在十二楼（原来在七楼）",
        facts=(("office floor", "12F"), ("home city", "Lisbon")),
        overrides=("s-0001",),
        raw_ids=("r-0002", "r-0003"),
        truncated=False,
        renamed_slots=(("floor of my office", "office floor"),),
    ),
    SummaryOverridden(turn=3, summary_id="s-0001", superseded_by=("s-0002",)),
    OverrideRejected(turn=4, summary_id=None, rejected=("s-0009", "s-0010"), reason="unknown summary id"),
    SummaryRejected(turn=4, purpose="summarize", attempt=2, reasons=("markup", "unknown_id")),
    SummarySkipped(turn=4, record_id="r-0004", attempts=2, reasons=("markup", "unknown_id", "repetition")),
    IndexCreated(
        turn=8,
        index_id="i-0001",
        members=("s-0001", "s-0002", "s-0003"),
        text="turn 1-8: office move, travel plans",
        span="turn 1-8",
        level=2,
        tokens_before=900,
        tokens_after=120,
    ),
    WindowEvicted(turn=5, record_id="r-0001"),
    ContextRendered(
        turn=9,
        purpose="answer",
        item_ids=("i-0001", "s-0004", "r-0008"),
        parts={"index": 120, "summaries": 300, "window": 210, "limits": {"budget": 1024}},
        budget=1024,
        tokens=630,
        probe_id="p-01",
    ),
    BaselineWritten(turn=9, summary_id="m0002", text="Rolling summary of turns 1-5.",
                    facts=(("office floor", "12F"),), raw_ids=("r-0004", "r-0005")),
    BaselineDropped(turn=9, dropped=("m0001", "r-0004"), reason="rolled"),
    EpisodeGold(facts=(("office floor", "3F"), ("office floor", "12F")), fact_turns=(2, 7), source="synthetic",
                evidence=("r-0002", "r-0007")),
    ProbeAsked(
        turn=10,
        probe_id="p-01",
        probe_type="current_value",
        slot=None,
        text="我的办公室在几楼？",
        gold="12F",
        evidence=("r-0007",),
    ),
    ToolCalled(
        turn=10,
        probe_id="p-01",
        tool="get_summary",
        args={"id": "s-0002"},
        ok=False,
        text="error: no summary with id s-0002 in the archive",
        parsed=False,
    ),
    ProbeAnswered(turn=10, probe_id="p-01", text="十二楼 (12F)", tool_calls=1, llm_calls=2),
    ProbeJudged(turn=10, probe_id="p-01", correct=True, method="exact", value="12F"),
    FactErased(turn=11, summary_id="s-0001", slot="居住城市", legal_basis="GDPR Art. 17", collateral=True),
    SlotAliasSuspected(turn=11, summary_id="s-0002", slot="咖啡", existing="咖啡口味", rule="generic affix"),
    KeyShredded(turn=11, key_ids=("r/s/e#turn:1", "r/s/e#index:i-0001"), legal_basis="GDPR Art. 17",
                request="slot '居住城市' (every value)", records=("r-0001",), summaries=("s-0001",),
                indexes=("i-0001",)),
    IndexFolded(turn=12, index_id="i-0003", members=("i-0001", "i-0002"), text="INDEX turn 1-16: 2 titles",
                span="turn 1-16", level=2, tokens_before=300, tokens_after=240),
    SummaryArchived(turn=12, summary_id="s-0004", reason="merged", superseded_by=("s-0009",)),
    CapacityMerged(turn=12, summary_id="s-0009", merged_from=("s-0004", "s-0005"), tokens_before=400,
                   tokens_after=310),
    MergeRejected(turn=13, merged_from=("s-0006", "s-0007"), reason="shrinks the chain by 4.0%, under the minimum 15%",
                  tokens_before=400, tokens_after=384),
    CompactionChecked(turn=13, strategy="index", created=2, rejected=0, stopped="under low water",
                      tokens_before=420, tokens_after=230, constraints_checked=3, constraints_missing=("p-0002",),
                      open_loops_before=1, open_loops_after=1),
    ConstraintPinned(turn=2, pin_id="p-0001", kind="constraint", text="预算上限是500元。这是硬性约束。",
                     origin="detected", record_id="r-0002", anchors=("预算上限", "500元")),
    ConstraintReinjected(turn=13, pin_id="p-0002", reason="not in the rendered prompt after compaction"),
    PagedIn(turn=14, until_turn=17, summary_id="s-0001"),
    FactExpired(turn=15, summary_id="s-0001", slot="居住城市", rule="fact_ttl",
                policy={"namespace": "acme", "raw_turns": None, "fact_ttl_seconds": 86400},
                stated_at="2026-11-01T09:00:00Z", applied_at="2026-11-02T09:00:01Z"),
    RetentionApplied(turn=15, policy={"namespace": "acme", "raw_turns": 2, "fact_ttl_seconds": None},
                     applied_at="2026-11-02T09:00:01Z", key_ids=("r/s/e#turn:1",), turns=(1,), rules=("raw_turns",),
                     records=("r-0001",), summaries=("s-0001",), facts=1, kept_pinned=(2,)),
)


def _golden_text() -> str:
    return f"{events_arrow_schema()}\n\n{events_ddl()}\n"


# --- golden schema ----------------------------------------------------------------


def test_schema_matches_golden_file() -> None:
    actual = _golden_text()
    if os.environ.get(REGEN_ENV) == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(actual, encoding="utf-8")
        pytest.fail(f"{GOLDEN} regenerated, re-run without the flag ({REGEN_ENV}=1)")
    assert GOLDEN.exists(), f"{GOLDEN} is missing; create it with {REGEN_ENV}=1"
    expected = GOLDEN.read_text(encoding="utf-8")
    assert actual == expected, (
        f"the events table schema differs from {GOLDEN}; if the change is intended, "
        f"regenerate it with {REGEN_ENV}=1 and review the diff"
    )


def test_schema_column_order_is_envelope_typed_trailer() -> None:
    names = events_arrow_schema().names
    assert names[:2] == ["seq", "event_id"]
    assert names[-3:] == ["payload", "prev_hash", "hash"]
    typed = [n for n in names if n in TYPED_COLUMNS]
    assert typed == list(TYPED_COLUMNS)
    assert len(names) == len(set(names))


def test_ddl_has_no_primary_key_and_required_envelope() -> None:
    ddl = events_ddl()
    assert ddl.startswith("CREATE TABLE IF NOT EXISTS events (")
    assert "PRIMARY KEY" not in ddl.upper()
    assert "  seq BIGINT NOT NULL," in ddl
    assert "  ids VARCHAR[]," in ddl
    assert events_ddl("other").startswith("CREATE TABLE IF NOT EXISTS other (")


# --- codec round trip ----------------------------------------------------------------


def test_samples_cover_every_event_type() -> None:
    declared = {c.event_type for c in (*MEMORY_EVENTS, *HARNESS_EVENTS)}
    assert sorted(type(e).event_type for e in SAMPLE_EVENTS) == sorted(declared)
    assert declared <= set(EVENT_TYPES)


@pytest.mark.parametrize("event", SAMPLE_EVENTS, ids=lambda e: type(e).event_type)
def test_encode_decode_round_trip(event: Event) -> None:
    enc = encode(event)
    assert enc.event_type == type(event).event_type
    assert enc.schema_version == type(event).schema_version
    assert set(enc.columns) == set(TYPED_COLUMNS)
    decoded = decode(17, enc.event_type, enc.schema_version, dict(enc.columns), enc.payload)
    assert type(decoded) is type(event)
    assert decoded == event


@pytest.mark.parametrize("event", SAMPLE_EVENTS, ids=lambda e: type(e).event_type)
def test_encoded_payload_is_canonical_and_excludes_typed_columns(event: Event) -> None:
    enc = encode(event)
    body = json.loads(enc.payload)
    assert canonical_json(body) == enc.payload
    ids_field = type(event).IDS
    for name in body:
        assert name not in TYPED_COLUMNS
        assert name != ids_field


def test_encode_splits_fields_into_columns_and_payload() -> None:
    summary = next(e for e in SAMPLE_EVENTS if isinstance(e, SummaryCreated))
    enc = encode(summary)
    assert enc.columns["summary_id"] == "s-0002"
    assert enc.columns["ids"] == ["r-0002", "r-0003"]  # the IDS field goes to the list column
    assert enc.columns["turn"] == 3
    assert enc.columns["record_id"] is None
    body = json.loads(enc.payload)
    assert body == {
        "facts": [["office floor", "12F"], ["home city", "Lisbon"]],
        "inferences": [],
        "merged_from": [],
        "overrides": ["s-0001"],
        "renamed_slots": [["floor of my office", "office floor"]],
        "truncated": False,
        "written_by": "summarizer",
    }
    # Unicode is stored as itself, not as \u escapes.
    turn = next(e for e in SAMPLE_EVENTS if isinstance(e, TurnRecorded))
    enc_turn = encode(turn)
    assert "好的" in enc_turn.payload
    assert "\\u" not in enc_turn.payload
    assert enc_turn.columns["text"] == "我的办公室现在在十二楼。🙂"


def test_decode_restores_nested_tuples() -> None:
    summary = next(e for e in SAMPLE_EVENTS if isinstance(e, SummaryCreated))
    enc = encode(summary)
    decoded = decode(1, enc.event_type, enc.schema_version, dict(enc.columns), enc.payload)
    assert isinstance(decoded, SummaryCreated)
    assert decoded.facts == (("office floor", "12F"), ("home city", "Lisbon"))
    assert all(isinstance(f, tuple) for f in decoded.facts)
    assert isinstance(decoded.raw_ids, tuple)
    assert isinstance(decoded.overrides, tuple)


def test_decode_applies_defaults_for_fields_missing_from_payload() -> None:
    enc = encode(LlmCalled(purpose="answer", backend="stub", model="m", prompt_hash="h", text="ok"))
    body = json.loads(enc.payload)
    for name in ("usage", "retries", "error"):
        del body[name]
    decoded = decode(3, enc.event_type, enc.schema_version, dict(enc.columns), canonical_json(body))
    assert decoded == LlmCalled(purpose="answer", backend="stub", model="m", prompt_hash="h", text="ok")


def test_episode_gold_written_before_evidence_existed_decodes_with_none() -> None:
    enc = encode(EpisodeGold(facts=(("office floor", "3F"),), fact_turns=(2,), evidence=("r0002",)))
    body = json.loads(enc.payload)
    del body["evidence"]
    decoded = decode(4, enc.event_type, enc.schema_version, dict(enc.columns), canonical_json(body))
    assert decoded == EpisodeGold(facts=(("office floor", "3F"),), fact_turns=(2,))
    assert decoded.evidence == ()


# --- decode errors ----------------------------------------------------------------------


def test_decode_unknown_event_type_names_the_seq() -> None:
    with pytest.raises(UnknownEventType) as info:
        decode(4711, "memory_exploded", 1, {}, "{}")
    assert info.value.seq == 4711
    assert "seq 4711" in str(info.value)
    assert "memory_exploded" in str(info.value)
    assert isinstance(info.value, EventDecodeError)
    assert isinstance(info.value, LedgerError)


@pytest.mark.parametrize("payload", ["{not json", "", '{"agent": "a"'], ids=["garbage", "empty", "truncated"])
def test_decode_non_json_payload_is_malformed_and_names_the_seq(payload: str) -> None:
    enc = encode(TurnRecorded(record_id="r-1", text="hi", agent="hello"))
    with pytest.raises(MalformedEvent) as info:
        decode(99, enc.event_type, enc.schema_version, dict(enc.columns), payload)
    assert info.value.seq == 99
    assert "seq 99" in str(info.value)
    assert "not JSON" in str(info.value)


def test_decode_non_object_payload_is_malformed() -> None:
    enc = encode(TurnRecorded(record_id="r-1", text="hi", agent="hello"))
    with pytest.raises(MalformedEvent, match=r"^seq 5: .*expected an object"):
        decode(5, enc.event_type, enc.schema_version, dict(enc.columns), "[1, 2]")


def test_decode_payload_missing_required_field_is_malformed() -> None:
    enc = encode(TurnRecorded(record_id="r-1", text="hi", agent="hello"))
    with pytest.raises(MalformedEvent, match=r"^seq 6: turn_recorded does not fit its schema"):
        decode(6, enc.event_type, enc.schema_version, dict(enc.columns), "{}")


def test_decode_newer_schema_version_is_malformed() -> None:
    enc = encode(TurnRecorded(record_id="r-1", text="hi", agent="hello"))
    newer = TurnRecorded.schema_version + 1
    with pytest.raises(MalformedEvent) as info:
        decode(12, enc.event_type, newer, dict(enc.columns), enc.payload)
    assert info.value.seq == 12
    message = str(info.value)
    assert message.startswith("seq 12: ")
    assert f"schema_version {newer}" in message
    assert "newer than this code" in message


def test_decode_upcasts_older_payloads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A payload written at an older schema version is upgraded before it is decoded."""
    monkeypatch.setattr(TurnRecorded, "schema_version", 2)
    monkeypatch.setitem(UPCASTERS, ("turn_recorded", 1), lambda body: {**body, "agent": body.pop("reply")})
    columns = dict(encode(WindowEvicted(record_id="r-7")).columns)
    columns["text"] = "old text"
    event = decode(8, "turn_recorded", 1, columns, canonical_json({"reply": "old reply", "source": None}))
    assert event == TurnRecorded(record_id="r-7", text="old text", agent="old reply", source=None)


# --- encode errors -------------------------------------------------------------------


def test_encode_refuses_an_unregistered_event_class() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Stray(Event):
        event_type = "turn_recorded"  # claims a registered name, but is not that class
        note: str = ""

    with pytest.raises(InvalidEvent, match="Stray is not a registered event type"):
        encode(Stray(note="x"))


def test_encode_refuses_a_payload_that_is_not_json() -> None:
    with pytest.raises(InvalidEvent, match=r"^run_finished: a field cannot be stored as JSON"):
        encode(RunFinished(metrics={"when": object()}))


# --- canonical JSON ------------------------------------------------------------------


def test_canonical_json_sorted_compact_and_unicode() -> None:
    value = {"b": 1, "a": [1, "é", {"d": None, "c": "中文"}], "A": True}
    assert canonical_json(value) == '{"A":true,"a":[1,"é",{"c":"中文","d":null}],"b":1}'


def test_canonical_json_is_independent_of_insertion_order() -> None:
    one = {"slot": "office floor", "value": "12F", "nested": {"z": 1, "y": [2, 3]}}
    two = {"nested": {"y": [2, 3], "z": 1}, "value": "12F", "slot": "office floor"}
    assert canonical_json(one) == canonical_json(two)
    assert " " not in canonical_json({"k": [1, 2], "m": {"n": 3}})
    assert canonical_json("🙂") == '"🙂"'
