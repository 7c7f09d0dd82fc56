// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/pg_tracer.bpf.c
 *	  The process-tracking core of pg-tracer: which processes belong to a
 *	  served PostgreSQL cluster, and how many system calls each one makes.
 *
 * - `postmasters` (tgid -> 1) is filled by the helper with every postmaster
 *   it serves.
 * - `tracked` (tgid -> struct pgt_tracked) holds the postmasters and their
 *   children.  A child enters at fork (sched_process_fork with a postmaster
 *   as parent), so nothing it does after fork is missed; the helper adds the
 *   processes that existed before it attached from a /proc scan.
 * - A process whose last thread exits leaves both maps; for `pg-tracer
 *   trace` its title goes into `exit_titles` first (keep_exit_titles).
 * - `pg_execs` (tgid -> 0) notes every exec of a PostgreSQL server binary
 *   for the daemon's discovery (watch_execs): a postmaster is always such
 *   an exec, so after one scan of /proc the daemon looks only at these
 *   (helper/daemon.c).  It drains the map every second; a note that finds
 *   it full is counted in `pgt_execs_lost`, and the daemon scans /proc.
 * - `pgt_tracked_bits` mirrors `tracked` as a bitmap by tgid (set after an
 *   insert, cleared at exit, by the fork/exit programs here and by the
 *   helper for the processes it adds or drops): one plain load answers
 *   "tracked?" where a hash lookup costs some 40 ns, on hooks that fire
 *   for every task of the host.
 * - sys_enter tests the bit of the current tgid and, when set, does one
 *   hash lookup and one atomic add, then hands the hook on to the probe
 *   sets that use it: their sys_enter programs never run for a process
 *   that is not tracked (most of the host's system calls, pgbench's for
 *   one).
 * - The dispatchers of the hook chains (bpf/pgt_chain.bpf.h): sys_enter
 *   above, and sys_exit and sched_switch, which the helper attaches only
 *   while some probe set has a program in their chain.  They hand on only
 *   the calls of tracked processes and the switches that involve one
 *   (every member serves those only; switches to one only while a member
 *   asks for them, pgt_switch_out_only), so the rest of the host pays the
 *   tracepoint and one bit test.
 *
 * CO-RE: field accesses on task_struct go through vmlinux.h's
 * preserve_access_index, so the object runs on any kernel with BTF.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "pg_tracer.h"
#include "pgt_chain.bpf.h"
#include "pgt_tracked.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Set by the helper before load: 0 loads sys_enter without its tail calls
 * (the fallback for a kernel that refuses them in tracing programs; the
 * probe sets' programs are then attached on their own).
 */
const volatile __u8 pgt_dispatch = 1;

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PGT_BPF_MAX_POSTMASTERS);
	__type(key, __u32);
	__type(value, __u32);
} postmasters SEC(".maps");

/*
 * Set by the helper before load (pg-tracer trace): keep the titles of the
 * tracked processes that exit, in `exit_titles` (an LRU the helper sizes;
 * one entry, unused, otherwise).
 */
const volatile __u8 keep_exit_titles = 0;

struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pgt_exit_title);
} exit_titles SEC(".maps");

/* See the file header; the helper mmaps it (skeleton's bss). */
__u64		pgt_tracked_bits[PGT_TRACKED_WORDS];

/*
 * Set by the helper before load: note_execs, whether pgt_process_exec notes
 * the execs of server binaries (the daemon's discovery; the program runs
 * in every helper, for the pid filter); exec_miss_every (--miss-events N,
 * testing), one note in N dropped as lost.
 */
const volatile __u8 note_execs = 0;
const volatile __u32 exec_miss_every = 0;

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PGT_BPF_MAX_EXECS);
	__type(key, __u32);
	__type(value, __u32);
} pg_execs SEC(".maps");

/* notes that found pg_execs full (or were dropped by exec_miss_every) */
__u64		pgt_execs_lost;
__u32		pgt_execs_seen;

/*
 * tracked_word
 *		The bitmap word of tgid (< PGT_TRACKED_WORDS * 64), masked behind a
 *		compiler barrier: the compiler would otherwise drop the mask after
 *		the caller's range check, and the verifier, which follows registers
 *		rather than values, would not see the index bounded.
 */
static __always_inline __u32
tracked_word(__u32 tgid)
{
	__u32		w = tgid >> 6;

	barrier_var(w);
	return w & (PGT_TRACKED_WORDS - 1);
}

