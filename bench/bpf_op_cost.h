/*
 * bench/bpf_op_cost.h
 *	  What bench/bpf_op_cost.bpf.c and bench/bpf_op_cost.c agree on: the
 *	  operations the probe sets' hot paths use, one per number.
 */
#ifndef PGT_BENCH_BPF_OP_COST_H
#define PGT_BENCH_BPF_OP_COST_H

enum cost_op
{
	COST_NONE = 0,				/* the program alone: the hook's price */
	COST_EXIT_HOOK,				/* + an empty program on sys_exit */
	COST_EXIT_PERF_OTHER,		/* + one on syscalls:sys_exit_getpid */
	COST_EXIT_PERF_SAME,		/* + one on syscalls:sys_exit_getppid */
	COST_PID_TGID,				/* bpf_get_current_pid_tgid */
	COST_KTIME,					/* bpf_ktime_get_ns */
	COST_READ_USER,				/* bpf_probe_read_user, 8 bytes */
	COST_READ_KERNEL,				/* bpf_probe_read_kernel, 8 bytes */
	COST_HASH_U32,				/* hash lookup, 4-byte key (`tracked`) */
	COST_HASH_32B,				/* hash lookup, 32-byte key (`kio`) */
	COST_LRU_32B,					/* LRU hash lookup, 32-byte key */
	COST_TASK_STORAGE,			/* bpf_task_storage_get, present */
	COST_ATOMIC_ADD,				/* __sync_fetch_and_add on a map value */
	COST_COUNT
};

#define COST_MAX_REPS 16

struct cost_key32
{
	unsigned int pid;
	unsigned int pad;
	unsigned long long a;
	unsigned long long b;
	unsigned long long c;
};

_Static_assert(sizeof(struct cost_key32) == 32, "cost_key32 is kio's key size");

#endif							/* PGT_BENCH_BPF_OP_COST_H */
