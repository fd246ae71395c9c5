"""A hostile model never poisons the memory.

The responses a real small model gave to this project's own prompts
(tests/fixtures/llm/smollm2-135m-responses.jsonl: echoed markup, invented ids,
copied placeholders, repetition) and generated hostile ones are replayed as
the summarizer's, the live agent's and the answerer's output, through the
scripted backend and through the HTTP client against a loopback server.
After every turn, every memory the model is shown (the rendered memory, the
chain in every summarizer prompt, the memory in every respond and answer
prompt) must hold none of it, and the prompts stay bounded. A must-fail
control switches the validation off and the same checks find the markup.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledgermem.evaluation.metrics import EpisodeOutcome
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.gate import validation
from ledgermem.ledger.events import Event
from ledgermem.projections.events import ContextRendered, SummaryCreated, SummaryRejected, SummarySkipped, ToolCalled
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import Backend, Message, ScriptedBackend
from ledgermem.memory.http_backend import HttpSettings, OpenAICompatibleBackend
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.render import PROMPT_TAGS, Rendered
from ledgermem.projections.state import EpisodeState
from ledgermem.projections.tokens import ESTIMATOR, count_tokens
from tests.llm_server import ScriptedLlmServer

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "llm" / "smollm2-135m-responses.jsonl"
ROWS = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
RESPONSES = tuple(str(r["response"]) for r in ROWS)
EPISODES = generate_synthetic(n_episodes=2, turns=24).episodes
CONFIG = MemoryConfig(tokenizer=ESTIMATOR)
#: What a summarizer prompt may cost besides the turn itself: the system text, the chain, and the
#: two retry notes. The echoing model of the fixture grew whole prompts to about 2,000 tokens when its
#: output was stored and shown back to it.
PROMPT_BOUND = 1300
#: One chain line: a summary under its cut plus its head and tags.
LINE_BOUND = CONFIG.summary_max_tokens + 60

_BLOCK_TAG = re.compile(r"^</?(?:PINNED|RECENT_TURNS|CURRENT_VALUES|INDEX|ACTIVE_CHAIN)>$")
_ID_TOKEN = re.compile(r"(?<![\w\-./])[sripSRIP]\d+(?![\w\-])")
_CHAIN_HEAD = re.compile(r"^- s\d{4} \(turns? [\d-]+; raw r\d{4}(?:, r\d{4})*\) ")
_TURN_HEAD = re.compile(r"\(turns? [\d-]+[;,] ?raw\b|\[INDEX\b", re.IGNORECASE)
_SPEAKER = re.compile(r"\b(?:USER|AGENT)\s*[:：]", re.IGNORECASE)
_PROMPT_TAG = re.compile(r"<\s*/?\s*(?:" + "|".join(PROMPT_TAGS) + r")(?![A-Za-z0-9])", re.IGNORECASE)


def _issued(state: EpisodeState) -> set[str]:
    return {*state.summaries, *state.raw, *state.indexes, *state.pins}


def memory_lines_problems(lines: Sequence[str], state: EpisodeState, where: str) -> list[str]:
    """What in memory lines (chain, registry, index titles, pins) was not written by this memory.

    The renderer's own syntax is allowed once per line (a chain line's head,
    an index title's `[INDEX ...]`); anything the model could have copied from
    a prompt is not: a tag, a placeholder, a speaker line, a second head, an
    id this memory never issued.
    """
    issued = _issued(state)
    problems: list[str] = []
    for line in lines:
        if not line.strip() or _BLOCK_TAG.match(line):
            continue
        if "<" in line or ">" in line:
            problems.append(f"{where}: markup or a placeholder in {line[:120]!r}")
        if _SPEAKER.search(line):
            problems.append(f"{where}: a speaker line in {line[:120]!r}")
        if len(_TURN_HEAD.findall(line)) > 1:
            problems.append(f"{where}: an echoed memory line in {line[:120]!r}")
        unknown = sorted({t for t in _ID_TOKEN.findall(line) if t not in issued})
        if unknown:
            problems.append(f"{where}: ids this memory never issued {unknown} in {line[:120]!r}")
    return problems


def rendered_problems(rendered: Rendered, state: EpisodeState, where: str) -> list[str]:
    """The rendered memory's parts other than the window (verbatim raw turns), line by line."""
    lines = [line for p in rendered.parts if p.name != "window" for i in p.items for line in i.text.split("\n")]
    problems = memory_lines_problems(lines, state, where)
    problems += [f"{where}: chain line without its head: {i.text[:120]!r}"
                 for i in rendered.part("chain").items if not _CHAIN_HEAD.match(i.text)]
    # The window shows raw turns verbatim, a live agent's replies included; but no tag in them is markup.
    problems += [f"{where}: a prompt tag in the window: {i.text[:120]!r}"
                 for i in rendered.part("window").items if _PROMPT_TAG.search(i.text)]
    return problems


