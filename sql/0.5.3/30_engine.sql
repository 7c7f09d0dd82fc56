--
-- 30_engine.sql: the engine probes, 0.5.3 fixes.
--
-- A statement that ended in an error (statement_timeout, a cancel, a
-- constraint violation) never reached query__done, and was counted
-- nowhere: the helper now ends it where PostgresMain's error recovery
-- aborts the transaction, as probe 'query-error' (pg_tracer_engine_events,
-- pg_tracer_engine_histogram('query-error'), the stream).  The slow
-- statements keep those too, with failed = true.
--

CREATE OR REPLACE VIEW pg_tracer_slow_statements AS
    SELECT end_time, pid, queryid, duration_ms, query,
           probe = 'query-error' AS failed
      FROM pg_tracer_engine_stream() WHERE probe IN ('query', 'query-error');

COMMENT ON VIEW pg_tracer_slow_statements IS
    'Latest statements slower than the helper''s --slow-ms, with their text (truncated to 255 bytes); failed: ended in an error, timed up to it';
