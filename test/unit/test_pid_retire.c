/*
 * test/unit/test_pid_retire.c
 *	  Folding the rows of exited processes (helper/pid_retire.c) on real
 *	  BPF hash maps: --keep-exited parsing, the u64 fold (sums, maxima,
 *	  current values), and a retirement round: a pid absent from the
 *	  `tracked` stand-in folds into its cluster's row (sums added, maximum
 *	  kept, the original row deleted), a tracked pid and the kernel's pid 0
 *	  stay, two exited pids of one cluster share one folded row, and a
 *	  second cluster gets a row of its own; rows of exited processes are
 *	  published after all others; a full map folds at once, each fold
 *	  making its own room; with role_in_key the rows of exited processes
 *	  fold per role, named by the role callback (asked while a process
 *	  runs and once it is gone); a pid taken by a new process folds the
 *	  old one's rows in every map at its next round, once, with the old
 *	  role, and not when they folded already; a map that has not folded
 *	  them yet when the reuse comes after --keep-exited ran out folds them
 *	  then; ten thousand exited pids in one round all fold (the table
 *	  grows).  Needs CAP_BPF (the test suite
 *	  runs as root); without it the map checks are skipped and say so.
 */
#include "pid_retire.h"
#include "probe_set.h"
#include "unit.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* A value like the kernel sets': counters, a maximum, then the postmaster. */
struct val
{
	uint64_t	calls;
	uint64_t	bytes;
	uint64_t	max_ns;
	uint32_t	pm;
	uint32_t	pad;
};

struct key
{
	uint32_t	pid;
	uint32_t	op;
};

static const retire_u64_layout layout = {.nwords = 3, .max_mask = 1ULL << 2};

/* The retire_map of a test map of struct key -> struct val (max 0: no capacity given). */
static retire_map
test_map(const char *name, int fd, size_t max_entries)
{
	retire_map	m = {
		.name = name, .fd = fd, .max_entries = max_entries, .ksize = sizeof(struct key),
		.vsize = sizeof(struct val), .kstride = sizeof(struct key),
		.vstride = sizeof(struct val), .pid_off = 0, .pm_off = offsetof(struct val, pm),
		.fold = pid_retire_fold_u64, .fold_arg = &layout};

	return m;
}

static void
test_configure(void)
{
	char		err[128];

	CHECK_INT(pid_retire_configure("0", err, sizeof(err)), 0);
	CHECK_INT(pid_retire_configure("86400", err, sizeof(err)), 0);
	CHECK_INT(pid_retire_configure("86401", err, sizeof(err)), -1);
	CHECK(strstr(err, "0 to 86400") != NULL, "error names the range: %s", err);
	CHECK_INT(pid_retire_configure("-1", err, sizeof(err)), -1);
	CHECK_INT(pid_retire_configure("5s", err, sizeof(err)), -1);
	CHECK_INT(pid_retire_configure("", err, sizeof(err)), -1);
}

static void
test_fold_u64(void)
{
	struct val	d = {10, 100, 7, 1, 0};
	struct val	s = {1, 5, 9, 2, 0};
	retire_u64_layout last = {.nwords = 3, .last_mask = 1ULL << 1};

	pid_retire_fold_u64(&d, &s, &layout);
	CHECK_INT(d.calls, 11);
	CHECK_INT(d.bytes, 105);
	CHECK_INT(d.max_ns, 9);
	CHECK_INT(d.pm, 1);			/* words after the counters untouched */
	s.max_ns = 3;
	pid_retire_fold_u64(&d, &s, &layout);
	CHECK_INT(d.max_ns, 9);		/* a smaller maximum does not lower it */
	pid_retire_fold_u64(&d, &s, &last);
	CHECK_INT(d.bytes, 5);		/* a current value: the newer one */
	/* kept only from a row that set one (word 0 counts the updates) */
	last.last_guard = 1;
	s.calls = 0;
	s.bytes = 0;
	pid_retire_fold_u64(&d, &s, &last);
	CHECK_INT(d.bytes, 5);		/* src never set it: its 0 is no value */
	s.calls = 1;
	s.bytes = 0;
	pid_retire_fold_u64(&d, &s, &last);
	CHECK_INT(d.bytes, 0);		/* src set it to 0: kept */
}

