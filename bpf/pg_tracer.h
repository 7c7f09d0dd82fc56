/*
 * bpf/pg_tracer.h
 *	  Types shared by the BPF programs (bpf/pg_tracer.bpf.c) and the helper
 *	  (helper/bpf_probes.c): map keys, map values, flags, capacities.
 *
 * Both sides compile this file: the BPF side after vmlinux.h (which defines
 * __VMLINUX_H__ and the __u32/__u64 types), user space with
 * <linux/types.h>.  Every struct is fixed-width and size-guarded: a change
 * here changes the kernel/user ABI of the maps.
 */
#ifndef PGT_BPF_PG_TRACER_H
#define PGT_BPF_PG_TRACER_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Capacity of the `postmasters` map (postmasters served by one daemon). */
#define PGT_BPF_MAX_POSTMASTERS	256

/*
 * Capacity of the `pg_execs` map: execs of a PostgreSQL server binary
 * between two of the daemon's discovery ticks (a second); more are counted
 * as lost, and the daemon then scans /proc instead.
 */
#define PGT_BPF_MAX_EXECS		256

/* Capacity of the `tracked` map (processes of all served clusters). */
#define PGT_BPF_MAX_TRACKED		16384

/*
 * The tracked-tgid bitmap (global `pgt_tracked_bits` of the foundation's
 * object, mapped by the helper): bit (tgid & 63) of word (tgid >> 6) is set
 * while tgid is in `tracked`.  It covers PID_MAX_LIMIT (4M) of 64-bit
 * kernels: 512 KiB.  Written with atomic or/and on both sides.
 */
#define PGT_TRACKED_WORDS		(4194304 / 64)

/* struct pgt_tracked.flags */
#define PGT_TRACKED_FORKED		0x1	/* entered at fork by the BPF program */
#define PGT_TRACKED_SCANNED		0x2	/* inserted by the helper's /proc scan */
#define PGT_TRACKED_POSTMASTER	0x4	/* the postmaster itself */

/*
 * Value of the `tracked` map, keyed by tgid (__u32).  `syscalls` is only
 * ever changed with an atomic add by the BPF side; user space reads it.
 */
struct pgt_tracked
{
	__u32		postmaster;		/* tgid of the postmaster it belongs to */
	__u32		flags;			/* PGT_TRACKED_* */
	__u64		attached_ns;	/* bpf_ktime_get_boot_ns() when tracking began */
	__u64		syscalls;		/* system calls entered since attached_ns */
};
_Static_assert(sizeof(struct pgt_tracked) == 24, "struct pgt_tracked size");

/*
 * Value of the `exit_titles` map (pg-tracer trace only), keyed by tgid: the
 * first bytes of a tracked process's title (PostgreSQL writes it over its
 * argv area) as it exited, NUL-padded, so that a record printed after a
 * short-lived backend is gone still names its role.
 */
#define PGT_EXIT_TITLE_LEN		128

struct pgt_exit_title
{
	char		title[PGT_EXIT_TITLE_LEN];
};
_Static_assert(sizeof(struct pgt_exit_title) == 128, "struct pgt_exit_title size");

/*
 * Hook chains (bpf/pgt_chain.bpf.h, helper/hook_chain.c): the hot, host-wide
 * tracepoints run one program of the foundation, which tail-calls the
 * programs of the probe sets that use the hook, slot by slot.
 */
#define PGT_CHAIN_ENTER			0	/* sys_enter */
#define PGT_CHAIN_EXIT			1	/* sys_exit */
#define PGT_CHAIN_SWITCH		2	/* sched_switch */
#define PGT_CHAIN_NHOOKS		3

#define PGT_CHAIN_SLOT_EXACT	0	/* probe set "exact" */
#define PGT_CHAIN_SLOT_SYSIO	1	/* "syscall" / "network" (one object) */
#define PGT_CHAIN_SLOT_SCHED	2	/* "sched" */
#define PGT_CHAIN_SLOTS			3

#endif							/* PGT_BPF_PG_TRACER_H */
