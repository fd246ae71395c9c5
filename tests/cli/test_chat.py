"""`ledgermem chat`: live turns with self-written memory, the context each answer held, and commands."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.ledger.store import Ledger


def _chat(tmp_path: Path, lines: list[str]) -> str:
    result = CliRunner().invoke(cli, ["chat", "--ledger", str(tmp_path / "c.duckdb"), "--env-file",
                                      str(tmp_path / "none.env")], input="\n".join(lines) + "\n",
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_chat_records_live_turns_and_shows_the_context_of_each_answer(tmp_path: Path) -> None:
    out = _chat(tmp_path, ["My office floor is 3F.", "My office floor changed to 7F.",
                           "What is my office floor now?", "/values", "/tool get_archived_summary summary_id=s0001",
                           "/quit", "never read"])
    assert "agent> 7F" in out
    assert "context: pinned -; window r0001, r0002; registry slot:office floor" in out
    assert "memory update: self-written" in out
    assert "office floor = 7F" in out and "ok: s0001" in out and "superseded by s0002" in out
    with Ledger(tmp_path / "c.duckdb", read_only=True) as ledger:
        assert ledger.verify().ok
        kinds = [r.event.event_type for r in ledger.read()]
    assert kinds.count("turn_recorded") == 3  # the line after /quit was never read
    assert kinds.count("summary_created") == 2 and kinds.count("summary_overridden") == 1


def test_reopening_the_chat_ledger_resumes_the_episode(tmp_path: Path) -> None:
    _chat(tmp_path, ["My home city is Lisbon."])
    out = _chat(tmp_path, ["What is my home city?"])
    assert "turn 1)" in out and "agent> Lisbon" in out


def test_live_turn_memory_writes_are_counted_in_the_metrics(tmp_path: Path) -> None:
    from ledgermem.evaluation.metrics import compute_metrics, outcome_from_events

    _chat(tmp_path, ["My office floor is 3F.", "Nice weather.", "My office floor changed to 7F."])
    with Ledger(tmp_path / "c.duckdb", read_only=True) as ledger:
        ledger.open_keys()
        (stream, _), = [s for s in ledger.streams() if s[0].episode_id]
        row = compute_metrics([outcome_from_events("three_layer", "chat", ledger.read(stream=stream))])["three_layer"]
    assert row["self_written_turns"] == 3 and row["self_write_fallbacks"] == 0
    assert row["llm_calls_respond"] == 3 and row["llm_calls_summarize"] == 0
