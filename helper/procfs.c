/*
 * helper/procfs.c
 *	  Read and parse /proc/<pid>/{stat,cmdline,status,exe}: the process
 *	  facts the helper needs (parent, start time, PostgreSQL role).
 *
 * Parsers are pure functions over a buffer so they can be unit-tested with
 * hostile input; the readers around them do bounded reads.  Everything in
 * /proc/<pid> of a PostgreSQL process is controlled by that process (its
 * title, its comm), so nothing read here is trusted beyond its syntax.
 */
#include "procfs.h"

#include "fd_read.h"
#include "pgt_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/*
 * read_proc_file
 *		Read up to buflen bytes of /proc/<pid>/<name>.  Returns bytes read
 *		or -1.
 */
static ssize_t
read_proc_file(pid_t pid, const char *name, char *buf, size_t buflen)
{
	char		path[64];
	int			fd;
	ssize_t		len;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = fd_read_full(fd, buf, buflen);
	close(fd);
	return len;
}

/*
 * parse_u64
 *		Decimal digits only, no overflow.  Returns 0 or -1.
 */
static int
parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t	v = 0;
	size_t		i;

	if (len == 0 || len > 20)
		return -1;
	for (i = 0; i < len; i++)
	{
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t) (s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t) (s[i] - '0');
	}
	*out = v;
	return 0;
}

/*
 * procfs_parse_stat
 *		Parse the text of /proc/<pid>/stat: "pid (comm) S ppid ... starttime
 *		...".  comm may hold spaces and ')' so it runs from the first '(' to
 *		the LAST ')'.  Returns 0 or -1 when malformed.
 */
int
procfs_parse_stat(const char *buf, size_t len, proc_stat *out)
{
	const char *open_paren;
	const char *close_paren = NULL;
	const char *p;
	const char *end = buf + len;
	uint64_t	v;
	size_t		clen;
	int			field;

	memset(out, 0, sizeof(*out));
	open_paren = memchr(buf, '(', len);
	if (open_paren == NULL)
		return -1;
	for (p = end; p > open_paren; p--)
	{
		if (p[-1] == ')')
		{
			close_paren = p - 1;
			break;
		}
	}
	if (close_paren == NULL || open_paren == buf || open_paren[-1] != ' ')
		return -1;
	if (parse_u64(buf, (size_t) (open_paren - 1 - buf), &v) < 0 || v == 0 || v > INT32_MAX)
		return -1;
	out->pid = (int32_t) v;
	clen = (size_t) (close_paren - open_paren - 1);
	if (clen >= sizeof(out->comm))
		clen = sizeof(out->comm) - 1;
	memcpy(out->comm, open_paren + 1, clen);
	out->comm[clen] = '\0';

	/* fields after comm: 3 = state, 4 = ppid, ... 22 = starttime */
	p = close_paren + 1;
	for (field = 3; field <= 22; field++)
	{
		const char *tok;
		size_t		tlen;

		if (p >= end || *p != ' ')
			return -1;
		p++;
		tok = p;
		while (p < end && *p != ' ' && *p != '\n')
			p++;
		tlen = (size_t) (p - tok);
		if (tlen == 0)
			return -1;
		if (field == 3)
		{
			if (tlen != 1)
				return -1;
			out->state = tok[0];
		}
		else if (field == 4)
		{
			if (parse_u64(tok, tlen, &v) < 0 || v > INT32_MAX)
				return -1;
			out->ppid = (int32_t) v;
		}
		else if (field == 22)
		{
			if (parse_u64(tok, tlen, &v) < 0)
				return -1;
			out->starttime = v;
		}
	}
	return 0;
}

/*
 * word_prefix
 *		True when s (len) starts with word followed by a space or the end.
 */
static int
word_prefix(const char *s, size_t len, const char *word)
{
	size_t		wl = strlen(word);

	return len >= wl && memcmp(s, word, wl) == 0 && (len == wl || s[wl] == ' ');
}

/*
 * is_host_word
 *		True for the client-address word of a backend title: "[local]" or
 *		"<host>(<port>)".
 */
static int
is_host_word(const char *w, size_t len)
{
	size_t		i;

	if (len == 7 && memcmp(w, "[local]", 7) == 0)
		return 1;
	if (len < 4 || w[len - 1] != ')')
		return 0;
	for (i = len - 2; i > 0 && w[i] >= '0' && w[i] <= '9'; i--)
		;
	return w[i] == '(' && i > 0 && i < len - 2;
}