_BLOCK = re.compile(r"^<(PINNED|RECENT_TURNS|CURRENT_VALUES|INDEX|ACTIVE_CHAIN)>\n(.*?)\n</\1>$",
                    re.DOTALL | re.MULTILINE)


def shown_memory_problems(memory: str, state: EpisodeState, where: str) -> list[str]:
    """A rendered memory as a prompt carries it, block by block (the window only for prompt tags)."""
    problems: list[str] = []
    for m in _BLOCK.finditer(memory):
        if m.group(1) == "RECENT_TURNS":
            problems += [f"{where}: a prompt tag in the window: {line[:120]!r}"
                         for line in m.group(2).split("\n") if _PROMPT_TAG.search(line)]
        else:
            problems += memory_lines_problems(m.group(2).split("\n"), state, f"{where} {m.group(1)}")
    return problems


def prompt_problems(purpose: str, messages: Sequence[Message], state: EpisodeState) -> list[str]:
    """The memory inside a prompt as it was sent: the summarizer's chain; the memory of a respond prompt
    (its <MEMORY> block, in the user's message) and of an answer prompt (before its QUESTION)."""
    text = "\n".join(m["content"] for m in messages)
    problems: list[str] = []
    if purpose == "respond":
        shown = re.search(r"<MEMORY>\n(.*?)\n</MEMORY>", messages[1]["content"], re.DOTALL)
        assert shown is not None, "a respond prompt without its memory block"
        problems += shown_memory_problems(shown.group(1), state, "respond prompt")
    if purpose == "answer":
        question = messages[1]["content"]
        problems += shown_memory_problems(question[: question.rfind("\n\nQUESTION:")], state, "answer prompt")
    if purpose == "summarize":
        chain = re.search(r"<ACTIVE_CHAIN>\n(.*?)\n?</ACTIVE_CHAIN>", text, re.DOTALL)
        assert chain is not None, "a summarizer prompt without its chain block"
        lines = [line for line in chain.group(1).split("\n") if line]
        problems += memory_lines_problems(lines, state, "summarizer prompt")
        problems += [f"summarizer prompt: chain line without its head: {line[:120]!r}"
                     for line in lines if not _CHAIN_HEAD.match(line)]
        problems += [f"summarizer prompt: a chain line of {n} tokens" for line in lines
                     if (n := count_tokens(line, ESTIMATOR)) > LINE_BOUND]
        # The turn's own words are whatever the user and the agent said; the rest is ours to bound.
        tokens = count_tokens(re.sub(r"<NEW_TURN.*?</NEW_TURN>", "", text, flags=re.DOTALL), ESTIMATOR)
        if tokens > PROMPT_BOUND:
            problems.append(f"summarizer prompt of {tokens} tokens besides the turn (bound {PROMPT_BOUND})")
    return problems


@dataclass
class Replay:
    """A model that answers every call with the next hostile response, and checks every prompt it is sent."""

    responses: Iterator[str]
    memory: Memory | None = None
    problems: list[str] = field(default_factory=list)
    prompts: int = 0

    def __call__(self, messages: Sequence[Message], purpose: str) -> str:
        assert self.memory is not None
        self.prompts += 1
        self.problems += prompt_problems(purpose, messages, self.memory.state)
        return next(self.responses)


