/*
 * helper/hook_chain.c
 *	  Joining and leaving the foundation's hook chains (hook_chain.h).
 *
 * A member is a loaded program whose attach target is one of the chained
 * tracepoints; joining writes its fd into the hook's program array at the
 * set's slot, and the first member of a chain attaches the hook's
 * dispatcher (sys_enter's is attached for good by bpf_probes_start: it also
 * counts system calls).  Leaving clears the slot; the last member of a
 * chain detaches a dispatcher that joining attached, so a hook nobody uses
 * costs nothing.  The sched_switch dispatcher also hands on the switches
 * that bring a tracked process onto a CPU, but only while a member needs
 * them (chain_member.out_only 0): the helper keeps its flag.
 * Single-threaded: no locking.
 */
#include "hook_chain.h"

#include "log.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>

static const char *const hook_targets[PGT_CHAIN_NHOOKS] = {
	"tp_btf/sys_enter", "tp_btf/sys_exit", "tp_btf/sched_switch"
};

static const char *const hook_maps[PGT_CHAIN_NHOOKS] = {
	"pgt_chain_enter", "pgt_chain_exit", "pgt_chain_switch"
};

/*
 * hook_chain_of
 *		The chain (PGT_CHAIN_*) a program belongs to by its attach target,
 *		-1 for a program attached on its own.
 */
int
hook_chain_of(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	int			h;

	for (h = 0; h < PGT_CHAIN_NHOOKS; h++)
		if (strcmp(sec, hook_targets[h]) == 0)
			return h;
	return -1;
}

/*
 * hook_chain_map_name
 *		The name of a hook's program array in every object.
 */
const char *
hook_chain_map_name(int hook)
{
	return hook >= 0 && hook < PGT_CHAIN_NHOOKS ? hook_maps[hook] : "";
}

/*
 * hook_chain_map_fd
 *		The fd of the program array an object's map of that name must
 *		reuse, -1 when the name is not a chain's.
 */
int
hook_chain_map_fd(const hook_chain *c, const char *map_name)
{
	int			h;

	for (h = 0; h < PGT_CHAIN_NHOOKS; h++)
		if (strcmp(map_name, hook_maps[h]) == 0)
			return c->map_fd[h];
	return -1;
}

/*
 * switch_in_count
 *		Count m in (join 1) or out of (0) the sched_switch members that need
 *		switch-ins, and tell the dispatcher whether any does.  Joining
 *		counts before the member's slot is filled and leaving after it is
 *		cleared, so a member never runs without the switches it needs.
 */
static void
switch_in_count(hook_chain *c, int hook, chain_member *m, int join)
{
	if (hook != PGT_CHAIN_SWITCH)
		return;
	if (join && !m->out_only)
	{
		m->switch_in = 1;
		c->switch_in_users++;
	}
	else if (!join && m->switch_in)
	{
		m->switch_in = 0;
		c->switch_in_users--;
	}
	if (c->switch_out_only != NULL)
	{
		uint32_t	out_only = c->switch_in_users == 0 ? 1u : 0u;

		if (__atomic_exchange_n(c->switch_out_only, out_only, __ATOMIC_SEQ_CST) != out_only)
			log_debug("hook chain %s: switches to a tracked process %s", hook_targets[hook],
					  out_only ? "not handed on (its members need switch-outs only)"
					  : "handed on");
	}
}

/*
 * hook_chain_join
 *		Put prog into its hook's chain at slot; attach the dispatcher when it
 *		is the first member.  Returns 0, or a negative error (then m->hook
 *		is -1 and the caller attaches prog on its own).
 */
int
hook_chain_join(hook_chain *c, const struct bpf_program *prog, int slot, chain_member *m)
{
	int			hook = hook_chain_of(prog);
	__u32		key = (__u32) slot;
	__u32		fd = (__u32) bpf_program__fd(prog);
	int			err;

	m->hook = -1;
	if (hook < 0 || slot < 0 || slot >= PGT_CHAIN_SLOTS || c->map_fd[hook] < 0)
		return -EINVAL;
	/* before it runs: the dispatcher hands on the switches it needs */
	switch_in_count(c, hook, m, 1);
	if (bpf_map_update_elem(c->map_fd[hook], &key, &fd, BPF_ANY) != 0)
	{
		err = -errno;
		switch_in_count(c, hook, m, 0);
		return err;
	}
	if (c->link[hook] == NULL)
	{
		c->link[hook] = bpf_program__attach(c->dispatcher[hook]);
		if (c->link[hook] == NULL)
		{
			err = errno ? -errno : -EINVAL;
			(void) bpf_map_delete_elem(c->map_fd[hook], &key);
			switch_in_count(c, hook, m, 0);
			return err;
		}
		c->owned[hook] = 1;
	}
	c->members[hook]++;
	m->hook = hook;
	m->slot = slot;
	log_debug("hook chain %s: %s joined at slot %d%s", hook_targets[hook],
			  bpf_program__name(prog), slot,
			  hook == PGT_CHAIN_SWITCH && m->out_only ? " (switch-outs only)" : "");
	return 0;
}

/*
 * hook_chain_leave
 *		Clear m's slot; the last member detaches a dispatcher joining
 *		attached.  A member that never joined is left alone.
 */
void
hook_chain_leave(hook_chain *c, chain_member *m)
{
	__u32		key;
	int			hook = m->hook;

	if (hook < 0 || hook >= PGT_CHAIN_NHOOKS)
		return;
	key = (__u32) m->slot;
	if (bpf_map_delete_elem(c->map_fd[hook], &key) != 0 && errno != ENOENT)
		log_warn("hook chain %s: cannot clear slot %d: %s", hook_targets[hook],
				 m->slot, strerror(errno));
	switch_in_count(c, hook, m, 0);
	if (--c->members[hook] == 0 && c->owned[hook])
	{
		bpf_link__destroy(c->link[hook]);
		c->link[hook] = NULL;
		c->owned[hook] = 0;
	}
	m->hook = -1;
}

/*
 * hook_chain_attach
 *		Run prog: in its hook's chain at slot when there are chains (c) and
 *		prog is on a chained hook, else attached on its own (*link).  A
 *		member that cannot join is attached on its own too: its object was
 *		loaded as a chain member and hands the hook on to later slots, which
 *		are empty as well when the kernel refuses members.  Returns 0 or a
 *		negative error (prog does not run).
 */
int
hook_chain_attach(hook_chain *c, struct bpf_program *prog, int slot, chain_member *m,
				  struct bpf_link **link)
{
	int			err;

	m->hook = -1;
	*link = NULL;
	if (c != NULL && hook_chain_of(prog) >= 0)
	{
		err = hook_chain_join(c, prog, slot, m);
		if (err == 0)
			return 0;
		log_warn("hook chain: %s attached on its own: %s", bpf_program__name(prog),
				 strerror(-err));
	}
	*link = bpf_program__attach(prog);
	return *link != NULL ? 0 : (errno ? -errno : -EINVAL);
}

/*
 * hook_chain_detach
 *		Undo hook_chain_attach (either way it went); idempotent.
 */
void
hook_chain_detach(hook_chain *c, chain_member *m, struct bpf_link **link)
{
	if (c != NULL)
		hook_chain_leave(c, m);
	bpf_link__destroy(*link);
	*link = NULL;
}
