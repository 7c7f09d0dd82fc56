/*
 * helper/escalation.c
 *	  Tiers and escalation windows of exact wait timing (and of the kernel
 *	  sets, when the daemon runs with --kernel-sets escalated).
 *
 * In tiered mode exact timing is on only inside windows: one opened by
 * ESCALATE <seconds> <who> [reason] lasts at most the seconds granted,
 * which are clamped to what is left of the budget of exact seconds per
 * rolling hour (time spent in windows during the last hour, the open one
 * included).  Each tick closes a window that reached its planned end or
 * used up the budget (so the budget holds mid-window).  DEESCALATE closes
 * the open window and is idempotent.
 *
 * Clusters.  A window turns the probes on for the whole host, so there is
 * one window at a time and one budget, whichever cluster asks.  But each
 * request is a claim of its cluster (a party: its data directory, or the
 * helper's anomaly rules) on the window, from the request until the end it
 * was granted: the window lasts until its last claim ends, a cluster's
 * ESCALATE re-plans its own claim (one a window): it may extend the claim,
 * never shorten it (nor another's), so that a second administrator's short
 * request cannot cut a window someone else was granted; DEESCALATE is the
 * way to end one early.  A cluster's DEESCALATE ends its own claim and the
 * helper's, closing
 * the window only when no other claim is left; its
 * EXACTRESET empties only its own counters, and it sees a window another
 * cluster opened without who asked or why.  In full mode exact timing is
 * always on and the budget does not apply; in sampled mode it is never on.
 *
 * Shares.  With N >= 2 clusters attached with the extension loaded
 * (escalation_set_clusters), each
 * may claim at most budget / N of the hour's seconds (its claims, charged
 * until the window closed) and open at most ESC_MAX_WINDOWS / (N + 1)
 * claims in the hour, as may the helper: one cluster's owner can neither
 * spend the whole budget nor fill the window list and lock the others out
 * for an hour.  A claim granted under an earlier N keeps its end.  The
 * helper's windows time every cluster and draw on the host's budget only.
 *
 * Two listeners are told when a window opens or closes: the exact set
 * (escalation_attach) and the held kernel sets (escalation_attach_kernel:
 * their hooks are attached only inside windows).  Either one running is
 * enough to grant a window.
 *
 * A budget of 0 disables escalation; ESC_BUDGET_UNLIMITED removes the
 * limit.  Windows of the last hour (and the open one) are kept for
 * pg_tracer_escalations and the budget, at most ESC_MAX_WINDOWS: a new
 * window beyond them is refused (dropping one still in the hour would
 * free its time from the budget), unless the budget is unlimited (then
 * there is nothing to free, and the oldest goes).  Those that leave the list are summed
 * into one span, published with them, for the coverage of earlier times
 * (the exact counters keep those windows' waits until a reset).
 *
 * Times are the wall clock's (they are published, and compared with the
 * server's), read through escalation_now_us(), which moves them all when
 * the clock is set.
 *
 * Single-threaded: everything runs on the daemon's loop.
 */
#include "escalation.h"

#include "log.h"
#include "parse_num.h"
#include "procfs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A window and the cluster that opened it: kept together, moved together. */
typedef struct esc_window
{
	struct pgt_exact_window_entry e;	/* end_us: when timing went off */
	esc_party	opener;			/* {0, 0}: the helper */
	int64_t		charged_end_us; /* the budget's end: the planned end, or when
								 * the budget ran out, should the tick come
								 * late; 0 while open */
} esc_window;

/*
 * A party's claim on a window (one a window: a later request may extend it):
 * charged from start_us until end_us, the end it was last granted, cut to the
 * window's charged end when the window closes first, less gap_us: the time
 * between an end it reached and a later request of the party while the
 * window stayed open for another's claim.
 */
typedef struct esc_claim
{
	esc_party	party;
	int			open;			/* on the open window */
	int64_t		start_us;
	int64_t		end_us;
	int64_t		gap_us;
} esc_claim;

static const esc_party helper_party = {0, 0};

typedef struct esc_state
{
	int			mode;
	int			budget_s;		/* ESC_BUDGET_UNLIMITED, 0 or 1..3600 */
	esc_switch_fn sw;			/* NULL while the exact set is not running */
	esc_switch_fn kernel_sw;	/* held kernel sets, or NULL */
	esc_reset_fn reset;			/* empties the exact counters, or NULL */
	char		unavailable[160];
	int			on;				/* what sw was last told */
	int			kernel_on;		/* what kernel_sw was last told */
	esc_window	win[ESC_MAX_WINDOWS];	/* oldest first */
	size_t		nwin;
	/* the windows dropped from win[]: their span, and the time they covered */
	int64_t		earlier_start_us;
	int64_t		earlier_end_us;
	int64_t		earlier_covered_us;
	int			open;			/* win[nwin - 1] is open */
	esc_claim	claims[ESC_MAX_CLAIMS];	/* oldest first */
	size_t		nclaims;
	int			nclusters;		/* attached clusters sharing the budget */
} esc_state;

