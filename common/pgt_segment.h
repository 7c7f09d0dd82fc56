/*-------------------------------------------------------------------------
 *
 * pgt_segment.h
 *	  The shared-memory segment contract between the pg-tracer helper
 *	  (writer, root) and the pg_tracer extension (reader, cluster owner).
 *
 * One segment exists per PostgreSQL cluster, as a regular file
 *	  <runtime_dir>/pgt-<dev>-<ino>.seg
 * where <dev> and <ino> are the st_dev and st_ino of the cluster's data
 * directory in lower-case hex without leading zeros (see pgt_cluster_key()).
 * The control socket of the same cluster is the same name with ".sock", and
 * the helper's per-cluster lock file the same name with ".lock".
 *
 * Layout: a fixed header, then up to PGT_MAX_SECTIONS tables.  Each table is
 * described by a section descriptor (kind, entry size, offset, capacity,
 * count).  A reader ignores section kinds it does not know, and accepts
 * entries larger than the struct it knows (it reads the known prefix), so
 * later features add sections or grow entries without a new layout
 * version.  PGT_SEG_LAYOUT_VERSION changes only when a field below moves.
 *
 * Concurrency: the writer (single thread) updates the segment in place
 * under a seqlock: it increments `seq` to an odd value, issues a write
 * barrier, rewrites the tables and the header fields, issues a write barrier
 * and increments `seq` to the next even value.  A reader copies the whole
 * segment and accepts the copy only when `seq` was even and unchanged before
 * and after the copy.  The writer never shrinks a segment file: when it needs
 * a different size it builds a new file and rename()s it over the old name,
 * so a reader that has the old file open or mapped never faults.
 *
 * Trust: the reader trusts nothing.  pgt_segment_validate() checks every
 * size, offset, count and capacity before any table is touched, and strings
 * are copied with pgt_copy_string(), which bounds and sanitizes them.
 *
 * All integers are host-endian (writer and reader run on the same host).
 * Every struct has a _Static_assert on its size: change one and you change
 * the contract.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGT_SEGMENT_H
#define PGT_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

/* "PGTRCSEG" read as a little-endian u64 */
#define PGT_SEG_MAGIC			UINT64_C(0x4745534352544750)
#define PGT_SEG_LAYOUT_VERSION	1

#define PGT_MAX_SECTIONS		16
#define PGT_VERSION_LEN			32
#define PGT_DATADIR_LEN			256

/* Largest segment a reader will accept (defends against a hostile size). */
#define PGT_SEG_MAX_SIZE		(UINT64_C(256) * 1024 * 1024)

/* Header `state` values. */
#define PGT_WRITER_RUNNING		1	/* helper alive and publishing */
#define PGT_WRITER_STOPPED		2	/* helper exited cleanly */
#define PGT_WRITER_WAITING		3	/* helper alive, postmaster not running */

/*
 * Section kinds.  Numbers are never reused.  Ranges by feature, so features
 * developed side by side never collide:
 *	  1..9    foundation (probe sets, backends)
 *	  10..19  exact wait events (helper syscall tagging / watchpoints)
 *	  20..29  kernel subsystems (syscall, vfs, block, sched, memory, network)
 *	  30..39  engine probes (query, locks, WAL, buffers, checkpoints)
 *	  40..63  unassigned
 * A new kind also needs its entry struct below and a line in
 * pgt_section_entry_size() (common/pgt_segment.c).
 */
#define PGT_SEC_KIND_MAX		64	/* kinds are 1 .. PGT_SEC_KIND_MAX - 1 */
#define PGT_SEC_PROBESETS		1	/* struct pgt_probeset_entry */
#define PGT_SEC_BACKENDS		2	/* struct pgt_backend_entry */
#define PGT_SEC_EXACT_WAITS		10	/* struct pgt_exact_wait_entry */
#define PGT_SEC_EXACT_HIST		11	/* struct pgt_exact_hist_entry */
#define PGT_SEC_EXACT_WINDOWS	12	/* struct pgt_exact_window_entry */
#define PGT_SEC_KERNEL_IO		20	/* struct pgt_kernel_io_entry */
#define PGT_SEC_KERNEL_PROC		21	/* struct pgt_kernel_proc_entry */
#define PGT_SEC_KERNEL_HIST		22	/* struct pgt_kernel_hist_entry */

