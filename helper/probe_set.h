/*
 * helper/probe_set.h
 *	  The probe-set framework: a registry of selectable probe sets that both
 *	  the daemon (always-on, in-kernel aggregation published into segment
 *	  tables) and `pg-tracer trace` (event streams, periodic summaries,
 *	  log2 histograms) drive through the same callbacks.
 *
 * HOW A PROBE SET REGISTERS
 * -------------------------
 * One set = bpf/<name>.bpf.c (+ a shared bpf/<name>.h) and helper/<name>.c.
 * The helper file defines a `const probe_set` and registers it with
 *
 *		PGT_REGISTER_PROBE_SET(my_set);
 *
 * which puts a pointer into the linker section "pgt_probe_sets"; no central
 * list is edited, so sets from different branches merge without conflicts.
 * Sets are listed by `order`, then name.
 *
 * What a set implements (all callbacks but start/stop may be NULL):
 *	  start(inst, ctx)	open the skeleton, pset_prepare_object(ctx, obj)
 *						BEFORE load (reuses the shared maps below), set
 *						skel->rodata->pgt_stream = ctx->stream, load,
 *						attach.  Always fill inst->status (pset_set_status):
 *						AVAILABLE, DEGRADED (runs, but part of it could
 *						not attach: say which and why) or UNAVAILABLE (with
 *						libbpf's error / the missing kernel feature).
 *						Return 0 unless out of memory; a set that cannot
 *						attach is not an error of the helper.
 *	  stop(inst)		destroy the skeleton, free inst->priv.
 *	  collect(inst)		copy the in-kernel aggregates (maps) into user
 *						memory; called once per publication (daemon, 1 s)
 *						or per --interval (trace).  Add the events seen to
 *						inst->events.
 *	  publish(inst, pub)	daemon: add the rows of one cluster
 *						(pub->postmaster) to segment tables with
 *						pset_pub_add(pub, PGT_SEC_..., &row), or
 *						pset_pub_add_pid() for a row of one process (rows of
 *						exited processes then go last); pids are
 *						translated with pset_pub_nspid(), and named with
 *						pset_pub_role().  To publish a new
 *						table: reserve a section kind in your range
 *						(common/pgt_segment.h), a row struct with a
 *						_Static_assert, one line in pgt_section_entry_size()
 *						and one line in seg_tables[] (segment_writer.c).
 *	  event(inst, out, hdr, data, len)	trace: render one ring-buffer record
 *						(hdr->set == set->id) with trace_rec_begin/_u64/
 *						_str/.../trace_rec_end (trace_out.h).
 *	  stats(inst, out)	trace --stats: one summary record per pid (and
 *						query id) with the set's counters.
 *	  histograms(inst, out)	trace --histogram: trace_hist() per histogram.
 *	  hold(inst, hold)	daemon, --kernel-sets escalated: detach the set's
 *						hooks (hold 1) outside escalation windows, attach
 *						them again (0) when one opens; its maps, counts
 *						and status row stay.
 *	  reset(inst, pm, shared)	daemon, pg_tracer_reset() of the
 *						cluster whose postmaster is pm (host pid): drop
 *						that cluster's rows of the set's aggregates, so its
 *						views count from now on, and with shared the rows
 *						every cluster shows (the kernel's own, pm 0): only
 *						when it is the one cluster served; returns the rows
 *						dropped.  The daemon collects again right after
 *						(pset_runtime_reset).
 *
 * STREAMING EVENTS
 * ----------------
 * BPF side: #include "pgt_common.bpf.h", filter with pgt_tracked_pm(tgid),
 * tag with pgt_current_qid(tgid) (in the backend's own context) or
 * pgt_cached_qid(tgid) (elsewhere), and submit with
 * pgt_event_reserve(size, PGT_SET_x, EVENT, tgid, tid, qid) +
 * bpf_ringbuf_submit(): the header (struct pgt_event_hdr, bpf/pgt_trace.h)
 * carries ts, pid, tid, query id, set and event; the payload follows.
 * pgt_event_reserve returns NULL unless a stream was asked for, so the
 * daemon pays nothing for it.  The trace command polls the one shared ring
 * buffer and hands each record to the set whose id is in the header.
 *
 * JSON FIELDS
 * -----------
 * Every record (events, stats, histograms), text or JSON Lines, begins with
 *	  ts			UTC time, ISO 8601 with microseconds ("...Z")
 *	  set			probe set name ("syscall", "pg-locks", ...)
 *	  event			event name ("pread64", "stats", "histogram", ...)
 *	  pid			process id (host pid), 0 for kernel context
 *	  backend_type	PostgreSQL's name for the process ("client backend",
 *					"checkpointer", ...), "kernel" for pid 0
 *	  queryid		pg_stat_statements query id, 0 when unknown
 * then set-specific fields named in snake_case with the unit as suffix
 * (bytes, _ns, _us, _ms, count fields plain): e.g. "latency_us", "bytes",
 * "ret", "file_class".  Histograms: "metric", "unit", "buckets":
 * [{"lo":..,"hi":..,"count":..},...] (only non-empty buckets).
 *
 * QUERY IDS
 * ---------
 * pgt_qid is filled by the helper from the extension's layout file
 * (BackendStatusArray, st_procpid, st_query_id) by reading the postmaster's
 * memory (pset_qid_refresh()); without the extension every query id is 0 and
 * the sets say so in their status reason.
 *
 * Threading: single-threaded (the daemon's loop, or the trace loop).
 */
