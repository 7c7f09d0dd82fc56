--
-- 20_kernel.sql: kernel probe sets, 0.4.0 changes (issue 5).
--
-- A data file's I/O now carries the file's database (the directory it lies
-- in: base/<db>/ or a tablespace's <version>/<db>/; 0 for global/, the
-- shared catalogs).  pg_tracer_kernel_io() gains a last column, database,
-- and the view names the relation only where that is certain: a file of
-- the current database (in its default tablespace or another one) or a
-- shared catalog.  Before, relfilenode was looked up in the current
-- database whatever the file's, and a backend of another database could be
-- shown reading a relation of this one.
--
-- The function's result type changes, so it and the two views over it are
-- dropped and created again; the library also serves the 0.3.0 definition
-- (13 columns) until the update runs.  pg_tracer_kernel_cache keeps its
-- columns and meaning.
--
DROP VIEW pg_tracer_kernel_cache;
DROP VIEW pg_tracer_kernel_io;
DROP FUNCTION pg_tracer_kernel_io();

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
    OUT database oid
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_kernel_io'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- The relation a data file (database, relfilenode) holds, seen from the
-- current database: NULL for another database's file, or when the file
-- belongs to no relation any more (dropped, rewritten).
CREATE FUNCTION pg_tracer_file_relation(database oid, relfilenode oid)
RETURNS regclass
AS $$
    SELECT CASE
        WHEN database = 0 THEN pg_filenode_relation(1664, relfilenode)   -- pg_global
        WHEN database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
        THEN coalesce(pg_filenode_relation(0, relfilenode),              -- default tablespace
                      (SELECT pg_filenode_relation(t.oid, relfilenode)
                         FROM pg_tablespace t
                        WHERE t.oid NOT IN (1663, 1664)
                          AND pg_filenode_relation(t.oid, relfilenode) IS NOT NULL
                        LIMIT 1))
    END
$$
LANGUAGE sql STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION pg_tracer_file_relation(oid, oid) IS
    'The relation of a data file (its database and relfilenode) as the current database sees it; NULL for another database''s file';

CREATE VIEW pg_tracer_kernel_io AS
    SELECT pid, queryid, layer, op, file_class, calls, bytes, errors,
           total_ms, avg_us, max_us, relfilenode, database,
           CASE WHEN file_class = 'data' THEN pg_tracer_file_relation(database, relfilenode) END
               AS relation,
           device
      FROM pg_tracer_kernel_io();

COMMENT ON VIEW pg_tracer_kernel_io IS
    'Kernel I/O per backend and query: system calls, page-cache misses, block requests (vfs kprobes where available); data files with their database and, in the current database, their relation';

-- The same columns as 0.2.0's, with the read filter written once.
CREATE VIEW pg_tracer_kernel_cache AS
    SELECT pid, queryid, read_bytes, miss_bytes,
           CASE WHEN read_bytes > 0
                THEN greatest(0, 1 - coalesce(miss_bytes, 0)::double precision / read_bytes)
           END AS cache_hit_ratio
      FROM (SELECT pid, queryid,
                   sum(bytes) FILTER (WHERE layer = 'syscall'
                                      AND op IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')
                                      AND file_class <> 'socket')::bigint AS read_bytes,
                   sum(bytes) FILTER (WHERE layer = 'pagecache')::bigint AS miss_bytes
              FROM pg_tracer_kernel_io()
             WHERE pid <> 0
             GROUP BY pid, queryid) per_query;

COMMENT ON VIEW pg_tracer_kernel_cache IS
    'Share of file read bytes served from the page cache, per backend and query (1 - misses / reads)';

GRANT SELECT ON pg_tracer_kernel_io, pg_tracer_kernel_cache TO PUBLIC;