/*
 * has_host_word_after
 *		True when a word at index >= min_index of s is a client address.
 */
static int
has_host_word_after(const char *s, size_t len, int min_index)
{
	size_t		pos = 0;
	int			index = 0;

	while (pos < len)
	{
		size_t		start = pos;

		while (pos < len && s[pos] != ' ')
			pos++;
		if (pos > start)
		{
			if (index >= min_index && is_host_word(s + start, pos - start))
				return 1;
			index++;
		}
		while (pos < len && s[pos] == ' ')
			pos++;
	}
	return 0;
}

/*
 * classify_aux
 *		Role of a title that starts with an auxiliary process's or a
 *		built-in background worker's name, else PGT_ROLE_UNKNOWN.
 */
static uint32_t
classify_aux(const char *t, size_t len)
{
	static const struct
	{
		const char *prefix;
		uint32_t	role;
	}			names[] = {
		{"checkpointer", PGT_ROLE_CHECKPOINTER},
		{"background writer", PGT_ROLE_BGWRITER},
		{"walwriter", PGT_ROLE_WALWRITER},
		{"autovacuum launcher", PGT_ROLE_AUTOVAC_LAUNCHER},
		{"autovacuum worker", PGT_ROLE_AUTOVAC_WORKER},
		{"logical replication launcher", PGT_ROLE_LOGREP_LAUNCHER},
		{"logical replication worker", PGT_ROLE_LOGREP_WORKER},
		{"logical replication apply worker", PGT_ROLE_LOGREP_WORKER},
		{"logical replication tablesync worker", PGT_ROLE_LOGREP_WORKER},
		{"logical replication parallel apply worker", PGT_ROLE_LOGREP_WORKER},
		{"walsender", PGT_ROLE_WALSENDER},
		{"walreceiver", PGT_ROLE_WALRECEIVER},
		{"parallel worker", PGT_ROLE_PARALLEL_WORKER},
		{"archiver", PGT_ROLE_ARCHIVER},
		{"startup", PGT_ROLE_STARTUP},
		/* processes PostgreSQL names but pg_tracer has no role for */
		{"logger", PGT_ROLE_OTHER},
		{"stats collector", PGT_ROLE_OTHER},
		{"walsummarizer", PGT_ROLE_OTHER},
		{"io worker", PGT_ROLE_OTHER},
		{"slotsync worker", PGT_ROLE_OTHER},
	};
	size_t		i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (word_prefix(t, len, names[i].prefix))
			return names[i].role;
	return PGT_ROLE_UNKNOWN;
}

/*
 * title_text
 *		The text of a PostgreSQL child's title (its /proc/<pid>/cmdline:
 *		buf, len) after "postgres: ", up to the first NUL and without
 *		trailing blanks, its length in *tlen; NULL when the process has no
 *		such title (yet) or it is empty.
 */
static const char *
title_text(const char *buf, size_t len, size_t *tlen)
{
	static const char tag[] = "postgres: ";
	const char *nul = memchr(buf, '\0', len);

	if (nul != NULL)
		len = (size_t) (nul - buf);
	while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\n'))
		len--;
	if (len <= sizeof(tag) - 1 || memcmp(buf, tag, sizeof(tag) - 1) != 0)
		return NULL;
	*tlen = len - (sizeof(tag) - 1);
	return buf + sizeof(tag) - 1;
}

/*
 * procfs_classify_title
 *		Role of a PostgreSQL child from its /proc/<pid>/cmdline (buf, len).
 *
 * Titles are "postgres: [<cluster_name>: ]<what>" where <what> is an
 * auxiliary process name ("checkpointer", "walreceiver streaming 0/3..."),
 * a background worker's bgw_name ("parallel worker for PID 123",
 * "logical replication launcher", "pg_tracer sampler"), or for a client
 * connection "<user> <db> <host> <activity>" with <host> "[local]" or
 * "addr(port)" ("walsender <user> <host> ..." for replication).
 * Returns PGT_ROLE_UNKNOWN when there is no title yet (a child between fork
 * and its first set_ps_display still shows the postmaster's command line).
 */
