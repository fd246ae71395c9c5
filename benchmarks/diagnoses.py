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
        "`ledger/parquet.py` `import_dataset` first runs `ParquetLedger.verify()` — the whole hash chain "
        "recomputed row by row in Python (`ledger/store.py` `Ledger.verify` → `_row_problem` → "
        "`ledger/schema.py` `canonical_bytes` + `chain_hash`; see `verify`) — and only then one "
        "`INSERT … SELECT` from the Parquet files in `_write_new_ledger`, which alone is close to the "
        "baseline. The verify is most of the import in the profile, so the import is as fast as `verify` "
        "allows; making `verify` fast (below) fixes both."
    ),
    "rebuild_sql": (
        "`projections/sql_rebuild.py` `rebuild_sql` runs its staging and output SQL and then `_fetch` turns "
        "every projection row into a Python dict (`fetchall` + `dict(zip(...))`): at 10M events that is 6.5M "
        "rows and nearly all of the memory (see `replay_memory_sql_large`). In the statement timing below, "
        "fetching the rows into Python and building the dicts is more than half of the time; the SQL alone "
        "would still run at only about a quarter of the target rate, its largest parts being the output "
        "queries of `window_versions` and `raw_records` (one row per turn each) and the staging tables "
        "`_rb_ev` (JSON payloads parsed with `from_json`, `epoch` computed with a `list_filter` per event) and "
        "`_rb_summary`. The baseline (one LEAD window over one table, kept inside DuckDB) shows what the "
        "engine itself does at this size. Candidates, not applied: a variant that leaves the five tables in "
        "DuckDB (`CREATE TABLE … AS`, or Arrow) instead of Python dicts; typed columns for the payload fields "
        "the staging parses."
    ),
    "rebuild_fold": (
        "`projections/scd2.py` `Projector.apply` calls `snapshot(state)` after every event that changes the "
        "state, rebuilding every table of the episode (raw records, summaries, registry, titles, window) as "
        "dicts of tuples, and `_diff` compares the old and new snapshots key by key: the cost of an event "
        "grows with the size of its episode's state, so a rebuild is quadratic in episode length. Reading and "
        "decoding the events (`ledger/store.py` `Ledger.read` → `_recorded` → `ledger/schema.py` `decode`, "
        "`_thaw` with `typing.get_origin` per field) is the rest. Candidates, not applied: let the event say "
        "which keys it touched and diff only those; resolve the per-class field plan of `decode` once."
    ),
    "as_of": (
        "`temporal/queries.py` `as_of` runs four statements (window joined with raw records, registry, index "
        "titles, summaries) and re-creates the three temporary macros with `install` on every call. Each "
        "statement costs a few milliseconds on the file although its filter prunes to one row group (the "
        "projection tables are stored in episode order): the cost is reading and filtering that row group "
        "of three string key columns per table, repeated four times. Candidates, not applied: install the "
        "macros once per connection; one statement for all layers; an integer stream key in the projection "
        "tables, as the ledger has (`stream_no`, SPEC §8)."
    ),
    "verify": (
        "`ledger/store.py` `Ledger.verify` fetches rows in chunks as dicts (`_iter_rows`), and for every row "
        "`_row_problem` calls `ledger/schema.py` `canonical_bytes`, which re-serialises the row with "
        "`json.dumps` (building the column-name list from the schema and formatting the timestamp each time) "
        "before `chain_hash`. The hashing itself — the baseline, the same `chain_hash` over the same bytes — "
        "is a small part: SPEC §8 measured exactly this (1.2M events/s hashing serialised bytes, ~100k/s "
        "re-serialising). Candidates, not applied: store the canonical bytes (or rebuild them in DuckDB with "
        "string functions over whole columns) so that verify only hashes; fetch tuples instead of dicts."
    ),
    "replay_memory": (
        "The SQL engine's replay (`projections/sql_rebuild.py` `rebuild_sql`, which `ledgermem replay "
        "--engine sql` uses through `evaluation/replay.py` `replay`) returns every projection row as a "
        "Python dict, so its peak is the size of the whole history as Python objects (the resident set once "
        "it returned, in the note, is nearly the peak), not the engine's working memory. A replay that compares or writes table by table, or "
        "keeps the rows in Arrow/DuckDB, would stay within the target. The Python fold's working memory "
        "beyond the projections it builds is small and flat (`replay_memory_fold`)."
    ),
}