static void close_window(int64_t now_us, int64_t charged_end_us, const char *why);

static esc_state esc = {
	.mode = ESC_MODE_TIERED, .budget_s = ESC_DEFAULT_BUDGET_S, .nclusters = 1
};

/*
 * escalation_configure_mode
 *		--mode tiered|sampled|full.
 */
int
escalation_configure_mode(const char *s, char *err, size_t errlen)
{
	if (strcmp(s, "tiered") == 0)
		esc.mode = ESC_MODE_TIERED;
	else if (strcmp(s, "sampled") == 0)
		esc.mode = ESC_MODE_SAMPLED;
	else if (strcmp(s, "full") == 0)
		esc.mode = ESC_MODE_FULL;
	else
	{
		snprintf(err, errlen, "unknown mode \"%s\": use tiered, sampled or full", s);
		return -1;
	}
	return 0;
}

/*
 * escalation_configure_budget
 *		--exact-budget SECONDS (0 = escalation disabled, at most 3600) or
 *		"unlimited".
 */
int
escalation_configure_budget(const char *s, char *err, size_t errlen)
{
	long		v;

	if (strcmp(s, "unlimited") == 0)
	{
		esc.budget_s = ESC_BUDGET_UNLIMITED;
		return 0;
	}
	if (parse_decimal(s, 0, ESC_MAX_BUDGET_S, &v) < 0)
	{
		snprintf(err, errlen,
				 "\"%s\": give seconds of exact timing per rolling hour, 0..%d, or unlimited",
				 s, ESC_MAX_BUDGET_S);
		return -1;
	}
	esc.budget_s = (int) v;
	return 0;
}

int
escalation_mode(void)
{
	return esc.mode;
}

const char *
escalation_mode_name(void)
{
	switch (esc.mode)
	{
		case ESC_MODE_SAMPLED:
			return "sampled";
		case ESC_MODE_FULL:
			return "full";
	}
	return "tiered";
}

int
escalation_budget(void)
{
	return esc.budget_s;
}

/*
 * set_on
 *		Tell the exact set whether to time waits, and the held kernel sets
 *		whether to run.  -1 when the exact set could not be switched on.
 */
static int
set_on(int on)
{
	int			failed = 0;

	if (esc.sw != NULL && esc.on != on)
		failed = esc.sw(on) < 0 && on;
	esc.on = failed ? 0 : on;
	if (esc.kernel_sw != NULL && esc.kernel_on != on)
		(void) esc.kernel_sw(on);
	esc.kernel_on = on;
	return failed ? -1 : 0;
}

/*
 * drop_windows
 *		Take the n oldest (closed) windows off the list, into the earlier
 *		windows' span.
 */
static void
drop_windows(size_t n)
{
	size_t		i;

	for (i = 0; i < n && i < esc.nwin; i++)
	{
		const struct pgt_exact_window_entry *w = &esc.win[i].e;

		if (w->end_us <= w->start_us || (w->flags & PGT_EXACT_WINDOW_NO_EXACT))
			continue;
		if (esc.earlier_covered_us == 0 || w->start_us < esc.earlier_start_us)
			esc.earlier_start_us = w->start_us;
		if (w->end_us > esc.earlier_end_us)
			esc.earlier_end_us = w->end_us;
		esc.earlier_covered_us += w->end_us - w->start_us;
	}
	memmove(&esc.win[0], &esc.win[n], sizeof(esc.win[0]) * (esc.nwin - n));
	esc.nwin -= n;
}

/* The last readings of the two clocks (escalation_clock_check). */
static int64_t clock_real_us;
static int64_t clock_boot_us;

/*
 * clock_step
 *		Move every time kept in the windows by delta_us (escalation.h).
 */
static void
clock_step(int64_t delta_us)
{
	size_t		i;

	for (i = 0; i < esc.nwin; i++)
	{
		struct pgt_exact_window_entry *w = &esc.win[i].e;

		w->start_us += delta_us;
		if (w->end_us != 0)
			w->end_us += delta_us;
		if (w->planned_end_us != 0)
			w->planned_end_us += delta_us;
		if (esc.win[i].charged_end_us != 0)
			esc.win[i].charged_end_us += delta_us;
	}
	for (i = 0; i < esc.nclaims; i++)
	{
		esc.claims[i].start_us += delta_us;
		esc.claims[i].end_us += delta_us;
	}
	if (esc.earlier_covered_us != 0)
	{
		esc.earlier_start_us += delta_us;
		esc.earlier_end_us += delta_us;
	}
	escalation_anomaly_clock_step(delta_us);
}

/*
 * escalation_clock_check
 *		See escalation.h.
 */
