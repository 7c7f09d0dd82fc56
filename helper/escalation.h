/*
 * helper/escalation.h
 *	  Tiers and escalation windows of exact wait timing: the --mode
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
#define ESC_MAX_WINDOWS			64

/* Turns exact timing on (1) or off (0); set by the exact probe set. */
typedef void (*esc_switch_fn) (int on);

extern int	escalation_configure_mode(const char *s, char *err, size_t errlen);
extern int	escalation_configure_budget(const char *s, char *err, size_t errlen);
extern int	escalation_mode(void);
extern const char *escalation_mode_name(void);
extern int	escalation_budget(void);

extern void escalation_attach(esc_switch_fn fn, const char *unavailable_reason);
extern void escalation_detach(void);
extern void escalation_tick(int64_t now_us);
extern int	escalation_active(void);
extern int	escalation_used_s(int64_t now_us);

extern int	escalation_respond(const pgt_request *r, int64_t now_us,
							   char *out, size_t outlen);
extern size_t escalation_windows(struct pgt_exact_window_entry *out, size_t max);

/* for unit tests: forget every window, back to the configured mode */
extern void escalation_reset(void);

#endif							/* PGT_HELPER_ESCALATION_H */
