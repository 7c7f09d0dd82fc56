--
-- 10_ash.sql: the sampled tier's comments, 0.5.7.
--
-- pg_tracer_reset() returns false, with a WARNING, when the helper runs but
-- did not empty this cluster's rows (it refused, or did not answer within
-- its 2 s): before, it returned true, and the exact and kernel views kept
-- their totals while the sampler's reset time moved on.  The library does
-- that; the comment says so.
--
COMMENT ON FUNCTION pg_tracer_reset() IS
    'Empty the sampled wait-event counters and history, the helper''s exact counters, and this cluster''s kernel and engine probe-set rows; false, with a warning, when the helper did not';

--
-- pg_tracer_wait_events: its figures become the exact ones where exact
-- windows covered all the time since the reset (fidelity, since 0.3.0),
-- but pct_db_time stays the sampled share: the exact tier times waits, not
-- time on CPU, and has no DB time of its own.
--
COMMENT ON VIEW pg_tracer_wait_events IS
    'Wait events (and CPU*) of all processes since the last reset: time and waits (the exact figures where fidelity is exact), the sampled share of DB time';
