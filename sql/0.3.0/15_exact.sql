--
-- 15_exact.sql: exact wait-event timing, 0.3.0 changes (issue 4).
--
-- pg_tracer_reset() now also empties the helper's exact counters, so the
-- exact views (pg_tracer_exact_*, the exact columns and fidelity of
-- pg_tracer_wait_events, pg_tracer_histogram) count since the last reset
-- like the sampled ones.
--
-- The windowed forms (*_since(interval), pg_tracer_time_model_windows)
-- stay sampled: the helper keeps exact totals since the reset, not a
-- time series, so no exact figure exists for "the last N seconds".  Their
-- fidelity column says 'sampled'.
--

CREATE OR REPLACE FUNCTION pg_tracer_reset()
RETURNS boolean
AS 'MODULE_PATHNAME', 'pg_tracer_reset_all'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_reset() IS
    'Empty the sampled wait-event counters and history and the helper''s exact counters';

COMMENT ON FUNCTION pg_tracer_wait_events_since(interval) IS
    'Wait events since the reset (NULL) or over the last N seconds; with an interval always sampled (exact data has no time series)';