/*
 * is_tracked
 *		The bitmap's answer for tgid; a tgid beyond it (no kernel has one
 *		today) counts as tracked, so the full checks decide.
 */
static __always_inline bool
is_tracked(__u32 tgid)
{
	if (tgid >= PGT_TRACKED_WORDS * 64)
		return true;
	return (pgt_tracked_bits[tracked_word(tgid)] >> (tgid & 63)) & 1;
}

/*
 * set_tracked
 *		Set or clear tgid's bit (atomically: the helper writes the same
 *		words).
 */
static __always_inline void
set_tracked(__u32 tgid, bool on)
{
	__u64		bit = 1ULL << (tgid & 63);
	__u32		w = tracked_word(tgid);

	if (tgid >= PGT_TRACKED_WORDS * 64)
		return;
	if (on)
		__sync_fetch_and_or(&pgt_tracked_bits[w], bit);
	else
		__sync_fetch_and_and(&pgt_tracked_bits[w], ~bit);
}

/*
 * A new process whose parent is a served postmaster enters `tracked`.
 * Threads (child->pid != child->tgid) are not processes of their own.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(pgt_process_fork, struct task_struct *parent,
			 struct task_struct *child)
{
	struct pgt_tracked t = {};
	__u32		ptgid = BPF_CORE_READ(parent, tgid);
	__u32		cpid = BPF_CORE_READ(child, pid);
	__u32		ctgid = BPF_CORE_READ(child, tgid);

	if (cpid != ctgid)
		return 0;
	if (!bpf_map_lookup_elem(&postmasters, &ptgid))
		return 0;
	t.postmaster = ptgid;
	t.flags = PGT_TRACKED_FORKED;
	t.attached_ns = bpf_ktime_get_boot_ns();
	t.syscalls = 0;
	if (bpf_map_update_elem(&tracked, &ctgid, &t, BPF_ANY) == 0)
		set_tracked(ctgid, true);
	if (keep_exit_titles)		/* the pid's last owner's title is not its */
		bpf_map_delete_elem(&exit_titles, &ctgid);
	return 0;
}

/*
 * keep_title
 *		The exiting process's title (its argv area, which PostgreSQL
 *		overwrites with it, running on into the environment's) into
 *		`exit_titles`.  The tracepoint runs in the exiting task, so its user
 *		memory is current's; kernels that report the exit only after
 *		exit_mm() (those without the tracepoint's group_dead argument) have
 *		no mm left here, and keep nothing.
 */
static __always_inline void
keep_title(struct task_struct *p, __u32 tgid)
{
	struct pgt_exit_title t = {};
	struct mm_struct *mm = BPF_CORE_READ(p, mm);
	unsigned long start;
	unsigned long end;
	__u32		len;

	if (!mm)
		return;
	start = BPF_CORE_READ(mm, arg_start);
	end = BPF_CORE_READ(mm, env_end);
	if (end <= start)
		return;
	len = end - start > sizeof(t.title) ? sizeof(t.title) : (__u32) (end - start);
	barrier_var(len);
	if (len > sizeof(t.title))
		return;
	if (bpf_probe_read_user(t.title, len, (const void *) start) != 0)
		return;
	bpf_map_update_elem(&exit_titles, &tgid, &t, BPF_ANY);
}

/*
 * A process whose thread group is dead (its last thread exits: usually the
 * leader, the only thread of a PostgreSQL process) leaves `tracked` (and
 * `postmasters` when it was a postmaster).  signal->live reaches 0 in
 * do_exit() before this tracepoint on every kernel, with or without the
 * group_dead argument newer kernels pass, so a leader that exits before
 * its other threads does not drop the process early.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(pgt_process_exit, struct task_struct *p)
{
	__u32		tgid = BPF_CORE_READ(p, tgid);
	int			live = BPF_CORE_READ(p, signal, live.counter);

	if (live != 0)
		return 0;
	if (keep_exit_titles && bpf_map_lookup_elem(&tracked, &tgid))
		keep_title(p, tgid);
	if (is_tracked(tgid))
		set_tracked(tgid, false);
	bpf_map_delete_elem(&tracked, &tgid);
	bpf_map_delete_elem(&postmasters, &tgid);
	return 0;
}

/*
 * is_server_name
 *		Is name (NUL-terminated within 16 bytes) "postgres" or "postmaster",
 *		the names procfs_is_postgres (helper/procfs.c) accepts?
 */
