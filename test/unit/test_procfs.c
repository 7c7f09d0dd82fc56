/*
 * test/unit/test_procfs.c
 *	  /proc parsing (helper/procfs.c): stat lines with hostile comm, this
 *	  process's own /proc/self/stat, NSpid, start-time conversion, the
 *	  role classification of every PostgreSQL process title, and reads of
 *	  a child's memory (only as its owner's, only while it is plain, with
 *	  and without process_vm_readv).
 */
#include "pgt_segment.h"
#include "procfs.h"
#include "unit.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A stat line with the given head ("pid (comm)") and ppid/starttime. */
static int
stat_line(char *buf, size_t len, const char *head, int ppid, unsigned long long start)
{
	return snprintf(buf, len,
					"%s S %d 100 100 0 -1 4194560 500 0 0 0 1 2 0 0 20 0 1 0 %llu "
					"123456 789 18446744073709551615 1 1 0 0 0 0 0 16777216 0 0 0 17 1 0 0 0 0 0\n",
					head, ppid, start);
}

static void
test_stat_parse(void)
{
	char		buf[1024];
	proc_stat	ps;
	int			n;

	n = stat_line(buf, sizeof(buf), "1234 (postgres)", 1, 987654ULL);
	CHECK_INT(procfs_parse_stat(buf, (size_t) n, &ps), 0);
	CHECK_INT(ps.pid, 1234);
	CHECK_STR(ps.comm, "postgres");
	CHECK_INT(ps.state, 'S');
	CHECK_INT(ps.ppid, 1);
	CHECK_INT(ps.starttime, 987654);

	/* comm with spaces and ')' inside: the last ')' ends it */
	n = stat_line(buf, sizeof(buf), "42 (a) b) S 7 (c)", 9, 5ULL);
	CHECK_INT(procfs_parse_stat(buf, (size_t) n, &ps), 0);
	CHECK_STR(ps.comm, "a) b) S 7 (c");
	CHECK_INT(ps.ppid, 9);
	CHECK_INT(ps.starttime, 5);

	n = stat_line(buf, sizeof(buf), "43 ()", 2, 6ULL);
	CHECK_INT(procfs_parse_stat(buf, (size_t) n, &ps), 0);
	CHECK_STR(ps.comm, "");

	/* malformed lines */
	CHECK_INT(procfs_parse_stat("", 0, &ps), -1);
	CHECK_INT(procfs_parse_stat("12 postgres S 1", 15, &ps), -1);
	CHECK_INT(procfs_parse_stat("12 (postgres S 1 2 3", 20, &ps), -1);
	CHECK_INT(procfs_parse_stat("x (p) S 1 2", 11, &ps), -1);
	n = snprintf(buf, sizeof(buf), "12 (p) S 1 2 3");	/* too few fields */
	CHECK_INT(procfs_parse_stat(buf, (size_t) n, &ps), -1);
	n = stat_line(buf, sizeof(buf), "12 (p)", 1, 1ULL);
	buf[9] = 'x';				/* ppid "x" */
	CHECK_INT(procfs_parse_stat(buf, (size_t) n, &ps), -1);
	n = stat_line(buf, sizeof(buf), "12 (p)", 1, 1ULL);
	CHECK_INT(procfs_parse_stat(buf, 20, &ps), -1);	/* cut before starttime */
}

static void
test_self_stat(void)
{
	proc_stat	ps;
	int64_t		start_us;
	int64_t		now_us = procfs_realtime_us();

	CHECK_INT(procfs_read_stat(getpid(), &ps), 0);
	CHECK_INT(ps.pid, getpid());
	CHECK_INT(ps.ppid, getppid());
	{
		/* comm as the kernel reports it (valgrind renames the process) */
		char		comm[64] = "";
		FILE	   *f = fopen("/proc/self/comm", "r");

		CHECK(f != NULL && fgets(comm, sizeof(comm), f) != NULL);
		if (f != NULL)
			fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		CHECK_STR(ps.comm, comm);
	}
	CHECK(ps.starttime > 0);
	start_us = procfs_start_us(&ps);
	/* we started within the last minute, not in the future */
	CHECK(start_us <= now_us + 20000);
	CHECK(start_us > now_us - 60 * 1000000LL);
	CHECK(procfs_alive(getpid(), ps.starttime));
	CHECK(!procfs_alive(getpid(), ps.starttime + 1));
	CHECK(procfs_alive(getpid(), 0));
}

