/*-------------------------------------------------------------------------
 *
 * sql_control.c
 *	  SQL functions that talk to the helper over its control socket:
 *	  pg_tracer_ping().
 *
 * Access: the SQL script revokes these functions from PUBLIC and grants
 * them to pg_monitor; the helper itself additionally checks that the peer
 * is root or the cluster owner.
 *
 * Locking: none.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "pg_tracer.h"
#include "pgt_protocol.h"

PG_FUNCTION_INFO_V1(pg_tracer_ping);

/*
 * pg_tracer_ping
 *		Ask the helper for "PING" and return its answer text, e.g.
 *		"pong version=0.1.0 generation=3 pid=1234".  Any failure is an
 *		error (see pgt_control_request_or_error).
 */
Datum
pg_tracer_ping(PG_FUNCTION_ARGS)
{
	char		answer[PGT_PROTO_MAX_RESPONSE];

	pgt_require_preload();
	pgt_control_request_or_error("PING", answer, sizeof(answer));
	PG_RETURN_TEXT_P(cstring_to_text(answer));
}