struct pgt_section
{
	uint32_t	kind;			/* PGT_SEC_*, 0 = unused slot */
	uint32_t	entry_size;		/* bytes per entry, >= known struct size, a multiple of 8 */
	uint64_t	offset;			/* from the start of the segment, a multiple of 8 */
	uint32_t	capacity;		/* entries allocated */
	uint32_t	count;			/* entries in use, <= capacity */
	uint64_t	reserved;
};
_Static_assert(sizeof(struct pgt_section) == 32, "pgt_section size");

struct pgt_seg_header
{
	uint64_t	magic;			/* PGT_SEG_MAGIC */
	uint32_t	layout_version; /* PGT_SEG_LAYOUT_VERSION */
	uint32_t	header_size;	/* sizeof(struct pgt_seg_header) */
	uint64_t	segment_size;	/* file size the writer created */
	uint64_t	generation;		/* +1 each time a helper (re)attaches */
	volatile uint64_t seq;		/* seqlock, odd while the writer writes */
	int64_t		last_update_us; /* CLOCK_REALTIME, microseconds */
	int64_t		attached_us;	/* when this generation attached */
	uint32_t	writer_pid;		/* helper pid, in the helper's namespace */
	uint32_t	state;			/* PGT_WRITER_* */
	uint32_t	postmaster_pid; /* postmaster served, 0 when none */
	uint32_t	nsections;		/* section slots used, <= PGT_MAX_SECTIONS */
	uint64_t	cluster_dev;	/* st_dev of the data directory */
	uint64_t	cluster_ino;	/* st_ino of the data directory */
	int64_t		postmaster_start_us;	/* from postmaster.pid */
	uint64_t	reserved[16];
	char		helper_version[PGT_VERSION_LEN];	/* NUL-terminated */
	char		data_dir[PGT_DATADIR_LEN];	/* as the helper saw it */
	struct pgt_section sections[PGT_MAX_SECTIONS];
};
_Static_assert(sizeof(struct pgt_seg_header) == 1024, "pgt_seg_header size");

/* Probe-set states. */
#define PGT_PROBE_AVAILABLE		1
#define PGT_PROBE_UNAVAILABLE	2
#define PGT_PROBE_DEGRADED		3

/*
 * One row per probe set (and per capability the helper checked), so that an
 * empty view is never ambiguous: every set says whether it runs and why not.
 */
struct pgt_probeset_entry
{
	char		name[32];		/* e.g. "process", "syscall-count" */
	uint32_t	state;			/* PGT_PROBE_* */
	uint32_t	flags;			/* reserved, 0 */
	uint64_t	events;			/* events seen since attach, if counted */
	char		mechanism[32];	/* e.g. "tp_btf/sys_enter", "none" */
	char		reason[176];	/* why unavailable/degraded, or detail */
};
_Static_assert(sizeof(struct pgt_probeset_entry) == 256, "probeset size");

/* Backend roles, classified by the helper from the process title. */
#define PGT_ROLE_UNKNOWN			0
#define PGT_ROLE_POSTMASTER			1
#define PGT_ROLE_CLIENT_BACKEND		2
#define PGT_ROLE_CHECKPOINTER		3
#define PGT_ROLE_BGWRITER			4
#define PGT_ROLE_WALWRITER			5
#define PGT_ROLE_AUTOVAC_LAUNCHER	6
#define PGT_ROLE_AUTOVAC_WORKER		7
#define PGT_ROLE_LOGREP_LAUNCHER	8
#define PGT_ROLE_LOGREP_WORKER		9
#define PGT_ROLE_WALSENDER			10
#define PGT_ROLE_WALRECEIVER		11
#define PGT_ROLE_PARALLEL_WORKER	12
#define PGT_ROLE_ARCHIVER			13
#define PGT_ROLE_STARTUP			14
#define PGT_ROLE_BGWORKER			15	/* other background worker */
#define PGT_ROLE_OTHER				16	/* child we cannot classify */

/*
 * One row per process of the cluster the helper tracks (the postmaster and
 * its direct children).  Rows appear at fork (the BPF pid filter) and go at
 * exit.
 */
struct pgt_backend_entry
{
	uint32_t	pid;
	uint32_t	role;			/* PGT_ROLE_* */
	int64_t		attached_us;	/* CLOCK_REALTIME when tracking began */
	int64_t		started_us;		/* process start time, CLOCK_REALTIME */
	uint64_t	syscalls;		/* system calls entered since attached */
	char		backend_type[32];	/* PostgreSQL's name for the role */
	uint64_t	reserved[4];
};
_Static_assert(sizeof(struct pgt_backend_entry) == 96, "backend entry size");