int64_t
escalation_clock_check(int64_t real_us, int64_t boot_us)
{
	int64_t		step = 0;

	if (clock_boot_us != 0)
		step = (real_us - clock_real_us) - (boot_us - clock_boot_us);
	clock_real_us = real_us;
	clock_boot_us = boot_us;
	if (step > -ESC_CLOCK_STEP_US && step < ESC_CLOCK_STEP_US)
		return 0;
	log_warn("the wall clock was set %s by %.1f s: the escalation windows, the budget's "
			 "hour and the anomaly cooldown move with it", step > 0 ? "forward" : "back",
			 (double) (step > 0 ? step : -step) / 1e6);
	clock_step(step);
	return step;
}

/*
 * escalation_now_us
 *		See escalation.h.
 */
int64_t
escalation_now_us(void)
{
	int64_t		real = procfs_realtime_us();
	int64_t		boot = procfs_boottime_us();

	if (boot != 0)
		(void) escalation_clock_check(real, boot);
	return real;
}

/*
 * cut_claims
 *		The open window closes, charged until end_us: its claims end then
 *		at the latest.
 */
static void
cut_claims(int64_t end_us)
{
	size_t		i;

	for (i = 0; i < esc.nclaims; i++)
	{
		esc_claim  *c = &esc.claims[i];

		if (!c->open)
			continue;
		if (c->end_us > end_us)
			c->end_us = end_us > c->start_us ? end_us : c->start_us;
		c->open = 0;
	}
}

/*
 * same_party
 *		Are a and b one cluster (or both the helper)?
 */
static int
same_party(esc_party a, esc_party b)
{
	return a.dev == b.dev && a.ino == b.ino;
}

/*
 * add_claim
 *		party's claim on the open window from now_us until end_us.  A full
 *		list (an unlimited budget's: escalate refuses before, otherwise)
 *		loses its oldest closed claim; -1 when every claim is open.
 */
static int
add_claim(esc_party party, int64_t now_us, int64_t end_us)
{
	size_t		i = 0;

	if (esc.nclaims == ESC_MAX_CLAIMS)
	{
		while (i < esc.nclaims && esc.claims[i].open)
			i++;
		if (i == esc.nclaims)
			return -1;
		memmove(&esc.claims[i], &esc.claims[i + 1],
				sizeof(esc.claims[0]) * (esc.nclaims - i - 1));
		esc.nclaims--;
	}
	esc.claims[esc.nclaims++] = (esc_claim) {
		.party = party, .open = 1, .start_us = now_us, .end_us = end_us
	};
	return 0;
}

/*
 * own_claim
 *		party's claim on the open window (ended or not), or NULL.
 */
static esc_claim *
own_claim(esc_party party)
{
	size_t		i;

	for (i = 0; i < esc.nclaims; i++)
		if (esc.claims[i].open && same_party(esc.claims[i].party, party))
			return &esc.claims[i];
	return NULL;
}

/*
 * replan_claim
 *		party's own claim c now ends at end_us, unless it was granted a later
 *		end (a re-plan never shortens); one that had ended has the time since
 *		as a gap, not charged.  Returns the claim's end.
 */
static int64_t
replan_claim(esc_claim *c, int64_t now_us, int64_t end_us)
{
	if (c->end_us < now_us)
		c->gap_us += now_us - c->end_us;
	if (end_us > c->end_us)
		c->end_us = end_us;
	return c->end_us;
}

/*
 * planned_s
 *		The whole seconds (rounded up) from now_us to end_us, 0 when past.
 */
static int
planned_s(int64_t end_us, int64_t now_us)
{
	return end_us > now_us ? (int) ((end_us - now_us + 999999) / 1000000) : 0;
}

/*
 * remaining_after
 *		What party may still claim once its own claim on the open window
 *		runs to its planned end: avail less that planned rest, -1 unlimited.
 */
static int
remaining_after(int avail, esc_party party, int64_t now_us)
{
	const esc_claim *mine = esc.open ? own_claim(party) : NULL;
	int			left;

	if (avail < 0)
		return -1;
	left = avail - (mine != NULL ? planned_s(mine->end_us, now_us) : 0);
	return left > 0 ? left : 0;
}

/*
 * replan_window
 *		The open window ends with its last claim.  Returns that end.
 */
static int64_t
replan_window(void)
{
	struct pgt_exact_window_entry *w = &esc.win[esc.nwin - 1].e;
	int64_t		end = w->start_us;
	size_t		i;

	for (i = 0; i < esc.nclaims; i++)
		if (esc.claims[i].open && esc.claims[i].end_us > end)
			end = esc.claims[i].end_us;
	w->planned_end_us = end;
	w->granted_s = (uint32_t) ((end - w->start_us + 999999) / 1000000);
	return end;
}

/*
 * drop_claims
 *		Forget claims that ended more than an hour before now_us.
 */
static void
drop_claims(int64_t now_us)
{
	size_t		i;
	size_t		kept = 0;

	for (i = 0; i < esc.nclaims; i++)
		if (esc.claims[i].open || esc.claims[i].end_us >= now_us - ESC_HOUR_US)
			esc.claims[kept++] = esc.claims[i];
	esc.nclaims = kept;
}

