/*
 * helper/kernel_sched.c
 *	  Probe set "sched" (bpf/kernel_sched.bpf.c): off-CPU time, run-queue
 *	  latency (histogram), context switches, wakeups, migrations, from one
 *	  program on sched_switch that reads what the scheduler keeps per task.
 *	  Before load it checks that the running kernel keeps it (kclock); where
 *	  it does not, or --sched-clock ktime asks, the set runs without
 *	  run-queue latency and says why.  It also checks where a task's storage
 *	  may be made (create_in_switch, bpf/kernel_sched.bpf.c): before 6.4
 *	  only at fork and in the task iterator, which then runs at each copy
 *	  and whenever the pid filter takes in processes found in /proc.
 */
#include "kernel_set.h"
#include "kernel_sched.h"
#include "kernel_sched.skel.h"
#include "log.h"
#include "parse_num.h"

#include <bpf/btf.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#define MECH "tp_btf/sched_switch"

static const char *const names[] = {"offcpu_ns", "runq_ns", "runq_count", "runq_max_ns", "voluntary_switches", "involuntary_switches", "migrations", "wakeups", NULL};

/*
 * The program as last opened closes each off-CPU period at the task's next
 * switch-out (kclock, no stream, no --miss-events: bpf/kernel_sched.bpf.c),
 * so it needs no switch-ins (the helper is single-threaded).
 */
static int	out_only;

static int
switch_out_only(void)
{
	return out_only;
}

static const kset_desc desc = {PGT_KPROC_SCHED, names, 0,
	"runs on every context switch of the host", PGT_CHAIN_SLOT_SCHED, switch_out_only};

KSET_SKELETON(kernel_sched)

/* Why kclock is 0, for the status (the helper is single-threaded). */
static char kclock_why[128];

/* --sched-clock ktime: kclock 0 whatever the kernel keeps */
static int	clock_ktime_forced;

/*
 * kernel_sched_configure_clock
 *		--sched-clock auto|ktime (see kernel_sched.h).
 */
int
kernel_sched_configure_clock(const char *s, char *err, size_t errlen)
{
	int			c = parse_choice(s, "auto", "ktime", err, errlen);

	if (c < 0)
		return -1;
	clock_ktime_forced = c;
	return 0;
}

/* --no-storage-in-switch (testing): as on a kernel before 6.4 */
static int	storage_in_switch_forced_off;

/* create_in_switch as last opened (the helper is single-threaded) */
static int	create_in_switch;

/*
 * kernel_sched_no_storage_in_switch
 *		See kernel_sched.h.
 */
void
kernel_sched_no_storage_in_switch(void)
{
	storage_in_switch_forced_off = 1;
}

/*
 * has_member
 *		Does struct `sname` of the kernel's BTF have a member `member`?
 */
static int
has_member(const struct btf *btf, const char *sname, const char *member)
{
	int			id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, (uint32_t) id) : NULL;
	const struct btf_member *m;
	int			i;

	if (t == NULL)
		return 0;
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++)
		if (strcmp(btf__name_by_offset(btf, m->name_off), member) == 0)
			return 1;
	return 0;
}

/*
 * sched_info_kept
 *		Does the scheduler keep per-task run-queue timestamps on this kernel
 *		(CONFIG_SCHED_INFO), on the clock of a run queue that a task's
 *		cfs_rq leads to (CONFIG_FAIR_GROUP_SCHED)?  0 with the missing piece
 *		in why.  /proc/self/schedstat exists with CONFIG_SCHED_INFO, and its
 *		third field (times on a CPU) is non-zero when the kernel keeps it.
 */
static int
sched_info_kept(char *why, size_t whylen)
{
	struct btf *btf = btf__load_vmlinux_btf();
	unsigned long long run = 0, delay = 0, count = 0;
	FILE	   *f = fopen("/proc/self/schedstat", "r");
	int			fields = f ? fscanf(f, "%llu %llu %llu", &run, &delay, &count) : 0;
	int			ok = 0;

	if (f != NULL)
		fclose(f);
	if (btf == NULL)
		snprintf(why, whylen, "no kernel BTF to check the scheduler's fields");
	else if (fields != 3 || count == 0 ||
			 !has_member(btf, "task_struct", "sched_info") ||
			 !has_member(btf, "sched_info", "last_queued"))
		snprintf(why, whylen, "the kernel keeps no per-task run-queue times (CONFIG_SCHED_INFO)");
	else if (!has_member(btf, "sched_entity", "cfs_rq") || !has_member(btf, "cfs_rq", "rq"))
		snprintf(why, whylen, "tasks have no cfs_rq to reach the run-queue clock (CONFIG_FAIR_GROUP_SCHED)");
	else
		ok = 1;
	btf__free(btf);
	return ok;
}