def run_episode(backend: Backend, replay: Replay, *, live: bool, episode: int = 0) -> Memory:
    """Every turn of a synthetic episode, each followed by the checks; then its probes."""
    mem = Memory(Ledger(":memory:"), StreamKey("run", "three_layer", f"ep-{episode}"), backend, config=CONFIG)
    replay.memory = mem
    data = EPISODES[episode % len(EPISODES)]
    for t in data.turns:
        if live:
            mem.respond(t.user, occurred_at=t.occurred_at)
        else:
            mem.add_turn(t.user, t.agent, occurred_at=t.occurred_at)
        replay.problems += rendered_problems(mem.render(), mem.state, f"turn {mem.state.turn}")
        replay.problems += context_problems(mem)
    for probe in data.probes[:4]:
        answer = mem.ask(probe.question)
        replay.problems += context_problems(mem)
        stored = [e for e in answer.events if isinstance(e, SummaryCreated)]
        assert not stored, "an answer wrote memory"
    return mem


def context_problems(mem: Memory) -> list[str]:
    """Every `context_rendered` manifest names only ids this memory issued, within its budget."""
    issued = _issued(mem.state) | {f"slot:{k}" for k in mem.state.current_values()}
    problems = []
    for r in mem.ledger.read(stream=mem.stream):
        e = r.event
        if isinstance(e, ContextRendered):
            unknown = [i for i in e.item_ids if i not in issued and not i.startswith("slot:")]
            if unknown:
                problems.append(f"context_rendered at seq {r.seq} names {unknown}")
            if e.tokens > e.budget:
                problems.append(f"context_rendered at seq {r.seq}: {e.tokens} tokens over {e.budget}")
    return problems


def cycle(responses: Sequence[str]) -> Iterator[str]:
    while True:
        yield from responses


def _events(mem: Memory) -> list[Event]:
    return [r.event for r in mem.ledger.read(stream=mem.stream)]


# -- (a) the recorded responses of a real small model ------------------------------------------------


def test_the_fixture_is_the_real_model_output_it_claims_to_be() -> None:
    assert len(ROWS) == 122 and {r["purpose"] for r in ROWS} == {"summarize", "answer"}
    assert sum("<NEW_TURN" in r for r in RESPONSES) >= 10 and sum("s001" in r for r in RESPONSES) >= 5
    assert any("<id of task that was updated" in r for r in RESPONSES)


@pytest.mark.parametrize("live", [False, True], ids=["add_turn", "respond"])
def test_every_recorded_response_replayed_in_order_never_reaches_a_prompt(live: bool) -> None:
    """All 122 responses, in file order, as every model call of both synthetic episodes, until all were used."""
    used = {"n": 0}

    def numbered() -> Iterator[str]:
        for text in cycle(RESPONSES):
            used["n"] += 1
            yield text

    replay = Replay(numbered())
    episode = 0
    while used["n"] < len(RESPONSES):
        mem = run_episode(ScriptedBackend(replay), replay, live=live, episode=episode)
        episode += 1
        assert not replay.problems, replay.problems[:5]
        events = _events(mem)
        assert any(isinstance(e, SummaryRejected) for e in events)
        assert any(isinstance(e, SummarySkipped) for e in events)
    assert used["n"] >= len(RESPONSES)


@settings(max_examples=8)
@given(order=st.permutations(range(len(RESPONSES))), live=st.booleans(), episode=st.integers(0, 1))
def test_recorded_responses_in_any_order_never_reach_a_prompt(order: list[int], live: bool, episode: int) -> None:
    replay = Replay(cycle([RESPONSES[i] for i in order]))
    run_episode(ScriptedBackend(replay), replay, live=live, episode=episode)
    assert not replay.problems, replay.problems[:5]


