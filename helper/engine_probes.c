/*
 * helper/engine_probes.c
 *	  The engine core: one bpf/engine_probes.bpf.c object per helper
 *	  process, shared by the engine probe sets (helper/engine_sets.c).
 *
 * Sets join before any target is known (the probe-set framework starts
 * them first); each target postmaster then brings its executable, resolved
 * through /proc/<pm>/root so a containerized server needs no host mount.
 * An executable is inspected and attached once (by device and inode), with
 * pid -1, so backends forked later are covered without re-attaching, and
 * the kernel sets the USDT semaphores (uprobe ref_ctr_offset) in every
 * process mapping it; `engine_cfg` then admits that postmaster's processes
 * (the `tracked` pid filter tells a process's postmaster).  Per-postmaster
 * configuration carries the absolute addresses of checkpoint__done's
 * arguments, globals that libbpf's USDT code cannot evaluate.
 *
 * Aggregates are read at most twice a second in the daemon (a 16k-entry
 * hash is not free to walk); of the daemon's stream it keeps the latest
 * ENGINE_KEEP_STATEMENTS slow statements and, apart, the latest
 * ENGINE_KEEP_CHECKPOINTS checkpoints.
 *
 * Single-threaded (the daemon's or the trace command's loop): no locking.
 */
#include "engine_probes.h"

#include "elf_inspect.h"
#include "engine_catalog.h"
#include "layout_file.h"
#include "log.h"
#include "map_copy.h"
#include "pid_retire.h"
#include "procfs.h"
#include "tranche_names.h"

#include "engine_probes.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Every engine set's collect calls engine_core_collect: the first of a
 * round reads the maps, the others find them fresh.  `trace` summarizes
 * every --interval (100 ms at least), so there a read is fresh for less.
 */
#define ENGINE_READ_INTERVAL_US	(500 * 1000)
#define ENGINE_TRACE_READ_INTERVAL_US	(50 * 1000)
#define ENGINE_DRAIN_BUDGET		4096	/* stream records a drain batch keeps */
#define ENGINE_MAX_LINKS		512		/* of all binaries together */
#define ENGINE_MAX_BINARIES		16
/*
 * Sites of one SDT probe attached at most: PostgreSQL marks a probe at 4
 * places or fewer, and a crafted binary must not take the links, or
 * libbpf's table of argument specs, that every cluster shares.
 */
#define ENGINE_MAX_SITES		32
#define ENGINE_MAX_TARGETS		256		/* postmasters configured */
#define ENGINE_MAX_SETS			16

/* Daemon configuration. */
static int	conf_enabled[ENGINE_MAX_SETS];
static int	configured;
static uint64_t slow_ns = UINT64_C(1000) * 1000 * 1000;

typedef struct engine_binary
{
	dev_t		dev;
	ino_t		ino;
	char		path[PATH_MAX + 64];	/* for messages */
	char		attach_path[64];	/* /proc/self/fd/N of elf.fd: what attaches */
	elf_info	elf;
	engine_choice *choices;		/* engine_npoints */
	int		   *attached;		/* engine_npoints */
	struct bpf_link **links;	/* its probes' links */
	int			nlinks;
	int			users;			/* targeted postmasters running it */
	int64_t		untargeted_us;	/* since when it has none (release_unused) */
} engine_binary;

/* A targeted postmaster and the binary it runs (by identity: it may be gone). */
typedef struct engine_target
{
	uint32_t	pm;
	dev_t		dev;
	ino_t		ino;
} engine_target;

/*
 * The stream records the daemon keeps: the latest ENGINE_KEEP_STATEMENTS
 * slow statements and, apart, the latest ENGINE_KEEP_CHECKPOINTS
 * checkpoints; the segment's table holds both.
 */
#define ENGINE_KEEP_CHECKPOINTS	32
#define ENGINE_KEEP_STATEMENTS	(PGT_DEFAULT_ENGINE_STREAM_CAP - ENGINE_KEEP_CHECKPOINTS)

typedef struct stream_ring
{
	engine_stream_row rows[ENGINE_KEEP_STATEMENTS];
	size_t		cap;			/* rows in use at most */
	size_t		n;
	size_t		next;			/* the slot the next record takes */
} stream_ring;

static struct
{
	int			started;
	int			failed;			/* load failed: sets unavailable */
	char		failure[160];
	int			stream;
	/* exited processes' rows fold per role too: trace prints their type
	 * (the SQL views have no backend type column: rows per role would be
	 * alike there) */
	int			fold_roles;
	struct engine_probes_bpf *skel;
	struct ring_buffer *rb;
	pset_inst  *insts[ENGINE_MAX_SETS]; /* joined sets */
	engine_binary bins[ENGINE_MAX_BINARIES];
	int			nbins;
	int			nlinks;			/* of all bins */
	engine_target targets[ENGINE_MAX_TARGETS];
	int			ntargets;
	engine_row *rows;
	size_t		nrows;
	size_t		caprows;
	struct eng_key *ckeys;		/* eng_stats as copied (ENG_MAX_KEYS) */
	struct eng_val *cvals;
	engine_hist_row *hist;
	size_t		nhist;
	size_t		caphist;
	stream_ring statements;		/* the latest slow statements */
	stream_ring checkpoints;	/* the latest checkpoints, apart: a flood of
								 * slow statements would push them out */
	engine_stream_row ring_out[PGT_DEFAULT_ENGINE_STREAM_CAP];
	size_t		nring_out;
	uint32_t	drained;		/* records of the current drain */
	uint64_t	set_events[ENGINE_MAX_SETS];
	int64_t		last_read_us;
	int64_t		started_us;
	uint64_t	dropped_said;	/* eng_dropped, eng_hold_overflow as last logged */
	uint64_t	overflow_said;
	uint64_t	stream_lost_said;	/* eng_stream_lost as last logged */
} core = {
	.statements = {.cap = ENGINE_KEEP_STATEMENTS},
	.checkpoints = {.cap = ENGINE_KEEP_CHECKPOINTS},
};

static size_t drop_rows_of(uint32_t pm);

/*
 * engine_configure
 *		See engine_probes.h.
 */