uint32_t
procfs_classify_title(const char *buf, size_t len)
{
	const char *t;
	const char *colon;
	size_t		tlen;
	uint32_t	role;

	t = title_text(buf, len, &tlen);
	if (t == NULL)
		return PGT_ROLE_UNKNOWN;

	/* walsenders carry a client address too: their prefix decides first */
	if (word_prefix(t, tlen, "walsender"))
		return PGT_ROLE_WALSENDER;

	/* a connection: a client address word after "<user> <db>" */
	if (has_host_word_after(t, tlen, 2))
	{
		/* "<cluster_name>: walsender ..." */
		colon = memmem(t, tlen, ": ", 2);
		if (colon != NULL &&
			word_prefix(colon + 2, tlen - (size_t) (colon + 2 - t), "walsender"))
			return PGT_ROLE_WALSENDER;
		return PGT_ROLE_CLIENT_BACKEND;
	}

	role = classify_aux(t, tlen);
	if (role != PGT_ROLE_UNKNOWN)
		return role;

	/* "<cluster_name>: <what>" */
	colon = memmem(t, tlen, ": ", 2);
	if (colon != NULL)
	{
		role = classify_aux(colon + 2, tlen - (size_t) (colon + 2 - t));
		if (role != PGT_ROLE_UNKNOWN)
			return role;
	}
	/* any other titled child is a background worker (bgw_name) */
	return PGT_ROLE_BGWORKER;
}

/*
 * procfs_title_is
 *		Does a PostgreSQL child's title (its /proc/<pid>/cmdline: buf, len)
 *		name the process `what` exactly: "postgres: <what>" or "postgres:
 *		<cluster_name>: <what>"?  A background worker's title is its
 *		bgw_name, so this finds one worker by name.
 */
bool
procfs_title_is(const char *buf, size_t len, const char *what)
{
	size_t		wl = strlen(what);
	size_t		tlen;
	const char *t = title_text(buf, len, &tlen);

	if (t == NULL)
		return false;
	if (tlen == wl && memcmp(t, what, wl) == 0)
		return true;
	/* "<cluster_name>: <what>": the name comes last */
	return tlen > wl + 2 && memcmp(t + tlen - wl, what, wl) == 0 &&
		memcmp(t + tlen - wl - 2, ": ", 2) == 0;
}

/*
 * procfs_parallel_leader
 *		The leader's pid a parallel worker's title names ("postgres:
 *		[<cluster_name>: ]parallel worker for PID 123"), else 0.
 */
uint32_t
procfs_parallel_leader(const char *buf, size_t len)
{
	static const char tag[] = "parallel worker for PID ";
	const char *nul = memchr(buf, '\0', len);
	const char *at;
	uint32_t	pid = 0;

	if (procfs_classify_title(buf, len) != PGT_ROLE_PARALLEL_WORKER)
		return 0;
	if (nul != NULL)
		len = (size_t) (nul - buf);
	at = memmem(buf, len, tag, sizeof(tag) - 1);
	if (at == NULL)
		return 0;
	for (at += sizeof(tag) - 1; at < buf + len && *at >= '0' && *at <= '9'; at++)
	{
		if (pid > (UINT32_MAX - 9) / 10)
			return 0;			/* no pid is that large */
		pid = pid * 10 + (uint32_t) (*at - '0');
	}
	return pid;
}

/*
 * status_line
 *		The value of the line "key" (with its colon) of /proc/<pid>/status
 *		text: *val and *vend bound what follows the key.  0, or -1 when the
 *		text has no such complete line (one ends with its newline).
 */
static int
status_line(const char *buf, size_t len, const char *key, const char **val, const char **vend)
{
	const char *p = buf;
	const char *end = buf + len;
	size_t		klen = strlen(key);

	while (p < end)
	{
		const char *nl = memchr(p, '\n', (size_t) (end - p));

		/* a line the read cut short is no line: its value may be partial */
		if (nl == NULL)
			return -1;
		if ((size_t) (nl - p) > klen && memcmp(p, key, klen) == 0)
		{
			*val = p + klen;
			*vend = nl;
			return 0;
		}
		p = nl + 1;
	}
	return -1;
}

/*
 * status_numbers
 *		The whitespace-separated decimal numbers of a status line's value
 *		[q, le), at most max of them, into out.  Returns how many, or -1 when
 *		one is not a number or there are more than max.
 */
