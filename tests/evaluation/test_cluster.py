"""A run spread over Dask worker processes as shard ledgers, and `merge` back into one run.

The cluster test runs 4 synthetic episodes x 3 systems as 2 shards on a
LocalCluster of 2 worker processes and compares the merged run with a
one-process run of the same arguments. The merge's refusals (a shard that
fails verify, a stream in two shards, a missing shard, another
configuration) are checked on shards run in this process, which needs no Dask.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from ledgermem.cli.commands import cli
from ledgermem.evaluation.cluster import plan_shards
from ledgermem.evaluation.errors import MergeRefused
from ledgermem.evaluation.merge import merge_shards, shard_folder, shard_ledgers
from ledgermem.evaluation.metrics import TIMING_COLUMNS
from ledgermem.evaluation.outputs import write_outputs
from ledgermem.evaluation.replay import replay
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.memory.runs import ledger_path, open_run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.gate.invariants import audit
from ledgermem.ledger.parquet import ParquetLedger, export
from ledgermem.ledger.store import Ledger
from ledgermem.projections.config import MemoryConfig

RUN = "r"
SYSTEMS = ("three_layer", "full_context", "naive_chain")
SYSTEM_TIME = {"seq", "stream_no", "prev_hash", "hash", "recorded_at", "latency_ms", "event_id"}  # ids cover latencies


def _dataset() -> Any:
    return generate_synthetic(n_episodes=4, turns=12, seed=7)


def _opts(runs_dir: Path, systems: tuple[str, ...] = SYSTEMS, personal: bool = False, **kw: Any) -> RunOptions:
    return RunOptions(run_id=RUN, runs_dir=runs_dir, systems=systems, memory=MemoryConfig(personal_data=personal),
                      **kw)


def _rows(path: Path) -> list[dict[str, Any]]:
    with Ledger(path, read_only=True) as ledger:
        result = ledger.conn.execute("SELECT * FROM events ORDER BY seq")
        names = [d[0] for d in result.description or ()]
        return [dict(zip(names, r)) for r in result.fetchall()]


def _content(row: dict[str, Any]) -> dict[str, Any]:
    """An event without what differs between two runs of the same arguments: positions, hashes, clock."""
    out = {k: v for k, v in row.items() if k not in SYSTEM_TIME and k != "payload"}
    payload = json.loads(row["payload"]) if row["payload"] else None
    if isinstance(payload, dict):
        payload.pop("latency_ms", None)
    out["payload"] = payload
    return out


def _by_stream(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault((row["run_id"], row["system"], row["episode_id"]), []).append(row)
    return out


def _metrics_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return [{k: v for k, v in row.items() if k not in TIMING_COLUMNS} for row in csv.DictReader(fh)]


def _audit(path: Path) -> dict[str, list[str]]:
    with open_run(path) as (ledger, projections):
        report = audit(ledger, projections)
    return {r.invariant: [f"{v.stream} {v.message}" for v in r.violations] for r in report.results}


# -- on a Dask LocalCluster -------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_and_cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Any]:
    pytest.importorskip("dask.distributed", reason="Dask is not installed: pip install 'ledgermem[cluster]'")
    from ledgermem.evaluation.cluster import connect, run_cluster

    root = tmp_path_factory.mktemp("cluster")
    one = run(_dataset(), _opts(root / "one")).ledger_path
    write_outputs(one)  # what `ledgermem run` writes beside the ledger
    with connect("local:2") as client:
        pids = set(client.run(os.getpid).values())
        result = run_cluster(_dataset(), _opts(root / "cl"), client, shards=2)
    assert len(pids) == 2 and os.getpid() not in pids, "two worker processes besides this one"
    assert result.merged is not None
    return one, result.merged.ledger_path, result


def test_cluster_run_merges_into_the_one_process_run(one_and_cluster: tuple[Path, Path, Any]) -> None:
    one, merged, result = one_and_cluster
    assert [s.episodes for s in result.shards] == [2, 2]
    assert merged == ledger_path(merged.parents[1], RUN)
    with Ledger(merged, read_only=True) as ledger:
        report = ledger.verify()
        assert report.ok, report
        assert [r.event.event_type for r in ledger.read(stream=ledger.streams()[0][0])] == ["run_started",
                                                                                             "run_finished"]
    mine, theirs = _rows(merged), _rows(one)
    assert len(mine) == len(theirs) == report.events
    # Every stream's events equal the one-process run's, and the merged order is the one-process order.
    assert {k: [_content(r) for r in v] for k, v in _by_stream(mine).items()} == \
        {k: [_content(r) for r in v] for k, v in _by_stream(theirs).items()}
    assert [(r["stream_no"], r["stream_version"]) for r in mine] == \
        [(r["stream_no"], r["stream_version"]) for r in theirs]
    # Episode streams are copied from their shard unchanged (ids, versions, clock); only seq and chain are new.
    shard_rows = [r for s in result.shards for r in _rows(s.ledger_path) if r["episode_id"]]
    keep = lambda r: {k: v for k, v in r.items() if k not in ("seq", "stream_no", "prev_hash", "hash")}  # noqa: E731
    assert sorted(map(str, map(keep, shard_rows))) == sorted(str(keep(r)) for r in mine if r["episode_id"])
    assert _metrics_csv(merged.parent / "metrics.csv") == _metrics_csv(one.parent / "metrics.csv")


def test_merged_run_audits_and_replays_like_the_one_process_run(one_and_cluster: tuple[Path, Path, Any]) -> None:
    one, merged, _ = one_and_cluster
    found = _audit(merged)
    assert found == _audit(one)
    assert {name for name, v in found.items() if v} <= {"I4"}, found  # I4: extraction gaps of the data itself
    with open_run(merged) as (ledger, projections):
        report = replay(ledger, projections)
    assert report.identical, report


def test_the_merged_ledger_is_signed_and_its_checkpoint_holds(one_and_cluster: tuple[Path, Path, Any]) -> None:
    from ledgermem.ledger.checkpoint import checkpoint_path, default_key_path, load_signing_key, read_checkpoints, \
        verify_checkpoints

    _, merged, result = one_and_cluster
    assert result.merged.checkpoint.startswith("seq "), result.merged.checkpoint
    signed = read_checkpoints(checkpoint_path(merged))
    assert len(signed) == 1
    trusted = load_signing_key(default_key_path(), create=False).public_key()
    with Ledger(merged, read_only=True) as ledger:
        assert signed[0][1].seq == ledger.last_seq
        assert verify_checkpoints(ledger, signed, trusted, "merged").ok


def test_merged_export_reads_in_duckdb_and_polars(one_and_cluster: tuple[Path, Path, Any], tmp_path: Path) -> None:
    import polars as pl

    _, merged, _ = one_and_cluster
    with Ledger(merged, read_only=True) as ledger:
        export(ledger, tmp_path / "lake")
        total, streams = ledger.last_seq, len(ledger.streams())
    files = str(tmp_path / "lake" / "**" / "*.parquet")
    with duckdb.connect() as conn:
        rows = conn.execute(f"SELECT count(*), count(DISTINCT (system, episode_id)) FROM read_parquet('{files}', "
                            "hive_partitioning = true)").fetchall()
    assert rows == [(total, streams)]
    frame = pl.scan_parquet(files, hive_partitioning=True).group_by("system").len().collect()
    assert dict(frame.iter_rows()).keys() == {"__run__", *SYSTEMS}
    assert sum(n for _, n in frame.iter_rows()) == total
    with ParquetLedger(tmp_path / "lake") as lake:
        assert lake.verify().ok


# -- merge's checks, on shards run in this process ----------------------------------------------


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 episodes of three_layer with personal data (sealed values, a key store per shard), as 2 shards."""
    runs = tmp_path_factory.mktemp("shards")
    ds = _dataset()
    for k, ids in enumerate(plan_shards([e.episode_id for e in ds.episodes], 2)):
        run(ds, _opts(shard_folder(runs, RUN, k), ("three_layer",), personal=True, episode_ids=ids))
    return runs