/*
 * Engine probes (kinds 30..39, helper/engine_probes.c): counters by
 * (pid, probe, query id, lock/tranche), one histogram per probe, and the
 * latest slow statements and checkpoints.
 */
#define PGT_SEC_ENGINE_EVENTS	30	/* struct pgt_engine_event_entry */
#define PGT_SEC_ENGINE_HIST		31	/* struct pgt_engine_hist_entry */
#define PGT_SEC_ENGINE_STREAM	32	/* struct pgt_engine_stream_entry */

#define PGT_ENGINE_HIST_SLOTS	32	/* slot 0: < 1 us; i: [2^(i-1), 2^i) us */

struct pgt_engine_event_entry
{
	uint32_t	pid;			/* as the cluster sees it */
	uint32_t	probe;			/* probe id (bpf/engine.h ENG_*) */
	uint64_t	queryid;		/* st_query_id at the event, 0 unknown */
	uint64_t	calls;
	uint64_t	total_ns;
	uint64_t	max_ns;
	uint64_t	counter[3];		/* probe-specific (README, pg_tracer_engine_events) */
	uint32_t	detail;			/* lock tag type, checkpoint flags */
	uint32_t	mode;			/* lock mode, LWLock mode */
	uint32_t	obj[3];			/* lock tag fields 1..3 (database, relation, ...) */
	uint32_t	reserved0;
	char		probe_name[16]; /* "query", "lock-wait", ... */
	char		what[40];		/* "relation AccessExclusiveLock", tranche, ... */
};
_Static_assert(sizeof(struct pgt_engine_event_entry) == 144, "engine event size");

struct pgt_engine_hist_entry
{
	char		probe_name[16];
	uint32_t	probe;
	uint32_t	nslots;			/* PGT_ENGINE_HIST_SLOTS */
	uint64_t	slots[PGT_ENGINE_HIST_SLOTS];
};
_Static_assert(sizeof(struct pgt_engine_hist_entry) == 280, "engine hist size");

struct pgt_engine_stream_entry
{
	int64_t		end_us;			/* CLOCK_REALTIME, microseconds */
	uint32_t	pid;
	uint32_t	probe;
	uint64_t	queryid;
	uint64_t	dur_ns;
	uint64_t	counter[3];		/* checkpoint: buffers, sync ns, segments */
	char		probe_name[16];
	char		text[256];		/* statement text, truncated, NUL-terminated */
};
_Static_assert(sizeof(struct pgt_engine_stream_entry) == 328, "engine stream size");

/* as many as the helper's eng_stats map holds (ENG_MAX_KEYS): LWLock hold
 * rows are some 50 a backend, and 4096 overflowed with 80 backends */
#define PGT_DEFAULT_ENGINE_EVENTS_CAP	16384
#define PGT_DEFAULT_ENGINE_STREAM_CAP	256

/*
 * Kernel probe sets (codes in pgt_kernel.h).  Rows are per (pid, query id,
 * ...) aggregates since the helper attached; pid 0 is the kernel (I/O not
 * issued in a tracked process's context).  Rows of a process that exited
 * keep its pid for the helper's --keep-exited seconds, then fold into the
 * cluster's rows with pid PGT_PID_EXITED (the same for exact wait rows),
 * one per role.  `role` (since 0.5.0; a field that was reserved, so older
 * helpers leave it 0) is the process's backend role, PGT_ROLE_*, also for
 * exited processes and their folded rows; 0 where it is not known.
 */
#define PGT_PID_EXITED	0x7FFFFFFFu	/* above any pid (PID_MAX_LIMIT is 2^22) */

struct pgt_kernel_io_entry
{
	uint32_t	pid;
	uint8_t		layer;			/* PGT_KLAYER_* */
	uint8_t		op;				/* PGT_KOP_* */
	uint8_t		file_class;		/* PGT_KFILE_* */
	uint8_t		role;			/* the process's PGT_ROLE_*; 0 = unknown, or pid 0 */
	int64_t		queryid;		/* 0 = unknown */
	uint32_t	relfilenode;	/* data files, else 0 */
	uint32_t	dev;			/* kernel dev_t (major << 20 | minor), 0 = n/a */
	uint64_t	calls;
	uint64_t	bytes;
	uint64_t	errors;
	uint64_t	total_ns;
	uint64_t	max_ns;
	uint32_t	database;		/* data files: their database's oid, 0 = shared */
	uint32_t	reserved1;
	uint64_t	reserved2;
};
_Static_assert(sizeof(struct pgt_kernel_io_entry) == 80, "kernel io entry size");

