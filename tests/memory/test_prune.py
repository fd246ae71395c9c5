"""Dedup before summarising: repeated tool output is collapsed, counted, and recorded with the call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ledgermem.evaluation.baselines import BaselineMemory
from ledgermem.projections.events import LlmCalled, TurnRecorded
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import Message, ScriptedBackend
from ledgermem.memory.memory import Memory
from ledgermem.memory.prompts import rolling_summary_messages, summarizer_messages
from ledgermem.memory.prune import PRUNED_KEY, Pruned, prune_repeats, prune_turn, repeat_note
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False)
LOG = "GET /api/v2/orders?page=1 -> 200 OK in 12ms"
DUMP = "\n".join(["tool: search_orders", *[LOG] * 6, "3 orders found"])


def _expand(text: str) -> list[str]:
    """The lines a pruned text stands for: each note replaced by the repeats it announces."""
    out: list[str] = []
    lines = text.split("\n")
    for line in lines:
        for block in range(1, 41):
            for more in range(1, 200):
                if line == repeat_note(block, more):
                    out += out[-block:] * more
                    break
            else:
                continue
            break
        else:
            out.append(line)
    return out


def test_a_repeated_line_is_kept_once_with_a_note_saying_how_many_more_times_it_came() -> None:
    pruned = prune_repeats(DUMP)
    assert pruned == Pruned(f"tool: search_orders\n{LOG}\n{repeat_note(1, 5)}\n3 orders found", 5)
    assert repeat_note(1, 5) == "[the line above came 5 more times, not repeated here]"


def test_a_repeated_block_of_lines_collapses_as_a_block() -> None:
    block = ["row 1: Lyon, 2024-03-01, shipped", "row 2: Paris, 2024-03-02, pending", "row 3: Nice, 2024-03-03"]
    pruned = prune_repeats("\n".join(["result:", *block * 4, "end"]))
    assert pruned.text.split("\n") == ["result:", *block, repeat_note(3, 3), "end"]
    assert pruned.lines == 9


def test_whitespace_differences_do_not_hide_a_repeat() -> None:
    assert prune_repeats(f"{LOG}\n  {LOG}  \n{LOG.replace(' ', '  ')}").lines == 2


def test_control_lines_said_once_are_never_touched() -> None:
    """A value that changes and comes back is three different statements: nothing is collapsed."""
    for text in ("My meeting is at 9am.\nNo, 10am.\nMy meeting is at 9am.", "a\n\n\n\nb", "", "one line",
                 "ok\nok"):  # a short repeat is cheaper than its note: kept
        assert prune_repeats(text) == Pruned(text, 0)


def test_a_turn_counts_the_lines_pruned_from_both_texts() -> None:
    user, agent, n = prune_turn(f"see:\n{LOG}\n{LOG}\n{LOG}", DUMP)
    assert n == 7 and user == f"see:\n{LOG}\n{repeat_note(1, 2)}" and agent == prune_repeats(DUMP).text


@given(st.lists(st.sampled_from([LOG, "alpha beta gamma delta epsilon zeta eta theta", "x", "", "row 7: ok"]),
                max_size=40))
def test_pruning_loses_nothing_but_repeats(lines: list[str]) -> None:
    """Expanding every note gives the text back line for line; the count is the lines removed."""
    text = "\n".join(lines)
    pruned = prune_repeats(text)
    assert _expand(pruned.text) == text.split("\n")
    notes = sum(line.startswith("[the ") and "not repeated here]" in line for line in pruned.text.split("\n"))
    assert len(text.split("\n")) - pruned.lines + notes == len(pruned.text.split("\n"))


# -- in the prompts and the ledger ------------------------------------------------------------------

def _summarize_calls(backend: ScriptedBackend) -> list[Sequence[Message]]:
    return [m for p, m in backend.calls if p == "summarize"]


def test_the_summarizer_gets_the_pruned_turn_and_the_call_records_the_count(tmp_path: Path) -> None:
    backend = ScriptedBackend(lambda m, p: "NONE")
    m = Memory(Ledger(tmp_path / "l.duckdb"), StreamKey("r", "three_layer", "e"), backend, config=CONFIG)
    recorded = m.add_turn("Please look up my orders.", DUMP)
    [prompt] = _summarize_calls(backend)
    body = prompt[1]["content"]
    assert body.count(LOG) == 1 and repeat_note(1, 5) in body
    [call] = [r.event for r in recorded if isinstance(r.event, LlmCalled)]
    assert call.usage[PRUNED_KEY] == 5
    # The archive keeps the turn as it was said: only the prompt was pruned.
    [turn] = [r.event for r in recorded if isinstance(r.event, TurnRecorded)]
    assert turn.agent == DUMP


def test_control_a_turn_without_repeats_records_no_count_and_an_unchanged_prompt(tmp_path: Path) -> None:
    backend = ScriptedBackend(lambda m, p: "NONE")
    m = Memory(Ledger(tmp_path / "l.duckdb"), StreamKey("r", "three_layer", "e"), backend, config=CONFIG)
    recorded = m.add_turn("My meeting time is 9am.", "Noted.")
    [call] = [r.event for r in recorded if isinstance(r.event, LlmCalled)]
    assert PRUNED_KEY not in call.usage
    assert "USER: My meeting time is 9am.\nAGENT: Noted.\n</NEW_TURN>" in _summarize_calls(backend)[0][1]["content"]


def test_the_prompt_builders_prune_what_they_show() -> None:
    from ledgermem.projections.state import EpisodeState

    state = EpisodeState(config=CONFIG, started=True)
    body = summarizer_messages(state, turn=1, user="hi", agent=DUMP)[1]["content"]
    assert body.count(LOG) == 1
    rolled = rolling_summary_messages("(empty)", ["[r0001 turn 1] USER: orders? | AGENT: tool: search_orders",
                                                  *[LOG] * 4], first_turn=1, last_turn=1, max_tokens=400)
    assert rolled[1]["content"].count(LOG) == 1 and repeat_note(1, 3) in rolled[1]["content"]


def test_the_baselines_record_what_their_summarizer_prompt_left_out(tmp_path: Path) -> None:
    for kind, turns in (("naive_chain", 1), ("memgpt_style", 6)):
        backend = ScriptedBackend(lambda m, p: "NONE")
        b = BaselineMemory(Ledger(tmp_path / f"{kind}.duckdb"), StreamKey("r", kind, "e"), backend, kind=kind,
                           config=MemoryConfig(tokenizer=ESTIMATOR, personal_data=False, window_turns=2))
        calls: list[LlmCalled] = []
        for _ in range(turns):
            calls += [r.event for r in b.add_turn("Please look up my orders.", DUMP)
                      if isinstance(r.event, LlmCalled)]
        assert calls and any(c.usage.get(PRUNED_KEY) == 5 for c in calls), kind
        for messages in _summarize_calls(backend):
            assert LOG * 2 not in "".join(messages[1]["content"].split("\n")), kind
