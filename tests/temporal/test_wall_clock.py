"""Wall-clock time travel: as-of, history and diff at a recorded time, in the library, the CLI and the audit service."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from ledgermem.cli.main import cli
from ledgermem.evaluation.events import RunStarted
from ledgermem.ledger.store import Ledger, StreamKey
from ledgermem.memory.backends import ScriptedBackend
from ledgermem.memory.memory import Memory
from ledgermem.projections.materialise import ProjectionStore, projection_path
from ledgermem.service.catalog import Catalog
from ledgermem.service.core import Service
from ledgermem.service.questions import BadRequest
from ledgermem.temporal import Episode, as_of, diff, fact_history, instant, seq_at_time
from ledgermem.temporal.errors import TemporalError

EP = Episode("run", "three_layer", "ep")
T0 = datetime(2026, 11, 1, 9, 0, 0)  # naive UTC, as the ledger records it
SCRIPT = [  # (user, summarizer response): one turn a second, from T0
    ("My desk is A1.", "desk A1\n[FACTS: desk=A1]\n[OVERRIDES: none]"),
    ("My desk changed to B2.", "desk moved to B2\n[FACTS: desk=B2]\n[OVERRIDES: s0001]"),
    ("My team size is 6.", "team of six\n[FACTS: team=6]\n[OVERRIDES: none]"),
]


def iso(moment: datetime) -> str:
    return moment.isoformat() + "Z"


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[Path, list[int]]]:
    """A run whose episode records turn n (1-based) at T0 + (n-1) seconds; the seqs after each turn."""
    now = [T0 - timedelta(seconds=5)]
    ledger = Ledger(tmp_path / "ledger.duckdb", clock=lambda: now[0])
    ledger.append(StreamKey("run"), [RunStarted(systems=("three_layer",), config={}, versions={}, dataset={})],
                  expected_version=0)
    store = ProjectionStore(projection_path(ledger.path))
    responses = iter(r for _, r in SCRIPT)
    memory = Memory(ledger, StreamKey(EP.run_id, EP.system, EP.episode_id),
                    ScriptedBackend(lambda m, p: next(responses, "NONE")), projections=store)
    seqs = []
    for n, (user, _) in enumerate(SCRIPT):
        now[0] = T0 + timedelta(seconds=n)
        memory.add_turn(user, "Noted.")
        seqs.append(ledger.last_seq)
    store.close()
    ledger.close()
    yield tmp_path / "ledger.duckdb", seqs


@pytest.fixture
def conn(recorded: tuple[Path, list[int]]) -> Iterator[duckdb.DuckDBPyConnection]:
    path, _ = recorded
    c = duckdb.connect(str(path), read_only=True)
    c.execute(f"ATTACH '{projection_path(path)}' AS projections (READ_ONLY)")
    c.execute("SET search_path = 'main,projections'")
    yield c
    c.close()


def registry(layers: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    return {r["slot"]: r["value"] for r in layers["registry"]}


def first_state_between_two_events(conn: duckdb.DuckDBPyConnection, seqs: list[int],
                                   seq_for: Callable[[duckdb.DuckDBPyConnection, Episode, datetime], int]) -> bool:
    """The check: half a second after the first turn (before the second) the memory is the first turn's."""
    between = T0 + timedelta(milliseconds=500)
    return as_of(conn, EP, seq=seq_for(conn, EP, between)) == as_of(conn, EP, seq=seqs[0])


def test_a_time_between_two_events_a_second_apart_gives_the_first_state(conn, recorded) -> None:
    _, seqs = recorded
    assert first_state_between_two_events(conn, seqs, seq_at_time)
    assert registry(as_of(conn, EP, at=T0 + timedelta(milliseconds=500))) == {"desk": "A1"}
    assert registry(as_of(conn, EP, at=T0 + timedelta(milliseconds=1500))) == {"desk": "B2"}
    assert as_of(conn, EP, at=T0) == as_of(conn, EP, seq=seqs[0])  # an event recorded exactly then counts
    # a timezone other than UTC names the same instant
    assert seq_at_time(conn, EP, datetime(2026, 11, 1, 10, 0, 1, tzinfo=timezone(timedelta(hours=1)))) == seqs[1]


def test_must_fail_control_a_time_read_as_the_latest_event_is_caught(conn, recorded) -> None:
    _, seqs = recorded

    def latest(c: duckdb.DuckDBPyConnection, ep: Episode, at: datetime) -> int:  # ignores the time
        return int(c.execute("SELECT max(seq) FROM events WHERE episode_id = ?", [ep.episode_id]).fetchone()[0])

    def strictly_before(c: duckdb.DuckDBPyConnection, ep: Episode, at: datetime) -> int:  # one event too early
        return seq_at_time(c, ep, at - timedelta(seconds=1))

    assert not first_state_between_two_events(conn, seqs, latest)
    assert not first_state_between_two_events(conn, seqs, strictly_before)


