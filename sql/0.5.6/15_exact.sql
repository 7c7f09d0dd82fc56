--
-- 15_exact.sql: exact wait-event timing, 0.5.6 fix.
--
-- pg_tracer_exact_time_model showed a cpu_ms of 0 for a process whose
-- idle_ms and wait_ms are NULL (one of the caller's sessions the helper
-- has not listed yet): greatest() skips NULLs.  It is NULL with them now,
-- as the view's comment always said.  Same columns: replaced in place.
--
CREATE OR REPLACE VIEW pg_tracer_exact_time_model AS
    SELECT a.pid, a.backend_type,
           c.covered_ms,
           t.idle_ms,
           t.wait_ms,
           CASE WHEN t.idle_ms IS NOT NULL AND t.wait_ms IS NOT NULL
                THEN greatest(c.covered_ms - t.idle_ms - t.wait_ms, 0)
           END AS cpu_ms
      FROM pg_stat_activity a
      JOIN pg_tracer_exact_session_totals() t ON t.pid = a.pid
      CROSS JOIN LATERAL (
          -- the waits count from the last reset: so does the time they are of
          SELECT greatest(a.backend_start,
                          (SELECT reset_at FROM pg_tracer_ash_status() LIMIT 1)) AS since
      ) r
      CROSS JOIN LATERAL (
          -- ... and they are of the helper's copy, as_of: so is that time
          SELECT coalesce(pg_tracer_exact_coverage(r.since, t.as_of), 0)
                 * extract(epoch FROM t.as_of - r.since) * 1000 AS covered_ms
      ) c
     WHERE a.backend_start IS NOT NULL AND c.covered_ms > 0;

--
-- pg_tracer_wait_events: with full coverage its figures became the exact
-- ones (fidelity 'exact') for every role.  A role without
-- pg_read_all_stats sees its own sessions' exact rows only while they run
-- (an exited one's are folded where no single role's rows are told
-- apart), but its sampled rows keep its exited sessions: the swap dropped
-- their waits and left pct_db_time at odds with total_ms.  Such a role now
-- gets 'mixed' at most: sampled figures, the exact ones in exact_*.
--
CREATE OR REPLACE VIEW pg_tracer_wait_events AS
    WITH cov AS (
        SELECT coalesce((SELECT pg_tracer_exact_coverage(a.reset_at)
                           FROM pg_tracer_ash_status() a LIMIT 1), 0) AS c,
               pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE') AS sees_all
    ), x AS (
        SELECT wait_event_type, wait_event, sum(waits)::bigint AS waits,
               sum(total_ms) AS total_ms, max(max_us) AS max_us, bool_or(idle) AS idle
          FROM pg_tracer_exact_waits()
         GROUP BY wait_event_type, wait_event
    ), f AS (
        SELECT coalesce(s.wait_event_type, x.wait_event_type) AS wait_event_type,
               coalesce(s.wait_event, x.wait_event) AS wait_event,
               coalesce(s.waits, 0) AS waits, coalesce(s.total_ms, 0) AS total_ms,
               s.avg_us, coalesce(s.max_us, 0) AS max_us, s.pct_db_time,
               coalesce(s.idle, x.idle) AS idle, coalesce(s.samples, 0) AS samples,
               x.waits AS x_waits, x.total_ms AS x_total_ms, x.max_us AS x_max_us,
               CASE WHEN x.waits IS NULL OR cov.c <= 0 THEN 'sampled'
                    WHEN cov.c >= 0.999 AND cov.sees_all THEN 'exact'
                    ELSE 'mixed' END AS fid
          FROM pg_tracer_wait_events_since(NULL) s
          FULL JOIN x ON x.wait_event_type = s.wait_event_type AND x.wait_event = s.wait_event
          CROSS JOIN cov
    )
    SELECT wait_event_type, wait_event,
           CASE WHEN fid = 'exact' THEN x_waits ELSE waits END AS waits,
           CASE WHEN fid = 'exact' THEN x_total_ms ELSE total_ms END AS total_ms,
           CASE WHEN fid = 'exact' THEN x_total_ms * 1000 / x_waits ELSE avg_us END AS avg_us,
           CASE WHEN fid = 'exact' THEN x_max_us ELSE max_us END AS max_us,
           pct_db_time, fid AS fidelity, idle, samples,
           x_waits AS exact_waits, x_total_ms AS exact_total_ms
      FROM f;
