"""Every SQL query of docs/cookbook.md answers right on the run the page makes.

The doc runner runs the page (its `ledgermem run`, then each query through `ledgermem sql`); these tests
open the run it made and check each query's answer against a fold of the ledger.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.memory.runs import open_run
from ledgermem.projections.state import fold
from tests.docrunner import page_run

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cookbook.md"
QUERIES = dict(re.findall(r"```sql\n-- (\w+)\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL))


@pytest.fixture(scope="module")
def cookbook():
    ran = page_run(PAGE)  # once per session, shared with tests/test_docs.py
    assert ran.last_run == "cookbook" and sum(argv[0] == "sql" for argv in ran.commands) == len(QUERIES)
    with open_run(ran.workdir / "runs" / "cookbook" / "ledger.duckdb") as (ledger, projections):
        yield ledger


def rows(ledger, name: str) -> list[tuple]:
    return ledger.conn.execute(QUERIES[name]).fetchall()


def episode_events(ledger, episode: str, **read: int) -> list:
    return [r.event for r in ledger.read(**read) if r.stream.episode_id == episode]


def test_the_cookbook_has_at_least_eight_queries() -> None:
    assert len(QUERIES) >= 8, sorted(QUERIES)


def test_every_cookbook_query_runs_and_answers(cookbook) -> None:
    for name in QUERIES:
        assert rows(cookbook, name), f"{name} returned no rows"


def test_value_as_of_turn(cookbook) -> None:
    events = episode_events(cookbook, "syn-en-000")
    state = fold([e for e in events if e.turn <= 20])
    value, sid = state.current_values()["office floor"]
    assert rows(cookbook, "value_as_of_turn") == [(value, sid)]


def test_slot_history_is_contiguous_and_ends_at_the_current_value(cookbook) -> None:
    history = rows(cookbook, "slot_history")
    assert all(a[3] == b[2] for a, b in zip(history, history[1:]))
    state = fold(episode_events(cookbook, "syn-en-000"))
    assert history[-1][:2] == state.current_values()["coffee order"] and history[-1][3] is None


def test_overrides(cookbook) -> None:
    found = rows(cookbook, "overrides")
    recorded = [(r.stream.episode_id, r.event.summary_id, r.event.superseded_by[0])
                for r in cookbook.read(event_types=["summary_overridden"])]
    assert sorted((r[0], r[1], r[3]) for r in found) == sorted(recorded)
    assert all(r[2] and r[4] for r in found)


def test_chain_as_of_seq(cookbook) -> None:
    state = fold(episode_events(cookbook, "syn-en-000", to_seq=60))
    assert [r[0] for r in rows(cookbook, "chain_as_of_seq")] == sorted(s.summary_id for s in state.active_chain())


def test_capacity_then_asked(cookbook) -> None:
    found = rows(cookbook, "capacity_then_asked")
    indexed = {(r.stream.episode_id, m) for r in cookbook.read(event_types=["index_created"]) for m in r.event.members}
    assert found and all((r[0], r[3]) in indexed for r in found)
    asked = {(r.stream.episode_id, r.event.probe_id, r.event.slot) for r in cookbook.read(event_types=["probe_asked"])}
    assert all((r[0], r[6], r[1]) in asked for r in found)


def test_prompt_of_probe_resolves_every_item(cookbook) -> None:
    manifest = next(r.event for r in cookbook.read(event_types=["context_rendered"]) if r.event.probe_id == "syn-en-000:p1")
    found = rows(cookbook, "prompt_of_probe")
    assert sorted(r[0] for r in found) == sorted(manifest.item_ids)
    assert all(content for _, content in found)


def test_probe_outcomes_and_llm_cost(cookbook) -> None:
    outcomes = rows(cookbook, "probe_outcomes")
    judged = list(cookbook.read(event_types=["probe_judged"]))
    assert len(outcomes) == len(judged) and sum(r[5] for r in outcomes) == sum(r.event.correct for r in judged)
    cost = {r[0]: r[1] for r in rows(cookbook, "llm_cost")}
    assert cost["summarize"] == sum(1 for _ in cookbook.read(event_types=["turn_recorded"]))


def test_chain_size_by_turn(cookbook) -> None:
    sizes = dict(rows(cookbook, "chain_size_by_turn"))
    events = episode_events(cookbook, "syn-en-000")
    for turn in (10, 30, 60):
        assert sizes[turn] == len(fold([e for e in events if e.turn <= turn]).active_chain())


def test_every_cookbook_query_gives_the_same_answer_on_the_parquet_export(cookbook, tmp_path: Path) -> None:
    from ledgermem.ledger.parquet import export

    export(cookbook, tmp_path / "export")
    with open_run(tmp_path / "export") as (exported, _):
        for name, sql in QUERIES.items():
            assert exported.conn.execute(sql).fetchall() == cookbook.conn.execute(sql).fetchall(), name


def test_cli_reads_an_export_with_its_keys(tmp_path: Path) -> None:
    import json

    from ledgermem.datasets.model import dataset_to_json
    from ledgermem.datasets.synthetic import generate_synthetic

    data = tmp_path / "d.json"
    data.write_text(json.dumps(dataset_to_json(generate_synthetic(n_episodes=1, turns=8))), encoding="utf-8")
    runner = CliRunner()
    base = ["--runs-dir", str(tmp_path / "runs")]
    assert runner.invoke(cli, ["run", "--dataset", str(data), "--run-id", "p", *base]).exit_code == 0  # personal
    assert runner.invoke(cli, ["export", "p", "--to", str(tmp_path / "x"), *base]).exit_code == 0
    query = "SELECT user_text FROM raw_records ORDER BY record_id LIMIT 1"
    on_file = runner.invoke(cli, ["sql", "p", query, "--json", *base]).output
    keys = str(tmp_path / "runs" / "p" / "ledger.keys.duckdb")
    on_export = runner.invoke(cli, ["sql", str(tmp_path / "x"), query, "--json", "--keys", keys]).output
    sealed = runner.invoke(cli, ["sql", str(tmp_path / "x"), query, "--json"]).output
    assert json.loads(on_file) == json.loads(on_export) != json.loads(sealed)
    assert json.loads(sealed) == [{"user_text": "[sealed]"}]
    audit = runner.invoke(cli, ["audit", str(tmp_path / "x"), "--keys", keys])
    assert audit.exit_code == 0, audit.output
