/*
 * helper/kernel_hold.c
 *	  Holding the kernel sets (`pg-tracer daemon --kernel-sets escalated`):
 *	  outside escalation windows a set's hooks are detached, so a system
 *	  call, a context switch or a fault costs nothing more than with the set
 *	  not started; when a window opens they are attached again.  The set
 *	  stays loaded the whole time: its maps, the rows its tasks keep, its
 *	  counts and its status row are those of one continuous run, with the
 *	  held spans simply not counted.
 *
 * Two kinds of program keep running while a set is held: the exit folds
 * (sched_process_exit), since a task's own rows (task_accum.h) die with
 * it, and the task iterators that read those rows.  Neither runs on a hot
 * path.
 *
 * A start noted before a hold (a system call entered, a request issued, a
 * switch-out) may see its end only after the next resume, with the held
 * time in between, or at an exit fold during the hold.  After detaching,
 * and again before attaching, the helper writes the time and a new
 * generation into each object's `kresume` map (bpf/kernel_common.bpf.h),
 * and the programs drop such a start instead of counting it.
 *
 * Single-threaded (the daemon's loop): no locking.
 */
#include "kernel_set.h"

#include "log.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define HOLD_NOTE	"held outside escalation windows (--kernel-sets escalated)"
#define RUN_NOTE	"attached for an escalation window"

/*
 * runs_while_held
 *		Does prog keep running while its set is held (an exit fold or a task
 *		iterator)?
 */
static int
runs_while_held(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	size_t		n = strlen(sec);
	static const char exit_tp[] = "/sched_process_exit";

	if (bpf_program__expected_attach_type(prog) == BPF_TRACE_ITER)
		return 1;
	return n >= sizeof(exit_tp) - 1 && strcmp(sec + n - (sizeof(exit_tp) - 1), exit_tp) == 0;
}

/*
 * note_edge
 *		Tell each of r's objects that its programs stop or run again from
 *		now on (see the file header): after they are detached, so that
 *		every start they noted is earlier than this, and before they are
 *		attached, so that every start they note afterwards is later.
 */
static void
note_edge(kset *r)
{
	struct timespec ts;
	struct pgt_kresume v;
	__u32		key = 0;
	int			i;

	clock_gettime(CLOCK_MONOTONIC, &ts);	/* bpf_ktime_get_ns()'s clock */
	memset(&v, 0, sizeof(v));
	v.ns = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
	v.gen = ++r->edges;
	for (i = 0; i < KSET_MAX_OBJS; i++)
		if (r->resume_fd[i] >= 0 && bpf_map_update_elem(r->resume_fd[i], &key, &v, BPF_ANY) != 0)
			log_warn("kernel sets: cannot note a hold or resume: %s", strerror(errno));
}

/*
 * runner_hold
 *		Detach r's hooks (hold) or attach them again; r->failed and
 *		r->failed_err say how many programs did not attach again and the
 *		first one's error (both 0 when holding), for every set r runs for.
 */
static void
runner_hold(kset *r, int hold)
{
	int			i;

	if (r->held == hold)
		return;
	r->failed = r->failed_err = 0;
	if (!hold)
		note_edge(r);
	for (i = 0; i < r->nlinks; i++)
	{
		int			err;

		if (r->progs[i] == NULL || runs_while_held(r->progs[i]))
			continue;
		if (hold)
		{
			hook_chain_detach(r->chain, &r->members[i], &r->links[i]);
			continue;
		}
		err = hook_chain_attach(r->chain, r->progs[i], r->desc->chain_slot,
								&r->members[i], &r->links[i]);
		if (err != 0)
		{
			log_warn("kernel sets: %s did not attach again: %s",
					 bpf_program__section_name(r->progs[i]), strerror(-err));
			if (r->failed++ == 0)
				r->failed_err = err;
		}
	}
	if (hold)
		note_edge(r);			/* an exit fold while held drops what spans it */
	r->held = hold;
}

/*
 * kset_hold
 *		probe_set.hold of the kernel sets: hold or resume the programs that
 *		run for the set (a set sharing an object holds it for both: the
 *		second call finds it done), and say so in its status.
 */
void
kset_hold(pset_inst *in, int hold)
{
	kset	   *ks = in->priv;
	kset	   *r;
	char		ebuf[128];

	if (ks == NULL || ks->runner == NULL)
		return;
	if (ks->state == 0)
	{
		ks->state = in->status.state;
		snprintf(ks->reason, sizeof(ks->reason), "%s", in->status.reason);
	}
	r = ks->runner;
	runner_hold(r, hold);
	if (r->failed > 0)
		pset_set_status(in, PGT_PROBE_DEGRADED, in->status.mechanism,
						"%d program%s did not attach again for an escalation window: %s",
						r->failed, r->failed == 1 ? "" : "s",
						pset_errstr(r->failed_err, ebuf, sizeof(ebuf)));
	else
		pset_set_status(in, ks->state, in->status.mechanism, "%s; %s",
						hold ? HOLD_NOTE : RUN_NOTE, ks->reason);
}
