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