/*
 * claim_charged_us
 *		What claim c was charged during the last hour (until now, if it
 *		runs on).  Its gaps lie somewhere between its start and end: those
 *		that may lie before the hour are not taken off, so that a long claim
 *		is never charged less than it used.
 */
static int64_t
claim_charged_us(const esc_claim *c, int64_t now_us)
{
	int64_t		since = now_us - ESC_HOUR_US;
	int64_t		e = c->end_us < now_us ? c->end_us : now_us;
	int64_t		s = c->start_us > since ? c->start_us : since;
	int64_t		before = s - c->start_us;	/* of the claim, before the hour */
	int64_t		gap = c->gap_us > before ? c->gap_us - before : 0;

	return e - s > gap ? e - s - gap : 0;
}

/*
 * party_used_us, party_claims
 *		The time party's claims were charged during the last hour, and how
 *		many windows it claimed in the hour.
 */
static int64_t
party_used_us(esc_party party, int64_t now_us)
{
	int64_t		total = 0;
	size_t		i;

	for (i = 0; i < esc.nclaims; i++)
		if (same_party(esc.claims[i].party, party))
			total += claim_charged_us(&esc.claims[i], now_us);
	return total;
}

static int
party_claims(esc_party party, int64_t now_us)
{
	size_t		i;
	int			n = 0;

	for (i = 0; i < esc.nclaims; i++)
		if (same_party(esc.claims[i].party, party) &&
			(esc.claims[i].open || esc.claims[i].end_us >= now_us - ESC_HOUR_US))
			n++;
	return n;
}

/*
 * escalation_set_clusters
 *		n clusters are attached: each has a share of the budget and of
 *		the windows (see the file header).
 */
void
escalation_set_clusters(int n)
{
	esc.nclusters = n > 1 ? n : 1;
}

/*
 * shared
 *		Do the shares apply?  Two clusters or more, a limited budget.
 */
static int
shared(void)
{
	return esc.nclusters >= 2 && esc.budget_s != ESC_BUDGET_UNLIMITED;
}

/*
 * share_s, claim_quota
 *		A cluster's seconds of the budget, and the claims each party
 *		(every cluster, the helper) may make in the hour.
 */
static int
share_s(void)
{
	int			each;

	if (!shared())
		return esc.budget_s;
	each = esc.budget_s / esc.nclusters;
	return each > 1 ? each : 1;
}

static int
claim_quota(void)
{
	int			q = ESC_MAX_WINDOWS / (esc.nclusters + 1);

	return !shared() ? ESC_MAX_WINDOWS : q > 1 ? q : 1;
}

/*
 * open_window
 *		Append an open window (dropping the oldest when full: escalate
 *		refuses a window while all are in the hour under a limited budget,
 *		so only an unlimited budget's or full mode's, opened at attach, can
 *		get here with a full list).  When timing
 *		cannot be switched on and nothing else runs in windows (the held
 *		kernel sets), the window ends at once, "failed", having covered
 *		and cost nothing; -1 then.
 */
static int
open_window(int64_t now_us, int64_t planned_end_us, uint32_t granted_s,
			const char *reason, const char *who, esc_party opener)
{
	struct pgt_exact_window_entry *w;

	if (esc.nwin == ESC_MAX_WINDOWS)
		drop_windows(1);
	memset(&esc.win[esc.nwin], 0, sizeof(esc.win[0]));
	esc.win[esc.nwin].opener = opener;
	w = &esc.win[esc.nwin++].e;
	w->start_us = now_us;
	w->planned_end_us = planned_end_us;
	w->granted_s = granted_s;
	snprintf(w->reason, sizeof(w->reason), "%s", reason);
	snprintf(w->who, sizeof(w->who), "%s", who);
	esc.open = 1;
	if (set_on(1) < 0 && esc.kernel_sw == NULL)
	{
		log_error("escalation window for %s not opened: exact timing could not be "
				  "switched on", who);
		close_window(now_us, now_us, "failed");
		return -1;
	}
	if (esc.sw == NULL || !esc.on)
	{
		/* the held kernel sets run in it, but no wait is timed exactly */
		w->flags |= PGT_EXACT_WINDOW_NO_EXACT;
		log_warn("escalation window for %s: %s; it runs the kernel sets only and "
				 "covers no exact timing", who, esc.sw == NULL ?
				 "the exact set is not running" : "exact timing could not be switched on");
	}
	log_info("escalation window open: %s, %u s for %s", reason, granted_s, who);
	return 0;
}

/*
 * close_window
 *		End the open window now.  The budget is charged until charged_end_us
 *		(now, or the planned end or the moment the budget ran out when a
 *		tick finds the window past them: what was granted, however late the
 *		tick); the window's end is now, when timing goes off, since the
 *		exact counters have its waits until then.
 */
