"""End-to-end: a run, its determinism, its replay, and SQL over it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ledgermem.evaluation.metrics import without_timing
from ledgermem.evaluation.errors import UnknownSystem
from ledgermem.memory.errors import RunExists
from ledgermem.evaluation.replay import replay
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.memory.runs import open_run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.ledger.store import Ledger
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import ProjectionStore, projection_path
from ledgermem.projections.state import fold

SYSTEM_TIME = {"recorded_at", "latency_ms", "prev_hash", "hash"}  # the hashes cover recorded_at


def _run(runs_dir: Path, run_id: str = "demo", **synthetic: int):
    ds = generate_synthetic(**({"n_episodes": 6, "turns": 24, "seed": 7} | synthetic))
    return run(ds, RunOptions(run_id=run_id, runs_dir=runs_dir, memory=MemoryConfig(personal_data=False)))


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory):
    return _run(tmp_path_factory.mktemp("runs"))


def test_heuristic_three_layer_answers_current_and_history_probes(demo_run) -> None:
    m = demo_run.metrics["three_layer"]
    assert m["Current_Fact_N"] == 24 and m["History_Fact_N"] > 0
    assert m["Current_Fact_Acc"] >= 0.9 and m["History_Fact_Acc"] >= 0.9
    assert m["Avg_Active_Chain_Tokens"] > 0 and m["Avg_Rendered_Context_Tokens"] > m["Avg_Active_Chain_Tokens"]
    assert m["overrides_applied"] > 0 and m["tool_calls"] > 0


def test_probes_answers_and_judgements_are_in_the_ledger(demo_run) -> None:
    with Ledger(demo_run.ledger_path, read_only=True) as ledger:
        counts = dict(ledger.conn.execute(
            "SELECT event_type, count(*) FROM events WHERE event_type LIKE 'probe_%' GROUP BY ALL").fetchall())
    n = demo_run.metrics["three_layer"]["probes"]
    assert counts == {"probe_asked": n, "probe_answered": n, "probe_judged": n}


def _content(path: Path) -> list[tuple]:
    with Ledger(path, read_only=True) as ledger:
        result = ledger.conn.execute("SELECT * FROM events ORDER BY seq")
        names = [d[0] for d in result.description]
        return [tuple(v for k, v in zip(names, row) if k not in SYSTEM_TIME) for row in result.fetchall()]


def test_two_runs_with_the_same_arguments_give_identical_ledgers(tmp_path: Path, demo_run) -> None:
    other = _run(tmp_path)
    a, b = _content(demo_run.ledger_path), _content(other.ledger_path)
    assert len(a) == len(b) > 100
    assert a == b
    assert _content(_run(tmp_path / "x", seed=8).ledger_path) != a  # and the comparison can tell runs apart


def test_replay_reproduces_projections_row_for_row_and_identical_metrics(demo_run) -> None:
    with open_run(demo_run.ledger_path) as (ledger, projections):
        report = replay(ledger, projections)
    assert report.projections_identical and all(t.live_rows > 0 for t in report.tables if t.table != "index_versions")
    # Wall times measure the machine, not the memory: recorded metrics leave them out.
    assert without_timing(report.metrics) == without_timing(demo_run.metrics) == report.recorded_metrics
    assert all(row["wall_ms_per_turn"] > 0 for row in report.metrics.values())
    assert report.identical


def test_replay_detects_a_projection_that_disagrees_with_the_ledger(tmp_path: Path) -> None:
    result = _run(tmp_path, n_episodes=2, turns=12)
    with ProjectionStore(projection_path(result.ledger_path)) as store:
        store.conn.execute("UPDATE fact_versions SET value = 'forged' WHERE valid_to_seq IS NULL "
                            "AND rowid = (SELECT min(rowid) FROM fact_versions WHERE valid_to_seq IS NULL)")
    with open_run(result.ledger_path) as (ledger, projections):
        report = replay(ledger, projections)
    bad = [t for t in report.tables if not t.equal]
    assert [t.table for t in bad] == ["fact_versions"] and "value" in bad[0].first_difference
    assert not report.identical


def test_an_existing_run_is_not_replaced_without_force(tmp_path: Path) -> None:
    first = _run(tmp_path, n_episodes=1, turns=6)
    before = first.ledger_path.read_bytes()
    with pytest.raises(RunExists, match="--force"):
        _run(tmp_path, n_episodes=1, turns=8)  # other arguments, same run id
    assert first.ledger_path.read_bytes() == before
    again = _run(tmp_path, n_episodes=1, turns=6)  # the same arguments: already complete, nothing written
    assert first.ledger_path.read_bytes() == before and again.metrics == first.metrics


def test_unknown_system_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(UnknownSystem, match="nope"):
        run(generate_synthetic(n_episodes=1, turns=6), RunOptions(run_id="x", runs_dir=tmp_path, systems=("nope",)))
    assert not any(tmp_path.iterdir())


def test_config_problems_are_reported_together() -> None:
    with pytest.raises(ValueError, match="window_turns.*chain_budget"):
        MemoryConfig(window_turns=-1, chain_budget=0, tokenizer="x").validate()
