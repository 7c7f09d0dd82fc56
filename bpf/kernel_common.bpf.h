/*
 * bpf/kernel_common.bpf.h
 *	  Inline pieces the kernel probe sets (bpf/kernel_*.bpf.c) share: map
 *	  declarations of their aggregates, the in-kernel aggregation updates
 *	  (on the shared maps; a task's own rows are kernel_tacc.bpf.h's), and
 *	  the classification of the file behind a descriptor.
 *
 * Include after vmlinux.h, the libbpf headers and pgt_common.bpf.h.
 */
#ifndef PGT_BPF_KERNEL_COMMON_BPF_H
#define PGT_BPF_KERNEL_COMMON_BPF_H

#include "kernel_sets.h"

#define PGT_DECLARE_KIO \
	struct { \
		__uint(type, BPF_MAP_TYPE_LRU_HASH); \
		__uint(max_entries, PGT_KIO_MAX); \
		__type(key, struct pgt_kio_key); \
		__type(value, struct pgt_kio_val); \
	} kio SEC(".maps")

#define PGT_DECLARE_KPROC \
	struct { \
		__uint(type, BPF_MAP_TYPE_LRU_HASH); \
		__uint(max_entries, PGT_KPROC_MAX); \
		__type(key, struct pgt_kproc_key); \
		__type(value, struct pgt_kproc_val); \
	} kproc SEC(".maps")

#define PGT_DECLARE_KHIST \
	struct { \
		__uint(type, BPF_MAP_TYPE_LRU_HASH); \
		__uint(max_entries, PGT_KHIST_ENTRIES); \
		__type(key, struct pgt_khist_key); \
		__type(value, struct pgt_khist_val); \
	} khist SEC(".maps")

/*
 * When the helper last held this object's programs or let them run again
 * (--kernel-sets escalated: they are detached outside escalation windows).
 * A start noted before that (a system call entered, a request issued, a
 * switch-out) has its end seen only now, at a resume or at an exit fold
 * during the hold, with the time in between unseen: it is dropped, not
 * counted.  Written by the helper (helper/kernel_hold.c) after detaching
 * and before attaching, read here; one entry per object.
 */
struct
{
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pgt_kresume);
} kresume SEC(".maps");

/*
 * pgt_kresumed
 *		The object's resume record (an array lookup the verifier inlines);
 *		never NULL in practice, so callers treat NULL as "never held".
 */
static __always_inline struct pgt_kresume *
pgt_kresumed(void)
{
	__u32		k = 0;

	return bpf_map_lookup_elem(&kresume, &k);
}

/*
 * pgt_kresume_gen
 *		The object's hold generation: how many times its programs were held
 *		or let run again (0 before any hold).
 */
static __always_inline __u32
pgt_kresume_gen(void)
{
	struct pgt_kresume *r = pgt_kresumed();

	return r ? r->gen : 0;
}

/*
 * pgt_started_before_resume
 *		Was a start taken on bpf_ktime_get_ns() at start_ns before the
 *		object's programs were last held or resumed?
 */
static __always_inline int
pgt_started_before_resume(__u64 start_ns)
{
	struct pgt_kresume *r = pgt_kresumed();

	return r && start_ns < r->ns;
}

/* The file an I/O went to, as far as pgt_classify_file can tell */
struct pgt_kfile
{
	__u32		relfilenode;	/* data files: the file's number, else 0 */
	__u32		dboid;			/* data files: its database, 0 = shared (global/) */
	__u32		dev;			/* kernel dev_t of its file system, 0 = n/a */
};

/*
 * pgt_kio_key_set
 *		Every field of an I/O aggregate's key (the padding too: it is a
 *		hash key).
 */
static __always_inline void
pgt_kio_key_set(struct pgt_kio_key *k, __u32 pid, __u8 layer, __u8 op, __u8 file_class,
				__u64 qid, const struct pgt_kfile *file)
{
	k->pid = pid;
	k->layer = layer;
	k->op = op;
	k->file_class = file_class;
	k->pad = 0;
	k->queryid = qid;
	k->relfilenode = file->relfilenode;
	k->dev = file->dev;
	k->dboid = file->dboid;
	k->pad2 = 0;
}

/*
 * PGT_ADD
 *		*p += x: atomically on a row of a shared map (other CPUs add to it
 *		too), plainly on a row of a task's own accumulators (only that task,
 *		or the CPU switching it in, writes them).
 */
#define PGT_ADD(shared, p, x) \
	do { \
		if (shared) \
			__sync_fetch_and_add((p), (x)); \
		else \
			*(p) += (x); \
	} while (0)

