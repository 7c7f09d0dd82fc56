/*
 * test/unit/test_escalation.c
 *	  Tiers and escalation windows (helper/escalation.c): option parsing,
 *	  grants clamped to the budget of the rolling hour, re-planning an open
 *	  window (extended, never shortened), expiry and mid-window enforcement by escalation_tick, budget
 *	  freed as windows leave the hour, idempotent DEESCALATE, denials
 *	  (exhausted, disabled, sampled mode, set not running), argument
 *	  checks, full mode, the switch calls, the windows table, the held
 *	  kernel sets as a second listener; two clusters: one cannot close or
 *	  shorten the other's window, sees it without who and why, and resets
 *	  only its own counters; the owners stay with their windows when old
 *	  windows leave the hour; a socket whose cluster is not attached cannot
 *	  open or close a window; a late tick charges only what was granted;
 *	  windows that leave the list stay as one span with what they covered;
 *	  at most 64 windows an hour; a reason named "full" is charged; with
 *	  two clusters each claims at most its share of the budget and of the
 *	  windows (its data directory's: a restarted postmaster brings no new
 *	  share, and sees its windows as its own), and a window lasts while
 *	  one's claim does; the kept times
 *	  move with the wall clock when it is set.
 */
#include "escalation.h"
#include "unit.h"

#include <stdlib.h>

#define S	INT64_C(1000000)
#define T0	(INT64_C(1800000000) * S)	/* some wall-clock time */

static int	sw_on;
static int	sw_calls;
static uint32_t ask_pm = 7;		/* the postmaster of the asking cluster */
static uint64_t ask_dev;		/* its data directory's st_dev; 0: 1000 + ask_pm */
static uint32_t reset_pm;		/* what fake_reset was last asked to empty */

static void
fake_reset(uint32_t pm)
{
	reset_pm = pm;
}

static int
fake_switch(int on)
{
	sw_on = on;
	sw_calls++;
	return 0;
}

/* an exact set whose programs cannot be attached */
static int
failing_switch(int on)
{
	sw_calls++;
	return on ? -1 : 0;
}

/* The data directory of the cluster whose postmaster is pm (unless ask_dev). */
static esc_party
party_of(uint32_t pm)
{
	return (esc_party) {ask_dev ? ask_dev : 1000 + pm, 1};
}

/* escalation_respond on a request line without tag. */
static const char *
ask(int64_t now, const char *verb, int nargs, const char *a0, const char *a1,
	const char *a2)
{
	static char out[PGT_PROTO_MAX_RESPONSE];
	pgt_request r;

	memset(&r, 0, sizeof(r));
	snprintf(r.verb, sizeof(r.verb), "%s", verb);
	r.nargs = nargs;
	if (a0)
		snprintf(r.args[0], sizeof(r.args[0]), "%s", a0);
	if (a1)
		snprintf(r.args[1], sizeof(r.args[1]), "%s", a1);
	if (a2)
		snprintf(r.args[2], sizeof(r.args[2]), "%s", a2);
	if (escalation_respond(&r, ask_pm, party_of(ask_pm), now, out, sizeof(out)) < 0)
		return "(not ours)";
	return out;
}

static void
test_options(void)
{
	char		err[256];

	CHECK(escalation_configure_mode("full", err, sizeof(err)) == 0);
	CHECK(escalation_mode() == ESC_MODE_FULL);
	CHECK(escalation_configure_mode("fast", err, sizeof(err)) < 0);
	CHECK(strstr(err, "tiered, sampled or full") != NULL, "%s", err);
	CHECK(escalation_configure_mode("tiered", err, sizeof(err)) == 0);
	CHECK(escalation_configure_budget("unlimited", err, sizeof(err)) == 0);
	CHECK(escalation_budget() == ESC_BUDGET_UNLIMITED);
	CHECK(escalation_configure_budget("3601", err, sizeof(err)) < 0);
	CHECK(escalation_configure_budget("-1", err, sizeof(err)) < 0);
	CHECK(escalation_configure_budget("12x", err, sizeof(err)) < 0);
	CHECK(escalation_configure_budget("", err, sizeof(err)) < 0);
	CHECK(escalation_configure_budget("0", err, sizeof(err)) == 0);
	CHECK(escalation_budget() == 0);
	CHECK(escalation_configure_budget("300", err, sizeof(err)) == 0);
}

static void
test_not_running(void)
{
	escalation_reset();
	escalation_attach(NULL, "tp_btf: EPERM");
	CHECK_STR(ask(T0, "ESCALATE", 2, "10", "alice", NULL),
			  "ERR unavailable exact timing is not running: tp_btf: EPERM");
	CHECK_STR(ask(T0, "PING", 0, NULL, NULL, NULL), "(not ours)");
}

/*
 * A cluster that detaches from its postmaster: its claims end (nobody
 * could end them otherwise), others' stay; the exact set drops the gone
 * postmaster's rows.
 */
static void
test_party_gone(void)
{
	escalation_reset();
	escalation_attach(fake_switch, NULL);
	escalation_set_reset(fake_reset);
	ask_pm = 7;
	CHECK_STR(ask(T0, "ESCALATE", 2, "100", "alice", NULL),
			  "OK granted=100 remaining=200 budget=300 mode=tiered");
	ask_pm = 8;
	CHECK(strncmp(ask(T0 + S, "ESCALATE", 2, "30", "bob", NULL), "OK granted=30 ", 14) == 0);
	reset_pm = 0;
	escalation_party_gone(party_of(8), 8, T0 + 2 * S);
	CHECK(reset_pm == 8, "the gone postmaster's rows dropped: %u", reset_pm);
	CHECK(escalation_active(), "cluster 7's claim keeps the window open");
	escalation_party_gone(party_of(7), 7, T0 + 3 * S);
	CHECK(!escalation_active() && sw_on == 0, "with the last claim the window closes");
	CHECK_STR(ask(T0 + 4 * S, "BUDGET", 0, NULL, NULL, NULL),
			  "OK mode=tiered budget=300 used=3 remaining=297 active=0 until=0");
	ask_pm = 7;
	escalation_set_reset(NULL);
	escalation_detach();
}