int
engine_configure(const char *sets, char *err, size_t errlen)
{
	char		buf[512];
	char	   *save = NULL;
	char	   *tok;
	size_t		i;

	memset(conf_enabled, 0, sizeof(conf_enabled));
	configured = 1;
	snprintf(buf, sizeof(buf), "%s", sets);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		int			k;

		if (strcmp(tok, "all") == 0 || strcmp(tok, "default") == 0)
		{
			for (i = 0; i < engine_nsets; i++)
				conf_enabled[i] |= strcmp(tok, "all") == 0 || engine_sets[i].default_on;
			continue;
		}
		if (strcmp(tok, "none") == 0)
			continue;
		k = engine_set_index(tok);
		if (k < 0)
		{
			snprintf(err, errlen, "unknown engine probe set \"%s\"", tok);
			return -1;
		}
		conf_enabled[k] = 1;
	}
	return 0;
}

void
engine_set_slow_ms(uint64_t ms)
{
	slow_ns = ms * 1000 * 1000;
}

/*
 * engine_set_enabled
 *		Whether the daemon runs a set (the defaults until engine_configure()).
 */
int
engine_set_enabled(const char *set)
{
	int			k = engine_set_index(set);

	if (k < 0)
		return 0;
	return configured ? conf_enabled[k] : engine_sets[k].default_on;
}

/*
 * update_status
 *		Each joined set's state from the binaries attached so far.
 */
static void
update_status(void)
{
	size_t		s;
	int			b;

	for (s = 0; s < engine_nsets && s < ENGINE_MAX_SETS; s++)
	{
		pset_inst  *in = core.insts[s];
		char		mech[32] = "none";
		char		reason[512] = "";
		uint32_t	st = PGT_PROBE_UNAVAILABLE;

		if (in == NULL)
			continue;
		if (core.failed)
		{
			pset_set_status(in, PGT_PROBE_UNAVAILABLE, "none", "%s", core.failure);
			continue;
		}
		if (core.nbins == 0)
		{
			pset_set_status(in, PGT_PROBE_UNAVAILABLE, "none",
							"no PostgreSQL executable attached yet (waiting for a postmaster)");
			continue;
		}
		/* the latest executable speaks for the set; others differ only if mixed */
		for (b = 0; b < core.nbins; b++)
			st = engine_set_state(engine_sets[s].name, core.bins[b].choices,
								  core.bins[b].attached, mech, sizeof(mech),
								  reason, sizeof(reason));
		if (st == PGT_PROBE_AVAILABLE && strcmp(engine_sets[s].name, "pg-locks") == 0)
			snprintf(reason, sizeof(reason), "lock waits with type, mode, object; hold "
					 "times: pg-lock-hold; LWLock waits: pg-lwlock");
		else if (st == PGT_PROBE_AVAILABLE && strcmp(engine_sets[s].name, "pg-wal") == 0)
			snprintf(reason, sizeof(reason), "inserts: USDT wal__insert; XLogFlush: uprobe "
					 "on the exported function (no USDT marks it)");
		else if (st == PGT_PROBE_AVAILABLE && strcmp(engine_sets[s].name, "pg-lock-hold") == 0)
			snprintf(reason, sizeof(reason), "uprobes on LockAcquireExtended and the exported "
					 "release functions (no USDT marks grants); locks granted before the "
					 "helper attached are not timed");
		else if (st == PGT_PROBE_AVAILABLE && strcmp(engine_sets[s].name, "pg-lwlock-hold") == 0)
			snprintf(reason, sizeof(reason), "%s", strcmp(mech, "usdt") == 0 ?
					 "USDT lwlock__acquire*/release, paired by tranche (last in, first out: "
					 "release carries no lock address)" :
					 "uprobes on LWLockAcquire*/LWLockRelease, paired by lock address, "
					 "tranche named by id from the layout file");
		else if (st == PGT_PROBE_AVAILABLE)
			snprintf(reason, sizeof(reason), "attached to %d executable%s", core.nbins,
					 core.nbins > 1 ? "s" : "");
		pset_set_status(in, st, mech, "%.170s", reason);
	}
}

/*
 * keep_link
 *		Remember a link of binary b; 0, or -1 when it is NULL (errno says
 *		why).
 */
static int
keep_link(engine_binary *b, struct bpf_link *l)
{
	struct bpf_link **n;

	if (l == NULL)
		return -1;
	if (core.nlinks == ENGINE_MAX_LINKS ||
		(n = realloc(b->links, (size_t) (b->nlinks + 1) * sizeof(*n))) == NULL)
	{
		bpf_link__destroy(l);
		errno = ENOSPC;
		return -1;
	}
	b->links = n;
	b->links[b->nlinks++] = l;
	core.nlinks++;
	return 0;
}

/*
 * binary_free
 *		Detach binary b's probes and close it.
 */
static void
binary_free(engine_binary *b)
{
	int			k;

	for (k = 0; k < b->nlinks; k++)
		bpf_link__destroy(b->links[k]);
	core.nlinks -= b->nlinks;
	free(b->links);
	elf_inspect_close(&b->elf);
	free(b->choices);
	free(b->attached);
	memset(b, 0, sizeof(*b));
	b->elf.fd = -1;
}

/*
 * attach_note_sites
 *		Attach prog at every site of point p's note whose address lies in
 *		[lo, hi), as a uprobe with the note's semaphore as its ref_ctr (the
 *		program evaluates no USDT argument).  0, or -errno (-ENOENT: none).
 */
static int
attach_note_sites(engine_binary *b, const engine_point *p, struct bpf_program *prog,
				  uint64_t lo, uint64_t hi)
{
	size_t		k;
	int			n = 0;

	for (k = 0; k < b->elf.nprobes; k++)
	{
		const usdt_probe *u = &b->elf.probes[k];
		LIBBPF_OPTS(bpf_uprobe_opts, uo);
		uint64_t	off;
		uint64_t	sem = 0;

		if (strcmp(u->provider, ENGINE_USDT_PROVIDER) != 0 || strcmp(u->name, p->usdt) != 0 ||
			u->pc < lo || u->pc >= hi)
			continue;
		if (elf_vaddr_to_offset(&b->elf, u->pc, &off) < 0 ||
			(u->semaphore && elf_vaddr_to_offset(&b->elf, u->semaphore, &sem) < 0))
			return -EINVAL;
		uo.ref_ctr_offset = sem;
		if (keep_link(b, bpf_program__attach_uprobe_opts(prog, -1, b->attach_path, off, &uo)) < 0)
			return -errno;
		n++;
	}
	return n > 0 ? 0 : -ENOENT;
}