static void
close_window(int64_t now_us, int64_t charged_end_us, const char *why)
{
	struct pgt_exact_window_entry *w;

	if (!esc.open)
		return;
	w = &esc.win[esc.nwin - 1].e;
	w->end_us = now_us > w->start_us ? now_us : w->start_us;
	charged_end_us = charged_end_us < w->end_us ? charged_end_us : w->end_us;
	esc.win[esc.nwin - 1].charged_end_us =
		charged_end_us > w->start_us ? charged_end_us : w->start_us;
	snprintf(w->end_reason, sizeof(w->end_reason), "%s", why);
	cut_claims(esc.win[esc.nwin - 1].charged_end_us);
	esc.open = 0;
	set_on(0);
	log_info("escalation window closed (%s) after %.1f s", why,
			 (double) (w->end_us - w->start_us) / 1e6);
}

/*
 * escalation_attach
 *		The exact set is running (sw != NULL) or could not start (reason):
 *		in full mode open the unbudgeted window at once.
 */
void
escalation_attach(esc_switch_fn sw, const char *unavailable_reason)
{
	esc.sw = sw;
	esc.on = 0;
	snprintf(esc.unavailable, sizeof(esc.unavailable), "%s",
			 unavailable_reason ? unavailable_reason : "");
	if (sw != NULL && esc.mode == ESC_MODE_FULL && !esc.open)
	{
		int64_t		now = escalation_now_us();

		(void) open_window(now, 0, 0, "full", "helper", helper_party);
	}
}

/*
 * escalation_detach
 *		The exact set stops: close the open window.
 */
void
escalation_detach(void)
{
	int64_t		now = escalation_now_us();

	close_window(now, now, "stop");
	esc.sw = NULL;
}

/*
 * escalation_attach_kernel
 *		The kernel sets run only inside windows: sw(1) when one opens, sw(0)
 *		when it closes, and now sw with the current state (in full mode the
 *		unbudgeted window opens at once).
 */
void
escalation_attach_kernel(esc_switch_fn sw)
{
	esc.kernel_sw = sw;
	if (esc.mode == ESC_MODE_FULL && !esc.open)
	{
		esc.kernel_on = 0;
		(void) open_window(escalation_now_us(), 0, 0, "full", "helper", helper_party);
		return;
	}
	esc.kernel_on = esc.open;
	sw(esc.open);
}

/*
 * escalation_detach_kernel
 *		The kernel sets stop: tell them nothing more.
 */
void
escalation_detach_kernel(void)
{
	esc.kernel_sw = NULL;
}

/*
 * used_us
 *		Exact time spent in budgeted windows during the last hour.
 */
static int64_t
used_us(int64_t now_us)
{
	int64_t		since = now_us - ESC_HOUR_US;
	int64_t		total = 0;
	size_t		i;

	for (i = 0; i < esc.nwin; i++)
	{
		const struct pgt_exact_window_entry *w = &esc.win[i].e;
		int64_t		s = w->start_us;
		int64_t		e = w->end_us ? esc.win[i].charged_end_us : now_us;

		if (w->planned_end_us == 0)
			continue;			/* full mode's: not budgeted */
		if (s < since)
			s = since;
		if (e > s)
			total += e - s;
	}
	return total;
}

int
escalation_used_s(int64_t now_us)
{
	return (int) (used_us(now_us) / 1000000);
}

int
escalation_active(void)
{
	return esc.open;
}

/*
 * avail_s
 *		Whole seconds of budget left now (ignoring the open window's
 *		planned future, counting its elapsed part); -1 = unlimited.
 */
static int
avail_s(int64_t now_us)
{
	int64_t		left;

	if (esc.budget_s == ESC_BUDGET_UNLIMITED)
		return -1;
	left = (int64_t) esc.budget_s * 1000000 - used_us(now_us);
	return left > 0 ? (int) (left / 1000000) : 0;
}

/*
 * helper_cap_s
 *		The seconds the anomaly rules' windows may take in the hour: a part
 *		of the budget, so that a load that keeps a rule true leaves the rest
 *		to the people who ask (pg_tracer_escalate).
 */
static int
helper_cap_s(void)
{
	int			cap = esc.budget_s / ESC_ANOMALY_BUDGET_DIV;

	return cap > 1 ? cap : 1;
}

/*
 * party_avail_s
 *		Whole seconds party may still claim: the host's (avail_s), within
 *		the cluster's share when shares apply, and within helper_cap_s for
 *		the helper's own windows; -1 = unlimited.
 */
static int
party_avail_s(esc_party party, int64_t now_us)
{
	int			host = avail_s(now_us);
	int			cap;
	int64_t		left;

	if (host < 0)
		return host;
	if (same_party(party, helper_party))
		cap = helper_cap_s();
	else if (shared())
		cap = share_s();
	else
		return host;
	left = (int64_t) cap * 1000000 - party_used_us(party, now_us);
	left = left > 0 ? left / 1000000 : 0;
	return left < host ? (int) left : host;
}

