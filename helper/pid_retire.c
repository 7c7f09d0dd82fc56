/*
 * helper/pid_retire.c
 *	  Folding the rows of exited processes (see pid_retire.h).
 *
 * A small open-addressing table remembers, per pid seen in a map, whether
 * it was tracked at the last check and since when it has not been.  A pid
 * is asked about at most every CHECK_NS (a round over several maps asks
 * the kernel once), dead or alive: a dead one's pid may be taken by a new
 * process (below).  The table is rebuilt without the pids not looked at
 * for a while when it is half full, sized at four times what it keeps
 * (connection storms: thousands of pids a second).
 * Each check also notes the pid's role (role_of): at every check while it
 * runs, and at the first that finds it gone if none was noted; the daemon
 * also hands over the role of each process it stops tracking
 * (pid_retire_note_exit), for those that lived less than two checks, with
 * the pid the process had in its cluster's pid namespace: the rows it
 * leaves are published under that pid until they fold.
 *
 * A reused pid.  Each check also notes which process holds the pid (its
 * `tracked` entry's attached_ns).  When a later check finds another one
 * there, the rows under the pid are the old process's (and at most a check's
 * worth of the new one's): each map folds them at its next round (within
 * REUSE_FOLD_NS), with the old process's role, instead of letting the new
 * process continue them.  Once keep_s is over each map folds a dead pid's
 * rows at its next round, so a reuse found then folds in the maps that have
 * not had that round yet.  A process of another role would otherwise see
 * them as its own (query ids, counts and times of a session it may not
 * see).  Maps are told apart by descriptor (map_bit), at most 32 of them.
 *
 * Threading: single-threaded (the daemon's loop, or trace's).
 */
#include "pid_retire.h"
#include "log.h"
#include "parse_num.h"
#include "pg_tracer.h"
#include "procfs.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TABLE_MIN		16384	/* slots at first: a power of two */
#define TABLE_MAX		(1u << 18)	/* and at most (some 20 MB) */
#define CHECK_NS		200000000ULL	/* a liveness answer is good this long */
#define SETTLE_NS		CHECK_NS	/* a dead pid folds no sooner (see due()) */
#define FORGET_NS		10000000000ULL	/* unseen this long: dropped at rebuild */
#define REUSE_FOLD_NS	3000000000ULL	/* a reused pid's rows fold in the rounds
										 * this long after it is seen: every map
										 * with rows has one a second */
#define PRESSURE_SAY_NS	60000000000ULL	/* note_pressure's interval */
#define MAX_KEY			64
#define MAX_VAL			512

typedef struct pid_entry
{
	uint32_t	pid;			/* 0 = free slot */
	uint32_t	alive;			/* tracked at checked_ns */
	uint64_t	checked_ns;		/* last liveness check */
	uint64_t	dead_since_ns;	/* first check that found it gone */
	uint64_t	seen_ns;		/* last time a row of it was looked at */
	uint32_t	role;			/* PGT_ROLE_*, 0 = not known */
	uint32_t	nspid;			/* its pid in its cluster, noted at exit */
	uint64_t	ident;			/* attached_ns of the process last found */
	uint32_t	fold_maps;		/* map_bit()s still to fold a reused pid's rows */
	uint32_t	dead_folded;	/* map_bit()s that folded its rows since it exited */
	uint32_t	old_role;		/* the role of the process that held it before */
	uint64_t	fold_until_ns;	/* and until when (REUSE_FOLD_NS) */
} pid_entry;

static int	keep_s = PID_RETIRE_DEFAULT_S;
static int	enabled;
static int	tracked_fd = -1;
static pid_role_fn role_of;
static void *role_arg;
static pid_keep_fn keep_fn;
static void *keep_arg;
static pid_entry *table;
static size_t table_size;		/* slots of table: a power of two */
static uint64_t last_rebuild_ns;
static size_t nused;
static uint64_t fold_failures;
static int	map_fds[32];		/* map_bit's registry */
static int	nmap_fds;
static int	any_fold_maps;		/* some entry has fold_maps set */

/*
 * pid_retire_configure
 *		--keep-exited S.
 */