static void
put(int fd, uint32_t pid, uint32_t op, uint64_t calls, uint64_t bytes, uint64_t max,
	uint32_t pm)
{
	struct key	k = {pid, op};
	struct val	v = {calls, bytes, max, pm, 0};

	CHECK_INT(bpf_map_update_elem(fd, &k, &v, BPF_ANY), 0);
}

static int
get(int fd, uint32_t pid, uint32_t op, struct val *v)
{
	struct key	k = {pid, op};

	return bpf_map_lookup_elem(fd, &k, v);
}

/* Copy the map as the sets do: keys and values in two arrays. */
static size_t
copy(int fd, struct key *keys, struct val *vals, size_t max)
{
	struct key	cur;
	struct key	next;
	void	   *prev = NULL;
	size_t		n = 0;

	while (n < max && bpf_map_get_next_key(fd, prev, &next) == 0)
	{
		cur = next;
		prev = &cur;
		if (bpf_map_lookup_elem(fd, &cur, &vals[n]) == 0)
			keys[n++] = cur;
	}
	return n;
}

static void
test_round(int fd, int tracked)
{
	retire_map	m = test_map("test", fd, 0);
	struct key	keys[16];
	struct val	vals[16];
	struct val	v;
	uint32_t	alive = 222;
	uint32_t	one = 1;
	char		err[64];
	size_t		n;

	CHECK_INT(bpf_map_update_elem(tracked, &alive, &one, BPF_ANY), 0);
	put(fd, 111, 1, 2, 20, 50, 7);	/* exited, cluster 7 */
	put(fd, 333, 1, 3, 30, 80, 7);	/* exited, cluster 7, same op */
	put(fd, 444, 1, 1, 10, 90, 8);	/* exited, cluster 8 */
	put(fd, 222, 1, 5, 50, 10, 7);	/* alive */
	put(fd, 0, 1, 4, 40, 10, 0);	/* the kernel's */

	CHECK_INT(pid_retire_configure("0", err, sizeof(err)), 0);
	pid_retire_setup(tracked, NULL, NULL);
	n = copy(fd, keys, vals, 16);
	CHECK_INT(n, 5);
	/*
	 * Found gone after this copy: a process's exit may still add to its
	 * rows after the copy (its task accumulators fold in as it exits), so
	 * its rows fold at a round SETTLE_NS on, from that round's copy.
	 */
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 0);
	put(fd, 111, 1, 3, 25, 50, 7);	/* what its exit added after the copy */
	usleep(250 * 1000);
	n = copy(fd, keys, vals, 16);
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 3);

	CHECK(get(fd, 111, 1, &v) != 0, "exited pid 111's row deleted");
	CHECK(get(fd, 333, 1, &v) != 0, "exited pid 333's row deleted");
	CHECK(get(fd, 444, 1, &v) != 0, "exited pid 444's row deleted");
	CHECK_INT(get(fd, PGT_RETIRED_PID(7), 1, &v), 0);
	CHECK_INT(v.calls, 6);
	CHECK_INT(v.bytes, 55);
	CHECK_INT(v.max_ns, 80);
	CHECK_INT(v.pm, 7);
	CHECK_INT(get(fd, PGT_RETIRED_PID(8), 1, &v), 0);
	CHECK_INT(v.calls, 1);
	CHECK_INT(v.pm, 8);
	CHECK_INT(get(fd, 222, 1, &v), 0);
	CHECK_INT(v.calls, 5);
	CHECK_INT(get(fd, 0, 1, &v), 0);
	CHECK_INT(v.calls, 4);

	/* a later row of an exited pid adds to the folded row; folded rows stay */
	put(fd, 111, 1, 1, 1, 100, 7);
	n = copy(fd, keys, vals, 16);
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 1);
	CHECK_INT(get(fd, PGT_RETIRED_PID(7), 1, &v), 0);
	CHECK_INT(v.calls, 7);
	CHECK_INT(v.max_ns, 100);
	n = copy(fd, keys, vals, 16);
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 0);
	CHECK_INT(n, 4);			/* two folded, the live one, the kernel's */
}

