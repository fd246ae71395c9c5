"""One erasure decided for every stream of the data subject: given streams, when a request, then a plan."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ledgermem.gate.erasure import (
    PLAINTEXT_COLUMNS,
    Erase,
    StreamToErase,
    answer_key,
    decide_erase,
    index_key,
    merge_key,
    mentioning,
    plan_erasure,
    raw_key,
    seal_key,
    turn_key,
)
from ledgermem.gate.errors import CommandRejected, NothingToErase
from ledgermem.projections.events import (
    EpisodeStarted,
    FactErased,
    IndexCreated,
    ConstraintPinned,
    KeyShredded,
    LlmCalled,
    SummaryCreated,
    ToolCalled,
    TurnRecorded,
)
from ledgermem.ledger.keys import ERASED, FieldKeys
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.scd2 import TABLES, TableSpec
from ledgermem.projections.state import EpisodeState, fold
from ledgermem.projections.tokens import ESTIMATOR

MAIN, COPY = "run/three_layer/alice", "run/full_context/alice"
BASIS = "GDPR Art. 17"
SAID = {1: "I moved to Tromsø last spring", 2: "my cat is called Pixel", 3: "I prefer tea"}


def _turns(turns: tuple[int, ...]) -> list[TurnRecorded]:
    return [TurnRecorded(turn=t, record_id=f"r{t:04d}", text=SAID[t], agent="ok") for t in turns]


def _main(turns: tuple[int, ...] = (1, 2, 3)) -> EpisodeState:
    facts = {1: ("home city", "Tromsø"), 2: ("pet name", "Pixel"), 3: ("drink", "tea")}
    events: list[object] = [EpisodeStarted(config=MemoryConfig(tokenizer=ESTIMATOR).to_dict())]
    for rec in _turns(turns):
        events += [rec, SummaryCreated(turn=rec.turn, summary_id=f"s{rec.turn:04d}", text=rec.text,
                                       facts=(facts[rec.turn],), overrides=(), raw_ids=(rec.record_id,))]
    return fold(events)  # type: ignore[arg-type]


def _copy(turns: tuple[int, ...] = (1, 2, 3)) -> EpisodeState:
    config = MemoryConfig(tokenizer=ESTIMATOR, system="full_context")
    return fold([EpisodeStarted(config=config.to_dict()), *_turns(turns)])


def _sealed(name: str, turns: tuple[int, ...], *extra: tuple[str, str], old: bool = False,
            summaries: bool = False) -> tuple[tuple[str, str], ...]:
    """The stream's sealed values: each record under its raw key (`old`: under its turn key, as a ledger written
    before the raw key did), each summary (`summaries`) under its turn key."""
    record = turn_key if old else raw_key
    said = [(record(name, t), SAID[t]) for t in turns]
    return (*said, *((turn_key(name, t), SAID[t]) for t in turns if summaries), *extra)


def _raw_keys(name: str, turns: tuple[int, ...], old: bool = False) -> dict[int, tuple[str, ...]]:
    return {t: ((turn_key if old else raw_key)(name, t),) for t in turns}


def streams(copy_turns: tuple[int, ...] = (1, 2, 3), *, old: bool = False) -> list[StreamToErase]:
    """The three_layer stream and one baseline's copy; the copy answered a probe mentioning the city."""
    return [
        StreamToErase(name=MAIN, state=_main(), sealed=_sealed(MAIN, (1, 2, 3), old=old, summaries=True),
                      raw_keys=_raw_keys(MAIN, (1, 2, 3), old)),
        StreamToErase(name=COPY, state=_copy(copy_turns), sealed=_sealed(
            COPY, copy_turns, (answer_key(COPY, 9), "You live in Tromsø."), (answer_key(COPY, 10), "Tea."), old=old),
            raw_keys=_raw_keys(COPY, copy_turns, old)),
    ]


def shredded(plan_events: tuple[object, ...]) -> KeyShredded:
    return next(e for e in plan_events if isinstance(e, KeyShredded))


def test_a_slot_is_erased_from_every_stream_in_one_plan_copies_first() -> None:
    plan = plan_erasure(Erase(legal_basis=BASIS, key_prefix=MAIN, slot="home city"), streams(), in_run=True)
    assert [p.name for p in plan.parts] == [COPY, MAIN]  # the subject's own stream goes last
    main, copy = shredded(plan.events_of(MAIN)), shredded(plan.events_of(COPY))
    assert main.key_ids == (raw_key(MAIN, 1), turn_key(MAIN, 1))  # both keys of the turn: no plaintext survives
    # The copy extracted no facts: it loses what mentions the value its three_layer stream names.
    assert copy.key_ids == tuple(sorted((raw_key(COPY, 1), turn_key(COPY, 1), answer_key(COPY, 9))))
    assert not [e for e in plan.events_of(COPY) if isinstance(e, FactErased)]
    assert [(e.summary_id, e.slot) for e in plan.events_of(MAIN) if isinstance(e, FactErased)] == [
        ("s0001", "home city")]
    assert plan.values == {"Tromsø"}
    assert plan.keys == (*copy.key_ids, *main.key_ids)  # every stream's keys, destroyed at once


