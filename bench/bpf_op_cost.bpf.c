// SPDX-License-Identifier: GPL-2.0
/*
 * bench/bpf_op_cost.bpf.c
 *	  One sys_enter program that repeats one operation `reps` times for
 *	  the system calls of one process (bench/bpf_op_cost.c times them).
 *	  The operation and the count are read-only data set before load, so
 *	  the verifier drops every other branch: the program is the hook plus
 *	  `reps` copies of the operation and nothing else.  An empty sys_exit
 *	  program is loaded only to price the exit hook (COST_EXIT_HOOK), and
 *	  it and an empty sched_switch program for `bpf_op_cost --hold`
 *	  (bench/hook_floor.sh: what the hooks alone cost a workload).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf_op_cost.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;
const volatile __u32 op = COST_NONE;
const volatile __u32 reps = 0;
const volatile __u64 user_addr = 0;		/* a word of the target's memory */

__u64		sink;				/* keeps the results alive */

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} hash_u32 SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct cost_key32);
	__type(value, __u64);
} hash_32b SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct cost_key32);
	__type(value, __u64);
} lru_32b SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} storage SEC(".maps");

/*
 * one_op
 *		The operation once; its result (or 0) for the sink.
 */
static __always_inline __u64
one_op(__u32 tgid)
{
	struct cost_key32 k = {.pid = tgid};
	__u64		v = 0;
	__u64	   *p = 0;

	switch (op)
	{
		case COST_PID_TGID:
			return bpf_get_current_pid_tgid();
		case COST_KTIME:
			return bpf_ktime_get_ns();
		case COST_READ_USER:
			bpf_probe_read_user(&v, sizeof(v), (void *) user_addr);
			return v;
		case COST_READ_KERNEL:
			bpf_probe_read_kernel(&v, sizeof(v), (void *) &sink);
			return v;
		case COST_HASH_U32:
			p = bpf_map_lookup_elem(&hash_u32, &tgid);
			break;
		case COST_HASH_32B:
			p = bpf_map_lookup_elem(&hash_32b, &k);
			break;
		case COST_LRU_32B:
			p = bpf_map_lookup_elem(&lru_32b, &k);
			break;
		case COST_TASK_STORAGE:
			p = bpf_task_storage_get(&storage, bpf_get_current_task_btf(), 0,
									 BPF_LOCAL_STORAGE_GET_F_CREATE);
			break;
		case COST_ATOMIC_ADD:
			p = bpf_map_lookup_elem(&hash_u32, &tgid);
			if (p)
				__sync_fetch_and_add(p, 1);
			return 0;
	}
	return p ? *p : 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(op_cost_enter, struct pt_regs *regs, long id)
{
	__u32		tgid = bpf_get_current_pid_tgid() >> 32;
	__u64		acc = 0;

	if (tgid != target_tgid)
		return 0;
	for (int i = 0; i < COST_MAX_REPS; i++)
	{
		if (i >= reps)
			break;
		acc += one_op(tgid);
	}
	sink += acc;
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(op_cost_exit, struct pt_regs *regs, long ret)
{
	return 0;
}

/*
 * Empty programs on the per-system-call exit tracepoints: on another
 * call's (what a call pays that the program does not serve) and on the
 * timed call's own.
 */
SEC("tracepoint/syscalls/sys_exit_getpid")
int
op_cost_exit_other(void *ctx)
{
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_getppid")
int
op_cost_exit_same(void *ctx)
{
	return 0;
}

/*
 * An empty program for the per-system-call exit tracepoints the holder
 * attaches it to one by one (bpf_op_cost --hold percall).
 */
SEC("tracepoint")
int
op_cost_exit_percall(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(op_cost_switch, bool preempt, struct task_struct *prev,
			 struct task_struct *next)
{
	return 0;
}