/* A probe set that publishes one kernel-io row per pid of `publish_pids`. */
static const uint32_t publish_pids[] = {PGT_RETIRED_PID(7), 111, 222, 0, 333};

static void
fake_publish(pset_inst *inst, pset_pub *pub)
{
	size_t		i;

	for (i = 0; i < sizeof(publish_pids) / sizeof(publish_pids[0]); i++)
	{
		struct pgt_kernel_io_entry e = {.pid = publish_pids[i]};

		(void) pset_pub_add_pid(pub, PGT_SEC_KERNEL_IO, &e, sizeof(e), publish_pids[i]);
	}
}

/*
 * After test_round: 111 and 333 have exited, 222 lives.  The live rows and
 * the kernel's come first, then the folded row of exited processes (added
 * first here), then the rows of the two that just exited, in the order
 * they came: a table too small for them all leaves out the dead.
 */
static void
test_publish_order(void)
{
	static const probe_set fake = {.name = "fake", .publish = fake_publish};
	static const uint32_t want[] = {222, 0, PGT_RETIRED_PID(7), 111, 333};
	pset_inst	inst = {.set = &fake, .status = {.state = PGT_PROBE_AVAILABLE}};
	pset_runtime rt = {.insts = &inst, .ninsts = 1};
	pset_pub	pub = {.postmaster = 7};
	const struct pgt_kernel_io_entry *rows;
	size_t		i;

	CHECK_INT(pid_retire_exiting(111), 1);
	CHECK_INT(pid_retire_exiting(222), 0);
	CHECK_INT(pid_retire_exiting(0), 0);
	CHECK_INT(pid_retire_exiting(PGT_RETIRED_PID(7)), 0);
	CHECK_INT(pid_retire_exiting(424242), 0);	/* never seen */
	pset_runtime_publish(&rt, &pub);
	CHECK_INT(pub.tables[PGT_SEC_KERNEL_IO].count, 5);
	rows = (const struct pgt_kernel_io_entry *) pub.tables[PGT_SEC_KERNEL_IO].rows;
	for (i = 0; i < 5 && rows != NULL; i++)
		CHECK_INT(rows[i].pid, want[i]);
	pset_runtime_publish(&rt, &pub);	/* a second publication starts afresh */
	CHECK_INT(pub.tables[PGT_SEC_KERNEL_IO].count, 5);
	pset_pub_free(&pub);
}

/*
 * A full map (8 entries, all rows of one exited pid, each with a key of its
 * own): half full means no waiting for --keep-exited, and each fold makes
 * its room by deleting the row first.
 */
static void
test_full_map(int tracked)
{
	int			fd = bpf_map_create(BPF_MAP_TYPE_HASH, "retire_full", sizeof(struct key),
									sizeof(struct val), 8, NULL);
	retire_map	m = test_map("full", fd, 8);
	struct key	keys[8];
	struct val	vals[8];
	struct val	v;
	char		err[64];
	uint32_t	op;
	size_t		n;

	if (fd < 0)
		return;
	for (op = 1; op <= 8; op++)
		put(fd, 555, op, op, 10 * op, op, 9);
	CHECK_INT(pid_retire_configure("60", err, sizeof(err)), 0);
	pid_retire_setup(tracked, NULL, NULL);
	n = copy(fd, keys, vals, 8);
	CHECK_INT(n, 8);
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 0);	/* found gone now */
	usleep(250 * 1000);
	n = copy(fd, keys, vals, 8);
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 8);
	for (op = 1; op <= 8; op++)
	{
		CHECK(get(fd, 555, op, &v) != 0, "row %u of the exited pid deleted", op);
		CHECK_INT(get(fd, PGT_RETIRED_PID(9), op, &v), 0);
		CHECK_INT(v.bytes, 10 * op);
	}
	/* a map under half full waits the 60 s */
	close(fd);
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "retire_half", sizeof(struct key),
						sizeof(struct val), 64, NULL);
	m.fd = fd;
	m.max_entries = 64;
	put(fd, 556, 1, 1, 1, 1, 9);
	n = copy(fd, keys, vals, 8);
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 0);
	close(fd);
}

/* A trace of one backend keeps 557's rows (its workers' too, in life). */
static int
keep_557(void *arg, uint32_t pid)
{
	(void) arg;
	return pid == 557;
}

