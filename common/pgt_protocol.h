/*-------------------------------------------------------------------------
 *
 * pgt_protocol.h
 *	  The control-socket protocol between the pg_tracer extension (client)
 *	  and the pg-tracer helper (server).
 *
 * Transport: a SOCK_STREAM unix socket, <runtime_dir>/pgt-<dev>-<ino>.sock
 * (see pgt_segment.h), owned by the cluster owner with mode 0600.  The
 * helper also checks SO_PEERCRED on every connection: only uid 0 and the
 * uid that owns the cluster's data directory are served.
 *
 * One request and one response per connection:
 *
 *	  request  = "PGT/1" SP verb *(SP arg) LF
 *	  response = "PGT/1" SP ("OK" / "ERR") SP text LF
 *
 * A request is at most PGT_PROTO_MAX_REQUEST bytes including the LF, only
 * printable ASCII (0x20..0x7e) before the LF, single spaces between words,
 * at most PGT_PROTO_MAX_ARGS arguments of at most PGT_PROTO_MAX_WORD bytes.
 * Anything else is answered "PGT/1 ERR bad-request <why>" and the
 * connection closed.  A response is at most PGT_PROTO_MAX_RESPONSE bytes.
 * The helper gives a client PGT_PROTO_TIMEOUT_MS to send its request.
 *
 * Verbs in protocol 1:
 *	  PING				-> OK pong version=<v> generation=<g> pid=<p>
 *	  STATUS			-> OK attached=<0|1> postmaster=<pid> backends=<n>
 *						   generation=<g>
 *	  ESCALATE <seconds> <who> [reason]
 *						-> OK granted=<s> remaining=<s|-1> budget=<s|-1|0>
 *						   mode=<tiered|full>
 *						   (exact wait timing for up to <seconds>, 1..86400,
 *						   clamped to the budget of the rolling hour; an open
 *						   window is re-planned to end <granted> s from now;
 *						   remaining -1 = unlimited; ERR denied ... remaining=0
 *						   when the budget is spent or 0)
 *	  DEESCALATE <who>	-> OK closed=<0|1> remaining=<s> budget=<s> mode=<m>
 *						   (idempotent)
 *	  BUDGET			-> OK mode=<m> budget=<s> used=<s> remaining=<s>
 *						   active=<0|1> until=<unix us, 0 = none>
 *	  EXACTRESET		-> OK reset=<0|1>  (empties the exact counters)
 *	  PROBERESET		-> OK sets=<n> rows=<n>  (the probe sets that ran
 *						   dropped this cluster's rows, and the kernel's own,
 *						   of their aggregates; ERR unavailable while the
 *						   cluster is not attached)
 * Errors: "ERR <code> <message>", code one of bad-request, unknown-verb,
 * bad-argument, denied, unavailable.
 *
 * Later features (escalation) add verbs; unknown verbs are an error, never
 * ignored.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGT_PROTOCOL_H
#define PGT_PROTOCOL_H

#include <stddef.h>

#define PGT_PROTO_TAG			"PGT/1"
#define PGT_PROTO_MAX_REQUEST	256
#define PGT_PROTO_MAX_RESPONSE	1024
#define PGT_PROTO_MAX_ARGS		4
#define PGT_PROTO_MAX_WORD		64
#define PGT_PROTO_TIMEOUT_MS	2000

typedef struct pgt_request
{
	char		verb[PGT_PROTO_MAX_WORD + 1];
	int			nargs;
	char		args[PGT_PROTO_MAX_ARGS][PGT_PROTO_MAX_WORD + 1];
} pgt_request;

/*
 * Parse one request line (buf, len bytes, including the final LF).
 * Returns 0 and fills req, or -1 with a short reason in err.
 */
extern int	pgt_parse_request(const char *buf, size_t len, pgt_request *req,
							  char *err, size_t errlen);

/*
 * Check a response line from the helper: the tag, OK/ERR, printable ASCII,
 * the LF, the length.  Returns 1 for OK, 0 for ERR, -1 when malformed.
 * *text points into buf at the text after "OK "/"ERR " (not NUL-terminated
 * at the LF; text_len gives its length).
 */
extern int	pgt_parse_response(const char *buf, size_t len,
							   const char **text, size_t *text_len);

#endif							/* PGT_PROTOCOL_H */
