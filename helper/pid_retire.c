/*
 * helper/pid_retire.c
 *	  Folding the rows of exited processes (see pid_retire.h).
 *
 * A small open-addressing table remembers, per pid seen in a map, whether
 * it was tracked at the last check (checks are cached for CHECK_NS, so a
 * round over several maps asks the kernel once per pid) and since when it
 * has not been.  The table is rebuilt without the pids not looked at for a
 * while when it fills up.
 *
 * Threading: single-threaded (the daemon's loop).
 */
#include "pid_retire.h"
#include "log.h"
#include "pg_tracer.h"
#include "procfs.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TABLE_SIZE		16384	/* power of two; > the maps' distinct pids */
#define CHECK_NS		200000000ULL	/* a liveness answer is good this long */
#define FORGET_NS		10000000000ULL	/* unseen this long: dropped at rebuild */
#define MAX_KEY			64
#define MAX_VAL			512

typedef struct pid_entry
{
	uint32_t	pid;			/* 0 = free slot */
	uint32_t	alive;			/* tracked at checked_ns */
	uint64_t	checked_ns;		/* last liveness check */
	uint64_t	dead_since_ns;	/* first check that found it gone */
	uint64_t	seen_ns;		/* last time a row of it was looked at */
} pid_entry;

static int	keep_s = PID_RETIRE_DEFAULT_S;
static int	enabled;
static int	tracked_fd = -1;
static pid_entry *table;
static size_t nused;
static uint64_t fold_failures;

/*
 * pid_retire_configure
 *		--keep-exited S.
 */
int
pid_retire_configure(const char *arg, char *err, size_t errlen)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || v < 0 || v > PID_RETIRE_MAX_S)
	{
		snprintf(err, errlen, "\"%s\" is not a number of seconds from 0 to %d",
				 arg, PID_RETIRE_MAX_S);
		return -1;
	}
	keep_s = (int) v;
	return 0;
}

/*
 * pid_retire_setup
 *		Turn retirement on (the daemon does; `trace` never).
 */
