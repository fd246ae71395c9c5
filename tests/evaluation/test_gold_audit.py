"""The dataset's gold in the ledger, and I4 audited against it from the ledger alone (DuckDB file or Parquet)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledgermem.datasets.loaders import load_dataset
from ledgermem.evaluation.replay import replay
from ledgermem.evaluation.runner import RunOptions, _gold_event, run
from ledgermem.memory.runs import open_run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.gate.invariants import audit
from ledgermem.projections.events import EpisodeGold
from ledgermem.ledger.parquet import export
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"
LOCOMO = FIXTURES / "locomo10_sample.json"
CONFIG = MemoryConfig(tokenizer=ESTIMATOR)


def _i4(report: Any) -> Any:
    return next(r for r in report.results if r.invariant == "I4")


def test_the_gold_event_holds_locomo_evidence_as_record_ids() -> None:
    episode = load_dataset(LOCOMO).episodes[0]
    gold = _gold_event(episode)
    cited = {rid for p in episode.probes for rid in p.evidence}
    assert "D99:1" in cited  # evidence naming no utterance: the loader keeps it as written
    assert gold.evidence == tuple(sorted(cited - {"D99:1"}))
    assert gold.facts == () and gold.fact_turns == ()


def test_the_gold_event_holds_longmemeval_has_answer_turns() -> None:
    dataset = load_dataset(FIXTURES / "longmemeval_oracle_sample.json")
    for episode in dataset.episodes:
        [probe] = episode.probes
        assert _gold_event(episode).evidence == tuple(sorted(probe.evidence)) and probe.evidence


def test_the_gold_event_holds_planted_facts_at_their_records() -> None:
    episode = generate_synthetic(n_episodes=1, turns=12).episodes[0]
    gold = _gold_event(episode)
    planted = sorted((turn + 1, slot, value) for slot, history in episode.facts for turn, value in history)
    assert list(zip(gold.fact_turns, *zip(*gold.facts))) == planted and gold.evidence == ()


@pytest.fixture(scope="module")
def locomo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    result = run(load_dataset(LOCOMO), RunOptions(run_id="lo", runs_dir=runs, systems=("three_layer", "naive_chain"),
                                                  memory=CONFIG))
    return result.ledger_path


def test_control_i4_a_locomo_run_whose_chain_is_empty_violates_i4(locomo_run: Path) -> None:
    with open_run(locomo_run) as (ledger, projections):
        assert not any(r.event.event_type == "summary_created" for r in ledger.read())  # the chain is empty
        golds = {r.stream.episode_id: r.event for r in ledger.read(event_types=["episode_gold"])
                 if r.stream.system == "three_layer" and isinstance(r.event, EpisodeGold)}
        report = audit(ledger, projections)
    i4 = _i4(report)
    assert report.failed() == ["I4"]
    assert i4.detail["recall"] == 0.0 and i4.detail["captured"] == 0
    assert i4.detail["compared"] == sum(len(g.evidence) for g in golds.values()) > 0
    named = {(v.stream.rsplit("/", 1)[1], v.ids[0]) for v in i4.violations}
    assert named == {(ep, rid) for ep, g in golds.items() for rid in g.evidence}
    lines = {s["stream"]: s for s in i4.detail["streams"]}
    assert lines["lo/naive_chain/conv-a"]["source"] == "exempt"
    assert lines["lo/three_layer/conv-a"]["against"] == f"gold evidence ({len(golds['conv-a'].evidence)} records)"


def test_the_audit_of_the_parquet_export_needs_no_dataset(locomo_run: Path, tmp_path: Path) -> None:
    with open_run(locomo_run) as (ledger, projections):
        export(ledger, tmp_path / "export")
        live = audit(ledger, projections).as_dict()
        assert replay(ledger, projections).identical
        assert replay(ledger, projections, engine="sql").identical
    with open_run(tmp_path / "export") as (ledger, projections):  # no key store: sealed values read [sealed]
        exported = audit(ledger, projections).as_dict()
    i4_live, i4_exported = ([c for c in d["checks"] if c["invariant"] == "I4"][0] for d in (live, exported))
    assert i4_exported == i4_live and not i4_exported["ok"]


def test_a_synthetic_run_with_the_heuristic_backend_captures_every_planted_fact(tmp_path: Path) -> None:
    result = run(generate_synthetic(n_episodes=2, turns=24), RunOptions(run_id="syn", runs_dir=tmp_path, memory=CONFIG))
    with open_run(result.ledger_path) as (ledger, projections):
        report = audit(ledger, projections, i4_floor=1.0)
    assert report.ok, report.as_dict()
    i4 = _i4(report)
    assert i4.detail["sources"] == {"gold facts": 2} and i4.detail["recall"] == 1.0 and i4.detail["compared"] > 10