/*
 * storage_safe_in_switch
 *		May a task's storage be made under the scheduler's lock?  From 6.4
 *		on the kernel allocates it with BPF's allocator (bpf_mem_alloc,
 *		later kmalloc_nolock), safe in any context; before, with
 *		GFP_ATOMIC, which can wake kswapd, and so take a run queue's lock.
 *		A backport of the allocator shows as the map's bpf_ma member.
 */
static int
storage_safe_in_switch(void)
{
	struct utsname u;
	struct btf *btf;
	int			major = 0;
	int			minor = 0;
	int			safe;

	if (storage_in_switch_forced_off)
		return 0;
	if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
		(major > 6 || (major == 6 && minor >= 4)))
		return 1;
	btf = btf__load_vmlinux_btf();
	safe = btf != NULL && has_member(btf, "bpf_local_storage_map", "bpf_ma");
	btf__free(btf);
	return safe;
}

/*
 * sched_open
 *		The skeleton opened by KSET_SKELETON, with kclock set for this
 *		kernel and --sched-clock (the reason in kclock_why when it is 0).
 */
static struct bpf_object *
sched_open(void **skel, const pset_ctx *ctx)
{
	struct bpf_object *obj = kernel_sched_kopen(skel, ctx);
	int			kclock = 0;

	if (obj == NULL)
		return NULL;
	if (clock_ktime_forced)
		snprintf(kclock_why, sizeof(kclock_why), "--sched-clock ktime");
	else
		kclock = sched_info_kept(kclock_why, sizeof(kclock_why));
	((struct kernel_sched_bpf *) *skel)->rodata->kclock = (uint8_t) kclock;
	((struct kernel_sched_bpf *) *skel)->rodata->miss_in_every = (uint32_t) kset_miss_events;
	/*
	 * Switch-ins close the periods without kclock (no record), with a
	 * stream (its event is sent when the task comes back) and with
	 * --miss-events (which tests their repair)
	 */
	out_only = kclock && !ctx->stream && !kset_miss_events;
	((struct kernel_sched_bpf *) *skel)->rodata->use_switch_ins = (uint8_t) !out_only;
	create_in_switch = storage_safe_in_switch();
	((struct kernel_sched_bpf *) *skel)->rodata->create_in_switch = (uint8_t) create_in_switch;
	bpf_program__set_autoload(((struct kernel_sched_bpf *) *skel)->progs.pgt_ksched_fork,
							  !create_in_switch);
	return obj;
}

/*
 * storage_outside_switch
 *		Without create_in_switch: the task iterator makes the storage of
 *		processes found in /proc, at each copy of the maps and whenever the
 *		pid filter takes some in (kset_tracked); say so in the status.
 */
static void
storage_outside_switch(pset_inst *in)
{
	kset	   *ks = in->priv;

	ks->tacc_iter_makes_storage = 1;
	kset_status_append(in, "before 6.4: task storage made at fork and per copy, "
					   "not in the switch");
}

/*
 * start
 *		open (kclock) -> shared maps -> load -> attach; a running set
 *		without kclock is degraded, and says why.
 */
static int
start(pset_inst *in, const pset_ctx *ctx)
{
	kclock_why[0] = '\0';
	if (kset_miss_events)
		log_warn("sched: --miss-events %d: periods closed at switch-ins, one in %d "
				 "ignored (testing)", kset_miss_events, kset_miss_events);
	if (kset_start_single(in, ctx, &desc, MECH, sched_open, kernel_sched_kdestroy) < 0)
		return -1;
	if (kclock_why[0] != '\0' && in->status.state == PGT_PROBE_AVAILABLE)
		pset_set_status(in, PGT_PROBE_DEGRADED, MECH,
						"run-queue latency unavailable: %s; off-CPU time, switches, "
						"wakeups and migrations measured", kclock_why);
	if (!create_in_switch && in->priv != NULL)
		storage_outside_switch(in);
	return 0;
}

KSET_PROBE_SET(sched_set, "sched",
			   "off-CPU time, run-queue latency (histogram), context switches, wakeups, migrations",
			   PGT_SET_SCHED, 40, start);
