/*
 * helper/engine_probes.c
 *	  Engine probes of one served cluster, from load to publication.
 *
 * One skeleton (bpf/engine_probes.bpf.c) per attached postmaster: its
 * `tracked` map is the daemon's (bpf_map__reuse_fd), so the engine sees
 * exactly the processes the daemon tracks, and engine_cfg restricts it to
 * this postmaster.  Programs attach with pid -1 to the cluster's own
 * executable (resolved through /proc/<pm>/root), so a backend forked later
 * is covered without re-attaching; USDT semaphores are set by the kernel
 * (uprobe ref_ctr_offset) in every process mapping the binary.
 *
 * The aggregates are read at most once a second (reading a 16k-entry hash
 * is not free) and the rows kept between reads; the ring buffer (slow
 * statements, checkpoints) is drained at every publication into a ring of
 * the latest PGT_DEFAULT_ENGINE_STREAM_CAP records.
 *
 * Single-threaded (the daemon's loop): no locking.
 */
#include "engine_probes.h"

#include "elf_inspect.h"
#include "engine.h"
#include "engine_catalog.h"
#include "log.h"
#include "procfs.h"

#include "engine_probes.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ENGINE_READ_INTERVAL_US	(1000 * 1000)
#define ENGINE_MAX_LINKS		128

/* Enabled sets (by engine_sets[] index) and the slow-statement threshold. */
static int	enabled[16];
static int	configured;
static uint64_t slow_ns = UINT64_C(1000) * 1000 * 1000;

struct engine_state
{
	uint32_t	pm;
	struct engine_probes_bpf *skel;
	struct ring_buffer *rb;
	char		exe[PATH_MAX + 64];
	elf_info	elf;
	int			elf_ok;
	uint64_t	bias;
	engine_choice *choices;		/* engine_npoints */
	int		   *attached;		/* engine_npoints */
	struct bpf_link *links[ENGINE_MAX_LINKS];
	int			nlinks;
	char		failure[176];	/* whole-engine failure, "" when none */
	int			qid_ok;
	char		qid_reason[96];

