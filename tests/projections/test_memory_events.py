"""The memory's events are declared where they are folded, and the fold leaves other packages' events alone."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import ClassVar

import pytest

from ledgermem.evaluation.events import HARNESS_EVENTS, BaselineWritten, ProbeAnswered, RunStarted
from ledgermem.ledger.events import Event, is_registered
from ledgermem.projections import events as memory_events
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.events import MEMORY_EVENTS, EpisodeStarted, TurnRecorded
from ledgermem.projections.errors import ConfigError
from ledgermem.projections.state import EpisodeEvent, EpisodeState, evolve, fold
from ledgermem.projections.tokens import ESTIMATOR

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False).to_dict()


def test_evolve_matches_every_event_the_memory_declares_and_only_those() -> None:
    declared = {obj for obj in vars(memory_events).values()
                if isinstance(obj, type) and issubclass(obj, Event) and obj is not Event}
    assert set(typing.get_args(EpisodeEvent)) == declared == set(MEMORY_EVENTS)
    assert all(is_registered(cls) for cls in declared)
    assert not declared & set(HARNESS_EVENTS)


@pytest.mark.parametrize("event", [
    RunStarted(systems=("three_layer",), config={}, versions={}, dataset={}),
    ProbeAnswered(turn=2, probe_id="p1", text="12F", tool_calls=0, llm_calls=1),
    BaselineWritten(turn=2, summary_id="m1", text="t", facts=(), raw_ids=("r0001",)),
], ids=lambda e: type(e).event_type)
def test_an_event_of_another_package_leaves_the_memory_as_it_was(event: Event) -> None:
    state = fold([EpisodeStarted(config=CONFIG), TurnRecorded(turn=1, record_id="r0001", text="hi", agent="ok")])
    assert evolve(state, event) is state


def test_an_event_class_the_memory_does_not_declare_is_left_alone_by_evolve() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Elsewhere(Event):
        event_type: ClassVar[str] = "test_elsewhere"

    state = EpisodeState()
    assert evolve(state, Elsewhere()) is state  # the fold only matches the memory's own classes


def test_the_memory_config_records_a_system_name_and_the_harness_lists_the_systems() -> None:
    from ledgermem.evaluation.runner import SYSTEMS

    for name in SYSTEMS:
        assert MemoryConfig(system=name, tokenizer=ESTIMATOR).validate().system == name
    for bad in ("", "Three Layer", "three-layer", "x" * 65):
        with pytest.raises(ConfigError, match="must be a lower-case name"):
            MemoryConfig(system=bad, tokenizer=ESTIMATOR).validate()