/* *p = max(*p, x): racy on a shared row, good enough for a maximum */
#define PGT_MAX(p, x) \
	do { \
		if ((x) > *(p)) \
			*(p) = (x); \
	} while (0)

/*
 * pgt_kio_get
 *		The I/O aggregate of k in map, created when missing; NULL when the
 *		map refuses it.
 */
static __always_inline struct pgt_kio_val *
pgt_kio_get(void *map, const struct pgt_kio_key *k, __u32 pm)
{
	struct pgt_kio_val *v = bpf_map_lookup_elem(map, k);

	if (!v)
	{
		struct pgt_kio_val init = {};

		init.pm = pm;
		bpf_map_update_elem(map, k, &init, BPF_NOEXIST);
		v = bpf_map_lookup_elem(map, k);
	}
	return v;
}

/*
 * pgt_kio_val_add
 *		One operation into an I/O aggregate (shared: a map's row).
 */
static __always_inline void
pgt_kio_val_add(struct pgt_kio_val *v, int shared, __u64 bytes, int error, __u64 ns)
{
	PGT_ADD(shared, &v->calls, 1);
	if (bytes)
		PGT_ADD(shared, &v->bytes, bytes);
	if (error)
		PGT_ADD(shared, &v->errors, 1);
	if (ns)
	{
		PGT_ADD(shared, &v->total_ns, ns);
		PGT_MAX(&v->max_ns, ns);
	}
}

/*
 * pgt_kio_add
 *		One operation into an I/O aggregate of map.
 */
static __always_inline void
pgt_kio_add(void *map, struct pgt_kio_key *k, __u32 pm, __u64 bytes, int error,
			__u64 ns)
{
	struct pgt_kio_val *v = pgt_kio_get(map, k, pm);

	if (v)
		pgt_kio_val_add(v, 1, bytes, error, ns);
}

/*
 * pgt_kproc_get
 *		The per-(pid, query) counters, created when missing.
 */
static __always_inline struct pgt_kproc_val *
pgt_kproc_get(void *map, __u32 pid, __u64 qid, __u32 pm)
{
	struct pgt_kproc_key k = {.pid = pid, .queryid = qid};
	struct pgt_kproc_val *v = bpf_map_lookup_elem(map, &k);

	if (!v)
	{
		struct pgt_kproc_val init = {};

		init.pm = pm;
		bpf_map_update_elem(map, &k, &init, BPF_NOEXIST);
		v = bpf_map_lookup_elem(map, &k);
	}
	return v;
}

/*
 * pgt_khist_get
 *		The histogram of k in map, created when missing.
 */
static __always_inline struct pgt_khist_val *
pgt_khist_get(void *map, const struct pgt_khist_key *k, __u32 pm)
{
	struct pgt_khist_val *v = bpf_map_lookup_elem(map, k);

	if (!v)
	{
		struct pgt_khist_val init = {};

		init.pm = pm;
		bpf_map_update_elem(map, k, &init, BPF_NOEXIST);
		v = bpf_map_lookup_elem(map, k);
	}
	return v;
}

/* The microsecond log2 slot of a latency in ns */
static __always_inline __u32
pgt_khist_slot(__u64 ns)
{
	return pgt_log2(ns / 1000) & 31;
}

/*
 * pgt_khist_add
 *		One latency (ns) into a microsecond log2 histogram of map.
 */
static __always_inline void
pgt_khist_add(void *map, __u32 metric, __u32 pid, __u32 dev, __u32 op, __u32 pm,
			  __u64 ns)
{
	struct pgt_khist_key k = {.metric = metric, .pid = pid, .dev = dev, .op = op};
	struct pgt_khist_val *v = pgt_khist_get(map, &k, pm);

	if (v)
		__sync_fetch_and_add(&v->slots[pgt_khist_slot(ns)], 1);
}

/*
 * pgt_fd_file
 *		The struct file of the current task's descriptor fd, or NULL.
 *		task, files and fdt are walked with direct (BTF) loads, which the
 *		JIT turns into plain loads: one helper call (the fd array slot,
 *		which the verifier sees as a scalar) instead of five.
 */
static __always_inline struct file *
pgt_fd_file(__u32 fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct files_struct *files = task->files;
	struct fdtable *fdt;
	struct file **fds;
	struct file *f = 0;

	if (!files)
		return 0;
	fdt = files->fdt;
	if (!fdt || fd >= fdt->max_fds)
		return 0;
	fds = fdt->fd;
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) != 0)
		return 0;
	return f;
}

/* Per-task query-id state of pgt_task_qid, kept in a set's task storage. */
struct pgt_qid_cache
{
	__u64		addr;			/* the task's st_query_id, once its slot is checked */
	__u64		last;			/* the slot's last_qid as this task last saw it */
	__u64		mm;				/* the address space addr was checked in */
	__u64		wait;			/* with addr: its PGPROC.wait_event_info, 0 unknown
								 * (a slot BPF made gets it when the helper maps it) */
	__u64		wait_looked;	/* sched's clock when the slot was last looked at for it */
};

