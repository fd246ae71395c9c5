"""The fold's shortcuts give `evolve`'s state: its step table, its slot writers, and the projector's turn draft.

`evolve` finds its step by the event's class (`step_of`); it copies the
state by writing slots (`_slot_writer`); the projector's `replay` applies
turns and evictions in place (`TurnDraft`) and makes the state only when
another kind of event comes and when it returns. Each is compared here with
what it stands for, on any sequence `evolve` accepts and on the golden
cases, wherever a replay may end; and each check has a broken variant it
must catch.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledgermem.ledger.events import Event
from ledgermem.projections import state as state_module
from ledgermem.projections.errors import EvolveError
from ledgermem.projections.events import (
    EpisodeStarted,
    LlmCalled,
    PagedIn,
    SummaryArchived,
    TurnRecorded,
    WindowEvicted,
)
from ledgermem.projections.scd2 import Projector
from ledgermem.projections.state import (
    EpisodeEvent,
    EpisodeState,
    RawRecord,
    TurnDraft,
    changes_nothing,
    evolve,
    fold,
    step_of,
)
from tests.projections import golden
from tests.projections.test_event_sequences import CONFIG, STREAM, recorded, sequences


def _states_read_at(events: list[EpisodeEvent], reads: set[int]) -> list[tuple[int, EpisodeState, EpisodeState]]:
    """(seq, the projector's state, `evolve`'s) after every event whose index is in `reads`, and after the last.

    The events are replayed in runs that end there (a draft spans each run),
    and applied one by one to a second projector (a state per event): both
    states are checked against the fold.
    """
    rec = recorded(events)
    replayed, applied = Projector(STREAM.as_tuple(), keep_history=True), Projector(STREAM.as_tuple())
    expected = EpisodeState()
    out = []
    bounds = sorted({0, len(rec), *(i + 1 for i in reads if i < len(rec))})
    for lo, hi in itertools.pairwise(bounds):
        replayed.replay(rec[lo:hi])
        for r in rec[lo:hi]:
            applied.apply(r.seq, r.event)  # type: ignore[arg-type]
            expected = evolve(expected, r.event)
        assert applied.state == expected, f"applied one by one, the state as of seq {rec[hi - 1].seq} is not the fold"
        assert replayed.last_seq == applied.last_seq == rec[hi - 1].seq
        out.append((rec[hi - 1].seq, replayed.state, expected))
    return out


@given(events=sequences(family="lenient"), data=st.data())
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_the_projector_state_is_the_fold_whenever_it_is_read(events: list[EpisodeEvent], data: st.DataObject) -> None:
    reads = data.draw(st.sets(st.integers(0, max(len(events) - 1, 0))))
    for seq, got, expected in _states_read_at(events, reads):
        assert got == expected, f"the projector's state as of seq {seq} is not the fold"


@pytest.mark.parametrize("case", golden.cases())
def test_the_projector_state_is_the_fold_on_every_golden_case(case: str) -> None:
    streams: dict[Any, list[EpisodeEvent]] = {}
    for stream, event in golden.load_events(golden.events_path(case)):
        if stream.episode_id:
            streams.setdefault(stream, []).append(event)  # type: ignore[arg-type]
    assert streams
    for events in streams.values():
        every = set(range(len(events)))
        for reads in (set(), every):  # a draft as long as the stream allows, and one per event
            for seq, got, expected in _states_read_at(events, reads):
                assert got == expected, (case, seq)


def _turns(n: int) -> list[EpisodeEvent]:
    events: list[EpisodeEvent] = [EpisodeStarted(config=CONFIG)]
    for turn in range(1, n + 1):
        events.append(TurnRecorded(turn=turn, record_id=f"r{turn:04d}", text=f"user {turn}", agent="ok"))
        if turn > 2:
            events.append(WindowEvicted(turn=turn, record_id=f"r{turn - 2:04d}"))
    return events


def test_a_replay_leaves_no_earlier_state_changed() -> None:
    events = _turns(5)
    rec = recorded(events)
    p = Projector(STREAM.as_tuple())
    p.replay(rec[:3])
    early = p.state
    as_it_was = (dict(early.raw), early.window, early.turn)
    p.replay(rec[3:])
    assert p.state == fold(events)
    assert (dict(early.raw), early.window, early.turn) == as_it_was  # the next draft copied what it changed


def test_a_replay_that_fails_leaves_the_state_of_the_events_before() -> None:
    events = [*_turns(3), SummaryArchived(turn=3, summary_id="s0404", reason="capacity", superseded_by=())]
    p = Projector(STREAM.as_tuple(), keep_history=True)
    with pytest.raises(EvolveError, match="s0404"):
        p.replay(recorded(events))
    assert p.state == fold(events[:-1]) and p.last_seq == len(events) - 1


def test_a_turn_that_ends_a_page_in_goes_through_evolve() -> None:
    events = _turns(2)
    events += [PagedIn(turn=2, until_turn=3, record_id="r0001"),
               TurnRecorded(turn=3, record_id="r0003", text="later", agent="ok")]
    for reads in (set(), {1, 3}):
        states = _states_read_at(events, reads)
        assert all(got == expected for _, got, expected in states)
        assert states[-1][1].paged_in == {} and "r0003" in states[-1][1].raw


def test_control_a_draft_that_forgets_an_eviction_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    events = _turns(4)
    assert [(s, g == e) for s, g, e in _states_read_at(events, set())][-1][1]
    monkeypatch.setattr(TurnDraft, "evict", lambda self, record_id: None)
    (seq, got, expected), = _states_read_at(events, set())
    assert got != expected and got.window != expected.window


def test_control_a_draft_that_drops_a_turns_record_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = TurnDraft.record

    def forgetful(self: TurnDraft, event: TurnRecorded) -> RawRecord | None:
        rec = real(self, event)
        if event.turn == 2:
            del self.raw[event.record_id]
        return rec

    monkeypatch.setattr(TurnDraft, "record", forgetful)
    (seq, got, expected), = _states_read_at(_turns(3), set())
    assert "r0002" in expected.raw and "r0002" not in got.raw


# --- evolve's step table -------------------------------------------------------------------------------


@given(events=sequences(family="lenient"))
def test_step_of_is_what_evolve_applies(events: list[EpisodeEvent]) -> None:
    s = EpisodeState()
    for e in events:
        after = step_of(type(e))(s, e)
        assert after == evolve(s, e)
        assert (after is s) or not changes_nothing(type(e))
        s = after


def test_a_subclass_takes_its_base_step_and_a_foreign_event_changes_nothing() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class LoudTurn(TurnRecorded):
        pass

    class Foreign(Event):
        pass

    s = evolve(EpisodeState(), EpisodeStarted(config=CONFIG))
    loud = LoudTurn(turn=1, record_id="r0001", text="hi", agent="ok")
    assert step_of(LoudTurn) is step_of(TurnRecorded)
    assert evolve(s, loud).raw["r0001"].user == "hi"
    assert changes_nothing(Foreign) and changes_nothing(LlmCalled) and not changes_nothing(TurnRecorded)


def test_control_a_step_table_missing_an_event_class_is_refused() -> None:
    state_module._check_steps(state_module._STEPS)
    missing = {k: v for k, v in state_module._STEPS.items() if k is not WindowEvicted}
    with pytest.raises(TypeError, match="WindowEvicted"):
        state_module._check_steps(missing)
    with pytest.raises(TypeError, match="int"):
        state_module._check_steps({**state_module._STEPS, int: object()})


# --- slot writers ----------------------------------------------------------------------------------------


def test_a_slot_writer_makes_what_the_constructor_and_replace_make() -> None:
    make = state_module._slot_writer(RawRecord, state_module._RAW_FIELDS, copied=False)
    values = ("r0001", 3, None, "u", "a", "chat", False, ({"kind": "image"},))
    built = make(*values)
    assert built == RawRecord(**dict(zip(state_module._RAW_FIELDS, values)))
    base = fold(_turns(3))
    copy = state_module._slot_writer(EpisodeState, ("turn", "window"), copied=True)
    assert copy(base, 9, ("r0003",)) == dataclasses.replace(base, turn=9, window=("r0003",))
    assert state_module._changed(base, window=()) == dataclasses.replace(base, window=())


def test_control_a_slot_writer_refuses_what_it_cannot_make() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("negative")

    with pytest.raises(TypeError, match="__post_init__"):
        state_module._slot_writer(Checked, ("n",), copied=False)
    with pytest.raises(TypeError, match="no field 'colour'"):
        state_module._slot_writer(EpisodeState, ("colour",), copied=True)
    with pytest.raises(TypeError, match="needs every field"):
        state_module._slot_writer(RawRecord, ("record_id",), copied=False)
    with pytest.raises(TypeError, match="no field"):
        state_module._changed(EpisodeState(), colour="red")


def test_a_slot_writer_takes_any_field_names() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Awkward:
        src: int
        obj: int
        new: int
        cls: int

    made = state_module._slot_writer(Awkward, ("cls", "new", "obj", "src"), copied=False)(4, 3, 2, 1)
    assert made == Awkward(src=1, obj=2, new=3, cls=4)
    copy = state_module._slot_writer(Awkward, ("new",), copied=True)
    assert copy(made, 9) == Awkward(src=1, obj=2, new=9, cls=4)