static void
test_nspid(void)
{
	int32_t		inner = 0;
	const char *s1 = "Name:\tpostgres\nTgid:\t900\nNSpid:\t900\t12\t1\nPPid:\t1\n";
	const char *s2 = "Name:\tx\nNSpid:\t77\n";
	const char *s3 = "Name:\tx\nNSpid:\t\n";
	const char *s4 = "Name:\tx\nPid:\t5\n";

	CHECK_INT(procfs_parse_nspid(s1, strlen(s1), &inner), 0);
	CHECK_INT(inner, 1);
	CHECK_INT(procfs_parse_nspid(s2, strlen(s2), &inner), 0);
	CHECK_INT(inner, 77);
	CHECK_INT(procfs_parse_nspid(s3, strlen(s3), &inner), -1);
	CHECK_INT(procfs_parse_nspid(s4, strlen(s4), &inner), -1);
	/* a read that ended inside the line (a long Groups: line before it) */
	CHECK_INT(procfs_parse_nspid("Name:\tx\nNSpid:\t900\t1", 20, &inner), -1);
	CHECK_INT(procfs_read_nspid(getpid(), &inner), 0);
	CHECK(inner > 0);
}

static void
test_uids(void)
{
	uint32_t	u[4] = {0};
	const char *s1 = "Name:\tpostgres\nUid:\t104\t104\t104\t104\nGid:\t110\t110\t110\t110\n";
	const char *s2 = "Name:\tpasswd\nUid:\t1000\t0\t0\t0\n";
	const char *s3 = "Name:\tx\nUid:\t1\t2\t3\n";
	const char *s4 = "Name:\tx\nUid:\t1\t2\t3\t4\t5\n";
	const char *s5 = "Name:\tx\nUid:\t1\t2\tz\t4\n";
	const char *s6 = "Name:\tx\nUid:\t1\t2\t3\t4294967296\n";
	const char *s7 = "Name:\tx\nGid:\t1\t1\t1\t1\n";

	CHECK_INT(procfs_parse_uids(s1, strlen(s1), u), 0);
	CHECK(u[0] == 104 && u[1] == 104 && u[2] == 104 && u[3] == 104, "four uids");
	CHECK_INT(procfs_parse_uids(s2, strlen(s2), u), 0);
	CHECK(u[0] == 1000 && u[1] == 0 && u[2] == 0 && u[3] == 0, "a set-uid program's");
	CHECK_INT(procfs_parse_uids(s3, strlen(s3), u), -1);
	CHECK_INT(procfs_parse_uids(s4, strlen(s4), u), -1);
	CHECK_INT(procfs_parse_uids(s5, strlen(s5), u), -1);
	CHECK_INT(procfs_parse_uids(s6, strlen(s6), u), -1);
	CHECK_INT(procfs_parse_uids(s7, strlen(s7), u), -1);
}

static void
test_ticks(void)
{
	CHECK_INT(procfs_ticks_to_realtime_us(0, 100, 1000), 1000);
	CHECK_INT(procfs_ticks_to_realtime_us(250, 100, 0), 2500000);
	CHECK_INT(procfs_ticks_to_realtime_us(1, 250, 10), 4010);
	CHECK_INT(procfs_ticks_to_realtime_us(100, 0, 0), 1000000);	/* bad hz -> 100 */
}

/*
 * fn applied to a title given as a C string, with the NUL padding PG
 * leaves after it.
 */