struct pgt_kernel_proc_entry
{
	uint32_t	pid;
	uint32_t	sets;			/* PGT_KPROC_*: which set filled vals */
	int64_t		queryid;
	uint64_t	vals[12];		/* PGT_KSCHED_* / PGT_KMEM_* / PGT_KNET_* */
	uint8_t		role;			/* as in pgt_kernel_io_entry */
	uint8_t		reserved0[7];
	uint64_t	reserved1;
};
_Static_assert(sizeof(struct pgt_kernel_proc_entry) == 128, "kernel proc entry size");

struct pgt_kernel_hist_entry
{
	uint32_t	metric;			/* PGT_KHIST_* */
	uint32_t	pid;			/* 0 = kernel / all */
	uint32_t	dev;
	uint32_t	op;
	uint64_t	slots[32];		/* slot i: [2^i, 2^(i+1)) microseconds, slot
								 * 0 [0, 2), slot 31 open-ended */
	uint8_t		role;			/* as in pgt_kernel_io_entry */
	uint8_t		reserved0[7];
	uint64_t	reserved1;
};
_Static_assert(sizeof(struct pgt_kernel_hist_entry) == 288, "kernel hist entry size");

/*
 * Exact wait events (kinds 10..19, helper/exact_waits.c and
 * helper/escalation.c).  Wait rows are per (pid, query id, wait_event_info)
 * totals of blocking waits timed from system-call entry to exit while exact
 * timing was on; histograms are per event, bucket 0 = under 1 us, bucket
 * i >= 1 = [2^(i-1), 2^i) us, the last bucket open-ended (>= 2^24 us).
 * Windows are the exact-timing windows of the last hour (newest last).
 */
#define PGT_EXACT_HIST_SLOTS	26

struct pgt_exact_wait_entry
{
	uint32_t	pid;
	uint32_t	event;			/* wait_event_info */
	int64_t		queryid;		/* 0 = unknown */
	uint64_t	count;
	uint64_t	total_ns;
	uint64_t	max_ns;
	uint64_t	reserved[2];
};
_Static_assert(sizeof(struct pgt_exact_wait_entry) == 56, "exact wait entry size");

struct pgt_exact_hist_entry
{
	uint32_t	event;			/* wait_event_info */
	uint32_t	nslots;			/* PGT_EXACT_HIST_SLOTS */
	uint64_t	count;
	uint64_t	total_ns;
	uint64_t	slots[PGT_EXACT_HIST_SLOTS];
	uint64_t	reserved[2];
};
_Static_assert(sizeof(struct pgt_exact_hist_entry) == 248, "exact hist entry size");

#define PGT_EXACT_WHO_LEN		64
#define PGT_EXACT_REASON_LEN	32

struct pgt_exact_window_entry
{
	int64_t		start_us;		/* unix microseconds */
	int64_t		end_us;			/* 0 while the window is open */
	int64_t		planned_end_us;	/* when it closes unless extended/ended */
	uint32_t	granted_s;
	uint32_t	flags;			/* PGT_EXACT_WINDOW_*, else 0 */
	char		reason[PGT_EXACT_REASON_LEN];	/* manual, full, anomaly, ... */
	char		who[PGT_EXACT_WHO_LEN];			/* requesting role, or "helper" */
	char		end_reason[PGT_EXACT_REASON_LEN];	/* expired, deescalated, budget, stop */
};
_Static_assert(sizeof(struct pgt_exact_window_entry) == 160, "exact window entry size");

/*
 * The windows that have left the helper's list (an hour after they ended),
 * as one entry: their span ends at end_us and lasts granted_s seconds
 * (rounded up), planned_end_us is the microseconds they covered in it.
 * start_us is end_us, so that a reader from before the flag sees an empty
 * window.  Coverage since an earlier time needs them; pg_tracer_escalations
 * lists the last hour's windows only.
 */
#define PGT_EXACT_WINDOW_EARLIER	0x1

/*
 * A window that ran the held kernel sets (--kernel-sets escalated) while
 * exact timing was off (the exact set not running, or its programs failed
 * to attach): it covered no exact time.
 */
#define PGT_EXACT_WINDOW_NO_EXACT	0x2

