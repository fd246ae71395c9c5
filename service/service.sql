-- Named queries of the audit service. Each block starts with `-- name: <name>`.
-- Values are parameters ($run, $system, $episode, ...); identifiers come from a fixed allow-list.

-- name: run_summary
SELECT count(*) AS events, min(seq) AS first_seq, max(seq) AS last_seq,
       CAST(min(recorded_at) AS VARCHAR) AS first_recorded_at, CAST(max(recorded_at) AS VARCHAR) AS last_recorded_at,
       count(DISTINCT episode_id) FILTER (WHERE episode_id <> '') AS episodes,
       list(DISTINCT system ORDER BY system) FILTER (WHERE system <> '') AS systems,
       coalesce(bool_or(event_type = 'run_finished'), false) AS finished,
       count(*) FILTER (WHERE event_type = 'key_shredded') AS erasures
FROM events
WHERE run_id = $run;

-- name: episodes
SELECT system, episode_id, count(*) AS events, max(turn) AS turns, min(seq) AS first_seq, max(seq) AS last_seq,
       count(*) FILTER (WHERE event_type = 'probe_asked') AS probes
FROM events
WHERE run_id = $run AND episode_id <> '' AND ($system IS NULL OR system = $system)
GROUP BY ALL
ORDER BY system, episode_id;

-- name: timeline_turns
SELECT turn, min(seq) AS first_seq, max(seq) AS last_seq, count(*) AS events,
       min(recorded_at) AS first_at, max(recorded_at) AS last_at
FROM events
WHERE run_id = $run AND system = $system AND episode_id = $episode AND coalesce(probe_id, '') = ''
GROUP BY turn
ORDER BY turn;

-- name: timeline_probes
SELECT probe_id, min(seq) AS first_seq, max(seq) AS last_seq, min(turn) AS turn, min(recorded_at) AS first_at
FROM events
WHERE run_id = $run AND system = $system AND episode_id = $episode AND coalesce(probe_id, '') <> ''
GROUP BY probe_id
ORDER BY first_seq;

-- name: position_of_seq
SELECT max(seq) AS seq, max(turn) AS turn
FROM events
WHERE run_id = $run AND system = $system AND episode_id = $episode AND seq <= $at;

-- name: position_of_turn
SELECT max(seq) AS seq, max(turn) AS turn
FROM events
WHERE run_id = $run AND system = $system AND episode_id = $episode AND turn <= $at;

-- name: raw_as_of
SELECT record_id, turn, occurred_at, user_text, agent_text, source
FROM {asof}('raw_records', $at)
WHERE run_id = $run AND system = $system AND episode_id = $episode
ORDER BY turn, record_id
LIMIT $limit OFFSET $offset;

-- name: raw_count_as_of
SELECT count(*) AS n
FROM {asof}('raw_records', $at)
WHERE run_id = $run AND system = $system AND episode_id = $episode;

-- name: slots
SELECT DISTINCT slot
FROM fact_versions
WHERE run_id = $run AND system = $system AND episode_id = $episode
ORDER BY slot;
