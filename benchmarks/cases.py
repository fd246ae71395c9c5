"""The benchmark cases: the library's operation, its baseline, its target.

Each family function returns the rows it measured. A family that misses its
target also profiles one run, so the report can say where the time goes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ledgermem.benchmarks import serve_load, startup, synth, throughput
from ledgermem.benchmarks.breakdown import breakdown, planning_and_operators
from ledgermem.benchmarks.measure import Case, Progress, timed
from ledgermem.benchmarks.profiles import profile
from ledgermem.ledger.parquet import ParquetLedger, export, import_dataset
from ledgermem.ledger.schema import GENESIS_HASH, canonical_bytes, chain_hash, events_ddl
from ledgermem.ledger.store import Ledger, RecordedEvent, StreamKey
from ledgermem.memory.backends import Completion, Message
from ledgermem.memory.memory import Memory
from ledgermem.projections.config import MemoryConfig
from ledgermem.projections.materialise import (
    ROW_GROUP_SIZE,
    ProjectionStore,
    attach_options,
    fold_history,
    projection_path,
    rebuild,
    table_ddl,
)
from ledgermem.projections.scd2 import TABLES
from ledgermem.projections.sql_rebuild import rebuild_sql
from ledgermem.temporal.queries import Episode, as_of

#: Every case id a complete run reports, in table order.
CASE_IDS: tuple[str, ...] = (
    "turn_overhead@10",
    "turn_overhead@100",
    "turn_overhead@500",
    "turn_overhead_sealed@100",
    "bulk_import",
    "rebuild_sql_small",
    "rebuild_sql_large",
    "rebuild_fold",
    "as_of",
    "verify",
    "replay_memory_sql_small",
    "replay_memory_sql_large",
    "replay_memory_fold",
    "run_workers",
    "run_turns_three_layer",
    "run_turns_all",
    "run_memory",
    "serve_concurrency",
    "cli_startup",
)
FAMILIES: tuple[str, ...] = (
    "turn_overhead", "bulk_import", "rebuild_sql", "rebuild_fold", "as_of", "verify", "replay_memory",
    "run_workers", "run_turns", "run_memory", "serve_concurrency", "cli_startup",
)
TURN_RATIO_TARGET = 1.3  # a turn's median over the median of a bare transaction inserting its rows
TURN_GROWTH_LIMIT = 1.25  # ratio to the bare transaction at the longest length over the ratio at the shortest
RUN_PEAK_MIB_TARGET = 120
IMPORT_SHARE_TARGET = 0.60
SQL_RATE_TARGET = 1_000_000
FOLD_RATE_TARGET = 200_000
AS_OF_MS_TARGET = 10.0
VERIFY_RATE_TARGET = 200_000
PEAK_MIB_TARGET = 2048
REPLAY_MEMORY_LIMIT = "1GiB"  # what the large replay gives `rebuild_sql` (three quarters to the SQL)
FOLD_EXCESS_GROWTH_LIMIT = 1.5


@dataclass(frozen=True, slots=True)
class Sizes:
    turn_lengths: tuple[int, ...]
    turn_samples: int
    sealed_length: int
    import_events: int
    runs: int
    sql_sizes: tuple[int, int]
    fold_events: int
    as_of_events: int
    as_of_queries: int
    verify_events: int
    memory_sql_sizes: tuple[int, int]
    memory_fold_sizes: tuple[int, int]
    workers_run: tuple[int, int, float] = (16, 6, 0.2)  # episodes, turns each, model latency (s) per call
    whole_run: tuple[int, int, int] = (6, 120, 5)  # episodes, turns each, samples
    default_run: tuple[str, ...] = ()  # `ledgermem run` arguments of the peak-memory case: the default job
    serve_run: tuple[int, int, int] = (8, 48, 300)  # episodes, turns each, /values requests per measure


FULL = Sizes(
    turn_lengths=(10, 100, 500), turn_samples=21, sealed_length=100, import_events=100_000, runs=5,
    sql_sizes=(1_000_000, 10_000_000), fold_events=20_000, as_of_events=10_000_000, as_of_queries=60,
    verify_events=1_000_000, memory_sql_sizes=(1_000_000, 10_000_000), memory_fold_sizes=(10_000, 50_000),
)
QUICK = Sizes(
    turn_lengths=(10, 100, 500), turn_samples=5, sealed_length=100, import_events=20_000, runs=5,
    sql_sizes=(20_000, 100_000), fold_events=10_000, as_of_events=100_000, as_of_queries=25,
    verify_events=20_000, memory_sql_sizes=(20_000, 100_000), memory_fold_sizes=(5_000, 20_000),
    workers_run=(4, 4, 0.05), serve_run=(3, 16, 60), whole_run=(1, 12, 5),
    default_run=("--episodes", "2", "--turns", "12"),
)


def label(n: int) -> str:
    """1_000_000 -> '1M', 250_000 -> '250k'."""
    for div, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suffix}"
    return f"{n:,}"


class Context:
    """What the cases share: sizes, the cache of generated ledgers, a scratch folder, progress."""

    def __init__(self, sizes: Sizes, cache: Path, scratch: Path, log: Progress, profile_misses: bool) -> None:
        self.sizes, self.cache, self.scratch, self.log = sizes, cache, scratch, log
        self.profile_misses = profile_misses
        self.generated: dict[int, synth.Generated] = {}

    def ledger(self, events: int) -> synth.Generated:
        if events not in self.generated:
            if not synth.ledger_path(self.cache, events).exists():
                self.log(f"generating a synthetic ledger of {label(events)} events (cached for later runs)")
            self.generated[events] = synth.generate(self.cache, events, log=self.log)
        return self.generated[events]

    def fresh(self, name: str) -> Path:
        folder = self.scratch / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    def projections(self, events: int) -> Path:
        """The SCD-2 tables of a generated ledger in a file, stored in episode order (made once, cached)."""
        path = projections_file(self.ledger(events).path)
        gen = self.ledger(events)
        if not path.exists():
            self.log(f"materialising the projections of the {label(events)} ledger (cached for later runs)")
            memprobe("sql", gen.path, write=path)
        return path


def projections_file(ledger: Path) -> Path:
    """Where the projections of a generated ledger are cached: named by the tables' schema, so a schema
    change (or a change of the row-group size files are written with) makes a new file rather than reusing one
    without the new columns or layout."""
    ddl = "\n".join([*(table_ddl(spec) for spec in TABLES), attach_options()])
    return ledger.with_name(f"{ledger.stem}.projections-{hashlib.sha256(ddl.encode()).hexdigest()[:8]}.duckdb")


def memprobe(engine: str, ledger: Path, *, write: Path | None = None, measure_result: bool = False,
             memory_limit: str | None = None) -> dict[str, Any]:
    """Run `benchmarks.memprobe` in a child process and return what it measured."""
    cmd = [sys.executable, "-m", "ledgermem.benchmarks.memprobe", engine, str(ledger)]
    if write is not None:
        cmd += ["--write", str(write)]
    if memory_limit is not None:
        cmd += ["--memory-limit", memory_limit]
    if measure_result:
        cmd.append("--measure-result")
    done = subprocess.run(cmd, cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"memory probe {engine} on {ledger.name} failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _miss_profile(ctx: Context, case: Case, fn: Callable[[], Any], what: str,
                  statements: Callable[[], str] | None = None,
                  heading: str = "Time per SQL statement ({what}, timed on the connection)") -> None:
    """For a missed target: a cProfile of one run and, for SQL-bound calls, the time per statement."""
    if case.met is False and ctx.profile_misses:
        ctx.log(f"profiling {case.case} ({what})")
        text = f"Profile of {what}.\n\n{profile(fn)}"
        if statements is not None:
            text += f"\n\n{heading.format(what=what)}:\n\n{statements()}"
        case.profile = text


# -- per-turn overhead ----------------------------------------------------------------------


class InstantBackend:
    """Returns the next precomputed response at once: the LLM's cost is not what is measured."""

    name = "instant"
    model = "precomputed"

    def __init__(self, responses: Sequence[str]) -> None:
        self._responses = list(responses)
        self.calls = 0

    def complete(self, messages: Sequence[Message], *, purpose: str) -> Completion:
        text = self._responses[self.calls]
        self.calls += 1
        return Completion(text=text)


