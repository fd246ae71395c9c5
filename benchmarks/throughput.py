"""Run throughput with a slow model: one worker against many, in the same process, same data.

A hosted model takes seconds a call, so a run's wall time is its number of
calls times the latency unless episodes overlap their waits. The model
here is the loopback OpenAI-compatible server of the test suite answering
as the offline heuristic backend would, after a fixed delay per call: the
whole `evaluation.runner.run` goes over real HTTP, writes its ledger and
projections, and the two worker counts must give the same ledger (checked
on every sample, stream by stream), so the speed-up is not bought with a
different result.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ledgermem.benchmarks.measure import Case, Progress
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.ledger.store import Ledger
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.tokens import ESTIMATOR

WORKERS = 16
SPEEDUP_TARGET = 10.0
_INTERLEAVED = ("seq", "prev_hash", "hash", "stream_no", "recorded_at", "latency_ms")


def _streams(path: Path) -> list[tuple[Any, ...]]:
    """The ledger's rows in stream order, without what workers may interleave and latencies."""
    with Ledger(path, read_only=True) as ledger:
        result = ledger.conn.execute("SELECT * FROM events ORDER BY run_id, system, episode_id, stream_version")
        names = [d[0] for d in result.description or ()]
        keep = [i for i, n in enumerate(names) if n not in _INTERLEAVED and n != "payload"]
        payload = names.index("payload")
        rows = []
        for row in result.fetchall():
            text = row[payload]
            rows.append((*(row[i] for i in keep), text if '"latency_ms"' not in text else None))
        return rows


def throughput(scratch: Path, log: Progress, *, episodes: int, turns: int, latency_s: float, runs: int) -> Case:
    from tests.llm_server import ScriptedLlmServer, heuristic_script  # the loopback model of the test suite

    dataset = generate_synthetic(n_episodes=episodes, turns=turns, seed=17)
    work = sum(len(e.turns) for e in dataset.episodes)
    calls: dict[int, int] = {}
    case = Case(
        case="run_workers", family="run_workers",
        title=f"`ledgermem run --workers {WORKERS}` against a model that takes {latency_s * 1000:.0f} ms a call",
        size=f"{episodes} episodes × {turns} turns, three_layer, loopback HTTP", kind="timed", display="per_s",
        unit="turns/s", work=work, baseline="the same run with one worker (`--workers 1`)",
        target=f"≥ {SPEEDUP_TARGET:g}× the one-worker throughput",
    )
    reference: list[tuple[Any, ...]] | None = None
    load = [os.getloadavg()[0]]
    with ScriptedLlmServer(heuristic_script(latency_s)) as server:
        for i in range(runs):
            for workers in (1, WORKERS):  # interleaved, so that a noisy moment hits both
                runs_dir = scratch / f"w{workers}-{i}"
                opts = RunOptions(run_id="r", runs_dir=runs_dir, systems=("three_layer",), backend="http",
                                  model="m", base_url=server.base_url, env_file=None, memory_points=0,
                                  memory=MemoryConfig(tokenizer=ESTIMATOR, personal_data=False), workers=workers)
                before = len(server.requests)
                started = time.perf_counter()
                run(dataset, opts)
                seconds = time.perf_counter() - started
                calls[workers] = len(server.requests) - before
                (case.baseline_s if workers == 1 else case.samples_s).append(seconds)
                rows = _streams(runs_dir / "r" / "ledger.duckdb")
                reference = reference if reference is not None else rows
                if rows != reference:
                    raise AssertionError(f"run {i} with {workers} workers wrote another ledger than one worker")
                log(f"run_workers: {workers:>2} worker(s), run {i + 1}/{runs}: {seconds:.2f} s "
                    f"({work / seconds:.1f} turns/s, {calls[workers]} calls)")
        assert not server.errors, server.errors
    load.append(os.getloadavg()[0])
    speedup = (case.baseline_median_s() or 0.0) / case.median_s()
    case.met = speedup >= SPEEDUP_TARGET
    floor = calls[1] * latency_s
    own = (case.baseline_median_s() or 0.0) - floor  # one worker's time not spent waiting for the model
    case.extra |= {"workers": WORKERS, "latency_s": latency_s, "calls_per_run": calls[1], "speedup": speedup,
                   "serial_latency_floor_s": floor, "own_work_s": own, "load_average_1min": load}
    case.notes.append(notes(case.extra))
    return case


def notes(extra: dict[str, Any]) -> str:
    """The case's note, from its recorded figures."""
    load = " → ".join(f"{x:.1f}" for x in extra["load_average_1min"])
    return (
        f"{extra['workers']} workers: ×{extra['speedup']:.1f} the one-worker throughput (medians); "
        f"{extra['calls_per_run']} model calls a run, {extra['serial_latency_floor_s']:.1f} s of latency in a row "
        f"for one worker, which spends {extra['own_work_s']:.1f} s more on its own work (HTTP, deciding, "
        "folding, one durable DuckDB commit per step); the part of that done under the writer lock is what many "
        f"workers cannot overlap; every sample's ledger equals the one-worker ledger stream by stream; load "
        f"average {load} on {os.cpu_count()} cores"
    )
