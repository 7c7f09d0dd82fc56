/*
 * helper/kernel_btf.c
 *	  Tracepoint prototypes from the running kernel's BTF (see
 *	  kernel_btf.h).
 */
#include "kernel_btf.h"

#include <bpf/btf.h>
#include <stdio.h>

/*
 * kernel_btf_tp_args
 *		Each tracepoint has a typedef btf_trace_<name>: a pointer to the
 *		prototype of its probes, whose first parameter is the tracepoint's
 *		own context; the others are its arguments.
 */
int
kernel_btf_tp_args(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	char		tname[128];
	int			id;
	int			args = -1;

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
