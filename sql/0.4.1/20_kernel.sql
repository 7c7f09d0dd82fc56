--
-- 20_kernel.sql: kernel probe sets, 0.4.1 fix (issue 5).
--
-- pg_tracer_file_relation() looked for a data file outside the database's
-- default tablespace in every tablespace but pg_default and pg_global.  A
-- database whose default tablespace is another one can still hold
-- relations in pg_default (CREATE TABLE ... TABLESPACE pg_default), and
-- those were not named.  The fallback now covers every tablespace except
-- pg_global and the one already searched, and asks each exactly once (the
-- 0.4.0 query asked each twice: once to filter, once for the result).
-- Same arguments, same result type: replaced in place, the views over it
-- are unchanged.
--
CREATE OR REPLACE FUNCTION pg_tracer_file_relation(database oid, relfilenode oid)
RETURNS regclass
AS $$
    SELECT CASE
        WHEN database = 0 THEN pg_filenode_relation(1664, relfilenode)   -- pg_global
        WHEN database = d.oid
        THEN coalesce(pg_filenode_relation(0, relfilenode),  -- the database's default tablespace
                      (SELECT r.rel
                         FROM pg_tablespace t,
                              pg_filenode_relation(t.oid, relfilenode) AS r(rel)
                        WHERE t.oid NOT IN (1664, d.dattablespace)
                          AND r.rel IS NOT NULL
                        LIMIT 1))
    END
      FROM pg_database d
     WHERE d.datname = current_database()
$$
LANGUAGE sql STABLE STRICT PARALLEL SAFE;