static uint32_t
on_title(uint32_t (*fn) (const char *, size_t), const char *title)
{
	char		buf[512];
	size_t		l = strlen(title);

	memset(buf, 0, sizeof(buf));
	memcpy(buf, title, l);
	return fn(buf, l + 16);
}

#define classify(title)	on_title(procfs_classify_title, (title))
#define leader(title)	on_title(procfs_parallel_leader, (title))

static void
test_classify(void)
{
	static const struct
	{
		const char *title;
		uint32_t	role;
	}			cases[] = {
		{"postgres: checkpointer ", PGT_ROLE_CHECKPOINTER},
		{"postgres: background writer ", PGT_ROLE_BGWRITER},
		{"postgres: walwriter ", PGT_ROLE_WALWRITER},
		{"postgres: autovacuum launcher ", PGT_ROLE_AUTOVAC_LAUNCHER},
		{"postgres: autovacuum worker ", PGT_ROLE_AUTOVAC_WORKER},
		{"postgres: autovacuum worker regression", PGT_ROLE_AUTOVAC_WORKER},
		{"postgres: logical replication launcher ", PGT_ROLE_LOGREP_LAUNCHER},
		{"postgres: logical replication worker for subscription 16390 ", PGT_ROLE_LOGREP_WORKER},
		{"postgres: logical replication apply worker for subscription 16390", PGT_ROLE_LOGREP_WORKER},
		{"postgres: logical replication tablesync worker for subscription 1 sync 2", PGT_ROLE_LOGREP_WORKER},
		{"postgres: walsender replicator 10.0.0.5(41234) streaming 0/3000148", PGT_ROLE_WALSENDER},
		{"postgres: walsender replicator [local] idle", PGT_ROLE_WALSENDER},
		{"postgres: walreceiver streaming 0/3000148", PGT_ROLE_WALRECEIVER},
		{"postgres: parallel worker for PID 123 ", PGT_ROLE_PARALLEL_WORKER},
		{"postgres: archiver last was 000000010000000000000002", PGT_ROLE_ARCHIVER},
		{"postgres: archiver ", PGT_ROLE_ARCHIVER},
		{"postgres: startup recovering 000000010000000000000003", PGT_ROLE_STARTUP},
		{"postgres: startup ", PGT_ROLE_STARTUP},
		{"postgres: pg_tracer sampler ", PGT_ROLE_BGWORKER},
		{"postgres: pg_tracer helper link ", PGT_ROLE_BGWORKER},
		{"postgres: TimescaleDB Background Worker Launcher ", PGT_ROLE_BGWORKER},
		{"postgres: logger ", PGT_ROLE_OTHER},
		{"postgres: stats collector ", PGT_ROLE_OTHER},
		/* client backends: "<user> <db> <host> <activity>" */
		{"postgres: user db [local] idle", PGT_ROLE_CLIENT_BACKEND},
		{"postgres: postgres postgres [local] SELECT", PGT_ROLE_CLIENT_BACKEND},
		{"postgres: alice shop 127.0.0.1(53422) idle in transaction", PGT_ROLE_CLIENT_BACKEND},
		{"postgres: bob app ::1(5000) authentication", PGT_ROLE_CLIENT_BACKEND},
		{"postgres: bob app db.example.com(5000) UPDATE waiting", PGT_ROLE_CLIENT_BACKEND},
		/* users and databases named like auxiliary processes */
		{"postgres: checkpointer mydb [local] idle", PGT_ROLE_CLIENT_BACKEND},
		{"postgres: archiver startup 10.1.1.1(1) idle", PGT_ROLE_CLIENT_BACKEND},
		/* with a cluster_name prefix */
		{"postgres: 15/main: checkpointer ", PGT_ROLE_CHECKPOINTER},
		{"postgres: 15/main: background writer ", PGT_ROLE_BGWRITER},
		{"postgres: 15/main: walwriter ", PGT_ROLE_WALWRITER},
		{"postgres: 15/main: autovacuum launcher ", PGT_ROLE_AUTOVAC_LAUNCHER},
		{"postgres: 15/main: autovacuum worker postgres", PGT_ROLE_AUTOVAC_WORKER},
		{"postgres: 15/main: logical replication launcher ", PGT_ROLE_LOGREP_LAUNCHER},
		{"postgres: 15/main: logical replication worker for subscription 5", PGT_ROLE_LOGREP_WORKER},
		{"postgres: 15/main: walsender rep 10.0.0.5(41234) streaming 0/3", PGT_ROLE_WALSENDER},
		{"postgres: 15/main: walreceiver streaming 0/3000148", PGT_ROLE_WALRECEIVER},
		{"postgres: 15/main: parallel worker for PID 4242", PGT_ROLE_PARALLEL_WORKER},
		{"postgres: 15/main: archiver ", PGT_ROLE_ARCHIVER},
		{"postgres: 15/main: startup ", PGT_ROLE_STARTUP},
		{"postgres: 15/main: pg_tracer sampler ", PGT_ROLE_BGWORKER},
		{"postgres: 15/main: user db [local] idle", PGT_ROLE_CLIENT_BACKEND},
		{"postgres: my cluster: alice db 10.0.0.1(22) COMMIT", PGT_ROLE_CLIENT_BACKEND},
		{"postgres: prod: checkpointer", PGT_ROLE_CHECKPOINTER},
		/* no title yet: still the postmaster's command line */
		{"/usr/lib/postgresql/15/bin/postgres", PGT_ROLE_UNKNOWN},
		{"postgres", PGT_ROLE_UNKNOWN},
		{"postgres: ", PGT_ROLE_UNKNOWN},
		{"", PGT_ROLE_UNKNOWN},
	};
	size_t		i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		uint32_t	got = classify(cases[i].title);

		if (got != cases[i].role)
			fprintf(stderr, "title \"%s\": got %s, expected %s\n", cases[i].title,
					pgt_role_name(got), pgt_role_name(cases[i].role));
		CHECK_INT(got, cases[i].role);
	}
	/* the postmaster's real cmdline: NUL-separated arguments */
	CHECK_INT(procfs_classify_title("/usr/lib/postgresql/15/bin/postgres\0-D\0/data\0",
									45), PGT_ROLE_UNKNOWN);
	/* backend_type names are PostgreSQL's */
	CHECK_STR(pgt_role_name(PGT_ROLE_CLIENT_BACKEND), "client backend");
	CHECK_STR(pgt_role_name(PGT_ROLE_LOGREP_LAUNCHER), "logical replication launcher");
	CHECK_STR(pgt_role_name(PGT_ROLE_BGWORKER), "background worker");
}

