-- Raw records and the sliding window for the set-based rebuild (projections/sql_rebuild.py).
-- Each block starts with `-- name: <name>`. Values are parameters ($erased, $table); `{{ versions(..) }}`
-- and `{{ rows(..) }}` are the SCD-2 macros that sql_rebuild.py renders from the table's spec.

-- name: raw_records
-- After a turn_recorded a record is as written; after a shred that names it, as written with both
-- texts redacted. Nearly every record is touched once, by the turn that writes it: its one version
-- is that write, open to the end of the epoch. Those records are found without sorting anything:
-- a record touched more than once is one that a shred names or that is written again (a hash
-- aggregate), and every other write is its record's one version, read straight off the staged
-- events (`NOT IN`, a mark join on the few records touched again, where an anti join may be
-- planned the other way round, hashing every write). Only the records touched more than once take
-- the general path: one window over their
-- touches gives the state before each touch (frames ending one row earlier), a touch of a record
-- already there is compared on what was written, joined by the seq of the write, and the versions
-- are the touches that change it.
WITH shreds AS (
    SELECT DISTINCT sk, epoch, seq, turn, unnest(shred_records) AS record_id
    FROM _rb_ev
    WHERE event_type = 'key_shredded'
),
again AS MATERIALIZED (
    -- The records touched more than once (a record only ever shredded has no version either way,
    -- and an id that is not there names no write).
    SELECT sk, epoch, record_id FROM shreds WHERE record_id IS NOT NULL
    UNION
    SELECT sk, epoch, record_id
    FROM _rb_ev
    WHERE event_type = 'turn_recorded'
    GROUP BY sk, epoch, record_id
    HAVING count(*) > 1
),
touches AS (
    SELECT e.sk, e.epoch, e.record_id, e.seq, e.turn, true AS writes
    FROM _rb_ev e
    WHERE e.event_type = 'turn_recorded' AND (e.sk, e.epoch, e.record_id) IN (SELECT (sk, epoch, record_id) FROM again)
    UNION ALL BY NAME
    SELECT sk, epoch, record_id, seq, turn, false AS writes
    FROM shreds
),
running AS MATERIALIZED (
    -- The state after a touch is (now_seq, now_redacted): the write it shows, redacted or not;
    -- the state before it is (was_seq, was_redacted).
    SELECT *,
           last_value(CASE WHEN writes THEN seq END IGNORE NULLS)
               OVER (k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS now_seq,
           NOT writes AS now_redacted,
           last_value(CASE WHEN writes THEN seq END IGNORE NULLS)
               OVER (k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS was_seq,
           NOT lag(writes) OVER k AS was_redacted
    FROM touches
    WINDOW k AS (PARTITION BY sk, epoch, record_id ORDER BY seq)
),
written AS NOT MATERIALIZED (
    SELECT seq, turn, occurred_at, text AS user_text, agent AS agent_text, source, remember
    FROM _rb_ev
    WHERE event_type = 'turn_recorded'
),
changed AS (
    -- A touch of a record that was already there (a shred, or the id written again) changes it
    -- only if the values differ.
    SELECT r.sk, r.epoch, r.record_id, r.seq, r.turn, r.now_seq, r.now_redacted
    FROM (SELECT * FROM running WHERE was_seq IS NOT NULL) r
    JOIN written n ON n.seq = r.now_seq
    JOIN written p ON p.seq = r.was_seq
    WHERE (n.turn, n.occurred_at, n.source, n.remember,
           CASE WHEN r.now_redacted THEN $erased ELSE n.user_text END,
           CASE WHEN r.now_redacted THEN $erased ELSE n.agent_text END)
          IS DISTINCT FROM
          (p.turn, p.occurred_at, p.source, p.remember,
           CASE WHEN r.was_redacted THEN $erased ELSE p.user_text END,
           CASE WHEN r.was_redacted THEN $erased ELSE p.agent_text END)
),
opening AS (
    -- A shred of a record that is not there yet changes nothing: its state stays NULL. A first
    -- write always opens a version. `a` tells the versions apart; the values are joined below.
    SELECT *, struct_pack(seq := now_seq, redacted := now_redacted) AS a
    FROM (
        SELECT sk, epoch, record_id, seq, turn, now_seq, now_redacted
        FROM running
        WHERE now_seq IS NOT NULL AND was_seq IS NULL
        UNION ALL
        SELECT * FROM changed
    )
),
versions AS (
    SELECT e.sk, e.epoch, e.record_id, e.seq, e.turn, NULL::BIGINT AS next_seq, NULL::BIGINT AS next_turn,
           struct_pack(turn := e.turn, occurred_at := e.occurred_at, user_text := e.text,
                       agent_text := e.agent, source := e.source, remember := e.remember) AS a
    FROM _rb_ev e
    WHERE e.event_type = 'turn_recorded' AND (e.sk, e.epoch, e.record_id) NOT IN (SELECT (sk, epoch, record_id) FROM again)
    UNION ALL BY NAME
    SELECT v.* EXCLUDE (a, now_seq, now_redacted),
           struct_pack(
               turn := n.turn,
               occurred_at := n.occurred_at,
               user_text := CASE WHEN v.now_redacted THEN $erased ELSE n.user_text END,
               agent_text := CASE WHEN v.now_redacted THEN $erased ELSE n.agent_text END,
               source := n.source,
               remember := n.remember) AS a
    FROM ({{ versions(raw_records, opening, previous=NULL) }}) v
    JOIN written n ON n.seq = v.now_seq
)
{{ rows(raw_records, versions) }};

-- name: window_versions
-- A remembered turn_recorded puts its record in the window, a window_evicted takes it out; a turn
-- kept as a raw record only (remember = false) leaves the window as it was. The row's turn is the
-- record's current turn. NULL state = not in the window.
--
-- Nearly every record is written once and evicted at most once, after the write: its version (if
-- it was remembered) runs from the write to the eviction, or to the end of the epoch. A hash
-- aggregate over each record's touches finds those records and gives their version without a sort.
-- The others take the general path: one window gives each touch the state after it (`a`), before it
-- (`was`) and after the next touch (`after_next`), from frames ending at, one before and one after
-- the row, and where the next touch is; the versions come from those without another window (see
-- `scd2_settled_versions`).
WITH touches AS (
    SELECT sk, epoch, record_id, seq, turn, event_type = 'turn_recorded' AS writes,
           CASE WHEN event_type = 'window_evicted' THEN false WHEN remember THEN true END AS enters,
           CASE WHEN event_type = 'turn_recorded' THEN turn END AS record_turn
    FROM _rb_ev
    WHERE event_type IN ('turn_recorded', 'window_evicted')
),
records AS MATERIALIZED (
    SELECT sk, epoch, record_id,
           count(*) FILTER (WHERE writes) = 1
           AND (count(*) = 1
                OR count(*) = 2 AND coalesce(min(seq) FILTER (WHERE NOT writes) > min(seq) FILTER (WHERE writes), false))
               AS simple,
           coalesce(bool_and(enters) FILTER (WHERE writes), false) AS remembered,
           min(seq) FILTER (WHERE writes) AS seq,
           min(turn) FILTER (WHERE writes) AS turn,
           min(seq) FILTER (WHERE NOT writes) AS next_seq,
           min(turn) FILTER (WHERE NOT writes) AS next_turn
    FROM touches
    GROUP BY sk, epoch, record_id
),
running AS (
    SELECT sk, epoch, record_id, seq, turn,
           CASE WHEN coalesce(last_value(enters IGNORE NULLS) OVER (k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), false)
                THEN struct_pack(turn := last_value(record_turn IGNORE NULLS)
                                     OVER (k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) END AS a,
           CASE WHEN coalesce(last_value(enters IGNORE NULLS) OVER (k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), false)
                THEN struct_pack(turn := last_value(record_turn IGNORE NULLS)
                                     OVER (k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) END AS was,
           CASE WHEN coalesce(last_value(enters IGNORE NULLS) OVER (k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING), false)
                THEN struct_pack(turn := last_value(record_turn IGNORE NULLS)
                                     OVER (k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING)) END AS after_next,
           {{ next_touch }}
    FROM touches
    WHERE (sk, epoch, record_id) IN (SELECT (sk, epoch, record_id) FROM records WHERE NOT simple)
    WINDOW k AS (PARTITION BY sk, epoch, record_id ORDER BY seq)
),
versions AS (
    -- A simple record's one version (none if it was not remembered: it never entered).
    SELECT sk, epoch, record_id, seq, turn, next_seq, next_turn, struct_pack(turn := turn) AS a
    FROM records
    WHERE simple AND remembered
    UNION ALL BY NAME
    SELECT * FROM ({{ versions(window_versions, running, previous=was, following=after_next) }})
)
{{ rows(window_versions, versions) }};
