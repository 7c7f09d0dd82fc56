--
-- 15_exact.sql: exact wait-event timing by the helper (issue 4).
--
-- The helper times every blocking wait from system-call entry to exit
-- while exact timing is on (--mode full, or an escalation window in
-- --mode tiered).  Per-process and per-query rows follow
-- pg_stat_activity's visibility; escalating needs superuser or
-- pgtracer_admin.
--

-- The role of those who may escalate.  PostgreSQL reserves role names
-- starting with pg_ (CREATE ROLE refuses them), hence pgtracer_admin.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'pgtracer_admin') THEN
        CREATE ROLE pgtracer_admin NOLOGIN;
    END IF;
END
$$;

CREATE FUNCTION pg_tracer_exact_waits(
    OUT pid integer,
    OUT queryid bigint,
    OUT wait_event_type text,
    OUT wait_event text,
    OUT waits bigint,
    OUT total_ms double precision,
    OUT avg_us double precision,
    OUT max_us bigint,
    OUT idle boolean
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_exact_waits'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_exact_wait_events AS
    SELECT wait_event_type, wait_event, sum(waits)::bigint AS waits,
           sum(total_ms) AS total_ms, sum(total_ms) * 1000 / sum(waits) AS avg_us,
           max(max_us) AS max_us, bool_and(idle) AS idle
      FROM pg_tracer_exact_waits()
     GROUP BY wait_event_type, wait_event
     ORDER BY total_ms DESC;

COMMENT ON VIEW pg_tracer_exact_wait_events IS
    'Blocking waits timed exactly by the helper (system call entry to exit), per event';

CREATE VIEW pg_tracer_exact_session_events AS
    SELECT pid, wait_event_type, wait_event, sum(waits)::bigint AS waits,
           sum(total_ms) AS total_ms, sum(total_ms) * 1000 / sum(waits) AS avg_us,
           max(max_us) AS max_us, bool_and(idle) AS idle
      FROM pg_tracer_exact_waits()
     GROUP BY pid, wait_event_type, wait_event;

COMMENT ON VIEW pg_tracer_exact_session_events IS
    'Blocking waits timed exactly, per process and event';

CREATE VIEW pg_tracer_exact_query_events AS
    SELECT queryid, wait_event_type, wait_event, sum(waits)::bigint AS waits,
           sum(total_ms) AS total_ms, sum(total_ms) * 1000 / sum(waits) AS avg_us,
           max(max_us) AS max_us, bool_and(idle) AS idle
      FROM pg_tracer_exact_waits()
     GROUP BY queryid, wait_event_type, wait_event;

COMMENT ON VIEW pg_tracer_exact_query_events IS
    'Blocking waits timed exactly, per query id (pg_stat_statements.queryid) and event';

CREATE FUNCTION pg_tracer_histogram(
    IN wait_event text,
    OUT bucket_lo_us double precision,
    OUT bucket_hi_us double precision,
    OUT waits bigint,
    OUT pct double precision,
    OUT cumulative_pct double precision
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_histogram'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_histogram(text) IS
    'Exact latency histogram (log2, microseconds) of one wait event, e.g. ''IO:DataFileRead''';

CREATE FUNCTION pg_tracer_escalations_srf(
    OUT start_time timestamptz,
    OUT end_time timestamptz,
    OUT planned_end timestamptz,
    OUT granted_s integer,
    OUT reason text,
    OUT requested_by text,
    OUT end_reason text,
    OUT duration_s double precision
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_escalations_srf'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_escalations AS
    SELECT * FROM pg_tracer_escalations_srf();

COMMENT ON VIEW pg_tracer_escalations IS
    'Exact-timing windows of the last hour: start, end, reason, who asked';

CREATE FUNCTION pg_tracer_exact_coverage(since timestamptz)
RETURNS double precision
AS 'MODULE_PATHNAME', 'pg_tracer_exact_coverage'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_exact_coverage(timestamptz) IS
    'Share (0..1) of the time since the argument covered by exact-timing windows';

CREATE FUNCTION pg_tracer_escalate(
    IN seconds integer DEFAULT 60,
    OUT granted_s integer,
    OUT budget_remaining_s integer
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_tracer_escalate'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION pg_tracer_escalate(integer) IS
    'Exact wait timing for up to N seconds, clamped to the budget of the rolling hour (superuser or pgtracer_admin)';

CREATE FUNCTION pg_tracer_deescalate()
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_tracer_deescalate'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION pg_tracer_deescalate() IS
    'End the open exact-timing window (idempotent; superuser or pgtracer_admin)';

CREATE FUNCTION pg_tracer_exact_budget(
    OUT mode text,
    OUT budget_s integer,
    OUT used_s integer,
    OUT budget_remaining_s integer,
    OUT active boolean,
    OUT window_end timestamptz
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_tracer_exact_budget'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION pg_tracer_exact_budget() IS
    'The helper''s tier mode and exact-timing budget of the rolling hour';

-- The sampled views gain their exact side.  pg_tracer_wait_events: fidelity
-- is exact when exact windows covered the whole time since the last reset
-- (waits, total_ms, avg_us, max_us are then the exact figures), mixed when
-- they covered part of it (figures stay sampled; exact_* hold the exact
-- part), sampled otherwise.
CREATE OR REPLACE VIEW pg_tracer_wait_events AS
    WITH cov AS (
        SELECT coalesce((SELECT pg_tracer_exact_coverage(a.reset_at)
                           FROM pg_tracer_ash_status() a LIMIT 1), 0) AS c
    ), x AS (
        SELECT wait_event_type, wait_event, sum(waits)::bigint AS waits,
               sum(total_ms) AS total_ms, max(max_us) AS max_us
          FROM pg_tracer_exact_waits()
         GROUP BY wait_event_type, wait_event
    ), f AS (
        SELECT s.*, x.waits AS x_waits, x.total_ms AS x_total_ms, x.max_us AS x_max_us,
               CASE WHEN x.waits IS NULL OR cov.c <= 0 THEN 'sampled'
                    WHEN cov.c >= 0.999 THEN 'exact'
                    ELSE 'mixed' END AS fid
          FROM pg_tracer_wait_events_since(NULL) s
          CROSS JOIN cov
          LEFT JOIN x ON x.wait_event_type = s.wait_event_type AND x.wait_event = s.wait_event
    )
    SELECT wait_event_type, wait_event,
           CASE WHEN fid = 'exact' THEN x_waits ELSE waits END AS waits,
           CASE WHEN fid = 'exact' THEN x_total_ms ELSE total_ms END AS total_ms,
           CASE WHEN fid = 'exact' THEN x_total_ms * 1000 / x_waits ELSE avg_us END AS avg_us,
           CASE WHEN fid = 'exact' THEN x_max_us ELSE max_us END AS max_us,
           pct_db_time, fid AS fidelity, idle, samples,
           x_waits AS exact_waits, x_total_ms AS exact_total_ms
      FROM f;

CREATE OR REPLACE VIEW pg_tracer_query_events AS
    SELECT q.*, x.waits AS exact_waits, x.total_ms AS exact_total_ms, x.max_us AS exact_max_us
      FROM pg_tracer_query_events_since(NULL) q
      LEFT JOIN pg_tracer_exact_query_events x
        ON x.queryid = q.queryid AND x.wait_event_type = q.wait_event_type
       AND x.wait_event = q.wait_event;

CREATE OR REPLACE VIEW pg_tracer_sessions AS
    SELECT s.*, x.exact_wait_ms, x.exact_idle_ms
      FROM pg_tracer_sessions_since(NULL) s
      LEFT JOIN (SELECT pid, coalesce(sum(total_ms) FILTER (WHERE NOT idle), 0) AS exact_wait_ms,
                        coalesce(sum(total_ms) FILTER (WHERE idle), 0) AS exact_idle_ms
                   FROM pg_tracer_exact_waits()
                  GROUP BY pid) x ON x.pid = s.pid;

GRANT SELECT ON pg_tracer_exact_wait_events, pg_tracer_exact_session_events,
    pg_tracer_exact_query_events, pg_tracer_escalations TO PUBLIC;

-- The exact time model per live process: of the wall time exact windows
-- covered since the process started, idle = waits with an idle event
-- (Activity, Client:ClientRead), waits = the other blocking waits, CPU* =
-- the rest (non-idle wall time minus the waits).  The helper counts a wait
-- when its system call returns; an idle session's ClientRead in progress
-- is added from pg_stat_activity.state_change when windows covered it.
CREATE VIEW pg_tracer_exact_time_model AS
    SELECT a.pid, a.backend_type,
           c.covered_ms,
           coalesce(x.idle_ms, 0) + c.idle_now_ms AS idle_ms,
           coalesce(x.wait_ms, 0) AS wait_ms,
           greatest(c.covered_ms - coalesce(x.idle_ms, 0) - c.idle_now_ms
                    - coalesce(x.wait_ms, 0), 0) AS cpu_ms
      FROM pg_stat_activity a
      CROSS JOIN LATERAL (
          SELECT coalesce(pg_tracer_exact_coverage(a.backend_start), 0)
                 * extract(epoch FROM clock_timestamp() - a.backend_start) * 1000 AS covered_ms,
                 CASE WHEN a.state = 'idle' AND a.wait_event = 'ClientRead'
                           AND coalesce(pg_tracer_exact_coverage(a.state_change), 0) >= 0.999
                      THEN extract(epoch FROM clock_timestamp() - a.state_change) * 1000
                      ELSE 0 END AS idle_now_ms
      ) c
      LEFT JOIN (SELECT pid, sum(total_ms) FILTER (WHERE idle) AS idle_ms,
                        sum(total_ms) FILTER (WHERE NOT idle) AS wait_ms
                   FROM pg_tracer_exact_waits()
                  GROUP BY pid) x ON x.pid = a.pid
     WHERE a.backend_start IS NOT NULL AND c.covered_ms > 0;

COMMENT ON VIEW pg_tracer_exact_time_model IS
    'Per process, over the time exact windows covered: idle, blocking waits and CPU* (the rest)';

GRANT SELECT ON pg_tracer_exact_time_model TO PUBLIC;
