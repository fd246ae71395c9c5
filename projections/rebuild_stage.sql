-- Staging for the set-based rebuild (projections/sql_rebuild.py). Each block starts with `-- name: <name>`.
-- The events are read from the temporary view `_rb_source`; values are parameters ($run_id, $prefix).

-- name: sealed
-- Whether a ledger's own events (not a decrypting view) hold sealed values in the rebuilt runs.
SELECT 1
FROM events
WHERE (starts_with(text, $prefix) OR starts_with(value, $prefix))
  AND (CAST($run_id AS VARCHAR) IS NULL OR run_id = $run_id)
LIMIT 1;

-- name: streams
-- The streams to rebuild, numbered so that every later window partitions on one integer, with
-- their episode_started events: `evolve` starts from an empty state at each one.
CREATE OR REPLACE TEMP TABLE _rb_streams AS
SELECT row_number() OVER () AS sk, run_id, system, episode_id, starts
FROM (
    SELECT run_id, system, episode_id,
           coalesce(list(struct_pack(seq := seq, turn := turn) ORDER BY seq)
                        FILTER (WHERE event_type = 'episode_started'), []) AS starts
    FROM _rb_source
    WHERE episode_id <> '' AND (CAST($run_id AS VARCHAR) IS NULL OR run_id = $run_id)
    GROUP BY run_id, system, episode_id
);

-- name: events
-- The events that can change an episode's state, with their payload fields parsed once: each payload
-- is read by one json_transform into a struct of every field the rebuild uses (a field an event type
-- does not have reads as NULL). `epoch` is the number of episode_started events at or before the
-- event. A payload field the event class gives a default (an older payload may lack it) reads as that
-- default.
CREATE OR REPLACE TEMP TABLE _rb_ev AS
WITH parsed AS (
    SELECT
        s.sk,
        len(list_filter(s.starts, lambda x: x.seq <= e.seq)) AS epoch,
        e.seq, e.turn, e.event_type, e.schema_version,
        e.summary_id, e.record_id, e.index_id, e.slot, e.ids, e.text, e.occurred_at,
        CASE WHEN e.event_type = 'turn_recorded' THEN json_transform(e.payload,
            '{"agent": "VARCHAR", "source": "VARCHAR", "remember": "BOOLEAN"}') END AS tr,
        CASE WHEN e.event_type = 'summary_created' THEN json_transform(e.payload,
            '{"facts": [["VARCHAR"]], "overrides": ["VARCHAR"], "inferences": [["VARCHAR"]], "merged_from": ["VARCHAR"]}')
        END AS sc,
        CASE WHEN e.event_type IN ('summary_archived', 'index_created', 'index_folded', 'constraint_pinned',
                                   'constraint_reinjected', 'key_shredded') THEN json_transform(e.payload, '{
            "reason": "VARCHAR", "level": "BIGINT", "pin_id": "VARCHAR", "kind": "VARCHAR", "origin": "VARCHAR",
            "records": ["VARCHAR"], "summaries": ["VARCHAR"], "indexes": ["VARCHAR"], "pins": ["VARCHAR"]
        }') END AS p
    FROM _rb_source e
    JOIN _rb_streams s ON s.run_id = e.run_id AND s.system = e.system AND s.episode_id = e.episode_id
    WHERE e.event_type IN (
        'episode_started', 'turn_recorded', 'window_evicted', 'summary_created', 'summary_overridden',
        'summary_archived', 'index_created', 'index_folded', 'fact_erased', 'key_shredded',
        'constraint_pinned', 'constraint_reinjected'
    )
)
SELECT
    sk, epoch, seq, turn, event_type, schema_version,
    summary_id, record_id, index_id, slot, ids, text, occurred_at,
    CASE WHEN event_type = 'turn_recorded' THEN tr.agent END AS agent,
    CASE WHEN event_type = 'turn_recorded' THEN tr.source END AS source,
    CASE WHEN event_type = 'turn_recorded' THEN coalesce(tr.remember, true) END AS remember,
    CASE WHEN event_type = 'summary_created' THEN
        list_transform(sc.facts, lambda f: struct_pack(slot := f[1], value := f[2]))
    END AS facts,
    CASE WHEN event_type = 'summary_created' THEN sc.overrides END AS overrides,
    CASE WHEN event_type = 'summary_created' THEN
        list_transform(coalesce(sc.inferences, []), lambda f: struct_pack(slot := f[1], value := f[2]))
    END AS inferences,
    CASE WHEN event_type = 'summary_created' THEN coalesce(sc.merged_from, []) END AS merged_from,
    CASE WHEN event_type = 'summary_archived' THEN p.reason END AS reason,
    -- `level` has a default in the event classes: 1 for a title, 2 for a fold.
    CASE event_type
        WHEN 'index_created' THEN coalesce(p.level, 1)
        WHEN 'index_folded' THEN coalesce(p.level, 2)
    END AS level,
    CASE WHEN event_type IN ('constraint_pinned', 'constraint_reinjected') THEN p.pin_id END AS pin_id,
    CASE WHEN event_type = 'constraint_pinned' THEN p.kind END AS pin_kind,
    CASE WHEN event_type = 'constraint_pinned' THEN p.origin END AS pin_origin,
    CASE WHEN event_type = 'key_shredded' THEN coalesce(p.records, []) END AS shred_records,
    CASE WHEN event_type = 'key_shredded' THEN coalesce(p.summaries, []) END AS shred_summaries,
    CASE WHEN event_type = 'key_shredded' THEN coalesce(p.indexes, []) END AS shred_indexes,
    CASE WHEN event_type = 'key_shredded' THEN coalesce(p.pins, []) END AS shred_pins
FROM parsed;

-- name: epochs
-- Epoch k of a stream ends at its (k+1)-th episode_started, which closes every version still open.
CREATE OR REPLACE TEMP TABLE _rb_epochs AS
SELECT sk, epoch, starts[epoch + 1].seq AS end_seq, starts[epoch + 1].turn AS end_turn
FROM (SELECT sk, starts, unnest(range(len(starts) + 1)) AS epoch FROM _rb_streams);