@pytest.fixture()
def runs(shards: Path, tmp_path: Path) -> Path:
    shutil.copytree(shards, tmp_path / "runs")
    return tmp_path / "runs"


def test_merge_of_sealed_shards_carries_their_keys(runs: Path) -> None:
    result = merge_shards(shard_ledgers(runs, RUN), ledger_path(runs, RUN))
    assert result.shards == 2 and result.streams == 5
    with Ledger(result.ledger_path, read_only=True) as ledger:
        assert ledger.verify().ok
        assert ledger.conn.execute("SELECT count(*) FROM events WHERE starts_with(text, 'enc1:')").fetchone()[0] > 0
    with open_run(result.ledger_path) as (ledger, _):
        values = [v for (v,) in ledger.conn.execute("SELECT value FROM fact_versions").fetchall()]
    assert values and not any(str(v).startswith(("enc1:", "[erased]", "[sealed]")) for v in values)
    assert {k for k, v in _audit(result.ledger_path).items() if v} <= {"I4"}


def _tamper(path: Path, sql: str) -> None:
    with duckdb.connect(str(path)) as conn:
        conn.execute(sql)


@pytest.mark.parametrize("sql", [
    # one byte of one event's payload (still valid JSON: a different window size)
    "UPDATE events SET payload = replace(payload, '\"window_turns\":4', '\"window_turns\":5') "
    "WHERE seq = (SELECT min(seq) FROM events WHERE event_type = 'episode_started')",
    "DELETE FROM events WHERE seq = (SELECT max(seq) FROM events)",  # its last event dropped
])
def test_a_shard_that_fails_verify_is_refused_by_name(runs: Path, sql: str) -> None:
    paths = shard_ledgers(runs, RUN)
    _tamper(paths[1], sql)
    with pytest.raises(MergeRefused, match=r"shard 1 \(.*shards/1/r/ledger\.duckdb\) does not verify: seq \d+"):
        merge_shards(paths, ledger_path(runs, RUN))
    assert not ledger_path(runs, RUN).exists()
    outcome = CliRunner().invoke(cli, ["merge", RUN, "--runs-dir", str(runs)])
    assert outcome.exit_code == 1 and "shard 1" in outcome.output and "does not verify" in outcome.output


