/*
 * test/unit/test_syscall_exit.c
 *	  The exit hook of the system-call sets (helper/syscall_exit.c) on the
 *	  real object and the running kernel's BTF, without loading anything:
 *	  --syscall-exit's values; the object has one fexit program for each
 *	  file call the syscall set times (the ops 1..15 of pgt_kop_name) and
 *	  four for the socket calls; setting up fexit loads exactly the
 *	  selected sets' fexit programs, each with its wrapper found in this
 *	  kernel's BTF, and no sys_exit program; setting up the tracepoint
 *	  loads the sys_exit program and no fexit one.
 */
#include "syscall_exit.h"
#include "kernel_sysio.skel.h"
#include "pgt_kernel.h"
#include "unit.h"

#include <bpf/libbpf.h>

/* the file calls are the ops 1 (PGT_KOP_READ) .. PGT_KOP_CLOSE */
#define FILE_OPS PGT_KOP_CLOSE
_Static_assert(PGT_KOP_READ == 1, "file ops start at 1");

typedef struct loaded
{
	int			file;			/* fexit_file_* programs to be loaded */
	int			net;
	int			file_all;		/* fexit_file_* programs in the object */
	int			net_all;
	int			sys_exit;		/* pgt_ksys_exit to be loaded */
	int			ops_seen[FILE_OPS + 1];
} loaded;

/*
 * count
 *		What the object will load, after setup.
 */
static loaded
count(struct bpf_object *obj)
{
	struct bpf_program *prog;
	loaded		l;
	unsigned	op;

	memset(&l, 0, sizeof(l));
	bpf_object__for_each_program(prog, obj)
	{
		const char *name = bpf_program__name(prog);
		int			on = bpf_program__autoload(prog);

		if (strcmp(name, "pgt_ksys_exit") == 0)
			l.sys_exit = on;
		else if (strncmp(name, "fexit_file_", 11) == 0)
		{
			l.file_all++;
			l.file += on;
			for (op = 1; op <= FILE_OPS; op++)
				if (strcmp(name + 11, pgt_kop_name(op)) == 0)
					l.ops_seen[op]++;
		}
		else if (strncmp(name, "fexit_net_", 10) == 0)
		{
			l.net_all++;
			l.net += on;
		}
	}
	return l;
}

/*
 * setup
 *		Open the object, set it up, count; err gets setup's result.
 */
static loaded
setup(int fexit, int file, int net, int *err, char *reason, size_t len)
{
	struct kernel_sysio_bpf *skel = kernel_sysio_bpf__open();
	loaded		l;

	memset(&l, 0, sizeof(l));
	*err = -1;
	if (skel == NULL)
		return l;
	*err = syscall_exit_setup(skel->obj, fexit, file, net, reason, len);
	l = count(skel->obj);
	kernel_sysio_bpf__destroy(skel);
	return l;
}

int
main(void)
{
	char		err[128];
	char		reason[160];
	loaded		l;
	int			rc;
	unsigned	op;

	CHECK_INT(syscall_exit_mode_chosen(), SYSCALL_EXIT_AUTO);
	CHECK_INT(syscall_exit_configure("tracepoint", err, sizeof(err)), 0);
	CHECK_INT(syscall_exit_mode_chosen(), SYSCALL_EXIT_TRACEPOINT);
	CHECK_INT(syscall_exit_configure("fexit", err, sizeof(err)), 0);
	CHECK_INT(syscall_exit_mode_chosen(), SYSCALL_EXIT_FEXIT);
	CHECK_INT(syscall_exit_configure("kprobe", err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "use auto, fexit or tracepoint");
	CHECK_INT(syscall_exit_mode_chosen(), SYSCALL_EXIT_FEXIT);

	libbpf_set_print(NULL);
	l = setup(0, 1, 1, &rc, reason, sizeof(reason));
	CHECK_INT(rc, 0);
	CHECK_INT(l.file_all, FILE_OPS);
	CHECK_INT(l.net_all, 4);
	for (op = 1; op <= FILE_OPS; op++)
		CHECK(l.ops_seen[op] == 1, "one fexit program for %s", pgt_kop_name(op));
	CHECK(l.sys_exit && l.file == 0 && l.net == 0,
		  "tracepoint: sys_exit %d, fexit %d + %d", l.sys_exit, l.file, l.net);

	l = setup(1, 1, 1, &rc, reason, sizeof(reason));
	CHECK(rc == 0, "fexit, both sets: every wrapper in this kernel's BTF: %s", reason);
	CHECK(!l.sys_exit && l.file == FILE_OPS && l.net == 4,
		  "fexit, both sets: sys_exit %d, fexit %d + %d", l.sys_exit, l.file, l.net);

	l = setup(1, 1, 0, &rc, reason, sizeof(reason));
	CHECK_INT(rc, 0);
	CHECK(!l.sys_exit && l.file == FILE_OPS && l.net == 0,
		  "fexit, syscall alone: sys_exit %d, fexit %d + %d", l.sys_exit, l.file, l.net);

	l = setup(1, 0, 1, &rc, reason, sizeof(reason));
	CHECK_INT(rc, 0);
	CHECK(!l.sys_exit && l.file == 0 && l.net == 4,
		  "fexit, network alone: sys_exit %d, fexit %d + %d", l.sys_exit, l.file, l.net);
	UNIT_MAIN_END("test_syscall_exit");
}