/*
 * attach_usdt
 *		Point p's USDT program at its note: every site, or, for a point
 *		with site_in, only the sites inside that function (the portal
 *		notes fire in PortalRunMulti too, once per plannable statement of
 *		a portal, where they would restart and end the Execute's timing).
 *		A binary whose symbol tables lack the function gets every site, as
 *		before, and the log says so.
 */
static int
attach_usdt(engine_binary *b, const engine_point *p, struct bpf_program *prog)
{
	elf_symbol	f;

	if (p->site_in != NULL)
	{
		if (elf_find_symbol(&b->elf, p->site_in, &f) == 0 && f.size > 0)
			return attach_note_sites(b, p, prog, f.addr, f.addr + f.size);
		log_warn("engine: %s %s: no symbol %s to tell its sites apart: every site attached",
				 p->set, p->usdt, p->site_in);
	}
	if (keep_link(b, bpf_program__attach_usdt(prog, -1, b->attach_path, ENGINE_USDT_PROVIDER,
										   p->usdt, NULL)) < 0)
		return -errno;
	return 0;
}

/*
 * attach_point
 *		Attach point i of binary b with its chosen mechanism.  0 or -errno.
 */
static int
attach_point(engine_binary *b, size_t i)
{
	const engine_point *p = &engine_points[i];
	engine_mech m = b->choices[i].mech;
	struct bpf_program *prog;

	if (m == ENGINE_MECH_USDT)
	{
		prog = bpf_object__find_program_by_name(core.skel->obj, p->usdt_prog);
		if (prog == NULL)
			return -ENOENT;
		return attach_usdt(b, p, prog);
	}
	if (m == ENGINE_MECH_USDT_SITE)
	{
		/* every site of the note, its semaphore as the uprobe's ref_ctr */
		prog = bpf_object__find_program_by_name(core.skel->obj, p->site_prog);
		if (prog == NULL)
			return -ENOENT;
		return attach_note_sites(b, p, prog, 0, UINT64_MAX);
	}
	if (m == ENGINE_MECH_UPROBE || m == ENGINE_MECH_URETPROBE)
	{
		LIBBPF_OPTS(bpf_uprobe_opts, uo);
		elf_symbol	s;

		prog = bpf_object__find_program_by_name(core.skel->obj, p->func_prog);
		if (prog == NULL || elf_find_symbol(&b->elf, p->func, &s) < 0 || s.offset == 0)
			return -ENOENT;
		uo.retprobe = m == ENGINE_MECH_URETPROBE;
		if (keep_link(b, bpf_program__attach_uprobe_opts(prog, -1, b->attach_path, s.offset, &uo)) < 0)
			return -errno;
		return 0;
	}
	return -ENOENT;
}

/*
 * open_checked
 *		elf_inspect_open of path, which must be the file the postmaster runs
 *		(exe, from /proc/<pm>/exe): the path is a name that its owner, maybe
 *		not root, can point elsewhere at any time.  Once the open file is
 *		checked, the probes attach through it (/proc/self/fd/N), never
 *		through the name again.  0, or -1 with err.
 */
static int
open_checked(engine_binary *b, const char *path, const struct stat *exe,
			 char *err, size_t errlen)
{
	struct stat st;

	if (elf_inspect_open(path, &b->elf, err, errlen) < 0)
		return -1;
	if (fstat(b->elf.fd, &st) < 0 || st.st_dev != exe->st_dev || st.st_ino != exe->st_ino)
	{
		snprintf(err, errlen, "%.400s changed while it was opened: not traced", path);
		elf_inspect_close(&b->elf);
		return -1;
	}
	snprintf(b->attach_path, sizeof(b->attach_path), "/proc/self/fd/%d", b->elf.fd);
	return 0;
}

/*
 * opens_timer
 *		Does point i start what another point ends (a __start note, or a
 *		function's entry whose return is probed too)?
 */
static int
opens_timer(size_t i)
{
	const engine_point *p = &engine_points[i];
	size_t		j;

	if (p->usdt != NULL)
	{
		size_t		n = strlen(p->usdt);

		return n > 7 && strcmp(p->usdt + n - 7, "__start") == 0;
	}
	if (p->func == NULL || p->func_ret)
		return 0;
	for (j = 0; j < engine_npoints; j++)
		if (engine_points[j].group == p->group && engine_points[j].func_ret &&
			engine_points[j].func != NULL && strcmp(engine_points[j].func, p->func) == 0)
			return 1;
	return 0;
}

/*
 * too_many_sites
 *		Whether point i's SDT probe has more sites in b than any PostgreSQL
 *		build (ENGINE_MAX_SITES): then it is not attached, and says why.
 */
static bool
too_many_sites(engine_binary *b, size_t i)
{
	engine_mech m = b->choices[i].mech;
	int			n;

	if (m != ENGINE_MECH_USDT && m != ENGINE_MECH_USDT_SITE)
		return false;
	n = elf_count_usdt(&b->elf, ENGINE_USDT_PROVIDER, engine_points[i].usdt);
	if (n <= ENGINE_MAX_SITES)
		return false;
	log_warn("engine: %s %s: %d sites, more than %d: not attached", engine_points[i].set,
			 engine_points[i].usdt, n, ENGINE_MAX_SITES);
	snprintf(b->choices[i].reason, sizeof(b->choices[i].reason),
			 "%d sites of the probe, more than %d: not attached", n, ENGINE_MAX_SITES);
	return true;
}

/*
 * attach_points_pass
 *		attach_points for the points that open a timer (starts) or the
 *		others.
 */
static void
attach_points_pass(engine_binary *b, int starts)
{
	char		eb[128];
	size_t		i;

	for (i = 0; i < engine_npoints; i++)
	{
		int			si = engine_set_index(engine_points[i].set);
		int			r;

		if (si < 0 || core.insts[si] == NULL || b->choices[i].mech == ENGINE_MECH_NONE ||
			opens_timer(i) != starts)
			continue;
		if (too_many_sites(b, i))
			continue;
		r = attach_point(b, i);
		if (r == 0)
		{
			b->attached[i] = 1;
			continue;
		}
		libbpf_strerror(r, eb, sizeof(eb));
		log_warn("engine: %s %s (%s) did not attach: %s", engine_points[i].set,
				 engine_points[i].usdt ? engine_points[i].usdt : engine_points[i].func,
				 engine_mech_name(b->choices[i].mech), eb);
		snprintf(b->choices[i].reason, sizeof(b->choices[i].reason),
				 "%s attach failed: %.100s", engine_mech_name(b->choices[i].mech), eb);
	}
}

