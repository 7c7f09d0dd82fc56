--
-- pg_tracer_kernel: the kernel probe sets' SQL with no helper running:
-- every view answers empty (not an error), arguments are validated.
--
CREATE EXTENSION IF NOT EXISTS pg_tracer;

SELECT count(*) FROM pg_tracer_kernel_io;
SELECT count(*) FROM pg_tracer_kernel_cache;
SELECT count(*) FROM pg_tracer_kernel_sched;
SELECT count(*) FROM pg_tracer_kernel_memory;
SELECT count(*) FROM pg_tracer_kernel_net;
SELECT count(*) FROM pg_tracer_kernel_histogram('block');
SELECT count(*) FROM pg_tracer_kernel_histogram('runq');
SELECT count(*) FROM pg_tracer_kernel_histogram('fsync');
SELECT count(*) FROM pg_tracer_kernel_histogram('syscall');

-- join keys
SELECT count(*) FROM pg_tracer_kernel_io k JOIN pg_stat_activity a USING (pid);

-- bad arguments: clear errors with hints
SELECT * FROM pg_tracer_kernel_histogram('disk');
SELECT * FROM pg_tracer_kernel_histogram(NULL);
SELECT * FROM pg_tracer_kernel_proc('cpu');

-- the columns the views promise
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_kernel_io'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_kernel_sched'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_kernel_memory'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_kernel_net'::regclass AND attnum > 0 ORDER BY attnum;

-- a data file names a relation only from its own database (or, database 0,
-- a shared catalog), in whichever tablespace it lies
SELECT pg_tracer_file_relation(0, pg_relation_filenode('pg_database')) AS shared;
SELECT pg_tracer_file_relation(d.oid, pg_relation_filenode('pg_class')) AS local
  FROM pg_database d WHERE d.datname = current_database();
SELECT pg_tracer_file_relation(d.oid, pg_relation_filenode('pg_class')) AS elsewhere
  FROM pg_database d WHERE d.datname = 'template1';
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE regress_pgt_space LOCATION '';
CREATE TABLE regress_pgt_spaced (i int) TABLESPACE regress_pgt_space;
SELECT pg_tracer_file_relation(d.oid, pg_relation_filenode('regress_pgt_spaced')) AS spaced
  FROM pg_database d WHERE d.datname = current_database();
DROP TABLE regress_pgt_spaced;
-- a database whose default tablespace is another one still finds its
-- relations placed in pg_default (and those in its own default)
SELECT current_database() AS regress_db \gset
CREATE DATABASE regress_pgt_db TABLESPACE regress_pgt_space;
\c regress_pgt_db
CREATE EXTENSION pg_tracer;
CREATE TABLE regress_pgt_in_default (i int) TABLESPACE pg_default;
CREATE TABLE regress_pgt_in_own (i int);
SELECT pg_tracer_file_relation(d.oid, pg_relation_filenode('regress_pgt_in_default')) AS in_pg_default,
       pg_tracer_file_relation(d.oid, pg_relation_filenode('regress_pgt_in_own')) AS in_own_default
  FROM pg_database d WHERE d.datname = current_database();
\c :regress_db
DROP DATABASE regress_pgt_db;
DROP TABLESPACE regress_pgt_space;
RESET allow_in_place_tablespaces;
SELECT pg_tracer_file_relation(d.oid, 4294967295) AS no_such_file
  FROM pg_database d WHERE d.datname = current_database();
-- a look-alike earlier in the caller's search_path is never called (0.5.6)
CREATE FUNCTION public.pg_filenode_relation(oid, oid) RETURNS regclass
    AS $$ SELECT 'pg_class'::regclass $$ LANGUAGE sql;
SET search_path = public, pg_catalog;
SELECT pg_tracer_file_relation(0, pg_catalog.pg_relation_filenode('pg_database')) AS shared;
RESET search_path;
DROP FUNCTION public.pg_filenode_relation(oid, oid);