static void
test_budget(void)
{
	struct pgt_exact_window_entry w[ESC_MAX_PUBLISHED];
	size_t		n;

	escalation_reset();
	sw_calls = 0;
	escalation_attach(fake_switch, NULL);
	CHECK(sw_calls == 0, "tiered mode starts off");

	/* arguments */
	CHECK_STR(ask(T0, "ESCALATE", 1, "10", NULL, NULL),
			  "ERR bad-argument usage: ESCALATE <seconds> <who> [reason]");
	CHECK_STR(ask(T0, "ESCALATE", 2, "0", "alice", NULL), "ERR bad-argument seconds must be 1..86400");
	CHECK_STR(ask(T0, "ESCALATE", 2, "86401", "alice", NULL), "ERR bad-argument seconds must be 1..86400");
	CHECK_STR(ask(T0, "ESCALATE", 2, "1e3", "alice", NULL), "ERR bad-argument seconds must be 1..86400");
	CHECK_STR(ask(T0, "ESCALATE", 2, "10", "al/ice", NULL),
			  "ERR bad-argument who and reason: letters, digits, _.-@");
	CHECK(sw_calls == 0, "refusals switch nothing on");

	/* 100 s of 300 */
	CHECK_STR(ask(T0, "ESCALATE", 2, "100", "alice", NULL),
			  "OK granted=100 remaining=200 budget=300 mode=tiered");
	CHECK(sw_on == 1 && sw_calls == 1);
	CHECK(escalation_active());
	/*
	 * 30 s later bob asks for 50 s: granted, but the window keeps alice's
	 * later end (a re-plan never shortens), so 70 s of the 270 left are
	 * planned; a longer request extends it.
	 */
	CHECK_STR(ask(T0 + 30 * S, "ESCALATE", 2, "50", "bob", NULL),
			  "OK granted=50 remaining=200 budget=300 mode=tiered");
	CHECK_STR(ask(T0 + 30 * S, "BUDGET", 0, NULL, NULL, NULL),
			  "OK mode=tiered budget=300 used=30 remaining=200 active=1 until=1800000100000000");
	escalation_tick(T0 + 80 * S);
	CHECK(escalation_active(), "a shorter request left the granted end alone");
	CHECK_STR(ask(T0 + 60 * S, "ESCALATE", 2, "50", "bob", NULL),
			  "OK granted=50 remaining=190 budget=300 mode=tiered");
	escalation_tick(T0 + 109 * S);
	CHECK(escalation_active(), "still open before the extended end");
	CHECK_STR(ask(T0 + 80 * S, "DEESCALATE", 1, "bob", NULL, NULL),
			  "OK closed=1 remaining=220 budget=300 mode=tiered");
	CHECK(!escalation_active() && sw_on == 0, "DEESCALATE ends it early");
	CHECK_STR(ask(T0 + 81 * S, "BUDGET", 0, NULL, NULL, NULL),
			  "OK mode=tiered budget=300 used=80 remaining=220 active=0 until=0");

	/* idempotent deescalate */
	CHECK_STR(ask(T0 + 82 * S, "DEESCALATE", 1, "alice", NULL, NULL),
			  "OK closed=0 remaining=220 budget=300 mode=tiered");

	/* a request larger than what is left is clamped, then enforced */
	CHECK_STR(ask(T0 + 100 * S, "ESCALATE", 3, "3600", "carol", "anomaly-lock"),
			  "OK granted=220 remaining=0 budget=300 mode=tiered");
	CHECK_STR(ask(T0 + 101 * S, "ESCALATE", 2, "10", "dave", NULL),
			  "OK granted=10 remaining=0 budget=300 mode=tiered");
	CHECK_STR(ask(T0 + 105 * S, "DEESCALATE", 1, "dave", NULL, NULL),
			  "OK closed=1 remaining=215 budget=300 mode=tiered");
	CHECK_STR(ask(T0 + 106 * S, "DEESCALATE", 1, "dave", NULL, NULL),
			  "OK closed=0 remaining=215 budget=300 mode=tiered");
	CHECK_STR(ask(T0 + 200 * S, "ESCALATE", 2, "3600", "erin", NULL),
			  "OK granted=215 remaining=0 budget=300 mode=tiered");
	escalation_tick(T0 + 300 * S);
	CHECK(escalation_active());
	escalation_tick(T0 + 415 * S);
	CHECK(!escalation_active(), "budget spent: closed mid-way through the request");
	CHECK_STR(ask(T0 + 420 * S, "ESCALATE", 2, "10", "alice", NULL),
			  "ERR denied budget exhausted remaining=0 budget=300");

	/* the rolling hour frees the first window's 80 s */
	CHECK_STR(ask(T0 + 3600 * S + 80 * S, "BUDGET", 0, NULL, NULL, NULL),
			  "OK mode=tiered budget=300 used=220 remaining=80 active=0 until=0");

	n = escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7));
	CHECK(n == 3, "windows kept: %zu", n);
	CHECK_STR(w[0].who, "alice");
	CHECK_STR(w[0].end_reason, "deescalated");
	CHECK_STR(w[1].reason, "anomaly-lock");
	CHECK_STR(w[1].end_reason, "deescalated");
	CHECK(w[2].end_us == T0 + 415 * S);
	/* a window that ended over an hour ago is dropped */
	escalation_tick(T0 + 3600 * S + 81 * S);
	n = escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7));
	CHECK(n == 3, "after the hour: the two of the hour and the earlier span: %zu", n);
	/* ... which keeps what it covered (the exact counters still hold it) */
	CHECK(w[0].flags == PGT_EXACT_WINDOW_EARLIER && w[0].start_us == w[0].end_us &&
		  w[0].end_us == T0 + 80 * S && w[0].granted_s == 80 && w[0].planned_end_us == 80 * S,
		  "earlier: flags %u, span %u s to %lld, covered %lld", w[0].flags, w[0].granted_s,
		  (long long) (w[0].end_us - T0), (long long) w[0].planned_end_us);
	CHECK(w[1].flags == 0 && strcmp(w[1].reason, "anomaly-lock") == 0);
	escalation_tick(T0 + 3600 * S + 416 * S);
	n = escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7));
	CHECK(n == 1 && w[0].granted_s == 415 && w[0].end_us == T0 + 415 * S &&
		  w[0].planned_end_us == 300 * S, "all three in the span: %zu, covered %lld", n,
		  (long long) w[0].planned_end_us);
	escalation_detach();
}