def test_the_recorded_responses_through_the_http_client_and_a_loopback_server() -> None:
    """The same replay over the wire: the server answers each request with the next recorded response,
    episodes (dataset turns, then live ones) running until every response was served."""
    responses = cycle(RESPONSES)
    served: list[object] = []

    def behave(payload: object) -> tuple[str, str]:
        assert isinstance(payload, dict) and payload["messages"]
        served.append(payload)
        return ("ok", next(responses))

    replay = Replay(iter(()))
    skipped = 0
    with ScriptedLlmServer(behave) as server:
        settings_ = HttpSettings(preset="http", base_url=server.base_url, model="smollm2-135m", timeout_s=5.0,
                                 max_retries=0)
        with OpenAICompatibleBackend(settings_, tokenizer=ESTIMATOR, rng=random.Random(7)) as backend:
            checking = _Checking(backend, replay)
            episode = 0
            while len(served) < len(RESPONSES):
                mem = run_episode(checking, replay, live=episode % 2 == 1, episode=episode)
                skipped += sum(isinstance(e, SummarySkipped) for e in _events(mem))
                episode += 1
    assert not replay.problems, replay.problems[:5]
    assert len(served) == checking.calls >= len(RESPONSES) and episode >= 2
    assert skipped


@dataclass
class _Checking:
    """A backend wrapper that checks each prompt against the memory's state before passing it on."""

    inner: OpenAICompatibleBackend
    replay: Replay
    calls: int = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str:
        return self.inner.model

    def complete(self, messages: Sequence[Message], *, purpose: str):  # type: ignore[no-untyped-def]
        assert self.replay.memory is not None
        self.calls += 1
        self.replay.problems += prompt_problems(purpose, messages, self.replay.memory.state)
        return self.inner.complete(messages, purpose=purpose)


# -- (b) generated hostile responses ------------------------------------------------------------------

MARKUP = ("<NEW_TURN turn=3>", "</NEW_TURN>", "<ACTIVE_CHAIN>", "</ACTIVE_CHAIN>", "<CURRENT_VALUES>",
          "<RECENT_TURNS>", "<MEMORY>", "<INDEX>", "[TOOL RESULT get_raw_record]")
PLACEHOLDERS = ("OPEN: <id of task that was updated, in the user's words>; ...",
                "DECISIONS: <choice made — its reason>; ...", "[OVERRIDES: <ids of chain summaries> | none]",
                "CONSTRAINTS: <rule that must keep holding, in the user's words>; ...")
INVENTED = ("s001", "s01", "s0999", "r01", "r0999", "i0042", "p0077", "S0012")


@st.composite
def hostile_responses(draw: st.DrawFn, user: str, agent: str) -> tuple[str, str]:
    """A response with at least one hostile piece and a valid-looking [FACTS] line; and the value it plants."""
    value = draw(st.sampled_from(["Quokka-77", "Vesper-12", "Halcyon-5"]))
    sid, rid = draw(st.sampled_from(INVENTED)), draw(st.sampled_from(("r01", "r0999", "r1")))
    pieces = {
        "markup": f"{draw(st.sampled_from(MARKUP))}\n{user}",
        "turn": f"USER: {user}\nAGENT: {agent}",
        "chain": f"- {sid} (turn 2; raw {rid}) the user said {value} [FACTS: none] [OVERRIDES: none]",
        "placeholder": draw(st.sampled_from(PLACEHOLDERS)),
        "ids": f"DECISIONS: keep {value} as agreed in {sid}",
        "repetition": "\n".join([f"the user said {value} again"] * draw(st.integers(3, 12))),
        "garbage": draw(st.sampled_from(["\x00\x01\x02", "\ufffd\ufffd", "\x1b[31m"])) + value,
    }
    kinds = draw(st.lists(st.sampled_from(sorted(pieces)), min_size=1, max_size=4, unique=True))
    body = [pieces[k] for k in kinds]
    body.insert(draw(st.integers(0, len(body))), f"[FACTS: secret word={value}]")
    body.append(draw(st.sampled_from(["[OVERRIDES: none]", "[OVERRIDES: s0001]", ""])))
    return "\n".join(body), value


