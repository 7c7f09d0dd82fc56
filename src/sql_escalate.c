/*-------------------------------------------------------------------------
 *
 * sql_escalate.c
 *	  pg_tracer_escalate(seconds), pg_tracer_deescalate() and
 *	  pg_tracer_exact_budget(): exact-timing windows asked of the helper
 *	  over the control socket (verbs ESCALATE, DEESCALATE, BUDGET in
 *	  common/pgt_protocol.h).  The helper owns the budget and the windows;
 *	  this file checks the caller's right and the arguments first, and
 *	  validates every field of the answer.
 *
 * Who may: superusers and members of pgtracer_admin (a role the extension
 * creates); everyone else gets "permission denied".
 *
 * Locking: none (one socket round trip per call).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pg_tracer.h"
#include "pgt_protocol.h"

#include <errno.h>

PG_FUNCTION_INFO_V1(pg_tracer_escalate);
PG_FUNCTION_INFO_V1(pg_tracer_deescalate);
PG_FUNCTION_INFO_V1(pg_tracer_exact_budget);

#define ESCALATE_MAX_S	86400
#define ADMIN_ROLE		"pgtracer_admin"

/*
 * require_admin
 *		Superuser or a member of pgtracer_admin, else permission denied.
 */
static void
require_admin(const char *what)
{
	Oid			admin = get_role_oid(ADMIN_ROLE, true);

	if (superuser())
		return;
	if (OidIsValid(admin) && has_privs_of_role(GetUserId(), admin))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s", what),
			 errhint("Only superusers and members of %s may; GRANT %s TO the role.",
					 ADMIN_ROLE, ADMIN_ROLE)));
}

/*
 * who_word
 *		The current role's name as one protocol word: letters, digits and
 *		_.-@ kept, anything else '_', at most 60 bytes.
 */
static char *
who_word(void)
{
	const char *name = GetUserNameFromId(GetUserId(), true);
	char	   *out = palloc(61);
	int			i;

	if (name == NULL)
		name = "unknown";
	for (i = 0; i < 60 && name[i] != '\0'; i++)
	{
		char		c = name[i];

		out[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' ||
				  c == '@') ? c : '_';
	}
	if (i == 0)
		out[i++] = '_';
	out[i] = '\0';
	return out;
}

/*
 * answer_int
 *		The integer after " key=" (or at the start) in the helper's answer;
 *		false when missing or not a number in [-1, INT32_MAX].
 */
static bool
answer_int(const char *text, const char *key, int *out)
{
	char		pat[32];
	const char *p;
	char	   *end;
	long		v;

	snprintf(pat, sizeof(pat), "%s=", key);
	for (p = strstr(text, pat); p != NULL; p = strstr(p + 1, pat))
		if (p == text || p[-1] == ' ')
			break;
	if (p == NULL)
		return false;
	p += strlen(pat);
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno != 0 || end == p || (*end != ' ' && *end != '\0') || v < -1 || v > PG_INT32_MAX)
		return false;
	*out = (int) v;
	return true;
}

/*
 * ask
 *		One request; returns true on OK, false on a refusal (text in out);
 *		raises for every other outcome.
 */
static bool
ask(const char *verb, char *out, size_t outlen)
{
	char		err[PGT_REASON_LEN];
	PgtCtlResult r = pgt_control_request(verb, out, outlen, err, sizeof(err));

	if (r == PGT_CTL_OK)
		return true;
	if (r == PGT_CTL_REFUSED)
		return false;
	if (r == PGT_CTL_NO_HELPER)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not connect to the pg_tracer helper"),
				 errdetail_internal("%s", err),
				 errhint("Exact wait timing needs the helper: pg-tracer daemon --pgdata %s",
						 pgt_hide_data_dir(DataDir))));
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("the pg_tracer helper did not answer properly"),
			 errdetail_internal("%s", err),
			 errhint("Check that the helper is running; its log may say more.")));
	return false;
}

/*
 * malformed
 *		An OK answer without the fields this version expects.
 */
static void
malformed(const char *verb, const char *out)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("malformed answer from the pg_tracer helper"),
			 errdetail_internal("Request \"%s\", answer \"%s\".", verb, out),
			 errhint("The helper and the extension may come from different versions of pg_tracer.")));
}

/*
 * refused
 *		The helper's refusal as an error: an exhausted budget with
 *		budget_remaining_s, a disabled one, a used share of it, too many
 *		windows in the hour, a refusal of the caller's uid, unavailability
 *		with the helper's reason.
 */