static void
test_clusters(void)
{
	struct pgt_exact_window_entry w[ESC_MAX_PUBLISHED];
	char		err[256];
	size_t		n;

	escalation_reset();
	CHECK(escalation_configure_budget("300", err, sizeof(err)) == 0);
	escalation_attach(fake_switch, NULL);
	escalation_set_reset(fake_reset);
	ask_pm = 7;
	CHECK_STR(ask(T0, "ESCALATE", 3, "60", "alice", "slow-checkout"),
			  "OK granted=60 remaining=240 budget=300 mode=tiered");
	ask_pm = 8;
	CHECK_STR(ask(T0 + 5 * S, "DEESCALATE", 1, "bob", NULL, NULL),
			  "OK closed=0 remaining=295 budget=300 mode=tiered");
	CHECK(escalation_active(), "another cluster cannot close the window");
	(void) ask(T0 + 6 * S, "ESCALATE", 2, "1", "bob", NULL);
	escalation_tick(T0 + 30 * S);
	CHECK(escalation_active(), "nor shorten it");
	n = escalation_windows(w, ESC_MAX_PUBLISHED, party_of(8));
	CHECK(n == 1, "%zu", n);
	CHECK_STR(w[0].who, "");
	CHECK_STR(w[0].reason, "other cluster");
	n = escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7));
	CHECK_STR(w[0].who, "alice");
	CHECK_STR(w[0].reason, "slow-checkout");
	CHECK_STR(ask(T0 + 31 * S, "EXACTRESET", 0, NULL, NULL, NULL), "OK reset=1");
	CHECK(reset_pm == 8, "EXACTRESET empties the asking cluster's counters: %u", reset_pm);
	ask_pm = 0;					/* a socket whose cluster is not attached */
	reset_pm = 0;
	CHECK_STR(ask(T0 + 32 * S, "EXACTRESET", 0, NULL, NULL, NULL), "OK reset=0");
	CHECK(reset_pm == 0);
	ask_pm = 7;
	CHECK_STR(ask(T0 + 40 * S, "DEESCALATE", 1, "alice", NULL, NULL),
			  "OK closed=1 remaining=260 budget=300 mode=tiered");
	escalation_set_reset(NULL);
	escalation_detach();
}

static void
test_modes(void)
{
	char		err[256];

	/* budget 0: escalation disabled */
	escalation_reset();
	CHECK(escalation_configure_budget("0", err, sizeof(err)) == 0);
	escalation_attach(fake_switch, NULL);
	CHECK_STR(ask(T0, "ESCALATE", 2, "10", "alice", NULL),
			  "ERR denied budget disabled (--exact-budget 0) remaining=0 budget=0");
	escalation_detach();

	/* unlimited */
	escalation_reset();
	CHECK(escalation_configure_budget("unlimited", err, sizeof(err)) == 0);
	escalation_attach(fake_switch, NULL);
	CHECK_STR(ask(T0, "ESCALATE", 2, "7200", "alice", NULL),
			  "OK granted=7200 remaining=-1 budget=-1 mode=tiered");
	escalation_detach();
	CHECK(!escalation_active() && sw_on == 0, "detach closes the window");

	/* sampled: never exact */
	escalation_reset();
	CHECK(escalation_configure_mode("sampled", err, sizeof(err)) == 0);
	escalation_attach(fake_switch, NULL);
	CHECK_STR(ask(T0, "ESCALATE", 2, "10", "alice", NULL),
			  "ERR unavailable helper runs with --mode sampled: exact timing is off");
	escalation_detach();

	/* full: on from the start, no budget, deescalate closes nothing */
	escalation_reset();
	sw_on = 0;
	CHECK(escalation_configure_mode("full", err, sizeof(err)) == 0);
	CHECK(escalation_configure_budget("300", err, sizeof(err)) == 0);
	escalation_attach(fake_switch, NULL);
	CHECK(sw_on == 1 && escalation_active(), "full mode: on at attach");
	CHECK_STR(ask(T0, "ESCALATE", 2, "10", "alice", NULL),
			  "OK granted=10 remaining=-1 budget=300 mode=full");
	CHECK_STR(ask(T0, "DEESCALATE", 1, "alice", NULL, NULL),
			  "OK closed=0 remaining=300 budget=300 mode=full");
	CHECK(sw_on == 1, "still on");
	escalation_detach();
	CHECK(sw_on == 0);
	CHECK(escalation_configure_mode("tiered", err, sizeof(err)) == 0);
}

