/*
 * helper/escalation_anomaly.c
 *	  Anomaly rules that open exact-timing windows on their own (tiered
 *	  mode): fed once a second with a sample of the cluster's sessions
 *	  (how many are active, how many of those wait in the Lock class), see
 *	  escalation.h for the rules and their constants.
 *
 * The baseline is an exponential moving average of active sessions over
 * about ESC_ANOMALY_BASE_S samples; while a rule holds it follows
 * ESC_ANOMALY_HOLD_SLOWER times slower, so a spike does not become the new
 * normal, and a lasting rise in load does after some minutes instead of
 * never (a frozen baseline kept the rule true for good, and the windows
 * it opened every cooldown spent the budget for as long as the load
 * lasted).  After a window opened by a rule, rules are silent for the
 * cooldown; and the rules' windows take at most half the budget in the
 * hour (escalation.c, party_avail_s).
 *
 * Single-threaded (the daemon's loop).
 */
#include "escalation.h"

#include "log.h"
#include "parse_num.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int	anomaly_enabled = 1;
static int	cooldown_s = ESC_DEFAULT_COOLDOWN_S;
/*
 * Why a rule that holds was last said to open no window (a literal of
 * anomaly_held_back, or "fired"), in this spell of holding; NULL between
 * spells.  A spell says each new reason once: an hour of load logs a
 * line when its window opens, as it closes into the cooldown, and so on.
 */
static const char *held_noted;
static double baseline = -1;	/* < 0: no sample yet */
static int64_t first_us;
static int64_t last_fire_us;

/*
 * escalation_configure_anomaly
 *		--anomaly on|off.
 */
int
escalation_configure_anomaly(const char *s, char *err, size_t errlen)
{
	int			c = parse_choice(s, "on", "off", err, errlen);

	if (c < 0)
		return -1;
	anomaly_enabled = (c == 0);
	return 0;
}

/*
 * escalation_configure_cooldown
 *		--anomaly-cooldown SECONDS (1..86400).
 */
int
escalation_configure_cooldown(const char *s, char *err, size_t errlen)
{
	long		v;

	if (parse_decimal(s, 1, 86400, &v) < 0)
	{
		snprintf(err, errlen, "\"%s\": give seconds, 1..86400", s);
		return -1;
	}
	cooldown_s = (int) v;
	return 0;
}

double
escalation_anomaly_baseline(void)
{
	return baseline;
}

/*
 * escalation_anomaly_clock_step
 *		See escalation.h: the warm-up's start and the last rule's firing
 *		move with the clock, so neither is cut short or stretched by it.
 */
void
escalation_anomaly_clock_step(int64_t delta_us)
{
	if (first_us != 0)
		first_us += delta_us;
	if (last_fire_us != 0)
		last_fire_us += delta_us;
}

/*
 * anomaly_held_back
 *		Why a rule that holds opens no window now, or NULL if it may.
 */
static const char *
anomaly_held_back(int64_t now_us)
{
	if (!anomaly_enabled)
		return "the rules are off (--anomaly off)";
	if (escalation_mode() != ESC_MODE_TIERED)
		return "not in tiered mode";
	if (now_us - first_us < (int64_t) ESC_ANOMALY_WARMUP_S * 1000000)
		return "warming up";
	if (escalation_active())
		return "a window is open";
	if (last_fire_us != 0 && now_us - last_fire_us < (int64_t) cooldown_s * 1000000)
		return "cooldown (--anomaly-cooldown)";
	return NULL;
}

/*
 * escalation_anomaly_sample
 *		One sample; returns the rule that opened a window, else NULL.
 */
const char *
escalation_anomaly_sample(int64_t now_us, uint32_t active, uint32_t locked)
{
	const char *rule = NULL;
	const char *why;

	if (baseline < 0)
	{
		baseline = active;
		first_us = now_us;
		return NULL;
	}
	if (active >= ESC_ANOMALY_MIN_ACTIVE &&
		active >= ESC_ANOMALY_MULT * (baseline > 1 ? baseline : 1))
		rule = "anomaly-active";
	else if (locked >= ESC_ANOMALY_MIN_LOCK &&
			 (double) locked >= ESC_ANOMALY_LOCK_SHARE * active)
		rule = "anomaly-lock";
	if (rule == NULL)
	{
		/* normal: the baseline follows */
		baseline += ((double) active - baseline) / ESC_ANOMALY_BASE_S;
		held_noted = NULL;
		return NULL;
	}
	baseline += ((double) active - baseline) / (ESC_ANOMALY_BASE_S * ESC_ANOMALY_HOLD_SLOWER);
	if ((why = anomaly_held_back(now_us)) != NULL)
	{
		if (held_noted != why)
			log_info("anomaly: %s holds (active %u, in Lock %u, baseline %.1f), no window: %s",
					 rule, active, locked, baseline, why);
		held_noted = why;
		return NULL;
	}
	held_noted = "fired";
	last_fire_us = now_us;
	log_info("anomaly: %s (active %u, in Lock %u, baseline %.1f)", rule, active, locked,
			 baseline);
	return escalation_auto(now_us, ESC_ANOMALY_WINDOW_S, rule) == 0 ? rule : NULL;
}