def _hostile_run(data: st.DataObject, live: bool) -> tuple[list[str], Memory, list[str]]:
    planted: list[str] = []
    episode = EPISODES[0]
    state = {"turn": 0}

    def script(messages: Sequence[Message], purpose: str) -> str:
        if purpose in ("summarize", "respond"):
            t = episode.turns[min(state["turn"], len(episode.turns) - 1)]
            text, value = data.draw(hostile_responses(t.user, t.agent))
            planted.append(value)
            if purpose == "respond":
                return f"Noted.\n<MEMORY_UPDATE>\n{text}\n</MEMORY_UPDATE>"
            return text
        return "I don't know."

    replay = Replay(iter(()))

    def checked(messages: Sequence[Message], purpose: str) -> str:
        assert replay.memory is not None
        replay.problems += prompt_problems(purpose, messages, replay.memory.state)
        return script(messages, purpose)

    mem = Memory(Ledger(":memory:"), StreamKey("run", "three_layer", "hostile"), ScriptedBackend(checked),
                 config=CONFIG)
    replay.memory = mem
    for t in episode.turns[:8]:
        if live:
            mem.respond(t.user)
        else:
            mem.add_turn(t.user, t.agent)
        state["turn"] += 1
        replay.problems += rendered_problems(mem.render(), mem.state, f"turn {mem.state.turn}")
        shown = "\n".join(i.text for p in mem.render().parts if p.name != "window" for i in p.items)
        replay.problems += [f"turn {mem.state.turn}: planted value {v!r} shown as memory"
                            for v in set(planted) if v in shown]
    return planted, mem, replay.problems


@settings(max_examples=15)
@given(data=st.data(), live=st.booleans())
def test_generated_hostile_responses_never_reach_a_prompt(data: st.DataObject, live: bool) -> None:
    planted, mem, problems = _hostile_run(data, live)
    assert not problems, problems[:5]
    events = _events(mem)
    assert not [e for e in events if isinstance(e, SummaryCreated)], "a hostile response became a summary"
    assert all(v not in dict(mem.state.current_values()) and
               all(v != value for value, _ in mem.state.current_values().values()) for v in planted)
    skipped = [e for e in events if isinstance(e, SummarySkipped)]
    assert len(skipped) == 8 and all(e.reasons for e in skipped)


# -- (c) must-fail controls: the same checks with the validation switched off ------------------------


def _validation_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validation, "validate_summary", lambda *args, **kwargs: ())


@pytest.mark.parametrize("live", [False, True], ids=["add_turn", "respond"])
def test_control_without_validation_the_recorded_markup_reaches_the_prompt(
        monkeypatch: pytest.MonkeyPatch, live: bool) -> None:
    _validation_off(monkeypatch)
    replay = Replay(cycle(RESPONSES))
    run_episode(ScriptedBackend(replay), replay, live=live)
    text = "\n".join(replay.problems)
    assert "markup or a placeholder" in text and "never issued" in text, replay.problems[:5]
    assert ("respond prompt" if live else "answer prompt") in text
    assert "besides the turn" in text  # and the prompts grow past their bound


def test_control_without_validation_generated_hostile_responses_reach_the_prompt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _validation_off(monkeypatch)

    @settings(max_examples=5, database=None)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        _, mem, problems = _hostile_run(data, live=False)
        assert problems and any(isinstance(e, SummaryCreated) for e in _events(mem))

    run()


def test_control_the_checks_catch_a_line_the_renderer_never_writes() -> None:
    state = Memory(Ledger(":memory:"), StreamKey("r", "three_layer", "c"), ScriptedBackend(["NONE"]),
                   config=CONFIG).state
    bad = ["- s0001 (turn 1; raw r0001) <NEW_TURN turn=2> USER: hi [FACTS: none] [OVERRIDES: none]",
           "- s001 (turn 2; raw r01) copied"]
    problems = memory_lines_problems(bad, state, "x")
    assert len(problems) >= 4


# -- the answerer: tool calls naming ids the memory never issued -------------------------------------


