-- Summaries for the set-based rebuild (projections/sql_rebuild.py). Each block starts with `-- name: <name>`.
-- Values are parameters ($erased, $table); `{{ versions(..) }}` and `{{ rows(..) }}` are the SCD-2 macros
-- that sql_rebuild.py renders from the table's spec.

-- name: summary_states
-- One row per change of a summary's attributes, holding the state after that event.
-- Every attribute is a running aggregate over the events that name the summary since it was written,
-- which is what `evolve` does one event at a time.
CREATE OR REPLACE TEMP TABLE _rb_summary AS
WITH touches AS (
    SELECT sk, epoch, seq, turn, summary_id AS sid, 'created' AS kind
    FROM _rb_ev WHERE event_type = 'summary_created'
    UNION ALL BY NAME
    SELECT sk, epoch, seq, turn, summary_id AS sid, 'archived' AS kind, 'overridden' AS reason,
           ids AS superseded_by, true AS keeps_index
    FROM _rb_ev WHERE event_type = 'summary_overridden'
    UNION ALL BY NAME
    -- Archived for another reason (a capacity merge): it also leaves its title.
    SELECT sk, epoch, seq, turn, summary_id AS sid, 'archived' AS kind, reason,
           ids AS superseded_by, false AS keeps_index
    FROM _rb_ev WHERE event_type = 'summary_archived'
    UNION ALL BY NAME
    SELECT DISTINCT sk, epoch, seq, turn, unnest(ids) AS sid, 'indexed' AS kind, index_id
    FROM _rb_ev WHERE event_type = 'index_created'
    UNION ALL BY NAME
    SELECT sk, epoch, seq, turn, summary_id AS sid, 'fact_erased' AS kind, slot
    FROM _rb_ev WHERE event_type = 'fact_erased'
    UNION ALL BY NAME
    SELECT DISTINCT sk, epoch, seq, turn, unnest(shred_summaries) AS sid, 'shredded' AS kind
    FROM _rb_ev WHERE event_type = 'key_shredded'
),
running AS (
    -- Everything is read "since the latest write of the id": writing a summary id again replaces
    -- the summary, and touches before its first write name nothing (they are dropped). An attribute
    -- that some touches set and a write resets is the last such value, wrapped in a struct so that
    -- a reset to NULL is not skipped by IGNORE NULLS. The window carries only the seq of the latest
    -- write (`written_seq`); what was written is joined to it afterwards, so the sort moves no texts.
    SELECT sk, epoch, sid, seq, turn,
           -- dict order in `evolve` is the order of first insertion: the registry's "newest"
           first_value(CASE WHEN kind = 'created' THEN seq END IGNORE NULLS) OVER k AS ord_seq,
           last_value(CASE WHEN kind = 'created' THEN seq END IGNORE NULLS) OVER k AS written_seq,
           max(CASE WHEN kind = 'shredded' THEN seq END) OVER k AS shredded_seq,
           list(struct_pack(seq := seq, slot := slot)) FILTER (WHERE kind = 'fact_erased') OVER k AS erasures,
           last_value(
               CASE kind WHEN 'created' THEN 'active' WHEN 'archived' THEN 'archived'
                         WHEN 'indexed' THEN 'indexed' END
               IGNORE NULLS) OVER k AS status,
           last_value(CASE kind
               WHEN 'created' THEN struct_pack(reason := NULL::VARCHAR, superseded_by := []::VARCHAR[])
               WHEN 'archived' THEN struct_pack(reason := reason, superseded_by := superseded_by)
           END IGNORE NULLS) OVER k AS archive,
           last_value(CASE
               WHEN kind = 'created' OR (kind = 'archived' AND NOT keeps_index)
                   THEN struct_pack(index_id := NULL::VARCHAR)
               WHEN kind = 'indexed' THEN struct_pack(index_id := index_id)
           END IGNORE NULLS) OVER k AS placement
    FROM touches
    WINDOW k AS (PARTITION BY sk, epoch, sid ORDER BY seq ROWS UNBOUNDED PRECEDING)
),
states AS MATERIALIZED (
    SELECT sk, epoch, sid AS summary_id, seq, turn, ord_seq,
           struct_pack(
               created_turn := written.turn,
               text := CASE WHEN shredded THEN $erased ELSE written.text END,
               facts := list_transform(written.facts, lambda f: struct_pack(
                   slot := f.slot,
                   value := CASE WHEN shredded OR list_contains(erased_slots, f.slot) THEN $erased
                                 ELSE f.value END)),
               overrides := written.overrides,
               raw_ids := written.raw_ids,
               status := status,
               archive_reason := archive.reason,
               superseded_by := archive.superseded_by,
               index_id := placement.index_id,
               -- an erasure of a slot is about facts; only a shred reaches the inferences
               inferences := list_transform(written.inferences, lambda f: struct_pack(
                   slot := f.slot,
                   value := CASE WHEN shredded THEN $erased ELSE f.value END)),
               merged_from := written.merged_from
           ) AS a
    FROM (
        SELECT r.*,
               struct_pack(turn := w.turn, text := w.text, facts := w.facts, overrides := w.overrides,
                           raw_ids := w.ids, inferences := w.inferences, merged_from := w.merged_from) AS written,
               coalesce(r.shredded_seq > r.written_seq, false) AS shredded,
               coalesce([e.slot FOR e IN r.erasures IF e.seq > r.written_seq], []) AS erased_slots
        FROM running r
        JOIN _rb_ev w ON w.seq = r.written_seq AND w.event_type = 'summary_created'
    )
),
hashed AS (
    -- Whether a touch changes the summary, and whether the next one does, without sorting the wide
    -- states: one window over their hashes. Different hashes are different states; the few equal
    -- hashes (a touch that changes nothing, or a collision) are compared in full below.
    SELECT sk, epoch, summary_id, seq, turn, h,
           lag(h) OVER k AS was_h, lag(seq) OVER k AS was_seq, lead(h) OVER k AS after_next_h,
           {{ next_touch }}
    FROM (SELECT sk, epoch, summary_id, seq, turn, hash(a) AS h FROM states)
    WINDOW k AS (PARTITION BY sk, epoch, summary_id ORDER BY seq)
),
unchanged AS (
    -- The touches whose state equals the one before them.
    SELECT n.sk, n.epoch, n.summary_id, n.seq
    FROM (SELECT * FROM hashed WHERE was_h = h) n
    JOIN states s ON s.sk = n.sk AND s.epoch = n.epoch AND s.summary_id = n.summary_id AND s.seq = n.seq
    JOIN states p ON p.sk = n.sk AND p.epoch = n.epoch AND p.summary_id = n.summary_id AND p.seq = n.was_seq
    WHERE s.a IS NOT DISTINCT FROM p.a
),
flagged AS (
    -- `h` stands for the state in the versions macro: `was` and `after_next` equal it exactly where
    -- the state before the touch, or after the next one, is the same state.
    SELECT sk, epoch, summary_id, seq, turn, lead_seq, lead_turn, h AS a,
           CASE WHEN (sk, epoch, summary_id, seq) IN (SELECT (sk, epoch, summary_id, seq) FROM unchanged)
                THEN h END AS was,
           CASE WHEN (sk, epoch, summary_id, lead_seq) IN (SELECT (sk, epoch, summary_id, seq) FROM unchanged)
                THEN h END AS after_next
    FROM hashed
),
versions AS (
    SELECT * FROM ({{ versions(summary_versions, flagged, previous=was, following=after_next) }})
)
SELECT s.sk, s.epoch, s.summary_id, s.seq, s.turn, s.ord_seq, s.a, v.next_seq, v.next_turn
FROM versions v
JOIN states s USING (sk, epoch, summary_id, seq);

-- name: summary_versions
{{ rows(summary_versions, _rb_summary) }};