#ifndef PGT_HELPER_PROBE_SET_H
#define PGT_HELPER_PROBE_SET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf_probes.h"
#include "pgt_layout.h"
#include "pgt_segment.h"
#include "pgt_trace.h"

struct bpf_object;
struct trace_out;

#define PSET_MODE_DAEMON	1
#define PSET_MODE_TRACE		2

/* What a set gets to start with: the shared maps and the mode. */
typedef struct pset_ctx
{
	int			mode;			/* PSET_MODE_* */
	int			tracked_fd;		/* foundation pid filter (`tracked`) */
	int			qid_fd;			/* `pgt_qid` */
	int			events_fd;		/* `pgt_events` ring buffer */
	int			drops_fd;		/* `pgt_event_drops`: records it lost */
	hook_chain *chain;			/* the foundation's hook chains, NULL: attach
								 * chained hooks' programs one by one */
	int			stream;			/* 1: submit events to pgt_events */
	int			kprobes;		/* 1: kprobes can attach (pset_kprobes_usable) */
	char		kprobes_reason[128];
	uint64_t	selected;		/* bit 1 << id of every set being started, so
								 * sets sharing one object load it once */
	int			qid_off;		/* 1: --query-id off (pset_query_ids) */
} pset_ctx;

struct probe_set;

/* One started set. */
typedef struct pset_inst
{
	const struct probe_set *set;
	probe_status status;		/* state, mechanism, reason */
	uint64_t	events;			/* events seen since start */
	char		note[100];		/* a passing condition collect found (a full
								 * map), shown before the reason; "" for none */
	void	   *priv;			/* the set's own state */
} pset_inst;

/* Rows of one cluster's publication, by section kind. */
typedef struct pset_table_rows
{
	unsigned char *rows;
	uint32_t	count;
	uint32_t	cap;
	uint32_t	size;
} pset_table_rows;

typedef struct pset_pub
{
	uint32_t	postmaster;		/* host pid of the cluster's postmaster */
	uint64_t	cluster_dev;	/* its data directory (escalation's party) */
	uint64_t	cluster_ino;
	uint32_t	(*nspid) (void *arg, uint32_t pid);	/* host -> namespace pid */
	uint32_t	(*role) (void *arg, uint32_t pid);	/* host pid -> PGT_ROLE_*, 0 unknown */
	void	   *nspid_arg;		/* both callbacks' */
	pset_table_rows tables[PGT_SEC_KIND_MAX];	/* live processes', the kernel's */
	pset_table_rows folded[PGT_SEC_KIND_MAX];	/* exited processes' (pid NULL) */
	pset_table_rows late[PGT_SEC_KIND_MAX];	/* processes' that just exited */
} pset_pub;

typedef struct probe_set
{
	const char *name;			/* --probes name, pg_tracer_probes.name */
	const char *description;	/* one line, for --probes help */
	uint16_t	id;				/* PGT_SET_* (bpf/pgt_trace.h) */
	int			order;			/* listing order */
	int			(*start) (pset_inst *inst, const pset_ctx *ctx);
	void		(*stop) (pset_inst *inst);
	void		(*collect) (pset_inst *inst);
	void		(*publish) (pset_inst *inst, pset_pub *pub);
	/* render one record; -1 when it is malformed (short, unknown kind) */
	int			(*event) (pset_inst *inst, struct trace_out *out,
						  const struct pgt_event_hdr *hdr,
						  const void *data, size_t len);
	void		(*stats) (pset_inst *inst, struct trace_out *out);
	void		(*histograms) (pset_inst *inst, struct trace_out *out);
	void		(*hold) (pset_inst *inst, int hold);
	size_t		(*reset) (pset_inst *inst, uint32_t postmaster, int shared);
	/* the pid filter took in processes found in /proc (optional) */
	void		(*tracked) (pset_inst *inst);
} probe_set;

