--
-- 20_kernel.sql: kernel probe sets, 0.5.6 fix.
--
-- pg_tracer_file_relation() is a SQL function the kernel views call for
-- every row, under the caller's search_path: its catalogs, functions and
-- operators are named with their schema now, so that an object of the
-- same name earlier in that path (in public, say) is never called in
-- their place.  Not with a SET search_path clause, which would keep the
-- function from being inlined.  Same arguments, same result.
--
CREATE OR REPLACE FUNCTION pg_tracer_file_relation(database oid, relfilenode oid)
RETURNS regclass
AS $$
    SELECT CASE
        WHEN database OPERATOR(pg_catalog.=) 0
        THEN pg_catalog.pg_filenode_relation(1664, relfilenode)   -- pg_global
        WHEN database OPERATOR(pg_catalog.=) d.oid
        THEN coalesce(pg_catalog.pg_filenode_relation(0, relfilenode),  -- the database's default tablespace
                      (SELECT r.rel
                         FROM pg_catalog.pg_tablespace t,
                              pg_catalog.pg_filenode_relation(t.oid, relfilenode) AS r(rel)
                        WHERE t.oid OPERATOR(pg_catalog.<>) 1664
                          AND t.oid OPERATOR(pg_catalog.<>) d.dattablespace
                          AND r.rel IS NOT NULL
                        LIMIT 1))
    END
      FROM pg_catalog.pg_database d
     WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
$$
LANGUAGE sql STABLE STRICT PARALLEL SAFE;
