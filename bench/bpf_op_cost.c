/*
 * bench/bpf_op_cost.c
 *	  The price, on this kernel and CPU, of each operation the probe sets'
 *	  hot paths are made of (a helper call, a map lookup, a user-memory
 *	  read, the clock), and of a program on sys_enter itself.  The probe
 *	  sets' per-event costs are sums of these, so this says which of them
 *	  a change could save, and how much a host's mitigations (retpolines,
 *	  return thunks) add to each call.
 *
 *	  Method: bench/bpf_op_cost.bpf.c repeats one operation REPS times on
 *	  every system call of this process; getppid is timed with REPS and
 *	  with 0 copies, and the difference divided by REPS is the operation's
 *	  price.  Rounds interleave every configuration; medians are printed.
 *
 *	  bpf_op_cost [ROUNDS (5)] [CALLS per measurement (300000)] [REPS (8)]
 *	  bpf_op_cost --hold [HOOKS]: attach empty programs and keep them until
 *	  SIGTERM or SIGINT (bench/hook_floor.sh, bench/toggle_ab.sh hooks).
 *	  HOOKS, a comma-separated list (default exit,switch): exit (the raw
 *	  sys_exit tracepoint), switch (sched_switch), percall (the
 *	  syscalls:sys_exit_* tracepoints of the calls the syscall and network
 *	  sets time, one by one: what timing those calls would cost without a
 *	  host-wide sys_exit program).
 *
 *	  Run as root.  A benchmark: it asserts nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_op_cost.h"
#include "bpf_op_cost.skel.h"

#define MAX_ROUNDS 64

static const char *const op_names[COST_COUNT] = {
	[COST_NONE] = "empty program on sys_enter",
	[COST_EXIT_HOOK] = "+ empty program on sys_exit",
	[COST_EXIT_PERF_OTHER] = "+ empty on syscalls:sys_exit_getpid",
	[COST_EXIT_PERF_SAME] = "+ empty on syscalls:sys_exit_getppid",
	[COST_PID_TGID] = "bpf_get_current_pid_tgid",
	[COST_KTIME] = "bpf_ktime_get_ns",
	[COST_READ_USER] = "bpf_probe_read_user (8 bytes)",
	[COST_READ_KERNEL] = "bpf_probe_read_kernel (8 bytes)",
	[COST_HASH_U32] = "hash lookup, 4-byte key",
	[COST_HASH_32B] = "hash lookup, 32-byte key",
	[COST_LRU_32B] = "LRU hash lookup, 32-byte key",
	[COST_TASK_STORAGE] = "task storage get",
	[COST_ATOMIC_ADD] = "hash lookup + atomic add",
};

/* a word of this process's memory for COST_READ_USER */
static volatile unsigned long long user_word = 42;

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * time_getppid
 *		ns per getppid over `calls` calls, after a warm-up tenth.
 */
static double
time_getppid(long calls)
{
	double		t0;

	for (long i = 0; i < calls / 10; i++)
		(void) syscall(SYS_getppid);
	t0 = now_ns();
	for (long i = 0; i < calls; i++)
		(void) syscall(SYS_getppid);
	return (now_ns() - t0) / calls;
}

/*
 * fill_maps
 *		The keys the program looks up, present: lookups that hit, as the
 *		probe sets' mostly do.
 */
static int
fill_maps(struct bpf_op_cost_bpf *obj, unsigned int tgid)
{
	struct cost_key32 k = {.pid = tgid};
	unsigned long long one = 1;

	if (bpf_map_update_elem(bpf_map__fd(obj->maps.hash_u32), &tgid, &one, BPF_ANY) ||
		bpf_map_update_elem(bpf_map__fd(obj->maps.hash_32b), &k, &one, BPF_ANY) ||
		bpf_map_update_elem(bpf_map__fd(obj->maps.lru_32b), &k, &one, BPF_ANY))
		return -errno;
	return 0;
}

/*
 * measure
 *		ns per getppid with the program doing `op` `reps` times; op < 0:
 *		no program attached.  Negative errno on failure.
 */