#define PGT_REGISTER_PROBE_SET(sym) \
	static const probe_set *const pgt_reg_##sym \
	__attribute__((used, section("pgt_probe_sets"), aligned(sizeof(void *)))) = &sym

/* The running sets of a daemon or a trace session. */
typedef struct pset_runtime
{
	pset_ctx	ctx;
	pset_inst  *insts;
	size_t		ninsts;
	int			qid_state;		/* PGT_PROBE_* of query-id tagging */
	char		qid_reason[160];
	/* copies of `pgt_qid` and `tracked`: the slot sweep's and refresh's */
	uint32_t   *sweep_qpids;
	struct pgt_qid_slot *sweep_slots;
	uint32_t   *sweep_tpids;
	struct pgt_tracked *sweep_tracked;
} pset_runtime;

/* Registry */
extern size_t pset_count(void);
extern int	pset_kprobes_usable(char *reason, size_t len);
extern const probe_set *pset_get(size_t i);	/* sorted by order, name */
extern const probe_set *pset_find(const char *name);
extern int	pset_parse_list(const char *list, const probe_set **out, size_t max,
							size_t *n, char *err, size_t errlen);

/* Lifecycle (init before anything can fail: stop is then always safe) */
extern void pset_runtime_init(pset_runtime *rt);
extern int	pset_runtime_start(pset_runtime *rt, int mode, int stream,
							   int tracked_fd, hook_chain *chain,
							   const probe_set *const *sets, size_t nsets);
extern void pset_runtime_stop(pset_runtime *rt);
extern void pset_runtime_collect(pset_runtime *rt);
extern void pset_runtime_tracked(pset_runtime *rt);
extern pset_inst *pset_runtime_find(pset_runtime *rt, uint16_t id);
extern int	pset_runtime_hold(pset_runtime *rt, int hold);
extern size_t pset_runtime_reset(pset_runtime *rt, uint32_t postmaster, int shared,
								 int *nsets);

/*
 * --query-id on|off: with off, no BPF program reads a backend's query id
 * (each object's `pgt_qid_off`, bpf/pgt_common.bpf.h) and every row and
 * event carries 0; the cheaper choice when per-query detail is not wanted.
 * Read when sets start; default on.
 */
extern int	pset_query_ids;
extern int	pset_configure_query_ids(const char *arg, char *err, size_t errlen);

/*
 * Size of the stream's ring buffer (`pg-tracer trace --buffer SIZE`: bytes,
 * or with k, m or g; rounded up to a power of two, 4 KiB..1 GiB).
 */
extern uint32_t pset_stream_bytes;
extern int	pset_configure_stream_bytes(const char *arg, char *err, size_t errlen);

/* Stream records lost to a full ring buffer since the sets started. */
extern uint64_t pset_runtime_lost_events(const pset_runtime *rt);

/*
 * For sets: before load, reuse the shared maps of ctx in obj (by name) and
 * set the switches every object has (`pgt_qid_off`).
 */
extern int	pset_prepare_object(const pset_ctx *ctx, struct bpf_object *obj);
extern void pset_set_status(pset_inst *inst, uint32_t state,
							const char *mechanism, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));
extern const char *pset_errstr(int err, char *buf, size_t buflen);

/* Publication (daemon) */
extern int	pset_pub_add(pset_pub *pub, uint32_t kind, const void *row, size_t size);
extern int	pset_pub_add_pid(pset_pub *pub, uint32_t kind, const void *row, size_t size,
							 uint32_t pid);
extern uint32_t pset_pub_nspid(const pset_pub *pub, uint32_t pid);
extern uint32_t pset_pub_role(const pset_pub *pub, uint32_t pid);
extern void pset_pub_reset(pset_pub *pub);
extern void pset_pub_free(pset_pub *pub);
extern void pset_runtime_publish(pset_runtime *rt, pset_pub *pub);
extern size_t pset_runtime_status_rows(pset_runtime *rt,
									   struct pgt_probeset_entry *out, size_t max);

/* Query ids: (re)map each pid of a cluster to its PgBackendStatus slot. */
extern int	pset_qid_refresh(pset_runtime *rt, pid_t postmaster,
							 const pgt_layout *layout, const uint32_t *pids,
							 const uint32_t *nspids, size_t npids);

#endif							/* PGT_HELPER_PROBE_SET_H */