static void
test_anomaly(void)
{
	char		err[256];
	int64_t		t = T0;
	int			i;

	escalation_reset();
	CHECK(escalation_configure_budget("300", err, sizeof(err)) == 0);
	CHECK(escalation_configure_cooldown("100", err, sizeof(err)) == 0);
	CHECK(escalation_configure_cooldown("0", err, sizeof(err)) < 0);
	CHECK(escalation_configure_anomaly("maybe", err, sizeof(err)) < 0);
	CHECK_STR(err, "maybe: use on or off");
	escalation_attach(fake_switch, NULL);
	/* a calm minute: baseline ~1 */
	for (i = 0; i < 60; i++, t += S)
		CHECK(escalation_anomaly_sample(t, 1, 0) == NULL);
	CHECK(escalation_anomaly_baseline() > 0.9 && escalation_anomaly_baseline() < 1.1);
	/* 3 active is under the floor of 4 */
	CHECK(escalation_anomaly_sample(t, 3, 0) == NULL);
	t += S;
	/* a lock pile-up: 3 of 4 active wait on locks */
	CHECK_STR(escalation_anomaly_sample(t, 4, 3), "anomaly-active");
	CHECK(escalation_active());
	CHECK(escalation_anomaly_baseline() < 1.1, "frozen during the anomaly");
	CHECK_STR(ask(t, "DEESCALATE", 1, "alice", NULL, NULL),
			  "OK closed=1 remaining=300 budget=300 mode=tiered");
	/* cooldown: the next pile-up opens nothing for 100 s */
	t += 10 * S;
	CHECK(escalation_anomaly_sample(t, 3, 3) == NULL);
	CHECK(!escalation_active());
	t += 95 * S;
	CHECK_STR(escalation_anomaly_sample(t, 3, 3), "anomaly-lock");
	CHECK(escalation_active());
	escalation_detach();

	/*
	 * A lasting rise in load (1 active, then 8 for good): the baseline
	 * follows slowly while the rule holds, so the rule stops firing within
	 * some minutes; and the rules' windows never take more than half the
	 * budget in the hour.
	 */
	escalation_reset();
	escalation_attach(fake_switch, NULL);
	t += 4000 * S;
	{
		int			fired = 0;
		int			last_fire = -1;

		for (i = 0; i < 60; i++, t += S)
			(void) escalation_anomaly_sample(t, 1, 0);
		for (i = 0; i < 3600; i++, t += S)
		{
			const char *r;

			escalation_tick(t);
			r = escalation_anomaly_sample(t, 8, 0);
			if (r != NULL)
			{
				fired++;
				last_fire = i;
			}
		}
		CHECK(fired >= 1 && fired <= 3, "windows opened by the lasting rise: %d", fired);
		CHECK(last_fire < 1200, "the rule quiet within 20 minutes: last at %d s", last_fire);
		CHECK(escalation_anomaly_baseline() > 7.0, "the rise became the baseline: %.2f",
			  escalation_anomaly_baseline());
	}
	/* the cap: after 150 s of the rules' windows, a third is refused */
	escalation_reset();
	escalation_attach(fake_switch, NULL);
	t += 4000 * S;
	CHECK(escalation_auto(t, 60, "cap-1") == 0);
	escalation_tick(t + 61 * S);
	CHECK(escalation_auto(t + 62 * S, 60, "cap-2") == 0);
	escalation_tick(t + 123 * S);
	CHECK(escalation_auto(t + 124 * S, 60, "cap-3") == 0, "30 s left of the 150");
	escalation_tick(t + 185 * S);
	CHECK(escalation_auto(t + 186 * S, 60, "cap-4") == -1, "the rules' half is spent");
	CHECK(strncmp(ask(t + 187 * S, "ESCALATE", 2, "100", "alice", NULL), "OK granted=100 ", 15) == 0,
		  "people still get the rest");
	escalation_detach();

	/* off: nothing opens */
	escalation_reset();
	CHECK(escalation_configure_anomaly("off", err, sizeof(err)) == 0);
	escalation_attach(fake_switch, NULL);
	t += 1000 * S;
	CHECK(escalation_anomaly_sample(t, 50, 40) == NULL && !escalation_active());
	escalation_detach();
	CHECK(escalation_configure_anomaly("on", err, sizeof(err)) == 0);
}

