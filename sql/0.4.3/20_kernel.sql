--
-- 20_kernel.sql: kernel probe sets, 0.4.3 fix (issue 5).
--
-- pg_tracer_kernel_cache counted the reads of descriptors that are no
-- files as file reads: above all the signalfd every backend reads when its
-- latch is set (128 bytes a wakeup), which the page cache never serves, so
-- a statement served from shared buffers showed a hit ratio made of latch
-- wakeups.  The syscall set now gives such descriptors (pipes, character
-- devices, signalfd, eventfd: neither a regular file nor a directory) the
-- file class 'special', and the view leaves them out with the sockets.
--
CREATE OR REPLACE VIEW pg_tracer_kernel_cache AS
    SELECT pid, queryid, read_bytes, miss_bytes,
           CASE WHEN read_bytes > 0
                THEN greatest(0, 1 - miss_bytes::double precision / read_bytes)
           END AS cache_hit_ratio
      FROM (SELECT pid, queryid,
                   coalesce(sum(bytes) FILTER (WHERE layer = 'syscall'
                                               AND op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')
                                               AND file_class NOT IN ('socket', 'special')), 0)::bigint AS read_bytes,
                   coalesce(sum(bytes) FILTER (WHERE layer = 'pagecache' AND op = 'miss'), 0)::bigint AS miss_bytes
              FROM pg_tracer_kernel_io()
             WHERE pid IS DISTINCT FROM 0
             GROUP BY pid, queryid) per_query
     WHERE read_bytes > 0 OR miss_bytes > 0;
