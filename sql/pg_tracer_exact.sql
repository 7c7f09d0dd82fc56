--
-- pg_tracer_exact: the exact tier's SQL with no helper running: views
-- answer empty, arguments and rights are checked before the helper is
-- asked, the histogram says why it has nothing.
--
CREATE EXTENSION IF NOT EXISTS pg_tracer;
\set VERBOSITY default

SELECT count(*) FROM pg_tracer_exact_waits();
SELECT count(*) FROM pg_tracer_exact_wait_events;
SELECT count(*) FROM pg_tracer_exact_session_events;
SELECT count(*) FROM pg_tracer_exact_query_events;
SELECT count(*) FROM pg_tracer_escalations;
SELECT pg_tracer_exact_coverage(now() - interval '1 minute');
SELECT pg_tracer_exact_coverage(NULL) IS NULL AS null_since;

-- the sampled views keep their columns and gain the exact ones
SELECT count(*) FROM pg_tracer_wait_events WHERE fidelity <> 'sampled';
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_wait_events'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_query_events'::regclass AND attnum > 8 ORDER BY attnum;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_sessions'::regclass AND attnum > 11 ORDER BY attnum;

-- histogram: unknown names, NULL, no exact data
SELECT * FROM pg_tracer_histogram('NoSuchEvent');
SELECT * FROM pg_tracer_histogram('IO:NoSuchEvent');
SELECT * FROM pg_tracer_histogram(NULL);
-- a bare name two types share: ambiguous, the qualified ones are not
SELECT * FROM pg_tracer_histogram('WALWrite');
\set VERBOSITY terse
SELECT * FROM pg_tracer_histogram('IO:WALWrite');
SELECT * FROM pg_tracer_histogram('LWLock:WALWrite');
SELECT * FROM pg_tracer_histogram('IO:DataFileRead');
SELECT * FROM pg_tracer_histogram('pgsleep');
\set VERBOSITY default

-- escalate: arguments are checked first
SELECT * FROM pg_tracer_escalate(NULL);
SELECT * FROM pg_tracer_escalate(0);
SELECT * FROM pg_tracer_escalate(-10);
SELECT * FROM pg_tracer_escalate(86401);
-- valid, but no helper
\set VERBOSITY terse
SELECT * FROM pg_tracer_escalate();
SELECT pg_tracer_deescalate();
SELECT * FROM pg_tracer_exact_budget();
\set VERBOSITY default

-- rights: superuser or pgtracer_admin
SELECT rolcanlogin FROM pg_roles WHERE rolname = 'pgtracer_admin';
CREATE ROLE regress_exact_user;
CREATE ROLE regress_exact_admin IN ROLE pgtracer_admin;
SET ROLE regress_exact_user;
SELECT * FROM pg_tracer_escalate(10);
SELECT pg_tracer_deescalate();
SELECT count(*) FROM pg_tracer_escalations;
SELECT count(*) FROM pg_tracer_exact_wait_events;
-- a cluster-wide sum: for roles that see every session
SELECT * FROM pg_tracer_histogram('IO:DataFileRead');
RESET ROLE;
SET ROLE regress_exact_admin;
\set VERBOSITY terse
SELECT * FROM pg_tracer_escalate(10);
\set VERBOSITY default
RESET ROLE;
DROP ROLE regress_exact_user;
DROP ROLE regress_exact_admin;