int
pid_retire_configure(const char *arg, char *err, size_t errlen)
{
	long		v;

	if (parse_decimal(arg, 0, PID_RETIRE_MAX_S, &v) < 0)
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
 *		Turn retirement on (the daemon, `trace`); role_of (may be NULL)
 *		names the processes' roles.
 */
void
pid_retire_setup(int fd, pid_role_fn fn, void *arg)
{
	tracked_fd = fd;
	role_of = fn;
	role_arg = arg;
	enabled = 1;
}

/*
 * pid_retire_keep
 *		See pid_retire.h.
 */
void
pid_retire_keep(pid_keep_fn keep, void *arg)
{
	keep_fn = keep;
	keep_arg = arg;
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
slot_of(pid_entry *t, size_t size, uint32_t pid)
{
	size_t		i = (pid * 2654435761u) & (size - 1);

	while (t[i].pid != 0 && t[i].pid != pid)
		i = (i + 1) & (size - 1);
	return &t[i];
}

/*
 * rebuild
 *		Keep only the pids looked at within FORGET_NS, in a table at least
 *		four times their number (up to TABLE_MAX).
 */
static void
rebuild(uint64_t now)
{
	size_t		keep = 0;
	size_t		size = TABLE_MIN;
	pid_entry  *n;
	size_t		i;

	for (i = 0; i < table_size; i++)
		keep += table[i].pid != 0 && now - table[i].seen_ns < FORGET_NS;
	while (size < 4 * keep && size < TABLE_MAX)
		size *= 2;
	if ((n = calloc(size, sizeof(*n))) == NULL)
		return;
	nused = 0;
	for (i = 0; i < table_size; i++)
		if (table[i].pid != 0 && now - table[i].seen_ns < FORGET_NS)
		{
			*slot_of(n, size, table[i].pid) = table[i];
			nused++;
		}
	free(table);
	table = n;
	table_size = size;
}

/*
 * map_bit
 *		The bit of map m in pid_entry.fold_maps, by its descriptor (names
 *		repeat: each kernel set has its own "kernel io"), registered at its
 *		first round; 0 when 32 maps have one already.
 */
static uint32_t
map_bit(const retire_map *m)
{
	int			i;

	for (i = 0; i < nmap_fds; i++)
		if (map_fds[i] == m->fd)
			return 1u << i;
	if (nmap_fds == 32)
		return 0;
	map_fds[nmap_fds] = m->fd;
	return 1u << nmap_fds++;
}

/*
 * is_tracked
 *		Is pid still one of the clusters' processes?  *ident: which one
 *		(its attached_ns; 0 when not known).
 */
static int
is_tracked(uint32_t pid, uint64_t *ident)
{
	struct pgt_tracked t = {0};

	*ident = 0;
	if (tracked_fd < 0)
		return procfs_alive((pid_t) pid, 0);
	if (bpf_map_lookup_elem(tracked_fd, &pid, &t) != 0)
		return 0;
	*ident = t.attached_ns;
	return 1;
}

/*
 * note_reuse
 *		A new process holds e's pid: the maps that may hold the earlier one's
 *		rows fold them at their next round.  That is every map while the old
 *		process ran or its rows were kept (keep_s); after, those that have
 *		not folded them since (a map's round comes within REUSE_FOLD_NS: past
 *		that, every map has, and the rows are the new process's).
 */
static void
note_reuse(pid_entry *e, uint64_t now)
{
	uint64_t	keep_ns = (uint64_t) keep_s * 1000000000ULL;
	uint64_t	dead_ns = e->dead_since_ns ? now - e->dead_since_ns : 0;
	uint32_t	maps = nmap_fds == 32 ? ~0u : (1u << nmap_fds) - 1;

	if (e->dead_since_ns != 0 && dead_ns >= keep_ns)
		maps = dead_ns < keep_ns + REUSE_FOLD_NS ? maps & ~e->dead_folded : 0;
	if (maps == 0)
		return;					/* folded already: the rows are the new one's */
	e->fold_maps = maps;
	e->fold_until_ns = now + REUSE_FOLD_NS;
	any_fold_maps = 1;
	e->old_role = e->role;
	e->role = 0;
	log_debug("pid %u reused: its earlier process's rows fold", e->pid);
}

/*
 * check
 *		Ask whether e's pid is tracked; note since when it is not, and its
 *		role (a reused pid's is its new process's).  A new process on the
 *		pid makes every map fold the rows it has under it.
 */
static void
check(pid_entry *e, uint64_t now)
{
	uint32_t	role = 0;
	uint64_t	ident;

	e->alive = is_tracked(e->pid, &ident);
	e->checked_ns = now;
	if (e->alive && ident != 0)
	{
		if (e->ident != 0 && ident != e->ident)
			note_reuse(e, now);
		e->ident = ident;
	}
	if (e->alive)
	{
		e->dead_since_ns = 0;
		e->dead_folded = 0;
	}
	else if (e->dead_since_ns == 0)
		e->dead_since_ns = now;
	if (role_of != NULL && (e->alive || e->role == 0))
		role = role_of(role_arg, e->pid, e->alive);
	if (role != 0)
		e->role = role;
}

/*
 * entry_of
 *		pid's table entry, made (unchecked) when missing; NULL when the
 *		table cannot have it now (out of memory, or every slot in use).
 */
static pid_entry *
entry_of(uint32_t pid, uint64_t now)
{
	pid_entry  *e;

	if (table == NULL)
	{
		if ((table = calloc(TABLE_MIN, sizeof(*table))) == NULL)
			return NULL;
		table_size = TABLE_MIN;
	}
	e = slot_of(table, table_size, pid);
	if (e->pid == 0)
	{
		if (nused >= table_size / 2)
		{
			/* a table full at its largest: not a rebuild per new pid */
			if (now - last_rebuild_ns < CHECK_NS)
				return NULL;
			last_rebuild_ns = now;
			rebuild(now);
			e = slot_of(table, table_size, pid);
			if (nused >= table_size / 2)
				return NULL;
		}
		memset(e, 0, sizeof(*e));
		e->pid = pid;
		e->seen_ns = now;
		nused++;
	}
	return e;
}

/*
 * due
 *		Has pid been gone for keep_s seconds (or SETTLE_NS, when pressed or
 *		keep_s is 0), or been taken by a new process since map `bit` last
 *		folded its rows?  Pid 0 (the kernel's rows) and folded rows never
 *		are.
 *		SETTLE_NS: a fold writes the rows as the round's copy has them and
 *		deletes the live ones, so the copy must hold all the process will
 *		add: what its task accumulators fold in as it exits, which may come
 *		after the copy when the check that found it gone comes after the
 *		copy (as in this round).  Found gone SETTLE_NS ago, it was gone
 *		before this round's copy was taken.
 */
static int
due(uint32_t pid, uint32_t bit, uint64_t now, int pressed)
{
	pid_entry  *e;

	if (pid == 0 || PGT_IS_RETIRED(pid) || (keep_fn != NULL && keep_fn(keep_arg, pid)) ||
		(e = entry_of(pid, now)) == NULL)
		return 0;
	e->seen_ns = now;
	if (e->checked_ns == 0 || now - e->checked_ns >= CHECK_NS)
		check(e, now);
	if (e->fold_maps != 0 && now >= e->fold_until_ns)
		e->fold_maps = 0;		/* a map without rows then has none of the old */
	if (e->fold_maps & bit)
		return 1;				/* reused: cleared once the round is done */
	if (e->alive)
		return 0;
	if (now - e->dead_since_ns < SETTLE_NS ||
		(!pressed && now - e->dead_since_ns < (uint64_t) keep_s * 1000000000ULL))
		return 0;
	e->dead_folded |= bit;
	return 1;
}

/*
 * known
 *		pid's entry when the table has one (no kernel call), else NULL; the
 *		kernel's pid 0 and folded pids never have one.
 */
static const pid_entry *
known(uint32_t pid)
{
	const pid_entry *e;

	if (table == NULL || pid == 0 || PGT_IS_RETIRED(pid))
		return NULL;
	e = slot_of(table, table_size, pid);
	return e->pid == pid ? e : NULL;
}

/*
 * pid_retire_exiting
 *		See pid_retire.h.
 */
int
pid_retire_exiting(uint32_t pid)
{
	const pid_entry *e = enabled ? known(pid) : NULL;

	return e != NULL && !e->alive;
}

/*
 * pid_retire_role
 *		See pid_retire.h.
 */
uint32_t
pid_retire_role(uint32_t pid)
{
	const pid_entry *e = known(pid);

	return e != NULL ? e->role : 0;
}

/*
 * pid_retire_live_role
 *		See pid_retire.h.
 */
uint32_t
pid_retire_live_role(uint32_t pid)
{
	return role_of != NULL ? role_of(role_arg, pid, 1) : 0;
}

/*
 * pid_retire_rows_of_other
 *		See pid_retire.h.  A pid without an entry has had no rows looked at.
 */
int
pid_retire_rows_of_other(uint32_t pid, uint64_t ident)
{
	const pid_entry *e = enabled ? known(pid) : NULL;

	if (e == NULL || ident == 0)
		return 0;
	if (e->fold_maps != 0 && now_ns() < e->fold_until_ns)
		return 1;				/* some map has its round still to come */
	return e->ident != 0 && e->ident != ident;
}

/*
 * pid_retire_nspid
 *		See pid_retire.h.
 */
uint32_t
pid_retire_nspid(uint32_t pid)
{
	const pid_entry *e = known(pid);

	return e != NULL ? e->nspid : 0;
}

/*
 * pid_retire_note_exit
 *		See pid_retire.h.  The nspid is always the exiting process's: a
 *		reused pid's earlier one belonged to the process before.
 */
void
pid_retire_note_exit(uint32_t pid, uint32_t role, uint32_t nspid)
{
	pid_entry  *e;

	if (!enabled || pid == 0 || PGT_IS_RETIRED(pid))
		return;
	e = entry_of(pid, now_ns());
	if (e == NULL)
		return;
	if (e->role == 0)
		e->role = role;
	e->nspid = nspid;
}

/*
 * fold_role
 *		The role a row of pid folds with in map m: that of the process that
 *		held the pid before, while m folds a reused pid's rows.
 */
static uint32_t
fold_role(const retire_map *m, uint32_t pid)
{
	const pid_entry *e;

	if (table == NULL || pid == 0 || PGT_IS_RETIRED(pid))
		return 0;
	e = slot_of(table, table_size, pid);
	if (e->pid != pid)
		return 0;
	return (e->fold_maps & map_bit(m)) != 0 ? e->old_role : e->role;
}

/*
 * reuse_round_done
 *		Map `bit` has had its round: the rows it had of reused pids are
 *		folded, and a row it gets of them from now on is the new process's.
 */
static void
reuse_round_done(uint32_t bit)
{
	size_t		i;
	int			left = 0;

	if (!any_fold_maps || table == NULL)
		return;
	for (i = 0; i < table_size; i++)
	{
		table[i].fold_maps &= ~bit;
		left |= table[i].fold_maps != 0;
	}
	any_fold_maps = left;
}

/*
 * folded_key
 *		The key of the row that the row (key, val) folds into: its own with
 *		the pid replaced by PGT_RETIRED_PID(its postmaster), or with
 *		role_in_key PGT_RETIRED_PID_ROLE(its postmaster, its role).
 */
static void
folded_key(const retire_map *m, const unsigned char *key, const unsigned char *val,
		   unsigned char *out)
{
	uint32_t	pm;
	uint32_t	pid;

	memcpy(&pm, (m->pm_in_key ? key : val) + m->pm_off, sizeof(pm));
	memcpy(&pid, key + m->pid_off, sizeof(pid));
	pid = m->role_in_key ? PGT_RETIRED_PID_ROLE(pm, fold_role(m, pid)) : PGT_RETIRED_PID(pm);
	memcpy(out, key, m->ksize);
	memcpy(out + m->pid_off, &pid, sizeof(pid));
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

	folded_key(m, key, val, nkey);
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
 * A batch of folds over one copy of a map: the folded rows (those already
 * in the copy, then new ones), indexed by key, each marked when a fold
 * changed it; and the keys of the rows folded, to delete.
 */
typedef struct fold_batch
{
	const retire_map *m;
	unsigned char *fkeys;
	unsigned char *fvals;
	unsigned char *touched;
	size_t		nf;
	int32_t    *slots;			/* open addressing over fkeys, -1 = free */
	size_t		nslots;			/* a power of two */
	unsigned char *skeys;
	size_t		ns;
} fold_batch;

static uint32_t
key_hash(const unsigned char *k, size_t len)
{
	uint32_t	h = 2166136261u;	/* FNV-1a */
	size_t		i;

	for (i = 0; i < len; i++)
		h = (h ^ k[i]) * 16777619u;
	return h;
}

/*
 * batch_find
 *		The folded row with key k: its index, creating it (with value v)
 *		when missing; sets *created.
 */
static size_t
batch_find(fold_batch *b, const unsigned char *k, const unsigned char *v, int *created)
{
	size_t		ks = b->m->ksize;
	size_t		i = key_hash(k, ks) & (b->nslots - 1);
	size_t		j;

	while (b->slots[i] >= 0)
	{
		j = (size_t) b->slots[i];
		if (memcmp(b->fkeys + j * ks, k, ks) == 0)
		{
			*created = 0;
			return j;
		}
		i = (i + 1) & (b->nslots - 1);
	}
	j = b->nf++;
	memcpy(b->fkeys + j * ks, k, ks);
	memcpy(b->fvals + j * b->m->vsize, v, b->m->vsize);
	b->touched[j] = 0;
	b->slots[i] = (int32_t) j;
	*created = 1;
	return j;
}

/*
 * batch_alloc
 *		Room for nfold folded rows, ndue rows to fold.
 */
static int
batch_alloc(fold_batch *b, const retire_map *m, size_t nfold, size_t ndue)
{
	size_t		i;

	memset(b, 0, sizeof(*b));
	b->m = m;
	for (b->nslots = 16; b->nslots < 2 * (nfold + ndue); b->nslots *= 2)
		;
	b->fkeys = malloc((nfold + ndue) * m->ksize);
	b->fvals = malloc((nfold + ndue) * m->vsize);
	b->touched = malloc(nfold + ndue);
	b->slots = malloc(b->nslots * sizeof(*b->slots));
	b->skeys = malloc(ndue * m->ksize);
	if (!b->fkeys || !b->fvals || !b->touched || !b->slots || !b->skeys)
		return -1;
	for (i = 0; i < b->nslots; i++)
		b->slots[i] = -1;
	return 0;
}

static void
batch_free(fold_batch *b)
{
	free(b->fkeys);
	free(b->fvals);
	free(b->touched);
	free(b->slots);
	free(b->skeys);
}

/*
 * batch_add
 *		Fold one due row (key k, value v) into the batch.
 */
static void
batch_add(fold_batch *b, const unsigned char *k, const unsigned char *v)
{
	const retire_map *m = b->m;
	unsigned char fk[MAX_KEY];
	size_t		j;
	int			created;

	folded_key(m, k, v, fk);
	j = batch_find(b, fk, v, &created);
	if (!created)
		m->fold(b->fvals + j * m->vsize, v, m->fold_arg);
	b->touched[j] = 1;
	memcpy(b->skeys + b->ns++ * m->ksize, k, m->ksize);
}

/*
 * batch_write
 *		Delete the folded rows (first: in a full map that makes the room),
 *		then write the folded rows that changed, in one call each.  -1 when
 *		the kernel has no batch operations (nothing was changed then).
 */
static int
batch_write(fold_batch *b)
{
	DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
	const retire_map *m = b->m;
	__u32		count = (__u32) b->ns;
	size_t		n = 0;
	size_t		j;

	if (bpf_map_delete_batch(m->fd, b->skeys, &count, &opts) != 0)
	{
		if (count == 0 && errno != ENOENT)
			return -1;			/* no batch operations: nothing changed */
		/* it stops at a key that is gone: the rest one by one */
		for (j = count; j < b->ns; j++)
			(void) bpf_map_delete_elem(m->fd, b->skeys + j * m->ksize);
	}
	for (j = 0; j < b->nf; j++)
		if (b->touched[j])
		{
			memmove(b->fkeys + n * m->ksize, b->fkeys + j * m->ksize, m->ksize);
			memmove(b->fvals + n * m->vsize, b->fvals + j * m->vsize, m->vsize);
			n++;
		}
	count = (__u32) n;
	if (bpf_map_update_batch(m->fd, b->fkeys, b->fvals, &count, &opts) != 0)
	{
		/* one by one from where it stopped */
		for (j = count; j < n; j++)
			if (bpf_map_update_elem(m->fd, b->fkeys + j * m->ksize,
									b->fvals + j * m->vsize, BPF_ANY) != 0 &&
				fold_failures++ % 1000 == 0)
				log_warn("%s: a folded row of exited processes is lost: %s",
						 m->name, strerror(errno));
	}
	return 0;
}

/*
 * fold_rows_batch
 *		Fold the due rows (indexes idx) through one batch.  -1 when batches
 *		cannot be used.
 */
static int
fold_rows_batch(const retire_map *m, const unsigned char *keys, const unsigned char *vals,
				size_t n, const size_t *idx, size_t ndue)
{
	fold_batch	b;
	size_t		nfold = 0;
	size_t		i;
	int			created;
	int			r = -1;

	for (i = 0; i < n; i++)
	{
		uint32_t	pid;

		memcpy(&pid, keys + i * m->kstride + m->pid_off, sizeof(pid));
		nfold += PGT_IS_RETIRED(pid);
	}
	if (batch_alloc(&b, m, nfold, ndue) == 0)
	{
		/* the folded rows as the copy has them: folds add to those */
		for (i = 0; i < n; i++)
		{
			uint32_t	pid;

			memcpy(&pid, keys + i * m->kstride + m->pid_off, sizeof(pid));
			if (PGT_IS_RETIRED(pid))
				(void) batch_find(&b, keys + i * m->kstride, vals + i * m->vstride, &created);
		}
		for (i = 0; i < ndue; i++)
			batch_add(&b, keys + idx[i] * m->kstride, vals + idx[i] * m->vstride);
		r = batch_write(&b);
	}
	batch_free(&b);
	return r;
}

/*
 * note_pressure
 *		Say (info) that map m is half full, so that its exited processes'
 *		rows fold as soon as they may: a user who reads --keep-exited would
 *		not expect that unexplained.  Folding empties the map, so under steady churn it
 *		comes and goes every few seconds: said at most once a minute a map.
 */
static void
note_pressure(const retire_map *m, uint32_t bit, size_t n, uint64_t now)
{
	static uint64_t said_ns[32];
	int			i = __builtin_ctz(bit);

	if (said_ns[i] != 0 && now - said_ns[i] < PRESSURE_SAY_NS)
		return;
	log_info("%s: %zu of %zu rows in use: the rows of exited processes fold as soon as they "
			 "are found gone (and 200 ms more), "
			 "not after --keep-exited %d s", m->name, n, m->max_entries, keep_s);
	said_ns[i] = now;
}

/*
 * pid_retire_rows
 *		See pid_retire.h.  Through one batch where the kernel has batch
 *		operations on hash maps (5.6+), else row by row.
 */
size_t
pid_retire_rows(const retire_map *m, const void *keys, const void *vals, size_t n)
{
	const unsigned char *k = keys;
	const unsigned char *v = vals;
	uint64_t	now;
	size_t		retired = 0;
	size_t	   *idx;
	size_t		ndue = 0;
	size_t		i;
	int			pressed;
	uint32_t	bit;

	if (!enabled || m->fd < 0 || m->ksize > MAX_KEY || m->vsize > MAX_VAL)
		return 0;
	bit = map_bit(m);
	if (n == 0)
	{
		reuse_round_done(bit);
		return 0;
	}
	now = now_ns();
	pressed = m->max_entries > 0 && n * 2 >= m->max_entries;
	if (pressed && bit != 0)
		note_pressure(m, bit, n, now);
	idx = malloc(n * sizeof(*idx));
	if (idx == NULL)
		return 0;
	for (i = 0; i < n; i++)
	{
		uint32_t	pid;

		memcpy(&pid, k + i * m->kstride + m->pid_off, sizeof(pid));
		if (due(pid, bit, now, pressed))
			idx[ndue++] = i;
	}
	if (ndue > 0 && fold_rows_batch(m, k, v, n, idx, ndue) == 0)
		retired = ndue;
	else
		for (i = 0; i < ndue; i++)
		{
			if (fold_row(m, k + idx[i] * m->kstride, v + idx[i] * m->vstride) == 0)
				retired++;
			else if (fold_failures++ % 1000 == 0)
				log_warn("%s: cannot fold a row of an exited process: %s",
						 m->name, strerror(errno));
		}
	free(idx);
	reuse_round_done(bit);
	if (retired)
		log_debug("%s: %zu rows of exited processes folded", m->name, retired);
	return retired;
}

/*
 * pid_retire_fold_u64
 *		dst += src for a value of __u64 counters laid out as layout says
 *		(maxima kept, current values replaced when src set one); the words
 *		after them (postmaster, padding) stay as they are.
 */
void
pid_retire_fold_u64(void *dst, const void *src, const void *layout)
{
	const retire_u64_layout *l = layout;
	unsigned char *d = dst;
	const unsigned char *s = src;
	uint64_t	guard = 1;
	size_t		i;

	if (l->last_guard > 0 && l->last_guard <= l->nwords)
		memcpy(&guard, s + (l->last_guard - 1) * 8, 8);
	for (i = 0; i < l->nwords; i++)
	{
		uint64_t	a;
		uint64_t	b;

		memcpy(&a, d + i * 8, 8);	/* copied rows need not be aligned */
		memcpy(&b, s + i * 8, 8);
		if (l->last_mask & (1ULL << i))
			a = guard != 0 ? b : a;
		else if (l->max_mask & (1ULL << i))
			a = b > a ? b : a;
		else
			a += b;
		memcpy(d + i * 8, &a, 8);
	}
}