/* owners move with their windows; late ticks; unattached sockets */
static void
test_owners_and_late_ticks(void)
{
	struct pgt_exact_window_entry w[ESC_MAX_PUBLISHED];
	char		err[256];
	int64_t		t1 = T0 + 3600 * S + 30 * S;
	size_t		n;

	escalation_reset();
	CHECK(escalation_configure_budget("300", err, sizeof(err)) == 0);
	escalation_attach(fake_switch, NULL);
	ask_pm = 7;
	CHECK(strncmp(ask(T0, "ESCALATE", 3, "60", "alice", "a-reason"), "OK granted=60 ", 14) == 0);
	/* nobody ticks until two minutes later: the window ended at 60 s */
	escalation_tick(T0 + 120 * S);
	CHECK(!escalation_active());
	CHECK_STR(ask(T0 + 121 * S, "BUDGET", 0, NULL, NULL, NULL),
			  "OK mode=tiered budget=300 used=60 remaining=240 active=0 until=0");
	n = escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7));
	CHECK(n == 1 && w[0].end_us == T0 + 120 * S,
		  "timing went off at the tick, and the window says so: %lld",
		  (long long) (w[0].end_us - T0));
	CHECK_STR(w[0].end_reason, "expired");

	/* an hour later cluster 8 opens one; the tick drops cluster 7's */
	ask_pm = 8;
	CHECK(strncmp(ask(t1, "ESCALATE", 3, "300", "bob", "b-reason"), "OK granted=", 11) == 0);
	escalation_tick(t1 + 100 * S);	/* an hour after the tick that ended it */
	n = escalation_windows(w, ESC_MAX_PUBLISHED, party_of(8));
	CHECK(n == 2 && w[0].flags == PGT_EXACT_WINDOW_EARLIER,
		  "the old window left the hour, into the earlier span: %zu", n);
	CHECK_STR(w[1].who, "bob");
	n = escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7));
	CHECK_STR(w[1].reason, "other cluster");
	ask_pm = 7;
	CHECK(strncmp(ask(t1 + 101 * S, "DEESCALATE", 1, "alice", NULL, NULL), "OK closed=0 ", 12) == 0,
		  "cluster 7 cannot close cluster 8's window");
	ask_pm = 8;
	CHECK(strncmp(ask(t1 + 102 * S, "DEESCALATE", 1, "bob", NULL, NULL), "OK closed=1 ", 12) == 0,
		  "cluster 8 closes its own");

	/* a socket whose cluster is not attached */
	ask_pm = 0;
	CHECK_STR(ask(t1 + 110 * S, "ESCALATE", 2, "10", "eve", NULL),
			  "ERR unavailable the cluster is not attached");
	CHECK(strncmp(ask(t1 + 110 * S, "DEESCALATE", 1, "eve", NULL, NULL), "OK closed=0 ", 12) == 0,
		  "a cluster that is not attached has nothing to end: idempotent");
	CHECK(!escalation_active());
	CHECK(strncmp(ask(t1 + 110 * S, "BUDGET", 0, NULL, NULL, NULL), "OK ", 3) == 0);
	ask_pm = 7;
	escalation_detach();
}

/*
 * At most ESC_MAX_WINDOWS windows an hour; timing that cannot be switched
 * on opens none; a reason named "full" is charged.
 */
static void
test_window_limit(void)
{
	struct pgt_exact_window_entry w[ESC_MAX_PUBLISHED];
	char		err[256];
	int64_t		t = T0;
	int			i;

	escalation_reset();
	CHECK(escalation_configure_budget("300", err, sizeof(err)) == 0);
	escalation_attach(fake_switch, NULL);
	ask_pm = 7;
	for (i = 0; i < ESC_MAX_WINDOWS; i++, t += 10 * S)
	{
		CHECK(strncmp(ask(t, "ESCALATE", 2, "1", "alice", NULL), "OK granted=1 ", 13) == 0,
			  "window %d granted", i);
		escalation_tick(t + 2 * S);
	}
	/* 64 s of 300 used, but a 65th window in the hour would push one out */
	CHECK_STR(ask(t, "ESCALATE", 2, "1", "alice", NULL),
			  "ERR denied windows 64 in the last hour remaining=236 budget=300");
	/* an hour after the first ended, it leaves: one more may open */
	t = T0 + ESC_HOUR_US + 3 * S;
	CHECK(strncmp(ask(t, "ESCALATE", 2, "1", "alice", NULL), "OK granted=1 ", 13) == 0);
	escalation_detach();

	/*
	 * an unlimited budget has nothing to free: the 65th window opens, the
	 * oldest leaves the list (bench/toggle_ab.sh opens some 100 an hour)
	 */
	escalation_reset();
	CHECK(escalation_configure_budget("unlimited", err, sizeof(err)) == 0);
	escalation_attach(fake_switch, NULL);
	for (i = 0, t = T0; i < ESC_MAX_WINDOWS + 1; i++, t += 10 * S)
	{
		CHECK(strncmp(ask(t, "ESCALATE", 2, "1", "alice", NULL), "OK granted=1 ", 13) == 0,
			  "unlimited: window %d granted", i);
		escalation_tick(t + 2 * S);
	}
	CHECK(escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7)) >= ESC_MAX_WINDOWS,
		  "the latest windows listed");
	escalation_detach();
	CHECK(escalation_configure_budget("300", err, sizeof(err)) == 0);

	/* timing that cannot be switched on: no window, nothing charged */
	escalation_reset();
	escalation_attach(failing_switch, NULL);
	CHECK_STR(ask(T0, "ESCALATE", 2, "60", "alice", NULL),
			  "ERR unavailable exact timing could not be switched on (the helper's log says why)");
	CHECK(!escalation_active(), "no window open");
	CHECK_STR(ask(T0 + 30 * S, "BUDGET", 0, NULL, NULL, NULL),
			  "OK mode=tiered budget=300 used=0 remaining=300 active=0 until=0");
	CHECK(escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7)) == 1 && strcmp(w[0].end_reason, "failed") == 0 &&
		  w[0].end_us == w[0].start_us, "listed as failed, covering nothing");
	escalation_detach();

	escalation_reset();
	escalation_attach(fake_switch, NULL);
	CHECK(strncmp(ask(T0, "ESCALATE", 3, "100", "alice", "full"), "OK granted=100 ", 15) == 0);
	escalation_tick(T0 + 100 * S);
	CHECK_STR(ask(T0 + 101 * S, "BUDGET", 0, NULL, NULL, NULL),
			  "OK mode=tiered budget=300 used=100 remaining=200 active=0 until=0");
	escalation_detach();
}

