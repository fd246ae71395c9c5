-- Named queries of the temporal layer. Each block starts with `-- name: <name>`.
-- Values are parameters ($run, $system, $episode, $slot, $seq, $turn, ...); identifiers never are.

-- name: install
CREATE OR REPLACE TEMP MACRO as_of_seq(t, s) AS TABLE
    SELECT * FROM query_table(t)
    WHERE valid_from_seq <= s AND s < coalesce(valid_to_seq, 9223372036854775807);
CREATE OR REPLACE TEMP MACRO as_of_turn(t, n) AS TABLE
    SELECT * FROM query_table(t)
    WHERE valid_from_turn <= n AND (valid_to_turn IS NULL OR valid_to_turn > n);
CREATE OR REPLACE TEMP MACRO slot_history(ep, s) AS TABLE
    SELECT run_id, system, episode_id, slot, value, summary_id, erased,
           valid_from_turn, valid_to_turn, valid_from_seq, valid_to_seq
    FROM fact_versions WHERE episode_id = ep AND slot = s
    ORDER BY run_id, system, valid_from_seq;

-- name: fact_history
SELECT value, summary_id, erased, valid_from_turn, valid_to_turn, valid_from_seq, valid_to_seq
FROM fact_versions
WHERE run_id = $run AND system = $system AND episode_id = $episode AND slot = $slot
ORDER BY valid_from_seq;

-- name: seq_at_time
-- The system time of a wall-clock question: the episode's last seq recorded at or before $at (naive UTC).
SELECT max(seq) AS seq, max(turn) AS turn
FROM events
WHERE run_id = $run AND system = $system AND episode_id = $episode AND recorded_at <= $at;

-- name: window_as_of
SELECT w.record_id, r.turn, r.user_text, r.agent_text
FROM {asof}('window_versions', $at) w
JOIN {asof}('raw_records', $at) r USING (run_id, system, episode_id, record_id)
WHERE w.run_id = $run AND w.system = $system AND w.episode_id = $episode
ORDER BY r.turn;

-- name: registry_as_of
SELECT slot, value, summary_id, erased
FROM {asof}('fact_versions', $at)
WHERE run_id = $run AND system = $system AND episode_id = $episode
ORDER BY slot;

-- name: index_as_of
SELECT index_id, title, members, live_members, created_turn, level, folded_into
FROM {asof}('index_versions', $at)
WHERE run_id = $run AND system = $system AND episode_id = $episode
ORDER BY index_id;

-- name: summaries_as_of
SELECT summary_id, status, archive_reason, superseded_by, index_id, created_turn, text, facts, raw_ids,
       inferences, merged_from
FROM {asof}('summary_versions', $at)
WHERE run_id = $run AND system = $system AND episode_id = $episode
ORDER BY summary_id;

-- name: pins_as_of
SELECT pin_id, kind, text, origin, shown, reinjected, created_turn, record_id, summary_id
FROM {asof}('pin_versions', $at)
WHERE run_id = $run AND system = $system AND episode_id = $episode
ORDER BY pin_id;

-- name: as_of
-- Every layer in one statement: the rows of each layer's own query above, tagged with the layer, in one flat
-- result (`UNION ALL BY NAME`: a column another layer lacks is NULL; the names shared by two layers have one
-- type in both). Python puts each layer's rows in that query's order (a test holds the two to the same rows):
-- an ORDER BY here would cost a sort operator, and nested per-layer lists the ordered aggregates, in every call.
-- Python writes the as-of filter on the seq or the turn interval where the braces are (`w_at`, `r_at`: the same
-- on the aliased tables).
SELECT 'pinned' AS layer, pin_id, kind, text, origin, shown, reinjected, created_turn, record_id, summary_id
FROM pin_versions
WHERE run_id = $run AND system = $system AND episode_id = $episode AND {at}
UNION ALL BY NAME
SELECT 'window' AS layer, w.record_id, r.turn, r.user_text, r.agent_text
FROM window_versions w
JOIN raw_records r USING (run_id, system, episode_id, record_id)
WHERE w.run_id = $run AND w.system = $system AND w.episode_id = $episode AND {w_at} AND {r_at}
UNION ALL BY NAME
SELECT 'registry' AS layer, slot, value, summary_id, erased
FROM fact_versions
WHERE run_id = $run AND system = $system AND episode_id = $episode AND {at}
UNION ALL BY NAME
SELECT 'index' AS layer, index_id, title, members, live_members, created_turn, level, folded_into
FROM index_versions
WHERE run_id = $run AND system = $system AND episode_id = $episode AND {at}
UNION ALL BY NAME
SELECT 'summaries' AS layer, summary_id, status, archive_reason, superseded_by, index_id, created_turn, text, facts,
       raw_ids, inferences, merged_from
FROM summary_versions
WHERE run_id = $run AND system = $system AND episode_id = $episode AND {at};

-- name: manifest
SELECT e.seq, e.turn, e.probe_id, e.payload ->> '$.purpose' AS purpose, e.ids AS item_ids,
       CAST(e.payload ->> '$.tokens' AS BIGINT) AS tokens, CAST(e.payload ->> '$.budget' AS BIGINT) AS budget,
       e.payload -> '$.parts' AS parts
FROM events e
WHERE e.run_id = $run AND e.system = $system AND e.episode_id = $episode AND e.event_type = 'context_rendered'
  AND ($probe IS NULL OR e.probe_id = $probe) AND ($turn IS NULL OR e.turn = $turn)
ORDER BY e.seq;

-- name: anomaly_flip_flop
-- A slot that went back to a value it had before (A -> B -> A): worth a look, often a stale restatement.
WITH h AS (
    SELECT slot, value, valid_from_seq,
           lag(value) OVER (PARTITION BY slot ORDER BY valid_from_seq) AS previous
    FROM fact_versions
    WHERE run_id = $run AND system = $system AND episode_id = $episode AND NOT erased
), changes AS (
    SELECT * FROM h WHERE previous IS NULL OR previous <> value
)
SELECT slot, list(value ORDER BY valid_from_seq) AS values
FROM changes
GROUP BY slot
HAVING count(*) > count(DISTINCT value);

-- name: anomaly_stale_live
-- A live summary whose slot has a newer value elsewhere (the summarizer forgot an override).
WITH cur AS (
    SELECT * FROM summary_versions
    WHERE run_id = $run AND system = $system AND episode_id = $episode AND valid_to_seq IS NULL
      AND status <> 'archived'
), obs AS (
    SELECT summary_id, created_turn, unnest(facts, recursive := true) FROM cur
), reg AS (
    SELECT slot, value, summary_id FROM fact_versions
    WHERE run_id = $run AND system = $system AND episode_id = $episode AND valid_to_seq IS NULL
)
SELECT obs.summary_id, obs.slot, obs.value AS stale_value, reg.value AS current_value, reg.summary_id AS current_from
FROM obs JOIN reg ON obs.slot = reg.slot
WHERE obs.summary_id <> reg.summary_id AND obs.value <> reg.value
ORDER BY obs.summary_id, obs.slot;

-- name: anomaly_slot_alias_suspected
-- A new slot name the attribute table does not know that looks like a slot the episode already had (same words
-- reordered, one name inside the other): two names of one attribute make two registry slots. The gate stored it
-- as written; a dataset's `attributes` mapping settles it.
SELECT e.seq, e.turn, e.summary_id, e.slot, e.payload ->> '$.existing' AS existing, e.payload ->> '$.rule' AS rule
FROM events e
WHERE e.run_id = $run AND e.system = $system AND e.episode_id = $episode AND e.event_type = 'slot_alias_suspected'
ORDER BY e.seq;