/*
 * pid_retire_keep: the kept pid's rows stay under it, exited or not; an
 * exited other's fold as ever.
 */
static void
test_keep(int tracked)
{
	int			fd = bpf_map_create(BPF_MAP_TYPE_HASH, "retire_keep", sizeof(struct key),
									sizeof(struct val), 8, NULL);
	retire_map	m = test_map("keep", fd, 8);
	struct key	keys[8];
	struct val	vals[8];
	struct val	v;
	char		err[64];
	size_t		n;

	if (fd < 0)
		return;
	put(fd, 557, 1, 2, 20, 5, 9);	/* exited, kept */
	put(fd, 558, 1, 3, 30, 5, 9);	/* exited, not kept */
	CHECK_INT(pid_retire_configure("0", err, sizeof(err)), 0);
	pid_retire_setup(tracked, NULL, NULL);
	pid_retire_keep(keep_557, NULL);
	n = copy(fd, keys, vals, 8);
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 0);	/* found gone now */
	usleep(250 * 1000);
	n = copy(fd, keys, vals, 8);
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 1);
	CHECK_INT(get(fd, 557, 1, &v), 0);
	CHECK_INT(v.calls, 2);
	CHECK(get(fd, 558, 1, &v) != 0, "the other exited pid's row folded");
	CHECK_INT(get(fd, PGT_RETIRED_PID(9), 1, &v), 0);
	CHECK_INT(v.calls, 3);
	pid_retire_keep(NULL, NULL);
	close(fd);
}

/*
 * The daemon's role source, faked: 888 runs (a client backend); of the
 * exited, 777 was a parallel worker, 778 a client backend, and 779 left no
 * title.  Calls counts the questions about processes gone.
 */
static int	gone_questions;

static uint32_t
fake_role(void *arg, uint32_t pid, int alive)
{
	(void) arg;
	if (!alive)
		gone_questions++;
	switch (pid)
	{
		case 888:
			return alive ? PGT_ROLE_CLIENT_BACKEND : 0;
		case 777:
			return alive ? 0 : PGT_ROLE_PARALLEL_WORKER;
		case 778:
			return PGT_ROLE_CLIENT_BACKEND;
	}
	return 0;
}

/* test_reuse's roles: pid 901 runs a client backend, then a parallel worker. */
static int	reuse_role_generation;

static uint32_t
fake_reuse_role(void *arg, uint32_t pid, int alive)
{
	(void) arg;
	if (pid == 903 && alive)
		return PGT_ROLE_CLIENT_BACKEND;
	if (pid != 901 || !alive)
		return 0;
	return reuse_role_generation ? PGT_ROLE_PARALLEL_WORKER : PGT_ROLE_CLIENT_BACKEND;
}

