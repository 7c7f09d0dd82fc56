/*
 * helper/sampler_priority.c
 *	  --sampler-nice: the pg_tracer sampler of each served cluster runs at
 *	  a raised priority.
 *
 * Why: the sampler reads every backend's wait event when its timer fires,
 * but on a busy machine it first waits for a CPU, and it gets one when a
 * backend gives its CPU up, which a backend does when it starts a blocking
 * wait.  So its samples fall just after such starts more often than chance
 * would have it, and short blocking waits (LWLocks, tuple locks) come out
 * larger, long ones (transaction-id locks) smaller, than the exact tier
 * times them: on a 2-vCPU guest under four TPC-B clients, the sampled
 * share of Lock:transactionid was the smaller by 0.5-2.1 points in seven
 * runs of t/042, whose criterion is 2.  With the sampler at nice -15 the
 * scheduler runs it as soon as it wakes: the largest difference of any
 * event read 0.4-0.6 points in three runs, Lock:transactionid's 0.2-0.4
 * (at -10: 0.7-1.3 points, Lock:transactionid's 0.1-0.7; README,
 * "Sampled vs exact").  Its CPU
 * is a fraction of a percent of one core at the default 100 Hz, so the
 * priority takes nothing from the server worth counting.
 *
 * The helper sets the value once per sampler process, when it first
 * classifies it (helper/cluster.c), and does not put it back: the sampler
 * is pg_tracer's own process and ends with its server.  Needs
 * CAP_SYS_NICE (root has it); where the kernel refuses, the sampler runs
 * as before and the helper logs why once per process.
 *
 * Who gets it.  A process names itself (its title), and the daemon serves
 * the cluster of any user of the host, so the priority, a privilege, goes
 * only to clusters that system accounts run (SAMPLER_PRIORITY_MAX_OWNER),
 * and to one process of a cluster at a time (helper/cluster.c): else any
 * user could start a cluster, or a process that calls itself a postmaster,
 * and have the daemon raise busy loops above everyone else's work.
 */
#include "sampler_priority.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>

#include "parse_num.h"
#include "procfs.h"

static int	sampler_nice = SAMPLER_NICE_DEFAULT;

/*
 * sampler_priority_configure
 *		--sampler-nice N, from -20 to 0.
 */
int
sampler_priority_configure(const char *arg, char *err, size_t errlen)
{
	int			negative = arg[0] == '-';
	long		v;

	/* "0", or "-" and 0..20 */
	if (parse_decimal(arg + negative, 0, negative ? 20 : 0, &v) < 0)
	{
		snprintf(err, errlen, "\"%s\" is not a nice value from -20 to 0", arg);
		return -1;
	}
	sampler_nice = (int) -v;
	return 0;
}

/*
 * sampler_priority_nice
 *		The configured nice value, 0 when the sampler is left alone.
 */
int
sampler_priority_nice(void)
{
	return sampler_nice;
}

/*
 * sampler_priority_apply
 *		See sampler_priority.h.
 */
int
sampler_priority_apply(uint32_t pid, const char *buf, size_t len, uint32_t owner)
{
	if (sampler_nice == 0 || !procfs_title_is(buf, len, SAMPLER_PRIORITY_TITLE))
		return SAMPLER_PRIORITY_NONE;
	/* root runs no PostgreSQL: a "cluster" of uid 0 is no system service */
	if (owner == 0 || owner > SAMPLER_PRIORITY_MAX_OWNER)
		return SAMPLER_PRIORITY_NOT_SYSTEM;
	if (setpriority(PRIO_PROCESS, (id_t) pid, sampler_nice) < 0)
		return SAMPLER_PRIORITY_REFUSED;
	return SAMPLER_PRIORITY_RAISED;
}
