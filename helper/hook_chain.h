/*
 * helper/hook_chain.h
 *	  The hook chains of the foundation's object (see bpf/pgt_chain.bpf.h):
 *	  a probe set's program for sys_enter, sys_exit or sched_switch joins
 *	  the hook's program array at its set's slot instead of being attached;
 *	  the hook's dispatcher is attached while the chain has a member.
 *
 * Single-threaded (the daemon's or the trace loop): no locking.
 */
#ifndef PGT_HELPER_HOOK_CHAIN_H
#define PGT_HELPER_HOOK_CHAIN_H

#include "pg_tracer.h"

#include <stdint.h>

struct bpf_program;
struct bpf_link;

typedef struct hook_chain
{
	int			map_fd[PGT_CHAIN_NHOOKS];	/* the program arrays */
	struct bpf_program *dispatcher[PGT_CHAIN_NHOOKS];
	struct bpf_link *link[PGT_CHAIN_NHOOKS];	/* dispatcher attached */
	int			owned[PGT_CHAIN_NHOOKS];	/* link is ours to detach */
	int			members[PGT_CHAIN_NHOOKS];
	/* sched_switch members that need switch-ins (chain_member.out_only 0) */
	int			switch_in_users;
	/* the dispatcher's pgt_switch_out_only (mmapped bss), NULL: left 0 */
	volatile uint32_t *switch_out_only;
} hook_chain;

/* A chain member: where it joined, to leave again. */
typedef struct chain_member
{
	int			hook;			/* PGT_CHAIN_*, -1: not joined */
	int			slot;
	/*
	 * Set by the caller before joining: a sched_switch member that needs
	 * only the switches that take a tracked process off a CPU (all others
	 * are counted in switch_in_users while they are members)
	 */
	int			out_only;
	int			switch_in;		/* counted in switch_in_users */
} chain_member;

extern int	hook_chain_of(const struct bpf_program *prog);
extern const char *hook_chain_map_name(int hook);
extern int	hook_chain_map_fd(const hook_chain *c, const char *map_name);
extern int	hook_chain_join(hook_chain *c, const struct bpf_program *prog, int slot,
							chain_member *m);
extern void hook_chain_leave(hook_chain *c, chain_member *m);
extern int	hook_chain_attach(hook_chain *c, struct bpf_program *prog, int slot,
							  chain_member *m, struct bpf_link **link);
extern void hook_chain_detach(hook_chain *c, chain_member *m, struct bpf_link **link);

#endif							/* PGT_HELPER_HOOK_CHAIN_H */