static int
status_numbers(const char *q, const char *le, uint64_t *out, int max)
{
	int			n = 0;

	while (q < le)
	{
		const char *tok;

		while (q < le && (*q == ' ' || *q == '\t'))
			q++;
		tok = q;
		while (q < le && *q != ' ' && *q != '\t')
			q++;
		if (q == tok)
			continue;
		if (n == max || parse_u64(tok, (size_t) (q - tok), &out[n]) < 0)
			return -1;
		n++;
	}
	return n;
}

/* An NSpid line's numbers: the kernel nests pid namespaces 32 deep at most */
#define NSPID_MAX_LEVELS 33

/*
 * procfs_parse_nspid
 *		From the text of /proc/<pid>/status, the pid in the innermost pid
 *		namespace (last number of the "NSpid:" line).  Returns 0 or -1.
 */
int
procfs_parse_nspid(const char *buf, size_t len, int32_t *inner)
{
	const char *val;
	const char *vend;
	uint64_t	v[NSPID_MAX_LEVELS];
	int			n;
	int			i;

	if (status_line(buf, len, "NSpid:", &val, &vend) < 0)
		return -1;
	n = status_numbers(val, vend, v, NSPID_MAX_LEVELS);
	if (n <= 0)
		return -1;
	for (i = 0; i < n; i++)
		if (v[i] == 0 || v[i] > INT32_MAX)
			return -1;
	*inner = (int32_t) v[n - 1];
	return 0;
}

/*
 * procfs_parse_uids
 *		From the text of /proc/<pid>/status, the four uids of the "Uid:"
 *		line: real, effective, saved set, file system.  Returns 0 or -1.
 */
int
procfs_parse_uids(const char *buf, size_t len, uint32_t uids[4])
{
	const char *val;
	const char *vend;
	uint64_t	v[4];
	int			i;

	if (status_line(buf, len, "Uid:", &val, &vend) < 0 ||
		status_numbers(val, vend, v, 4) != 4)
		return -1;
	for (i = 0; i < 4; i++)
	{
		if (v[i] > UINT32_MAX)
			return -1;
		uids[i] = (uint32_t) v[i];
	}
	return 0;
}

/*
 * procfs_ticks_to_realtime_us
 *		A /proc start time (clock ticks after boot) as CLOCK_REALTIME
 *		microseconds, given the current realtime-minus-boottime offset.
 */
int64_t
procfs_ticks_to_realtime_us(uint64_t ticks, long hz, int64_t boot_to_real_us)
{
	if (hz <= 0)
		hz = 100;
	return boot_to_real_us + (int64_t) (ticks / (uint64_t) hz) * 1000000 +
		(int64_t) ((ticks % (uint64_t) hz) * 1000000 / (uint64_t) hz);
}

/*
 * procfs_read_stat
 *		Read and parse /proc/<pid>/stat.  Returns 0, or -1 (gone, malformed).
 */
int
procfs_read_stat(pid_t pid, proc_stat *out)
{
	char		buf[1024];
	ssize_t		n = read_proc_file(pid, "stat", buf, sizeof(buf));

	if (n <= 0)
		return -1;
	return procfs_parse_stat(buf, (size_t) n, out);
}

/*
 * procfs_read_cmdline
 *		Read up to buflen bytes of /proc/<pid>/cmdline.  Returns 0 or -1.
 */
int
procfs_read_cmdline(pid_t pid, char *buf, size_t buflen, size_t *len)
{
	ssize_t		n = read_proc_file(pid, "cmdline", buf, buflen);

	if (n < 0)
		return -1;
	*len = (size_t) n;
	return 0;
}

/*
 * procfs_read_nspid
 *		The pid of `pid` as its own (innermost) pid namespace sees it, which
 *		is what a containerized postmaster writes into postmaster.pid.
 */
int
procfs_read_nspid(pid_t pid, int32_t *inner)
{
	/* NSpid comes after Groups:, which hundreds of groups make long */
	char		buf[32768];
	ssize_t		n = read_proc_file(pid, "status", buf, sizeof(buf));

	if (n <= 0)
		return -1;
	return procfs_parse_nspid(buf, (size_t) n, inner);
}

/*
 * procfs_is_postgres
 *		True when the process runs a PostgreSQL server binary: its comm is
 *		"postgres"/"postmaster", or its executable is named "postgres".
 */
int
procfs_is_postgres(pid_t pid, const proc_stat *st)
{
	char		path[64];
	char		exe[PATH_MAX];
	const char *base;
	ssize_t		n;

	if (strcmp(st->comm, "postgres") == 0 || strcmp(st->comm, "postmaster") == 0)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int) pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	return strcmp(base, "postgres") == 0 || strcmp(base, "postgres (deleted)") == 0;
}