def test_a_stream_in_two_shards_is_refused_by_name(runs: Path) -> None:
    paths = shard_ledgers(runs, RUN)
    ds = _dataset()
    extra = shard_folder(runs, RUN, 2)
    run(ds, _opts(extra, ("three_layer",), personal=True, episode_ids=(ds.episodes[1].episode_id,)))
    with pytest.raises(MergeRefused, match=rf"r/three_layer/{ds.episodes[1].episode_id} \(shards 0 and 2\)"):
        merge_shards([*paths, ledger_path(extra, RUN)], ledger_path(runs, RUN))


def test_a_missing_shard_or_another_configuration_is_refused(runs: Path) -> None:
    paths = shard_ledgers(runs, RUN)
    with pytest.raises(MergeRefused, match=r"the shards hold 2 episode streams; .* = 4: a shard is missing"):
        merge_shards(paths[:1], ledger_path(runs, RUN))
    ds = _dataset()
    other = shard_folder(runs, "x", 0)
    run(ds, _opts(other, ("three_layer",), personal=True, strict=True,
                  episode_ids=tuple(e.episode_id for e in ds.episodes[2:])))
    with pytest.raises(MergeRefused, match=r"shard 1 .* was started with other config than shard 0"):
        merge_shards([paths[0], ledger_path(other, RUN)], ledger_path(runs, RUN))


def test_an_unfinished_shard_is_refused(runs: Path) -> None:
    paths = shard_ledgers(runs, RUN)
    _tamper(paths[0], "DELETE FROM events WHERE event_type = 'run_finished'; "
                      "UPDATE streams SET version = 1 WHERE episode_id = ''")
    with pytest.raises(MergeRefused, match=r"shard 0 .* has not finished"):
        merge_shards(paths, ledger_path(runs, RUN))


def test_the_untampered_shards_merge_and_merge_refuses_to_overwrite(runs: Path) -> None:
    outcome = CliRunner().invoke(cli, ["merge", RUN, "--runs-dir", str(runs), "--json"])
    assert outcome.exit_code == 0, outcome.output
    assert json.loads(outcome.output)["events"] == _rows(ledger_path(runs, RUN))[-1]["seq"]
    again = CliRunner().invoke(cli, ["merge", RUN, "--runs-dir", str(runs)])
    assert again.exit_code == 1 and "--force" in again.output
    assert CliRunner().invoke(cli, ["merge", RUN, "--runs-dir", str(runs), "--force"]).exit_code == 0


def test_plan_cuts_contiguous_shards() -> None:
    assert plan_shards(["a", "b", "c", "d", "e"], 2) == [("a", "b"), ("c", "d", "e")]
    assert plan_shards(["a", "b"], 5) == [("a",), ("b",)]
    with pytest.raises(Exception, match="at least 1"):
        plan_shards(["a"], 0)


def test_run_refuses_a_bad_cluster_address_and_shards_without_a_cluster(tmp_path: Path) -> None:
    base = ["run", "--episodes", "1", "--turns", "12", "--runs-dir", str(tmp_path), "--run-id", RUN]
    bad = CliRunner().invoke(cli, [*base, "--cluster", "local:0"])
    assert bad.exit_code == 1 and "give local:N" in bad.output and "'local:0'" in bad.output
    alone = CliRunner().invoke(cli, [*base, "--shards", "2"])
    assert alone.exit_code == 2 and "--shards goes with --cluster" in alone.output
    assert not any(tmp_path.iterdir()), "nothing is written before the inputs are checked"