def test_before_the_first_event_is_empty_and_after_the_last_is_current(conn, recorded) -> None:
    _, seqs = recorded
    before = as_of(conn, EP, at=T0 - timedelta(days=1))
    assert seq_at_time(conn, EP, T0 - timedelta(days=1)) == 0
    assert all(rows == [] for rows in before.values())
    assert as_of(conn, EP, at=T0 + timedelta(days=365)) == as_of(conn, EP, seq=seqs[-1])
    with pytest.raises(TemporalError, match="exactly one"):
        as_of(conn, EP, seq=1, at=T0)


def test_history_and_diff_at_a_time(conn, recorded) -> None:
    _, seqs = recorded
    full = fact_history(conn, EP, "desk")
    then = fact_history(conn, EP, "desk", at=T0 + timedelta(milliseconds=500))
    assert [r["value"] for r in full] == ["A1", "B2"] and full[0]["valid_to_seq"] is not None
    assert [r["value"] for r in then] == ["A1"] and then[0]["valid_to_seq"] is None  # it was current then
    assert fact_history(conn, EP, "desk", at=T0 - timedelta(seconds=1)) == []
    moved = diff(conn, EP, seq_at_time(conn, EP, T0), seq_at_time(conn, EP, T0 + timedelta(seconds=1)))
    assert [r["value"] for r in moved["registry"]["entered"]] == ["B2"]


def test_instant_refuses_a_time_without_a_timezone() -> None:
    assert instant("2026-11-01T09:00Z") == T0
    assert instant("2026-11-01T10:00+01:00") == T0
    with pytest.raises(TemporalError, match=r"--at: '2026-11-01T09:00' has no timezone"):
        instant("2026-11-01T09:00")
    with pytest.raises(TemporalError, match="not an ISO 8601 time"):
        instant("last tuesday")


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_cli_as_of_history_and_diff_take_a_time(recorded) -> None:
    path, seqs = recorded
    between = iso(T0 + timedelta(milliseconds=500))
    result = invoke("as-of", str(path), "--episode", "ep", "--at", between, "--json")
    assert result.exit_code == 0, result.output
    assert registry(json.loads(result.output)) == {"desk": "A1"}
    by_seq = invoke("as-of", str(path), "--episode", "ep", "--seq", str(seqs[0]), "--json")
    assert json.loads(by_seq.output) == json.loads(result.output)  # the seq form keeps working
    history = invoke("history", str(path), "--episode", "ep", "--slot", "desk", "--at", between, "--json")
    assert [r["value"] for r in json.loads(history.output)] == ["A1"]
    changed = invoke("diff", str(path), "--episode", "ep", iso(T0), iso(T0 + timedelta(seconds=1)), "--json")
    assert changed.exit_code == 0, changed.output
    assert [r["value"] for r in json.loads(changed.output)["registry"]["entered"]] == ["B2"]


def test_cli_refuses_a_naive_time_in_one_line_naming_the_option(recorded) -> None:
    path, _ = recorded
    result = invoke("as-of", str(path), "--episode", "ep", "--at", "2026-11-01T09:00")
    assert result.exit_code != 0
    assert "--at" in result.output and "timezone" in result.output and "Traceback" not in result.output
    both = invoke("as-of", str(path), "--episode", "ep", "--at", "2026-11-01T09:00Z", "--turn", "1")
    assert both.exit_code != 0 and "exactly one" in both.output
    naive = invoke("diff", str(path), "--episode", "ep", "2026-11-01T09:00", "3")
    assert naive.exit_code != 0 and "SEQ_A" in naive.output and "timezone" in naive.output


def test_audit_service_as_of_and_history_take_at(recorded) -> None:
    path, seqs = recorded
    catalog = Catalog(path)
    try:
        ask_the_service(Service(catalog), seqs)
    finally:
        catalog.close()


def ask_the_service(service: Service, seqs: list[int]) -> None:
    between = iso(T0 + timedelta(milliseconds=500))
    layers = service.ask("as_of", {"run": "run", "episode": "ep", "at": between})
    assert registry(layers) == {"desk": "A1"}
    assert layers["at"]["seq"] == seqs[0] and layers["at"]["by"] == "at" and layers["at"]["turn"] == 1
    history = service.ask("history", {"run": "run", "episode": "ep", "slot": "desk", "at": between})
    assert [r["value"] for r in history["items"]] == ["A1"]
    explorer = service.ask("layers", {"run": "run", "episode": "ep", "at": iso(T0 - timedelta(days=1))})
    assert explorer["at"]["seq"] == 0 and explorer["registry"] == [] and explorer["raw"]["total"] == 0
    with pytest.raises(BadRequest, match="timezone") as refused:
        service.ask("as_of", {"run": "run", "episode": "ep", "at": "2026-11-01T09:00"})
    assert refused.value.parameter == "at"
    with pytest.raises(BadRequest, match="not both seq and at"):
        service.ask("as_of", {"run": "run", "episode": "ep", "at": between, "seq": 1})