static __always_inline bool
is_server_name(const char *n)
{
	/* spelled out: a static array would put a VAR into the object's BTF */
	if (n[0] != 'p' || n[1] != 'o' || n[2] != 's' || n[3] != 't')
		return false;
	if (n[4] == 'g')
		return n[5] == 'r' && n[6] == 'e' && n[7] == 's' && n[8] == '\0';
	return n[4] == 'm' && n[5] == 'a' && n[6] == 's' && n[7] == 't' &&
		n[8] == 'e' && n[9] == 'r' && n[10] == '\0';
}

/*
 * A process execs a new program: a tracked one leaves `tracked`; when the
 * program is a PostgreSQL server (its command name, which exec has just set
 * from the name it was run by, or the name of the file itself, as
 * /proc/<pid>/exe shows it), note its tgid for the daemon.  Execs are
 * rare, so this costs nothing that matters; the daemon in turn no longer
 * reads a /proc file of every process of the host each second.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(pgt_process_exec, struct task_struct *p, pid_t old_pid,
			 struct linux_binprm *bprm)
{
	char		name[16] = {};
	__u32		tgid = p->tgid;
	__u32		zero = 0;
	const unsigned char *file_name;

	/*
	 * A tracked process that execs is no longer the PostgreSQL process the
	 * helper mapped (PostgreSQL's processes do not exec on Linux): the new
	 * program, perhaps a set-uid one, leaves `tracked` and `postmasters`,
	 * so that no program reads its memory at the addresses of the old one's
	 * query-id slot.  A server it runs is noted below, like any other.
	 */
	if (bpf_map_lookup_elem(&tracked, &tgid))
	{
		set_tracked(tgid, false);
		bpf_map_delete_elem(&tracked, &tgid);
		bpf_map_delete_elem(&postmasters, &tgid);
	}
	if (!note_execs)
		return 0;
	if (bpf_get_current_comm(name, sizeof(name)) != 0 || !is_server_name(name))
	{
		file_name = BPF_CORE_READ(bprm, file, f_path.dentry, d_name.name);
		__builtin_memset(name, 0, sizeof(name));
		if (bpf_probe_read_kernel_str(name, sizeof(name), file_name) <= 0 ||
			!is_server_name(name))
			return 0;
	}
	/* testing only, so a plain (racy) count will do */
	if (exec_miss_every && ++pgt_execs_seen % exec_miss_every == 0)
	{
		__sync_fetch_and_add(&pgt_execs_lost, 1);
		return 0;
	}
	if (bpf_map_update_elem(&pg_execs, &tgid, &zero, BPF_ANY) != 0)
		__sync_fetch_and_add(&pgt_execs_lost, 1);
	return 0;
}

/*
 * Hot path: every system call of every task on the host comes through
 * here, so it is one bit test and, for tracked processes, one lookup, one
 * atomic add and the tail calls into the sys_enter chain (nothing when it
 * is empty).
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(pgt_sys_enter, struct pt_regs *regs, long id)
{
	__u32		tgid = bpf_get_current_pid_tgid() >> 32;
	struct pgt_tracked *t;

	if (!is_tracked(tgid))
		return 0;
	t = bpf_map_lookup_elem(&tracked, &tgid);
	if (!t)
		return 0;				/* no member serves an untracked process */
	__sync_fetch_and_add(&t->syscalls, 1);
	if (pgt_dispatch)
		pgt_chain_from(ctx, &pgt_chain_enter, 0);
	return 0;
}

/*
 * 1 while every member of the sched_switch chain needs only the switches
 * that take a tracked process off a CPU (sched on the run queue's clock):
 * the chain then does not run for a switch from an untracked task
 * (pgbench, the idle task) to a backend, half the switches a backend takes
 * part in.  Written by the helper (helper/hook_chain.c): cleared before a
 * member that needs switch-ins joins, set after the last one left.  0, the
 * safe value, until then.
 */
__u32		pgt_switch_out_only;

/* The other two dispatchers: a filter, nothing else of their own. */
SEC("tp_btf/sys_exit")
int BPF_PROG(pgt_sys_exit, struct pt_regs *regs, long ret)
{
	if (is_tracked(bpf_get_current_pid_tgid() >> 32))
		pgt_chain_from(ctx, &pgt_chain_exit, 0);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(pgt_sched_switch, bool preempt, struct task_struct *prev,
			 struct task_struct *next, unsigned int prev_state)
{
	if (is_tracked(prev->tgid) || (!pgt_switch_out_only && is_tracked(next->tgid)))
		pgt_chain_from(ctx, &pgt_chain_switch, 0);
	return 0;
}