def _bare_insert_turn(conn: duckdb.DuckDBPyConnection, rows: pa.Table) -> None:
    """The baseline: one transaction inserting the turn's rows, as a DuckDB user would write them."""
    conn.begin()
    conn.register("_turn", rows)
    conn.execute("INSERT INTO events SELECT * FROM _turn")
    conn.unregister("_turn")
    conn.commit()


def _turn_run(ctx: Context, lengths: Sequence[int], samples: int, *, sealed: bool,
              extra_turns: int = 0) -> tuple[dict[int, tuple[list[float], list[float], list[int]]], Memory, list[Any]]:
    """Drive one episode through `Memory.add_turn`, timing turns L..L+samples-1 for each L, and their baseline."""
    last = max(lengths) + samples - 1
    script = synth.dialogue(last + extra_turns)
    folder = ctx.fresh("turns-sealed" if sealed else "turns")
    ledger = Ledger(folder / "ledger.duckdb")
    store = ProjectionStore(projection_path(ledger.path))
    config = MemoryConfig(personal_data=sealed, tokenizer=synth.TOKENIZER)
    backend = InstantBackend([c.response for c in script if c.response is not None])
    memory = Memory(ledger, StreamKey(synth.RUN_ID, synth.SYSTEM, "bench-episode"), backend, config=config,
                    projections=store)
    base = duckdb.connect(str(folder / "baseline.duckdb"))
    base.execute(events_ddl())
    wanted = {t: L for L in lengths for t in range(L, L + samples)}
    out: dict[int, tuple[list[float], list[float], list[int]]] = {L: ([], [], []) for L in lengths}
    recorded: list[tuple[RecordedEvent, ...]] = []
    for cmd in script[:last]:
        def turn(c: Any = cmd) -> None:
            recorded.append(memory.add_turn(c.user, c.agent, occurred_at=c.occurred_at))
        if cmd.turn not in wanted:
            turn()
            continue
        spent = timed(turn)
        first, final = recorded[-1][0].seq, recorded[-1][-1].seq
        with ledger.conn.cursor() as cur:
            rows = cur.sql("SELECT * FROM events WHERE seq BETWEEN ? AND ? ORDER BY seq",
                           params=[first, final]).to_arrow_table()
        bare = timed(partial(_bare_insert_turn, base, rows))
        series = out[wanted[cmd.turn]]
        series[0].append(spent)
        series[1].append(bare)
        series[2].append(final - first + 1)
    base.close()
    return out, memory, script[last:]


