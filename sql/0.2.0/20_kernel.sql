--
-- Kernel probe sets (syscall, vfs, block, sched, memory, network): rows are
-- aggregates since the helper attached, per backend pid (join
-- pg_stat_activity) and query id (join pg_stat_statements).  pid 0 is the
-- kernel: block I/O not submitted by a PostgreSQL process (writeback).
-- Rows follow pg_stat_activity's visibility.
--
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
    OUT max_us double precision
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_kernel_io'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_kernel_io AS
    SELECT pid, queryid, layer, op, file_class, calls, bytes, errors,
           total_ms, avg_us, max_us, relfilenode,
           CASE WHEN file_class = 'data' THEN pg_filenode_relation(0, relfilenode) END
               AS relation,
           device
      FROM pg_tracer_kernel_io();

COMMENT ON VIEW pg_tracer_kernel_io IS
    'Kernel I/O per backend and query: system calls, page-cache misses, block requests (vfs kprobes where available)';

CREATE VIEW pg_tracer_kernel_cache AS
    SELECT pid, queryid,
           sum(bytes) FILTER (WHERE layer = 'syscall'
                              AND op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')
                              AND file_class <> 'socket')::bigint AS read_bytes,
           sum(bytes) FILTER (WHERE layer = 'pagecache')::bigint AS miss_bytes,
           CASE WHEN sum(bytes) FILTER (WHERE layer = 'syscall'
                              AND op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')
                              AND file_class <> 'socket') > 0
                THEN greatest(0, 1 - coalesce(sum(bytes) FILTER (WHERE layer = 'pagecache'), 0)
                          / sum(bytes) FILTER (WHERE layer = 'syscall'
                              AND op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')
                              AND file_class <> 'socket'))::double precision
           END AS cache_hit_ratio
      FROM pg_tracer_kernel_io()
     WHERE pid <> 0
     GROUP BY pid, queryid;

COMMENT ON VIEW pg_tracer_kernel_cache IS
    'Share of file read bytes served from the page cache, per backend and query (1 - misses / reads)';

CREATE FUNCTION pg_tracer_kernel_proc(
    probe_set text,
    OUT pid integer,
    OUT queryid bigint,
    OUT vals bigint[]
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_kernel_proc'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_kernel_sched AS
    SELECT pid, queryid,
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
    SELECT pid, queryid,
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
    SELECT pid, queryid,
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

CREATE FUNCTION pg_tracer_kernel_histogram(
    metric text,
    OUT pid integer,
    OUT device text,
    OUT op text,
    OUT bucket_lo_us bigint,
    OUT bucket_hi_us bigint,
    OUT count bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_kernel_histogram'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_kernel_histogram(text) IS
    'Log2 latency histograms in microseconds: block (per device and op), runq (per backend), fsync (per backend)';

GRANT SELECT ON pg_tracer_kernel_io, pg_tracer_kernel_cache, pg_tracer_kernel_sched,
    pg_tracer_kernel_memory, pg_tracer_kernel_net TO PUBLIC;