/* ask as the cluster of postmaster pm */
static const char *
ask_as(uint32_t pm, int64_t now, const char *verb, const char *a0, const char *a1)
{
	ask_pm = pm;
	return ask(now, verb, a1 ? 2 : a0 ? 1 : 0, a0, a1, NULL);
}

/* A fresh state: budget 300, the exact set running, n clusters attached. */
static void
fresh_shared(int n)
{
	char		err[256];

	escalation_reset();
	CHECK(escalation_configure_budget("300", err, sizeof(err)) == 0);
	escalation_attach(fake_switch, NULL);
	escalation_set_clusters(n);
}

/*
 * Two clusters share the budget and the window list: each claims at most
 * half of the seconds and a third of the windows (the helper another
 * third); a cluster's DEESCALATE ends its own claims and the helper's, and
 * the window stays while another cluster's claim lasts.
 */
static void
test_shares(void)
{
	int64_t		t = T0;
	int			i;

	fresh_shared(2);
	CHECK_STR(ask_as(7, T0, "ESCALATE", "200", "alice"),
			  "OK granted=150 remaining=0 budget=300 mode=tiered");
	escalation_tick(T0 + 150 * S);
	CHECK(!escalation_active(), "cluster 7's claim ended at its share");
	CHECK_STR(ask_as(7, T0 + 160 * S, "ESCALATE", "10", "alice"),
			  "ERR denied budget share of 150 s used (2 clusters share the budget) "
			  "remaining=0 budget=300");
	CHECK_STR(ask_as(8, T0 + 160 * S, "BUDGET", NULL, NULL),
			  "OK mode=tiered budget=300 used=150 remaining=150 active=0 until=0");
	CHECK_STR(ask_as(8, T0 + 160 * S, "ESCALATE", "100", "bob"),
			  "OK granted=100 remaining=50 budget=300 mode=tiered");
	/* cluster 7 may not join it either; cluster 8 re-plans its own claim */
	CHECK(strncmp(ask_as(7, T0 + 170 * S, "ESCALATE", "5", "alice"),
				  "ERR denied budget share", 23) == 0);
	CHECK_STR(ask_as(8, T0 + 180 * S, "ESCALATE", "10", "bob"),
			  "OK granted=10 remaining=50 budget=300 mode=tiered");
	escalation_tick(T0 + 190 * S);
	CHECK(escalation_active(), "a shorter re-plan kept the end at 260 s");
	escalation_tick(T0 + 260 * S);
	CHECK(!escalation_active(), "closed at the granted end");
	escalation_detach();

	/* a joined window outlives its opener's DEESCALATE */
	fresh_shared(2);
	CHECK(strncmp(ask_as(7, T0, "ESCALATE", "60", "alice"), "OK granted=60 ", 14) == 0);
	CHECK(strncmp(ask_as(8, T0 + 10 * S, "ESCALATE", "120", "bob"), "OK granted=120 ", 15) == 0);
	CHECK(escalation_auto(T0 + 15 * S, 30, "test-anomaly") == 0);
	CHECK_STR(ask_as(7, T0 + 20 * S, "DEESCALATE", "alice", NULL),
			  "OK closed=0 remaining=130 budget=300 mode=tiered");
	CHECK(escalation_active(), "cluster 8's claim holds the window");
	CHECK_STR(ask_as(8, T0 + 30 * S, "DEESCALATE", "bob", NULL),
			  "OK closed=1 remaining=130 budget=300 mode=tiered");
	CHECK(!escalation_active(), "no claim left: closed");
	CHECK_STR(ask_as(7, T0 + 31 * S, "BUDGET", NULL, NULL),
			  "OK mode=tiered budget=300 used=30 remaining=130 active=0 until=0");
	escalation_detach();

	/* a third of the windows each: cluster 7 cannot lock cluster 8 out */
	fresh_shared(2);
	for (i = 0; i < ESC_MAX_WINDOWS / 3; i++, t += 10 * S)
	{
		CHECK(strncmp(ask_as(7, t, "ESCALATE", "1", "alice"), "OK granted=1 ", 13) == 0,
			  "window %d granted", i);
		escalation_tick(t + 2 * S);
	}
	CHECK_STR(ask_as(7, t, "ESCALATE", "1", "alice"),
			  "ERR denied windows 21 in the last hour for each of 2 clusters "
			  "remaining=129 budget=300");
	CHECK(strncmp(ask_as(8, t, "ESCALATE", "1", "bob"), "OK granted=1 ", 13) == 0,
		  "cluster 8 still has its windows");
	escalation_tick(t + 2 * S);
	CHECK(escalation_auto(t + 3 * S, 1, "test-anomaly") == 0, "and the helper its own");
	escalation_tick(t + 5 * S);
	/* an hour after cluster 7's first claim ended it may claim again */
	CHECK(strncmp(ask_as(7, T0 + ESC_HOUR_US + 2 * S, "ESCALATE", "1", "alice"),
				  "OK granted=1 ", 13) == 0);
	/* one cluster again: the whole budget and the 64 windows are its */
	escalation_set_clusters(1);
	CHECK(strncmp(ask_as(7, T0 + ESC_HOUR_US + 3 * S, "ESCALATE", "200", "alice"),
				  "OK granted=200 ", 15) == 0);
	escalation_detach();

	/*
	 * the share is the data directory's: a restarted postmaster (pid 17 now)
	 * has none left
	 */
	fresh_shared(2);
	CHECK(strncmp(ask_as(7, T0, "ESCALATE", "150", "alice"), "OK granted=150 ", 15) == 0);
	escalation_tick(T0 + 150 * S);
	ask_dev = 1007;
	CHECK(strncmp(ask_as(17, T0 + 200 * S, "ESCALATE", "10", "alice"),
				  "ERR denied budget share", 23) == 0, "a restart brings no new share");
	{
		struct pgt_exact_window_entry w[ESC_MAX_PUBLISHED];

		CHECK(escalation_windows(w, ESC_MAX_PUBLISHED, party_of(17)) == 1);
		CHECK_STR(w[0].who, "alice");	/* its window still shows as its own */
	}
	ask_dev = 0;
	escalation_detach();

	/*
	 * requests inside a window another holds open: one claim a window,
	 * the time between its end and the next request not charged
	 */
	fresh_shared(2);
	CHECK(strncmp(ask_as(8, T0, "ESCALATE", "1000", "bob"), "OK granted=150 ", 15) == 0);
	for (i = 0; i < 30; i++)
		CHECK(strncmp(ask_as(7, T0 + (1 + 4 * i) * S, "ESCALATE", "1", "alice"),
					  "OK granted=1 ", 13) == 0, "request %d inside b's window", i);
	CHECK_STR(ask_as(7, T0 + 130 * S, "BUDGET", NULL, NULL),
			  "OK mode=tiered budget=300 used=130 remaining=120 active=1 "
			  "until=1800000150000000");
	escalation_detach();
	ask_pm = 7;
}