#define PGT_DEFAULT_EXACT_WAITS_CAP		16384	/* as many as the exact_waits map holds */
#define PGT_DEFAULT_EXACT_HIST_CAP		1024	/* as many as the exact_hists map holds */
#define PGT_DEFAULT_EXACT_WINDOWS_CAP	72	/* the helper's 64 and the earlier ones' span */

/*
 * Each kernel table starts with room for every row the three maps that feed
 * it declare (the helper's _Static_asserts in kernel_set.c keep them
 * together): a table sized for one map could overflow while no map was full.
 * The maps may hold more (LRU maps are enlarged at load, live tasks keep rows
 * of their own): the helper then grows the segment (segment_writer.c), and
 * readers take every capacity from the header.  The cost is memory only
 * (some 10 MB a cluster in all): readers copy the rows in use.
 */
#define PGT_DEFAULT_KERNEL_IO_CAP	49152	/* kio of syscall, vfs and block: a row per relation, op, query id */
#define PGT_DEFAULT_KERNEL_PROC_CAP	24576	/* kproc of sched, memory and network: a row per pid, query id */
#define PGT_DEFAULT_KERNEL_HIST_CAP	12288	/* khist of syscall, block and sched: a backend has several */

/* Default capacities the helper allocates (readers take them from the header). */
#define PGT_DEFAULT_PROBESETS_CAP	32
#define PGT_DEFAULT_BACKENDS_CAP	2048

/*
 * Reader side: everything below is plain C, shared by the extension, the
 * helper's `status` command and the unit tests.
 */

/* Result codes of the reader. */
typedef enum pgt_seg_result
{
	PGT_SEG_OK = 0,
	PGT_SEG_MISSING,			/* no file: helper never ran for the cluster */
	PGT_SEG_IO_ERROR,			/* open/read failed (errno in message) */
	PGT_SEG_TRUNCATED,			/* shorter than its header or segment_size */
	PGT_SEG_BAD_MAGIC,			/* not a pg_tracer segment */
	PGT_SEG_BAD_VERSION,		/* another layout version */
	PGT_SEG_CORRUPT,			/* a size, offset or count is impossible */
	PGT_SEG_BUSY,				/* writer kept changing it while we copied */
	PGT_SEG_NO_MEMORY,
	PGT_SEG_ABANDONED			/* left mid-update: its writer died (or hangs) */
} pgt_seg_result;

/* One validated table of a copied segment. */
typedef struct pgt_seg_table
{
	const unsigned char *rows;	/* NULL when the segment has no such table */
	uint32_t	count;			/* rows in use */
	uint32_t	stride;			/* bytes per row, >= the known struct */
} pgt_seg_table;

/* A validated view into a copied segment, tables indexed by kind. */
typedef struct pgt_seg_view
{
	const struct pgt_seg_header *hdr;
	pgt_seg_table tables[PGT_SEC_KIND_MAX];
} pgt_seg_view;

/* Allocator supplied by the caller (palloc in the extension, malloc elsewhere). */
typedef void *(*pgt_alloc_fn) (size_t size, void *arg);

extern const char *pgt_seg_result_name(pgt_seg_result r);

/* pgt_alloc_fn over malloc(), for programs outside PostgreSQL. */
extern void *pgt_alloc_malloc(size_t size, void *arg);

/*
 * Validate a copied segment of `len` bytes.  On success fill `view`.  On
 * failure write a one-line human explanation into err.
 */
extern pgt_seg_result pgt_segment_validate(const void *buf, size_t len,
										   pgt_seg_view *view,
										   char *err, size_t errlen);

/*
 * Copy the segment at `path` consistently (seqlock retries) into memory
 * from alloc_fn, then validate it.  Whatever was allocated is returned in
 * *buf, on failure too (NULL when nothing was), and is the caller's to free.
 * Never maps the file, so a truncated or replaced file cannot fault.
 */
extern pgt_seg_result pgt_segment_snapshot(const char *path,
										   pgt_alloc_fn alloc_fn, void *alloc_arg,
										   void **buf, size_t *len,
										   pgt_seg_view *view,
										   char *err, size_t errlen);

/*
 * Like pgt_segment_snapshot, but copy only the fixed header: it and its
 * section descriptors are checked against the file's size, and the view
 * has hdr set and no tables.
 */
extern pgt_seg_result pgt_segment_snapshot_header(const char *path,
												  pgt_alloc_fn alloc_fn,
												  void *alloc_arg, void **buf,
												  pgt_seg_view *view,
												  char *err, size_t errlen);

