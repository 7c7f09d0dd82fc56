--
-- Engine probes (issue 6), 0.3.0: hold times.  pg_tracer_engine_events
-- gains rows of probes 'lock-hold' (heavyweight locks: lock_type,
-- lock_mode, lock_field1/2 as for 'lock-wait') and 'lwlock-hold' (detail:
-- tranche and mode); pg_tracer_engine_histogram() accepts both names.
-- Only the comments change: the functions are the same C symbols.
--
COMMENT ON VIEW pg_tracer_engine_events IS
    'Engine probe counters by pid, query id and probe (counter1..3: buffer-read hits, misses, miss ns; checkpoint buffers written, sync ns, WAL segments); lock-hold and lwlock-hold rows time a lock from its grant to its release';

COMMENT ON FUNCTION pg_tracer_engine_histogram(text) IS
    'Log2 latency histogram of one engine probe (query, lock-wait, lwlock-wait, wal-flush, buffer-read, buffer-flush, checkpoint, lock-hold, lwlock-hold)';