static int	ksw_on = -1;
static int	ksw_calls;

static int
fake_kernel_switch(int on)
{
	ksw_on = on;
	ksw_calls++;
	return 0;
}

/* --kernel-sets escalated: the held kernel sets as the second listener */
static void
test_kernel_sets(void)
{
	char		err[256];

	escalation_reset();
	CHECK(escalation_configure_budget("300", err, sizeof(err)) == 0);
	escalation_attach(NULL, "tp_btf: EPERM");	/* no exact timing */
	ksw_calls = 0;
	escalation_attach_kernel(fake_kernel_switch);
	CHECK(ksw_calls == 1 && ksw_on == 0, "held at attach: %d calls, on %d", ksw_calls, ksw_on);
	CHECK_STR(ask(T0, "ESCALATE", 2, "10", "alice", NULL),
			  "OK granted=10 remaining=290 budget=300 mode=tiered");
	CHECK(ksw_calls == 2 && ksw_on == 1, "a window lets them run");
	CHECK(strncmp(ask(T0 + S, "ESCALATE", 2, "20", "alice", NULL), "OK granted=20 ", 14) == 0);
	CHECK(ksw_calls == 2, "extending the window switches nothing");
	{
		struct pgt_exact_window_entry w[ESC_MAX_PUBLISHED];

		/* the kernel sets' window timed no wait exactly: no exact coverage */
		CHECK(escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7)) == 1);
		CHECK(w[0].flags & PGT_EXACT_WINDOW_NO_EXACT, "flags %u", w[0].flags);
		CHECK(pgt_window_covered(&w[0], T0 - S, T0 + 5 * S, T0 + 5 * S) == 0);
	}
	escalation_tick(T0 + 30 * S);
	CHECK(!escalation_active() && ksw_on == 0 && ksw_calls == 3, "held again at expiry");
	/* charged until the planned end (21 s), not until the tick */
	CHECK_STR(ask(T0 + 31 * S, "DEESCALATE", 1, "alice", NULL, NULL),
			  "OK closed=0 remaining=279 budget=300 mode=tiered");
	CHECK(ksw_calls == 3, "closing no window switches nothing");
	escalation_detach_kernel();
	CHECK_STR(ask(T0 + 32 * S, "ESCALATE", 2, "10", "alice", NULL),
			  "ERR unavailable exact timing is not running: tp_btf: EPERM");
	CHECK(ksw_calls == 3, "detached: told nothing");

	/* both listeners are told together */
	escalation_reset();
	sw_on = 0;
	escalation_attach(fake_switch, NULL);
	escalation_attach_kernel(fake_kernel_switch);
	CHECK(strncmp(ask(T0, "ESCALATE", 2, "5", "alice", NULL), "OK ", 3) == 0);
	CHECK(sw_on == 1 && ksw_on == 1);
	CHECK(strncmp(ask(T0 + S, "DEESCALATE", 1, "alice", NULL, NULL), "OK closed=1 ", 12) == 0);
	CHECK(sw_on == 0 && ksw_on == 0);
	escalation_detach_kernel();
	escalation_detach();

	/*
	 * exact timing fails to switch on, the kernel sets run: the window is
	 * granted for them, but counts as no exact coverage (before, it was
	 * counted, and fidelity read "exact" over untimed waits)
	 */
	escalation_reset();
	escalation_attach(failing_switch, NULL);
	escalation_attach_kernel(fake_kernel_switch);
	CHECK(strncmp(ask(T0, "ESCALATE", 2, "5", "alice", NULL), "OK granted=5 ", 13) == 0);
	CHECK(ksw_on == 1 && escalation_active());
	{
		struct pgt_exact_window_entry w[ESC_MAX_PUBLISHED];

		CHECK(escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7)) == 1);
		CHECK(w[0].flags & PGT_EXACT_WINDOW_NO_EXACT, "flags %u", w[0].flags);
		CHECK(pgt_window_covered(&w[0], T0, T0 + 2 * S, T0 + 2 * S) == 0);
	}
	escalation_detach_kernel();
	escalation_detach();
	escalation_reset();
	escalation_attach(fake_switch, NULL);
	CHECK(strncmp(ask(T0, "ESCALATE", 2, "5", "alice", NULL), "OK granted=5 ", 13) == 0);
	{
		struct pgt_exact_window_entry w[ESC_MAX_PUBLISHED];

		CHECK(escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7)) == 1);
		CHECK(w[0].flags == 0 && pgt_window_covered(&w[0], T0, T0 + 2 * S, T0 + 2 * S) == 2 * S,
			  "an exact window covers its time");
	}
	escalation_detach();

	/* full mode: they run from the start */
	escalation_reset();
	CHECK(escalation_configure_mode("full", err, sizeof(err)) == 0);
	escalation_attach(NULL, "tp_btf: EPERM");
	escalation_attach_kernel(fake_kernel_switch);
	CHECK(ksw_on == 1 && escalation_active(), "full mode: running at attach");
	escalation_detach_kernel();
	escalation_detach();
	CHECK(escalation_configure_mode("tiered", err, sizeof(err)) == 0);
}

