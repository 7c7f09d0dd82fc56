--
-- 15_exact.sql: exact wait-event timing, 0.5.2 fixes.
--
-- The helper now counts the waits in progress: while a window is open
-- each exact row includes its wait in progress (one more wait, and its
-- time so far), and when a window closes the part of each wait in
-- progress that it covered is counted (before, a wait that outlasted its
-- window was counted nowhere: a session idle through a whole window read
-- as on CPU for all of it).  pg_tracer_exact_time_model added an idle
-- session's ClientRead in progress itself, from pg_stat_activity's
-- state_change: the helper's rows have it now, so the view no longer adds
-- it (it would count it twice).
--

CREATE OR REPLACE VIEW pg_tracer_exact_time_model AS
    SELECT a.pid, a.backend_type,
           c.covered_ms,
           coalesce(x.idle_ms, 0) AS idle_ms,
           coalesce(x.wait_ms, 0) AS wait_ms,
           greatest(c.covered_ms - coalesce(x.idle_ms, 0) - coalesce(x.wait_ms, 0), 0)
             AS cpu_ms
      FROM pg_stat_activity a
      CROSS JOIN LATERAL (
          -- the waits count from the last reset: so does the time they are of
          SELECT greatest(a.backend_start,
                          (SELECT reset_at FROM pg_tracer_ash_status() LIMIT 1)) AS since
      ) r
      CROSS JOIN LATERAL (
          SELECT coalesce(pg_tracer_exact_coverage(r.since), 0)
                 * extract(epoch FROM clock_timestamp() - r.since) * 1000 AS covered_ms
      ) c
      LEFT JOIN (SELECT pid, sum(total_ms) FILTER (WHERE idle) AS idle_ms,
                        sum(total_ms) FILTER (WHERE NOT idle) AS wait_ms
                   FROM pg_tracer_exact_waits()
                  GROUP BY pid) x ON x.pid = a.pid
     WHERE a.backend_start IS NOT NULL AND c.covered_ms > 0;

COMMENT ON VIEW pg_tracer_exact_time_model IS
    'Per process, over the time exact windows covered since its start or the last reset: idle, blocking waits (those in progress included) and CPU* (the rest)';