static void
test_roles(int tracked)
{
	int			fd = bpf_map_create(BPF_MAP_TYPE_HASH, "retire_roles", sizeof(struct key),
									sizeof(struct val), 64, NULL);
	retire_map	m = test_map("roles", fd, 0);
	pset_pub	pub = {.postmaster = 7};
	struct key	keys[16];
	struct val	vals[16];
	struct val	v;
	uint32_t	alive = 888;
	uint32_t	one = 1;
	char		err[64];
	size_t		n;

	if (fd < 0)
		return;
	m.role_in_key = 1;
	CHECK_INT(bpf_map_update_elem(tracked, &alive, &one, BPF_ANY), 0);
	put(fd, 777, 1, 2, 20, 50, 7);	/* exited parallel worker */
	put(fd, 778, 1, 3, 30, 60, 7);	/* exited client backend, same op */
	put(fd, 779, 1, 4, 40, 70, 7);	/* exited, role unknown */
	put(fd, 888, 1, 5, 50, 80, 7);	/* running client backend */
	CHECK_INT(pid_retire_configure("0", err, sizeof(err)), 0);
	pid_retire_setup(tracked, fake_role, NULL);
	gone_questions = 0;
	n = copy(fd, keys, vals, 16);
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 0);	/* found gone now */
	usleep(250 * 1000);
	n = copy(fd, keys, vals, 16);
	CHECK_INT(pid_retire_rows(&m, keys, vals, n), 3);
	CHECK_INT(get(fd, PGT_RETIRED_PID_ROLE(7, PGT_ROLE_PARALLEL_WORKER), 1, &v), 0);
	CHECK_INT(v.calls, 2);
	CHECK_INT(get(fd, PGT_RETIRED_PID_ROLE(7, PGT_ROLE_CLIENT_BACKEND), 1, &v), 0);
	CHECK_INT(v.calls, 3);
	CHECK_INT(get(fd, PGT_RETIRED_PID(7), 1, &v), 0);	/* role 0 */
	CHECK_INT(v.calls, 4);
	CHECK_INT(get(fd, 888, 1, &v), 0);
	/* each gone pid asked when found gone, and 779 once more before it folds */
	CHECK(gone_questions >= 3 && gone_questions <= 4, "questions about the gone: %d",
		  gone_questions);
	CHECK_INT(pid_retire_role(777), PGT_ROLE_PARALLEL_WORKER);
	CHECK_INT(pid_retire_role(888), PGT_ROLE_CLIENT_BACKEND);
	CHECK_INT(pid_retire_role(779), 0);
	/* what the publishers name: folded rows by their pid, the kernel none */
	CHECK_INT(pset_pub_role(&pub, PGT_RETIRED_PID_ROLE(7, PGT_ROLE_PARALLEL_WORKER)),
			  PGT_ROLE_PARALLEL_WORKER);
	CHECK_INT(pset_pub_role(&pub, 0), 0);
	CHECK_INT(pset_pub_role(&pub, 777), PGT_ROLE_PARALLEL_WORKER);
	CHECK_INT(pset_pub_nspid(&pub, PGT_RETIRED_PID_ROLE(7, PGT_ROLE_CLIENT_BACKEND)),
			  PGT_PID_EXITED);
	/* an exit notes the pid the cluster knew; the role only when none was */
	CHECK_INT(pid_retire_nspid(990), 0);
	pid_retire_note_exit(990, PGT_ROLE_CLIENT_BACKEND, 42);
	CHECK_INT(pid_retire_nspid(990), 42);
	CHECK_INT(pid_retire_role(990), PGT_ROLE_CLIENT_BACKEND);
	pid_retire_note_exit(990, PGT_ROLE_PARALLEL_WORKER, 43);	/* a later process */
	CHECK_INT(pid_retire_nspid(990), 43);
	CHECK_INT(pid_retire_role(990), PGT_ROLE_CLIENT_BACKEND);
	close(fd);
}

/* The `tracked` entry of pid as the BPF side writes it: process `ident`. */
static void
track(int tracked, uint32_t pid, uint64_t ident)
{
	struct pgt_tracked t = {.postmaster = 7, .attached_ns = ident};

	CHECK_INT(bpf_map_update_elem(tracked, &pid, &t, BPF_ANY), 0);
}

/*
 * Pid 901 runs as a client backend and has rows in two maps; its process
 * exits and a parallel worker takes the pid.  At the next check (200 ms on)
 * both maps fold the old rows, into the client backends' folded row, and a
 * row the new process makes afterwards stays its own.  Pid 902's rows fold
 * at exit (--keep-exited 0); a new process on it keeps its rows.
 */
