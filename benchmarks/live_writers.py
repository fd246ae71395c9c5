"""Many concurrent writers on the live memory service: `python -m ledgermem.benchmarks.live_writers [--quick]`.

The server is the real command (`python -m ledgermem live serve`, a process
of its own) on a fresh folder, with the offline heuristic backend; with
`--model-ms N` it is the same server and store in a process of its own
whose heuristic backend first waits N ms per call, as a real model would
(the one knob `live serve` has no option for). First one
client records turns alone, one after the other; then `--clients` clients,
each on a stream of its own, record `--turns` turns each at once, every turn
with an idempotency key. Printed: turns per second and per-turn latency
(p50, p99) of both, their ratio, the CPU time per turn of the server and of
the clients (Linux), and afterwards, with the server stopped,
`verify` and `audit` of its ledger and the check that the ledger holds
exactly the turns the clients were told were recorded (none lost, none
doubled). The figures are the machine's of the day: compare them only with
runs on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledgermem.memory.backends import Completion, Message
from ledgermem.memory.heuristic import HeuristicBackend
from ledgermem.projections.tokens import ESTIMATOR
from ledgermem.service.client import MemoryClient
from ledgermem.service.http import make_live_server
from ledgermem.service.live_questions import LiveService
from ledgermem.gate.invariants import audit
from ledgermem.evaluation.replay import replay
from ledgermem.memory.runs import open_run
from ledgermem.service.live import LEDGER_FILE, LiveStore, address_of
from ledgermem.service.tokens import TokenStore

SAYINGS = ("My office is on floor {n}.", "I live in city {n}.", "My manager is person {n}.", "Thanks, noted {n}.")


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class _Slowed(HeuristicBackend):
    """The offline heuristic backend, answering each call after the latency of a model."""

    def __init__(self, seconds: float) -> None:
        super().__init__(tokenizer=ESTIMATOR)
        self.seconds = seconds

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        time.sleep(self.seconds)
        return super().complete(messages, purpose=purpose)


def _serve_slowed(folder: Path, model_ms: float) -> None:
    """The child process of `--model-ms`: the live server of `live serve`, its backend slowed."""
    store = LiveStore(folder, backend=lambda: _Slowed(model_ms / 1000))
    server = make_live_server(LiveService(store), 0, quiet=True, workers=64)
    print(f"http://127.0.0.1:{server.server_address[1]}/", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        store.close()


def _serve(folder: Path, model_ms: float = 0) -> tuple[subprocess.Popen[str], str]:
    if model_ms:
        command = [sys.executable, "-m", "ledgermem.benchmarks.live_writers", "--serve", str(folder),
                   "--model-ms", str(model_ms)]
    else:
        command = [sys.executable, "-m", "ledgermem", "live", "serve", str(folder), "--port", "0", "--quiet",
                   "--workers", "64"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    first = proc.stdout.readline() if proc.stdout else ""
    found = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
    if not found:
        proc.kill()
        raise RuntimeError(f"ledgermem live serve did not start: {first!r}")
    return proc, f"http://127.0.0.1:{found.group(1)}"


def _write(client: MemoryClient, stream: str, turns: int, acked: list[tuple[str, int]],
           latencies: list[float]) -> None:
    for t in range(turns):
        start = time.perf_counter()
        answer = client.record_turn(stream, SAYINGS[t % len(SAYINGS)].format(n=t), "ok",
                                    idempotency_key=f"{stream}#{t}")
        latencies.append((time.perf_counter() - start) * 1000)
        acked.append((stream, int(answer["turn"])))


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux `/proc`; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _phase(url: str, secret: str, prefix: str, clients: int, turns: int, server_pid: int) -> dict[str, Any]:
    acked: list[tuple[str, int]] = []
    latencies: list[float] = []
    threads = [threading.Thread(target=_write, args=(MemoryClient(url, secret), f"bench/{prefix}-{i}/s", turns,
                                                      acked, latencies)) for i in range(clients)]
    server_cpu, client_cpu = _cpu_seconds(server_pid), time.process_time()
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    server_after, client_cpu = _cpu_seconds(server_pid), time.process_time() - client_cpu
    cpu = {}
    if server_cpu is not None and server_after is not None and acked:
        cpu = {"server_cpu_ms_per_turn": round(1000 * (server_after - server_cpu) / len(acked), 2),
               "clients_cpu_ms_per_turn": round(1000 * client_cpu / len(acked), 2)}
    return {"clients": clients, "turns": len(acked), "seconds": round(seconds, 2),
            "turns_per_second": round(len(acked) / seconds, 1), "p50_ms": round(_quantile(latencies, 0.5), 1),
            "p99_ms": round(_quantile(latencies, 0.99), 1), **cpu, "acked": acked}


def _check(folder: Path, acked: list[tuple[str, int]]) -> dict[str, Any]:
    """With the server stopped: verify, audit, replay, and the ledger's turns against the acknowledged ones."""
    with open_run(folder / LEDGER_FILE) as (ledger, projections):
        report = ledger.verify()
        audited = audit(ledger, projections, run_id="live")
        replayed = replay(ledger, projections)
        stored: Counter[str] = Counter()
        for r in ledger.read(event_types=["turn_recorded"]):
            stored[address_of(r.stream)] += 1
    told = Counter(stream for stream, _ in acked)
    doubled = sorted({stream for (stream, _), n in Counter(acked).items() if n > 1})
    return {"verify_ok": report.ok, "events": report.events, "audit_ok": audited.ok,
            "replay_identical": replayed.identical, "turns_match_acknowledged": stored == told,
            "acknowledged_twice": doubled}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m ledgermem.benchmarks.live_writers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--turns", type=int, default=10, help="turns per client")
    p.add_argument("--alone", type=int, default=100, help="turns of the one client alone")
    p.add_argument("--quick", action="store_true", help="8 clients, 5 turns each, 20 alone")
    p.add_argument("--model-ms", type=float, default=0.0,
                   help="latency of each model call in the server (0: the bare heuristic backend)")
    p.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the server process of --model-ms
    args = p.parse_args(argv)
    if args.serve is not None:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # `terminate` closes the store: commits, flushes
        _serve_slowed(args.serve, args.model_ms)
        return {}
    if args.quick:
        args.clients, args.turns, args.alone = 8, 5, 20
    with tempfile.TemporaryDirectory(prefix="ledgermem-live-bench-") as tmp:
        folder = Path(tmp) / "mem"
        secret = TokenStore(folder).create("bench", "read,write")[1]
        proc, url = _serve(folder, args.model_ms)
        try:
            alone = _phase(url, secret, "alone", 1, args.alone, proc.pid)
            many = _phase(url, secret, "many", args.clients, args.turns, proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            if proc.stdout is not None:
                proc.stdout.close()
        checked = _check(folder, alone["acked"] + many["acked"])
    result = {"model_ms": args.model_ms, "alone": {k: v for k, v in alone.items() if k != "acked"},
              "concurrent": {k: v for k, v in many.items() if k != "acked"},
              "speedup": round(many["turns_per_second"] / alone["turns_per_second"], 2), **checked}
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
