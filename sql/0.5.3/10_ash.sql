--
-- 10_ash.sql: the sampled tier, 0.5.3 fixes.
--
-- pg_tracer_time_model_windows divided each window's time by the window's
-- length, while the history buckets behind it cover the last N - 1 whole
-- seconds and the part of the current one sampled so far (windows up to a
-- minute), or whole 10-second periods (longer ones): a 5-second window read
-- up to a fifth low.  pg_tracer_time_model_covered returns the time model
-- with the wall time its samples stand for (the buckets' sampled time,
-- from the same snapshot), and avg_sessions divides by that.
--

CREATE FUNCTION pg_tracer_time_model_covered(
    IN window_length interval,
    OUT stat_name text,
    OUT depth integer,
    OUT time_ms double precision,
    OUT pct_db_time double precision,
    OUT idle boolean,
    OUT covered_ms double precision
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_time_model_since'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_time_model_covered(interval) IS
    'The time model of pg_tracer_time_model_since, with the wall time its samples stand for (since the reset for NULL)';

CREATE OR REPLACE VIEW pg_tracer_time_model_windows AS
    SELECT w.window_length, t.stat_name, t.depth, t.time_ms, t.pct_db_time, t.idle,
           t.time_ms / nullif(t.covered_ms, 0) AS avg_sessions,
           t.covered_ms
      FROM (VALUES (interval '5 seconds', 1), (interval '1 minute', 2),
                   (interval '5 minutes', 3)) AS w(window_length, n),
           LATERAL pg_tracer_time_model_covered(w.window_length) AS t
     ORDER BY w.n;

COMMENT ON VIEW pg_tracer_time_model_windows IS
    'The time model over the last 5 s, 1 min and 5 min; avg_sessions = time / the time the window''s samples stand for (covered_ms)';
