--
-- pg_tracer_ash: the SQL interface of the sampled wait-event tier.
--
-- Values depend on timing, so only shapes, settings, validation and
-- privileges are compared here; the TAP tests t/010_*.pl and t/011_*.pl
-- check the numbers against real waits.
--
CREATE EXTENSION pg_tracer;

-- settings and their defaults
SHOW pg_tracer.sample_rate;
SHOW pg_tracer.sampler_enabled;
SHOW pg_tracer.ash_max_entries;
SELECT name, context, min_val, max_val FROM pg_settings
 WHERE name IN ('pg_tracer.sample_rate', 'pg_tracer.sampler_enabled', 'pg_tracer.ash_max_entries')
 ORDER BY name;
-- the extension asks for query ids
SELECT query_id IS NOT NULL AND query_id <> 0 AS has_query_id
  FROM pg_stat_activity WHERE pid = pg_backend_pid();

-- the sampler runs and is its own worker
DO $$
BEGIN
  FOR i IN 1..300 LOOP
    EXIT WHEN (SELECT sampler_running AND ticks > 0 FROM pg_tracer_ash_status);
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT sampler_running, sampler_enabled, sample_rate, max_entries, max_window_s
  FROM pg_tracer_ash_status;
SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_tracer sampler';

-- columns of every view
SELECT c.relname, string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
 WHERE c.relname IN ('pg_tracer_wait_events', 'pg_tracer_time_model', 'pg_tracer_sessions',
                     'pg_tracer_session_events', 'pg_tracer_query_events', 'pg_tracer_active')
 GROUP BY c.relname ORDER BY c.relname;

-- the views answer, cumulative and over windows
SELECT pg_sleep(0.2);
SELECT count(*) > 0 AS has_rows, bool_and(fidelity = 'sampled') AS sampled
  FROM pg_tracer_wait_events;
SELECT stat_name, depth FROM pg_tracer_time_model WHERE depth = 0 ORDER BY idle;
SELECT count(*) > 0 AS me FROM pg_tracer_sessions WHERE pid = pg_backend_pid();
-- the 0.2 s sleep above is in each window (sampled: 50-1000 ms of it)
SELECT total_ms BETWEEN 50 AND 1000 AS slept
  FROM pg_tracer_wait_events_since('5 s') WHERE wait_event = 'PgSleep';
SELECT time_ms BETWEEN 50 AND 60000 AS db_time
  FROM pg_tracer_time_model_since('1 min') WHERE stat_name = 'DB Time';
SELECT db_time_ms >= 50 AS me
  FROM pg_tracer_sessions_since('5 min') WHERE pid = pg_backend_pid();
SELECT sum(total_ms) BETWEEN 50 AND 1000 AS slept
  FROM pg_tracer_query_events_since('90 s') WHERE wait_event = 'PgSleep';
SELECT total_ms BETWEEN 50 AND 1000 AS slept
  FROM pg_tracer_session_events_since('5 s')
 WHERE pid = pg_backend_pid() AND wait_event = 'PgSleep';

-- bad windows
SELECT * FROM pg_tracer_wait_events_since('0');
SELECT * FROM pg_tracer_wait_events_since('-5 s');
SELECT * FROM pg_tracer_sessions_since('301 s');
SELECT * FROM pg_tracer_query_events_since('1 mon');

-- bad settings
ALTER SYSTEM SET pg_tracer.sample_rate = 0;
ALTER SYSTEM SET pg_tracer.sample_rate = 1001;
ALTER SYSTEM SET pg_tracer.sample_rate = 'often';
ALTER SYSTEM SET pg_tracer.ash_max_entries = 0;
SET pg_tracer.sample_rate = 10;
SET pg_tracer.sampler_enabled = off;

-- reset
SELECT pg_tracer_reset();

-- privileges
CREATE ROLE regress_pgt_ash_plain;
SELECT has_function_privilege('regress_pgt_ash_plain', 'pg_tracer_reset()', 'EXECUTE') AS plain_reset,
       has_table_privilege('regress_pgt_ash_plain', 'pg_tracer_wait_events', 'SELECT') AS plain_events,
       has_table_privilege('regress_pgt_ash_plain', 'pg_tracer_sessions', 'SELECT') AS plain_sessions,
       has_table_privilege('regress_pgt_ash_plain', 'pg_tracer_active', 'SELECT') AS plain_active;
SET ROLE regress_pgt_ash_plain;
SELECT pg_tracer_reset();
-- a plain role sees no other role's sessions
SELECT count(*) FROM pg_tracer_sessions;
SELECT count(*) FROM pg_tracer_active;
RESET ROLE;
DROP ROLE regress_pgt_ash_plain;

DROP EXTENSION pg_tracer;
