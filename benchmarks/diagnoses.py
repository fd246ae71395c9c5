"""Why a family misses its target, read from its profile; RESULTS.md shows it beside the profile.

Each text names the file and function where the time (or memory) goes and
what the measurement shows. Nothing in the library was changed to make a
case pass: these are findings.
"""

from __future__ import annotations

DIAGNOSES: dict[str, str] = {
    "turn_overhead": (
        "A turn makes one durable commit, the ledger's, and its transaction is the events' insert alone "
        "(`ledger/store.py` `Ledger.append`: an Arrow batch registered and inserted; a stream's row in `streams` "
        "is written once, when the stream begins). The streams' versions are kept in the process and written to "
        "the `streams` table on close and before an export (`Ledger.sync_streams`); every open takes a stream's "
        "version from its events where the table is behind them (after a crash), so expected-version checks and "
        "idempotent retries see what the events hold. The projection file is not committed per turn: "
        "`projections/materialise.py` `ProjectionStore.write` keeps the versions in the process and `flush` "
        "writes every pending stream in one transaction (one insert per table, one `UPDATE … FROM` closing "
        "versions, the marks) every `FLUSH_ROWS` versions, on `close` and before any read of the file; a crash "
        "loses only pending versions, which the marks show as behind and the next writer refolds from the "
        "ledger. Keys of a numbered series (`…#turn:N`) are made 64 ahead in one key-store transaction "
        "(`ledger/keys.py` `KeyStore.ensure`), and the last erasure seq is kept by the ledger and the erasure "
        "mark by the store, so `Memory._finish_shredding` queries nothing per turn. The capacity check renders "
        "only the parts it counts, index titles and chain lines (`projections/render.py` `chain_tokens`), "
        "`decide` folds each event of the turn once (`gate/decide.py` `_Running`), and encoding reads a field "
        "layout worked out once per event class (`ledger/schema.py` `_layout`). What is left above the "
        "baseline is the turn's Python work in the profile below — deciding (`gate/decide.py`, the capacity "
        "plan), the summarizer's prompt, the fold (`projections/scd2.py` `Projector.apply`, the rows each event "
        "changes), encoding and hashing the events (three canonical JSON spellings per event: payload, event "
        "id, chain hash) and sealing them — on top of a bare commit that, on a quiet machine, costs a few "
        "milliseconds."
    ),
    "run_memory": (
        "The peak is mostly what the process holds before its first turn (the note gives the stages): Python "
        "with DuckDB and pyarrow imported (`import ledgermem` loads both), the CLI's modules, and the "
        "tiktoken `cl100k_base` encoding (about 45 MiB: the ranks as a Python dict and the Rust BPE tables). "
        "The first DuckDB file a process opens adds about 24 MiB whatever its `threads` or `memory_limit` "
        "(measured: the same with `threads=1, memory_limit=64MB`), each further file about 4 MiB (a run opens "
        "three: ledger, projections, keys). The run itself adds the rest: the folded states of the open "
        "streams, the token-count cache and DuckDB's buffers. Meeting 120 MiB needs a run that loads neither "
        "pyarrow nor the tiktoken tables (the estimator tokenizer, or a leaner ranks store)."
    ),
    "bulk_import": (
        "`ledger/parquet.py` `import_dataset` copies the export into the new file with one `INSERT … SELECT … "
        "ORDER BY seq` from the Parquet files and then verifies the copy (`ParquetLedger.verify_copy` → "
        "`Ledger.verify`, see `ledger/chain.py`) before renaming it in: the files are read once, and the "
        "chain is walked over a table already in seq order. Opening the export for an import reads the "
        "manifest and the files' schemas but makes no `read_parquet` view, and the streams and blobs tables "
        "are copied with one statement each (row by row, the streams cost about a millisecond each, twice). "
        "In the profile below the insert (`_write_new_ledger`'s own time: DuckDB reading and decompressing "
        "Parquet, sorting the rows by seq, compressing and writing them) is about half of the import and "
        "costs a little more than the baseline's insert of an Arrow table already in memory and in order (the "
        "sort, measured alone, adds less than a tenth); the chain walk — every row's hash, which an import "
        "must check — is about a third (DuckDB spelling the canonical bytes and Python hashing them, about "
        "half each); opening and closing the three DuckDB databases (export, copy, the ledger handed back) "
        "most of the rest. Measured and not kept: reading the export with pyarrow into one Arrow table in seq "
        "order (merging the files, each written in seq order) and inserting it as the baseline does while the "
        "chain is walked over the same table on a second thread; on a busy two-core machine it was no faster "
        "at 100k events, slower at 300k (DuckDB inserts from its Parquet reader faster than from an Arrow "
        "table of the same rows), and its peak was higher (about 490 MiB against 290–390 MiB at 100k). "
        "Candidate: a cheaper walk, which is what the import adds to the baseline's work."
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
        "`projections/scd2.py` `Projector` costs what each event changes: `evolve` finds its step by the "
        "event's class (`projections/state.py` `step_of`) and copies the state slot by slot; the two events of "
        "every turn (a turn recorded, a record leaving the window: about half the events) are applied in place to a "
        "`TurnDraft`, which becomes a state only when another kind of event comes (and when `replay` "
        "returns), and version their rows straight from the event; an event that changes nothing is only "
        "counted; any other event goes through its step and versions the rows `touched` reads off it (a "
        "title's live-member count makes archiving an indexed summary, or a new title, compare every title): "
        "those (summaries, titles, erasures, pins: under a tenth of the events) cost the most each. What is "
        "left is one dict and one `version_id` (SHA-256) per new version, the Python calls per event, and "
        "the garbage collector's passes over the versions kept. "
        "Reading and decoding the events (`ledger/store.py` `Ledger.read` → `ledger/schema.py` `decode`) is "
        "not in the timed fold; the note gives it."
    ),
    "as_of": (
        "`temporal/queries.py` `as_of` is one flat statement for every layer (`temporal/temporal.sql` `as_of`: "
        "each layer's rows tagged with the layer, `UNION ALL BY NAME`), installs nothing per call, and puts "
        "each layer's rows in its own query's order in Python (an ORDER BY would add a sort operator; the "
        "earlier nested per-layer lists cost ordered `list` aggregates joined by cross products, about 3 ms). "
        "The projection file is written in row groups of 16,384 rows (`projections/materialise.py` "
        "`ROW_GROUP_SIZE`, for files written whole: `rebuild_file`, and the benchmark's copy of the SQL "
        "rebuild), so each table's scan reads one small group instead of one of 122,880 rows (about 2 ms). "
        "What is left is fixed per statement, not per row: the same statement over tables holding only that "
        "episode costs about as much. DuckDB's own profile (below): binding and optimising take about a "
        "third — and DuckDB plans a parameterised statement again on every execution, prepared or not "
        "(duckdb/duckdb#17237, #20885), so the plan cannot be kept; the window layer's join of "
        "`window_versions` with `raw_records` is the dearest branch. Measured, not applied: row groups of "
        "8,192 or 4,096 rows (no faster), DuckDB with one thread, the "
        "values written into the statement instead of parameters, five statements instead of one, a SEMI "
        "JOIN for the window layer (all within the noise of a shared machine). Left out: a store that keeps "
        "writing its file does not attach it with the row-group size (its connection's cursors would lose "
        "the tables' names), so such a file goes back to DuckDB's size at its next checkpoint."
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