#define GATHER_SPANS 300			/* more than one process_vm_readv batch */
#define GATHER_CHILD_ADDS 1000		/* the child's words differ from the parent's */

/* what test_mem_gather reads: filled before the child is forked */
static uint32_t gather_words[GATHER_SPANS];

static void
gather_words_fill(void)
{
	for (int i = 0; i < GATHER_SPANS; i++)
		gather_words[i] = (uint32_t) i * 7 + 1;
}

/*
 * mem_child_loop
 *		The child of test_mem_read: drop root (to nobody, dumpable again, as
 *		an exec of PostgreSQL after su would leave it), make its gather
 *		words its own (test_mem_gather), then obey the
 *		parent's commands: 'd' makes it non-dumpable, anything else ends it.
 *		Each step is acknowledged on `ack`.
 */
static void
mem_child_loop(int go, int ack)
{
	char		c = 0;

	if (unit_drop_root() != 0)
		_exit(1);
	for (int i = 0; i < GATHER_SPANS; i++)
		gather_words[i] += GATHER_CHILD_ADDS;	/* a read of the parent would not match */
	(void) write(ack, "r", 1);
	while (read(go, &c, 1) == 1 && c == 'd')
	{
		(void) prctl(PR_SET_DUMPABLE, 0);
		(void) write(ack, "d", 1);
	}
	_exit(0);
}