def turn_overhead(ctx: Context) -> list[Case]:
    s = ctx.sizes
    ctx.log(f"per-turn overhead: one episode to turn {max(s.turn_lengths) + s.turn_samples - 1}, values in clear")
    series, memory, rest = _turn_run(ctx, s.turn_lengths, s.turn_samples, sealed=False, extra_turns=20)
    cases = []
    for length in s.turn_lengths:
        spent, bare, rows = series[length]
        case = Case(
            case=f"turn_overhead@{length}", family="turn_overhead",
            title=f"`Memory.add_turn` at turn {length} (backend excluded; values in clear)",
            size=f"turns {length}–{length + s.turn_samples - 1}", kind="timed", display="ms", unit="ms/turn",
            work=1, samples_s=spent, baseline="bare DuckDB transaction inserting the turn's rows",
            baseline_s=bare, target=f"≤ ×{TURN_RATIO_TARGET:g} the bare transaction; no growth with length",
            extra={"events_per_turn": rows, "mean_ms": 1000 * sum(spent) / len(spent)},
        )
        span = f"{min(rows)}" if min(rows) == max(rows) else f"{min(rows)}–{max(rows)}"
        case.notes.append(f"{span} events per turn")
        cases.append(case)
    first, longest = cases[0], cases[-1]
    # What grows with length is the overhead: the ratio to the bare transaction, whose own time grows with its
    # table (DuckDB's share, measured in the same run on a file with as many rows) and is not the library's.
    absolute = longest.median_s() / first.median_s()
    bare_growth = (longest.baseline_median_s() or 0.0) / (first.baseline_median_s() or 1.0)
    growth = (longest.ratio() or float("inf")) / (first.ratio() or 1.0)
    for case in cases:
        case.met = (case.ratio() or float("inf")) <= TURN_RATIO_TARGET and growth <= TURN_GROWTH_LIMIT
    longest.notes.append(f"growth of the overhead (ratio to the bare transaction) turn {s.turn_lengths[-1]} vs "
                         f"{s.turn_lengths[0]}: ×{growth:.2f} (limit ×{TURN_GROWTH_LIMIT}); of the time itself "
                         f"×{absolute:.2f}, of the bare transaction's ×{bare_growth:.2f}")
    longest.extra.update(growth=growth, absolute_growth=absolute, bare_growth=bare_growth)

    def more_turns() -> None:
        for c in rest:
            memory.add_turn(c.user, c.agent, occurred_at=c.occurred_at)

    _miss_profile(ctx, longest, more_turns, f"{len(rest)} further turns of the same episode (after turn "
                  f"{max(s.turn_lengths) + s.turn_samples - 1})")
    for case in cases[:-1]:
        if case.met is False and longest.profile:
            case.notes.append(f"profile: see {longest.case}")
    memory.ledger.close()
    memory.projections.close()

    ctx.log(f"per-turn overhead with personal data sealed, to turn {s.sealed_length + s.turn_samples - 1}")
    sealed, memory, _ = _turn_run(ctx, (s.sealed_length,), s.turn_samples, sealed=True)
    spent, bare, rows = sealed[s.sealed_length]
    case = Case(
        case=f"turn_overhead_sealed@{s.sealed_length}", family="turn_overhead",
        title=f"`Memory.add_turn` at turn {s.sealed_length}, personal data sealed (the default)",
        size=f"turns {s.sealed_length}–{s.sealed_length + s.turn_samples - 1}", kind="timed", display="ms",
        unit="ms/turn", work=1, samples_s=spent, baseline="bare DuckDB transaction inserting the turn's rows",
        baseline_s=bare, target=f"≤ ×{TURN_RATIO_TARGET:g} the bare transaction",
        extra={"events_per_turn": rows, "mean_ms": 1000 * sum(spent) / len(spent)},
    )
    case.met = (case.ratio() or float("inf")) <= TURN_RATIO_TARGET
    case.notes.append("adds AES-GCM sealing; turn keys are made 64 ahead, one key-store commit per 64 turns")
    memory.ledger.close()
    memory.projections.close()
    return [*cases, case]