def test_the_subjects_own_part_is_what_the_decider_says_for_that_stream() -> None:
    # Control against a second policy creeping in: the plan's part is `decide_erase` with the keys found.
    given = streams()
    request = Erase(legal_basis=BASIS, key_prefix=MAIN, record_id="r0002")
    plan = plan_erasure(request, given)
    found = mentioning(given[0].sealed, {"Pixel", SAID[2]})
    assert plan.events_of(MAIN) == decide_erase(given[0].state, replace(request, mentions=found))


def test_gold_values_the_request_covers_are_looked_for_in_the_copies() -> None:
    request = Erase(legal_basis=BASIS, key_prefix=MAIN, slot="drink")
    without = plan_erasure(request, streams(), in_run=True)
    assert shredded(without.events_of(COPY)).key_ids == (answer_key(COPY, 10), raw_key(COPY, 3), turn_key(COPY, 3))
    assert "Tea" not in without.values
    plan = plan_erasure(request, streams(), gold={"tea", "Tromsø"}, in_run=True)
    assert answer_key(COPY, 9) in shredded(plan.events_of(COPY)).key_ids
    assert {"tea", "Tromsø"} <= plan.values


def test_a_copy_that_never_held_the_record_is_left_alone() -> None:
    plan = plan_erasure(Erase(legal_basis=BASIS, key_prefix=MAIN, record_id="r0003"), streams(copy_turns=(1, 2)),
                        in_run=True)
    assert [p.name for p in plan.parts] == [MAIN]
    assert plan.events_of(COPY) == ()


def test_a_bad_request_is_refused_before_any_stream_is_planned() -> None:
    with pytest.raises(CommandRejected, match="no raw record"):
        plan_erasure(Erase(legal_basis=BASIS, key_prefix=MAIN, record_id="r0099"), streams(), in_run=True)
    with pytest.raises(CommandRejected, match="legal basis"):
        plan_erasure(Erase(legal_basis=" ", key_prefix=MAIN, slot="home city"), streams(), in_run=True)
    with pytest.raises(NothingToErase):
        plan_erasure(Erase(legal_basis=BASIS, key_prefix=MAIN, slot="shoe size"), streams(), in_run=True)


def test_a_request_carried_out_before_finishes_in_a_run_and_is_refused_on_one_stream() -> None:
    given = streams()
    request = Erase(legal_basis=BASIS, key_prefix=MAIN, slot="home city")
    first = plan_erasure(request, given, in_run=True)
    main_after = fold(list(first.events_of(MAIN)), given[0].state)
    # The main stream was erased, the copy not (an interrupted call): the repeat finishes the copy.
    gone = set(shredded(first.events_of(MAIN)).key_ids)
    sealed = tuple((k, ERASED if k in gone else text) for k, text in given[0].sealed)  # read after the shred
    again = [replace(given[0], state=main_after, sealed=sealed), given[1]]
    plan = plan_erasure(request, again, gold={"Tromsø"}, in_run=True)
    assert [p.name for p in plan.parts] == [COPY]
    assert set(plan.pending) == gone  # destroyed again if still there
    with pytest.raises(NothingToErase):
        plan_erasure(request, again[:1])  # a memory on its own: nothing left to erase


def test_a_value_is_looked_for_in_each_stream_and_nothing_anywhere_is_an_empty_plan_in_a_run() -> None:
    plan = plan_erasure(Erase(legal_basis=BASIS, key_prefix=MAIN, value="tromsø"), streams(), in_run=True)
    assert [p.name for p in plan.parts] == [COPY, MAIN]
    assert shredded(plan.events_of(COPY)).key_ids == tuple(sorted((answer_key(COPY, 9), raw_key(COPY, 1),
                                                                    turn_key(COPY, 1))))
    assert "tromsø" in plan.values and "Tromsø" in plan.values
    empty = plan_erasure(Erase(legal_basis=BASIS, key_prefix=MAIN, value="Narvik"), streams(), in_run=True)
    assert empty.parts == () and empty.keys == ()
    with pytest.raises(NothingToErase):
        plan_erasure(Erase(legal_basis=BASIS, key_prefix=MAIN, value="Narvik"), streams()[:1])