/*
 * test_mem_gather
 *		procfs_mem_gather of GATHER_SPANS words of the child (fork'd: the
 *		same addresses, other values) as owner's, one of them on a PROT_NONE
 *		page (the /proc fallback reads it) and one at an unmapped address
 *		(not read, the rest still are); when the child is not a plain
 *		process of owner, nothing is kept.
 */
static void
test_mem_gather(pid_t child, uid_t owner, const unsigned char *guard, bool plain)
{
	static uint32_t got[GATHER_SPANS];
	static procfs_span spans[GATHER_SPANS];
	int			good = 0;
	int			zero = 0;

	for (int i = 0; i < GATHER_SPANS; i++)
	{
		got[i] = 0;
		spans[i] = (procfs_span) {.addr = (uint64_t) (uintptr_t) &gather_words[i], .buf = &got[i],
			.len = sizeof(got[i])};
	}
	spans[150].addr = (uint64_t) (uintptr_t) guard;
	spans[151].addr = 8;
	if (!plain)
	{
		CHECK(procfs_mem_gather(child, owner, spans, GATHER_SPANS) == -1 && errno == EPERM,
			  "gather: refused once the child is not plain");
		for (int i = 0; i < GATHER_SPANS; i++)
			zero += got[i] == 0 && !spans[i].ok;
		CHECK(zero == GATHER_SPANS, "gather: nothing kept (%d of %d wiped)", zero,
			  GATHER_SPANS);
		return;
	}
	CHECK(procfs_mem_gather(child, owner, spans, GATHER_SPANS) == GATHER_SPANS - 1,
		  "gather: every span but the unmapped one");
	for (int i = 0; i < GATHER_SPANS; i++)
		good += i == 150 ? (spans[i].ok && got[i] == 0x5a) :
			i == 151 ? !spans[i].ok : (spans[i].ok && got[i] == gather_words[i] + GATHER_CHILD_ADDS);
	CHECK(good == GATHER_SPANS, "gather: %d of %d spans as expected", good, GATHER_SPANS);
}

/*
 * refuse_vm_readv
 *		From now on this process's process_vm_readv() fails with ENOSYS, as
 *		on a kernel built without CONFIG_CROSS_MEMORY_ATTACH (a seccomp
 *		filter; the process can never drop it).  0, or -1.
 */
