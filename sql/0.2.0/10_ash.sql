--
-- 10_ash.sql: the always-on sampled wait-event tier (issue 3).
--
-- Every function takes a window: NULL means "since the last
-- pg_tracer_reset()", an interval means "the last N seconds" (at most
-- 5 minutes).  The views are the cumulative forms.  Rows about sessions
-- and queries follow pg_stat_activity's visibility: pg_read_all_stats
-- (pg_monitor, superusers) sees everything, other roles their own sessions.
--

CREATE FUNCTION pg_tracer_wait_events_since(
    IN window_length interval,
    OUT wait_event_type text,
    OUT wait_event text,
    OUT waits bigint,
    OUT total_ms double precision,
    OUT avg_us double precision,
    OUT max_us bigint,
    OUT pct_db_time double precision,
    OUT fidelity text,
    OUT idle boolean,
    OUT samples bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_wait_events_since'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_wait_events AS
    SELECT * FROM pg_tracer_wait_events_since(NULL);

COMMENT ON VIEW pg_tracer_wait_events IS
    'Wait events (and CPU*) of all processes since the last reset: time, sampled waits, share of DB time';

CREATE FUNCTION pg_tracer_time_model_since(
    IN window_length interval,
    OUT stat_name text,
    OUT depth integer,
    OUT time_ms double precision,
    OUT pct_db_time double precision,
    OUT idle boolean
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_time_model_since'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_time_model AS
    SELECT * FROM pg_tracer_time_model_since(NULL);

COMMENT ON VIEW pg_tracer_time_model IS
    'DB time split into CPU* and wait classes with their main events; idle time apart';

CREATE VIEW pg_tracer_time_model_windows AS
    SELECT w.window_length, t.stat_name, t.depth, t.time_ms, t.pct_db_time, t.idle,
           t.time_ms / (extract(epoch FROM w.window_length) * 1000) AS avg_sessions
      FROM (VALUES (interval '5 seconds', 1), (interval '1 minute', 2),
                   (interval '5 minutes', 3)) AS w(window_length, n),
           LATERAL pg_tracer_time_model_since(w.window_length) AS t
     ORDER BY w.n;

COMMENT ON VIEW pg_tracer_time_model_windows IS
    'The time model over the last 5 s, 1 min and 5 min; avg_sessions = time / window';

CREATE FUNCTION pg_tracer_sessions_since(
    IN window_length interval,
    OUT pid integer,
    OUT backend_type text,
    OUT usename text,
    OUT datname text,
    OUT db_time_ms double precision,
    OUT cpu_pct double precision,
    OUT wait_pct double precision,
    OUT top_wait text,
    OUT idle_ms double precision,
    OUT backend_start timestamptz,
    OUT exited boolean
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_sessions_since'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_sessions AS
    SELECT * FROM pg_tracer_sessions_since(NULL);

COMMENT ON VIEW pg_tracer_sessions IS
    'Per process: DB time, CPU and wait shares, top wait event (sessions are kept 5 minutes after they end)';

CREATE FUNCTION pg_tracer_session_events_since(
    IN window_length interval,
    OUT pid integer,
    OUT backend_type text,
    OUT wait_event_type text,
    OUT wait_event text,
    OUT waits bigint,
    OUT total_ms double precision,
    OUT avg_us double precision,
    OUT max_us bigint,
    OUT pct_db_time double precision,
    OUT idle boolean
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_session_events_since'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_session_events AS
    SELECT * FROM pg_tracer_session_events_since(NULL);

COMMENT ON VIEW pg_tracer_session_events IS
    'Per process and wait event; pct_db_time is the share of that process''s DB time';

CREATE FUNCTION pg_tracer_query_events_since(
    IN window_length interval,
    OUT queryid bigint,
    OUT wait_event_type text,
    OUT wait_event text,
    OUT waits bigint,
    OUT total_ms double precision,
    OUT avg_us double precision,
    OUT max_us bigint,
    OUT pct_db_time double precision
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_query_events_since'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_query_events AS
    SELECT * FROM pg_tracer_query_events_since(NULL);

COMMENT ON VIEW pg_tracer_query_events IS
    'DB time per query id (joins pg_stat_statements.queryid) and wait event';

CREATE FUNCTION pg_tracer_active(
    OUT pid integer,
    OUT state text,
    OUT wait_event_type text,
    OUT wait_event text,
    OUT state_ms double precision,
    OUT db_time_ms double precision,
    OUT backend_type text,
    OUT usename text,
    OUT sampled_at timestamptz
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_active'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_active AS
    SELECT * FROM pg_tracer_active();

COMMENT ON VIEW pg_tracer_active IS
    'What each process was doing at the sampler''s latest tick: on cpu, waiting or idle';

CREATE FUNCTION pg_tracer_ash_status(
    OUT sampler_running boolean,
    OUT sampler_pid integer,
    OUT sampler_enabled boolean,
    OUT sample_rate integer,
    OUT sampler_started timestamptz,
    OUT reset_at timestamptz,
    OUT last_tick timestamptz,
    OUT ticks bigint,
    OUT sampled_ms double precision,
    OUT lost_ms double precision,
    OUT sampler_busy_ms double precision,
    OUT event_rows integer,
    OUT session_rows integer,
    OUT query_rows integer,
    OUT max_entries integer,
    OUT overflow_rows bigint,
    OUT history_overflow_rows bigint,
    OUT session_overflow bigint,
    OUT max_window_s integer,
    OUT shmem_bytes bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_ash_status'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED ROWS 1;

CREATE VIEW pg_tracer_ash_status AS
    SELECT * FROM pg_tracer_ash_status();

COMMENT ON VIEW pg_tracer_ash_status IS
    'The pg_tracer sampler: running, rate, time covered and lost, table fill and overflow';

CREATE FUNCTION pg_tracer_reset()
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_tracer_reset'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_reset() IS
    'Empty the sampled wait-event counters and history';

REVOKE ALL ON FUNCTION pg_tracer_reset() FROM PUBLIC;

GRANT SELECT ON pg_tracer_wait_events, pg_tracer_time_model, pg_tracer_time_model_windows,
    pg_tracer_sessions,
    pg_tracer_session_events, pg_tracer_query_events, pg_tracer_active,
    pg_tracer_ash_status TO PUBLIC;
