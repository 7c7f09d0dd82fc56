--
-- 30_engine.sql: the engine probes' comments, 0.5.7.
--
-- pg_tracer_engine_histogram() has taken 'query-error' (statements that
-- ended in an error, timed up to it) since 0.5.3; its comment did not list
-- it.
--
COMMENT ON FUNCTION pg_tracer_engine_histogram(text) IS
    'Log2 latency histogram of one engine probe (query, query-error, lock-wait, lwlock-wait, wal-flush, buffer-read, buffer-flush, checkpoint, lock-hold, lwlock-hold)';