static double
measure(int op, int reps, long calls)
{
	struct bpf_op_cost_bpf *obj = NULL;
	double		ns = -1;
	int			err;

	if (op < 0)
		return time_getppid(calls);
	obj = bpf_op_cost_bpf__open();
	if (!obj)
		return -errno;
	obj->rodata->target_tgid = getpid();
	obj->rodata->op = op;
	obj->rodata->reps = reps;
	obj->rodata->user_addr = (unsigned long long) &user_word;
	bpf_program__set_autoload(obj->progs.op_cost_exit, op == COST_EXIT_HOOK);
	bpf_program__set_autoload(obj->progs.op_cost_exit_other, op == COST_EXIT_PERF_OTHER);
	bpf_program__set_autoload(obj->progs.op_cost_exit_same, op == COST_EXIT_PERF_SAME);
	bpf_program__set_autoload(obj->progs.op_cost_switch, false);
	err = bpf_op_cost_bpf__load(obj);
	if (!err)
		err = fill_maps(obj, getpid());
	if (!err)
		err = bpf_op_cost_bpf__attach(obj);
	if (err)
	{
		ns = err < 0 ? err : -1;
		goto cleanup;
	}
	ns = time_getppid(calls);
cleanup:
	bpf_op_cost_bpf__destroy(obj);
	return ns;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * fail
 *		Report a measurement that could not load or attach; exit status 1.
 */
static int
fail(int op, double err)
{
	fprintf(stderr, "bpf_op_cost: %s: cannot load or attach: %s\n", op_names[op],
			err <= -1 ? strerror((int) -err) : "unknown error");
	return 1;
}

/* The calls the syscall and network sets time (bpf/kernel_sysio.bpf.c) */
static const char *const percall_exits[] = {
	"read", "write", "close", "pread64", "pwrite64", "readv", "writev", "fsync",
	"fdatasync", "openat", "sync_file_range", "preadv", "pwritev", "preadv2", "pwritev2",
	"sendto", "recvfrom", "sendmsg", "recvmsg"
};

/*
 * has_hook
 *		Is hook named in the comma-separated list?
 */
static int
has_hook(const char *list, const char *hook)
{
	size_t		n = strlen(hook);
	const char *p = list;

	while ((p = strstr(p, hook)) != NULL)
	{
		if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return 1;
		p += n;
	}
	return 0;
}

/*
 * hooks_valid
 *		Is every name in the comma-separated list a hook hold_hooks knows
 *		(and the list not empty)?  A misspelt name would otherwise hold
 *		nothing, and a toggle run would measure nothing.
 */
static int
hooks_valid(const char *list)
{
	static const char *const known[] = {"exit", "switch", "percall"};
	const char *p = list;

	if (*p == '\0')
		return 0;
	for (;;)
	{
		size_t		n = strcspn(p, ",");
		size_t		k;
		int			ok = 0;

		for (k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (n == strlen(known[k]) && strncmp(p, known[k], n) == 0)
				ok = 1;
		if (!ok)
			return 0;
		if (p[n] == '\0')
			return 1;
		p += n + 1;
	}
}

/*
 * attach_percall
 *		The empty per-call program on each syscalls:sys_exit_* tracepoint of
 *		percall_exits.  Returns 0 or a negative error.
 */
static int
attach_percall(struct bpf_op_cost_bpf *obj)
{
	char		name[64];
	size_t		i;

	for (i = 0; i < sizeof(percall_exits) / sizeof(percall_exits[0]); i++)
	{
		snprintf(name, sizeof(name), "sys_exit_%s", percall_exits[i]);
		if (bpf_program__attach_tracepoint(obj->progs.op_cost_exit_percall, "syscalls",
										   name) == NULL)
		{
			int			err = errno;

			fprintf(stderr, "bpf_op_cost: syscalls:%s: %s\n", name, strerror(err));
			return -err;
		}
	}
	return 0;
}

/*
 * hold_hooks
 *		Empty programs on the hooks named (no sys_enter one: the helper's
 *		foundation has that hook already) until a signal.  The links of the
 *		per-call programs live until the object is destroyed (the process
 *		exits).
 */
static int
hold_hooks(const char *hooks)
{
	struct bpf_op_cost_bpf *obj = bpf_op_cost_bpf__open();
	sigset_t	set;
	int			sig;
	int			err;

	if (!obj)
		return fail(COST_EXIT_HOOK, -errno);
	bpf_program__set_autoload(obj->progs.op_cost_enter, false);
	bpf_program__set_autoload(obj->progs.op_cost_exit_other, false);
	bpf_program__set_autoload(obj->progs.op_cost_exit_same, false);
	bpf_program__set_autoload(obj->progs.op_cost_exit, has_hook(hooks, "exit"));
	bpf_program__set_autoload(obj->progs.op_cost_switch, has_hook(hooks, "switch"));
	bpf_program__set_autoload(obj->progs.op_cost_exit_percall, has_hook(hooks, "percall"));
	err = bpf_op_cost_bpf__load(obj);
	if (!err)
		err = bpf_op_cost_bpf__attach(obj);
	if (!err && has_hook(hooks, "percall"))
		err = attach_percall(obj);
	if (err)
	{
		bpf_op_cost_bpf__destroy(obj);
		return fail(COST_EXIT_HOOK, err);
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("holding empty programs: %s\n", hooks);
	fflush(stdout);
	sigwait(&set, &sig);
	bpf_op_cost_bpf__destroy(obj);
	return 0;
}

int
main(int argc, char **argv)
{
	int			rounds;
	long		calls = argc > 2 ? atol(argv[2]) : 300000;
	int			reps = argc > 3 ? atoi(argv[3]) : 8;
	static double bare[MAX_ROUNDS];
	static double base[MAX_ROUNDS];
	static double exit_hook[MAX_ROUNDS];
	static double exit_perf[2][MAX_ROUNDS];
	static double price[COST_COUNT][MAX_ROUNDS];

	if (argc > 1 && strcmp(argv[1], "--hold") == 0)
	{
		const char *hooks = argc > 2 ? argv[2] : "exit,switch";

		if (!hooks_valid(hooks))
		{
			fprintf(stderr, "bpf_op_cost: --hold %s: name hooks among exit, switch, percall "
					"(comma-separated)\n", hooks);
			return 2;
		}
		return hold_hooks(hooks);
	}
	rounds = argc > 1 ? atoi(argv[1]) : 5;
	if (rounds < 1 || rounds > MAX_ROUNDS || calls < 1000 || reps < 1 || reps > COST_MAX_REPS)
	{
		fprintf(stderr, "usage: bpf_op_cost [ROUNDS 1..%d] [CALLS >= 1000] [REPS 1..%d]\n",
				MAX_ROUNDS, COST_MAX_REPS);
		return 2;
	}
	for (int r = 0; r < rounds; r++)
	{
		double		with_exit;

		bare[r] = measure(-1, 0, calls);
		base[r] = measure(COST_NONE, 0, calls);
		with_exit = measure(COST_EXIT_HOOK, 0, calls);
		if (base[r] < 0 || with_exit < 0)
			return fail(COST_NONE, base[r] < 0 ? base[r] : with_exit);
		exit_hook[r] = with_exit - base[r];
		for (int k = 0; k < 2; k++)
		{
			double		with_perf = measure(COST_EXIT_PERF_OTHER + k, 0, calls);

			if (with_perf < 0)
				return fail(COST_EXIT_PERF_OTHER + k, with_perf);
			exit_perf[k][r] = with_perf - base[r];
		}
		for (int op = COST_EXIT_PERF_SAME + 1; op < COST_COUNT; op++)
		{
			double		zero = measure(op, 0, calls);
			double		full = measure(op, reps, calls);

			if (zero < 0 || full < 0)
				return fail(op, zero < 0 ? zero : full);
			price[op][r] = (full - zero) / reps;
		}
	}
	printf("%-34s %8.0f ns\n", "getppid, no program", median(bare, rounds));
	for (int r = 0; r < rounds; r++)
		base[r] -= bare[r];
	printf("%-34s %+8.0f ns\n", op_names[COST_NONE], median(base, rounds));
	printf("%-34s %+8.0f ns\n", op_names[COST_EXIT_HOOK], median(exit_hook, rounds));
	for (int k = 0; k < 2; k++)
		printf("%-34s %+8.0f ns\n", op_names[COST_EXIT_PERF_OTHER + k],
			   median(exit_perf[k], rounds));
	for (int op = COST_EXIT_PERF_SAME + 1; op < COST_COUNT; op++)
		printf("%-34s %+8.1f ns\n", op_names[op], median(price[op], rounds));
	printf("(medians over %d rounds of %ld calls, %d copies of each operation)\n",
		   rounds, calls, reps);
	return 0;
}
