/*
 * helper/escalation.h
 *	  Tiers and escalation windows of exact wait timing (and of the kernel
 *	  sets with --kernel-sets escalated): the --mode
 *	  (tiered, sampled, full), the budget of exact seconds per rolling hour,
 *	  the windows of the last hour, and the control verbs ESCALATE,
 *	  DEESCALATE and BUDGET (common/pgt_protocol.h).
 *
 * One state per helper process (the exact set's BPF switch is global to
 * the helper); single-threaded (the daemon's loop).
 */
#ifndef PGT_HELPER_ESCALATION_H
#define PGT_HELPER_ESCALATION_H

#include <stddef.h>
#include <stdint.h>

#include "pgt_protocol.h"
#include "pgt_segment.h"

#define ESC_MODE_TIERED		0	/* sampled always, exact during windows */
#define ESC_MODE_SAMPLED	1	/* never exact */
#define ESC_MODE_FULL		2	/* exact always */

#define ESC_BUDGET_UNLIMITED	(-1)
#define ESC_DEFAULT_BUDGET_S	300
#define ESC_MAX_BUDGET_S		3600	/* a rolling hour cannot hold more */
#define ESC_MAX_REQUEST_S		86400	/* longest window one request may ask */
#define ESC_HOUR_US				(INT64_C(3600) * 1000000)
#define ESC_MAX_WINDOWS			64	/* kept: at most this many opened per hour */
#define ESC_MAX_PUBLISHED		(ESC_MAX_WINDOWS + 1)	/* and the earlier ones' span */
#define ESC_MAX_CLAIMS			(2 * ESC_MAX_WINDOWS)	/* clusters' and the helper's */

/*
 * Turns exact timing (or the held kernel sets) on (1) or off (0); -1 when
 * it could not be switched on.
 */
typedef int (*esc_switch_fn) (int on);
typedef void (*esc_reset_fn) (uint32_t postmaster);

/* EXACTRESET: the exact set empties one cluster's counters (pg_tracer_reset()). */
extern void escalation_set_reset(esc_reset_fn fn);

extern int	escalation_configure_mode(const char *s, char *err, size_t errlen);
extern int	escalation_configure_budget(const char *s, char *err, size_t errlen);
extern int	escalation_mode(void);
extern const char *escalation_mode_name(void);
extern int	escalation_budget(void);

extern void escalation_attach(esc_switch_fn fn, const char *unavailable_reason);
extern void escalation_detach(void);
extern void escalation_attach_kernel(esc_switch_fn fn);
extern void escalation_detach_kernel(void);
extern void escalation_tick(int64_t now_us);
/* n clusters are attached: with two or more, each has a share (escalation.c) */
extern void escalation_set_clusters(int n);

/*
 * The wall clock (microseconds since the epoch) for every time the windows,
 * the budget and the anomaly cooldown keep, in place of reading it
 * directly: each call compares how far the wall clock moved since the last
 * call with how far CLOCK_BOOTTIME did, and when the two differ by
 * ESC_CLOCK_STEP_US or more (the clock was set: an NTP step, a VM's clock
 * resynchronised) moves every kept time by the step (escalation_clock_step).
 * A window then keeps its length, the rolling hour its hour and the
 * cooldown its seconds, and the published times stay in the clock the
 * server now reads.  Slewing (at most 0.5 ms a second) is no step.
 */
#define ESC_CLOCK_STEP_US	INT64_C(1000000)
extern int64_t escalation_now_us(void);
/* The same from given readings (tests); returns the step applied, or 0. */
extern int64_t escalation_clock_check(int64_t real_us, int64_t boot_us);
extern int	escalation_active(void);
extern int	escalation_used_s(int64_t now_us);

/*
 * A cluster as its claims and share know it: its data directory, which
 * stays when its postmaster restarts (a new pid must not bring a new share).
 * {0, 0}: the helper's anomaly rules.
 */
typedef struct esc_party
{
	uint64_t	dev;
	uint64_t	ino;
} esc_party;

/*
 * A request from the control socket of the cluster party whose postmaster
 * is pm (0: not attached).  Windows are host-wide (the probes are), but a
 * cluster cannot close or shorten another's claim on one, claims at most its
 * share of the budget, and resets only its own counters.
 */
extern void escalation_party_gone(esc_party party, uint32_t pm, int64_t now_us);
extern int	escalation_respond(const pgt_request *r, uint32_t pm, esc_party party,
							   int64_t now_us, char *out, size_t outlen);

/*
 * The windows as cluster party may see them (another cluster's without who or
 * reason), oldest first: first, when windows have left the list (an hour
 * after they ended), one entry flagged PGT_EXACT_WINDOW_EARLIER for all of
 * them; then the last hour's.
 */
extern size_t escalation_windows(struct pgt_exact_window_entry *out, size_t max,
								 esc_party party);

/*
 * Anomaly rules (helper/escalation_anomaly.c): fed once a second with the
 * number of active sessions (a wait event that is not idle, or on CPU) and
 * of those in the Lock class; open a window of ESC_ANOMALY_WINDOW_S seconds
 * (budget permitting) when active sessions exceed ESC_ANOMALY_MULT times a
 * baseline (an average that freezes during anomalies) and at least
 * ESC_ANOMALY_MIN_ACTIVE, or when at least ESC_ANOMALY_MIN_LOCK sessions
 * wait on locks and they are ESC_ANOMALY_LOCK_SHARE of the active ones;
 * then nothing for the cooldown.
 */
#define ESC_ANOMALY_WINDOW_S	60
#define ESC_ANOMALY_MULT		3.0
#define ESC_ANOMALY_MIN_ACTIVE	4
#define ESC_ANOMALY_MIN_LOCK	3
#define ESC_ANOMALY_LOCK_SHARE	0.5
#define ESC_ANOMALY_WARMUP_S	5
#define ESC_ANOMALY_BASE_S		60		/* baseline: moving average over ~60 samples */
#define ESC_ANOMALY_HOLD_SLOWER	10		/* ... followed 10 times slower while a rule holds */
#define ESC_ANOMALY_BUDGET_DIV	2		/* the rules' windows: at most budget / 2 an hour */
#define ESC_DEFAULT_COOLDOWN_S	300

extern int	escalation_configure_anomaly(const char *s, char *err, size_t errlen);
extern int	escalation_configure_cooldown(const char *s, char *err, size_t errlen);
extern const char *escalation_anomaly_sample(int64_t now_us, uint32_t active,
											 uint32_t locked);
extern double escalation_anomaly_baseline(void);
/* The wall clock was set: the anomaly rules' times move by delta_us. */
extern void escalation_anomaly_clock_step(int64_t delta_us);
extern int	escalation_auto(int64_t now_us, int seconds, const char *reason);

/* for unit tests: forget every window, back to the configured mode */
extern void escalation_reset(void);

#endif							/* PGT_HELPER_ESCALATION_H */