/*
 * attach_points
 *		Attach binary b's planned points of the started sets; a point that
 *		does not attach is logged, and its reason kept for the status.
 *		Ends and companions first, starts last: a statement or a wait in
 *		flight while its start was in place and its end not yet (each
 *		attach walks every process that maps the binary) would stay armed,
 *		and end at some later, unrelated end.  An end without its start is
 *		ignored.
 */
static void
attach_points(engine_binary *b)
{
	int			starts;

	for (starts = 0; starts <= 1; starts++)
		attach_points_pass(b, starts);
}

/*
 * binary_for
 *		The attached binary of postmaster pm, attaching it first when new.
 *		NULL when it cannot be inspected (logged).
 */
static engine_binary *
binary_for(uint32_t pm)
{
	char		path[PATH_MAX + 64];
	char		exe_link[64];
	char		err[512];
	struct stat st;
	engine_binary *b;
	int			k;

	snprintf(exe_link, sizeof(exe_link), "/proc/%u/exe", pm);
	if (elf_resolve_exe((int) pm, path, sizeof(path), err, sizeof(err)) < 0 ||
		stat(exe_link, &st) < 0)
	{
		log_warn("engine: executable of postmaster %u: %s", pm, err);
		return NULL;
	}
	for (k = 0; k < core.nbins; k++)
		if (core.bins[k].dev == st.st_dev && core.bins[k].ino == st.st_ino)
			return &core.bins[k];
	if (core.nbins == ENGINE_MAX_BINARIES)
	{
		log_warn("engine: more than %d PostgreSQL executables: %s not traced",
				 ENGINE_MAX_BINARIES, path);
		return NULL;
	}
	b = &core.bins[core.nbins];
	memset(b, 0, sizeof(*b));
	b->elf.fd = -1;
	if (open_checked(b, path, &st, err, sizeof(err)) < 0)
	{
		log_warn("engine: %s", err);
		return NULL;
	}
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	snprintf(b->path, sizeof(b->path), "%s", path);
	b->choices = calloc(engine_npoints, sizeof(*b->choices));
	b->attached = calloc(engine_npoints, sizeof(*b->attached));
	if (b->choices == NULL || b->attached == NULL)
	{
		free(b->choices);
		free(b->attached);
		elf_inspect_close(&b->elf);
		return NULL;
	}
	engine_plan(&b->elf, b->choices);
	core.nbins++;
	attach_points(b);
	log_info("engine: attached to %s (%d links in all)", path, core.nlinks);
	update_status();
	return b;
}

/*
 * query_id_fallback
 *		&MyBEEntry and the st_query_id offset (from the cluster's layout
 *		file, read through /proc/<pm>/cwd), so a backend gets its query id
 *		before the shared pgt_qid slots know it.  Left 0 when either is
 *		missing: the slots alone then.
 */
static void
query_id_fallback(uint32_t pm, const engine_binary *b, uint64_t bias, struct eng_cfg *cfg)
{
	char		path[64];
	char		err[256];
	struct stat dir;
	struct stat st;
	pgt_layout	l;
	elf_symbol	s;

	snprintf(path, sizeof(path), "/proc/%u/cwd", pm);
	if (elf_find_symbol(&b->elf, "MyBEEntry", &s) < 0 || stat(path, &dir) < 0)
		return;
	snprintf(path, sizeof(path), "/proc/%u/cwd/%s", pm, PGT_LAYOUT_FILENAME);
	if (layout_load(path, dir.st_uid, &l, &st, err, sizeof(err)) < 0)
	{
		log_debug("engine: postmaster %u: %s", pm, err);
		return;
	}
	cfg->mybeentry_addr = bias + s.addr;
	cfg->query_id_off = l.beentry_off_query_id;
	tranche_names_keep(pm, &l);
	layout_free(&l);
}

/*
 * checkpoint_stats_fallback
 *		Without a checkpoint__done note (a binary built without USDT), the
 *		same figures from the exported CheckpointStats, read at the return
 *		of CreateCheckPoint: PostgreSQL 15's CheckpointStatsData has five
 *		TimestampTz, then ckpt_bufs_written, ckpt_segs_added, _removed,
 *		_recycled (ints), which is what checkpoint__done passes
 *		(40+CheckpointStats, NBuffers, 44+, 48+, 52+ in Debian's notes).
 */
static void
checkpoint_stats_fallback(const engine_binary *b, uint64_t bias, struct eng_cfg *cfg)
{
	static const uint32_t off[ENG_CKPT_ARGS] = {40, 0, 44, 48, 52};
	elf_symbol	stats;
	elf_symbol	nbuf;
	int			i;

	if (elf_find_symbol(&b->elf, "CheckpointStats", &stats) < 0 || !stats.addr ||
		elf_find_symbol(&b->elf, "NBuffers", &nbuf) < 0 || !nbuf.addr)
		return;
	for (i = 0; i < ENG_CKPT_ARGS; i++)
	{
		cfg->ckpt_addr[i] = bias + (i == 1 ? nbuf.addr : stats.addr + off[i]);
		cfg->ckpt_size[i] = 4;
	}
	cfg->nckpt = ENG_CKPT_ARGS;
	cfg->ckpt_write_addr = bias + stats.addr + 8;	/* ckpt_write_t */
}

/*
 * drop_target
 *		Postmaster pm is no longer served.  A binary no served postmaster
 *		runs any more is released later (release_unused), not here: its
 *		probes' detach takes most of a second, and untargeting is on the
 *		path of a cluster's close (and of the helper's stop), which should
 *		not wait for it; a postmaster restarted on the same binary finds it
 *		still attached.
 */
