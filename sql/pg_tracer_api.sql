--
-- pg_tracer_api: the SQL interface of pg_tracer with no helper running.
--
-- test/regress.conf preloads the library and points pg_tracer.runtime_dir
-- at a directory that does not exist, so every answer below is the
-- "helper not connected" one.  Values that differ between runs (paths,
-- pids, times) are only tested for shape.
--
CREATE EXTENSION pg_tracer;

-- what the extension installs
SELECT pg_describe_object(classid, objid, 0) AS object
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_tracer')
   AND deptype = 'e'
 ORDER BY 1;

-- settings
SHOW pg_tracer.runtime_dir;
SHOW pg_tracer.helper_stale_ms;

-- the background worker runs and writes the layout file at start
DO $$
BEGIN
  FOR i IN 1..300 LOOP
    EXIT WHEN (SELECT layout_written FROM pg_tracer_status);
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT backend_type, datname IS NULL AS no_database
  FROM pg_stat_activity WHERE backend_type = 'pg_tracer helper link';

-- status: not connected, and says why
SELECT helper_connected, helper_pid IS NULL AS no_helper_pid,
       helper_version IS NULL AS no_version,
       segment_generation IS NULL AS no_generation,
       attached_at IS NULL AS no_attached, last_update IS NULL AS no_update,
       postmaster_pid IS NULL AS no_postmaster, segment_state, reason,
       segment_file LIKE '/nonexistent/pg_tracer_regress/pgt-%-%.seg' AS segment_file_ok,
       layout_file LIKE '%/pg_tracer.layout' AS layout_file_ok,
       layout_written, layout_error
  FROM pg_tracer_status;

-- probes: never silently empty
SELECT * FROM pg_tracer_probes;

-- backends: empty, not an error, and joinable with pg_stat_activity
SELECT count(*) FROM pg_tracer_backends;
SELECT count(*) FROM pg_tracer_backends b JOIN pg_stat_activity a USING (pid);

-- the layout file the worker wrote
CREATE TEMP TABLE layout AS
  SELECT n, line, split_part(line, ' ', 1) AS key
    FROM regexp_split_to_table(pg_read_file('pg_tracer.layout'), E'\n')
         WITH ORDINALITY AS l(line, n)
   WHERE line <> '';
SELECT key, count(*) FROM layout WHERE key <> 'wait_event' GROUP BY key ORDER BY key;
SELECT line FROM layout WHERE n = 1;
SELECT line FROM layout WHERE n = (SELECT max(n) FROM layout);
SELECT line = 'pg_version_num ' || current_setting('server_version_num') AS version_ok
  FROM layout WHERE key = 'pg_version_num';
