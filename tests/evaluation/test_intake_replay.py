"""A run that took in facts through the service after it finished still replays as reproduced.

The intake's turns (and their summarizer calls) are recorded inputs: the
projections are replayed through them, the metrics are compared as of the
`run_finished` that recorded them, and the report names the later turns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from ledgermem.evaluation import replay as replay_module
from ledgermem.service.catalog import Catalog
from ledgermem.cli.commands import cli
from ledgermem.evaluation.metrics import compute_metrics, without_timing
from ledgermem.evaluation.replay import outcomes_up_to, replay
from ledgermem.memory.runs import ledger_path, open_run
from ledgermem.service.core import Service
from ledgermem.ledger.store import Ledger
from ledgermem.projections.materialise import projection_path
from tests.service.conftest import small_run

RUN = "small"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    small_run(tmp_path, RUN)
    return tmp_path


def take_in(runs: Path, episode: str, user: str, after_turn: int | None = None) -> dict[str, Any]:
    path = ledger_path(runs, RUN)
    if after_turn is None:
        with Ledger(path, read_only=True) as ledger:
            after_turn = max(r.event.turn for r in ledger.read(run_id=RUN, event_types=["turn_recorded"])
                             if r.stream.episode_id == episode and r.stream.system == "three_layer")
    service = Service(Catalog(path, hold=0), intake=True)
    try:
        answer: dict[str, Any] = service.ask("intake_fact", {"run": RUN, "system": "three_layer", "episode": episode,
                                                             "user": user, "after_turn": after_turn})
    finally:
        service.catalog.close()
    assert answer["created"] is True and answer["audit"]["ok"] is True
    return answer


def replay_cli(runs: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["replay", RUN, "--runs-dir", str(runs), *args])


def test_a_run_with_intake_turns_is_reproduced(runs: Path) -> None:
    take_in(runs, "syn-en-000", "My desk number is 42.")
    take_in(runs, "late-episode", "My team size is 6.", after_turn=0)  # an episode begun by the intake
    done = replay_cli(runs)
    assert done.exit_code == 0, done.output
    assert "-> reproduced" in done.output
    assert "turns recorded after the run finished (2 from intake)" in done.output
    as_json = json.loads(replay_cli(runs, "--json").output)
    assert as_json["identical"] is True and as_json["later_turns"] == {"intake": 2}
    with Ledger(ledger_path(runs, RUN), read_only=True) as ledger:
        finished = [r.seq for r in ledger.read(run_id=RUN, event_types=["run_finished"])]
        assert as_json["metrics_seq"] == finished[-1] < ledger.last_seq


def test_must_fail_control_metrics_over_every_event_would_not_reproduce(runs: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What replay did before: recompute the metrics over the intake's turns too, against figures without them."""
    take_in(runs, "syn-en-000", "My desk number is 42.")
    with open_run(ledger_path(runs, RUN)) as (ledger, projections):
        report = replay(ledger, projections)
        assert report.identical and report.later_turns == {"intake": 1}
        everything = without_timing(compute_metrics(outcomes_up_to(ledger, RUN, None)))
        assert everything != report.recorded_metrics
        monkeypatch.setattr(replay_module, "outcomes_up_to", lambda lg, rid, upto: outcomes_up_to(lg, rid, None))
        assert not replay(ledger, projections).identical


def test_must_fail_control_intake_does_not_excuse_a_live_table_that_differs(runs: Path) -> None:
    take_in(runs, "syn-en-000", "My desk number is 42.")
    with duckdb.connect(projection_path(ledger_path(runs, RUN))) as conn:
        changed = conn.execute("UPDATE raw_records SET user_text = 'forged' WHERE source = 'intake' RETURNING 1")
        assert changed.fetchall() == [(1,)]
    done = replay_cli(runs)
    assert done.exit_code == 1 and "NOT reproduced" in done.output and "raw_records" in done.output


def test_a_run_without_intake_reports_no_later_turns(runs: Path) -> None:
    as_json = json.loads(replay_cli(runs, "--json").output)
    assert as_json["identical"] is True and as_json["later_turns"] == {}
    assert "after the run finished" not in replay_cli(runs).output
