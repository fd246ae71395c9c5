"""`run --workers N`: the same ledger stream by stream, the same metrics, and resume after a failure.

Episodes run on threads and one lock guards the ledger, so only the global
`seq` (and with it the hash chain, and the integer `stream_no` given to a
stream when it first appears) may interleave differently from a one-worker
run. Everything a stream holds must be identical.
"""

from __future__ import annotations

import csv
import json
import threading
from collections import Counter
from pathlib import Path

import pytest

from ledgermem.evaluation.metrics import TIMING_COLUMNS
from ledgermem.evaluation.outputs import write_outputs
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.evaluation.workers import WorkerPool
from ledgermem.ledger.store import Ledger
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR
from tests.llm_server import ScriptedLlmServer, heuristic_script, purpose_of

CONFIG = MemoryConfig(tokenizer=ESTIMATOR, personal_data=False)
INTERLEAVED = {"seq", "prev_hash", "hash", "stream_no", "recorded_at", "latency_ms"}  # may differ with workers
STREAM = ("run_id", "system", "episode_id", "stream_version")


def _dataset():
    return generate_synthetic(n_episodes=4, turns=14, seed=5)


def _options(runs: Path, run_id: str = "r", **extra: object) -> RunOptions:
    settings: dict[str, object] = {"systems": ("three_layer", "full_context", "memgpt_style", "naive_chain")}
    return RunOptions(run_id=run_id, runs_dir=runs, memory=CONFIG, env_file=None,
                      **(settings | extra))  # type: ignore[arg-type]


def by_stream(path: Path) -> dict[tuple, dict[str, object]]:
    """Every event keyed by (stream, stream_version), without what interleaving may change and latencies."""
    with Ledger(path, read_only=True) as ledger:
        result = ledger.conn.execute("SELECT * FROM events")
        names = [d[0] for d in result.description]
        rows = [dict(zip(names, values)) for values in result.fetchall()]
    out: dict[tuple, dict[str, object]] = {}
    for row in rows:
        payload = json.loads(row["payload"])
        payload.pop("latency_ms", None)
        for attempt in payload.get("attempts", []):  # each HTTP attempt's timing is system time too
            attempt.pop("latency_ms", None)
            attempt.pop("wait_s", None)
        kept = {k: v for k, v in row.items() if k not in INTERLEAVED and k != "payload"}
        out[tuple(row[k] for k in STREAM)] = kept | {"payload": payload}
    return out


def stream_differences(a: dict[tuple, dict], b: dict[tuple, dict]) -> list[str]:
    """What differs between two ledgers stream by stream (empty: the same)."""
    out = [f"only in the first: {k}" for k in sorted(set(a) - set(b))]
    out += [f"only in the second: {k}" for k in sorted(set(b) - set(a))]
    for key in sorted(set(a) & set(b)):
        if a[key] != b[key]:
            fields = sorted(f for f in a[key] if a[key][f] != b[key].get(f))
            out.append(f"{key}: {', '.join(fields)}")
    return out


def _metrics_csv(run_dir: Path) -> list[dict[str, str]]:
    write_outputs(run_dir / "ledger.duckdb")
    with (run_dir / "metrics.csv").open(encoding="utf-8") as fh:
        return [{k: v for k, v in row.items() if k not in TIMING_COLUMNS} for row in csv.DictReader(fh)]


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    runs = tmp_path_factory.mktemp("one")
    ticks: Counter[str] = Counter()
    run(_dataset(), _options(runs), progress=lambda what, n: ticks.update({what: n}))
    return {"streams": by_stream(runs / "r" / "ledger.duckdb"), "metrics": _metrics_csv(runs / "r"), "ticks": ticks}


def test_many_workers_write_the_one_worker_ledger_stream_by_stream(tmp_path: Path, one_worker) -> None:
    ticks: Counter[str] = Counter()
    threads: set[str] = set()

    def progress(what: str, n: int) -> None:
        ticks.update({what: n})
        threads.add(threading.current_thread().name)

    run(_dataset(), _options(tmp_path, workers=6), progress=progress)
    path = tmp_path / "r" / "ledger.duckdb"
    assert stream_differences(by_stream(path), one_worker["streams"]) == []
    assert _metrics_csv(tmp_path / "r") == one_worker["metrics"]
    assert ticks == one_worker["ticks"]  # the progress bar counts every worker's turns and probes
    assert len(threads) > 1  # it really ran on several threads
    with Ledger(path, read_only=True) as ledger:
        assert ledger.verify().ok
        seqs = [r[0] for r in ledger.conn.execute("SELECT seq FROM events ORDER BY seq").fetchall()]
    assert seqs == list(range(1, len(seqs) + 1))


