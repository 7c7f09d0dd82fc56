/*
 * helper/syscall_exit.c
 *	  The exit hook of the system-call sets (syscall_exit.h).
 *
 * Timing a system call needs a program at its end.  The raw sys_exit
 * tracepoint is on every kernel with tp_btf, but once attached it runs at
 * the exit of every system call of every task of the host: the kernel's
 * path to the program, then the dispatcher's bit test.  On the development
 * VM that alone costs CPU-bound TPC-B some 2 % of its CPU (5.4 µs a
 * transaction, bench/RESULTS.md 2026-12-03), nearly half of what the six
 * kernel sets cost together.  An fexit program on a call's wrapper
 * (__x64_sys_pread64) runs only at that call's exits, through a BPF
 * trampoline, so the host's other calls pay nothing at their exit.  It
 * needs a kernel with trampolines and a policy that lets them load: the
 * development VM refuses them (EPERM at load), so there the sets keep the
 * tracepoint, and the capability row says why.
 *
 * Under --syscall-exit auto (the default) the helper tests fexit once (a
 * minimal program, loaded and attached to the read wrapper, then closed)
 * and uses it when that works; when the object's own fexit programs then
 * fail to load, kernel_sysio.c loads the object again with the tracepoint.
 * --syscall-exit fexit insists (the sets are unavailable without it, with
 * the reason); --syscall-exit tracepoint never tries.
 *
 * Testing: `pg-tracer trace --assume-fexit` takes a failed test for a
 * passed one, so that on a kernel without fexit the fallback after the
 * object's failed load runs (t/021).
 *
 * Single-threaded: no locking.
 */
#include "syscall_exit.h"

#include "bpf_probes.h"
#include "probe_set.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#define WRAPPER_PREFIX "__x64_sys_"
#elif defined(__aarch64__)
#define WRAPPER_PREFIX "__arm64_sys_"
#else
#define WRAPPER_PREFIX NULL
#endif

/* the object's fexit programs: fexit_<set>_<call> (bpf/kernel_sysio.bpf.c) */
#define FEXIT_FILE "fexit_file_"
#define FEXIT_NET "fexit_net_"

static syscall_exit_mode mode = SYSCALL_EXIT_AUTO;

/* the test's outcome: -1 not tested yet, else 0 / 1 with its reason */
static int	fexit_ok = -1;
static char fexit_reason[160];
static int	assume_works;		/* testing: see the file header */

/*
 * syscall_exit_configure
 *		See syscall_exit.h.
 */
int
syscall_exit_configure(const char *arg, char *err, size_t errlen)
{
	static const char *const names[] = {"auto", "fexit", "tracepoint"};
	int			i;

	for (i = 0; i < 3; i++)
		if (strcmp(arg, names[i]) == 0)
		{
			mode = (syscall_exit_mode) i;
			return 0;
		}
	snprintf(err, errlen, "%s: use auto, fexit or tracepoint", arg);
	return -1;
}

syscall_exit_mode
syscall_exit_mode_chosen(void)
{
	return mode;
}

/*
 * wrapper_id
 *		BTF id of the system-call wrapper of `call` (its name into target),
 *		or a negative error (reason filled).
 */
static int
wrapper_id(const struct btf *btf, const char *call, char *target, size_t tlen,
		   char *reason, size_t len)
{
	const char *prefix = WRAPPER_PREFIX;
	int			id;

	if (prefix == NULL)
	{
		snprintf(reason, len, "system-call wrappers not known for this architecture");
		return -EOPNOTSUPP;
	}
	snprintf(target, tlen, "%s%s", prefix, call);
	id = btf__find_by_name_kind(btf, target, BTF_KIND_FUNC);
	if (id <= 0)
		snprintf(reason, len, "no function %s in the kernel's BTF", target);
	return id > 0 ? id : -ENOENT;
}

/*
 * try_fexit
 *		Load "return 0" as an fexit program on function `target` (BTF id
 *		`id`) and attach it; close both.  1 when both worked, else 0 with
 *		the step that failed and why.
 */
static int
try_fexit(int id, const char *target, char *reason, size_t len)
{
	const struct bpf_insn insns[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
				.expected_attach_type = BPF_TRACE_FEXIT,
				.attach_btf_id = (__u32) id);
	int			prog;
	int			link;

	prog = bpf_prog_load(BPF_PROG_TYPE_TRACING, "pgt_fexit_test", "GPL", insns, 2, &opts);
	if (prog < 0)
	{
		snprintf(reason, len, "fexit program on %s: load: %s", target, strerror(errno));
		return 0;
	}
	link = bpf_link_create(prog, 0, BPF_TRACE_FEXIT, NULL);
	if (link < 0)
		snprintf(reason, len, "fexit program on %s: attach: %s", target, strerror(errno));
	else
	{
		snprintf(reason, len, "fexit programs load and attach");
		close(link);
	}
	close(prog);
	return link >= 0;
}

