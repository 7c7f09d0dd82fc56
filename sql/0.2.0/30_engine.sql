--
-- Engine probes (issue 6): statement latency, lock waits, WAL, buffers,
-- checkpoints, from the pg-tracer helper's USDT/uprobe aggregates.
-- Rows are filtered like pg_stat_activity's: pg_read_all_stats sees all,
-- other roles their own sessions' rows.
--
CREATE FUNCTION pg_tracer_engine_events(
    OUT pid integer,
    OUT queryid bigint,
    OUT probe_set text,
    OUT probe text,
    OUT detail text,
    OUT calls bigint,
    OUT total_ms double precision,
    OUT max_us double precision,
    OUT counter1 bigint,
    OUT counter2 bigint,
    OUT counter3 bigint,
    OUT lock_type text,
    OUT lock_mode text,
    OUT lock_field1 bigint,
    OUT lock_field2 bigint,
    OUT lock_field3 bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_engine_events'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_engine_events AS
    SELECT * FROM pg_tracer_engine_events();

COMMENT ON VIEW pg_tracer_engine_events IS
    'Engine probe counters by pid, query id and probe (counter1..3: buffer-read hits, misses, miss ns; checkpoint buffers written, sync ns, WAL segments)';

CREATE VIEW pg_tracer_engine_buffers AS
    SELECT pid, queryid, calls AS reads, counter1 AS hits, counter2 AS misses,
           CASE WHEN calls > 0 THEN counter1::float8 / calls END AS hit_ratio,
           counter3 / 1e6 AS miss_ms
      FROM pg_tracer_engine_events()
     WHERE probe = 'buffer-read';

COMMENT ON VIEW pg_tracer_engine_buffers IS
    'Shared buffer reads, hits, misses and hit ratio per backend and query id';

CREATE FUNCTION pg_tracer_engine_histogram(
    probe text,
    OUT bucket_lo_us double precision,
    OUT bucket_hi_us double precision,
    OUT count bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_engine_histogram'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_engine_histogram(text) IS
    'Log2 latency histogram of one engine probe (query, lock-wait, lwlock-wait, wal-flush, buffer-read, buffer-flush, checkpoint)';

CREATE FUNCTION pg_tracer_engine_stream(
    OUT end_time timestamptz,
    OUT pid integer,
    OUT queryid bigint,
    OUT probe text,
    OUT duration_ms double precision,
    OUT counter1 bigint,
    OUT counter2 bigint,
    OUT counter3 bigint,
    OUT query text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_engine_stream'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_slow_statements AS
    SELECT end_time, pid, queryid, duration_ms, query
      FROM pg_tracer_engine_stream() WHERE probe = 'query';

COMMENT ON VIEW pg_tracer_slow_statements IS
    'Latest statements slower than the helper''s --slow-ms, with their text (truncated to 255 bytes)';

CREATE VIEW pg_tracer_checkpoints AS
    SELECT end_time, pid, duration_ms, counter1 AS buffers_written,
           counter2 / 1e6 AS sync_ms, counter3 AS wal_segments
      FROM pg_tracer_engine_stream() WHERE probe = 'checkpoint';

COMMENT ON VIEW pg_tracer_checkpoints IS
    'Latest checkpoints seen by the engine probes: duration, buffers written, sync phase';

GRANT SELECT ON pg_tracer_engine_events, pg_tracer_engine_buffers,
    pg_tracer_slow_statements, pg_tracer_checkpoints TO PUBLIC;