static void
test_reuse(void)
{
	int			tracked = bpf_map_create(BPF_MAP_TYPE_HASH, "retire_trk24", 4,
										 sizeof(struct pgt_tracked), 64, NULL);
	int			fa = bpf_map_create(BPF_MAP_TYPE_HASH, "reuse_a", sizeof(struct key),
									sizeof(struct val), 64, NULL);
	int			fb = bpf_map_create(BPF_MAP_TYPE_HASH, "reuse_b", sizeof(struct key),
									sizeof(struct val), 64, NULL);
	retire_map	ma = test_map("reuse_a", fa, 0);
	retire_map	mb = test_map("reuse_b", fb, 0);
	struct key	keys[16];
	struct val	vals[16];
	struct val	v;
	char		err[64];
	uint32_t	gone = 902;

	if (tracked < 0 || fa < 0 || fb < 0)
		goto cleanup;
	ma.role_in_key = mb.role_in_key = 1;
	track(tracked, 901, 1000);
	track(tracked, 902, 1000);
	put(fa, 901, 1, 2, 20, 50, 7);
	put(fb, 901, 1, 3, 30, 60, 7);
	put(fb, 902, 1, 4, 40, 70, 7);
	CHECK_INT(pid_retire_configure("60", err, sizeof(err)), 0);
	pid_retire_setup(tracked, fake_reuse_role, NULL);
	CHECK_INT(pid_retire_rows(&ma, keys, vals, copy(fa, keys, vals, 16)), 0);
	CHECK_INT(pid_retire_rows(&mb, keys, vals, copy(fb, keys, vals, 16)), 0);
	CHECK_INT(pid_retire_rows_of_other(901, 1000), 0);
	/* a process the checks have not seen on the pid: the rows are not its */
	CHECK_INT(pid_retire_rows_of_other(901, 2000), 1);

	track(tracked, 901, 2000);	/* another process on 901 */
	CHECK_INT(bpf_map_delete_elem(tracked, &gone), 0);
	CHECK_INT(pid_retire_configure("0", err, sizeof(err)), 0);
	usleep(250 * 1000);			/* past the last checks' CHECK_NS */
	reuse_role_generation = 1;
	CHECK_INT(pid_retire_rows(&ma, keys, vals, copy(fa, keys, vals, 16)), 1);
	CHECK_INT(pid_retire_rows_of_other(901, 2000), 1);	/* map b still to fold */
	CHECK_INT(pid_retire_rows(&mb, keys, vals, copy(fb, keys, vals, 16)), 1);
	usleep(250 * 1000);			/* 902 was found gone in that round */
	CHECK_INT(pid_retire_rows(&mb, keys, vals, copy(fb, keys, vals, 16)), 1);
	CHECK(get(fa, 901, 1, &v) != 0, "the old process's row in map a folded");
	CHECK(get(fb, 901, 1, &v) != 0, "and in map b");
	CHECK_INT(get(fa, PGT_RETIRED_PID_ROLE(7, PGT_ROLE_CLIENT_BACKEND), 1, &v), 0);
	CHECK_INT(v.calls, 2);
	CHECK_INT(get(fb, PGT_RETIRED_PID_ROLE(7, PGT_ROLE_CLIENT_BACKEND), 1, &v), 0);
	CHECK_INT(v.calls, 3);
	CHECK_INT(pid_retire_role(901), PGT_ROLE_PARALLEL_WORKER);

	/* the new process's rows are its own */
	put(fa, 901, 1, 1, 1, 1, 7);
	CHECK_INT(pid_retire_rows(&ma, keys, vals, copy(fa, keys, vals, 16)), 0);
	CHECK_INT(get(fa, 901, 1, &v), 0);

	/* 902's rows folded at exit; a process that takes the pid then keeps its own */
	track(tracked, 902, 3000);
	put(fb, 902, 1, 1, 1, 1, 7);
	usleep(250 * 1000);
	CHECK_INT(pid_retire_rows(&mb, keys, vals, copy(fb, keys, vals, 16)), 0);
	CHECK_INT(get(fb, 902, 1, &v), 0);

	/*
	 * 903 exits; --keep-exited 1 runs out and map a folds its row at its
	 * round, then a new process takes the pid before map b's round: b still
	 * holds the old process's row, which folds (with its role) rather than
	 * become the new process's.
	 */
	track(tracked, 903, 1000);
	put(fa, 903, 2, 6, 60, 90, 7);
	put(fb, 903, 2, 7, 70, 95, 7);
	CHECK_INT(pid_retire_configure("1", err, sizeof(err)), 0);
	CHECK_INT(pid_retire_rows(&ma, keys, vals, copy(fa, keys, vals, 16)), 0);
	CHECK_INT(pid_retire_rows(&mb, keys, vals, copy(fb, keys, vals, 16)), 0);
	gone = 903;
	CHECK_INT(bpf_map_delete_elem(tracked, &gone), 0);
	usleep(250 * 1000);
	CHECK_INT(pid_retire_rows(&ma, keys, vals, copy(fa, keys, vals, 16)), 0);	/* kept */
	CHECK_INT(pid_retire_rows(&mb, keys, vals, copy(fb, keys, vals, 16)), 0);
	usleep(1100 * 1000);
	CHECK_INT(pid_retire_rows(&ma, keys, vals, copy(fa, keys, vals, 16)), 1);	/* keep over */
	track(tracked, 903, 4000);
	usleep(250 * 1000);
	CHECK_INT(pid_retire_rows(&mb, keys, vals, copy(fb, keys, vals, 16)), 1);
	CHECK(get(fb, 903, 2, &v) != 0, "map b's row of the old process on 903 folded");
	CHECK_INT(get(fb, PGT_RETIRED_PID_ROLE(7, PGT_ROLE_CLIENT_BACKEND), 2, &v), 0);
	CHECK_INT(v.calls, 7);
	/* and the new process's rows after that are its own, in both maps */
	put(fa, 903, 2, 1, 1, 1, 7);
	put(fb, 903, 2, 1, 1, 1, 7);
	usleep(250 * 1000);
	CHECK_INT(pid_retire_rows(&ma, keys, vals, copy(fa, keys, vals, 16)), 0);
	CHECK_INT(pid_retire_rows(&mb, keys, vals, copy(fb, keys, vals, 16)), 0);
	CHECK_INT(get(fa, 903, 2, &v), 0);
	CHECK_INT(get(fb, 903, 2, &v), 0);

cleanup:
	if (tracked >= 0)
		close(tracked);
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
}

