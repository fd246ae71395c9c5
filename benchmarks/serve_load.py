"""`ledgermem serve` under load: `/values` latency alone, and while `audit?at=` requests run without pause.

The server is the real command (`python -m ledgermem serve`, a process of
its own, so the client threads here take no time from it) over a run made by
`evaluation.runner.run` on synthetic dialogues. Each audit asks for another
`at`, so no audit is answered from the service's memory of answers: every
one folds and checks the run again. The same measure against the server with
one worker (`--workers 1`) shows what a server that answers one request at a
time does to the values (they wait behind the audit in flight).
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ledgermem.benchmarks.measure import Case, Progress
from ledgermem.evaluation.runner import RunOptions, run
from ledgermem.datasets.synthetic import generate_synthetic
from ledgermem.projections.config import MemoryConfig

P99_MS_TARGET = 100.0
RUN_ID = "bench"


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class _Server:
    def __init__(self, runs: Path, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "ledgermem", "serve", str(runs), "--port", "0",
                                      "--quiet", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
        if not found:
            self.stop()
            raise RuntimeError(f"ledgermem serve did not start: {first!r}")
        self.port = int(found.group(1))

    def get(self, path: str) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            conn.close()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _timed_get(server: _Server, path: str) -> float:
    started = time.perf_counter()
    status, body = server.get(path)
    elapsed = time.perf_counter() - started
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {body}")
    return elapsed


def _measure(server: _Server, values_paths: list[str], last_seq: int, samples: int
             ) -> tuple[list[float], list[float], list[float], int]:
    """(values alone, values during audits, audit durations, values asked while no audit was in flight)."""
    for path in values_paths:  # opens the run and warms its pages
        _timed_get(server, path)
    alone = [_timed_get(server, values_paths[i % len(values_paths)]) for i in range(samples)]
    stop, in_flight, audits = threading.Event(), [0], []
    started = threading.Event()

    def audit_loop() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            at = 1 + (k * 7919) % last_seq  # another seq every time: never a remembered answer
            in_flight[0] += 1
            started.set()
            try:
                audits.append(_timed_get(server, f"/api/runs/{RUN_ID}/audit?at={at}"))
            finally:
                in_flight[0] -= 1

    auditor = threading.Thread(target=audit_loop, daemon=True)
    auditor.start()
    started.wait(60)
    during, idle = [], 0
    try:
        for i in range(samples):
            idle += in_flight[0] == 0
            during.append(_timed_get(server, values_paths[i % len(values_paths)]))
    finally:
        stop.set()
        auditor.join(300)
    return alone, during, audits, idle


def serve_concurrency(scratch: Path, log: Progress, *, episodes: int, turns: int, samples: int) -> Case:
    runs = scratch / "runs"
    log(f"serve concurrency: making a run of {episodes} episodes × {turns} turns")
    run(generate_synthetic(n_episodes=episodes, turns=turns, seed=11),
        RunOptions(run_id=RUN_ID, runs_dir=runs, memory=MemoryConfig(personal_data=False)))
    server = _Server(runs)
    try:
        _, info = server.get(f"/api/runs/{RUN_ID}")
        _, eps = server.get(f"/api/runs/{RUN_ID}/episodes")
        paths = [f"/api/runs/{RUN_ID}/episodes/{e['episode_id']}/values" for e in eps["items"]]
        log(f"serve concurrency: {samples} /values requests alone, then during audit?at= requests "
            f"({info['events']:,} events)")
        alone, during, audits, idle = _measure(server, paths, info["last_seq"], samples)
    finally:
        server.stop()
    one = _Server(runs, "--workers", "1")
    try:
        log("serve concurrency: the same with one worker (requests answered one at a time)")
        _, one_during, _, _ = _measure(one, paths, info["last_seq"], max(20, samples // 5))
    finally:
        one.stop()
    case = Case(
        case="serve_concurrency", family="serve_concurrency",
        title="`ledgermem serve`: `/values` while `audit?at=` requests run back to back",
        size=f"{episodes} episodes × {turns} turns ({info['events']:,} events), 8 workers, loopback HTTP",
        kind="timed", display="ms", unit="ms/request", work=1,
        baseline="`/values` with no other request", target=f"≤ {P99_MS_TARGET:g} ms p99 during audits",
    )
    case.samples_s, case.baseline_s = during, alone
    p = {name: (_quantile(xs, 0.5) * 1000, _quantile(xs, 0.99) * 1000)
         for name, xs in (("alone", alone), ("during", during), ("one_worker", one_during), ("audit", audits))}
    case.met = p["during"][1] <= P99_MS_TARGET
    case.notes.append(
        f"/values p50/p99 {p['alone'][0]:.1f}/{p['alone'][1]:.1f} ms alone, {p['during'][0]:.1f}/"
        f"{p['during'][1]:.1f} ms during {len(audits)} audits (each p50 {p['audit'][0]:.0f} ms; "
        f"{samples - idle} of {samples} values asked while one was in flight); with one worker "
        f"{p['one_worker'][0]:.0f}/{p['one_worker'][1]:.0f} ms: the values wait behind the audit")
    case.extra = {"p50_ms": {k: v[0] for k, v in p.items()}, "p99_ms": {k: v[1] for k, v in p.items()},
                  "audits": len(audits), "values_while_audit_in_flight": samples - idle,
                  "one_worker_samples_s": one_during}
    return case