SELECT split_part(line, ' ', 2)::bigint =
       (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint AS start_ok
  FROM layout WHERE key = 'postmaster_start_us';
SELECT line ~ '^proc_array 0x[0-9a-f]+ [0-9]+ [0-9]+$' AS proc_array_ok,
       split_part(line, ' ', 3)::int >= current_setting('max_connections')::int AS proc_count_ok
  FROM layout WHERE key = 'proc_array';
SELECT line ~ '^beentry_array 0x[0-9a-f]+ [0-9]+ [0-9]+$' AS beentry_array_ok
  FROM layout WHERE key = 'beentry_array';
SELECT line ~ '^proc_offsets pid=[0-9]+ wait_event_info=[0-9]+ backend_id=[0-9]+$' AS ok
  FROM layout WHERE key = 'proc_offsets';
SELECT line ~ '^beentry_offsets procpid=[0-9]+ query_id=[0-9]+ backend_type=[0-9]+$' AS ok
  FROM layout WHERE key = 'beentry_offsets';
SELECT line ~ '^bgworker_offsets type=[0-9]+ notify_pid=[0-9]+ size=[0-9]+$' AS ok
  FROM layout WHERE key = 'bgworker_offsets';
SELECT count(*) > 200 AS many_events,
       bool_and(line ~ '^wait_event 0x[0-9a-f]{8} [A-Za-z]+ [ -~]+$') AS well_formed
  FROM layout WHERE key = 'wait_event';
SELECT split_part(line, ' ', 3) AS class, count(*) > 0 AS present
  FROM layout WHERE key = 'wait_event' GROUP BY 1 ORDER BY 1;
SELECT substr(line, 12) AS event
  FROM layout
 WHERE line IN ('wait_event 0x0a000011 IO DataFileRead',
                'wait_event 0x03000000 Lock relation',
                'wait_event 0x09000002 Timeout PgSleep',
                'wait_event 0x06000000 Client ClientRead')
    OR line ~ '^wait_event 0x01[0-9a-f]{6} LWLock WALInsert$'
 ORDER BY 1;

-- ping: no helper is a connection failure with a stable message
\set VERBOSITY terse
SELECT pg_tracer_ping();
\set VERBOSITY default
DO $$
DECLARE
  hint text;
BEGIN
  PERFORM pg_tracer_ping();
EXCEPTION WHEN connection_failure THEN
  GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
  RAISE NOTICE 'connection_failure, hint ok: %',
    hint LIKE 'Start the helper: pg-tracer daemon --pgdata %';
END $$;

-- settings are validated
ALTER SYSTEM SET pg_tracer.runtime_dir = 'relative/path';
ALTER SYSTEM SET pg_tracer.runtime_dir = '/a/directory/name/that/is/far/too/long/for/a/unix/socket/path/to/fit';
ALTER SYSTEM SET pg_tracer.helper_stale_ms = 10;
ALTER SYSTEM SET pg_tracer.helper_stale_ms = '11min';
SET pg_tracer.runtime_dir = '/tmp';
SET pg_tracer.helper_stale_ms = 1000;
SET pg_tracer.no_such_setting = 1;

-- privileges
CREATE ROLE regress_pgt_plain;
CREATE ROLE regress_pgt_monitor IN ROLE pg_monitor;
SELECT has_function_privilege('regress_pgt_plain', 'pg_tracer_ping()', 'EXECUTE') AS plain_ping,
       has_function_privilege('regress_pgt_monitor', 'pg_tracer_ping()', 'EXECUTE') AS monitor_ping,
       has_table_privilege('regress_pgt_plain', 'pg_tracer_status', 'SELECT') AS plain_status,
       has_table_privilege('regress_pgt_plain', 'pg_tracer_probes', 'SELECT') AS plain_probes,
       has_table_privilege('regress_pgt_plain', 'pg_tracer_backends', 'SELECT') AS plain_backends;
SET ROLE regress_pgt_plain;
SELECT pg_tracer_ping();
SELECT helper_connected, segment_state, segment_file IS NULL AS no_segment_file,
       layout_file IS NULL AS no_layout_file, layout_written
  FROM pg_tracer_status;
SELECT probe_set, state FROM pg_tracer_probes;
SELECT count(*) FROM pg_tracer_backends;
RESET ROLE;
SET ROLE regress_pgt_monitor;
\set VERBOSITY terse
SELECT pg_tracer_ping();
\set VERBOSITY default
RESET ROLE;
DROP ROLE regress_pgt_plain;
DROP ROLE regress_pgt_monitor;

DROP EXTENSION pg_tracer;
SELECT count(*) FROM pg_proc WHERE proname LIKE 'pg\_tracer\_%';

-- an upgrade from 0.1.0 lands on the same version as a fresh install
CREATE EXTENSION pg_tracer VERSION '0.1.0';
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
DROP EXTENSION pg_tracer;
-- and so does one from 0.2.0, with the same set of functions
CREATE EXTENSION pg_tracer VERSION '0.2.0';
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT count(*) FROM pg_proc WHERE proname LIKE 'pg\_tracer\_%';
DROP EXTENSION pg_tracer;
-- and one from 0.3.0, whose kernel I/O function the library serves as it
-- was (13 columns, no database) until the update
CREATE EXTENSION pg_tracer VERSION '0.3.0';
SELECT count(*) FROM pg_tracer_kernel_io();
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT count(*) FROM pg_proc WHERE proname LIKE 'pg\_tracer\_%';
DROP EXTENSION pg_tracer;
-- and one from 0.4.0 (a fix release: the same objects)
CREATE EXTENSION pg_tracer VERSION '0.4.0';
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT count(*) FROM pg_proc WHERE proname LIKE 'pg\_tracer\_%';
DROP EXTENSION pg_tracer;
-- and one from 0.4.1: its cache view drops the exited processes' rows (pid
-- NULL) until the update replaces it
CREATE EXTENSION pg_tracer VERSION '0.4.1';
SELECT pg_get_viewdef('pg_tracer_kernel_cache') LIKE '%IS DISTINCT FROM 0%' AS keeps_exited;
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT pg_get_viewdef('pg_tracer_kernel_cache') LIKE '%IS DISTINCT FROM 0%' AS keeps_exited;
SELECT count(*) FROM pg_proc WHERE proname LIKE 'pg\_tracer\_%';
DROP EXTENSION pg_tracer;
-- and one from 0.4.2: its cache view counts the reads of signalfd and other
-- descriptors that are no files until the update replaces it
CREATE EXTENSION pg_tracer VERSION '0.4.2';
SELECT pg_get_viewdef('pg_tracer_kernel_cache') LIKE '%special%' AS skips_special;
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT pg_get_viewdef('pg_tracer_kernel_cache') LIKE '%special%' AS skips_special;
SELECT obj_description('pg_tracer_kernel_cache'::regclass) IS NOT NULL AS keeps_comment;
SELECT count(*) FROM pg_proc WHERE proname LIKE 'pg\_tracer\_%';
DROP EXTENSION pg_tracer;
-- and one from 0.4.3: the same objects; pg_tracer_reset()'s comment names
-- the probe-set rows it now empties too
CREATE EXTENSION pg_tracer VERSION '0.4.3';
SELECT obj_description('pg_tracer_reset()'::regprocedure) LIKE '%probe-set%' AS says_probe_sets;
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT obj_description('pg_tracer_reset()'::regprocedure) LIKE '%probe-set%' AS says_probe_sets;
SELECT count(*) FROM pg_proc WHERE proname LIKE 'pg\_tracer\_%';
DROP EXTENSION pg_tracer;
-- and one from 0.4.4: the library serves its kernel functions without the
-- backend_type column until the update adds it, right after pid
CREATE EXTENSION pg_tracer VERSION '0.4.4';
SELECT count(*) FROM pg_tracer_kernel_io();
SELECT count(*) FROM pg_tracer_kernel_sched;
SELECT count(*) FROM pg_tracer_kernel_histogram('runq');
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 WHERE c.relname LIKE 'pg\_tracer\_kernel\_%' AND a.attnum = 2 ORDER BY 1;
SELECT obj_description('pg_tracer_kernel_io'::regclass) IS NOT NULL AS keeps_comment;
SELECT has_table_privilege('public', 'pg_tracer_kernel_net', 'SELECT') AS granted;
SELECT count(*) FROM pg_proc WHERE proname LIKE 'pg\_tracer\_%';
DROP EXTENSION pg_tracer;
-- and one from 0.5.0 (a fix release): three exact-tier views are replaced
-- with the same columns, keeping their comments and grants
CREATE EXTENSION pg_tracer VERSION '0.5.0';
SELECT pg_get_viewdef('pg_tracer_wait_events') LIKE '%FULL JOIN%' AS keeps_exact_only_events;
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT pg_get_viewdef('pg_tracer_wait_events') LIKE '%FULL JOIN%' AS keeps_exact_only_events;
SELECT pg_get_viewdef('pg_tracer_exact_time_model') LIKE '%reset_at%' AS counts_from_reset;
SELECT obj_description('pg_tracer_exact_time_model'::regclass) IS NOT NULL AS keeps_comment;
SELECT has_table_privilege('public', 'pg_tracer_exact_time_model', 'SELECT') AS granted;
SELECT count(*) FROM pg_proc WHERE proname LIKE 'pg\_tracer\_%';
DROP EXTENSION pg_tracer;
-- and one from 0.5.1 (a fix release): the exact time model no longer adds
-- an idle session's ClientRead itself (the helper's rows have it now)
CREATE EXTENSION pg_tracer VERSION '0.5.1';
SELECT pg_get_viewdef('pg_tracer_exact_time_model') LIKE '%state_change%' AS adds_idle_itself;
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT pg_get_viewdef('pg_tracer_exact_time_model') LIKE '%state_change%' AS adds_idle_itself;
SELECT obj_description('pg_tracer_exact_time_model'::regclass) LIKE '%in progress%' AS new_comment;
SELECT has_table_privilege('public', 'pg_tracer_exact_time_model', 'SELECT') AS granted;
DROP EXTENSION pg_tracer;
-- and one from 0.5.2 (a fix release): the windowed time model divides by
-- the time its samples stand for, not by the window's length
CREATE EXTENSION pg_tracer VERSION '0.5.2';
SELECT pg_get_viewdef('pg_tracer_time_model_windows') LIKE '%covered_ms%' AS divides_by_covered;
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT pg_get_viewdef('pg_tracer_time_model_windows') LIKE '%covered_ms%' AS divides_by_covered;
SELECT has_table_privilege('public', 'pg_tracer_time_model_windows', 'SELECT') AS granted;
SELECT count(*) FROM pg_tracer_time_model_covered(interval '5 s') WHERE covered_ms < 0;
DROP EXTENSION pg_tracer;
-- 0.5.3 also keeps the statements that ended in an error among the slow ones
CREATE EXTENSION pg_tracer VERSION '0.5.2';
ALTER EXTENSION pg_tracer UPDATE;
SELECT pg_get_viewdef('pg_tracer_slow_statements') LIKE '%query-error%' AS keeps_failed;
SELECT attname FROM pg_attribute WHERE attrelid = 'pg_tracer_slow_statements'::regclass AND attnum > 0 ORDER BY attnum;
SELECT has_table_privilege('public', 'pg_tracer_slow_statements', 'SELECT') AS granted;
DROP EXTENSION pg_tracer;
-- 0.5.4 (a fix release): the exact time model counts its covered time to
-- the helper's copy its waits are of (as_of), not to now
CREATE EXTENSION pg_tracer VERSION '0.5.3';
SELECT pg_get_viewdef('pg_tracer_exact_time_model') LIKE '%as_of%' AS to_the_copy;
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT pg_get_viewdef('pg_tracer_exact_time_model') LIKE '%as_of%' AS to_the_copy;
SELECT obj_description('pg_tracer_exact_time_model'::regclass) LIKE '%latest copy%' AS new_comment;
SELECT has_table_privilege('public', 'pg_tracer_exact_time_model', 'SELECT') AS granted;
-- no helper here: no totals and no coverage; a span that is empty or not
-- yet begun has none to give (NULL), a later until counts as now
SELECT count(*) FROM pg_tracer_exact_session_totals();
SELECT count(*) FROM pg_tracer_exact_time_model;
SELECT pg_tracer_exact_coverage(now() - interval '1 minute', now());
SELECT pg_tracer_exact_coverage(now(), now() - interval '1 minute') IS NULL AS empty_span;
SELECT pg_tracer_exact_coverage(now() - interval '1 minute', NULL) IS NULL AS null_until;
SELECT pg_tracer_exact_coverage(now() - interval '1 minute', '-infinity') IS NULL AS until_nobegin;
SELECT pg_tracer_exact_coverage('-infinity', 'infinity');
SELECT pg_tracer_exact_coverage('infinity', 'infinity') IS NULL AS since_noend;
DROP EXTENSION pg_tracer;
-- 0.5.5 shows the debug traps the library absorbed (src/debug_trap.c) in
-- a view, not only in the server log: this server preloads the library, so
-- its processes have the handler; it has absorbed none
CREATE EXTENSION pg_tracer VERSION '0.5.4';
SELECT count(*) FROM pg_class WHERE relname = 'pg_tracer_debug_traps';
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT * FROM pg_tracer_debug_traps;
SELECT has_table_privilege('public', 'pg_tracer_debug_traps', 'SELECT') AS granted;
SELECT obj_description('pg_tracer_debug_traps'::regclass) IS NOT NULL AS has_comment;
DROP EXTENSION pg_tracer;
-- 0.5.7 changes comments only: the update gives them, the objects stay
CREATE EXTENSION pg_tracer VERSION '0.5.6';
SELECT obj_description('pg_tracer_engine_histogram(text)'::regprocedure) LIKE '%query-error%' AS lists_query_error;
ALTER EXTENSION pg_tracer UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_tracer';
SELECT obj_description('pg_tracer_engine_histogram(text)'::regprocedure) LIKE '%query-error%' AS lists_query_error,
       obj_description('pg_tracer_reset()'::regprocedure) LIKE '%false, with a warning%' AS says_false,
       obj_description('pg_tracer_wait_events'::regclass) LIKE '%sampled share%' AS says_sampled_share;
DROP EXTENSION pg_tracer;