/*
 * A connection storm: 10,000 exited pids in one round, more than half the
 * table's first size.  The table grows and every row folds.
 */
static void
test_many_pids(void)
{
	size_t		npids = 10000;
	int			tracked = bpf_map_create(BPF_MAP_TYPE_HASH, "retire_trk_many", 4,
										 sizeof(struct pgt_tracked), 64, NULL);
	int			fd = bpf_map_create(BPF_MAP_TYPE_HASH, "retire_many", sizeof(struct key),
									sizeof(struct val), npids + 64, NULL);
	retire_map	m = test_map("many", fd, 0);
	struct key *keys = calloc(npids, sizeof(*keys));
	struct val *vals = calloc(npids, sizeof(*vals));
	struct val	v;
	char		err[64];
	size_t		i;

	if (tracked >= 0 && fd >= 0 && keys != NULL && vals != NULL)
	{
		size_t		stored = 0;

		for (i = 0; i < npids; i++)
		{
			struct key	k = {200000 + (uint32_t) i, 1};
			struct val	nv = {1, 10, 5, 9, 0};

			stored += bpf_map_update_elem(fd, &k, &nv, BPF_ANY) == 0;
		}
		CHECK_INT(stored, npids);
		CHECK_INT(pid_retire_configure("0", err, sizeof(err)), 0);
		pid_retire_setup(tracked, NULL, NULL);
		CHECK_INT(pid_retire_rows(&m, keys, vals, copy(fd, keys, vals, npids)), 0);
		usleep(250 * 1000);
		CHECK_INT(pid_retire_rows(&m, keys, vals, copy(fd, keys, vals, npids)), npids);
		CHECK_INT(get(fd, PGT_RETIRED_PID(9), 1, &v), 0);
		CHECK_INT(v.calls, npids);
	}
	free(keys);
	free(vals);
	if (tracked >= 0)
		close(tracked);
	if (fd >= 0)
		close(fd);
}

int
main(void)
{
	int			fd;
	int			tracked;

	test_configure();
	test_fold_u64();
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "retire_test", sizeof(struct key),
						sizeof(struct val), 64, NULL);
	tracked = bpf_map_create(BPF_MAP_TYPE_HASH, "retire_trk", 4, 4, 64, NULL);
	if (fd < 0 || tracked < 0)
		printf("test_pid_retire: BPF maps unavailable (%s): map checks skipped\n",
			   strerror(errno));
	else
	{
		test_round(fd, tracked);
		test_publish_order();
		test_full_map(tracked);
		test_keep(tracked);
		test_roles(tracked);
		test_reuse();
		test_many_pids();
	}
	if (fd >= 0)
		close(fd);
	if (tracked >= 0)
		close(tracked);
	UNIT_MAIN_END("test_pid_retire");
}
