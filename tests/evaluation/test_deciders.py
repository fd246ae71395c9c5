"""The four systems as deciders: given a stream's events, when a command, then the events."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ledgermem.evaluation.baselines import (
    BASELINES,
    DECIDERS,
    BaselineError,
    BaselineMemory,
    BaselineTurn,
    decide_turn,
    decider_for,
    fold,
)
from ledgermem.gate.commands import StartEpisode
from ledgermem.gate.decide import decide
from ledgermem.projections.events import EpisodeStarted
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.three_layer import THREE_LAYER
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.state import EpisodeState
from ledgermem.projections.tokens import ESTIMATOR

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False, window_turns=2, chain_budget=40)
DIALOGUE = (("My office floor is 3F.", "Noted."), ("Nice weather.", "Indeed."), ("My office floor changed to 7F.", "Ok."))


def given(kind: str) -> BaselineMemory:
    m = BaselineMemory(Ledger(":memory:"), StreamKey("run", kind, "ep"), HeuristicBackend(tokenizer=ESTIMATOR),
                       kind=kind, config=CONFIG)
    for user, agent in DIALOGUE:
        m.add_turn(user, agent)
    return m


@pytest.mark.parametrize("kind", BASELINES)
def test_each_baseline_decides_a_turn_as_its_own_decider_and_the_shell_fold_is_the_replay(kind: str) -> None:
    m = given(kind)
    state = fold(r.event for r in m.ledger.read(stream=m.stream))
    assert m.state == state  # what the shell folded is what the ledger replays to
    cmd = BaselineTurn(turn=state.turn + 1, user="My home city is Lisbon.", agent="Noted.")
    assert DECIDERS[kind].decide(state, cmd) == decide_turn(state, cmd)
    others = [k for k in BASELINES if k != kind]
    with pytest.raises(BaselineError, match=f"not {others[0]!r}"):
        DECIDERS[others[0]].decide(state, cmd)  # a decider refuses another system's state


@pytest.mark.parametrize("kind", BASELINES)
def test_every_episode_starts_as_the_gate_starts_one_under_the_systems_name(kind: str) -> None:
    decider = DECIDERS[kind]
    started = decider.decide(decider.initial(), StartEpisode(config=decider.configure(CONFIG), lang="en"))
    assert started == decide(EpisodeState(), StartEpisode(config=replace(CONFIG, system=kind), lang="en"))
    assert isinstance(started[0], EpisodeStarted) and started[0].config["system"] == kind
    with pytest.raises(BaselineError, match="already started"):
        decider.decide(decider.evolve(decider.initial(), started[0]), StartEpisode(config=CONFIG))


def test_decider_for_names_all_four_systems_and_refuses_any_other() -> None:
    assert decider_for("three_layer") is THREE_LAYER and THREE_LAYER.projected
    assert {k: decider_for(k) for k in BASELINES} == DECIDERS and not any(d.projected for d in DECIDERS.values())
    with pytest.raises(BaselineError, match="unknown system 'rag'.*three_layer, full_context"):
        decider_for("rag")


def test_a_turn_before_the_start_or_on_a_state_that_is_no_baselines_is_refused() -> None:
    cmd = BaselineTurn(turn=1, user="hi", agent="hello")
    with pytest.raises(BaselineError, match="has not started"):
        DECIDERS["naive_chain"].decide(DECIDERS["naive_chain"].initial(), cmd)
    three = fold([EpisodeStarted(turn=0, config=replace(CONFIG, system="three_layer").to_dict())])
    with pytest.raises(BaselineError, match="'three_layer' state is no baseline's"):
        decide_turn(three, cmd)
