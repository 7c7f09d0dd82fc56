/*
 * helper/kernel_btf.c
 *	  Tracepoint prototypes from the running kernel's BTF (see
 *	  kernel_btf.h).
 */
#include "kernel_btf.h"

#include <bpf/btf.h>
#include <stdio.h>
#include <string.h>

/*
 * The tracepoints a probe set can do without (it checks kernel_btf_has_tp
 * before it loads), and which of them `trace --hide-tracepoint` hides.
 */
static const char *const optional_tps[] = {"block_io_start", "block_rq_merge"};
#define N_OPTIONAL_TPS	(sizeof(optional_tps) / sizeof(optional_tps[0]))
static int	hidden[N_OPTIONAL_TPS];

/*
 * is_hidden
 *		Has a test hidden tracepoint `name`?
 */
static int
is_hidden(const char *name)
{
	size_t		i;

	for (i = 0; i < N_OPTIONAL_TPS; i++)
		if (hidden[i] && strcmp(name, optional_tps[i]) == 0)
			return 1;
	return 0;
}

/*
 * kernel_btf_tp_args
 *		Each tracepoint has a typedef btf_trace_<name>: a pointer to the
 *		prototype of its probes, whose first parameter is the tracepoint's
 *		own context; the others are its arguments.
 */
int
kernel_btf_tp_args(const char *name)
{
	struct btf *btf;
	const struct btf_type *t;
	char		tname[128];
	int			id;
	int			args = -1;

	if (is_hidden(name))
		return -1;
	btf = btf__load_vmlinux_btf();
	if (btf == NULL)
		return -1;
	snprintf(tname, sizeof(tname), "btf_trace_%s", name);
	id = btf__find_by_name_kind(btf, tname, BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, (unsigned int) id) : NULL;
	if (t != NULL)
		t = btf__type_by_id(btf, t->type);	/* pointer */
	if (t != NULL && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type);	/* function prototype */
	if (t != NULL && btf_is_func_proto(t) && btf_vlen(t) > 0)
		args = btf_vlen(t) - 1;
	btf__free(btf);
	return args;
}

/*
 * kernel_btf_has_tp
 *		A tracepoint whose prototype the BTF has is one tp_btf attaches to.
 */
int
kernel_btf_has_tp(const char *name)
{
	return kernel_btf_tp_args(name) >= 0;
}

/*
 * kernel_btf_has_member
 *		Does struct `type` of the kernel's BTF have a member `member`?  -1
 *		when the BTF or the struct is not there.
 */
int
kernel_btf_has_member(const char *type, const char *member)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	const struct btf_member *m;
	int			id;
	int			found = -1;
	int			i;

	if (btf == NULL)
		return -1;
	id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, (unsigned int) id) : NULL;
	if (t != NULL)
	{
		found = 0;
		m = btf_members(t);
		for (i = 0; i < btf_vlen(t) && !found; i++, m++)
			found = strcmp(btf__name_by_offset(btf, m->name_off), member) == 0;
	}
	btf__free(btf);
	return found;
}

/*
 * kernel_btf_hide_tp
 *		Only a tracepoint some set can do without may be hidden: hiding
 *		another would only make its set fail to load.
 */
int
kernel_btf_hide_tp(const char *name, char *err, size_t errlen)
{
	size_t		i;

	for (i = 0; i < N_OPTIONAL_TPS; i++)
	{
		if (strcmp(name, optional_tps[i]) == 0)
		{
			hidden[i] = 1;
			return 0;
		}
	}
	snprintf(err, errlen, "%s is not an optional tracepoint (use %s or %s)",
			 name, optional_tps[0], optional_tps[1]);
	return -1;
}