static void
drop_target(uint32_t pm)
{
	int			i;
	int			k;

	for (i = 0; i < core.ntargets && core.targets[i].pm != pm; i++)
		;
	if (i == core.ntargets)
		return;
	for (k = 0; k < core.nbins; k++)
		if (core.bins[k].dev == core.targets[i].dev && core.bins[k].ino == core.targets[i].ino)
			break;
	core.targets[i] = core.targets[--core.ntargets];
	if (k < core.nbins && core.bins[k].users > 0)
		core.bins[k].users--;
}

/*
 * release_unused
 *		Detach and close the binaries that no served postmaster has run for
 *		ENGINE_RELEASE_US (package upgrades and container restarts bring new
 *		binaries; ENGINE_MAX_BINARIES is for those in use at once).
 */
#define ENGINE_RELEASE_US	(10 * 1000 * 1000)

static void
release_unused(void)
{
	int64_t		now = procfs_monotonic_us();
	int			k = 0;

	while (k < core.nbins)
	{
		engine_binary *b = &core.bins[k];

		if (b->users > 0 || b->untargeted_us == 0)
		{
			b->untargeted_us = b->users > 0 ? 0 : now;	/* unused since now */
			k++;
			continue;
		}
		if (now - b->untargeted_us < ENGINE_RELEASE_US)
		{
			k++;
			continue;
		}
		log_info("engine: %s runs no served postmaster: detached", b->path);
		binary_free(b);
		if (k != core.nbins - 1)
			core.bins[k] = core.bins[core.nbins - 1];
		core.nbins--;
		update_status();
	}
}

/*
 * note_target
 *		Postmaster pm runs binary b (once per postmaster: a target may be
 *		configured again).  Returns b where it is now (dropping the
 *		postmaster's earlier binary may have moved it).
 */
static engine_binary *
note_target(uint32_t pm, engine_binary *b)
{
	int			i;
	dev_t		dev = b->dev;
	ino_t		ino = b->ino;

	for (i = 0; i < core.ntargets; i++)
		if (core.targets[i].pm == pm)
		{
			if (core.targets[i].dev == dev && core.targets[i].ino == ino)
				return b;
			drop_target(pm);	/* a new postmaster on the pid, another binary */
			break;
		}
	for (i = 0; i < core.nbins; i++)
		if (core.bins[i].dev == dev && core.bins[i].ino == ino)
			break;
	if (i == core.nbins)
		return NULL;
	/* with the table full, the user is counted but never dropped: kept */
	if (core.ntargets < ENGINE_MAX_TARGETS)
	{
		core.targets[core.ntargets].pm = pm;
		core.targets[core.ntargets].dev = dev;
		core.targets[core.ntargets].ino = ino;
		core.ntargets++;
	}
	core.bins[i].users++;
	return &core.bins[i];
}

/*
 * configure_target
 *		Hand postmaster pm's configuration to the programs.
 */
static void
configure_target(uint32_t pm, const struct eng_cfg *cfg)
{
	if (bpf_map_update_elem(bpf_map__fd(core.skel->maps.engine_cfg), &pm, cfg, BPF_ANY) < 0)
		log_warn("engine: cannot configure postmaster %u: %s", pm, strerror(errno));
}

/*
 * engine_core_target
 *		See engine_probes.h.
 */
void
engine_core_target(uint32_t pm)
{
	engine_binary *b;
	struct eng_cfg cfg;
	const usdt_probe *u;
	elf_symbol	owner;
	uint64_t	bias = 0;

	if (!core.started || core.failed)
		return;
	b = binary_for(pm);
	if (b == NULL || (b = note_target(pm, b)) == NULL)
		return;
	memset(&cfg, 0, sizeof(cfg));
	cfg.postmaster = pm;
	cfg.flags = ENG_CFG_SLOW_STREAM;
	cfg.slow_ns = slow_ns;
	if (elf_load_bias((int) pm, &b->elf, &bias) < 0)
	{
		/* no global can be read: what needs one is left out */
		log_warn("engine: no load address of %s in postmaster %u: checkpoint details, "
				 "early query ids, savepoint lock ends and statement errors unreadable",
				 b->path, pm);
		configure_target(pm, &cfg);
		return;
	}
	u = elf_find_usdt(&b->elf, ENGINE_USDT_PROVIDER, "checkpoint__done");
	if (u != NULL)
	{
		usdt_arg	args[USDT_MAX_ARGS];
		int			n = usdt_parse_args(u->args, args, USDT_MAX_ARGS);
		int			i;

		/* all or nothing: argument i must stay argument i */
		for (i = 0; i < n && i < ENG_CKPT_ARGS; i++)
		{
			elf_symbol	s;

			if (args[i].kind != USDT_ARG_SYMBOL ||
				elf_find_symbol(&b->elf, args[i].symbol, &s) < 0)
				break;
			cfg.ckpt_addr[i] = bias + s.addr + (uint64_t) args[i].value;
			cfg.ckpt_size[i] = (uint32_t) args[i].size;
		}
		if (i == n && n > 0)
			cfg.nckpt = (uint32_t) n;
		else
			memset(cfg.ckpt_addr, 0, sizeof(cfg.ckpt_addr));
	}
	else
		checkpoint_stats_fallback(b, bias, &cfg);
	query_id_fallback(pm, b, bias, &cfg);
	if (elf_find_symbol(&b->elf, "CurrentResourceOwner", &owner) == 0 && owner.addr)
		cfg.owner_addr = bias + owner.addr;
	if (elf_find_symbol(&b->elf, "debug_query_string", &owner) == 0 && owner.addr)
		cfg.query_string_addr = bias + owner.addr;
	configure_target(pm, &cfg);
}

/*
 * engine_core_untarget
 *		See engine_probes.h.
 */
void
engine_core_untarget(uint32_t pm)
{
	if (!core.started || core.failed)
		return;
	(void) bpf_map_delete_elem(bpf_map__fd(core.skel->maps.engine_cfg), &pm);
	tranche_names_forget(pm);
	drop_target(pm);
	/*
	 * The daemon publishes a cluster's rows of its current postmaster only:
	 * those of one that exited would fill the tables over restarts.  A
	 * trace keeps them for its summaries.
	 */
	if (!core.fold_roles && core.skel != NULL)
		log_debug("engine sets: %zu rows of exited postmaster %u dropped", drop_rows_of(pm), pm);
}

/*
 * ring_at
 *		ring's k-th record, oldest first.
 */
