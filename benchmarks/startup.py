"""`ledgermem --version`: the time and peak memory of starting the command, against a bare interpreter.

The command is started as the `ledgermem` script starts it (its `main()`
with `--version`), each sample in a fresh process; the baseline is a bare
interpreter started the same way, measured in the same run. The peak
resident memory of each process is its own `VmHWM` (what `wait4` reports
would include the pages of this process, copied at the fork).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ledgermem.benchmarks.measure import Case, Progress

SECONDS_TARGET = 0.25
MIB_TARGET = 60.0
ROOT = Path(__file__).resolve().parents[1]


#: Runs `main` (or nothing) and prints the process's own peak resident memory (kB) on stderr when it ends.
_PROBE = """import atexit, re, sys
def peak():
    with open('/proc/self/status') as fh:
        print('VmHWM', re.search(r'VmHWM:\\s+(\\d+)', fh.read()).group(1), file=sys.stderr)
atexit.register(peak)
if sys.argv[1:] == ['--version']:
    from ledgermem.cli.main import main
    main()
"""


def _once(*args: str) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of one process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0 or "VmHWM" not in done.stderr:
        raise RuntimeError(f"`ledgermem {' '.join(args)}` exited with {done.returncode}: {done.stderr[-300:]}")
    return seconds, int(done.stderr.split("VmHWM")[-1].split()[0]) / 1024


def cli_startup(log: Progress, *, samples: int) -> Case:
    log(f"cli startup: `ledgermem --version` and a bare interpreter, {samples} fresh processes each")
    mine, theirs = [_once("--version") for _ in range(samples)], [_once() for _ in range(samples)]
    case = Case(
        case="cli_startup", family="cli_startup", title="`ledgermem --version`: starting the command",
        size="one process", kind="timed", display="ms", unit="ms/start", work=1,
        baseline="a bare interpreter", target=f"≤ {SECONDS_TARGET * 1000:.0f} ms, ≤ {MIB_TARGET:.0f} MiB",
    )
    case.samples_s, case.baseline_s = [s for s, _ in mine], [s for s, _ in theirs]
    peak = max(m for _, m in mine)
    median = sorted(case.samples_s)[len(case.samples_s) // 2]
    case.met = median <= SECONDS_TARGET and peak <= MIB_TARGET
    case.notes.append(f"peak resident memory {peak:.0f} MiB (a bare interpreter: {max(m for _, m in theirs):.0f} "
                      "MiB); the root group imports a command's module only when that command runs")
    case.extra = {"peak_mib": peak, "baseline_peak_mib": max(m for _, m in theirs)}
    return case