/*
 * syscall_exit_assume_fexit
 *		See syscall_exit.h.
 */
void
syscall_exit_assume_fexit(void)
{
	assume_works = 1;
}

/*
 * syscall_exit_fexit_works
 *		See syscall_exit.h.
 */
int
syscall_exit_fexit_works(char *reason, size_t len)
{
	if (fexit_ok < 0)
	{
		struct btf *btf = btf__load_vmlinux_btf();
		int			id;

		if (btf == NULL)
		{
			snprintf(fexit_reason, sizeof(fexit_reason), "no kernel BTF");
			fexit_ok = 0;
		}
		else
		{
			char		target[64];

			id = wrapper_id(btf, "read", target, sizeof(target), fexit_reason,
							sizeof(fexit_reason));
			fexit_ok = id > 0 && try_fexit(id, target, fexit_reason, sizeof(fexit_reason));
			btf__free(btf);
		}
		if (!fexit_ok && assume_works)
		{
			fexit_ok = 1;
			strncat(fexit_reason, " (assumed to work: --assume-fexit)",
					sizeof(fexit_reason) - strlen(fexit_reason) - 1);
		}
	}
	snprintf(reason, len, "%s", fexit_reason);
	return fexit_ok;
}

/*
 * syscall_exit_detect
 *		Capability row "fexit".
 */
void
syscall_exit_detect(probe_status *s)
{
	snprintf(s->mechanism, sizeof(s->mechanism), "BPF trampoline");
	s->state = syscall_exit_fexit_works(s->reason, sizeof(s->reason)) ?
		PGT_PROBE_AVAILABLE : PGT_PROBE_UNAVAILABLE;
}

/*
 * fexit_call
 *		The call an fexit program of the object times ("pread64" of
 *		fexit_file_pread64), and whether its set is selected; NULL for the
 *		object's other programs.
 */
static const char *
fexit_call(const char *prog_name, int file, int net, int *selected)
{
	if (strncmp(prog_name, FEXIT_FILE, strlen(FEXIT_FILE)) == 0)
	{
		*selected = file;
		return prog_name + strlen(FEXIT_FILE);
	}
	if (strncmp(prog_name, FEXIT_NET, strlen(FEXIT_NET)) == 0)
	{
		*selected = net;
		return prog_name + strlen(FEXIT_NET);
	}
	return NULL;
}

/*
 * setup_fexit
 *		Load an fexit program or not; when it is, on its call's wrapper.
 */
static int
setup_fexit(const struct btf *btf, struct bpf_program *prog, const char *call, int load,
			char *reason, size_t len)
{
	char		target[64];
	int			err = bpf_program__set_autoload(prog, load);

	if (err != 0 || !load)
		return err;
	err = wrapper_id(btf, call, target, sizeof(target), reason, len);
	if (err < 0)
		return err;
	return bpf_program__set_attach_target(prog, 0, target);
}

/*
 * syscall_exit_setup
 *		See syscall_exit.h.
 */
int
syscall_exit_setup(struct bpf_object *obj, int use_fexit, int file, int net,
				   char *reason, size_t len)
{
	struct bpf_program *prog;
	struct btf *btf = NULL;
	int			err = 0;

	reason[0] = '\0';
	if (use_fexit && (btf = btf__load_vmlinux_btf()) == NULL)
	{
		snprintf(reason, len, "no kernel BTF");
		return -ENOENT;
	}
	bpf_object__for_each_program(prog, obj)
	{
		const char *name = bpf_program__name(prog);
		int			selected = 0;
		const char *call = fexit_call(name, file, net, &selected);

		if (strcmp(name, "pgt_ksys_exit") == 0)
			err = bpf_program__set_autoload(prog, !use_fexit);
		else if (call != NULL)
			err = setup_fexit(btf, prog, call, use_fexit && selected, reason, len);
		if (err != 0)
			break;
	}
	if (err != 0 && reason[0] == '\0')
		snprintf(reason, len, "fexit programs not set up: %s", strerror(-err));
	btf__free(btf);
	return err < 0 ? err : 0;
}
