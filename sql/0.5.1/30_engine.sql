--
-- 30_engine.sql: engine probe sets, 0.5.1 fix.
--
-- pg_tracer_engine_buffers: where the server has no USDT probes the buffer
-- reads come from a uprobe on ReadBufferExtended, which sees the read but
-- not whether it hit: hits and misses are 0 there, and hit_ratio read 0
-- ("every read missed").  The ratio is now of the reads whose outcome is
-- known, NULL when none is.
--

CREATE OR REPLACE VIEW pg_tracer_engine_buffers AS
    SELECT pid, queryid, calls AS reads, counter1 AS hits, counter2 AS misses,
           CASE WHEN counter1 + counter2 > 0
                THEN counter1::float8 / (counter1 + counter2) END AS hit_ratio,
           counter3 / 1e6 AS miss_ms
      FROM pg_tracer_engine_events()
     WHERE probe = 'buffer-read';