/*
 * escalation_tick
 *		Close the open window when it reached its planned end or the budget
 *		is spent, as of the moment it did; drop windows that ended more than
 *		an hour ago.  The daemon calls it every publication tick.
 */
void
escalation_tick(int64_t now_us)
{
	size_t		drop = 0;

	if (esc.open && esc.win[esc.nwin - 1].e.planned_end_us != 0)
	{
		int64_t		planned = esc.win[esc.nwin - 1].e.planned_end_us;
		int64_t		over = esc.budget_s == ESC_BUDGET_UNLIMITED ? -1 :
			used_us(now_us) - (int64_t) esc.budget_s * 1000000;

		if (over >= 0 && now_us - over < planned)
			close_window(now_us, now_us - over, "budget");
		else if (now_us >= planned)
			close_window(now_us, planned, "expired");
	}
	while (drop < esc.nwin && esc.win[drop].e.end_us != 0 &&
		   esc.win[drop].e.end_us < now_us - ESC_HOUR_US)
		drop++;
	if (drop > 0)
		drop_windows(drop);
	drop_claims(now_us);
}

static int
respond(char *out, size_t outlen, const char *fmt,...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(out, outlen, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t) n >= outlen)
		n = (int) outlen - 1;
	return n;
}

/*
 * parse_seconds
 *		A decimal 1..ESC_MAX_REQUEST_S, or -1.
 */
static int
parse_seconds(const char *s)
{
	long		v;

	return parse_decimal(s, 1, ESC_MAX_REQUEST_S, &v) == 0 ? (int) v : -1;
}

/*
 * word_ok
 *		A who/reason word: letters, digits and _.-@ only.
 */
static int
word_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			  (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-' || *s == '@'))
			return 0;
	return 1;
}

/*
 * check_escalate
 *		The arguments and the state that refuse ESCALATE before any budget
 *		is looked at: 0 to go on, else the answer's length.
 */
static int
check_escalate(const pgt_request *r, char *out, size_t outlen)
{
	const char *reason = r->nargs >= 3 ? r->args[2] : "manual";

	if (r->nargs < 2 || r->nargs > 3)
		return respond(out, outlen, "ERR bad-argument usage: ESCALATE <seconds> <who> [reason]");
	if (parse_seconds(r->args[0]) < 0)
		return respond(out, outlen, "ERR bad-argument seconds must be 1..%d", ESC_MAX_REQUEST_S);
	if (!word_ok(r->args[1]) || !word_ok(reason) || strlen(reason) >= PGT_EXACT_REASON_LEN)
		return respond(out, outlen, "ERR bad-argument who and reason: letters, digits, _.-@");
	if (esc.sw == NULL && esc.kernel_sw == NULL)
		return respond(out, outlen, "ERR unavailable exact timing is not running: %s",
					   esc.unavailable[0] ? esc.unavailable : "probe set exact not started");
	if (esc.mode == ESC_MODE_SAMPLED)
		return respond(out, outlen,
					   "ERR unavailable helper runs with --mode sampled: exact timing is off");
	if (esc.mode == ESC_MODE_TIERED && esc.budget_s == 0)
		return respond(out, outlen,
					   "ERR denied budget disabled (--exact-budget 0) remaining=0 budget=0");
	return 0;
}

/*
 * check_budget
 *		Refuse a claim of party beyond the host's budget, its share, its
 *		claims of the hour or the window list: 0 to go on (*avail: the
 *		seconds it may have, -1 unlimited), else the answer's length.
 *		mine: party's claim on the open window, NULL when it needs a new one.
 */
static int
check_budget(esc_party party, const esc_claim *mine, int64_t now_us, int *avail,
			 char *out, size_t outlen)
{
	int			claims_full;

	*avail = party_avail_s(party, now_us);
	if (*avail == 0 && avail_s(now_us) == 0)
		return respond(out, outlen, "ERR denied budget exhausted remaining=0 budget=%d",
					   esc.budget_s);
	if (*avail == 0 && same_party(party, helper_party))
		return respond(out, outlen, "ERR denied the anomaly rules' %d s of the budget "
					   "used remaining=0 budget=%d", helper_cap_s(), esc.budget_s);
	if (*avail == 0)
		return respond(out, outlen, "ERR denied budget share of %d s used (%d clusters "
					   "share the budget) remaining=0 budget=%d", share_s(),
					   esc.nclusters, esc.budget_s);
	if (mine != NULL || *avail < 0)
		return 0;
	claims_full = party_claims(party, now_us) >= claim_quota() ||
		esc.nclaims == ESC_MAX_CLAIMS;
	if (shared() && claims_full)
		return respond(out, outlen, "ERR denied windows %d in the last hour for each of "
					   "%d clusters remaining=%d budget=%d", claim_quota(),
					   esc.nclusters, *avail, esc.budget_s);
	if (claims_full || (!esc.open && esc.nwin == ESC_MAX_WINDOWS))
		return respond(out, outlen, "ERR denied windows %d in the last hour "
					   "remaining=%d budget=%d", ESC_MAX_WINDOWS, *avail, esc.budget_s);
	return 0;
}

