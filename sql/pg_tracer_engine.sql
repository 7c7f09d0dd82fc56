--
-- pg_tracer_engine: the engine probes' SQL interface with no helper
-- (test/regress.conf points at a runtime directory that never has one):
-- empty results, clean errors for bad input, privileges.
--
SET client_min_messages = warning;	-- whether an earlier test created it or not
CREATE EXTENSION IF NOT EXISTS pg_tracer;
RESET client_min_messages;

SELECT count(*) FROM pg_tracer_engine_events;
SELECT count(*) FROM pg_tracer_engine_buffers;
SELECT count(*) FROM pg_tracer_slow_statements;
SELECT count(*) FROM pg_tracer_checkpoints;
SELECT count(*) FROM pg_tracer_engine_stream();

-- every known probe is accepted, an unknown one is an error with a hint
SELECT p, (SELECT count(*) FROM pg_tracer_engine_histogram(p)) AS buckets
  FROM unnest(ARRAY['query', 'lock-wait', 'lwlock-wait', 'wal-flush', 'buffer-read',
                    'buffer-flush', 'checkpoint', 'wal-insert', 'lock-hold',
                    'lwlock-hold']) AS p;
SELECT * FROM pg_tracer_engine_histogram('nope');
SELECT * FROM pg_tracer_engine_histogram('');
SELECT * FROM pg_tracer_engine_histogram(NULL);

-- the columns of the main view
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'pg_tracer_engine_events'::regclass AND attnum > 0
 ORDER BY attnum;

-- readable by everyone (rows filtered like pg_stat_activity)
CREATE ROLE regress_pgt_engine_plain;
SELECT has_table_privilege('regress_pgt_engine_plain', 'pg_tracer_engine_events', 'SELECT') AS events,
       has_table_privilege('regress_pgt_engine_plain', 'pg_tracer_slow_statements', 'SELECT') AS slow,
       has_function_privilege('regress_pgt_engine_plain', 'pg_tracer_engine_histogram(text)', 'EXECUTE') AS hist;
SET ROLE regress_pgt_engine_plain;
SELECT count(*) FROM pg_tracer_engine_events;
-- a cluster-wide sum: for roles that see every session
SELECT count(*) FROM pg_tracer_engine_histogram('query');
RESET ROLE;
DROP ROLE regress_pgt_engine_plain;
