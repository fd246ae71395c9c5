-- The pinned block for the set-based rebuild (projections/sql_rebuild.py). Each block starts with
-- `-- name: <name>`. Values are parameters ($erased, $table); `{{ versions(..) }}` and `{{ rows(..) }}`
-- are the SCD-2 macros that sql_rebuild.py renders from the table's spec.

-- name: pin_versions
-- constraint_pinned writes a pin (writing an id again replaces it, count and all); each
-- constraint_reinjected of it adds one to `reinjected`; a key_shredded that names it redacts its
-- text. Everything is counted since the latest write, so touches before the first write (a shred
-- of a pin not pinned yet) name nothing. A pin is shown unless it was only detected and never
-- re-injected.
WITH touches AS (
    SELECT sk, epoch, pin_id, seq, turn,
           struct_pack(kind := pin_kind, created_turn := turn, text := text, origin := pin_origin,
                       record_id := record_id, summary_id := summary_id) AS written,
           0 AS reinjected, false AS shred
    FROM _rb_ev
    WHERE event_type = 'constraint_pinned'
    UNION ALL BY NAME
    SELECT sk, epoch, pin_id, seq, turn, 1 AS reinjected, false AS shred
    FROM _rb_ev
    WHERE event_type = 'constraint_reinjected'
    UNION ALL BY NAME
    SELECT DISTINCT sk, epoch, unnest(shred_pins) AS pin_id, seq, turn, 0 AS reinjected, true AS shred
    FROM _rb_ev
    WHERE event_type = 'key_shredded'
),
by_write AS (
    SELECT *,
           last_value(CASE WHEN written IS NOT NULL THEN seq END IGNORE NULLS)
               OVER (PARTITION BY sk, epoch, pin_id ORDER BY seq ROWS UNBOUNDED PRECEDING) AS written_seq
    FROM touches
),
running AS (
    SELECT sk, epoch, pin_id, seq, turn,
           first_value(written) OVER w AS now_written,
           CAST(sum(reinjected) OVER w AS BIGINT) AS now_reinjected,
           bool_or(shred) OVER w AS now_shredded
    FROM by_write
    WHERE written_seq IS NOT NULL
    WINDOW w AS (PARTITION BY sk, epoch, pin_id, written_seq ORDER BY seq ROWS UNBOUNDED PRECEDING)
),
states AS (
    SELECT sk, epoch, pin_id, seq, turn,
           struct_pack(
               kind := now_written.kind,
               created_turn := now_written.created_turn,
               text := CASE WHEN now_shredded THEN $erased ELSE now_written.text END,
               origin := now_written.origin,
               record_id := now_written.record_id,
               summary_id := now_written.summary_id,
               reinjected := now_reinjected,
               shown := now_written.origin IS DISTINCT FROM 'detected' OR now_reinjected > 0
           ) AS a
    FROM running
),
versions AS (
    {{ versions(pin_versions, states) }}
)
{{ rows(pin_versions, versions) }};