/*
 * pgt_task_qid
 *		pgt_current_qid for a program with task storage.  The slot is
 *		looked up and checked (its st_procpid is tgid's pid: a user-memory
 *		read) once per task; then a call costs one read of st_query_id.  A
 *		live process keeps its slot, and task storage dies with the task.
 *
 *		With publish (a constant at each call site), the slot's last_qid is
 *		written too when the id changed: the id pgt_cached_qid gives
 *		programs of other contexts.  Its readers, the retransmit program
 *		and an OOM-score change made by another process, want the id of
 *		the owner's last send, so only sends publish.  Publishing costs a
 *		hash lookup and a store to a line other CPUs read: 40 ns a context
 *		switch when sched did it (bench/RESULTS.md, 2026-12-03).
 *
 *		task is the current task.  The cached address holds only in the
 *		address space it was checked in: a task that execs keeps its task
 *		storage, but not the PostgreSQL memory the address pointed into
 *		(the new program may be set-uid, and its memory is none of ours),
 *		so a new mm sends the task back to its slot, which the foundation
 *		no longer backs once the task left `tracked` at the exec.
 */
static __always_inline __u64
pgt_task_qid(struct task_struct *task, __u32 tgid, struct pgt_qid_cache *c, const int publish)
{
	struct pgt_qid_slot *slot;
	__u64		mm = (__u64) task->mm;
	__u64		qid = 0;

	if (pgt_qid_off)
		return 0;
	if (c->addr && c->mm == mm)
	{
		if (bpf_probe_read_user(&qid, sizeof(qid), (void *) c->addr) != 0)
			return 0;
		if (publish && qid != c->last)
		{
			slot = bpf_map_lookup_elem(&pgt_qid, &tgid);
			if (slot && slot->queryid_addr == c->addr)
				slot->last_qid = qid;
			c->last = qid;
		}
		return qid;
	}
	c->addr = 0;
	c->wait = 0;
	if (!pgt_tracked_pm(tgid))
		return 0;				/* left `tracked`: an exec (or its exit) */
	slot = bpf_map_lookup_elem(&pgt_qid, &tgid);
	if (!slot)
		return pgt_current_qid(tgid);	/* maps the slot when it can */
	if (pgt_read_qid(slot->procpid_addr, slot->nspid, slot->queryid_addr, &qid) != 0)
		return 0;
	c->addr = slot->queryid_addr;
	c->mm = mm;
	/* the task's own slot: an indirect one's is a pointer variable's address */
	c->wait = (slot->flags & PGT_QID_INDIRECT) ? 0 : slot->wait_addr;
	if (publish)
		slot->last_qid = qid;
	c->last = slot->last_qid;	/* what the slot holds: compared at the next publish */
	return qid;
}

/*
 * pgt_parse_oid
 *		The number a relation file or database directory is named after:
 *		"16384", "16384.1", "16384_fsm" -> 16384; 0 when name does not start
 *		with a digit.
 */
static __always_inline __u32
pgt_parse_oid(const char *name)
{
	__u32		v = 0;
	int			i;

	for (i = 0; i < 11; i++)
	{
		char		c = name[i];

		if (c < '0' || c > '9')
			break;
		v = v * 10 + (__u32) (c - '0');
	}
	return v;
}

/*
 * pgt_temp_rel_oid
 *		The relfilenode in a temporary relation's file name,
 *		"t<proc number>_<relfilenode>" (and its ".1" and "_fsm" forms); 0
 *		when name (at least 20 bytes) is not one.  Unrolled, each read at a
 *		constant offset: a loop with running state costs older verifiers
 *		(6.1) every path through it, in each program that classifies files.
 */
static __always_inline __u32
pgt_temp_rel_oid(const char *name)
{
	int			i;

	if (name[0] != 't' || name[1] < '0' || name[1] > '9')
		return 0;
#pragma unroll
	for (i = 2; i < 9; i++)
	{
		if (name[i] == '_')
			return pgt_parse_oid(name + i + 1);
		if (name[i] < '0' || name[i] > '9')
			return 0;
	}
	return 0;
}

/*
 * pgt_prefix
 *		Does s start with the short literal p (at most 10 chars)?
 */
static __always_inline int
pgt_prefix(const char *s, const char *p, int n)
{
	int			i;

	for (i = 0; i < n && i < 10; i++)
		if (s[i] != p[i])
			return 0;
	return 1;
}

