--
-- 10_reset.sql: what pg_tracer_reset() empties, 0.4.4 (issues 4 and 5).
--
-- Since this release's library and helper, pg_tracer_reset() also has the
-- helper drop this cluster's rows of its probe sets (verb PROBERESET): the
-- kernel views, the engine views, their histograms and the slow
-- statements.  The function itself is unchanged; its comment says so.
--
COMMENT ON FUNCTION pg_tracer_reset() IS
    'Empty the sampled wait-event counters and history, the helper''s exact counters, and this cluster''s kernel and engine probe-set rows';