@pytest.mark.parametrize("call, kind", [
    ('get_archived_summary(summary_id="s001")', "summary"),
    ('get_raw_record(reference_id="r01")', "raw record"),
    ('expand_index(index_id="i0042")', "index entry"),
])
def test_a_tool_call_naming_an_id_never_issued_gets_no_such_id(call: str, kind: str) -> None:
    answers = iter([call, "I don't know."])
    backend = ScriptedBackend(lambda m, p: next(answers) if p == "answer" else "NONE")
    mem = Memory(Ledger(":memory:"), StreamKey("r", "three_layer", "t"), backend, config=CONFIG)
    mem.add_turn("My meeting time is 9am.", "Noted.")
    answer = mem.ask("What is my meeting time?")
    [tool] = [e for e in answer.events if isinstance(e, ToolCalled)]
    assert not tool.ok and tool.text.startswith("no such id:") and kind in tool.text
    # The result went back to the model as a tool result, and nothing was stored as memory.
    _, messages = backend.calls[-1]
    assert "[TOOL RESULT" in messages[-1]["content"] and "no such id" in messages[-1]["content"]
    assert not [e for e in answer.events if isinstance(e, SummaryCreated)]


def test_an_answer_that_echoes_markup_is_never_stored_as_memory() -> None:
    echo = next(r for r in RESPONSES if "<INDEX>" in r)
    backend = ScriptedBackend(lambda m, p: echo if p in ("answer", "respond") else "NONE")
    mem = Memory(Ledger(":memory:"), StreamKey("r", "three_layer", "e"), backend, config=CONFIG)
    mem.add_turn("My meeting time is 9am.", "Noted.")
    before = mem.state.summaries
    mem.ask("What is my meeting time?")
    reply = mem.respond("And the project?")
    assert mem.state.summaries == before  # the summarizer answered NONE; the reply wrote no memory
    assert not rendered_problems(mem.render(), mem.state, "after")
    # The raw record keeps the reply complete (nothing is truncated or rewritten) ...
    assert mem.state.raw["r0002"].agent == reply.text == echo.strip()


# -- self-written updates ------------------------------------------------------------------------------


def test_a_self_written_block_that_echoes_the_prompt_falls_back_to_a_validated_summarizer() -> None:
    bad = "<NEW_TURN turn=1>\nUSER: My meeting time is 9am.\n[FACTS: meeting time=9am]\n[OVERRIDES: none]"
    good = "The meeting is at 9am.\n[FACTS: meeting time=9am]\n[OVERRIDES: none]"
    script: dict[str, Callable[[], str]] = {
        "respond": lambda: f"Noted.\n<MEMORY_UPDATE>\n{bad}\n</MEMORY_UPDATE>", "summarize": lambda: good}
    backend = ScriptedBackend(lambda m, p: script[p]())
    mem = Memory(Ledger(":memory:"), StreamKey("r", "three_layer", "s"), backend, config=CONFIG)
    reply = mem.respond("My meeting time is 9am.")
    events = [r.event for r in reply.recorded]
    [rejected] = [e for e in events if isinstance(e, SummaryRejected)]
    assert rejected.purpose == "self_write" and "markup" in rejected.reasons and rejected.attempt == 0
    [summary] = [e for e in events if isinstance(e, SummaryCreated)]
    assert summary.written_by == "summarizer" and summary.text == "The meeting is at 9am."
    assert reply.fallback and not reply.self_written and reply.text == "Noted."