static engine_stream_row *
ring_at(stream_ring *ring, size_t k)
{
	return &ring->rows[(ring->next + ring->cap - ring->n + k) % ring->cap];
}

/*
 * ring_push
 *		The slot of a new record in ring (the oldest goes when it is full),
 *		zeroed.
 */
static engine_stream_row *
ring_push(stream_ring *ring)
{
	engine_stream_row *r = &ring->rows[ring->next];

	ring->next = (ring->next + 1) % ring->cap;
	if (ring->n < ring->cap)
		ring->n++;
	memset(r, 0, sizeof(*r));
	return r;
}

/*
 * on_event
 *		Own ring buffer (daemon): keep a slow statement or checkpoint.
 */
static int
on_event(void *ctx, void *data, size_t size)
{
	const struct eng_event *ev = data;
	engine_stream_row *r;
	struct pgt_engine_stream_entry *s;

	if (size < sizeof(*ev) || ev->probe == 0 || ev->probe >= ENG_NPROBES)
		return 0;
	r = ring_push(ev->probe == ENG_CHECKPOINT ? &core.checkpoints : &core.statements);
	r->pm = ev->pm;
	s = &r->e;
	s->end_us = procfs_boot_to_real_us() + (int64_t) (ev->ts / 1000);
	s->pid = ev->pid;
	s->probe = ev->probe;
	s->queryid = ev->queryid;
	s->dur_ns = ev->dur_ns;
	memcpy(s->counter, ev->c, sizeof(s->counter));
	snprintf(s->probe_name, sizeof(s->probe_name), "%s", engine_probe_name(ev->probe));
	pgt_copy_utf8(s->text, sizeof(s->text), ev->text, sizeof(ev->text));
	/* libbpf has consumed the record: a negative return only ends this drain */
	return ++core.drained >= ENGINE_DRAIN_BUDGET ? -EAGAIN : 0;
}

/*
 * drain_stream
 *		Keep what the ring buffer holds, at most `batches` times
 *		ENGINE_DRAIN_BUDGET records: libbpf's consume reads as long as
 *		records come, and with --slow-ms 1 they come with nearly every
 *		statement of every backend, while this thread serves every
 *		cluster.  The rest waits for the next call.
 */
static void
drain_stream(int batches)
{
	if (core.rb == NULL)
		return;
	do
	{
		core.drained = 0;
		(void) ring_buffer__consume(core.rb);
	} while (--batches > 0 && core.drained >= ENGINE_DRAIN_BUDGET);
}

/*
 * engine_core_join
 *		See engine_probes.h.  The first set to join loads the object.
 */
int
engine_core_join(pset_inst *inst, const pset_ctx *ctx, int set_index)
{
	char		eb[128];
	int			r;

	if (set_index < 0 || set_index >= ENGINE_MAX_SETS)
		return 0;
	core.insts[set_index] = inst;
	if (!core.started)
	{
		core.started = 1;
		core.stream = ctx->stream;
		core.fold_roles = ctx->mode == PSET_MODE_TRACE;
		core.started_us = procfs_monotonic_us();
		core.skel = engine_probes_bpf__open();
		if (core.skel == NULL)
			r = -errno;
		else
		{
			r = pset_prepare_object(ctx, core.skel->obj);
			if (r == 0)
			{
				core.skel->rodata->pgt_stream = ctx->stream ? 1 : 0;
				r = engine_probes_bpf__load(core.skel);
			}
		}
		if (r != 0)
		{
			libbpf_strerror(r, eb, sizeof(eb));
			core.failed = 1;
			snprintf(core.failure, sizeof(core.failure), "BPF load failed: %s", eb);
			log_error("engine: %s", core.failure);
			if (core.skel)
				engine_probes_bpf__destroy(core.skel);
			core.skel = NULL;
		}
		else
		{
			core.rb = ring_buffer__new(bpf_map__fd(core.skel->maps.eng_events),
									   on_event, NULL, NULL);
			if (core.rb == NULL)
				log_warn("engine: no ring buffer: slow statements and checkpoints not kept");
		}
	}
	update_status();
	return 0;
}

/*
 * engine_core_leave
 *		See engine_probes.h.  The last set to leave unloads everything.
 */
void
engine_core_leave(int set_index)
{
	size_t		i;
	int			k;

	if (set_index >= 0 && set_index < ENGINE_MAX_SETS)
		core.insts[set_index] = NULL;
	for (i = 0; i < ENGINE_MAX_SETS; i++)
		if (core.insts[i] != NULL)
			return;
	if (core.rb)
		ring_buffer__free(core.rb);
	for (k = 0; k < core.nbins; k++)
		binary_free(&core.bins[k]);
	if (core.skel)
		engine_probes_bpf__destroy(core.skel);
	free(core.rows);
	free(core.ckeys);
	free(core.cvals);
	free(core.hist);
	memset(&core, 0, sizeof(core));
	core.statements.cap = ENGINE_KEEP_STATEMENTS;
	core.checkpoints.cap = ENGINE_KEEP_CHECKPOINTS;
}

/*
 * row_from
 *		A user-space row from one eng_stats entry: LWLock tranches named.
 */
static void
row_from(engine_row *r, const struct eng_key *key, const struct eng_val *val)
{
	r->k = r->raw = *key;
	r->v = *val;
	r->name[0] = '\0';
	if (key->probe == ENG_LWLOCK_HOLD && (key->detail & ENG_LW_TRANCHE_ID))
	{
		tranche_name_by_id(key->pm, key->detail & 0xffff, r->k.name, sizeof(r->k.name));
		tranche_name_by_id(key->pm, key->detail & 0xffff, r->name, sizeof(r->name));
		r->k.detail = 0;
		return;					/* the whole name, from its id */
	}
	if (key->probe == ENG_LWLOCK_HOLD ||
			 (key->probe == ENG_LWLOCK_WAIT && key->name[0] == '\0' &&
			  (key->obj[0] | key->obj[1]) != 0))
	{
		tranche_name_at(key->pm, key->pid, (uint64_t) key->obj[1] << 32 | key->obj[0],
					 r->k.name, sizeof(r->k.name));
		memset(r->k.obj, 0, sizeof(r->k.obj));
	}
	if (key->probe == ENG_LWLOCK_HOLD || key->probe == ENG_LWLOCK_WAIT)
	{
		char		cut[ENG_NAME_LEN + 1];

		pgt_copy_string(cut, sizeof(cut), r->k.name, sizeof(r->k.name));
		tranche_name_whole(key->pm, cut, r->name, sizeof(r->name));
	}
}