	/* publication */
	struct pgt_engine_event_entry *rows;
	uint32_t	nrows;
	uint32_t	caprows;
	struct pgt_engine_hist_entry hist[ENG_NPROBES];
	uint32_t	nhist;
	struct pgt_engine_stream_entry stream[PGT_DEFAULT_ENGINE_STREAM_CAP];
	uint32_t	nstream;		/* records kept, <= cap */
	uint32_t	stream_next;	/* slot of the next record */
	struct pgt_engine_stream_entry stream_out[PGT_DEFAULT_ENGINE_STREAM_CAP];
	uint64_t	set_events[16];
	int64_t		last_read_us;
	engine_pid_map_fn map;
	void	   *map_arg;
};

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

	memset(enabled, 0, sizeof(enabled));
	configured = 1;
	snprintf(buf, sizeof(buf), "%s", sets);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		int			k;

		if (strcmp(tok, "all") == 0)
		{
			for (i = 0; i < engine_nsets; i++)
				enabled[i] = 1;
			continue;
		}
		if (strcmp(tok, "default") == 0)
		{
			for (i = 0; i < engine_nsets; i++)
				enabled[i] |= engine_sets[i].default_on;
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
		enabled[k] = 1;
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
 *		Whether a set runs (the defaults until engine_configure()).
 */
int
engine_set_enabled(const char *set)
{
	int			k = engine_set_index(set);

	if (k < 0)
		return 0;
	return configured ? enabled[k] : engine_sets[k].default_on;
}

/*
 * errstr
 *		libbpf error code as text.
 */
static const char *
errstr(int err, char *buf, size_t len)
{
	if (libbpf_strerror(err, buf, len) != 0)
		snprintf(buf, len, "%s", strerror(err < 0 ? -err : err));
	return buf;
}

/*
 * keep_link
 *		Remember a link; 0, or -1 when it is NULL (errno says why).
 */
static int
keep_link(engine_state *e, struct bpf_link *l)
{
	if (l == NULL)
		return -1;
	if (e->nlinks == ENGINE_MAX_LINKS)
	{
		bpf_link__destroy(l);
		errno = ENOSPC;
		return -1;
	}
	e->links[e->nlinks++] = l;
	return 0;
}

/*
 * attach_point
 *		Attach point i with its chosen mechanism.  Returns 0 or -errno.
 */
static int
attach_point(engine_state *e, size_t i)
{
	const engine_point *p = &engine_points[i];
	engine_mech m = e->choices[i].mech;
	struct bpf_program *prog;
	size_t		k;
	int			n = 0;

	if (m == ENGINE_MECH_USDT)
	{
		prog = bpf_object__find_program_by_name(e->skel->obj, p->usdt_prog);
		if (prog == NULL)
			return -ENOENT;
		if (keep_link(e, bpf_program__attach_usdt(prog, -1, e->exe, ENGINE_USDT_PROVIDER,
												  p->usdt, NULL)) < 0)
			return -errno;
		return 0;
	}
	if (m == ENGINE_MECH_USDT_SITE)
	{
		/* every site of the note, with its semaphore as the uprobe ref_ctr */
		prog = bpf_object__find_program_by_name(e->skel->obj, p->site_prog);
		if (prog == NULL)
			return -ENOENT;
		for (k = 0; k < e->elf.nprobes; k++)
		{
			const usdt_probe *u = &e->elf.probes[k];
			LIBBPF_OPTS(bpf_uprobe_opts, uo);
			uint64_t	off;
			uint64_t	sem = 0;

			if (strcmp(u->provider, ENGINE_USDT_PROVIDER) != 0 || strcmp(u->name, p->usdt) != 0)
				continue;
			if (elf_vaddr_to_offset(&e->elf, u->pc, &off) < 0 ||
				(u->semaphore && elf_vaddr_to_offset(&e->elf, u->semaphore, &sem) < 0))
				return -EINVAL;
			uo.ref_ctr_offset = sem;
			if (keep_link(e, bpf_program__attach_uprobe_opts(prog, -1, e->exe, off, &uo)) < 0)
				return -errno;
			n++;
		}
		return n > 0 ? 0 : -ENOENT;
	}
	if (m == ENGINE_MECH_UPROBE || m == ENGINE_MECH_URETPROBE)
	{
		LIBBPF_OPTS(bpf_uprobe_opts, uo);
		elf_symbol	s;

		prog = bpf_object__find_program_by_name(e->skel->obj, p->func_prog);
		if (prog == NULL || elf_find_symbol(&e->elf, p->func, &s) < 0 || s.offset == 0)
			return -ENOENT;
		uo.retprobe = m == ENGINE_MECH_URETPROBE;
		if (keep_link(e, bpf_program__attach_uprobe_opts(prog, -1, e->exe, s.offset, &uo)) < 0)
			return -errno;
		return 0;
	}
	return -ENOENT;
}

/*
 * checkpoint_args
 *		checkpoint__done's arguments are globals ("40+CheckpointStats(%rip)"):
 *		resolve each to an absolute address for the BPF side.
 */
static void
checkpoint_args(engine_state *e, struct eng_cfg *cfg)
{
	const usdt_probe *u = elf_find_usdt(&e->elf, ENGINE_USDT_PROVIDER, "checkpoint__done");
	usdt_arg	args[USDT_MAX_ARGS];
	int			n;
	int			i;

	if (u == NULL)
		return;
	n = usdt_parse_args(u->args, args, USDT_MAX_ARGS);
	for (i = 0; i < n && i < ENG_CKPT_ARGS; i++)
	{
		elf_symbol	s;

		if (args[i].kind != USDT_ARG_SYMBOL ||
			elf_find_symbol(&e->elf, args[i].symbol, &s) < 0)
			return;				/* all or nothing: arg 0 must mean arg 0 */
		cfg->ckpt_addr[i] = e->bias + s.addr + (uint64_t) args[i].value;
		cfg->ckpt_size[i] = (uint32_t) args[i].size;
	}
	cfg->nckpt = (uint32_t) n;
}

/*
 * write_cfg
 *		(Re)write engine_cfg: postmaster, query-id addresses, threshold.
 */
static void
write_cfg(engine_state *e, const pgt_layout *layout)
{
	struct eng_cfg cfg;
	uint32_t	zero = 0;
	elf_symbol	s;

	memset(&cfg, 0, sizeof(cfg));
	cfg.postmaster = e->pm;
	cfg.flags = ENG_CFG_SLOW_STREAM;
	cfg.slow_ns = slow_ns;
	e->qid_ok = 0;
	if (layout == NULL)
		snprintf(e->qid_reason, sizeof(e->qid_reason),
				 "no query ids: layout file not loaded (extension not preloaded)");
	else if (elf_find_symbol(&e->elf, "MyBEEntry", &s) < 0)
		snprintf(e->qid_reason, sizeof(e->qid_reason), "no query ids: MyBEEntry unresolvable");
	else
	{
		cfg.mybeentry_addr = e->bias + s.addr;
		cfg.query_id_off = layout->beentry_off_query_id;
		e->qid_ok = 1;
		e->qid_reason[0] = '\0';
	}
	checkpoint_args(e, &cfg);
	if (bpf_map_update_elem(bpf_map__fd(e->skel->maps.engine_cfg), &zero, &cfg, BPF_ANY) < 0)
		log_warn("engine: cannot write engine_cfg: %s", strerror(errno));
}

/*
 * on_event
 *		Ring buffer callback: keep the record in the stream ring.
 */
static int
on_event(void *ctx, void *data, size_t size)
{
	engine_state *e = ctx;
	const struct eng_event *ev = data;
	struct pgt_engine_stream_entry *s;
	size_t		l;

	if (size < sizeof(*ev))
		return 0;
	s = &e->stream[e->stream_next];
	memset(s, 0, sizeof(*s));
	s->end_us = procfs_boot_to_real_us() + (int64_t) (ev->ts / 1000);
	s->pid = e->map ? e->map(e->map_arg, ev->pid) : ev->pid;
	if (s->pid == 0)
		s->pid = ev->pid;
	s->probe = ev->probe;
	s->queryid = ev->queryid;
	s->dur_ns = ev->dur_ns;
	memcpy(s->counter, ev->c, sizeof(s->counter));
	snprintf(s->probe_name, sizeof(s->probe_name), "%s", engine_probe_name(ev->probe));
	/* bounded copy; a multi-byte character cut by the bound is dropped */
	pgt_copy_string(s->text, sizeof(s->text), ev->text, sizeof(ev->text));
	l = strlen(s->text);
	while (l > 0 && s->text[l - 1] == '?' && (unsigned char) ev->text[l - 1] >= 0x80)
		s->text[--l] = '\0';
	e->stream_next = (e->stream_next + 1) % PGT_DEFAULT_ENGINE_STREAM_CAP;
	if (e->nstream < PGT_DEFAULT_ENGINE_STREAM_CAP)
		e->nstream++;
	return 0;
}

/*
 * engine_attach
 *		See engine_probes.h.
 */
engine_state *
engine_attach(uint32_t pm, int tracked_fd)
{
	engine_state *e = calloc(1, sizeof(*e));
	char		err[512];
	char		eb[128];
	size_t		i;
	int			r;

	if (e == NULL)
		return NULL;
	e->pm = pm;
	e->elf.fd = -1;
	e->choices = calloc(engine_npoints, sizeof(*e->choices));
	e->attached = calloc(engine_npoints, sizeof(*e->attached));
	if (e->choices == NULL || e->attached == NULL)
	{
		snprintf(e->failure, sizeof(e->failure), "out of memory");
		return e;
	}
	if (tracked_fd < 0)
	{
		snprintf(e->failure, sizeof(e->failure), "BPF unavailable (see probe set \"process\")");
		return e;
	}
	if (elf_resolve_exe((int) pm, e->exe, sizeof(e->exe), err, sizeof(err)) < 0 ||
		elf_inspect_open(e->exe, &e->elf, err, sizeof(err)) < 0)
	{
		snprintf(e->failure, sizeof(e->failure), "executable: %.160s", err);
		return e;
	}
	e->elf_ok = 1;
	if (elf_load_bias((int) pm, &e->elf, &e->bias) < 0)
		log_warn("engine: no mapping of %s in postmaster %u: globals unreadable",
				 e->exe, pm);
	engine_plan(&e->elf, e->choices);

	e->skel = engine_probes_bpf__open();
	if (e->skel == NULL)
	{
		snprintf(e->failure, sizeof(e->failure), "BPF open failed: %s",
				 errstr(-errno, eb, sizeof(eb)));
		return e;
	}
	r = bpf_map__reuse_fd(e->skel->maps.tracked, tracked_fd);
	if (r == 0)
		r = engine_probes_bpf__load(e->skel);
	if (r != 0)
	{
		snprintf(e->failure, sizeof(e->failure), "BPF load failed: %s",
				 errstr(r, eb, sizeof(eb)));
		log_error("engine: %s", e->failure);
		engine_probes_bpf__destroy(e->skel);
		e->skel = NULL;
		return e;
	}
	write_cfg(e, NULL);
	for (i = 0; i < engine_npoints; i++)
	{
		if (!engine_set_enabled(engine_points[i].set) || e->choices[i].mech == ENGINE_MECH_NONE)
			continue;
		r = attach_point(e, i);
		if (r == 0)
			e->attached[i] = 1;
		else
		{
			log_warn("engine: %s %s (%s) did not attach: %s", engine_points[i].set,
					 engine_points[i].usdt ? engine_points[i].usdt : engine_points[i].func,
					 engine_mech_name(e->choices[i].mech), errstr(r, eb, sizeof(eb)));
			snprintf(e->choices[i].reason, sizeof(e->choices[i].reason),
					 "%s attach failed: %.100s", engine_mech_name(e->choices[i].mech),
					 errstr(r, eb, sizeof(eb)));
		}
	}
	e->rb = ring_buffer__new(bpf_map__fd(e->skel->maps.eng_events), on_event, e, NULL);
	if (e->rb == NULL)
		log_warn("engine: no ring buffer: slow statements and checkpoints not streamed");
	log_info("engine: postmaster %u, executable %s: %d links", pm, e->exe, e->nlinks);
	return e;
}

/*
 * engine_set_layout
 *		See engine_probes.h.
 */
void
engine_set_layout(engine_state *e, const pgt_layout *layout)
{
	if (e == NULL || e->skel == NULL)
		return;
	if ((layout != NULL) == e->qid_ok)
		return;
	write_cfg(e, layout);
}

/*
 * engine_detach
 *		See engine_probes.h.
 */
void
engine_detach(engine_state *e)
{
	int			i;

	if (e == NULL)
		return;
	if (e->rb)
		ring_buffer__free(e->rb);
	for (i = 0; i < e->nlinks; i++)
		bpf_link__destroy(e->links[i]);
	if (e->skel)
		engine_probes_bpf__destroy(e->skel);
	if (e->elf_ok)
		elf_inspect_close(&e->elf);
	free(e->choices);
	free(e->attached);
	free(e->rows);
	free(e);
}

/*
 * describe
 *		The `what` of a row: lock type and mode, tranche, checkpoint flags.
 */
static void
describe(const struct eng_key *k, char *what, size_t len)
{
	char		name[ENG_NAME_LEN + 1];

	switch (k->probe)
	{
		case ENG_LOCK_WAIT:
			snprintf(what, len, "%s %s", engine_locktag_name(k->detail),
					 engine_lockmode_name(k->mode));
			break;
		case ENG_LWLOCK_WAIT:
			pgt_copy_string(name, sizeof(name), k->name, sizeof(k->name));
			snprintf(what, len, "%s %s", name, engine_lwmode_name(k->mode));
			break;
		case ENG_CHECKPOINT:
			snprintf(what, len, "flags 0x%x%s%s%s", k->detail,
					 (k->detail & 0x2) ? " immediate" : "",
					 (k->detail & 0x1) ? " shutdown" : "",
					 (k->detail & 0x100) ? " time" : "");
			break;
		default:
			what[0] = '\0';
	}
}

/*
 * read_stats
 *		Rebuild rows and histograms from the maps.
 */
static void
read_stats(engine_state *e)
{
	int			sfd = bpf_map__fd(e->skel->maps.eng_stats);
	int			hfd = bpf_map__fd(e->skel->maps.eng_hist);
	struct eng_key key;
	struct eng_key next;
	struct eng_val val;
	void	   *prev = NULL;
	uint32_t	i;

	e->nrows = 0;
	memset(e->set_events, 0, sizeof(e->set_events));
	while (bpf_map_get_next_key(sfd, prev, &next) == 0)
	{
		struct pgt_engine_event_entry *r;
		int			si;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(sfd, &key, &val) < 0)
			continue;
		si = engine_set_index(engine_probe_set_of(key.probe));
		if (si >= 0)
			e->set_events[si] += val.calls;
		if (e->nrows == e->caprows)
		{
			uint32_t	ncap = e->caprows ? e->caprows * 2 : 256;
			struct pgt_engine_event_entry *nr;

			if (ncap > ENG_MAX_KEYS)
				break;
			nr = realloc(e->rows, ncap * sizeof(*nr));
			if (nr == NULL)
				break;
			e->rows = nr;
			e->caprows = ncap;
		}
		r = &e->rows[e->nrows++];
		memset(r, 0, sizeof(*r));
		r->pid = e->map ? e->map(e->map_arg, key.pid) : key.pid;
		if (r->pid == 0)
			r->pid = key.pid;	/* exited: its host pid is all we know */
		r->probe = key.probe;
		r->queryid = key.queryid;
		r->calls = val.calls;
		r->total_ns = val.total_ns;
		r->max_ns = val.max_ns;
		memcpy(r->counter, val.c, sizeof(r->counter));
		r->detail = key.detail;
		r->mode = key.mode;
		memcpy(r->obj, key.obj, sizeof(r->obj));
		snprintf(r->probe_name, sizeof(r->probe_name), "%s", engine_probe_name(key.probe));
		describe(&key, r->what, sizeof(r->what));
	}
	e->nhist = 0;
	for (i = 1; i < ENG_NPROBES; i++)
	{
		struct eng_hist h;
		struct pgt_engine_hist_entry *o = &e->hist[e->nhist];

		if (bpf_map_lookup_elem(hfd, &i, &h) < 0)
			continue;
		memset(o, 0, sizeof(*o));
		snprintf(o->probe_name, sizeof(o->probe_name), "%s", engine_probe_name(i));
		o->probe = i;
		o->nslots = PGT_ENGINE_HIST_SLOTS;
		memcpy(o->slots, h.slots, sizeof(o->slots));
		e->nhist++;
	}
}