def test_an_episode_recorded_in_clear_is_refused() -> None:
    clear = fold([EpisodeStarted(config=MemoryConfig(tokenizer=ESTIMATOR, personal_data=False).to_dict())])
    with pytest.raises(CommandRejected, match="no personal data"):
        plan_erasure(Erase(legal_basis=BASIS, key_prefix=MAIN, subject=True),
                     [StreamToErase(name=MAIN, state=clear)])


def test_the_key_that_seals_an_event() -> None:
    rec = _turns((2,))[0]
    title = IndexCreated(turn=4, index_id="i0001", text="t", members=("s0001",))
    merged = SummaryCreated(turn=5, summary_id="s0009", text="t", facts=(), overrides=(), raw_ids=(),
                            merged_from=("s0001", "s0002"))
    assert seal_key(MAIN, rec) == raw_key(MAIN, 2)  # the raw text of the turn: its own key
    reply = LlmCalled(turn=2, purpose="respond", backend="b", model="m", prompt_hash="h", text="Noted.")
    tool = ToolCalled(turn=2, probe_id="", tool="get_raw_record", args={"reference_id": "r0001"}, ok=True, text="x")
    assert seal_key(MAIN, reply) == seal_key(MAIN, tool) == raw_key(MAIN, 2)
    # What memory derives from the turn stays under the turn key: a raw expiry keeps it.
    summarizer = replace(reply, purpose="summarize")
    summary = SummaryCreated(turn=2, summary_id="s0002", text="t", facts=(), overrides=(), raw_ids=("r0002",))
    pin = ConstraintPinned(turn=2, pin_id="p1", kind="constraint", text="t", origin="declared")
    assert seal_key(MAIN, summarizer) == seal_key(MAIN, summary) == seal_key(MAIN, pin) == turn_key(MAIN, 2)
    assert seal_key(MAIN, title) == index_key(MAIN, "i0001")
    assert seal_key(MAIN, merged) == merge_key(MAIN, "s0009")
    assert seal_key(MAIN, rec, personal_data=False) is None


def test_an_old_ledgers_records_are_erased_by_the_key_the_ledger_shows_sealed_them() -> None:
    # Written before the raw key: the records are sealed under the turn key, and the plan names no other key.
    plan = plan_erasure(Erase(legal_basis=BASIS, key_prefix=MAIN, slot="home city"), streams(old=True), in_run=True)
    assert shredded(plan.events_of(MAIN)).key_ids == (turn_key(MAIN, 1),)
    assert shredded(plan.events_of(COPY)).key_ids == tuple(sorted((turn_key(COPY, 1), answer_key(COPY, 9))))
    by_value = plan_erasure(Erase(legal_basis=BASIS, key_prefix=MAIN, value="Pixel"), streams(old=True))
    assert shredded(by_value.events_of(MAIN)).key_ids == (turn_key(MAIN, 2),)


def test_a_turn_the_decision_is_not_told_about_has_both_its_keys_named() -> None:
    state = _main()
    events = decide_erase(state, Erase(legal_basis=BASIS, key_prefix=MAIN, record_id="r0003"))
    assert shredded(events).key_ids == (raw_key(MAIN, 3), turn_key(MAIN, 3))
    told = decide_erase(state, Erase(legal_basis=BASIS, key_prefix=MAIN, record_id="r0003",
                                     raw_keys={3: (turn_key(MAIN, 3),)}))
    assert shredded(told).key_ids == (turn_key(MAIN, 3),)


def test_a_shredded_key_is_never_made_again() -> None:
    from ledgermem.gate.erasure import without_shredded

    keys = FieldKeys("a", {"gold": "t1", "facts": ("t1", "t2", None)})
    assert without_shredded(keys, {"t1"}) == FieldKeys("a", {"facts": (None, "t2", None)})
    assert without_shredded(keys, set()) == keys


# -- where the residue scan looks in the projection tables ------------------------------------


def _unknown_columns(tables: tuple[TableSpec, ...]) -> list[str]:
    """Columns `PLAINTEXT_COLUMNS` names that the tables do not have as text (or as facts)."""
    text = {(t.name, name) for t in tables for name, kind in t.attrs
            if kind == "VARCHAR" or (kind.startswith("STRUCT(") and kind.endswith(")[]"))}  # DuckDB type names
    return [f"{table}.{c}" for table, cols in PLAINTEXT_COLUMNS.items() for c in cols if (table, c) not in text]


def test_the_scanned_columns_are_text_columns_of_the_projection_tables() -> None:
    assert _unknown_columns(TABLES) == []
    # Control: a table whose text column was renamed leaves the scan reading a column that is gone.
    renamed = tuple(replace(t, attrs=tuple(("body" if n == "title" else n, k) for n, k in t.attrs))
                    for t in TABLES)
    assert _unknown_columns(renamed) == ["index_versions.title"]
