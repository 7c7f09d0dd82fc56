/*
 * bpf/pgt_chain.bpf.h
 *	  Hook chains: one program per hot tracepoint, the rest tail-called.
 *
 * sys_enter, sys_exit and sched_switch fire for every task of the host.  On
 * this kind of machine each program attached to a tracepoint costs some
 * 80 ns per firing before it does anything (the tracepoint's indirect call
 * and bpf_trace_run's bookkeeping, both behind retpolines), and a second
 * program on a tracepoint also takes the tracepoint off its static call.
 * So the foundation (bpf/pg_tracer.bpf.c) attaches one dispatcher per hook
 * and the probe sets' programs for those hooks are not attached at all:
 * the helper puts them into the hook's program array, at their set's slot
 * (PGT_CHAIN_SLOT_*), and each program, when done, tail-calls the slots
 * after its own.  A tail call with a constant index is a patched direct
 * jump, a few ns; an empty slot falls through.  The chains run for tracked
 * processes only: each dispatcher first tests the tracked bitmap (one
 * load, bpf/pg_tracer.bpf.c), sched_switch's for prev, and for next while
 * a member needs switch-ins (pgt_switch_out_only).
 *
 * The program arrays are created by the foundation's object and shared by
 * name (helper/probe_set.c, pset_prepare_object), like `tracked`.
 */
#ifndef PGT_BPF_PGT_CHAIN_BPF_H
#define PGT_BPF_PGT_CHAIN_BPF_H

#include "pg_tracer.h"

#define PGT_CHAIN_MAP(name) \
struct \
{ \
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY); \
	__uint(max_entries, PGT_CHAIN_SLOTS); \
	__type(key, __u32); \
	__type(value, __u32); \
} name SEC(".maps")

PGT_CHAIN_MAP(pgt_chain_enter);
PGT_CHAIN_MAP(pgt_chain_exit);
PGT_CHAIN_MAP(pgt_chain_switch);

/*
 * pgt_chain_from
 *		Tail-call the first filled slot of `chain` at or after `from` (a
 *		constant: each call site keeps a constant index, which the JIT turns
 *		into a direct jump).  Returns only when no later slot is filled.
 */
static __always_inline void
pgt_chain_from(void *ctx, void *chain, const __u32 from)
{
	if (from <= 0)
		bpf_tail_call(ctx, chain, 0);
	if (from <= 1)
		bpf_tail_call(ctx, chain, 1);
	if (from <= 2)
		bpf_tail_call(ctx, chain, 2);
}

_Static_assert(PGT_CHAIN_SLOTS == 3, "pgt_chain_from covers every slot");

#endif							/* PGT_BPF_PGT_CHAIN_BPF_H */
