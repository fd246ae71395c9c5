-- The current-values registry for the set-based rebuild (projections/sql_rebuild.py).
-- Each block starts with `-- name: <name>`. Values are parameters ($erased, $table); `{{ versions(..) }}`
-- and `{{ rows(..) }}` are the SCD-2 macros that sql_rebuild.py renders from the table's spec.

-- name: fact_intervals
-- Each fact observation (a summary's fact at one position) as maximal stretches of seq over which
-- its slot and value stay the same. `rank` is the registry's order: the summary's place in
-- creation order, then the fact's place in the summary.
CREATE OR REPLACE TEMP TABLE _rb_fact_iv AS
WITH segments AS (
    SELECT sk, epoch, summary_id AS sid, ord_seq, seq, turn, next_seq, next_turn,
           generate_subscripts(a.facts, 1) AS pos,
           unnest(a.facts) AS fact
    FROM _rb_summary
),
marked AS (
    -- A stretch starts where the previous state differs or does not reach this one.
    SELECT *,
           coalesce(lag(next_seq) OVER o <> seq OR lag(fact) OVER o IS DISTINCT FROM fact, true) AS fresh
    FROM segments
    WINDOW o AS (PARTITION BY sk, epoch, sid, pos ORDER BY seq)
),
numbered AS (
    SELECT *,
           sum(CAST(fresh AS INTEGER))
               OVER (PARTITION BY sk, epoch, sid, pos ORDER BY seq ROWS UNBOUNDED PRECEDING) AS stretch
    FROM marked
)
SELECT sk, epoch, fact.slot AS slot, sid,
       struct_pack(o := ord_seq, p := pos) AS rank,
       fact.value AS value,
       fact.value IS NOT DISTINCT FROM $erased AS erased,
       min(seq) AS start_seq,
       arg_min(turn, seq) AS start_turn,
       last(next_seq ORDER BY seq) AS stop_seq,
       last(next_turn ORDER BY seq) AS stop_turn
FROM numbered
GROUP BY sk, epoch, sid, ord_seq, pos, stretch, fact;

-- name: fact_versions
-- The registry of `EpisodeState.current_values` at every moment an observation of the slot changed:
-- the newest unerased value of any summary, archived or not; failing that, if a value of the slot
-- was erased, a row saying so.
WITH moments AS (
    SELECT sk, epoch, slot, start_seq AS seq, start_turn AS turn FROM _rb_fact_iv
    UNION
    SELECT sk, epoch, slot, stop_seq, stop_turn FROM _rb_fact_iv WHERE stop_seq IS NOT NULL
),
registry AS (
    SELECT m.sk, m.epoch, m.slot, m.seq, m.turn,
           arg_max(struct_pack(value := i.value, sid := i.sid), i.rank)
               FILTER (WHERE NOT i.erased) AS newest_surviving,
           coalesce(bool_or(i.erased), false) AS any_erased
    FROM moments m
    LEFT JOIN _rb_fact_iv i
           ON i.sk = m.sk AND i.epoch = m.epoch AND i.slot = m.slot
          AND i.start_seq <= m.seq AND (i.stop_seq IS NULL OR m.seq < i.stop_seq)
    GROUP BY m.sk, m.epoch, m.slot, m.seq, m.turn
),
states AS (
    SELECT sk, epoch, slot, seq, turn,
           CASE
               WHEN newest_surviving IS NOT NULL THEN
                   struct_pack(value := newest_surviving.value, summary_id := newest_surviving.sid,
                               erased := false)
               WHEN any_erased THEN
                   struct_pack(value := NULL::VARCHAR, summary_id := NULL::VARCHAR, erased := true)
           END AS a
    FROM registry
),
versions AS (
    {{ versions(fact_versions, states) }}
)
{{ rows(fact_versions, versions) }};