/*
 * read_stats
 *		Copy eng_stats into core.rows (map_copy: in batches).
 */
static void
read_stats(void)
{
	size_t		n;
	size_t		i;

	core.nrows = 0;
	memset(core.set_events, 0, sizeof(core.set_events));
	if (core.ckeys == NULL)
		core.ckeys = malloc(ENG_MAX_KEYS * sizeof(*core.ckeys));
	if (core.cvals == NULL)
		core.cvals = malloc(ENG_MAX_KEYS * sizeof(*core.cvals));
	if (core.ckeys == NULL || core.cvals == NULL)
		return;
	n = map_copy(bpf_map__fd(core.skel->maps.eng_stats), sizeof(struct eng_key),
				 sizeof(struct eng_val), core.ckeys, core.cvals, ENG_MAX_KEYS);
	if (n > core.caprows)
	{
		engine_row *nr = realloc(core.rows, n * sizeof(*nr));

		if (nr == NULL)
			return;
		core.rows = nr;
		core.caprows = n;
	}
	for (i = 0; i < n; i++)
	{
		int			si = engine_set_index(engine_probe_set_of(core.ckeys[i].probe));

		row_from(&core.rows[i], &core.ckeys[i], &core.cvals[i]);
		if (si >= 0 && si < ENGINE_MAX_SETS)
			core.set_events[si] += core.cvals[i].calls;
	}
	core.nrows = n;
}

/*
 * read_maps
 *		Copy eng_stats and eng_hist.
 */
static void
read_maps(void)
{
	int			hfd = bpf_map__fd(core.skel->maps.eng_hist);
	uint64_t	hkey;
	uint64_t	hnext;
	void	   *prev = NULL;

	read_stats();
	core.nhist = 0;
	while (bpf_map_get_next_key(hfd, prev, &hnext) == 0)
	{
		engine_hist_row *h;

		hkey = hnext;
		prev = &hkey;
		if (core.nhist == core.caphist)
		{
			size_t		ncap = core.caphist ? core.caphist * 2 : 32;
			engine_hist_row *nh = realloc(core.hist, ncap * sizeof(*nh));

			if (nh == NULL)
				break;
			core.hist = nh;
			core.caphist = ncap;
		}
		h = &core.hist[core.nhist];
		if (bpf_map_lookup_elem(hfd, &hkey, &h->h) < 0)
			continue;
		h->pm = (uint32_t) (hkey >> 32);
		h->probe = (uint32_t) (hkey & 0xffffffff);
		if (h->probe == 0 || h->probe >= ENG_NPROBES)
			continue;
		core.nhist++;
	}
}

/* Rows of exited processes fold into their cluster's row (pid_retire.h). */
static const retire_u64_layout eng_fold = {.nwords = 6, .max_mask = 1ULL << 2};

_Static_assert(sizeof(struct eng_val) == 6 * 8 && offsetof(struct eng_val, max_ns) == 2 * 8,
			   "eng_fold layout");

/*
 * retire_exited
 *		Fold the rows of processes gone for --keep-exited seconds; true when
 *		any was (the copy is stale then).
 */
static bool
retire_exited(void)
{
	retire_map	m = {
		.name = "engine", .fd = bpf_map__fd(core.skel->maps.eng_stats),
		.max_entries = ENG_MAX_KEYS,
		.ksize = sizeof(struct eng_key), .vsize = sizeof(struct eng_val),
		.kstride = sizeof(engine_row), .vstride = sizeof(engine_row),
		.pid_off = offsetof(struct eng_key, pid), .pm_off = offsetof(struct eng_key, pm),
		.pm_in_key = 1, .role_in_key = core.fold_roles,
		.fold = pid_retire_fold_u64, .fold_arg = &eng_fold};

	/* an empty copy is a round too (a reused pid's rows: none to fold here) */
	return pid_retire_rows(&m, core.rows ? &core.rows[0].raw : NULL,
						   core.rows ? &core.rows[0].v : NULL, core.nrows) > 0;
}

/*
 * note_losses
 *		What the programs could not count, since they were loaded: events
 *		that found the counters' table full (every set), and locks held
 *		beyond a backend's slots, not timed (the hold sets).  In each
 *		affected set's pg_tracer_probes row (its note) and, as it grows, the
 *		log.
 */
static void
note_losses(void)
{
	uint64_t	dropped = core.skel->bss->eng_dropped;
	uint64_t	overflow = core.skel->bss->eng_hold_overflow;
	uint64_t	lost = core.skel->bss->eng_stream_lost;
	size_t		s;

	/* the log when it starts, and as it doubles */
	if (dropped > 0 && dropped >= 2 * core.dropped_said)
	{
		log_warn("engine sets: %llu events found the counters' table (%d rows) full and "
				 "were not counted (pg_tracer_reset() empties a cluster's rows)",
				 (unsigned long long) dropped, ENG_MAX_KEYS);
		core.dropped_said = dropped;
	}
	if (overflow > 0 && overflow >= 2 * core.overflow_said)
	{
		log_warn("engine hold sets: %llu locks held beyond a backend's slots (%d locks, "
				 "%d LWLocks) were not timed", (unsigned long long) overflow,
				 ENG_HELD_LOCKS, ENG_HELD_LWLOCKS);
		core.overflow_said = overflow;
	}
	if (lost > 0 && lost >= 2 * core.stream_lost_said)
	{
		log_warn("engine sets: %llu slow statements or checkpoints found the ring buffer "
				 "full and were not kept (it is read once a second)",
				 (unsigned long long) lost);
		core.stream_lost_said = lost;
	}
	for (s = 0; s < engine_nsets && s < ENGINE_MAX_SETS; s++)
	{
		pset_inst  *in = core.insts[s];
		int			hold;
		int			streams;

		if (in == NULL)
			continue;
		hold = strstr(engine_sets[s].name, "-hold") != NULL;
		streams = strcmp(engine_sets[s].name, "pg-query") == 0 ||
			strcmp(engine_sets[s].name, "pg-checkpoint") == 0;
		if (streams && lost > 0)
			snprintf(in->note, sizeof(in->note), "%llu slow statements or checkpoints not "
					 "kept: the ring buffer was full", (unsigned long long) lost);
		else if (hold && overflow > 0)
			snprintf(in->note, sizeof(in->note), "%llu locks held beyond a backend's slots "
					 "not timed", (unsigned long long) overflow);
		else if (dropped > 0)
			snprintf(in->note, sizeof(in->note), "%llu events not counted: the table of "
					 "%d rows was full", (unsigned long long) dropped, ENG_MAX_KEYS);
		else
			in->note[0] = '\0';
	}
}

