--
-- 20_kernel.sql: kernel probe sets, 0.4.2 fix (issue 5).
--
-- pg_tracer_kernel_cache, four mends; same columns, so replaced in place:
--
-- * It left out the rows of exited processes.  Its filter "pid <> 0" was
--   meant to drop the kernel's own rows (pid 0: writeback), but it dropped
--   the folded rows of exited processes too, whose pid is NULL: after
--   connection churn most of a statement's reads and misses were missing.
--   Those rows now count, under pid NULL, as in pg_tracer_kernel_io.
-- * It had a row for every (pid, query id) with any kernel I/O, so a
--   statement that only wrote (a COMMIT: WAL writes and fsyncs) showed up
--   with NULL reads and NULL misses.  A row now needs file reads or
--   page-cache misses.
-- * Pages a write brought into the cache are no read misses: the vfs set
--   now counts them apart (pagecache op 'write-miss'), and the view counts
--   op 'miss' only.
-- * Reads and misses are 0, not NULL, where there were none: a row with
--   misses and no reads (readahead or a prefetch for a later statement)
--   says 0 reads.  cache_hit_ratio stays NULL without reads.
--
CREATE OR REPLACE VIEW pg_tracer_kernel_cache AS
    SELECT pid, queryid, read_bytes, miss_bytes,
           CASE WHEN read_bytes > 0
                THEN greatest(0, 1 - miss_bytes::double precision / read_bytes)
           END AS cache_hit_ratio
      FROM (SELECT pid, queryid,
                   coalesce(sum(bytes) FILTER (WHERE layer = 'syscall'
                                               AND op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')
                                               AND file_class <> 'socket'), 0)::bigint AS read_bytes,
                   coalesce(sum(bytes) FILTER (WHERE layer = 'pagecache' AND op = 'miss'), 0)::bigint AS miss_bytes
              FROM pg_tracer_kernel_io()
             WHERE pid IS DISTINCT FROM 0
             GROUP BY pid, queryid) per_query
     WHERE read_bytes > 0 OR miss_bytes > 0;

COMMENT ON VIEW pg_tracer_kernel_cache IS
    'Share of file read bytes served from the page cache, per backend (NULL: exited processes) and query (1 - misses / reads); rows with reads or misses';
