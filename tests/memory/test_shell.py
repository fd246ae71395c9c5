"""The episode shell is generic over a decider: a decider written here runs in it like the four systems do."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import pytest

from ledgermem.evaluation.baselines import BASELINES, BaselineMemory
from ledgermem.evaluation.runner import ask_probe, run_episode
from ledgermem.datasets.model import Episode, Probe, Turn
from ledgermem.gate.commands import StartEpisode
from ledgermem.ledger.blocks import Block
from ledgermem.ledger.compat import assert_never
from ledgermem.ledger.errors import ConcurrencyConflict
from ledgermem.ledger.events import Event
from ledgermem.projections.events import EpisodeStarted, ToolCalled, TurnRecorded
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from ledgermem.memory.answering import NO_TOOLS
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.memory.memory import Memory
from ledgermem.memory.shell import EpisodeShell, MemorySystem
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.render import Item, Part, Rendered
from ledgermem.projections.state import record_id_for
from ledgermem.projections.tokens import ESTIMATOR, count_tokens

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False)


@dataclass(frozen=True, slots=True)
class Tally:
    """A memory that keeps only the user's last two messages."""

    config: MemoryConfig = field(default_factory=MemoryConfig)
    started: bool = False
    turn: int = 0
    said: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Say:
    text: str


class TallyDecider:
    system = "tally"
    projected = False

    def initial(self) -> Tally:
        return Tally()

    def decide(self, state: Tally, command: StartEpisode | Say) -> tuple[Event, ...]:
        match command:
            case StartEpisode():
                return (EpisodeStarted(turn=0, config=command.config.to_dict(), lang=command.lang),)
            case Say():
                turn = state.turn + 1
                return (TurnRecorded(turn=turn, record_id=record_id_for(turn), text=command.text, agent=""),)
            case _:
                assert_never(command)

    def evolve(self, state: Tally, event: Event) -> Tally:
        if isinstance(event, EpisodeStarted):
            return replace(state, started=True, config=MemoryConfig.from_dict(event.config))
        if isinstance(event, TurnRecorded):
            return replace(state, turn=event.turn, said=(*state.said, event.text)[-2:])
        return state

    def render(self, state: Tally, budget: int | None = None) -> Rendered:
        items = tuple(Item(f"t{i}", text, count_tokens(text, state.config.tokenizer)) for i, text in enumerate(state.said))
        return Rendered((Part("dialogue", items),), budget or state.config.context_budget, state.config.tokenizer)

    def configure(self, config: MemoryConfig) -> MemoryConfig:
        return replace(config, system=self.system)

    def disagreements(self, state: Tally) -> Sequence[str]:
        return ()

    def departed_summary(self, state: Tally, record_id: str, slot: str) -> str | None:
        return None


class TallyMemory(EpisodeShell[Tally]):
    def add_turn(self, user: str, agent: str, *, occurred_at: str | None = None, source: str | None = None,
                 blocks: Sequence[Block] = ()) -> tuple[RecordedEvent, ...]:
        return self._commit(self.decider.decide(self.state, Say(user)))


def tally(ledger: Ledger, backend: ScriptedBackend | str = "heuristic") -> TallyMemory:
    return TallyMemory(ledger, StreamKey("run", "tally", "ep"), TallyDecider(), backend, config=CONFIG)


def test_a_new_stream_is_started_once_and_reopening_resumes_it_from_the_ledger() -> None:
    ledger = Ledger(":memory:")
    m = tally(ledger)
    for text in ("one", "two", "three"):
        m.add_turn(text, "")
    again = tally(ledger)
    assert again.state == m.state == Tally(replace(CONFIG, system="tally"), True, 3, ("two", "three"))
    assert [r.event.event_type for r in ledger.read(stream=m.stream)].count("episode_started") == 1
    assert again.version == m.version == 4
    assert "three" in again.render().text and "one" not in again.render().text


def test_a_commit_from_a_stale_shell_is_refused_at_the_expected_version() -> None:
    ledger = Ledger(":memory:")
    first, second = tally(ledger), tally(ledger)
    first.add_turn("mine", "")
    with pytest.raises(ConcurrencyConflict):
        second.add_turn("theirs", "")
    assert [r.event.text for r in ledger.read(stream=first.stream) if isinstance(r.event, TurnRecorded)] == ["mine"]
    assert second.state.turn == 0  # nothing that was not committed was folded


def test_a_decider_without_tools_answers_through_the_one_loop() -> None:
    backend = ScriptedBackend(['get_raw_record(reference_id="r0001")', "two"])
    m = tally(Ledger(":memory:"), backend)
    m.add_turn("two", "")
    answer = m.answer("What did I say?", probe_id="p1")
    tools = [e for e in answer.events if isinstance(e, ToolCalled)]
    assert answer.text == "two" and [(t.ok, t.text) for t in tools] == [(False, NO_TOOLS)]
    assert any("two" in message["content"] for message in backend.calls[0][1])  # the decider's render was shown


def systems(ledger: Ledger) -> list[MemorySystem]:
    backend = HeuristicBackend(tokenizer=ESTIMATOR)
    out: list[MemorySystem] = [Memory(ledger, StreamKey("run", "three_layer", "ep"), backend, config=CONFIG)]
    out += [BaselineMemory(ledger, StreamKey("run", kind, "ep"), backend, kind=kind, config=CONFIG) for kind in BASELINES]
    return [*out, tally(ledger)]


def test_the_runner_drives_every_system_through_the_one_protocol() -> None:
    ledger = Ledger(":memory:")
    episode = Episode(episode_id="ep", turns=(Turn(user="My office floor is 3F.", agent="Noted."), Turn(user="Hi.", agent="Hello.")),
                      facts=(("office floor", ((0, "3F"),)),),
                      probes=(Probe(probe_id="p1", type="current_fact", question="Which office floor?", answer="3F",
                                    fact_key="office floor"),))
    for m in systems(ledger):
        run_episode(m, m.stream.system, episode, lambda what, n: None, memory_points=0)
        types = [r.event.event_type for r in ledger.read(stream=m.stream)]
        assert types.count("turn_recorded") == 2 and types.count("probe_judged") == 1, m.stream
        assert m.state.turn == 2 and m.departed_summary("r0001", "office floor") is None
        asked = ask_probe(m, episode.probes[0])
        assert (asked[0].event_type, asked[-1].event_type) == ("probe_asked", "probe_judged")
