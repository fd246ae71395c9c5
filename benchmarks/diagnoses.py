"""Why a family misses its target, read from its profile; RESULTS.md shows it beside the profile.

Each text names the file and function where the time (or memory) goes and
what the measurement shows. Nothing in the library was changed to make a
case pass: these are findings.
"""

from __future__ import annotations

DIAGNOSES: dict[str, str] = {
    "turn_overhead": (
        "Where the time goes (`memory/memory.py` `Memory.add_turn` → `_commit`): two durable DuckDB commits "
        "per turn — the ledger's (`ledger/store.py` `Ledger.append`: an Arrow batch registered and inserted, "
        "then an `UPDATE streams`) and the projection file's (`projections/materialise.py` "
        "`ProjectionStore.write`: an Arrow insert through `_insert` for each table with new versions, an "
        "`executemany` UPDATE closing versions by `version_id`, a DELETE and an INSERT of the high-water mark "
        "in `_set_last_seq`) — plus two queries per turn in `Memory._finish_shredding` "
        "(`last_erasure_seq` and `ProjectionStore.erasure_mark`) although nothing was erased, and a sealed "
        "turn adds a key-store commit. The baseline, one bare transaction inserting the same rows, already "
        "costs more than the 2 ms target on this machine: a durable DuckDB commit here costs several "
        "milliseconds (SPEC §8 measured 0.3–4 ms), so no design that commits per turn meets 2 ms here, and "
        "one that commits twice costs at least two baselines. The ratio is the actionable figure: about four "
        "baseline commits' worth of work per turn. Candidates, not applied: remember the last erasure seq in "
        "the process instead of querying it every turn; one statement per table per turn in "
        "`ProjectionStore.write` (no `executemany`, no DELETE+INSERT of the mark); since `LiveProjection` "
        "already catches the projections up from the ledger on open, the projection file need not be made "
        "durable on every turn. Per-turn cost does not grow with the episode's length at these lengths."
    ),
    "bulk_import": (
        "`ledger/parquet.py` `import_dataset` copies the export into the new file with one `INSERT … SELECT … "
        "ORDER BY seq` from the Parquet files and then verifies the copy (`ParquetLedger.verify_copy` → "
        "`Ledger.verify`, see `ledger/chain.py`) before renaming it in: the files are read once, and the "
        "chain is walked over a table already in seq order. In the profile below the insert "
        "(`_write_new_ledger`'s own time: DuckDB reading and decompressing Parquet, sorting the rows by seq, "
        "compressing and writing them) is more than half of the import and costs more than the baseline's "
        "insert of an Arrow table already in memory and in order; the chain walk — every row's hash, which an "
        "import must check — is about a quarter; opening the export (manifest, file schemas, the "
        "`read_parquet` view) about a tenth. Candidates, not applied: stream the sorted Parquet rows through "
        "the chain walk straight into the new file (one pass, no second read of the copy); walk the chain on "
        "the second core while the copy is written."
    ),
    "rebuild_sql": (
        "The result path is no longer the cost: each projection's final query streams as Arrow into a DuckDB "
        "database that belongs to the result (`projections/sql_rebuild.py` `SqlHistory`), and no row becomes "
        "a Python object unless a caller reads it; that streaming is the line 'outside the timed statements' "
        "below, about a sixth. The rest is the SQL (`projections/rebuild_*.sql`): the output queries of "
        "`window_versions` and `raw_records` (one row per turn each, each a window over every record's "
        "events), the staging tables `_rb_summary` (running window aggregates per summary) and `_rb_ev` "
        "(payloads parsed per event), then the registry (`_rb_fact_iv`, `fact_versions`). The baseline — one "
        "LEAD window over one table, kept inside DuckDB — is what the engine does at this size with nothing "
        "else to compute; the rebuild computes every attribute of six tables. Candidates, for the SQL: typed "
        "columns for the payload fields the staging parses; fewer window passes over the records' events."
    ),
    "rebuild_fold": (
        "`projections/scd2.py` `Projector` compares only the rows an event can have changed (`touched`, read "
        "off the event; a title's live-member count makes an archival compare every title) and builds one "
        "dict per new version, with its `version_id` (SHA-256); what is left is `projections/state.py` "
        "`evolve` (a new frozen state per changing event, copying the mapping it changes) and the Python "
        "calls per row. Reading and decoding the events (`ledger/store.py` `Ledger.read` → "
        "`ledger/schema.py` `decode`) is not in the timed fold; the note gives it."
    ),
    "as_of": (
        "`temporal/queries.py` `as_of` is one statement for every layer (`temporal/temporal.sql` `as_of`) and "
        "installs nothing per call. DuckDB's own profile of that statement (below): binding and optimising it "
        "take about a third of the call — and DuckDB plans a parameterised statement again on every "
        "execution, prepared or not (duckdb/duckdb#17237, #20885), so the plan cannot be kept; each "
        "projection table costs a scan of one whole row group (122,880 rows: the episode's key prunes to the "
        "row group, not within it); the ordered `list` aggregates and turning the nested rows into Python "
        "dicts are most of the rest. Measured on the same data, not applied: the same query on a projection "
        "file written with 16,384-row row groups (`ATTACH … (ROW_GROUP_SIZE 16384)`) was about 3 ms faster; "
        "flat rows tagged by layer (`UNION ALL BY NAME`) instead of nested lists about 15% faster. Candidates "
        "beyond that, for the projection file (`projections/materialise.py`): smaller row groups; an integer "
        "stream key in the projection tables, as the ledger has (`stream_no`, SPEC §8)."
    ),
    "verify": (
        "`ledger/chain.py` `check_chain`: DuckDB spells every row's canonical bytes (`ledger/schema.py` "
        "`canonical_sql`) and streams them as Arrow; Python hashes each with `hashlib.sha256` and checks "
        "links, seqs and stream versions a batch at a time with numpy. Hashing in Python is the largest part "
        "(one `sha256(...).hexdigest()` per row), then DuckDB's spelling of the bytes; rows the SQL cannot "
        "vouch for are read back and checked with `canonical_bytes`."
    ),
    "run_workers": (
        "`evaluation/workers.py`: the workers share one writer lock and release it only while a model call "
        "is in flight, so everything else a step does runs one worker at a time: `Memory._commit` "
        "(`memory/memory.py`) with its ledger commit (`Ledger.append`), its projection-file commit "
        "(`ProjectionStore.write`) and the two queries of `_finish_shredding` — the per-turn cost the "
        "`turn_overhead` row measures — plus deciding, rendering and building prompts in Python. A 16-worker "
        "run takes about as long as the one-worker run's own work (its time beyond the latency floor, in the "
        "note): that work, not the waiting, is what is left. It is CPU work more than lock contention: "
        "letting the projection commit run outside the writer lock (its own lock, so another worker can "
        "append meanwhile) measured no faster (16-worker runs 5.2–5.7 s either way, interleaved), because two "
        "cores shared with other jobs leave no core idle to overlap it on; the same code measured ×4.4 at a "
        "load average of 9 and ×9.1 at 5 (best runs ×13). At the latencies of hosted models (1–5 s a call) "
        "the own work is a far smaller share; at 200 ms, raising the figure means less work per turn — the "
        "candidates of `turn_overhead` (fewer commits and queries per turn)."
    ),
    "replay_memory": (
        "`projections/sql_rebuild.py` `rebuild_sql` keeps its result in DuckDB, so the peak is DuckDB's "
        "working memory. Without a `memory_limit` DuckDB keeps its working tables in memory (its default "
        "limit is 80% of RAM); with one it spills them to its temporary directory. `evaluation/replay.py` "
        "`replay` (`ledgermem replay --engine sql`) passes no limit and compares the result with the live "
        "projection file read as Python dicts (`ProjectionStore.read_tables`), which is outside this "
        "benchmark."
    ),
}
