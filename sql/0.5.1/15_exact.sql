--
-- 15_exact.sql: exact wait-event timing, 0.5.1 fixes (issue 4's views).
--
-- pg_tracer_wait_events: an event the exact tier timed but the sampler
-- never caught had no row (the view started from the sampled rows).  It now
-- has one: with full coverage (fidelity 'exact') its exact figures, else
-- zero sampled waits beside its exact_waits.
--
-- pg_tracer_sessions: the exact columns joined by pid alone, so a session
-- that had exited (kept 5 minutes, exited = true) showed the figures of the
-- process that got its pid since.  An exited session's exact rows are
-- folded (pid NULL): it now has none.
--
-- pg_tracer_exact_time_model: the covered time counted from the process's
-- start, the waits from the last pg_tracer_reset(), so after a reset every
-- second covered before it counted as CPU*.  Both now count from the later
-- of the two; an idle session's ClientRead in progress too.
--

CREATE OR REPLACE VIEW pg_tracer_wait_events AS
    WITH cov AS (
        SELECT coalesce((SELECT pg_tracer_exact_coverage(a.reset_at)
                           FROM pg_tracer_ash_status() a LIMIT 1), 0) AS c
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
                    WHEN cov.c >= 0.999 THEN 'exact'
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

CREATE OR REPLACE VIEW pg_tracer_sessions AS
    SELECT s.*, x.exact_wait_ms, x.exact_idle_ms
      FROM pg_tracer_sessions_since(NULL) s
      LEFT JOIN (SELECT pid, coalesce(sum(total_ms) FILTER (WHERE NOT idle), 0) AS exact_wait_ms,
                        coalesce(sum(total_ms) FILTER (WHERE idle), 0) AS exact_idle_ms
                   FROM pg_tracer_exact_waits()
                  GROUP BY pid) x ON x.pid = s.pid AND NOT s.exited;

CREATE OR REPLACE VIEW pg_tracer_exact_time_model AS
    SELECT a.pid, a.backend_type,
           c.covered_ms,
           coalesce(x.idle_ms, 0) + c.idle_now_ms AS idle_ms,
           coalesce(x.wait_ms, 0) AS wait_ms,
           greatest(c.covered_ms - coalesce(x.idle_ms, 0) - c.idle_now_ms
                    - coalesce(x.wait_ms, 0), 0) AS cpu_ms
      FROM pg_stat_activity a
      CROSS JOIN LATERAL (
          -- the waits count from the last reset: so does the time they are of
          SELECT greatest(a.backend_start,
                          (SELECT reset_at FROM pg_tracer_ash_status() LIMIT 1)) AS since,
                 greatest(a.state_change,
                          (SELECT reset_at FROM pg_tracer_ash_status() LIMIT 1)) AS idle_since
      ) r
      CROSS JOIN LATERAL (
          SELECT coalesce(pg_tracer_exact_coverage(r.since), 0)
                 * extract(epoch FROM clock_timestamp() - r.since) * 1000 AS covered_ms,
                 CASE WHEN a.state = 'idle' AND a.wait_event = 'ClientRead'
                           AND coalesce(pg_tracer_exact_coverage(r.idle_since), 0) >= 0.999
                      THEN extract(epoch FROM clock_timestamp() - r.idle_since) * 1000
                      ELSE 0 END AS idle_now_ms
      ) c
      LEFT JOIN (SELECT pid, sum(total_ms) FILTER (WHERE idle) AS idle_ms,
                        sum(total_ms) FILTER (WHERE NOT idle) AS wait_ms
                   FROM pg_tracer_exact_waits()
                  GROUP BY pid) x ON x.pid = a.pid
     WHERE a.backend_start IS NOT NULL AND c.covered_ms > 0;