static int
refuse_vm_readv(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/*
 * test_gather_by_file
 *		test_mem_gather in a reader without process_vm_readv (every span
 *		through /proc/<pid>/mem), twice: the second gather, with the
 *		missing call already known, must not depend on what errno held
 *		before it, nor stop at the unmapped span.  The reader exits with
 *		its count of failed checks.
 */
static void
test_gather_by_file(pid_t child, uid_t owner, const unsigned char *guard)
{
	pid_t		reader = fork();
	int			status = 0;

	if (reader == 0)
	{
		int			failed_before = unit_failed;

		if (refuse_vm_readv() != 0 ||
			syscall(SYS_process_vm_readv, child, NULL, 0, NULL, 0, 0) != -1 || errno != ENOSYS)
			_exit(100);
		test_mem_gather(child, owner, guard, true);
		errno = EAGAIN;
		test_mem_gather(child, owner, guard, true);
		_exit(unit_failed - failed_before);
	}
	CHECK(reader > 0 && waitpid(reader, &status, 0) == reader && WIFEXITED(status) &&
		  WEXITSTATUS(status) == 0,
		  "gather without process_vm_readv (exit %d: failed checks, 100: no filter)",
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/*
 * procfs_mem_read of another process: a word of its data, a PROT_NONE page
 * (process_vm_readv refuses it with EFAULT; /proc/<pid>/mem reads it, as
 * the helper's reads of a backend did before), an unmapped address, a
 * gather with and without process_vm_readv; refused for a reader that
 * names another owner (a pid another user's process took), once the
 * process is no longer plain (non-dumpable, as a set-uid program leaves
 * it), and for a root process.
 */
static void
test_mem_read(void)
{
	static volatile uint64_t word = 0x1122334455667788ULL;
	long		page = sysconf(_SC_PAGESIZE);
	unsigned char *guard = mmap(NULL, page, PROT_READ | PROT_WRITE,
								MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uid_t		owner = geteuid() == 0 ? 65534 : geteuid();	/* unit_drop_root */
	int			go[2];
	int			ack[2];
	pid_t		child;
	uint64_t	got = 0;
	char		c = 0;

	CHECK(guard != MAP_FAILED && pipe(go) == 0 && pipe(ack) == 0, "set up");
	guard[0] = 0x5a;
	CHECK(mprotect(guard, page, PROT_NONE) == 0, "guard page");
	gather_words_fill();
	child = fork();
	if (child == 0)
		mem_child_loop(go[0], ack[1]);
	CHECK(read(ack[0], &c, 1) == 1 && c == 'r', "the child dropped root");
	CHECK(procfs_plain_process(child, owner), "the child is a plain process of its owner");
	CHECK(!procfs_plain_process(child, owner - 1), "... and not of another user");
	CHECK(procfs_mem_read(child, owner, (uint64_t) (uintptr_t) &word, &got, sizeof(got)) == 0 &&
		  got == 0x1122334455667788ULL, "a word of the child's memory: %llx",
		  (unsigned long long) got);
	got = 0;
	CHECK(procfs_mem_read(child, owner - 1, (uint64_t) (uintptr_t) &word, &got,
						  sizeof(got)) == -1 && errno == EPERM && got == 0,
		  "not for another owner, and nothing of it kept");
	c = 0;
	CHECK(procfs_mem_read(child, owner, (uint64_t) (uintptr_t) guard, &c, 1) == 0 && c == 0x5a,
		  "a PROT_NONE page through the /proc fallback: %x", c);
	CHECK(procfs_mem_read(child, owner, 8, &got, sizeof(got)) == -1, "an unmapped address fails");
	test_mem_gather(child, owner, guard, true);
	test_mem_gather(child, owner - 1, guard, false);
	test_gather_by_file(child, owner, guard);
	(void) write(go[1], "d", 1);
	CHECK(read(ack[0], &c, 1) == 1 && c == 'd', "the child is no longer dumpable");
	CHECK(!procfs_plain_process(child, owner), "a non-dumpable process is not plain");
	test_mem_gather(child, owner, guard, false);
	got = 0;
	CHECK(procfs_mem_read(child, owner, (uint64_t) (uintptr_t) &word, &got, sizeof(got)) == -1 &&
		  errno == EPERM && got == 0, "its memory is refused, and nothing of it kept");
	CHECK(procfs_mem_pread(child, owner, (uint64_t) (uintptr_t) &word, &got, sizeof(got)) == -1 &&
		  got == 0, "through /proc/<pid>/mem too");
	(void) write(go[1], "x", 1);
	(void) waitpid(child, NULL, 0);
	CHECK(procfs_mem_read(child, owner, (uint64_t) (uintptr_t) &word, &got, sizeof(got)) == -1,
		  "a process that is gone fails");
	if (geteuid() == 0)
		CHECK(!procfs_plain_process(getpid(), 0), "a root process is not plain");
	else
		CHECK(procfs_plain_process(getpid(), geteuid()), "this process is its user's");
}

/*
 * procfs_parse_map_line on maps lines as the kernel writes them, and
 * procfs_map_kind_at on this process's own mappings: a string constant
 * (the executable's read-only data), the heap, an anonymous shared page,
 * an address nothing maps.
 */
static void
test_map_kind(void)
{
	static const char constant[] = "a constant in the executable";
	const char *ro = "7f44712eb000-7f44712ec000 r--p 00005000 fe:00 11501624"
		"                   /usr/lib/postgresql/15/lib/pg_prewarm.so\n";
	const char *data = "55d0a1e00000-55d0a1e01000 rw-p 00007000 fe:00 11501624 /usr/bin/x\n";
	const char *shm = "7f4470000000-7f4471000000 rw-s 00000000 00:01 1033 /dev/zero (deleted)\n";
	const char *heap = "55d0a2000000-55d0a2100000 rw-p 00000000 00:00 0 [heap]\n";
	const char *anon = "7f4460000000-7f4460021000 r--p 00000000 00:00 0 \n";
	procfs_map_kind kind = PROCFS_MAP_NONE;
	long		page = sysconf(_SC_PAGESIZE);
	char	   *heap_buf = malloc(64);
	void	   *shared = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	CHECK_INT(procfs_parse_map_line(ro, 0x7f44712eb07aULL, &kind), 1);
	CHECK_INT(kind, PROCFS_MAP_FILE_RO);
	CHECK_INT(procfs_parse_map_line(ro, 0x7f44712ec000ULL, &kind), 0);	/* end: not in it */
	CHECK_INT(procfs_parse_map_line(ro, 0x7f44712eafffULL, &kind), 0);
	CHECK_INT(procfs_parse_map_line(data, 0x55d0a1e00010ULL, &kind), 1);
	CHECK_INT(kind, PROCFS_MAP_PRIVATE);
	CHECK_INT(procfs_parse_map_line(shm, 0x7f4470800000ULL, &kind), 1);
	CHECK_INT(kind, PROCFS_MAP_SHARED);
	CHECK_INT(procfs_parse_map_line(heap, 0x55d0a2000000ULL, &kind), 1);
	CHECK_INT(kind, PROCFS_MAP_PRIVATE);
	CHECK_INT(procfs_parse_map_line(anon, 0x7f4460000100ULL, &kind), 1);
	CHECK_INT(kind, PROCFS_MAP_PRIVATE);	/* read-only, but no file behind it */
	CHECK_INT(procfs_parse_map_line("garbage\n", 1, &kind), -1);
	CHECK_INT(procfs_parse_map_line("2000-1000 r--p 0 00:00 0\n", 0x1800, &kind), -1);
	CHECK_INT(procfs_parse_map_line("1000-2000 r-p 0 00:00 0\n", 0x1800, &kind), -1);

	CHECK(heap_buf != NULL && shared != MAP_FAILED, "set up");
	CHECK_INT(procfs_map_kind_at(getpid(), (uint64_t) (uintptr_t) constant), PROCFS_MAP_FILE_RO);
	CHECK_INT(procfs_map_kind_at(getpid(), (uint64_t) (uintptr_t) heap_buf), PROCFS_MAP_PRIVATE);
	CHECK_INT(procfs_map_kind_at(getpid(), (uint64_t) (uintptr_t) shared), PROCFS_MAP_SHARED);
	CHECK_INT(procfs_map_kind_at(getpid(), 8), PROCFS_MAP_NONE);
	CHECK_INT(procfs_map_kind_at(-1, (uint64_t) (uintptr_t) constant), PROCFS_MAP_NONE);
	free(heap_buf);
	munmap(shared, page);
}

static void
test_parallel_leader(void)
{
	CHECK_INT(leader("postgres: parallel worker for PID 17539 "), 17539);
	CHECK_INT(leader("postgres: main: parallel worker for PID 42"), 42);
	CHECK_INT(leader("postgres: parallel worker for PID "), 0);
	CHECK_INT(leader("postgres: parallel worker for PID 99999999999"), 0);
	CHECK_INT(leader("postgres: alice db [local] parallel worker for PID 7"), 0);	/* a backend */
	CHECK_INT(leader("postgres: autovacuum worker"), 0);
	CHECK_INT(leader("parallel worker for PID 7"), 0);	/* no PostgreSQL title */
}

int
main(void)
{
	test_stat_parse();
	test_self_stat();
	test_nspid();
	test_uids();
	test_ticks();
	test_classify();
	test_parallel_leader();
	test_mem_read();
	test_map_kind();
	return UNIT_DONE("test_procfs");
}
