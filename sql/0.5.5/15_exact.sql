--
-- 15_exact.sql: exact wait-event timing, 0.5.5 additions.
--
-- Under pg-tracer's hardware breakpoints (--exact-source watchpoint or
-- auto) the kernel may send a process a SIGTRAP for a debug trap that no
-- breakpoint claims; the library's handler absorbs it instead of letting
-- it end the process, and the cluster with it (src/debug_trap.c).  Until
-- 0.5.5 only the server log said so.  pg_tracer_debug_traps shows the
-- count since the server started (or its last crash restart, which makes
-- shared memory anew), how many of them the log has reported,
-- the latest one's process and cause, and whether the calling process has
-- the handler.
--

CREATE FUNCTION pg_tracer_debug_traps(
    OUT handler_installed boolean,
    OUT absorbed bigint,
    OUT reported bigint,
    OUT last_pid integer,
    OUT last_si_code integer,
    OUT last_cause text
)
RETURNS record
AS 'MODULE_PATHNAME', 'pg_tracer_debug_traps'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_debug_traps AS
    SELECT * FROM pg_tracer_debug_traps();

COMMENT ON VIEW pg_tracer_debug_traps IS
    'Debug traps no hardware breakpoint claimed, absorbed by pg_tracer''s SIGTRAP handler since the server started or crash-restarted (reported: how many the server log has said)';

GRANT SELECT ON pg_tracer_debug_traps TO PUBLIC;