/*
 * escalate
 *		ESCALATE <seconds> <who> [reason] from party (a cluster's data
 *		directory, or the helper): its claim on the open window is
 *		re-planned, or it makes one, opening the window if none is open.
 */
static int
escalate(const pgt_request *r, esc_party party, int64_t now_us, char *out,
		 size_t outlen)
{
	int			want;
	int			avail;
	int			granted;
	int			n;
	int64_t		end;
	esc_claim  *mine;

	if ((n = check_escalate(r, out, outlen)) > 0)
		return n;
	want = parse_seconds(r->args[0]);
	if (esc.mode == ESC_MODE_FULL)
		return respond(out, outlen, "OK granted=%d remaining=-1 budget=%d mode=full",
					   want, esc.budget_s);
	mine = esc.open ? own_claim(party) : NULL;
	if ((n = check_budget(party, mine, now_us, &avail, out, outlen)) > 0)
		return n;
	granted = (avail < 0 || want < avail) ? want : avail;
	end = now_us + (int64_t) granted * 1000000;
	if (mine != NULL)
		(void) replan_claim(mine, now_us, end);
	else if (esc.open)
	{
		if (add_claim(party, now_us, end) < 0)
			return respond(out, outlen, "ERR unavailable %d claims on the open window",
						   ESC_MAX_CLAIMS);
	}
	else
	{
		if (open_window(now_us, end, (uint32_t) granted,
						r->nargs >= 3 ? r->args[2] : "manual", r->args[1], party) < 0)
			return respond(out, outlen, "ERR unavailable exact timing could not be "
						   "switched on (the helper's log says why)");
		(void) add_claim(party, now_us, end);	/* no window open: none is open */
	}
	(void) replan_window();
	return respond(out, outlen, "OK granted=%d remaining=%d budget=%d mode=tiered",
				   granted, remaining_after(avail, party, now_us), esc.budget_s);
}

/*
 * escalation_auto
 *		Open (or extend) a window on the helper's own behalf, as ESCALATE
 *		would; 0 when granted.
 */
int
escalation_auto(int64_t now_us, int seconds, const char *reason)
{
	pgt_request r;
	char		out[PGT_PROTO_MAX_RESPONSE];

	memset(&r, 0, sizeof(r));
	snprintf(r.verb, sizeof(r.verb), "ESCALATE");
	r.nargs = 3;
	snprintf(r.args[0], sizeof(r.args[0]), "%d", seconds);
	snprintf(r.args[1], sizeof(r.args[1]), "helper");
	snprintf(r.args[2], sizeof(r.args[2]), "%s", reason);
	escalation_tick(now_us);
	(void) escalate(&r, helper_party, now_us, out, sizeof(out));
	log_info("anomaly %s: %s", reason, out);
	return strncmp(out, "OK ", 3) == 0 ? 0 : -1;
}

/*
 * escalation_set_reset
 *		The exact set's way to empty its counters (NULL: none running).
 */
void
escalation_set_reset(esc_reset_fn fn)
{
	esc.reset = fn;
}

/*
 * end_claims
 *		End, now, the claims on the open window of party (and the helper's,
 *		with helper_too); the window closes when none is left.  Returns
 *		whether it closed.
 */
static int
end_claims(esc_party party, int helper_too, int64_t now_us)
{
	int			ended = 0;
	size_t		i;

	if (!esc.open || esc.mode != ESC_MODE_TIERED)
		return 0;
	for (i = 0; i < esc.nclaims; i++)
	{
		esc_claim  *c = &esc.claims[i];

		if (c->open && c->end_us > now_us &&
			(same_party(c->party, party) ||
			 (helper_too && same_party(c->party, helper_party))))
		{
			c->end_us = now_us > c->start_us ? now_us : c->start_us;
			ended = 1;
		}
	}
	if (ended && replan_window() <= now_us)
	{
		close_window(now_us, now_us, "deescalated");
		return 1;
	}
	return 0;
}

/*
 * deescalate
 *		DEESCALATE <who> from party: its claim on the open window ends now,
 *		and the helper's (any cluster may end those: anomaly windows); the
 *		window closes when none is left.  A cluster that is not attached
 *		has no claim left (escalation_party_gone ended them): closed=0.
 */
static int
deescalate(const pgt_request *r, esc_party party, uint32_t pm, int64_t now_us, char *out,
		   size_t outlen)
{
	int			closed;

	if (r->nargs != 1 || !word_ok(r->args[0]))
		return respond(out, outlen, "ERR bad-argument usage: DEESCALATE <who>");
	/*
	 * Detached (pm 0), the caller may be no process of the cluster (none
	 * is, then): its party's claims went with its postmaster, and it may
	 * not end the anomaly rules' window for the others.
	 */
	closed = end_claims(party, pm != 0, now_us);
	return respond(out, outlen, "OK closed=%d remaining=%d budget=%d mode=%s",
				   closed, party_avail_s(party, now_us), esc.budget_s, escalation_mode_name());
}