/*
 * set_row
 *		One probe-set row.
 */
static void
set_row(struct pgt_probeset_entry *r, const char *name, uint32_t state, const char *mech,
		uint64_t events, const char *reason)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->state = state;
	r->events = events;
	snprintf(r->mechanism, sizeof(r->mechanism), "%s", mech);
	/* truncated to the segment's field on purpose */
	memcpy(r->reason, reason, strnlen(reason, sizeof(r->reason) - 1));
}

/*
 * engine_publish
 *		See engine_probes.h.
 */
int
engine_publish(engine_state *e, struct pgt_probeset_entry *ps, int max,
			   seg_publish *p, engine_pid_map_fn map, void *arg)
{
	int64_t		now = procfs_realtime_us();
	int			n = 0;
	size_t		i;
	uint32_t	k;

	if (e != NULL && e->skel != NULL)
	{
		e->map = map;
		e->map_arg = arg;
		if (e->rb)
			(void) ring_buffer__consume(e->rb);
		if (now - e->last_read_us >= ENGINE_READ_INTERVAL_US)
		{
			read_stats(e);
			e->last_read_us = now;
		}
		p->tables[PGT_SEC_ENGINE_EVENTS] = (seg_rows) {e->rows, e->nrows};
		p->tables[PGT_SEC_ENGINE_HIST] = (seg_rows) {e->hist, e->nhist};
		/* oldest first */
		for (k = 0; k < e->nstream; k++)
			e->stream_out[k] = e->stream[(e->stream_next + PGT_DEFAULT_ENGINE_STREAM_CAP -
										  e->nstream + k) % PGT_DEFAULT_ENGINE_STREAM_CAP];
		p->tables[PGT_SEC_ENGINE_STREAM] = (seg_rows) {e->stream_out, e->nstream};
	}
	for (i = 0; i < engine_nsets && n < max; i++)
	{
		const char *name = engine_sets[i].name;
		char		mech[32];
		char		reason[512];
		char		full[700];
		uint32_t	st;

		if (e == NULL)
		{
			set_row(&ps[n++], name, PGT_PROBE_UNAVAILABLE, "none", 0,
					"postmaster not running");
			continue;
		}
		if (e->failure[0] != '\0')
		{
			set_row(&ps[n++], name, PGT_PROBE_UNAVAILABLE, "none", 0, e->failure);
			continue;
		}
		if (!engine_set_enabled(name))
		{
			st = engine_set_state(name, e->choices, NULL, mech, sizeof(mech),
								  reason, sizeof(reason));
			snprintf(full, sizeof(full), "off: not in --engine-probes%s%s (would use %s)",
					 engine_sets[i].default_on ? "" : ", off by default for its cost",
					 "", mech);
			set_row(&ps[n++], name, PGT_PROBE_UNAVAILABLE, "none", 0, full);
			continue;
		}
		st = engine_set_state(name, e->choices, e->attached, mech, sizeof(mech),
							  reason, sizeof(reason));
		if (strcmp(name, "pg-query") == 0 && st != PGT_PROBE_UNAVAILABLE && !e->qid_ok)
		{
			snprintf(full, sizeof(full), "%s%s%s", e->qid_reason, reason[0] ? "; " : "", reason);
			st = PGT_PROBE_DEGRADED;
		}
		else if (strcmp(name, "pg-locks") == 0 && st == PGT_PROBE_AVAILABLE)
			snprintf(full, sizeof(full), "waits only: hold times need LockAcquire/LockRelease "
					 "pairing, not implemented; LWLock waits in pg-lwlock");
		else
			snprintf(full, sizeof(full), "%s", reason[0] ? reason : "attached");
		set_row(&ps[n++], name, st, mech, e->set_events[i], full);
	}
	return n;
}