void
pid_retire_setup(int fd)
{
	tracked_fd = fd;
	enabled = 1;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/*
 * slot_of
 *		The table slot holding pid, or the free slot it would go to.
 */
static pid_entry *
slot_of(pid_entry *t, uint32_t pid)
{
	size_t		i = (pid * 2654435761u) & (TABLE_SIZE - 1);

	while (t[i].pid != 0 && t[i].pid != pid)
		i = (i + 1) & (TABLE_SIZE - 1);
	return &t[i];
}

/*
 * rebuild
 *		Keep only the pids looked at within FORGET_NS.
 */
static void
rebuild(uint64_t now)
{
	pid_entry  *n = calloc(TABLE_SIZE, sizeof(*n));
	size_t		i;

	if (n == NULL)
		return;
	nused = 0;
	for (i = 0; i < TABLE_SIZE; i++)
		if (table[i].pid != 0 && now - table[i].seen_ns < FORGET_NS)
		{
			*slot_of(n, table[i].pid) = table[i];
			nused++;
		}
	free(table);
	table = n;
}

/*
 * is_tracked
 *		Is pid still one of the clusters' processes?
 */
static int
is_tracked(uint32_t pid)
{
	struct pgt_tracked t;

	if (tracked_fd < 0)
		return procfs_alive((pid_t) pid, 0);
	return bpf_map_lookup_elem(tracked_fd, &pid, &t) == 0;
}

/*
 * due
 *		Has pid been gone for keep_s seconds (or at all, when pressed)?  Pid
 *		0 (the kernel's rows) and folded rows never are.
 */
static int
due(uint32_t pid, uint64_t now, int pressed)
{
	pid_entry  *e;

	if (pid == 0 || PGT_IS_RETIRED(pid))
		return 0;
	if (table == NULL && (table = calloc(TABLE_SIZE, sizeof(*table))) == NULL)
		return 0;
	e = slot_of(table, pid);
	if (e->pid == 0)
	{
		if (nused >= TABLE_SIZE / 2)
		{
			rebuild(now);
			e = slot_of(table, pid);
			if (nused >= TABLE_SIZE / 2)
				return 0;		/* every slot in use: try next time */
		}
		memset(e, 0, sizeof(*e));
		e->pid = pid;
		nused++;
	}
	e->seen_ns = now;
	if (e->checked_ns == 0 || now - e->checked_ns >= CHECK_NS)
	{
		e->alive = is_tracked(pid);
		e->checked_ns = now;
		if (e->alive)
			e->dead_since_ns = 0;
		else if (e->dead_since_ns == 0)
			e->dead_since_ns = now;
	}
	return !e->alive &&
		(pressed || now - e->dead_since_ns >= (uint64_t) keep_s * 1000000000ULL);
}

/*
 * pid_retire_exiting
 *		See pid_retire.h.
 */
int
pid_retire_exiting(uint32_t pid)
{
	const pid_entry *e;

	if (!enabled || table == NULL || pid == 0 || PGT_IS_RETIRED(pid))
		return 0;
	e = slot_of(table, pid);
	return e->pid == pid && !e->alive;
}

/*
 * fold_row
 *		Add one row into its cluster's folded row, then delete it.
 */
static int
fold_row(const retire_map *m, const unsigned char *key, const unsigned char *val)
{
	unsigned char nkey[MAX_KEY];
	unsigned char nval[MAX_VAL];
	uint32_t	pm;
	uint32_t	pid;

	memcpy(&pm, (m->pm_in_key ? key : val) + m->pm_off, sizeof(pm));
	pid = PGT_RETIRED_PID(pm);
	memcpy(nkey, key, m->ksize);
	memcpy(nkey + m->pid_off, &pid, sizeof(pid));
	if (bpf_map_lookup_elem(m->fd, nkey, nval) == 0)
		m->fold(nval, val, m->fold_arg);
	else
		memcpy(nval, val, m->vsize);
	if (bpf_map_update_elem(m->fd, nkey, nval, BPF_ANY) == 0)
		return bpf_map_delete_elem(m->fd, key);
	if (errno != E2BIG)
		return -1;
	/* a full map: the row's own entry makes the room (nval holds it) */
	if (bpf_map_delete_elem(m->fd, key) != 0)
		return -1;
	return bpf_map_update_elem(m->fd, nkey, nval, BPF_ANY);
}

/*
 * pid_retire_rows
 *		See pid_retire.h.
 */
size_t
pid_retire_rows(const retire_map *m, const void *keys, const void *vals, size_t n)
{
	uint64_t	now;
	size_t		retired = 0;
	size_t		i;
	int			pressed;

	if (!enabled || m->fd < 0 || m->ksize > MAX_KEY || m->vsize > MAX_VAL)
		return 0;
	now = now_ns();
	pressed = m->max_entries > 0 && n * 2 >= m->max_entries;
	for (i = 0; i < n; i++)
	{
		const unsigned char *key = (const unsigned char *) keys + i * m->kstride;
		uint32_t	pid;

		memcpy(&pid, key + m->pid_off, sizeof(pid));
		if (!due(pid, now, pressed))
			continue;
		if (fold_row(m, key, (const unsigned char *) vals + i * m->vstride) == 0)
			retired++;
		else if (fold_failures++ % 1000 == 0)
			log_warn("%s: cannot fold the rows of exited pid %u: %s",
					 m->name, pid, strerror(errno));
	}
	if (retired)
		log_debug("%s: %zu rows of exited processes folded", m->name, retired);
	return retired;
}

/*
 * pid_retire_fold_u64
 *		dst += src for a value of __u64 counters laid out as layout says;
 *		the words after them (postmaster, padding) stay as they are.
 */
void
pid_retire_fold_u64(void *dst, const void *src, const void *layout)
{
	const retire_u64_layout *l = layout;
	unsigned char *d = dst;
	const unsigned char *s = src;
	size_t		i;

	for (i = 0; i < l->nwords; i++)
	{
		uint64_t	a;
		uint64_t	b;

		memcpy(&a, d + i * 8, 8);	/* copied rows need not be aligned */
		memcpy(&b, s + i * 8, 8);
		if (l->last_mask & (1ULL << i))
			a = b;
		else if (l->max_mask & (1ULL << i))
			a = b > a ? b : a;
		else
			a += b;
		memcpy(d + i * 8, &a, 8);
	}
}
