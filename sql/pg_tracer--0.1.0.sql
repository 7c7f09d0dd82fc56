/* sql/pg_tracer--0.1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_tracer" to load this file. \quit

--
-- pg_tracer_status(): is the helper connected, and if not, why.
-- Readable by everyone: it shows no query text; file paths are shown only
-- to roles with the privileges of pg_read_all_settings.
--
CREATE FUNCTION pg_tracer_status(
    OUT helper_connected boolean,
    OUT helper_pid integer,
    OUT helper_version text,
    OUT segment_generation bigint,
    OUT attached_at timestamptz,
    OUT last_update timestamptz,
    OUT postmaster_pid integer,
    OUT segment_state text,
    OUT reason text,
    OUT segment_file text,
    OUT layout_file text,
    OUT layout_written boolean,
    OUT layout_error text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_status'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED ROWS 1;

CREATE VIEW pg_tracer_status AS
    SELECT * FROM pg_tracer_status();

COMMENT ON VIEW pg_tracer_status IS
    'Connection state of the pg-tracer helper for this cluster';

--
-- pg_tracer_probes(): every probe set the helper reports, with its state
-- and reason; a single "helper" row when the helper is not connected.
--
CREATE FUNCTION pg_tracer_probes(
    OUT probe_set text,
    OUT state text,
    OUT mechanism text,
    OUT events bigint,
    OUT reason text
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_probes'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_probes AS
    SELECT * FROM pg_tracer_probes();

COMMENT ON VIEW pg_tracer_probes IS
    'Probe sets of the pg-tracer helper: available, unavailable or degraded, and why';

--
-- pg_tracer_backends(): processes of this cluster the helper tracks.
-- Rows are filtered like pg_stat_activity's: pg_read_all_stats sees all.
--
CREATE FUNCTION pg_tracer_backends(
    OUT pid integer,
    OUT backend_type text,
    OUT attached_at timestamptz,
    OUT started_at timestamptz,
    OUT syscalls bigint
)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_tracer_backends'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_tracer_backends AS
    SELECT * FROM pg_tracer_backends();

COMMENT ON VIEW pg_tracer_backends IS
    'Processes of this cluster tracked by the pg-tracer helper (join pg_stat_activity on pid)';

--
-- pg_tracer_ping(): round trip over the helper's control socket.
--
CREATE FUNCTION pg_tracer_ping()
RETURNS text
AS 'MODULE_PATHNAME', 'pg_tracer_ping'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION pg_tracer_ping() IS
    'Ask the pg-tracer helper for PING over its control socket';

-- Privileges
REVOKE ALL ON FUNCTION pg_tracer_ping() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pg_tracer_ping() TO pg_monitor;

GRANT SELECT ON pg_tracer_status TO PUBLIC;
GRANT SELECT ON pg_tracer_probes TO PUBLIC;
GRANT SELECT ON pg_tracer_backends TO PUBLIC;
