--
-- 15_exact.sql: exact wait-event timing, 0.5.4 fixes.
--
-- pg_tracer_exact_time_model counted its covered time to now, while the
-- helper's rows count each wait in progress only to its latest copy, up to
-- 250 ms before (with a helper older than 0.5.4, up to a second for the
-- waits that had ended since its copy): that much of an idle session's
-- time read as CPU*, and two reads could put a busy loop's CPU* growth
-- well under its length.  The view now
-- takes the waits and the time they are of (as_of) from one copy of the
-- segment, pg_tracer_exact_session_totals(), and counts the covered time to
-- as_of, with the two-argument pg_tracer_exact_coverage.  A process whose
-- exact rows the caller may not see (for a role without pg_read_all_stats:
-- one the helper has not listed yet) has NULL idle, wait and CPU* times,
-- not all of its covered time as CPU*.
--

CREATE FUNCTION pg_tracer_exact_coverage(since timestamptz, until timestamptz)
RETURNS double precision
AS 'MODULE_PATHNAME', 'pg_tracer_exact_coverage_until'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_exact_coverage(timestamptz, timestamptz) IS
    'Share (0..1) of the time from since to until (at most now) covered by exact-timing windows';

CREATE FUNCTION pg_tracer_exact_session_totals(
    OUT pid integer,
    OUT idle_ms double precision,
    OUT wait_ms double precision,
    OUT as_of timestamptz
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_exact_session_totals'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_exact_session_totals() IS
    'Per process of pg_stat_activity: exact idle and blocking wait time (those in progress included), as of the helper''s copy (as_of)';

CREATE OR REPLACE VIEW pg_tracer_exact_time_model AS
    SELECT a.pid, a.backend_type,
           c.covered_ms,
           t.idle_ms,
           t.wait_ms,
           greatest(c.covered_ms - t.idle_ms - t.wait_ms, 0) AS cpu_ms
      FROM pg_stat_activity a
      JOIN pg_tracer_exact_session_totals() t ON t.pid = a.pid
      CROSS JOIN LATERAL (
          -- the waits count from the last reset: so does the time they are of
          SELECT greatest(a.backend_start,
                          (SELECT reset_at FROM pg_tracer_ash_status() LIMIT 1)) AS since
      ) r
      CROSS JOIN LATERAL (
          -- ... and they are of the helper's copy, as_of: so is that time
          SELECT coalesce(pg_tracer_exact_coverage(r.since, t.as_of), 0)
                 * extract(epoch FROM t.as_of - r.since) * 1000 AS covered_ms
      ) c
     WHERE a.backend_start IS NOT NULL AND c.covered_ms > 0;

COMMENT ON VIEW pg_tracer_exact_time_model IS
    'Per process, over the time exact windows covered since its start or the last reset, up to the helper''s latest copy: idle, blocking waits (those in progress included) and CPU* (the rest)';