/*
 * engine_core_collect
 *		See engine_probes.h.
 */
void
engine_core_collect(void)
{
	int64_t		now = procfs_monotonic_us();

	if (!core.started || core.failed || core.skel == NULL)
		return;
	drain_stream(1);
	if (now - core.last_read_us <
		(core.stream ? ENGINE_TRACE_READ_INTERVAL_US : ENGINE_READ_INTERVAL_US))
		return;
	core.last_read_us = now;
	read_maps();
	if (retire_exited())
		read_maps();
	release_unused();
	note_losses();
}

/*
 * engine_core_read_next
 *		See engine_probes.h: `trace` prints its summaries from the copy,
 *		which must hold what ended just before (the final one at Ctrl-C).
 */
void
engine_core_read_next(void)
{
	core.last_read_us = 0;
}

/*
 * ring_forget
 *		Drop ring's records of postmaster pm, the others staying in order,
 *		oldest first from slot 0.
 */
static void
ring_forget(stream_ring *ring, uint32_t pm)
{
	size_t		kept = 0;
	size_t		k;

	for (k = 0; k < ring->n; k++)
	{
		const engine_stream_row *r = ring_at(ring, k);

		if (r->pm != pm)
			core.ring_out[kept++] = *r;
	}
	memcpy(ring->rows, core.ring_out, kept * sizeof(*ring->rows));
	ring->n = kept;
	ring->next = kept % ring->cap;
}

/*
 * forget_stream
 *		Drop the kept stream records of postmaster pm.
 */
static void
forget_stream(uint32_t pm)
{
	ring_forget(&core.statements, pm);
	ring_forget(&core.checkpoints, pm);
}

/*
 * forget_hists
 *		Delete the histograms (key: pm << 32 | probe) of postmaster pm from
 *		eng_hist, walked afresh; returns how many went.
 */
static size_t
forget_hists(int hfd, uint32_t pm)
{
	uint64_t	keys[ENG_NPROBES];
	uint64_t	key;
	uint64_t	next;
	void	   *prev = NULL;
	size_t		n = 0;
	size_t		gone = 0;
	size_t		i;

	/* a walk that deletes as it goes may restart: collect, then delete */
	while (bpf_map_get_next_key(hfd, prev, &next) == 0)
	{
		key = next;
		prev = &key;
		if ((uint32_t) (next >> 32) == pm && n < ENG_NPROBES)
			keys[n++] = next;
	}
	for (i = 0; i < n; i++)
		if (bpf_map_delete_elem(hfd, &keys[i]) == 0)
			gone++;
	return gone;
}

/*
 * drop_rows_of
 *		Delete postmaster pm's counters, histograms and kept stream records.
 *		The programs run on meanwhile: an update that lands as its row is
 *		deleted is lost with it.
 */
static size_t
drop_rows_of(uint32_t pm)
{
	int			sfd;
	int			hfd;
	size_t		n;
	size_t		i;
	size_t		gone = 0;

	drain_stream(16);			/* what is queued is from before */
	forget_stream(pm);
	sfd = bpf_map__fd(core.skel->maps.eng_stats);
	hfd = bpf_map__fd(core.skel->maps.eng_hist);
	if (core.ckeys == NULL)
		core.ckeys = malloc(ENG_MAX_KEYS * sizeof(*core.ckeys));
	if (core.cvals == NULL)
		core.cvals = malloc(ENG_MAX_KEYS * sizeof(*core.cvals));
	if (core.ckeys == NULL || core.cvals == NULL)
		return 0;
	n = map_copy(sfd, sizeof(struct eng_key), sizeof(struct eng_val), core.ckeys, core.cvals,
				 ENG_MAX_KEYS);
	for (i = 0; i < n; i++)
		if (core.ckeys[i].pm == pm && bpf_map_delete_elem(sfd, &core.ckeys[i]) == 0)
			gone++;
	gone += forget_hists(hfd, pm);
	core.last_read_us = 0;		/* the next collect reads the maps */
	return gone;
}

/*
 * engine_core_reset
 *		See engine_probes.h.
 */
size_t
engine_core_reset(uint32_t pm)
{
	size_t		gone;

	if (!core.started || core.failed || core.skel == NULL || pm == 0)
		return 0;
	gone = drop_rows_of(pm);
	if (gone > 0)				/* every engine set calls: the first finds them */
		log_info("engine sets: reset for postmaster %u (%zu rows dropped)", pm, gone);
	return gone;
}

/*
 * engine_core_view
 *		See engine_probes.h.
 */
void
engine_core_view(engine_view *v)
{
	size_t		i = 0;
	size_t		j = 0;

	/* both rings oldest first: merged by end time */
	core.nring_out = 0;
	while (i < core.statements.n || j < core.checkpoints.n)
	{
		const engine_stream_row *a = i < core.statements.n ? ring_at(&core.statements, i) : NULL;
		const engine_stream_row *b = j < core.checkpoints.n ? ring_at(&core.checkpoints, j) : NULL;

		if (b == NULL || (a != NULL && a->e.end_us <= b->e.end_us))
		{
			core.ring_out[core.nring_out++] = *a;
			i++;
		}
		else
		{
			core.ring_out[core.nring_out++] = *b;
			j++;
		}
	}
	v->rows = core.rows;
	v->nrows = core.nrows;
	v->hist = core.hist;
	v->nhist = core.nhist;
	v->stream = core.ring_out;
	v->nstream = core.nring_out;
	v->started_us = core.started_us;
}

uint64_t
engine_core_set_events(int set_index)
{
	return set_index >= 0 && set_index < ENGINE_MAX_SETS ? core.set_events[set_index] : 0;
}
