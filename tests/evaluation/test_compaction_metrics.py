"""Compaction that cannot silently forget, measured from the ledger.

Synthetic trajectories plant hard constraints early and open loops mid-way;
a tight context budget cuts rendered items and a small chain budget makes
compaction run (a small summarizer input keeps old summaries active, so
there is something to compact). Under that pressure three_layer must keep
every constraint answerable and every live pin in the prompt, and every
count the report shows must be the ledger's own count.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.evaluation.metrics import compute_metrics, outcome_from_events
from ledgermem.projections.events import ConstraintReinjected
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.render import render
from ledgermem.projections.state import EpisodeState, evolve
from ledgermem.projections.tokens import ESTIMATOR

TIGHT = ("--episodes", "2", "--turns", "24", "--seed", "7", "--memory-points", "0", "--context-budget", "160",
         "--chain-budget", "50", "--summarizer-input-tokens", "30")


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("compaction")
    _invoke("run", *TIGHT, "--systems", "three_layer,naive_chain", "--run-id", "tight", "--runs-dir", str(folder))
    _invoke("report", "tight", "--runs-dir", str(folder))
    _invoke("run", *TIGHT, "--systems", "three_layer", "--chain-strategy", "merge", "--run-id", "merge",
            "--runs-dir", str(folder))
    return folder


def _metrics(runs: Path, run_id: str) -> dict[str, dict[str, str]]:
    with (runs / run_id / "metrics.csv").open(encoding="utf-8") as fh:
        return {row["system"]: row for row in csv.DictReader(fh)}


def _ledger_counts(runs: Path, run_id: str) -> Counter[str]:
    """Event counts of three_layer's streams, and the open loops the compaction reports saw."""
    counts: Counter[str] = Counter()
    with Ledger(runs / run_id / "ledger.duckdb", read_only=True) as ledger:
        for r in ledger.read(run_id=run_id):
            if r.stream.system != "three_layer":
                continue
            counts[r.event.event_type] += 1
            if r.event.event_type == "compaction_checked":
                counts["open_loops_before"] += r.event.open_loops_before
                counts["open_loops_after"] += r.event.open_loops_after
    return counts


def test_the_budget_is_tight_enough_to_cut_rendered_items(runs: Path) -> None:
    with Ledger(runs / "tight" / "ledger.duckdb", read_only=True) as ledger:
        stream = next(s for s, _ in ledger.streams("tight") if s.system == "three_layer" and s.episode_id)
        state, cut_turns = EpisodeState(), set()
        for r in ledger.read(stream=stream):
            state = evolve(state, r.event)
            rendered = render(state)
            if any(i.text.endswith("…") for name in ("window", "index", "chain") for i in rendered.part(name).items):
                cut_turns.add(state.turn)
    assert state.config.context_budget == 160 and state.config.chain_budget == 50
    assert len(cut_turns) >= 5


def test_constraints_and_pins_survive_compaction_where_a_naive_chain_loses_them(runs: Path) -> None:
    m = _metrics(runs, "tight")
    ours = m["three_layer"]
    assert int(ours["Compactions"]) > 0 and int(ours["indexes_created"]) > 0
    assert float(ours["Constraint_Survival"]) == 1.0
    assert float(ours["Open_Loop_Survival"]) == 1.0
    assert float(ours["Pin_Survival"]) == 1.0 and int(ours["pin_turns"]) > 0
    assert int(ours["Open_Loop_Drops"]) == 0
    # The same budget is not harmless: the baseline drops early constraints.
    assert float(m["naive_chain"]["Constraint_Survival"]) < 1.0
    assert m["naive_chain"]["Pin_Survival"] == "" and m["naive_chain"]["Constraint_Reinjections"] == ""


@pytest.mark.parametrize("run_id", ["tight", "merge"])
def test_every_compaction_count_is_the_ledgers_count(runs: Path, run_id: str) -> None:
    ours, counted = _metrics(runs, run_id)["three_layer"], _ledger_counts(runs, run_id)
    expected = {
        "Compactions": counted["compaction_checked"],
        "Constraint_Reinjections": counted["constraint_reinjected"],
        "Capacity_Merges": counted["capacity_merged"],
        "Merges_Rejected": counted["merge_rejected"],
        "Index_Folds": counted["index_folded"],
        "indexes_created": counted["index_created"],
        "Open_Loops_Before": counted["open_loops_before"],
        "Open_Loops_After": counted["open_loops_after"],
    }
    assert {k: int(ours[k]) for k in expected} == expected


