-- Index titles for the set-based rebuild (projections/sql_rebuild.py). Each block starts with `-- name: <name>`.
-- Values are parameters ($erased, $table); `{{ versions(..) }}` and `{{ rows(..) }}` are the SCD-2 macros
-- that sql_rebuild.py renders from the table's spec.

-- name: index_versions
-- A title is written by index_created (its members are summaries) or index_folded (its members are
-- titles, each of which is folded into it). Writing an id again replaces the title.
--
-- `live_members` counts the summaries still 'indexed' among those under the title, through the
-- titles folded under it, as `EpisodeState.index_summaries` walks them (a member listed twice counts
-- twice). The walk is a recursive expansion over versions of titles: a step from a fold to a title
-- it lists holds while both versions are current, so each path down to a summary carries the seq
-- interval over which it exists; a path contributes one for the part of that interval in which its
-- summary is 'indexed'. The counts move only where such a contribution starts or ends.
--
-- A fold only ever names titles that exist already, so the walk goes from newer writes to older
-- ones and ends; a sequence that folds a title under itself has no state to project.
WITH RECURSIVE writes AS (
    SELECT sk, epoch, index_id, seq, turn, event_type = 'index_folded' AS fold,
           text AS title, ids AS members, level,
           lead(seq) OVER (PARTITION BY sk, epoch, index_id ORDER BY seq) AS next_write
    FROM _rb_ev
    WHERE event_type IN ('index_created', 'index_folded')
),
fold_steps AS (
    -- One row per listing of a title in a fold, duplicates kept.
    SELECT sk, epoch, index_id, seq, unnest(members) AS child
    FROM writes
    WHERE fold
),
paths AS (
    -- [lo, hi): the seqs over which the path from the root version down to this version holds
    -- (hi NULL: to the end of the epoch). `least` skips NULLs, which is what an open end needs.
    SELECT sk, epoch, index_id AS root, index_id AS node, seq AS node_seq, fold, members,
           seq AS lo, next_write AS hi
    FROM writes
    UNION ALL
    SELECT p.sk, p.epoch, p.root, w.index_id, w.seq, w.fold, w.members,
           greatest(p.lo, w.seq), least(p.hi, w.next_write)
    FROM paths p
    JOIN fold_steps f ON f.sk = p.sk AND f.epoch = p.epoch AND f.index_id = p.node AND f.seq = p.node_seq
    JOIN writes w ON w.sk = f.sk AND w.epoch = f.epoch AND w.index_id = f.child
     AND w.seq < coalesce(p.hi, 9223372036854775807)
     AND (w.next_write IS NULL OR w.next_write > p.lo)
    WHERE p.fold
),
leaves AS (
    SELECT sk, epoch, root, lo, hi, unnest(members) AS sid
    FROM paths
    WHERE NOT fold
),
contributions AS (
    -- The part of each path's interval in which its summary is 'indexed'.
    SELECT l.sk, l.epoch, l.root AS index_id,
           greatest(l.lo, s.seq) AS from_seq, least(l.hi, s.next_seq) AS to_seq
    FROM leaves l
    JOIN _rb_summary s
      ON s.sk = l.sk AND s.epoch = l.epoch AND s.summary_id = l.sid AND s.a.status = 'indexed'
     AND s.seq < coalesce(l.hi, 9223372036854775807)
     AND (s.next_seq IS NULL OR s.next_seq > l.lo)
),
touches AS (
    SELECT sk, epoch, index_id, seq, 0 AS delta, false AS shred, NULL::VARCHAR AS parent
    FROM writes
    UNION ALL BY NAME
    SELECT sk, epoch, index_id, from_seq AS seq, 1 AS delta FROM contributions
    UNION ALL BY NAME
    SELECT sk, epoch, index_id, to_seq AS seq, -1 AS delta FROM contributions WHERE to_seq IS NOT NULL
    UNION ALL BY NAME
    -- Folded: the title now lives under `parent`.
    SELECT sk, epoch, child AS index_id, seq, 0 AS delta, false AS shred, index_id AS parent
    FROM fold_steps
    UNION ALL BY NAME
    -- A shred redacts the title as it stands; an id not written yet names nothing.
    SELECT DISTINCT sk, epoch, unnest(shred_indexes) AS index_id, seq, 0 AS delta, true AS shred
    FROM _rb_ev
    WHERE event_type = 'key_shredded'
),
moments AS (
    SELECT t.sk, t.epoch, t.index_id, t.seq, w.seq AS written_seq,
           sum(t.delta) AS delta, coalesce(bool_or(t.shred), false) AS shred, any_value(t.parent) AS parent
    FROM touches t
    ASOF JOIN writes w ON w.sk = t.sk AND w.epoch = t.epoch AND w.index_id = t.index_id AND t.seq >= w.seq
    GROUP BY t.sk, t.epoch, t.index_id, t.seq, w.seq
),
running AS (
    -- The count runs over every version of the id: a path's contribution ends no later than the
    -- version it starts from, at the same seq as the next version's contributions start.
    SELECT m.sk, m.epoch, m.index_id, m.seq, e.turn,
           struct_pack(
               created_turn := w.turn,
               title := CASE WHEN bool_or(m.shred) OVER v THEN $erased ELSE w.title END,
               members := w.members,
               level := w.level,
               live_members := CAST(sum(m.delta) OVER g AS BIGINT),
               folded_into := last_value(m.parent IGNORE NULLS) OVER v
           ) AS a
    FROM moments m
    JOIN writes w ON w.sk = m.sk AND w.epoch = m.epoch AND w.index_id = m.index_id AND w.seq = m.written_seq
    JOIN _rb_ev e ON e.sk = m.sk AND e.seq = m.seq
    WINDOW g AS (PARTITION BY m.sk, m.epoch, m.index_id ORDER BY m.seq ROWS UNBOUNDED PRECEDING),
           v AS (PARTITION BY m.sk, m.epoch, m.index_id, m.written_seq ORDER BY m.seq ROWS UNBOUNDED PRECEDING)
),
versions AS (
    {{ versions(index_versions, running) }}
)
{{ rows(index_versions, versions) }};
