-- Hash-chain verification (ledger/chain.py). Each block starts with `-- name: <name>`.
-- `{canonical}` is `ledger.schema.canonical_sql()`, made from the schema.

-- name: rows
-- Every row with the bytes its hash covers (its prev_hash, a newline, its canonical JSON), spelled by
-- DuckDB for the whole table at once; Python only hashes them. In storage order: a ledger is stored
-- in seq order, and a walk that finds otherwise starts again with `rows_in_seq_order`.
SELECT seq, stream_no, stream_version, prev_hash, hash,
       encode(concat(prev_hash, chr(10), {canonical})) AS signed
FROM events;

-- name: rows_in_seq_order
SELECT seq, stream_no, stream_version, prev_hash, hash,
       encode(concat(prev_hash, chr(10), {canonical})) AS signed
FROM events
ORDER BY seq, hash;