def test_the_stream_comparison_catches_a_changed_stream(tmp_path: Path, one_worker) -> None:
    """Must-fail control: a run whose memory differs is not "the same stream by stream"."""
    other = RunOptions(**{**{f: getattr(_options(tmp_path), f) for f in RunOptions.__dataclass_fields__},
                          "memory": MemoryConfig(tokenizer=ESTIMATOR, personal_data=False, chain_budget=120),
                          "workers": 3})
    run(_dataset(), other)
    differences = stream_differences(by_stream(tmp_path / "r" / "ledger.duckdb"), one_worker["streams"])
    assert differences and any("payload" in d or "text" in d or "only in" in d for d in differences)


def test_a_failing_worker_stops_the_run_and_a_rerun_resumes_to_the_same_ledger(
        tmp_path: Path, one_worker, monkeypatch: pytest.MonkeyPatch) -> None:
    original = Ledger.append
    calls = {"n": 0}

    def failing_append(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 150:
            raise RuntimeError("injected failure at append 150")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Ledger, "append", failing_append)
    with pytest.raises(RuntimeError, match="injected failure"):
        run(_dataset(), _options(tmp_path, workers=5))
    path = tmp_path / "r" / "ledger.duckdb"
    with Ledger(path, read_only=True) as ledger:
        assert not list(ledger.read(event_types=["run_finished"]))
        interrupted = ledger.last_seq
    full = sum(1 for _ in one_worker["streams"])
    assert 0 < interrupted < full  # stopped part way, with the other workers stopped at their next step
    monkeypatch.setattr(Ledger, "append", original)
    ticks: Counter[str] = Counter()
    run(_dataset(), _options(tmp_path, workers=5), progress=lambda what, n: ticks.update({what: n}))
    assert stream_differences(by_stream(path), one_worker["streams"]) == []
    assert _metrics_csv(tmp_path / "r") == one_worker["metrics"]
    assert ticks == one_worker["ticks"]  # resumed turns are counted once, as skipped


def test_over_http_the_model_sees_the_same_prompts_with_many_workers(tmp_path: Path) -> None:
    """A deterministic model behind real HTTP gets the same requests from 8 workers as from one."""
    seen: dict[int, Counter[str]] = {}
    streams = {}
    with ScriptedLlmServer(heuristic_script(0.005)) as server:  # one endpoint: the runs record the same URL
        for workers in (1, 8):
            before = len(server.requests)
            runs = tmp_path / f"w{workers}"
            opts = _options(runs, backend="http", base_url=server.base_url, model="m", workers=workers,
                            systems=("three_layer", "memgpt_style"))
            run(_dataset(), opts)
            seen[workers] = Counter(json.dumps(r.json, sort_keys=True) for r in server.requests[before:])
            streams[workers] = by_stream(runs / "r" / "ledger.duckdb")
        assert not server.errors
    assert seen[8] == seen[1] and sum(seen[1].values()) > 100
    assert {purpose_of(json.loads(body)) for body in seen[1]} >= {"summarize", "answer"}
    assert stream_differences(streams[8], streams[1]) == []


def test_a_pool_runs_every_job_and_raises_the_first_failure() -> None:
    pool = WorkerPool(3)
    done: list[int] = []

    def job(i: int):
        def work(tick) -> None:
            if i == 4:
                raise ValueError("job 4 failed")
            done.append(i)
            tick("turn", 1)
        return work

    with pytest.raises(ValueError, match="job 4 failed"):
        pool.run([job(i) for i in range(40)], lambda what, n: None)
    assert 4 not in done and len(done) < 40  # the jobs not started when it failed never ran
    ok = WorkerPool(4)
    finished: list[int] = []
    ok.run([(lambda i: (lambda tick: finished.append(i)))(i) for i in range(20)], lambda what, n: None)
    assert sorted(finished) == list(range(20))
    with pytest.raises(ValueError, match="at least 1"):
        WorkerPool(0)


def test_the_cli_takes_workers_and_refuses_zero(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ledgermem.cli.commands import cli

    args = ["run", "--episodes", "2", "--turns", "8", "--systems", "three_layer,naive_chain", "--runs-dir",
            str(tmp_path), "--json"]
    done = CliRunner().invoke(cli, [*args, "--run-id", "w", "--workers", "3"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["metrics"]["three_layer"]["probes"] > 0
    refused = CliRunner().invoke(cli, [*args, "--run-id", "z", "--workers", "0"])
    assert refused.exit_code == 2 and "--workers" in refused.output
    assert not (tmp_path / "z").exists()
    assert CliRunner().invoke(cli, [*args, "--run-id", "y", "--rpm", "0"]).exit_code == 2
    offline = CliRunner().invoke(cli, [*args, "--run-id", "x", "--rpm", "60", "--limit", "1"])
    assert offline.exit_code == 0 and "limit requests to HTTP backends; this run makes none" in offline.stderr