/*
 * The wall clock set back an hour, then forward, while a window is open:
 * the window keeps its 60 s, the budget its charge, and the rules their
 * cooldown; drift below a second moves nothing.  Before, a clock set back
 * left the window open for an hour more, and one set forward closed it at
 * once with an hour charged to its length.
 */
static void
test_clock_steps(void)
{
	struct pgt_exact_window_entry w[ESC_MAX_PUBLISHED];
	const int64_t B0 = 1000 * S;	/* CLOCK_BOOTTIME at the start */
	const int64_t H = 3600 * S;
	size_t		n;

	escalation_reset();
	escalation_attach(fake_switch, NULL);
	CHECK(escalation_clock_check(T0, B0) == 0, "the first reading is no step");
	CHECK_STR(ask(T0, "ESCALATE", 2, "60", "alice", NULL),
			  "OK granted=60 remaining=240 budget=300 mode=tiered");
	/* 0.4 s of drift in 10 s: no step */
	CHECK(escalation_clock_check(T0 + 10 * S + 400000, B0 + 10 * S) == 0, "drift");
	/* set back an hour, 20 s in */
	CHECK(escalation_clock_check(T0 + 20 * S + 400000 - H, B0 + 20 * S) == -H, "back");
	escalation_tick(T0 + 59 * S - H);
	CHECK(escalation_active(), "still open 59 s in");
	escalation_tick(T0 + 61 * S - H);
	CHECK(!escalation_active(), "closed 60 s in, by the clock set back");
	CHECK_STR(ask(T0 + 62 * S - H, "BUDGET", 0, NULL, NULL, NULL),
			  "OK mode=tiered budget=300 used=60 remaining=240 active=0 until=0");
	n = escalation_windows(w, ESC_MAX_PUBLISHED, party_of(7));
	/* open from T0, moved an hour back; closed by the tick 61 s in */
	CHECK(n == 1 && w[0].start_us == T0 - H && w[0].end_us == T0 + 61 * S - H,
		  "the window moved with the clock: %zu, %lld s long", n,
		  (long long) ((w[0].end_us - w[0].start_us) / S));

	/* a second window, then the clock set forward an hour, 10 s in */
	CHECK(escalation_clock_check(T0 + 100 * S - H, B0 + 100 * S + 400000) == 0, "");
	CHECK_STR(ask(T0 + 100 * S - H, "ESCALATE", 2, "30", "bob", NULL),
			  "OK granted=30 remaining=210 budget=300 mode=tiered");
	CHECK(escalation_clock_check(T0 + 110 * S, B0 + 110 * S + 400000) == H, "forward");
	escalation_tick(T0 + 111 * S);
	CHECK(escalation_active(), "still open 11 s in, after the clock went forward");
	escalation_tick(T0 + 131 * S);
	CHECK(!escalation_active(), "closed 31 s in");
	CHECK_STR(ask(T0 + 132 * S, "BUDGET", 0, NULL, NULL, NULL),
			  "OK mode=tiered budget=300 used=90 remaining=210 active=0 until=0");
	escalation_detach();
}

/*
 * A DEESCALATE from a detached socket (no postmaster attached: its caller
 * may be no process of the cluster) ends no anomaly window of the helper's;
 * an attached cluster's does, as before.
 */
static void
test_detached_deescalate(void)
{
	uint32_t	saved = ask_pm;

	escalation_reset();
	escalation_attach(fake_switch, NULL);
	CHECK(escalation_auto(T0, 30, "test-anomaly") == 0);
	ask_pm = 0;
	CHECK(strncmp(ask(T0 + S, "DEESCALATE", 1, "alice", NULL, NULL), "OK closed=0 ", 12) == 0);
	CHECK(escalation_active(), "the helper's window is still open");
	ask_pm = saved;
	CHECK(strncmp(ask(T0 + 2 * S, "DEESCALATE", 1, "alice", NULL, NULL), "OK closed=1 ", 12) == 0);
	CHECK(!escalation_active());
	escalation_detach();
}

int
main(void)
{
	test_options();
	test_not_running();
	test_budget();
	test_party_gone();
	test_modes();
	test_clusters();
	test_owners_and_late_ticks();
	test_window_limit();
	test_shares();
	test_clock_steps();
	test_anomaly();
	test_kernel_sets();
	test_detached_deescalate();
	UNIT_MAIN_END("test_escalation");
}