def test_the_specific_retry_names_what_was_wrong_and_a_good_answer_is_kept() -> None:
    bad = "- s001 (turn 1; raw r01) <NEW_TURN turn=1>\n[FACTS: meeting time=9am]\n[OVERRIDES: none]"
    good = "The meeting is at 9am.\n[FACTS: meeting time=9am]\n[OVERRIDES: none]"
    answers = iter([bad, good])
    backend = ScriptedBackend(lambda m, p: next(answers))
    mem = Memory(Ledger(":memory:"), StreamKey("r", "three_layer", "s"), backend, config=CONFIG)
    events = [r.event for r in mem.add_turn("My meeting time is 9am.", "Noted.")]
    retry_prompt = backend.calls[1][1][-1]["content"]
    assert "repeated the prompt's markup" in retry_prompt and "ids" in retry_prompt
    [rejected] = [e for e in events if isinstance(e, SummaryRejected)]
    assert rejected.attempt == 1 and {"markup", "chain_echo"} <= set(rejected.reasons)
    assert not [e for e in events if isinstance(e, SummarySkipped)]
    assert mem.state.current_values() == {"meeting time": ("9am", "s0001")}


def test_two_rejected_answers_keep_the_raw_record_only_and_are_counted() -> None:
    bad = "<NEW_TURN turn=1>\nUSER: My meeting time is 9am.\nAGENT: Noted.\n</NEW_TURN>\n[FACTS: meeting time=9am]"
    backend = ScriptedBackend(lambda m, p: bad)
    mem = Memory(Ledger(":memory:"), StreamKey("r", "three_layer", "s"), backend, config=CONFIG)
    events = [r.event for r in mem.add_turn("My meeting time is 9am.", "Noted.")]
    assert [p for p, _ in backend.calls] == ["summarize", "summarize"]
    rejected = [e for e in events if isinstance(e, SummaryRejected)]
    assert [e.attempt for e in rejected] == [1, 2]
    [skipped] = [e for e in events if isinstance(e, SummarySkipped)]
    assert skipped.record_id == "r0001" and skipped.attempts == 2 and "turn_echo" in skipped.reasons
    assert not mem.state.summaries and mem.state.current_values() == {}
    assert mem.state.raw["r0001"].user == "My meeting time is 9am."
    outcome = EpisodeOutcome(system="three_layer", episode_id="s")
    outcome.count(_events(mem))
    assert outcome.counts["summaries_rejected"] == 2 and outcome.counts["summary_fallbacks"] == 1


# -- the new events through the rest of the system ----------------------------------------------------


def test_a_ledger_with_rejections_audits_rebuilds_in_sql_and_round_trips_through_parquet(tmp_path: Path) -> None:
    from ledgermem.gate.invariants import audit
    from ledgermem.ledger.parquet import export, import_dataset, open_ledger
    from ledgermem.projections.materialise import ProjectionStore, projection_path, rebuild
    from ledgermem.projections.sql_rebuild import rebuild_sql_ledger

    path = tmp_path / "ledger.duckdb"
    ledger = Ledger(str(path))
    store = ProjectionStore(projection_path(str(path)))
    replay = Replay(cycle(RESPONSES))
    config = replace(CONFIG, personal_data=False)  # values in clear, so the SQL rebuild reads the events as they are
    mem = Memory(ledger, StreamKey("run", "three_layer", "ep-0"), ScriptedBackend(replay), config=config,
                 projections=store, strict=True)
    replay.memory = mem
    for t in EPISODES[0].turns:
        mem.add_turn(t.user, t.agent, occurred_at=t.occurred_at)
    events = _events(mem)
    n_rejected = sum(isinstance(e, SummaryRejected) for e in events)
    n_skipped = sum(isinstance(e, SummarySkipped) for e in events)
    assert n_rejected and n_skipped
    report = audit(ledger, store)
    assert report.ok, report.failed()
    assert rebuild_sql_ledger(ledger) == rebuild(ledger)
    export(ledger, tmp_path / "export")
    from_parquet = open_ledger(tmp_path / "export")
    back = [r.event for r in from_parquet.read(stream=mem.stream)]
    assert back == events
    imported = import_dataset(tmp_path / "export", tmp_path / "imported.duckdb")
    assert [r.event for r in imported.read(stream=mem.stream)] == events
    rows = ledger.conn.execute(  # the reason codes are queryable: they are the row's ids list
        "SELECT count(*) FROM events WHERE event_type = 'summary_rejected' AND list_contains(ids, 'markup')"
    ).fetchone()
    assert rows is not None and 0 < rows[0] <= n_rejected
