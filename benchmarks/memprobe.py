"""Peak memory of one replay, measured in a child process of its own.

    python -m benchmarks.memprobe sql  LEDGER [--memory-limit 1GiB] [--write PROJECTIONS]
    python -m benchmarks.memprobe fold LEDGER

Prints one JSON object: the child's resident set after its imports and after
opening the ledger (`start_mib`), its peak (`peak_mib`: VmHWM; `ru_maxrss_mib`
as `getrusage` reports it), its resident set once the replay has returned
(`after_mib`), the rows replayed and the seconds taken. The SQL engine's
result stays in DuckDB (`SqlHistory`); `--memory-limit` is passed to
`rebuild_sql`. `--measure-result` adds the size of the fold's returned
projections as Python objects (`result_mib`, every object counted once), so
that its working memory beyond its own result is `peak - start - result`.
`--write` then copies the SQL engine's result into a projection file (for
the as-of benchmark); that happens after the peak was read.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any


def _rss_mib() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    """VmHWM: the peak resident set of this process image.

    `ru_maxrss` is reported too, but Linux carries it over from the parent
    through fork and exec, so in a child started by a large parent it shows
    the parent's size rather than the child's own peak.
    """
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return _maxrss_mib()


def _maxrss_mib() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _deep_mib(root: Any) -> float:
    """Bytes of every object reachable from `root` through containers, each counted once."""
    seen: set[int] = set()
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
    return total / 2**20


def _write(history: Any, target: Path) -> None:
    """Copy a `SqlHistory` into a new projection file, table by table inside DuckDB."""
    from ledgermem.projections.materialise import ProjectionStore, attach_options
    from ledgermem.projections.scd2 import TABLES

    partial = target.with_name(target.name + ".partial")
    for leftover in (partial, Path(f"{partial}.wal")):
        leftover.unlink(missing_ok=True)
    ProjectionStore(partial).close()  # the tables, made as the library makes them
    quoted = str(partial).replace("'", "''")
    history.conn.execute(f"ATTACH '{quoted}' AS target ({attach_options()})")  # the row groups `rebuild_file` writes
    for spec in TABLES:
        history.conn.execute(f"INSERT INTO target.{spec.name} BY NAME SELECT * FROM {spec.name}")
    history.conn.execute("DETACH target")
    partial.rename(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memprobe")
    parser.add_argument("engine", choices=("sql", "fold"))
    parser.add_argument("ledger", type=Path)
    parser.add_argument("--write", type=Path, default=None)
    parser.add_argument("--measure-result", action="store_true")
    parser.add_argument("--memory-limit", default=None)
    args = parser.parse_args(argv)

    import ledgermem.evaluation.events  # noqa: F401  (a run's ledger holds the harness's events too: registered)
    from ledgermem.ledger.store import Ledger
    from ledgermem.projections.materialise import rebuild
    from ledgermem.projections.sql_rebuild import rebuild_sql

    with Ledger(args.ledger, read_only=True) as ledger:
        ledger.conn.execute("SET enable_progress_bar = false")
        gc.collect()
        start = _rss_mib()
        started = time.perf_counter()
        if args.engine == "sql":
            history: Any = rebuild_sql(ledger.conn, memory_limit=args.memory_limit)
        else:
            history = rebuild(ledger)
        seconds = time.perf_counter() - started
        peak, maxrss = _peak_mib(), _maxrss_mib()
        gc.collect()
        after = _rss_mib()
        rows = sum(len(v) for v in history.values())
        events = ledger.last_seq
    out = {"engine": args.engine, "events": events, "rows": rows, "start_mib": start, "peak_mib": peak,
           "ru_maxrss_mib": maxrss, "after_mib": after, "seconds": seconds, "memory_limit": args.memory_limit}
    if args.measure_result:
        out["result_mib"] = _deep_mib(history)
    if args.write is not None:
        _write(history, args.write)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