/*
 * Like pgt_segment_snapshot, but copy only the header and the rows in use
 * of the tables whose kinds are in `kinds` (bit 1 << kind; all of them with
 * PGT_SEG_ALL_TABLES): the view has hdr and those tables, the seqlock
 * covers them all.  The tables follow the header in the buffer (their
 * section descriptors keep the file's offsets): room for their capacities.
 */
#define PGT_SEG_ALL_TABLES	UINT64_MAX
#define PGT_SEG_TABLE(kind)	(UINT64_C(1) << (kind))
extern pgt_seg_result pgt_segment_snapshot_tables(const char *path, uint64_t kinds,
												  pgt_alloc_fn alloc_fn,
												  void *alloc_arg, void **buf,
												  pgt_seg_view *view,
												  char *err, size_t errlen);

/*
 * Size of the struct this code knows for a section kind, 0 for a kind it
 * does not know (the reader skips those tables).
 */
extern size_t pgt_section_entry_size(uint32_t kind);

/* Rows in use in a table of a validated view (0 when absent). */
static inline uint32_t
pgt_view_count(const pgt_seg_view *v, uint32_t kind)
{
	return kind < PGT_SEC_KIND_MAX ? v->tables[kind].count : 0;
}

/*
 * Row i (< pgt_view_count) of a table, to be read as the known struct: the
 * validator guaranteed the row is inside the copy and at least that large.
 */
static inline const void *
pgt_view_row(const pgt_seg_view *v, uint32_t kind, uint32_t i)
{
	return v->tables[kind].rows + (size_t) i * v->tables[kind].stride;
}

static inline const struct pgt_probeset_entry *
pgt_view_probeset(const pgt_seg_view *v, uint32_t i)
{
	return (const struct pgt_probeset_entry *) pgt_view_row(v, PGT_SEC_PROBESETS, i);
}

static inline const struct pgt_backend_entry *
pgt_view_backend(const pgt_seg_view *v, uint32_t i)
{
	return (const struct pgt_backend_entry *) pgt_view_row(v, PGT_SEC_BACKENDS, i);
}

/*
 * Copy a fixed-size string field into dst (size dstlen), stopping at the
 * first NUL or at the field's end, replacing bytes outside printable ASCII
 * with '?'.  dst is always NUL-terminated.
 */
extern void pgt_copy_string(char *dst, size_t dstlen,
							const char *field, size_t fieldlen);

/*
 * Copy text (src, srclen bytes, maybe unterminated, maybe cut by the bound)
 * into dst, keeping UTF-8: stops at NUL, newlines and tabs become spaces,
 * well-formed UTF-8 characters pass (but C1 controls), any other byte
 * outside printable ASCII is '?', and a multi-byte character cut by the
 * bound (of src or of dst) is dropped.  dst is always terminated.  The
 * helper cleans BPF records' text with it before anything shows them; the
 * extension uses it for segment text when the database takes UTF-8.
 */
extern void pgt_copy_utf8(char *dst, size_t dstlen,
						  const char *src, size_t srclen);

/*
 * Microseconds of [since_us, until_us) an exact window entry covered
 * (until_us at most now_us, the time the entry is judged at).  A
 * PGT_EXACT_WINDOW_EARLIER entry (the windows gone from the helper's list)
 * has its coverage spread evenly over its span: it gives the share of the
 * span inside [since_us, until_us).  A PGT_EXACT_WINDOW_NO_EXACT entry,
 * and one that makes no sense (one that ends after now_us, say), give 0.
 */
extern int64_t pgt_window_covered(const struct pgt_exact_window_entry *w,
								  int64_t since_us, int64_t until_us, int64_t now_us);

/* Human names for PGT_PROBE_* and PGT_ROLE_* values ("unknown" otherwise). */
extern const char *pgt_probe_state_name(uint32_t state);
extern const char *pgt_role_name(uint32_t role);

/*
 * Build "<dir>/pgt-<dev>-<ino><suffix>" into out.  Returns 0, or -1 when it
 * does not fit.  suffix is ".seg", ".sock" or ".lock".
 */
extern int	pgt_cluster_path(char *out, size_t outlen, const char *runtime_dir,
							 uint64_t dev, uint64_t ino, const char *suffix);

#define PGT_DEFAULT_RUNTIME_DIR	"/run/pg_tracer"

#endif							/* PGT_SEGMENT_H */