# -- bulk import ------------------------------------------------------------------------------


def _bare_import(table: pa.Table, path: Path) -> None:
    conn = duckdb.connect(str(path))
    try:
        conn.execute("SET enable_progress_bar = false")
        conn.execute(events_ddl())
        conn.begin()
        conn.register("_rows", table)
        conn.execute("INSERT INTO events SELECT * FROM _rows")
        conn.unregister("_rows")
        conn.commit()
        conn.execute("CHECKPOINT")
    finally:
        conn.close()


def _import(source: Path, target: Path) -> None:
    import_dataset(source, target).close()


def bulk_import(ctx: Context) -> list[Case]:
    n = ctx.sizes.import_events
    gen = ctx.ledger(n)
    exported = gen.path.with_name(gen.path.stem + ".parquet")
    if not exported.exists():
        ctx.log(f"exporting the {label(n)} ledger to Parquet (cached for later runs)")
        staging = exported.with_name(exported.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        with Ledger(gen.path, read_only=True) as ledger:
            export(ledger, staging)
        staging.rename(exported)
    with ParquetLedger(exported) as source, source.conn.cursor() as cur:
        table = cur.sql("SELECT * FROM events ORDER BY seq").to_arrow_table()
    folder = ctx.fresh("import")
    case = Case(
        case="bulk_import", family="bulk_import", title="`import_dataset`: Parquet export → new DuckDB ledger",
        size=f"{label(n)} events ({gen.events:,})", kind="timed", display="per_s", unit="events/s",
        work=gen.events, baseline="DuckDB inserting the same Arrow table into a new file",
        target=f"≥ {IMPORT_SHARE_TARGET:.0%} of baseline throughput",
    )
    ctx.log(f"bulk import of {gen.events:,} events, {ctx.sizes.runs} runs")
    for i in range(ctx.sizes.runs):
        target, bare = folder / f"import-{i}.duckdb", folder / f"bare-{i}.duckdb"
        case.samples_s.append(timed(partial(_import, exported, target)))
        case.baseline_s.append(timed(partial(_bare_import, table, bare)))
        for p in (target, bare):
            p.unlink(missing_ok=True)
    ratio = case.ratio() or 0.0
    case.met = 1 / ratio >= IMPORT_SHARE_TARGET
    case.notes.append(f"throughput {1 / ratio:.0%} of the baseline's")
    case.extra["share_of_baseline"] = 1 / ratio
    target = folder / "profiled.duckdb"
    _miss_profile(ctx, case, partial(_import, exported, target), "one import of the same export")
    return [case]


# -- rebuilds ----------------------------------------------------------------------------------

_WINDOW_SCD2 = """
CREATE OR REPLACE TEMP TABLE _bench_scd2 AS
SELECT stream_no, k, seq AS valid_from_seq, turn AS valid_from_turn,
       lead(seq) OVER w AS valid_to_seq, lead(turn) OVER w AS valid_to_turn
FROM (SELECT stream_no, coalesce(summary_id, record_id, index_id, slot, event_type) AS k, seq, turn FROM events)
WINDOW w AS (PARTITION BY stream_no, k ORDER BY seq)
"""


def _window_scd2(conn: duckdb.DuckDBPyConnection) -> None:
    conn.execute(_WINDOW_SCD2)
    conn.execute("DROP TABLE temp._bench_scd2")


def rebuild_sql_cases(ctx: Context) -> list[Case]:
    cases = []
    for which, n in zip(("small", "large"), ctx.sizes.sql_sizes):
        gen = ctx.ledger(n)
        case = Case(
            case=f"rebuild_sql_{which}", family="rebuild_sql",
            title="full rebuild of all projections, SQL engine (`rebuild_sql`)",
            size=f"{label(n)} events ({gen.events:,})", kind="timed", display="per_s", unit="events/s",
            work=gen.events, baseline="one-table window-function SCD-2 (LEAD per key) over the same events",
            target=f"≥ {label(SQL_RATE_TARGET)} events/s" if which == "large" else "— (reported)",
        )
        ctx.log(f"SQL rebuild of {gen.events:,} events, {ctx.sizes.runs} runs")
        with Ledger(gen.path, read_only=True) as ledger:
            ledger.conn.execute("SET enable_progress_bar = false")
            rows = 0
            for _ in range(ctx.sizes.runs):
                def run() -> None:
                    nonlocal rows
                    with rebuild_sql(ledger.conn) as history:
                        rows = history.rows()
                case.samples_s.append(timed(run))
                case.baseline_s.append(timed(lambda: _window_scd2(ledger.conn)))
                ctx.log(f"  run {len(case.samples_s)}: {case.samples_s[-1]:.1f} s (baseline "
                        f"{case.baseline_s[-1]:.2f} s)")
            case.extra["projection_rows"] = rows
            case.notes.append(f"{rows:,} projection rows, kept in the result's own DuckDB database")
        if which == "large":
            case.met = case.shown(case.median_s()) >= SQL_RATE_TARGET
        cases.append(case)
    large = cases[-1]
    if large.met is False and ctx.profile_misses:
        small = ctx.ledger(ctx.sizes.sql_sizes[0])
        with Ledger(small.path, read_only=True) as ledger:
            what = f"one rebuild of the {label(ctx.sizes.sql_sizes[0])}-event ledger"
            ctx.log(f"timing the statements of {large.case} ({what})")
            table = breakdown(lambda c: rebuild_sql(c).close(), ledger.conn)
            large.profile = (f"Time per SQL statement ({what}, timed on the connection; cProfile would only "
                             f"show the Python functions that issue them):\n\n{table}")
    return cases


def rebuild_fold(ctx: Context) -> list[Case]:
    n = ctx.sizes.fold_events
    gen = ctx.ledger(n)
    case = Case(
        case="rebuild_fold", family="rebuild_fold",
        title="full rebuild of all projections, Python fold of the decoded events (`materialise.fold_history`)",
        size=f"{label(n)} events ({gen.events:,})", kind="timed", display="per_s", unit="events/s",
        work=gen.events, baseline="a dict-update loop over the same decoded events",
        target=f"≥ {label(FOLD_RATE_TARGET)} events/s",
    )
    ctx.log(f"Python fold of {gen.events:,} events, {ctx.sizes.runs} runs")
    with Ledger(gen.path, read_only=True) as ledger:
        decoded = list(ledger.read())
        by_stream: dict[StreamKey, list[RecordedEvent]] = {}
        for r in decoded:
            if r.stream.episode_id:
                by_stream.setdefault(r.stream, []).append(r)

        cpu: list[float] = []

        def fold() -> None:
            started = time.process_time()
            fold_history(by_stream.items())
            cpu.append(time.process_time() - started)

        def dict_loop() -> None:
            latest: dict[tuple[StreamKey, str, int], Any] = {}
            for r in decoded:
                latest[(r.stream, r.event.event_type, r.event.turn)] = r.event

        for _ in range(ctx.sizes.runs):
            case.samples_s.append(timed(fold))
            case.baseline_s.append(timed(dict_loop))
        reading = timed(lambda: list(ledger.read()))
        whole = timed(lambda: rebuild(ledger))
        cpu_median = sorted(cpu)[len(cpu) // 2]
        case.extra |= {"read_decode_s": reading, "rebuild_from_ledger_s": whole, "fold_cpu_s": cpu}
        case.notes.append(f"CPU time of the fold (one thread; a loaded machine stretches wall time, not this): median "
                          f"{cpu_median:.3f} s ({gen.events / cpu_median:,.0f} events/s)")
        case.notes.append(f"the events read and decoded beforehand (as the baseline's); reading and decoding "
                          f"them: {reading:.2f} s, `materialise.rebuild` from the ledger (reading included): "
                          f"{whole:.2f} s ({gen.events / whole:,.0f} events/s)")
        case.met = case.shown(case.median_s()) >= FOLD_RATE_TARGET
        _miss_profile(ctx, case, fold, "one fold of the same decoded events")
    return [case]


# -- as-of -------------------------------------------------------------------------------------


def as_of_case(ctx: Context) -> list[Case]:
    n = ctx.sizes.as_of_events
    gen = ctx.ledger(n)
    proj = ctx.projections(n)
    case = Case(
        case="as_of", family="as_of", title="`temporal.as_of`: one episode, every layer, as of a seq",
        size=f"{label(n)}-event ledger ({gen.events:,})", kind="timed", display="ms", unit="ms/query",
        work=1, baseline="raw point scan of that episode's events up to the seq",
        target=f"≤ {AS_OF_MS_TARGET:g} ms p50",
    )
    with Ledger(gen.path, read_only=True) as ledger:
        refs = synth.episodes_of(ledger, ctx.sizes.as_of_queries)
        conn = duckdb.connect(str(proj), read_only=True)
        try:
            ctx.log(f"as-of queries on the {label(n)} ledger: {len(refs)} episodes")
            items = 0
            scan = "SELECT * FROM events WHERE stream_no = ? AND seq <= ? ORDER BY seq"
            for i, ref in enumerate(refs):
                seq = ref.first_seq + (ref.last_seq - ref.first_seq) * 2 // 3
                ep = Episode(synth.RUN_ID, synth.SYSTEM, ref.episode_id)
                if i == 0:
                    as_of(conn, ep, seq=seq)  # warms DuckDB's buffers for the file's metadata, once
                answer: dict[str, list[Any]] = {}

                def query(e: Episode = ep, s: int = seq, out: dict[str, list[Any]] = answer) -> None:
                    out.update(as_of(conn, e, seq=s))

                def point_scan(r: synth.EpisodeRef = ref, s: int = seq) -> None:
                    ledger.conn.execute(scan, [r.stream_no, s]).fetchall()

                case.samples_s.append(timed(query))
                items += sum(len(v) for v in answer.values())
                case.baseline_s.append(timed(point_scan))
        finally:
            conn.close()
    case.notes.append(f"{items / len(refs):.0f} rows per answer on average; p95 "
                      f"{case.summary()['p95']:.1f} ms; projections stored in episode order, in row groups of "
                      f"{ROW_GROUP_SIZE:,} rows")
    case.met = case.median_s() * 1000 <= AS_OF_MS_TARGET
    if case.met is False:
        ref = refs[0]
        with duckdb.connect(str(proj), read_only=True) as again:
            ep = Episode(synth.RUN_ID, synth.SYSTEM, ref.episode_id)
            _miss_profile(ctx, case, lambda: [as_of(again, ep, seq=ref.last_seq) for _ in range(20)],
                          "20 as-of queries of one episode",
                          lambda: planning_and_operators(lambda c: as_of(c, ep, seq=ref.last_seq), again),
                          heading=("Inside the one statement ({what}, DuckDB's own profiler: planning, and each "
                                   "operator; what the parts leave of DuckDB's total is the executor's own "
                                   "scheduling)"))
    return [case]


# -- verify -----------------------------------------------------------------------------------


def _canonical(ledger: Ledger) -> list[bytes]:
    """The bytes the chain covers, for every row, serialised once (the baseline hashes only)."""
    result = ledger.conn.execute("SELECT * FROM events ORDER BY seq")
    names = [d[0] for d in result.description or ()]
    out: list[bytes] = []
    while chunk := result.fetchmany(8192):
        out.extend(canonical_bytes(dict(zip(names, values))) for values in chunk)
    return out


def verify_case(ctx: Context) -> list[Case]:
    n = ctx.sizes.verify_events
    gen = ctx.ledger(n)
    case = Case(
        case="verify", family="verify", title="`Ledger.verify`: recompute the hash chain and contiguity",
        size=f"{label(n)} events ({gen.events:,})", kind="timed", display="per_s", unit="events/s",
        work=gen.events, baseline="SHA-256 chain (`chain_hash`) over the same bytes, serialised beforehand",
        target=f"≥ {label(VERIFY_RATE_TARGET)} events/s",
    )
    with Ledger(gen.path, read_only=True) as ledger:
        ctx.log(f"serialising the canonical bytes of {gen.events:,} events for the baseline")
        serialise = 0.0
        canonical: list[bytes] = []

        def load() -> None:
            canonical.extend(_canonical(ledger))

        serialise = timed(load)

        def chain() -> None:
            prev = GENESIS_HASH
            for c in canonical:
                prev = chain_hash(prev, c)

        ctx.log(f"verify of {gen.events:,} events, {ctx.sizes.runs} runs")
        reports: list[Any] = []
        for _ in range(ctx.sizes.runs):
            case.samples_s.append(timed(lambda: reports.append(ledger.verify())))
            case.baseline_s.append(timed(chain))
        ok = all(r.ok for r in reports)
        canonical.clear()
        case.extra["chain_ok"] = ok
        case.extra["serialise_s"] = serialise
        case.notes.append(f"the chain verifies: {'yes' if ok else 'NO'}; reading rows and serialising them "
                          f"canonically alone took {serialise:.1f} s ({gen.events / serialise:,.0f} events/s)")
        case.met = case.shown(case.median_s()) >= VERIFY_RATE_TARGET
        if case.met is False and ctx.profile_misses:
            small = ctx.ledger(ctx.sizes.fold_events)
            with Ledger(small.path, read_only=True) as other:
                _miss_profile(ctx, case, other.verify, f"one verify of the {label(ctx.sizes.fold_events)}-event ledger")
    return [case]


# -- memory ------------------------------------------------------------------------------------


def replay_memory(ctx: Context) -> list[Case]:
    cases = []
    for which, n in zip(("small", "large"), ctx.sizes.memory_sql_sizes):
        gen = ctx.ledger(n)
        proj = projections_file(gen.path)
        write = proj if n == ctx.sizes.as_of_events and not proj.exists() else None
        limit = REPLAY_MEMORY_LIMIT if which == "large" else None
        ctx.log(f"peak memory of a SQL-engine replay of {gen.events:,} events (child process"
                f"{f', memory_limit={limit}' if limit else ''})")
        probe = memprobe("sql", gen.path, write=write, memory_limit=limit)
        case = Case(
            case=f"replay_memory_sql_{which}", family="replay_memory",
            title=("replay peak memory, SQL engine (`rebuild_sql`"
                   + (f", `memory_limit=\"{limit}\"`" if limit else "") + ", child process)"),
            size=f"{label(n)} events ({gen.events:,})", kind="memory", display="mib", unit="MiB peak RSS",
            value=probe["peak_mib"], target=f"≤ {PEAK_MIB_TARGET / 1024:g} GiB" if which == "large" else "— (reported)",
            extra=probe,
        )
        case.notes.append(f"{probe['rows']:,} projection rows; {probe['start_mib']:.0f} MiB before the rebuild, "
                          f"{probe['after_mib']:.0f} MiB once it returned; {probe['seconds']:.1f} s")
        if which == "large":
            case.met = probe["peak_mib"] <= PEAK_MIB_TARGET
            ctx.log("the same replay without a memory limit (child process), for comparison")
            free = memprobe("sql", gen.path)
            case.extra["without_limit"] = free
            case.notes.append(f"without `memory_limit` DuckDB keeps its working tables in memory (its default "
                              f"limit is 80% of RAM): peak {free['peak_mib']:,.0f} MiB, {free['seconds']:.1f} s")
        cases.append(case)
    probes = []
    for n in ctx.sizes.memory_fold_sizes:
        gen = ctx.ledger(n)
        ctx.log(f"peak memory of a Python-fold replay of {gen.events:,} events (child process)")
        probes.append(memprobe("fold", gen.path, measure_result=True))
    small, large = probes
    work = [p["peak_mib"] - p["start_mib"] - p["result_mib"] for p in probes]
    case = Case(
        case="replay_memory_fold", family="replay_memory",
        title="replay memory, Python fold (`materialise.rebuild`, child process)",
        size=f"{label(ctx.sizes.memory_fold_sizes[0])} and {label(ctx.sizes.memory_fold_sizes[1])} events",
        kind="memory", display="mib", unit="MiB peak RSS", value=large["peak_mib"],
        target="working memory beyond the projections does not grow with length",
        extra={"probes": probes, "working_mib": work},
    )
    case.met = work[1] <= FOLD_EXCESS_GROWTH_LIMIT * max(work[0], 1.0) + 16
    case.notes.append(
        f"peak {small['peak_mib']:.0f} → {large['peak_mib']:.0f} MiB from {small['start_mib']:.0f} → "
        f"{large['start_mib']:.0f} MiB at the start; the projections themselves (Python objects) "
        f"{small['result_mib']:.0f} → {large['result_mib']:.0f} MiB; working memory beyond them "
        f"{work[0]:.0f} → {work[1]:.0f} MiB (limit ×{FOLD_EXCESS_GROWTH_LIMIT} + 16 MiB)")
    cases.append(case)
    return cases


# -- run throughput with workers ------------------------------------------------------------


def run_workers(ctx: Context) -> list[Case]:
    episodes, turns, latency = ctx.sizes.workers_run
    ctx.log(f"run throughput: {episodes} episodes × {turns} turns over loopback HTTP at {latency * 1000:.0f} ms "
            f"a call, 1 worker and {throughput.WORKERS}, {ctx.sizes.runs} runs each")
    return [throughput.throughput(ctx.fresh("run_workers"), ctx.log, episodes=episodes, turns=turns,
                                  latency_s=latency, runs=ctx.sizes.runs)]


def runprobe(folder: Path, *args: str) -> dict[str, Any]:
    """Run `benchmarks.runprobe` (one `ledgermem run ARGS` in FOLDER) in a child process; what it measured."""
    cmd = [sys.executable, "-m", "ledgermem.benchmarks.runprobe", str(folder), *args]
    done = subprocess.run(cmd, cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"run probe {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _bare_commits(ledger_path: Path, target: Path) -> float:
    """Seconds to write a run's events into a bare DuckDB file the way the run committed them: one
    transaction per commit (the rows of one stream sharing one `recorded_at`), nothing else."""
    with duckdb.connect(str(ledger_path), read_only=True) as source:
        table = source.sql("SELECT * FROM events ORDER BY seq").to_arrow_table()
    keys = list(zip(table.column("stream_no").to_pylist(), table.column("recorded_at").to_pylist()))
    bounds = [0, *(i for i in range(1, len(keys)) if keys[i] != keys[i - 1]), len(keys)]
    conn = duckdb.connect(str(target))
    conn.execute(events_ddl())
    started = time.perf_counter()
    for lo, hi in zip(bounds, bounds[1:]):
        _bare_insert_turn(conn, table.slice(lo, hi - lo))
    seconds = time.perf_counter() - started
    conn.close()
    return seconds


def _cli_run(runs_dir: Path, *args: str) -> tuple[float, int]:
    """Seconds one `ledgermem run ARGS` takes in this process (its output discarded), and the turns it ingested."""
    from ledgermem.cli.commands import cli

    with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
        started = time.perf_counter()
        try:
            cli.main(args=["run", "--runs-dir", str(runs_dir), *args], prog_name="ledgermem", standalone_mode=False)
        except SystemExit as exc:  # the command's own exit: 0 when the run finished
            if exc.code not in (0, None):
                raise RuntimeError(f"ledgermem run {' '.join(args)} exited with {exc.code}") from None
        seconds = time.perf_counter() - started
    turns = 0
    for path in runs_dir.glob("*/ledger.duckdb"):
        with duckdb.connect(str(path), read_only=True) as conn:
            row = conn.execute("SELECT count(*) FROM events WHERE event_type = 'turn_recorded'").fetchone()
            turns += int(row[0]) if row else 0
    return seconds, turns


def run_turns(ctx: Context) -> list[Case]:
    """A whole offline run (heuristic backend, synthetic en + zh data), all-in wall time per ingested turn."""
    episodes, turns, samples = ctx.sizes.whole_run
    cases = []
    for which, systems in (("three_layer", "three_layer"), ("all", "all")):
        case = Case(
            case=f"run_turns_{which}", family="run_turns",
            title=f"`ledgermem run --systems {systems}`: all-in time per turn (heuristic backend)",
            size=f"{episodes} episodes × {turns} turns, synthetic en + zh", kind="timed", display="ms",
            unit="ms/turn", baseline="the run's commits replayed as bare DuckDB transactions (one per commit)",
            target="— (reported; compared side by side with the earlier implementation)",
        )
        for i in range(samples):
            folder = ctx.fresh(f"run_turns_{which}_{i}")
            seconds, done = _cli_run(folder / "runs", "--run-id", "bench", "--systems", systems,
                                     "--episodes", str(episodes), "--turns", str(turns), "--json")
            bare = _bare_commits(folder / "runs" / "bench" / "ledger.duckdb", folder / "bare.duckdb")
            case.samples_s.append(seconds / done)
            case.baseline_s.append(bare / done)
            case.extra["turns"] = done
            ctx.log(f"run_turns_{which}: {seconds:.1f} s for {done} turns ({1000 * seconds / done:.1f} ms a turn; "
                    f"its commits bare {1000 * bare / done:.1f} ms a turn)")
        case.notes.append("ingestion, probes, metrics and derived files included, per ingested turn; the baseline "
                          "is the floor of a design that makes each commit durable")
        cases.append(case)
    return cases


def run_memory(ctx: Context) -> list[Case]:
    """Peak resident set of the default job, `ledgermem run`, against what it holds before its first turn."""
    args = ctx.sizes.default_run
    probe = runprobe(ctx.fresh("run_memory"), "--run-id", "bench", *args)
    case = Case(
        case="run_memory", family="run_memory",
        title=f"`ledgermem run{' ' + ' '.join(args) if args else ''}` (the default job"
              f"{', smaller' if args else ''}): peak RSS, child process",
        size=f"{probe['turns']} turns", kind="memory", display="mib", unit="MiB peak RSS", value=probe["peak_mib"],
        target=f"≤ {RUN_PEAK_MIB_TARGET} MiB", extra=probe,
    )
    case.met = probe["peak_mib"] <= RUN_PEAK_MIB_TARGET
    stages = probe["stages"]
    case.notes.append(f"{stages['package']:.0f} MiB once the package is imported (Python; `import ledgermem` loads "
                      f"no database), {stages['cli']:.0f} MiB with the CLI's modules (DuckDB, rich, cryptography; "
                      f"not pyarrow, numpy or requests), {stages['tokenizer']:.0f} MiB with the "
                      f"tokenizer loaded (its Rust tables; the Python copy of the ranks is dropped): the floor "
                      f"before the first turn; {probe['seconds']:.1f} s")
    return [case]


def serve_concurrency(ctx: Context) -> list[Case]:
    episodes, turns, samples = ctx.sizes.serve_run
    return [serve_load.serve_concurrency(ctx.fresh("serve_concurrency"), ctx.log, episodes=episodes, turns=turns,
                                         samples=samples)]


def cli_startup(ctx: Context) -> list[Case]:
    return [startup.cli_startup(ctx.log, samples=ctx.sizes.runs * 4)]


RUNNERS: dict[str, Callable[[Context], list[Case]]] = {
    "turn_overhead": turn_overhead,
    "bulk_import": bulk_import,
    "rebuild_sql": rebuild_sql_cases,
    "rebuild_fold": rebuild_fold,
    "replay_memory": replay_memory,  # before as_of: its large replay also writes the as-of projections
    "as_of": as_of_case,
    "verify": verify_case,
    "run_workers": run_workers,
    "run_turns": run_turns,
    "run_memory": run_memory,
    "serve_concurrency": serve_concurrency,
    "cli_startup": cli_startup,
}
