"""Crash safety of a whole run: SIGKILL anywhere, resume, and get what an uninterrupted run gets.

Each interrupted run is a real `ledgermem run` process killed with SIGKILL:
at a chosen ledger append (before it, or right after its commit and before
the projections are written), and at a random moment. The same command is
then run again, which resumes from the ledger. The ledger, the metrics and
every derived file must equal those of a run that was never interrupted.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledgermem.evaluation.metrics import TIMING_COLUMNS
from ledgermem.ledger.store import Ledger

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["run", "--systems", "all", "--episodes", "2", "--turns", "40", "--seed", "11", "--run-id", "r"]
SYSTEM_TIME = {"recorded_at", "latency_ms", "prev_hash", "hash"}  # the hashes cover recorded_at

# Runs the CLI with `Ledger.append` wrapped so that the process kills itself at append number N.
CRASHER = """
import os, signal, sys
from ledgermem.ledger.store import Ledger
n, when = int(os.environ["CRASH_AT_APPEND"]), os.environ["CRASH_WHEN"]
original = Ledger.append
calls = 0
def append(self, *args, **kwargs):
    global calls
    calls += 1
    if calls == n and when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    out = original(self, *args, **kwargs)
    if calls == n and when == "after":
        os.kill(os.getpid(), signal.SIGKILL)  # committed, but the projections and the caller never saw it
    return out
Ledger.append = append
from ledgermem.cli.commands import main
sys.argv = ["ledgermem", *sys.argv[1:]]
main()
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _cli(runs: Path, *extra: str, crash: tuple[int, str] | None = None) -> subprocess.CompletedProcess[str]:
    args = [*ARGS, "--runs-dir", str(runs), *extra]
    env = _env()
    if crash is None:
        command = [sys.executable, "-m", "ledgermem", *args]
    else:
        env |= {"CRASH_AT_APPEND": str(crash[0]), "CRASH_WHEN": crash[1]}
        command = [sys.executable, "-c", CRASHER, *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def _content(path: Path) -> list[tuple]:
    with Ledger(path, read_only=True) as ledger:
        result = ledger.conn.execute("SELECT * FROM events ORDER BY seq")
        names = [d[0] for d in result.description]
        return [tuple(v for k, v in zip(names, row) if k not in SYSTEM_TIME) for row in result.fetchall()]


def _csv(path: Path, drop: set[str]) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return [{k: v for k, v in row.items() if k not in drop} for row in csv.DictReader(fh)]


def _jsonl(path: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k != "wall_ms"}
            for line in path.read_text(encoding="utf-8").splitlines()]


def _outputs(run_dir: Path) -> dict[str, object]:
    return {
        "ledger": _content(run_dir / "ledger.duckdb"),
        "metrics": _csv(run_dir / "metrics.csv", set(TIMING_COLUMNS)),
        "predictions": _csv(run_dir / "predictions.csv", {"wall_ms"}),
        "probe_predictions": _csv(run_dir / "probe_predictions.csv", set()),
        "episode_logs": _jsonl(run_dir / "episode_logs.jsonl"),
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    runs = tmp_path_factory.mktemp("uninterrupted")
    started = time.monotonic()
    done = _cli(runs)
    assert done.returncode == 0, done.stderr
    return _outputs(runs / "r") | {"seconds": time.monotonic() - started}


@pytest.mark.parametrize("crashes", [
    [(5, "after")],                          # right after an episode's first turn commit
    [(60, "before"), (45, "after")],         # twice, mid-episode, then again after resuming
    [(400, "after")],                        # among the probes of a later system
])
def test_killed_runs_resume_to_exactly_the_uninterrupted_result(tmp_path: Path, reference, crashes) -> None:
    for at, when in crashes:
        killed = _cli(tmp_path, crash=(at, when))
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert not (tmp_path / "r" / "metrics.csv").exists()  # nothing derived from a half run
    resumed = _cli(tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    got = _outputs(tmp_path / "r")
    for name in ("ledger", "metrics", "predictions", "probe_predictions", "episode_logs"):
        assert got[name] == reference[name], name


def test_a_run_killed_at_a_random_moment_resumes(tmp_path: Path, reference) -> None:
    """Not at an append boundary: a plain SIGKILL from outside while the run is busy."""
    env = _env()
    proc = subprocess.Popen([sys.executable, "-m", "ledgermem", *ARGS, "--runs-dir", str(tmp_path)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    time.sleep(0.55 * float(reference["seconds"]))  # about half way through the turns and probes
    if proc.poll() is not None:
        pytest.fail("the run finished before it could be killed; make it longer")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    resumed = _cli(tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    got = _outputs(tmp_path / "r")
    for name in ("ledger", "metrics", "predictions", "probe_predictions", "episode_logs"):
        assert got[name] == reference[name], name


def test_resuming_with_other_arguments_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    killed = _cli(tmp_path, crash=(30, "after"))
    assert killed.returncode == -signal.SIGKILL
    before = (tmp_path / "r" / "ledger.duckdb").read_bytes()
    other = subprocess.run([sys.executable, "-m", "ledgermem", *ARGS, "--runs-dir", str(tmp_path),
                            "--chain-budget", "123"], env=_env(), capture_output=True, text=True, timeout=300)
    assert other.returncode == 1
    assert "started with different config" in other.stderr and "Traceback" not in other.stderr
    assert (tmp_path / "r" / "ledger.duckdb").read_bytes() == before


def test_running_a_finished_run_again_changes_nothing(tmp_path: Path) -> None:
    first = _cli(tmp_path, "--limit", "1")
    assert first.returncode == 0, first.stderr
    before = _content(tmp_path / "r" / "ledger.duckdb")
    (tmp_path / "r" / "metrics.csv").unlink()  # e.g. killed after the run finished, before the files were written
    again = _cli(tmp_path, "--limit", "1")
    assert again.returncode == 0, again.stderr
    assert _content(tmp_path / "r" / "ledger.duckdb") == before and (tmp_path / "r" / "metrics.csv").exists()
    other = _cli(tmp_path, "--limit", "2")
    assert other.returncode == 1 and "(complete)" in other.stderr and "--force" in other.stderr
