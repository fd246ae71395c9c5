"""Time and peak memory of one `ledgermem run`, measured in a child process of its own.

    python -m benchmarks.runprobe FOLDER [RUN ARGUMENTS...]

Runs the CLI's `run` command in FOLDER (its `runs/` go there) and prints one
JSON object: the resident set once the modules a run needs are imported
and the tokenizer is loaded (`loaded_mib`), the peak (`peak_mib`: VmHWM),
the seconds the command took, the turns it ingested (from the ledger) and
where the resident set stood at each stage of the start (`stages`), so a
peak can be set against what the process holds before its first turn.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def _rss_mib() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    """VmHWM: this process image's own peak (ru_maxrss may carry the parent's over)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        raise SystemExit("usage: python -m benchmarks.runprobe FOLDER [RUN ARGUMENTS...]")
    folder, run_args = Path(args[0]), args[1:]
    stages = {"package": _rss_mib()}  # Python, and what `import ledgermem` loads (DuckDB, pyarrow among it)
    from ledgermem.cli.commands import cli
    stages["cli"] = _rss_mib()
    from ledgermem.projections.tokens import count_tokens, default_tokenizer
    count_tokens("tokenizer loaded", default_tokenizer())
    stages["tokenizer"] = _rss_mib()
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(folder)
    started = time.perf_counter()
    try:
        cli.main(args=["run", *run_args], prog_name="ledgermem", standalone_mode=False)
    except SystemExit as exc:  # the command's own exit: 0 when the run finished
        if exc.code not in (0, None):
            raise
    seconds = time.perf_counter() - started
    peak = _peak_mib()
    from ledgermem.ledger.store import Ledger

    turns = 0
    for ledger_file in Path("runs").glob("*/ledger.duckdb"):
        with Ledger(ledger_file, read_only=True) as ledger:
            row = ledger.conn.execute("SELECT count(*) FROM events WHERE event_type = 'turn_recorded'").fetchone()
            turns += int(row[0]) if row else 0
    print(json.dumps({"peak_mib": peak, "loaded_mib": stages["tokenizer"], "stages": stages,
                      "seconds": seconds, "turns": turns, "args": run_args}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
