-- Index titles for the set-based rebuild (projections/sql_rebuild.py). Each block starts with `-- name: <name>`.
-- Values are parameters ($erased, $table).

-- name: index_versions
-- `live_members` starts at the number of listed members (the index_created event makes each of them
-- 'indexed') and moves by one each time a listed member enters or leaves the 'indexed' status.
WITH created AS (
    SELECT sk, epoch, index_id, seq, turn, text AS title, ids AS members, level,
           lead(seq) OVER (PARTITION BY sk, epoch, index_id ORDER BY seq) AS next_created
    FROM _rb_ev
    WHERE event_type = 'index_created'
),
flips AS (
    SELECT sk, epoch, sid, seq, turn,
           CAST(a.status = 'indexed' AS INTEGER)
           - coalesce(CAST(lag(a.status) OVER (PARTITION BY sk, epoch, sid ORDER BY seq) = 'indexed' AS INTEGER), 0)
               AS delta
    FROM _rb_summary
),
listings AS (
    -- One row per listing: a member named twice counts twice, as the sum in `snapshot` does.
    SELECT sk, epoch, index_id, seq AS created_seq, next_created, unnest(members) AS sid
    FROM created
),
member_moves AS (
    SELECT l.sk, l.epoch, l.index_id, l.created_seq, f.seq, any_value(f.turn) AS turn,
           sum(f.delta) AS delta, false AS shred
    FROM listings l
    JOIN flips f
      ON f.sk = l.sk AND f.epoch = l.epoch AND f.sid = l.sid AND f.delta <> 0
     AND f.seq > l.created_seq AND (l.next_created IS NULL OR f.seq < l.next_created)
    GROUP BY l.sk, l.epoch, l.index_id, l.created_seq, f.seq
),
shreds AS (
    SELECT DISTINCT sk, epoch, seq, turn, unnest(shred_indexes) AS index_id
    FROM _rb_ev
    WHERE event_type = 'key_shredded'
),
touches AS (
    SELECT sk, epoch, index_id, seq AS created_seq, seq, turn, len(members) AS delta, false AS shred
    FROM created
    UNION ALL BY NAME
    SELECT sk, epoch, index_id, created_seq, seq, turn, delta, shred
    FROM member_moves
    UNION ALL BY NAME
    -- A shred redacts the index as it stands; an id not written yet names nothing.
    SELECT s.sk, s.epoch, s.index_id, c.seq AS created_seq, s.seq, s.turn, 0 AS delta, true AS shred
    FROM shreds s
    ASOF JOIN created c ON c.sk = s.sk AND c.epoch = s.epoch AND c.index_id = s.index_id AND s.seq >= c.seq
),
running AS (
    SELECT t.sk, t.epoch, t.index_id, t.seq, t.turn,
           struct_pack(
               created_turn := c.turn,
               title := CASE WHEN bool_or(t.shred) OVER g THEN $erased ELSE c.title END,
               members := c.members,
               level := c.level,
               live_members := CAST(sum(t.delta) OVER g AS BIGINT)
           ) AS a
    FROM (
        SELECT sk, epoch, index_id, created_seq, seq, any_value(turn) AS turn,
               sum(delta) AS delta, bool_or(shred) AS shred
        FROM touches
        GROUP BY sk, epoch, index_id, created_seq, seq
    ) t
    JOIN created c ON c.sk = t.sk AND c.epoch = t.epoch AND c.index_id = t.index_id AND c.seq = t.created_seq
    WINDOW g AS (PARTITION BY t.sk, t.epoch, t.index_id, t.created_seq ORDER BY t.seq ROWS UNBOUNDED PRECEDING)
),
changes AS (
    SELECT *, a IS DISTINCT FROM lag(a) OVER k AS changed
    FROM running
    WINDOW k AS (PARTITION BY sk, epoch, index_id ORDER BY seq)
),
versions AS (
    SELECT *, lead(seq) OVER k AS next_seq, lead(turn) OVER k AS next_turn
    FROM changes
    WHERE changed
    WINDOW k AS (PARTITION BY sk, epoch, index_id ORDER BY seq)
)
SELECT st.run_id, st.system, st.episode_id,
       v.index_id,
       v.a.created_turn AS created_turn,
       v.a.title AS title,
       v.a.members AS members,
       v.a.level AS level,
       v.a.live_members AS live_members,
       left(sha256(concat_ws(chr(31), st.run_id, st.system, st.episode_id, $table, v.index_id,
                             CAST(v.seq AS VARCHAR))), 20) AS version_id,
       v.seq AS valid_from_seq,
       CASE WHEN v.next_seq IS NULL THEN ep.end_seq ELSE v.next_seq END AS valid_to_seq,
       v.turn AS valid_from_turn,
       CASE WHEN v.next_seq IS NULL THEN ep.end_turn ELSE v.next_turn END AS valid_to_turn
FROM versions v
JOIN _rb_streams st USING (sk)
JOIN _rb_epochs ep USING (sk, epoch)
ORDER BY st.run_id, st.system, st.episode_id, v.index_id, valid_from_seq;
