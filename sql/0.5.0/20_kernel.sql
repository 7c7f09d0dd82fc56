--
-- 20_kernel.sql: kernel probe sets, 0.5.0 (issue 5).
--
-- Every kernel row now names its process's backend type, as
-- pg_stat_activity.backend_type spells it: 'client backend', 'parallel
-- worker', 'autovacuum worker', 'checkpointer', ...; 'kernel' for pid 0
-- (I/O issued outside any tracked process: writeback), NULL where the
-- helper could not tell.  A live process needs no join for it, and the
-- rows of an exited one keep it: the helper notes the title a process had
-- as it exited, and the rows of exited processes (pid NULL) fold per
-- backend type, so that what a query's parallel workers read stays apart
-- from what its leader read.
--
-- The functions' result types change (backend_type is their last column),
-- so they and the views over them are dropped and created again, with the
-- column right after pid; their comments and grants are those of 0.4.4.
-- pg_tracer_kernel_cache groups by it too.
--
DROP VIEW pg_tracer_kernel_cache;
DROP VIEW pg_tracer_kernel_io;
DROP VIEW pg_tracer_kernel_sched;
DROP VIEW pg_tracer_kernel_memory;
DROP VIEW pg_tracer_kernel_net;
DROP FUNCTION pg_tracer_kernel_io();
DROP FUNCTION pg_tracer_kernel_proc(text);
DROP FUNCTION pg_tracer_kernel_histogram(text);

CREATE FUNCTION pg_tracer_kernel_io(
    OUT pid integer,
    OUT queryid bigint,
    OUT layer text,
    OUT op text,
    OUT file_class text,
    OUT relfilenode oid,
    OUT device text,
    OUT calls bigint,
    OUT bytes bigint,
    OUT errors bigint,
    OUT total_ms double precision,
    OUT avg_us double precision,
    OUT max_us double precision,
    OUT database oid,
    OUT backend_type text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_kernel_io'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION pg_tracer_kernel_proc(
    probe_set text,
    OUT pid integer,
    OUT queryid bigint,
    OUT vals bigint[],
    OUT backend_type text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_kernel_proc'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION pg_tracer_kernel_histogram(
    metric text,
    OUT pid integer,
    OUT device text,
    OUT op text,
    OUT bucket_lo_us bigint,
    OUT bucket_hi_us bigint,
    OUT count bigint,
    OUT backend_type text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_kernel_histogram'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_kernel_histogram(text) IS
    'Log2 latency histograms in microseconds: block (per device and op), runq (per backend), fsync (per backend), syscall (per backend, device and op); backend_type names each backend''s role';

CREATE VIEW pg_tracer_kernel_io AS
    SELECT pid, backend_type, queryid, layer, op, file_class, calls, bytes, errors,
           total_ms, avg_us, max_us, relfilenode, database,
           CASE WHEN file_class = 'data' THEN pg_tracer_file_relation(database, relfilenode) END
               AS relation,
           device
      FROM pg_tracer_kernel_io();

COMMENT ON VIEW pg_tracer_kernel_io IS
    'Kernel I/O per backend (with its backend type) and query: system calls, page-cache misses, block requests (vfs kprobes where available); data files with their database and, in the current database, their relation';

CREATE VIEW pg_tracer_kernel_cache AS
    SELECT pid, backend_type, queryid, read_bytes, miss_bytes,
           CASE WHEN read_bytes > 0
                THEN greatest(0, 1 - miss_bytes::double precision / read_bytes)
           END AS cache_hit_ratio
      FROM (SELECT pid, backend_type, queryid,
                   coalesce(sum(bytes) FILTER (WHERE layer = 'syscall'
                                               AND op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')
                                               AND file_class NOT IN ('socket', 'special')), 0)::bigint AS read_bytes,
                   coalesce(sum(bytes) FILTER (WHERE layer = 'pagecache' AND op = 'miss'), 0)::bigint AS miss_bytes
              FROM pg_tracer_kernel_io()
             WHERE pid IS DISTINCT FROM 0
             GROUP BY pid, backend_type, queryid) per_query
     WHERE read_bytes > 0 OR miss_bytes > 0;

COMMENT ON VIEW pg_tracer_kernel_cache IS
    'Share of file read bytes served from the page cache, per backend (NULL: exited processes, per backend type) and query (1 - misses / reads); rows with reads or misses';

CREATE VIEW pg_tracer_kernel_sched AS
    SELECT pid, backend_type, queryid,
           vals[1] / 1e6::double precision AS offcpu_ms,
           vals[2] / 1e6::double precision AS runq_ms,
           vals[3] AS runq_count,
           CASE WHEN vals[3] > 0 THEN vals[2] / 1e3::double precision / vals[3] END AS runq_avg_us,
           vals[4] / 1e3::double precision AS runq_max_us,
           vals[5] AS voluntary_switches,
           vals[6] AS involuntary_switches,
           vals[7] AS migrations,
           vals[8] AS wakeups
      FROM pg_tracer_kernel_proc('sched');

COMMENT ON VIEW pg_tracer_kernel_sched IS
    'Scheduler per backend and query: off-CPU time, run-queue latency, context switches, migrations';

CREATE VIEW pg_tracer_kernel_memory AS
    SELECT pid, backend_type, queryid,
           vals[1] AS faults_user,
           vals[2] AS faults_kernel,
           vals[3] AS faults_major,
           vals[4] AS faults_minor,
           vals[5] AS pages_alloc,
           vals[6] AS pages_free,
           vals[7] AS oom_score_adj_updates,
           CASE WHEN vals[7] > 0 THEN vals[8] END AS oom_score_adj
      FROM pg_tracer_kernel_proc('memory');

COMMENT ON VIEW pg_tracer_kernel_memory IS
    'Memory per backend and query: page faults (user/kernel, major/minor), pages allocated/freed, oom_score_adj';

CREATE VIEW pg_tracer_kernel_net AS
    SELECT pid, backend_type, queryid,
           vals[1] AS send_calls,
           vals[2] AS send_bytes,
           vals[3] / 1e6::double precision AS send_ms,
           vals[4] AS send_errors,
           vals[5] AS recv_calls,
           vals[6] AS recv_bytes,
           vals[7] / 1e6::double precision AS recv_ms,
           vals[8] AS recv_errors,
           vals[9] AS retransmits
      FROM pg_tracer_kernel_proc('network');

COMMENT ON VIEW pg_tracer_kernel_net IS
    'Network per backend and query: send/recv calls, bytes, time, errors, TCP retransmits';

GRANT SELECT ON pg_tracer_kernel_io, pg_tracer_kernel_cache, pg_tracer_kernel_sched,
    pg_tracer_kernel_memory, pg_tracer_kernel_net TO PUBLIC;