def test_merge_runs_end_to_end_and_its_counts_reach_the_metrics(runs: Path) -> None:
    ours = _metrics(runs, "merge")["three_layer"]
    assert int(ours["Compactions"]) > 0
    assert int(ours["Capacity_Merges"]) + int(ours["Merges_Rejected"]) > 0
    assert int(ours["indexes_created"]) == 0 and int(ours["Index_Folds"]) == 0
    assert float(ours["Constraint_Survival"]) == 1.0 and float(ours["Pin_Survival"]) == 1.0
    assert float(ours["Current_Fact_Acc"]) == 1.0
    # A merge rewrites summaries already written: it is a capacity step, not a new write.
    counted = _ledger_counts(runs, "merge")
    assert int(ours["summaries_created"]) == counted["summary_created"] - counted["capacity_merged"]


def test_the_report_shows_compaction_and_re_injection_counts(runs: Path) -> None:
    report = (runs / "tight" / "report.md").read_text(encoding="utf-8")
    section = report.split("## Compaction and pins", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    head = [c.strip() for c in next(x for x in lines if x.startswith("| system |")).strip("|").split("|")]
    rows = {r.split("|")[1].strip(): [c.strip() for c in r.strip("|").split("|")] for r in lines if r.startswith("| `")}
    ours = dict(zip(head, rows["`three_layer`"]))
    counted = _ledger_counts(runs, "tight")
    assert ours["compactions"] == str(counted["compaction_checked"])
    assert ours["constraint re-injections"] == str(counted["constraint_reinjected"])
    assert ours["Pin_Survival"] == "1.000"
    assert ours["open loops before → after"] == f"{counted['open_loops_before']} → {counted['open_loops_after']}"
    assert ours["index titles"] == str(counted["index_created"])
    assert set(rows["`naive_chain`"][1:-1]) == {"n/a"}


def test_a_replay_of_the_ledger_gives_the_same_metrics(runs: Path) -> None:
    output = _invoke("replay", "tight", "--runs-dir", str(runs))
    assert "metrics identical -> reproduced" in output


# -- re-injection, with a summarizer that loses a constraint -----------------------------

CONSTRAINT = "My budget limit is 450 dollars. Treat that as a hard constraint."


def _lossy(messages: object, purpose: str) -> str:
    """A summarizer that writes nothing: the constraint survives only through the pinned block."""
    return "NONE" if purpose == "summarize" else "I don't know."


def test_a_pin_the_prompt_lost_is_reinjected_counted_and_shown(tmp_path: Path) -> None:
    with Ledger(tmp_path / "ledger.duckdb") as ledger:
        stream = StreamKey("lossy", "three_layer", "e1")
        memory = Memory(ledger, stream, ScriptedBackend(_lossy),
                        config=MemoryConfig(window_turns=2, tokenizer=ESTIMATOR, personal_data=False))
        for user in (CONSTRAINT, "The weather is lovely today.", "I had pasta for lunch.", "Thanks for the help."):
            memory.add_turn(user, "Noted.")
        recorded = list(ledger.read(stream=stream))
    row = compute_metrics([outcome_from_events("three_layer", "e1", recorded)])["three_layer"]
    assert row["Constraint_Reinjections"] == 1 and row["Compactions"] >= 1
    assert row["Pin_Survival"] == 1.0 and row["pin_turns"] == 4
    # Must-fail control: the same ledger without its re-injection shows the pin missing once it left the window.
    hidden = [r for r in recorded if not isinstance(r.event, ConstraintReinjected)]
    broken = compute_metrics([outcome_from_events("three_layer", "e1", hidden)])["three_layer"]
    assert broken["Constraint_Reinjections"] == 0
    assert broken["Pin_Survival"] == 0.5  # shown while in the window (turns 1-2), missing at turns 3-4