/*
 * escalation_party_gone
 *		The cluster party detached from its postmaster pm (host pid): its
 *		claims end now, since nothing could end them otherwise (a detached
 *		cluster has no postmaster to time, and only it may end its claims),
 *		and the exact set drops pm's rows, which no publication shows again
 *		(the next postmaster has another pid).
 */
void
escalation_party_gone(esc_party party, uint32_t pm, int64_t now_us)
{
	escalation_tick(now_us);
	if (end_claims(party, 0, now_us))
		log_info("escalation: the window closed with the claims of postmaster %u", pm);
	if (esc.reset != NULL && pm != 0)
		esc.reset(pm);
}

/*
 * escalation_respond
 *		The answer text ("OK ..."/"ERR ...", without the protocol tag and
 *		LF) to ESCALATE, DEESCALATE, BUDGET and EXACTRESET from the cluster
 *		party whose postmaster has host pid pm (0: not attached); -1 for other
 *		verbs.
 */
int
escalation_respond(const pgt_request *r, uint32_t pm, esc_party party, int64_t now_us,
				   char *out, size_t outlen)
{
	escalation_tick(now_us);
	/* claims are an attached cluster's: a detached one has no postmaster to time */
	if (pm == 0 && strcmp(r->verb, "ESCALATE") == 0)
		return respond(out, outlen, "ERR unavailable the cluster is not attached");
	if (strcmp(r->verb, "ESCALATE") == 0)
		return escalate(r, party, now_us, out, outlen);
	if (strcmp(r->verb, "DEESCALATE") == 0)
		return deescalate(r, party, pm, now_us, out, outlen);
	if (strcmp(r->verb, "EXACTRESET") == 0)
	{
		if (r->nargs != 0)
			return respond(out, outlen, "ERR bad-argument EXACTRESET takes no arguments");
		if (esc.reset != NULL && pm != 0)
			esc.reset(pm);
		return respond(out, outlen, "OK reset=%d", esc.reset != NULL && pm != 0);
	}
	if (strcmp(r->verb, "BUDGET") == 0)
	{
		int64_t		until = esc.open ? esc.win[esc.nwin - 1].e.planned_end_us : 0;

		if (r->nargs != 0)
			return respond(out, outlen, "ERR bad-argument BUDGET takes no arguments");
		return respond(out, outlen,
					   "OK mode=%s budget=%d used=%d remaining=%d active=%d until=%lld",
					   escalation_mode_name(), esc.budget_s, escalation_used_s(now_us),
					   remaining_after(party_avail_s(party, now_us), party, now_us),
					   esc.open, (long long) until);
	}
	return -1;
}

/*
 * escalation_windows
 *		Copy the span of the windows gone from the list, then the windows
 *		of the last hour (oldest first), as cluster party may see them: when
 *		and how long for all (they timed its waits too), who asked and why
 *		only for its own and the helper's.
 */
size_t
escalation_windows(struct pgt_exact_window_entry *out, size_t max, esc_party party)
{
	size_t		first = 0;
	size_t		n;
	size_t		i;

	if (esc.earlier_covered_us > 0 && max > 0)
	{
		int64_t		span = esc.earlier_end_us - esc.earlier_start_us;

		/* see PGT_EXACT_WINDOW_EARLIER: to a reader before it, an empty window */
		memset(&out[0], 0, sizeof(out[0]));
		out[0].start_us = esc.earlier_end_us;
		out[0].end_us = esc.earlier_end_us;
		out[0].granted_s = (uint32_t) ((span + 999999) / 1000000);
		out[0].planned_end_us = esc.earlier_covered_us;
		out[0].flags = PGT_EXACT_WINDOW_EARLIER;
		snprintf(out[0].reason, sizeof(out[0].reason), "%s", "earlier");
		first = 1;
	}
	n = esc.nwin < max - first ? esc.nwin : max - first;
	for (i = 0; i < n; i++)
	{
		esc_party	opener = esc.win[esc.nwin - n + i].opener;
		struct pgt_exact_window_entry *o = &out[first + i];

		*o = esc.win[esc.nwin - n + i].e;
		if (!same_party(opener, helper_party) && !same_party(opener, party))
		{
			snprintf(o->who, sizeof(o->who), "%s", "");
			snprintf(o->reason, sizeof(o->reason), "%s", "other cluster");
		}
	}
	return first + n;
}

void
escalation_reset(void)
{
	esc.nwin = 0;
	esc.nclaims = 0;
	esc.nclusters = 1;
	esc.earlier_start_us = esc.earlier_end_us = esc.earlier_covered_us = 0;
	esc.open = 0;
	esc.on = 0;
	esc.kernel_on = 0;
	clock_real_us = clock_boot_us = 0;
}
