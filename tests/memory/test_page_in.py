"""Page-in: an archived summary or raw record brought back into the prompt for the next turns, as an event."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ledgermem.gate.decide
from ledgermem.gate.commands import PageIn, StartEpisode
from ledgermem.gate.decide import decide
from ledgermem.gate.errors import CommandRejected
from ledgermem.gate.invariants import audit
from ledgermem.projections.events import ContextRendered, PagedIn, ToolCalled, TurnRecorded
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.memory import Memory
from ledgermem.memory.replay_backend import ReplayBackend
from ledgermem.memory.toolcalls import ToolCall, parse_tool_calls
from ledgermem.memory.tools import PAGE_IN_OUTSIDE_A_TURN
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.errors import EvolveError
from ledgermem.projections.materialise import ProjectionStore, projection_path, rebuild
from ledgermem.projections.render import render
from ledgermem.projections.sql_rebuild import rebuild_sql_ledger
from ledgermem.projections.state import EpisodeState, evolve, fold
from ledgermem.projections.tokens import ESTIMATOR
from ledgermem.temporal import Episode, manifest

STREAM = StreamKey("run", "three_layer", "ep")
CONFIG = MemoryConfig(tokenizer=ESTIMATOR, window_turns=2, page_in_turns=2, personal_data=False)
TURNS = [  # (user, summarizer response)
    ("My city is Paris.", "city Paris\n[FACTS: city=Paris]\n[OVERRIDES: none]"),
    ("My city is Berlin now.", "city Berlin\n[FACTS: city=Berlin]\n[OVERRIDES: s0001]"),
    ("My team size is 6.", "team of six\n[FACTS: team=6]\n[OVERRIDES: none]"),
    ("Nice weather today.", "NONE"),
]


def _script(messages, purpose: str) -> str:
    """Summaries by the turn in the prompt; respond calls page in what the user names, then answer."""
    if purpose == "summarize":
        body = messages[-1]["content"]
        return next((r for u, r in TURNS if u in body), "NONE")
    if purpose == "respond":
        if any(m["content"].startswith("[TOOL RESULT") for m in messages):
            return "Done.\n<MEMORY_UPDATE>NONE</MEMORY_UPDATE>"
        user = messages[-1]["content"].rpartition("MESSAGE: ")[2]  # the memory comes first, as data
        if user.startswith("bring "):
            return f'page_in(item_id="{user.split()[1]}")'
        return "Noted.\n<MEMORY_UPDATE>NONE</MEMORY_UPDATE>"
    return "I don't know."


def _memory(tmp_path: Path, backend=None, config: MemoryConfig = CONFIG, **kw) -> Memory:
    ledger = Ledger(tmp_path / "l.duckdb")
    store = ProjectionStore(projection_path(ledger.path))
    return Memory(ledger, STREAM, backend or ScriptedBackend(_script), config=config, projections=store,
                  strict=True, **kw)


def _ingested(tmp_path: Path, **kw) -> Memory:
    m = _memory(tmp_path, **kw)
    for user, _ in TURNS:
        m.add_turn(user, "ok")
    assert m.state.summaries["s0001"].status == "archived" and m.state.window == ("r0003", "r0004")
    return m


# -- the tool brings an item back, at its original turn, for N turns ---------------------------


def test_a_paged_in_archived_summary_is_shown_after_the_window_at_its_original_turn(tmp_path: Path) -> None:
    m = _ingested(tmp_path)
    before = m.render()
    assert "s0001" not in before.item_ids and "PAGED_IN" not in before.text
    recorded = m.page_in("s0001")
    assert [type(r.event) for r in recorded] == [PagedIn]
    event = recorded[0].event
    assert (event.summary_id, event.record_id, event.turn, event.until_turn) == ("s0001", None, 4, 6)
    shown = m.render()
    assert [p.name for p in shown.parts][:3] == ["pinned", "window", "paged_in"]
    (item,) = shown.part("paged_in").items
    assert item.item_id == "s0001"
    assert item.text.startswith("- s0001 (turn 1; raw r0001) city Paris [FACTS: city=Paris]")
    assert "[PAGED IN at turn 4, shown through turn 6; archived (overridden), superseded by s0002]" in item.text
    # The block sits right after the recent turns; the registry still says what holds now.
    text = shown.text
    assert text.index("</RECENT_TURNS>") < text.index("<PAGED_IN>") < text.index("<CURRENT_VALUES>")
    assert "city=Berlin" in shown.part("registry").items[0].text
    # Nothing else moved: every other part is what it was.
    assert [p for p in shown.parts if p.name != "paged_in"] == list(before.parts)


def test_paged_in_items_keep_time_order_and_leave_after_their_turns(tmp_path: Path) -> None:
    m = _ingested(tmp_path)
    m.page_in("r0002")  # a raw record evicted from the window
    m.page_in("s0001")
    assert m.render().part("paged_in").ids == ("s0001", "r0002")  # turn 1 before turn 2, whatever the page-in order
    raw_line = m.render().part("paged_in").items[1].text
    assert raw_line.startswith("[r0002 turn 2] USER: My city is Berlin now. | AGENT: ok [PAGED IN at turn 4")
    m.add_turn("Hello.", "hi")  # turn 5: still shown (through turn 6)
    assert m.render().part("paged_in").ids == ("s0001", "r0002")
    m.add_turn("Hello again.", "hi")  # turn 6 recorded: the prompt for turn 7 no longer shows them
    assert m.render().part("paged_in").ids == () and "paged_in" not in m.render().manifest()
    assert m.state.paged_in == {}


def test_paging_in_again_restarts_the_turns(tmp_path: Path) -> None:
    m = _ingested(tmp_path)
    m.page_in("s0001")
    m.add_turn("Hello.", "hi")
    m.page_in("s0001")  # at turn 5: now through turn 7
    m.add_turn("Hello again.", "hi")  # turn 6: the first page-in's last prompt was turn 6's; the second's is 7's
    assert m.render().part("paged_in").ids == ("s0001",)
    m.add_turn("And again.", "hi")
    assert m.render().part("paged_in").ids == ()


def test_the_live_tool_loop_pages_in_and_the_manifest_of_the_next_turns_lists_it(tmp_path: Path) -> None:
    m = _ingested(tmp_path)
    reply = m.respond("bring s0001 back please")
    events = [r.event for r in reply.recorded]
    called = next(e for e in events if isinstance(e, ToolCalled))
    paged = next(e for e in events if isinstance(e, PagedIn))
    assert called.tool == "page_in" and called.ok and "[FACTS: city=Paris]" in called.text
    assert "through turn 7" in called.text
    # Recorded with the turn it was asked in, right after the call that asked for it.
    assert events.index(paged) == events.index(called) + 1 and paged.turn == 5 and paged.until_turn == 7
    assert next(e for e in events if isinstance(e, TurnRecorded)).turn == 5
    # The prompt of this turn did not have it; the next turns' prompts do, and their manifests say so.
    assert "s0001" not in next(e for e in events if isinstance(e, ContextRendered)).item_ids
    nxt = [r.event for r in m.respond("hello").recorded]
    context = next(e for e in nxt if isinstance(e, ContextRendered))
    assert context.parts["paged_in"]["ids"] == ["s0001"] and "s0001" in context.item_ids
    rows = manifest(m.ledger.conn, Episode(*STREAM.as_tuple()), turn=6)
    assert len(rows) == 1 and "s0001" in rows[0]["item_ids"]


def test_the_paged_in_part_is_in_the_model_facing_prompt(tmp_path: Path) -> None:
    backend = ScriptedBackend(_script)
    m = _ingested(tmp_path, backend=backend)
    m.page_in("r0001")
    m.respond("hello")
    prompt = "\n".join(msg["content"] for msg in backend.calls[-1][1])
    assert "<PAGED_IN>\n[r0001 turn 1] USER: My city is Paris. | AGENT: ok [PAGED IN at turn 4" in prompt
    assert 'page_in(item_id="s0003")' in prompt  # the live turn's tool manual offers it


# -- refusals, and the must-fail control ------------------------------------------------------


@pytest.mark.parametrize("item_id, reason", [
    ("s9999", "no such id"),
    ("r0099", "no such id"),
    ("s0002", "in the active chain"),
    ("r0004", "in the recent turns"),
    ("", "no such id"),
])
def test_an_item_that_is_not_archived_or_out_of_the_window_is_refused_naming_why(
        tmp_path: Path, item_id: str, reason: str) -> None:
    m = _ingested(tmp_path)
    before = m.version
    with pytest.raises(CommandRejected, match=reason):
        m.page_in(item_id)
    assert m.version == before and m.state.paged_in == {}


def test_an_invented_id_from_the_model_is_a_failed_call_with_its_reason_and_nothing_is_paged_in(tmp_path: Path) -> None:
    m = _ingested(tmp_path)
    reply = m.respond("bring s9999 back please")
    events = [r.event for r in reply.recorded]
    (called,) = [e for e in events if isinstance(e, ToolCalled)]
    assert not called.ok and "no such id" in called.text and "s9999" in called.text
    assert not any(isinstance(e, PagedIn) for e in events) and m.state.paged_in == {}
    stored = m.ledger.conn.execute("SELECT count(*) FROM events WHERE event_type = 'paged_in'").fetchone()
    assert stored == (0,)


def test_control_without_the_validation_an_invented_id_would_be_stored(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    m = _ingested(tmp_path)
    monkeypatch.setattr(ledgermem.gate.decide, "page_in_refusal", lambda state, item_id: "")
    (event,) = decide(m.state, PageIn(item_id="s9999", turn=m.state.turn))
    assert event.item_id == "s9999"
    # Committed, it would reach the ledger before the fold could object.
    with pytest.raises(EvolveError, match="unknown raw record 's9999'"):
        m.page_in("s9999")
    ids = m.ledger.conn.execute("SELECT record_id FROM events WHERE event_type = 'paged_in'").fetchall()
    assert ids == [("s9999",)]


def test_an_erased_item_is_refused_and_a_paged_in_item_that_is_erased_is_no_longer_shown(tmp_path: Path) -> None:
    m = _ingested(tmp_path, config=replace(CONFIG, personal_data=True))
    m.page_in("r0001")
    assert m.render().part("paged_in").ids == ("r0001",)
    m.erase(record_id="r0001", legal_basis="test")
    assert m.render().part("paged_in").ids == () and "Paris" not in m.render().text
    with pytest.raises(CommandRejected, match="was erased"):
        m.page_in("r0001")


def test_a_question_reads_but_never_pages_in(tmp_path: Path) -> None:
    m = _ingested(tmp_path, backend=ScriptedBackend(
        lambda msgs, p: "Paris" if "[TOOL RESULT" in msgs[-1]["content"] else
        ('page_in(item_id="s0001")' if p == "answer" else _script(msgs, p))))
    answer = m.ask("Which city did s0001 record?")
    (called,) = [e for e in answer.events if isinstance(e, ToolCalled)]
    assert not called.ok and called.text == PAGE_IN_OUTSIDE_A_TURN
    assert not any(isinstance(e, PagedIn) for e in answer.events) and m.state.paged_in == {}


def test_the_fold_refuses_a_paged_in_event_naming_no_item_or_two() -> None:
    started = fold(list(decide(EpisodeState(), StartEpisode(config=CONFIG))))  # type: ignore[arg-type]
    with pytest.raises(EvolveError, match="exactly one"):
        evolve(started, PagedIn(turn=0, until_turn=2))
    with pytest.raises(EvolveError, match="exactly one"):
        evolve(started, PagedIn(turn=0, until_turn=2, summary_id="s0001", record_id="r0001"))
    with pytest.raises(EvolveError, match="unknown summary 's0001'"):
        evolve(started, PagedIn(turn=0, until_turn=2, summary_id="s0001"))


# -- the budget -------------------------------------------------------------------------------


def test_over_the_budget_the_oldest_page_in_is_dropped_first_and_the_manifest_names_it(tmp_path: Path) -> None:
    m = _ingested(tmp_path)
    m.page_in("s0001")
    m.page_in("r0001")
    m.page_in("r0002")
    full = m.render()
    assert full.part("paged_in").ids == ("s0001", "r0001", "r0002")
    need = full.part("paged_in").tokens
    # Room for all but the first page-in's line: s0001 goes, the others stay whole.
    s_line = next(i for i in full.part("paged_in").items if i.item_id == "s0001")
    tight = m.render(full.tokens - s_line.tokens)
    assert tight.part("paged_in").ids == ("r0001", "r0002") and tight.part("paged_in").dropped == ("s0001",)
    assert tight.manifest()["paged_in"] == {"ids": ["r0001", "r0002"], "tokens": need - s_line.tokens,
                                            "dropped": ["s0001"]}
    assert tight.tokens <= tight.budget
    assert all(i.text == j.text for i, j in zip(tight.part("paged_in").items, full.part("paged_in").items[1:]))


@settings(max_examples=60, deadline=None)
@given(budget=st.integers(min_value=20, max_value=400),
       picks=st.lists(st.sampled_from(["s0001", "r0001", "r0002"]), min_size=1, max_size=5))
def test_paging_in_never_cuts_anything_else_nor_passes_the_budget(budget: int, picks: list[str]) -> None:
    state = _folded()
    base = render(state, budget)
    for item in picks:
        state = fold(list(decide(state, PageIn(item_id=item, turn=state.turn))), state)
    shown = render(state, budget)
    assert [p for p in shown.parts if p.name != "paged_in"] == list(base.parts)
    if base.tokens <= budget:
        assert shown.tokens <= budget
    paged = shown.part("paged_in")
    order = list(state.paged_in)  # oldest page-in first
    assert set(paged.ids) | set(paged.dropped) == set(order)
    # What was dropped is a prefix of the page-in order: the oldest go first.
    assert list(paged.dropped) == order[: len(paged.dropped)]


def _folded() -> EpisodeState:
    """The ingested state of `TURNS`, folded once (a Hypothesis example must not build a ledger)."""
    global _FOLDED
    if _FOLDED is None:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            m = _ingested(Path(d))
            _FOLDED = m.state
            m.ledger.close()
    return _FOLDED


_FOLDED: EpisodeState | None = None


# -- replay, projections, invariants ----------------------------------------------------------


def _with_page_ins(tmp_path: Path, backend=None) -> Memory:
    m = _ingested(tmp_path, backend=backend)
    m.respond("bring s0001 back please")
    m.respond("bring r0002 back please")
    m.respond("hello")
    m.page_in("r0001")
    m.respond("hello again")
    return m


def test_a_fold_of_the_ledger_gives_the_live_state_and_the_same_prompts(tmp_path: Path) -> None:
    m = _with_page_ins(tmp_path)
    replayed = fold([r.event for r in m.ledger.read(stream=STREAM)])  # type: ignore[misc]
    assert replayed == m.state and replayed.paged_in
    assert render(replayed) == m.render()


def test_a_replay_from_the_recorded_calls_writes_the_same_events(tmp_path: Path) -> None:
    m = _with_page_ins(tmp_path / "a")
    events = [r.event for r in m.ledger.read(stream=STREAM)]
    calls = [e for e in events if e.event_type == "llm_called"]
    again = _with_page_ins(tmp_path / "b", backend=ReplayBackend(calls, source="run a"))  # type: ignore[arg-type]
    replayed = [r.event for r in again.ledger.read(stream=STREAM)]

    def timeless(e):  # latencies are the machine's, not the memory's
        return replace(e, latency_ms=None) if hasattr(e, "latency_ms") else e

    assert [timeless(e) for e in replayed] == [timeless(e) for e in events]
    assert sum(isinstance(e, PagedIn) for e in events) == 3


def test_the_sql_rebuild_and_the_fold_agree_with_page_ins_and_the_invariants_hold(tmp_path: Path) -> None:
    m = _with_page_ins(tmp_path)
    # Paged-in items are render-time state: the tables are those of the same memory without them.
    assert rebuild_sql_ledger(m.ledger) == rebuild(m.ledger)
    report = audit(m.ledger, m.projections)
    assert report.ok, report.failed()


def test_toolcall_forms_of_page_in_are_read() -> None:
    assert parse_tool_calls('page_in(item_id="s0003")').calls == (ToolCall("page_in", {"item_id": "s0003"}),)
    assert parse_tool_calls('{"name": "page_in", "arguments": {"item": "r0007"}}').calls == (
        ToolCall("page_in", {"item_id": "r0007"}),)
    assert parse_tool_calls('page_in(id="s0003")').calls == (ToolCall("page_in", {"summary_id": "s0003"}),)


def test_memory_tool_pages_in_under_a_read_tools_argument_name(tmp_path: Path) -> None:
    m = _ingested(tmp_path)
    result = m.tool("page_in", {"summary_id": "s0001"})
    assert result.ok and m.state.paged_in["s0001"].until_turn == 6
    refused = m.tool("page_in", {})
    assert not refused.ok and "missing argument item_id" in refused.text


def test_the_heuristic_backend_pages_in_an_item_it_was_asked_about_and_answers_from_it_next_turn(
        tmp_path: Path) -> None:
    m = _memory(tmp_path, backend="heuristic", config=replace(CONFIG, page_in_turns=3))
    for user in ("My city is Paris.", "My city is Berlin.", "I like tea.", "Nice weather."):
        m.add_turn(user, "ok")
    assert m.state.summaries["s0001"].status == "archived"
    first = m.respond("Which city did memory s0001 (turn 1) record?")
    assert first.text == "Paris"
    assert [e.tool for r in first.recorded if isinstance(e := r.event, ToolCalled)] == ["page_in"]
    second = m.respond("Which city did memory s0001 (turn 1) record?")
    assert second.text == "Paris" and not any(isinstance(r.event, ToolCalled) for r in second.recorded)


def test_the_hot_cache_keeps_the_paged_in_part_and_what_the_budget_dropped(tmp_path: Path) -> None:
    pytest.importorskip("redis", reason="the redis client is in the dev extra: pip install -e '.[dev]'")
    from ledgermem.memory.cache import HotCache
    from tests.service.conftest import RedisServer, require_binary

    server = RedisServer(require_binary("redis-server", "redis-server"), tmp_path)
    server.start()
    try:
        cache = HotCache(server.client())
        # A budget with room for the paged-in raw records but not for the older summary as well.
        probe = _ingested(tmp_path / "probe")
        for item in ("s0001", "r0001", "r0002"):
            probe.page_in(item)
        full = probe.render()
        budget = full.tokens - full.part("paged_in").items[0].tokens
        m = _ingested(tmp_path / "m", config=replace(CONFIG, context_budget=budget), cache=cache)
        for item in ("s0001", "r0001", "r0002"):
            m.page_in(item)
        fresh = render(m.state)
        assert fresh.part("paged_in").dropped == ("s0001",)
        assert m.render() == fresh and cache.stats.hits >= 1  # served from Redis, paged-in part and all
        assert cache.read(m.ledger, STREAM).rendered.manifest() == fresh.manifest()
        m.add_turn("Hello.", "hi")
        m.add_turn("Hello again.", "hi")
        assert m.render() == render(m.state) and "paged_in" not in m.render().manifest()
    finally:
        server.kill()


def test_a_page_in_names_the_last_turn_or_the_one_being_answered() -> None:
    state = _folded()
    assert decide(state, PageIn(item_id="s0001", turn=state.turn + 1))[0].until_turn == state.turn + 3
    for turn in (state.turn - 1, state.turn + 2):
        with pytest.raises(CommandRejected, match=f"PageIn\\(turn={turn}\\)"):
            decide(state, PageIn(item_id="s0001", turn=turn))
    with pytest.raises(CommandRejected, match="has not started"):
        decide(EpisodeState(), PageIn(item_id="s0001", turn=0))


def test_a_record_of_a_source_that_is_not_remembered_is_never_paged_in(tmp_path: Path) -> None:
    m = _memory(tmp_path, config=replace(CONFIG, source_policies={"web": {"remember": False}}))
    m.add_turn("Note from a web page.", "ok", source="web")
    for user, _ in TURNS:
        m.add_turn(user, "ok")
    with pytest.raises(CommandRejected, match="not remembered"):
        m.page_in("r0001")
    m.page_in("r0002")  # an ordinary record out of the window is fine
    assert m.render().part("paged_in").ids == ("r0002",)


def test_a_summary_under_an_index_title_can_be_paged_in(tmp_path: Path) -> None:
    # The summarizer restates the desk without overriding: the older summaries hold no newest value,
    # so the tight chain budget puts them under a title.
    desks = ["A1", "B2", "C3", "D4", "E5"]
    responses = iter(f"desk {d}\n[FACTS: desk={d}]\n[OVERRIDES: none]" for d in desks)
    backend = ScriptedBackend(lambda msgs, p: next(responses, "NONE") if p == "summarize" else "ok")
    m = _memory(tmp_path, backend=backend, config=replace(CONFIG, chain_budget=40, index_group_size=2))
    for d in desks:
        m.add_turn(f"My desk is {d}.", "ok")
    indexed = [s for s in m.state.summaries.values() if s.status == "indexed"]
    assert indexed, [(s.summary_id, s.status) for s in m.state.summaries.values()]
    m.page_in(indexed[0].summary_id)
    (item,) = m.render().part("paged_in").items
    assert item.item_id == indexed[0].summary_id and f"under index {indexed[0].index_id}]" in item.text