/*
 * procfs_alive
 *		True when `pid` exists and, if starttime is non-zero, is still the
 *		same process (not a reused pid).
 */
int
procfs_alive(pid_t pid, uint64_t starttime)
{
	proc_stat	st;

	if (pid <= 0)
		return 0;
	if (starttime == 0)
		return kill(pid, 0) == 0 || errno == EPERM;
	if (procfs_read_stat(pid, &st) < 0)
		return 0;
	return st.starttime == starttime && st.state != 'Z' && st.state != 'X';
}

/* clock id in microseconds, 0 when it cannot be read */
static int64_t
clock_us(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * procfs_realtime_us
 *		CLOCK_REALTIME in microseconds.
 */
int64_t
procfs_realtime_us(void)
{
	return clock_us(CLOCK_REALTIME);
}

/*
 * procfs_monotonic_us
 *		CLOCK_MONOTONIC in microseconds: for intervals, which a clock that
 *		is set must not stretch or stop.
 */
int64_t
procfs_monotonic_us(void)
{
	return clock_us(CLOCK_MONOTONIC);
}

/*
 * procfs_boottime_us
 *		CLOCK_BOOTTIME in microseconds: the monotonic clock with the time
 *		suspended counted too.
 */
int64_t
procfs_boottime_us(void)
{
	return clock_us(CLOCK_BOOTTIME);
}

/*
 * procfs_boot_to_real_us
 *		CLOCK_REALTIME minus CLOCK_BOOTTIME now, in microseconds: add it to
 *		a boot-time stamp (BPF's bpf_ktime_get_boot_ns, /proc start times)
 *		to get wall-clock time.
 */
int64_t
procfs_boot_to_real_us(void)
{
	struct timespec rt;
	struct timespec bt;

	if (clock_gettime(CLOCK_REALTIME, &rt) != 0 ||
		clock_gettime(CLOCK_BOOTTIME, &bt) != 0)
		return 0;
	return ((int64_t) rt.tv_sec - bt.tv_sec) * 1000000 +
		(rt.tv_nsec - bt.tv_nsec) / 1000;
}

/*
 * procfs_start_us
 *		Start time of a process as CLOCK_REALTIME microseconds.
 */
int64_t
procfs_start_us(const proc_stat *st)
{
	static long hz = 0;

	if (hz == 0)
	{
		hz = sysconf(_SC_CLK_TCK);
		if (hz <= 0)
			hz = 100;
	}
	return procfs_ticks_to_realtime_us(st->starttime, hz, procfs_boot_to_real_us());
}

/*
 * procfs_plain_process
 *		Is pid an ordinary process of user `owner` (the cluster's: whose
 *		memory the helper reads for it): owner's uid for all four (real,
 *		effective, saved, file system), not root's, and dumpable (its /proc
 *		files belong to that uid)?  The kernel hands the /proc files of a
 *		process that ran a set-uid or set-gid program to root (or to its
 *		user namespace's root), and leaves them there after the program
 *		dropped the privilege, so such a program's memory fails the test.
 *		(Not the /proc/<pid> directory itself: it shows the effective uid
 *		always.)  The owner test keeps a pid that another user's process
 *		took (the cluster's process exited since the helper last looked)
 *		from being read on the cluster's behalf.
 */
bool
procfs_plain_process(pid_t pid, uid_t owner)
{
	char		path[64];
	char		buf[4096];
	struct stat st;
	uint32_t	uids[4];
	ssize_t		n;
	int			fd;

	if (owner == 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	/*
	 * One read: the kernel renders the whole file into the first read that
	 * has room (some 1.5 kB), and the Uid line is near its top.  This runs
	 * after every gather of another process's memory, so it stays at four
	 * calls.
	 */
	n = fstat(fd, &st) == 0 ? read(fd, buf, sizeof(buf)) : -1;
	close(fd);
	if (n <= 0 || st.st_uid != owner || procfs_parse_uids(buf, (size_t) n, uids) < 0)
		return false;
	return uids[0] == (uint32_t) owner && uids[1] == uids[0] &&
		uids[2] == uids[0] && uids[3] == uids[0];
}

/*
 * mem_open
 *		/proc/<pid>/mem, open for reading: an fd, or -1 with errno set.
 */
static int
mem_open(pid_t pid)
{
	char		path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int) pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/*
 * mem_pread
 *		Up to len bytes at addr of process pid's memory, through
 *		/proc/<pid>/mem: the bytes read, or -1 with errno set.
 */
static ssize_t
mem_pread(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	ssize_t		got;
	int			fd = mem_open(pid);
	int			save;

	if (fd < 0)
		return -1;
	got = pread(fd, buf, len, (off_t) addr);
	save = errno;
	close(fd);
	errno = save;
	return got;
}

/*
 * wipe_unless_plain
 *		The n spans were read from pid's memory: keep them (return true)
 *		when pid is a plain process of owner (procfs_plain_process), else
 *		wipe every buffer, mark every span unread and return false.
 *
 * Checked after the read, not before: a read that raced an exec into a
 * set-uid program either read the old program's memory or, when the exec
 * had committed (the kernel serializes the two), reads a process that now
 * fails the test.
 */
static bool
wipe_unless_plain(pid_t pid, uid_t owner, procfs_span *spans, size_t n)
{
	if (procfs_plain_process(pid, owner))
		return true;
	for (size_t i = 0; i < n; i++)
	{
		memset(spans[i].buf, 0, spans[i].len);
		spans[i].ok = false;
	}
	return false;
}

/*
 * procfs_mem_pread
 *		Up to len bytes at addr of process pid's memory, through
 *		/proc/<pid>/mem (ptrace access: root or CAP_SYS_PTRACE), provided
 *		pid is a plain process of owner (procfs_plain_process).  Returns
 *		the bytes read, or -1 with errno set (process gone, address
 *		unmapped, EPERM: not such a process).
 */
ssize_t
procfs_mem_pread(pid_t pid, uid_t owner, uint64_t addr, void *buf, size_t len)
{
	ssize_t		got = mem_pread(pid, addr, buf, len);
	procfs_span span = {.addr = addr, .buf = buf, .len = len};

	if (got < 0 || wipe_unless_plain(pid, owner, &span, 1))
		return got;
	errno = EPERM;
	return -1;
}

/* no process_vm_readv in this kernel (ENOSYS): every span by the mem file */
static bool no_vm_readv;

/*
 * gather_batch
 *		One process_vm_readv() for up to PROCFS_GATHER_BATCH of the n spans:
 *		how many spans, from the first, were read in full (each marked ok),
 *		or -1 with errno set when the call read nothing.  Fewer than it
 *		asked for: the next span was not read in full (a page it could not
 *		read), the rest not tried.
 */
#define PROCFS_GATHER_BATCH 128

static ssize_t
gather_batch(pid_t pid, procfs_span *spans, size_t n)
{
	struct iovec local[PROCFS_GATHER_BATCH];
	struct iovec remote[PROCFS_GATHER_BATCH];
	size_t		k = n < PROCFS_GATHER_BATCH ? n : PROCFS_GATHER_BATCH;
	ssize_t		got;
	size_t		i;

	for (i = 0; i < k; i++)
	{
		local[i] = (struct iovec) {.iov_base = spans[i].buf, .iov_len = spans[i].len};
		remote[i] = (struct iovec) {.iov_base = (void *) (uintptr_t) spans[i].addr,
			.iov_len = spans[i].len};
	}
	got = process_vm_readv(pid, local, (unsigned long) k, remote, (unsigned long) k, 0);
	if (got < 0)
		return -1;
	for (i = 0; i < k && (size_t) got >= spans[i].len; i++)
	{
		got -= (ssize_t) spans[i].len;
		spans[i].ok = true;
	}
	return (ssize_t) i;
}

/*
 * gather_one_by_file
 *		Span s through /proc/<pid>/mem, opened on first use into *memfd:
 *		where process_vm_readv is missing (ENOSYS: no
 *		CONFIG_CROSS_MEMORY_ATTACH) or refused the span (EFAULT: a page it
 *		cannot read, which the mem file may still).
 */
static void
gather_one_by_file(pid_t pid, procfs_span *s, int *memfd)
{
	if (*memfd < 0)
		*memfd = mem_open(pid);
	if (*memfd >= 0)
		s->ok = pread(*memfd, s->buf, s->len, (off_t) s->addr) == (ssize_t) s->len;
}

/*
 * procfs_mem_gather
 *		The n spans (each len bytes at addr into buf) of process pid's
 *		memory, provided pid is a plain process of owner
 *		(procfs_plain_process), with as few system calls as the kernel
 *		allows: one process_vm_readv() per PROCFS_GATHER_BATCH spans (the
 *		ptrace access check of /proc/<pid>/mem) and one plain-process check
 *		for them all.
 *		Each span's ok says whether it was read in full.  Returns how many
 *		were, or -1 with errno EPERM (pid is not a plain process: every
 *		buffer wiped).  0 with errno set when none could be read (process
 *		gone, ...).
 *
 * A reader of many addresses in one cluster's shared memory reads them all
 * from one process (it sits at the same address in each), so the
 * plain-process check's four calls are paid once, not per address.
 */
ssize_t
procfs_mem_gather(pid_t pid, uid_t owner, procfs_span *spans, size_t n)
{
	size_t		i = 0;
	size_t		ok = 0;
	int			memfd = -1;
	int			save = 0;

	for (size_t j = 0; j < n; j++)
		spans[j].ok = false;
	while (i < n)
	{
		ssize_t		done = 0;	/* without the call: the next span by file */

		if (!no_vm_readv && (done = gather_batch(pid, spans + i, n - i)) < 0)
		{
			if (errno == ENOSYS)
				no_vm_readv = true;
			else if (errno != EFAULT)
			{
				save = errno;	/* gone, or no access: no other span fares better */
				break;
			}
		}
		i += done > 0 ? (size_t) done : 0;
		if (i < n && done < PROCFS_GATHER_BATCH)
			gather_one_by_file(pid, &spans[i++], &memfd);
	}
	if (memfd >= 0)
		close(memfd);
	for (size_t j = 0; j < n; j++)
		ok += spans[j].ok;
	if (ok > 0 && !wipe_unless_plain(pid, owner, spans, n))
	{
		errno = EPERM;
		return -1;
	}
	if (ok == 0 && save != 0)
		errno = save;
	return (ssize_t) ok;
}

/*
 * procfs_mem_read
 *		Exactly len bytes at addr of process pid's memory, provided pid is a
 *		plain process of owner: 0, or -1 when fewer could be read (errno
 *		EPERM: not such a process).  A gather of one span
 *		(procfs_mem_gather): five system calls, of which the plain-process
 *		check takes four; readers of many addresses gather them.
 */
int
procfs_mem_read(pid_t pid, uid_t owner, uint64_t addr, void *buf, size_t len)
{
	procfs_span span = {.addr = addr, .buf = buf, .len = len};

	return procfs_mem_gather(pid, owner, &span, 1) == 1 ? 0 : -1;
}

/*
 * procfs_parse_map_line
 *		One line of /proc/<pid>/maps: 1 when its range holds addr (*kind
 *		then says how it is mapped), 0 when not, -1 when it is not a maps
 *		line.
 */
int
procfs_parse_map_line(const char *line, uint64_t addr, procfs_map_kind *kind)
{
	unsigned long long start;
	unsigned long long end;
	unsigned long long off;
	unsigned long long ino;
	unsigned int maj;
	unsigned int min;
	char		perms[5];

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu", &start, &end, perms, &off,
			   &maj, &min, &ino) != 7 || strlen(perms) != 4 || end <= start)
		return -1;
	if (addr < start || addr >= end)
		return 0;
	if (perms[3] == 's')
		*kind = PROCFS_MAP_SHARED;
	else if (ino != 0 && perms[1] != 'w')
		*kind = PROCFS_MAP_FILE_RO;
	else
		*kind = PROCFS_MAP_PRIVATE;
	return 1;
}

/*
 * procfs_map_kind_at
 *		How process pid maps addr, from /proc/<pid>/maps (PROCFS_MAP_NONE
 *		when no mapping holds it, or the file cannot be read).
 */
procfs_map_kind
procfs_map_kind_at(pid_t pid, uint64_t addr)
{
	char		path[64];
	char	   *line = NULL;
	size_t		cap = 0;
	procfs_map_kind kind = PROCFS_MAP_NONE;
	FILE	   *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int) pid);
	f = fopen(path, "re");
	if (f == NULL)
		return PROCFS_MAP_NONE;
	/* getline: a path longer than any fixed buffer is no second line */
	while (getline(&line, &cap, f) > 0)
		if (procfs_parse_map_line(line, addr, &kind) == 1)
			break;
	free(line);
	fclose(f);
	return kind;
}