static void
refused(const char *verb, const char *out)
{
	int			remaining = 0;

	if (strncmp(out, "denied budget disabled", 22) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("exact wait timing denied: escalation is disabled"),
				 errdetail_internal("Helper answer: \"%s\".", out),
				 errhint("The helper runs with --exact-budget 0; give it a budget of exact seconds per hour to allow escalation.")));
	if (strncmp(out, "denied windows", 14) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("exact wait timing denied: too many windows opened in the last hour"),
				 errdetail_internal("Helper answer: \"%s\".", out),
				 errhint("Wait for the oldest window to leave the hour, or ask for a longer window instead of many short ones.")));
	if (strncmp(out, "denied budget share", 19) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("exact wait timing denied: this cluster's share of the budget is used"),
				 errdetail_internal("Helper answer: \"%s\".", out),
				 errhint("The helper serves several clusters, and each may claim its share of the exact seconds per rolling hour; wait for this cluster's earlier windows to leave the hour.")));
	if (strncmp(out, "denied budget", 13) == 0)
	{
		(void) answer_int(out, "remaining", &remaining);
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("exact wait timing denied: budget exhausted (budget_remaining_s = %d)",
						remaining),
				 errdetail_internal("Helper answer: \"%s\".", out),
				 errhint("The budget of exact seconds per rolling hour is set with the helper's --exact-budget; wait for earlier windows to leave the hour.")));
	}
	if (strncmp(out, "denied pid", 10) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the helper refused the request: the calling process is not one of the cluster's"),
				 errdetail_internal("Request \"%s\", helper answer \"%s\".", verb, out),
				 errhint("The helper takes state-changing requests only from root and from the postmaster's children; a server in another pid namespace than the helper's, or one whose postmaster the helper does not track, is refused.")));
	if (strncmp(out, "denied", 6) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the helper refused the request"),
				 errdetail_internal("Request \"%s\", helper answer \"%s\".", verb, out),
				 errhint("The helper answers only root and the data directory's owner; check that the server runs as the owner of its data directory.")));
	ereport(ERROR,
			(errcode(strncmp(out, "bad-argument", 12) == 0 ?
					 ERRCODE_INVALID_PARAMETER_VALUE : ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("exact wait timing is not available"),
			 errdetail_internal("Request \"%s\", helper answer \"%s\".", verb, out),
			 errhint("See pg_tracer_probes (probe set \"exact\") for the helper's mode and status.")));
}

/*
 * pg_tracer_escalate(seconds int DEFAULT 60)
 *		Ask for an exact-timing window: returns granted_s (clamped to the
 *		budget) and budget_remaining_s (NULL when the budget is unlimited).
 */
Datum
pg_tracer_escalate(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	char		out[PGT_PROTO_MAX_RESPONSE];
	char	   *verb;
	int32		seconds;
	int			granted;
	int			remaining;

	pgt_require_preload();
	require_admin("escalate exact wait timing");
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("seconds must not be NULL"),
				 errhint("Give the length of the exact-timing window in seconds, e.g. pg_tracer_escalate(60).")));
	seconds = PG_GETARG_INT32(0);
	if (seconds <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("seconds must be positive, not %d", seconds),
				 errhint("To end a window early use pg_tracer_deescalate().")));
	if (seconds > ESCALATE_MAX_S)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("seconds must be at most %d (one day), not %d", ESCALATE_MAX_S, seconds),
				 errhint("For exact timing all the time start the helper with --mode full.")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	verb = psprintf("ESCALATE %d %s", seconds, who_word());
	if (!ask(verb, out, sizeof(out)))
		refused(verb, out);
	if (!answer_int(out, "granted", &granted) || granted < 1 || granted > seconds ||
		!answer_int(out, "remaining", &remaining))
		malformed(verb, out);
	values[0] = Int32GetDatum(granted);
	values[1] = Int32GetDatum(remaining);
	nulls[1] = (remaining < 0);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * pg_tracer_deescalate()
 *		End the open exact-timing window; true when one was open.
 *		Idempotent.
 */
Datum
pg_tracer_deescalate(PG_FUNCTION_ARGS)
{
	char		out[PGT_PROTO_MAX_RESPONSE];
	char	   *verb;
	int			closed;

	pgt_require_preload();
	require_admin("end exact wait timing");
	verb = psprintf("DEESCALATE %s", who_word());
	if (!ask(verb, out, sizeof(out)))
		refused(verb, out);
	if (!answer_int(out, "closed", &closed) || (closed != 0 && closed != 1))
		malformed(verb, out);
	PG_RETURN_BOOL(closed == 1);
}

/*
 * pg_tracer_exact_budget()
 *		mode, budget_s (NULL = unlimited), used_s, budget_remaining_s,
 *		active, window_end.
 */
Datum
pg_tracer_exact_budget(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false, false, false, false, false, false};
	char		out[PGT_PROTO_MAX_RESPONSE];
	const char *modes[] = {"tiered", "sampled", "full"};
	const char *mode = NULL;
	int			budget;
	int			used;
	int			remaining;
	int			active;
	int			i;
	char	   *until;
	char	   *end;
	long long	until_us;

	pgt_require_preload();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (!ask("BUDGET", out, sizeof(out)))
		refused("BUDGET", out);
	for (i = 0; i < 3; i++)
		if (strncmp(out, psprintf("mode=%s ", modes[i]), strlen(modes[i]) + 6) == 0)
			mode = modes[i];
	until = strstr(out, " until=");
	if (mode == NULL || until == NULL ||
		!answer_int(out, "budget", &budget) || !answer_int(out, "used", &used) ||
		!answer_int(out, "remaining", &remaining) || !answer_int(out, "active", &active) ||
		used < 0 || (active != 0 && active != 1))
		malformed("BUDGET", out);	/* -1 means unlimited for budget and remaining only */
	errno = 0;
	until_us = strtoll(until + 7, &end, 10);
	if (errno != 0 || end == until + 7 || until_us < 0)
		malformed("BUDGET", out);
	values[0] = CStringGetTextDatum(mode);
	values[1] = Int32GetDatum(budget);
	nulls[1] = budget < 0;
	values[2] = Int32GetDatum(used);
	values[3] = Int32GetDatum(remaining);
	nulls[3] = remaining < 0;
	values[4] = BoolGetDatum(active == 1);
	values[5] = TimestampTzGetDatum(pgt_unix_us_to_timestamptz((int64) until_us, &nulls[5]));
	nulls[5] = !nulls[5];
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