/*
 * pgt_wal_segment_name
 *		Is s (at least 25 bytes) a WAL segment's name: 24 upper-case hex
 *		digits, then the end or a suffix (".partial")?  Names WAL wherever
 *		pg_wal points: a WAL directory given with initdb -X is a symbolic
 *		link, and the directory the kernel sees is its target's.
 */
static __always_inline int
pgt_wal_segment_name(const char *s)
{
	int			i;

	for (i = 0; i < 24; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	return s[24] == '\0' || s[24] == '.';
}

#define PGT_S_IFMT		00170000
#define PGT_S_IFSOCK	0140000
#define PGT_S_IFREG		0100000
#define PGT_S_IFDIR		0040000

/*
 * pgt_classify_file
 *		File class of f from its name and its directory's name: pg_wal/ or
 *		a WAL segment's name -> WAL, pgsql_tmp -> temp, a number under a
 *		numbered directory or global/ -> data (a temporary relation's
 *		"t<proc>_<number>" too), sockets; what is neither a
 *		regular file nor a directory (a pipe, a character device, the
 *		anonymous inodes of signalfd and eventfd, which PostgreSQL's latches
 *		read) is special: its reads are no file reads the page cache could
 *		serve; else other.  A data file's relfilenode is
 *		its name's number and its database the directory's (base/<db>/ or a
 *		tablespace's <version>/<db>/); global/ holds the shared catalogs
 *		(database 0, as pg_stat_database counts them).  *file gets those
 *		and the file system's device.
 */
static __always_inline __u8
pgt_classify_file(struct file *f, struct pgt_kfile *file)
{
	char		name[32] = {};	/* a WAL segment's 24 digits and more */
	char		parent[16] = {};
	struct dentry *d;
	umode_t		mode;

	file->relfilenode = 0;
	file->dboid = 0;
	file->dev = 0;
	if (!f)
		return PGT_KFILE_OTHER;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & PGT_S_IFMT) == PGT_S_IFSOCK)
		return PGT_KFILE_SOCKET;
	file->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	if ((mode & PGT_S_IFMT) != PGT_S_IFREG && (mode & PGT_S_IFMT) != PGT_S_IFDIR)
		return PGT_KFILE_SPECIAL;
	d = BPF_CORE_READ(f, f_path.dentry);
	bpf_probe_read_kernel_str(name, sizeof(name), BPF_CORE_READ(d, d_name.name));
	bpf_probe_read_kernel_str(parent, sizeof(parent), BPF_CORE_READ(d, d_parent, d_name.name));
	if (pgt_prefix(parent, "pg_wal", 7) || pgt_wal_segment_name(name))
		return PGT_KFILE_WAL;
	if (pgt_prefix(name, "pgsql_tmp", 9) || pgt_prefix(parent, "pgsql_tmp", 9))
		return PGT_KFILE_TEMP;
	if (name[0] >= '0' && name[0] <= '9' &&
		((parent[0] >= '0' && parent[0] <= '9') || pgt_prefix(parent, "global", 7)))
	{
		file->relfilenode = pgt_parse_oid(name);
		file->dboid = pgt_parse_oid(parent);	/* "global": 0 */
		return PGT_KFILE_DATA;
	}
	if (parent[0] >= '0' && parent[0] <= '9' && (file->relfilenode = pgt_temp_rel_oid(name)))
	{
		file->dboid = pgt_parse_oid(parent);
		return PGT_KFILE_DATA;
	}
	return PGT_KFILE_OTHER;
}

#define PGT_EAGAIN		11

/*
 * is_restart
 *		Is ret one of the kernel's restart codes (ERESTARTSYS ..
 *		ERESTART_RESTARTBLOCK, 512 to 516), which the exit tracepoint (and a
 *		vfs function's return) sees before signal delivery?  A signal interrupted the call, and it is
 *		made again (PostgreSQL's handlers restart calls) or returns EINTR,
 *		which PostgreSQL retries: either way the call is entered once more,
 *		and counted then, once (the time before the signal is not).
 */
static __always_inline int
is_restart(long ret)
{
	return ret <= -512 && ret >= -516;
}

/*
 * call_failed
 *		Did a completed call fail?  EAGAIN is not a failure: it is the
 *		answer of a non-blocking descriptor with nothing to read or no room
 *		to write, and a backend's socket is one, so each wait for the
 *		client's next message starts with a receive that finds nothing (and
 *		a latch's pipe is drained the same way).  Such a call is counted as
 *		a call; errors are the failures a DBA should look at.
 */
static __always_inline int
call_failed(long ret)
{
	return ret < 0 && ret != -PGT_EAGAIN;
}

#endif							/* PGT_BPF_KERNEL_COMMON_BPF_H */
