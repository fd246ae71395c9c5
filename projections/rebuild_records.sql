-- Raw records and the sliding window for the set-based rebuild (projections/sql_rebuild.py).
-- Each block starts with `-- name: <name>`. Values are parameters ($erased, $table); `{{ versions(..) }}`
-- and `{{ rows(..) }}` are the SCD-2 macros that sql_rebuild.py renders from the table's spec.

-- name: raw_records
-- After a turn_recorded a record is as written; after a shred that names it, as written with both
-- texts redacted. The state before each touch comes from the same window (frames ending one row
-- earlier), so one pass finds the changes.
WITH touches AS (
    SELECT sk, epoch, record_id, seq, turn,
           struct_pack(turn := turn, occurred_at := occurred_at, user_text := text,
                       agent_text := agent, source := source, remember := remember) AS written
    FROM _rb_ev
    WHERE event_type = 'turn_recorded'
    UNION ALL BY NAME
    SELECT DISTINCT sk, epoch, seq, turn, unnest(shred_records) AS record_id
    FROM _rb_ev
    WHERE event_type = 'key_shredded'
),
running AS (
    SELECT sk, epoch, record_id, seq, turn,
           last_value(written IGNORE NULLS)
               OVER (k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS now_written,
           written IS NULL AS now_redacted,
           last_value(written IGNORE NULLS)
               OVER (k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS was_written,
           lag(written IS NULL) OVER k AS was_redacted
    FROM touches
    WINDOW k AS (PARTITION BY sk, epoch, record_id ORDER BY seq)
),
states AS (
    -- A shred of a record that is not there yet changes nothing: its state stays NULL.
    SELECT sk, epoch, record_id, seq, turn,
           CASE WHEN now_written IS NOT NULL THEN struct_pack(
               turn := now_written.turn,
               occurred_at := now_written.occurred_at,
               user_text := CASE WHEN now_redacted THEN $erased ELSE now_written.user_text END,
               agent_text := CASE WHEN now_redacted THEN $erased ELSE now_written.agent_text END,
               source := now_written.source,
               remember := now_written.remember) END AS a,
           CASE WHEN was_written IS NOT NULL THEN struct_pack(
               turn := was_written.turn,
               occurred_at := was_written.occurred_at,
               user_text := CASE WHEN was_redacted THEN $erased ELSE was_written.user_text END,
               agent_text := CASE WHEN was_redacted THEN $erased ELSE was_written.agent_text END,
               source := was_written.source,
               remember := was_written.remember) END AS was
    FROM running
),
versions AS (
    {{ versions(raw_records, states, previous=was) }}
)
{{ rows(raw_records, versions) }};

-- name: window_versions
-- A remembered turn_recorded puts its record in the window, a window_evicted takes it out; a turn
-- kept as a raw record only (remember = false) leaves the window as it was. The row's turn is the
-- record's current turn. NULL state = not in the window.
WITH touches AS (
    SELECT sk, epoch, record_id, seq, turn,
           CASE WHEN event_type = 'window_evicted' THEN false WHEN remember THEN true END AS enters,
           CASE WHEN event_type = 'turn_recorded' THEN turn END AS record_turn
    FROM _rb_ev
    WHERE event_type IN ('turn_recorded', 'window_evicted')
),
states AS (
    SELECT sk, epoch, record_id, seq, turn,
           CASE WHEN coalesce(last_value(enters IGNORE NULLS) OVER k, false)
                THEN struct_pack(turn := last_value(record_turn IGNORE NULLS) OVER k) END AS a
    FROM touches
    WINDOW k AS (PARTITION BY sk, epoch, record_id ORDER BY seq ROWS UNBOUNDED PRECEDING)
),
versions AS (
    {{ versions(window_versions, states) }}
)
{{ rows(window_versions, versions) }};
