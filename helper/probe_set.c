/*
 * helper/probe_set.c
 *	  The probe-set registry (linker section "pgt_probe_sets"), the shared
 *	  maps every set's object reuses, the lifecycle of a set of running
 *	  probe sets, segment publication and query-id slots.
 *
 * See probe_set.h for how a set plugs in.  Single-threaded.
 */
#include "probe_set.h"

#include "log.h"
#include "map_copy.h"
#include "pg_symbols.h"
#include "pid_retire.h"
#include "pm_owner.h"
#include "procfs.h"
#include "sort_u32.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bounds of the registry section (provided by the linker). */
extern const probe_set *const __start_pgt_probe_sets[] __attribute__((weak));
extern const probe_set *const __stop_pgt_probe_sets[] __attribute__((weak));

static const probe_set **sorted_sets;
static size_t nsorted;

/* Daemon mode: no stream, so the shared ring buffer can be tiny. */
#define DAEMON_RINGBUF_BYTES	4096

int			pset_query_ids = 1;
uint32_t	pset_stream_bytes = PGT_EVENTS_RINGBUF_BYTES;

#define QID_OFF_REASON	"off (--query-id off): query ids are 0"

/*
 * pset_configure_query_ids
 *		--query-id on|off (see probe_set.h).  Returns 0, or -1 with err.
 */
int
pset_configure_query_ids(const char *arg, char *err, size_t errlen)
{
	if (strcmp(arg, "on") == 0)
		pset_query_ids = 1;
	else if (strcmp(arg, "off") == 0)
		pset_query_ids = 0;
	else
	{
		snprintf(err, errlen, "\"%s\" is neither on nor off", arg);
		return -1;
	}
	return 0;
}

/*
 * pset_configure_stream_bytes
 *		--buffer SIZE (see probe_set.h).  Returns 0, or -1 with err.
 */
int
pset_configure_stream_bytes(const char *arg, char *err, size_t errlen)
{
	static const char units[] = "kmg";	/* << 10, 20, 30 */
	const char *unit;
	char	   *end = NULL;
	unsigned long long v = 0;
	int			shift = 0;
	uint64_t	p2 = 4096;

	errno = 0;
	if (isdigit((unsigned char) arg[0]))
		v = strtoull(arg, &end, 10);
	if (v > 0 && errno == 0 && *end != '\0' && end[1] == '\0' &&
		(unit = strchr(units, tolower((unsigned char) *end))) != NULL)
	{
		shift = 10 * (int) (unit - units + 1);
		end++;
	}
	if (v == 0 || errno != 0 || *end != '\0' || v > ((1ULL << 30) >> shift) ||
		(v << shift) < 4096)
	{
		snprintf(err, errlen, "\"%s\": use a size from 4k to 1g (bytes, or with k, m or g)",
				 arg);
		return -1;
	}
	while (p2 < (v << shift))
		p2 <<= 1;
	pset_stream_bytes = (uint32_t) p2;
	return 0;
}

/*
 * cmp_set
 *		Order of the registry: `order`, then name.
 */
static int
cmp_set(const void *a, const void *b)
{
	const probe_set *x = *(const probe_set *const *) a;
	const probe_set *y = *(const probe_set *const *) b;

	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * load_registry
 *		Sort the registered sets once.
 */
static void
load_registry(void)
{
	size_t		n;

	if (sorted_sets != NULL || __start_pgt_probe_sets == NULL)
		return;
	n = (size_t) (__stop_pgt_probe_sets - __start_pgt_probe_sets);
	sorted_sets = calloc(n ? n : 1, sizeof(*sorted_sets));
	if (sorted_sets == NULL)
		return;
	memcpy(sorted_sets, __start_pgt_probe_sets, n * sizeof(*sorted_sets));
	qsort(sorted_sets, n, sizeof(*sorted_sets), cmp_set);
	nsorted = n;
}

/*
 * pset_count / pset_get / pset_find
 *		The registry, sorted.
 */
size_t
pset_count(void)
{
	load_registry();
	return nsorted;
}

const probe_set *
pset_get(size_t i)
{
	load_registry();
	return i < nsorted ? sorted_sets[i] : NULL;
}

const probe_set *
pset_find(const char *name)
{
	size_t		i;

	load_registry();
	for (i = 0; i < nsorted; i++)
		if (strcmp(sorted_sets[i]->name, name) == 0)
			return sorted_sets[i];
	return NULL;
}

/*
 * pset_parse_list
 *		"a,b,c" or "all" into sets (no duplicates).  Returns 0, or -1 with err
 *		naming the unknown set and the known ones.
 */
int
pset_parse_list(const char *list, const probe_set **out, size_t max, size_t *n,
				char *err, size_t errlen)
{
	char	   *copy = strdup(list);
	char	   *rest = copy;
	char	   *tok;
	size_t		i;

	*n = 0;
	if (copy == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	while ((tok = strsep(&rest, ",")) != NULL)
	{
		const probe_set *s;

		size_t		len;

		while (isspace((unsigned char) *tok))
			tok++;
		/* blanks on either side of a name, as in "syscall , vfs" */
		len = strlen(tok);
		while (len > 0 && isspace((unsigned char) tok[len - 1]))
			tok[--len] = '\0';
		if (*tok == '\0')
		{
			/* "syscall,,block" or a trailing comma: a name left out, say so */
			snprintf(err, errlen, "empty item in the probe set list \"%s\"", list);
			free(copy);
			return -1;
		}
		if (strcmp(tok, "all") == 0)
		{
			for (i = 0; i < pset_count(); i++)
			{
				size_t		j;
				int			dup = 0;

				for (j = 0; j < *n; j++)
					dup |= out[j] == pset_get(i);
				if (!dup && *n < max)
					out[(*n)++] = pset_get(i);
			}
			continue;
		}
		s = pset_find(tok);
		if (s == NULL)
		{
			size_t		off;

			off = (size_t) snprintf(err, errlen, "unknown probe set \"%s\"; known: all", tok);
			for (i = 0; i < pset_count() && off < errlen; i++)
				off += (size_t) snprintf(err + off, errlen - off, ", %s", pset_get(i)->name);
			free(copy);
			return -1;
		}
		for (i = 0; i < *n && out[i] != s; i++)
			;
		if (i == *n && *n < max)
			out[(*n)++] = s;
	}
	free(copy);
	if (*n == 0)
	{
		snprintf(err, errlen, "no probe set named");
		return -1;
	}
	return 0;
}

/*
 * pset_errstr
 *		libbpf's text for a negative error code.
 */
const char *
pset_errstr(int err, char *buf, size_t buflen)
{
	if (libbpf_strerror(err, buf, buflen) != 0)
		snprintf(buf, buflen, "%s", strerror(err < 0 ? -err : err));
	return buf;
}

/*
 * pset_set_status
 *		Fill a set's state, mechanism and reason.
 */
void
pset_set_status(pset_inst *inst, uint32_t state, const char *mechanism,
				const char *fmt,...)
{
	va_list		ap;
	char		mech[sizeof(inst->status.mechanism)];

	/* mechanism may be the status's own (a reason amended, its state kept) */
	snprintf(mech, sizeof(mech), "%s", mechanism);
	inst->status.state = state;
	memcpy(inst->status.mechanism, mech, sizeof(mech));
	va_start(ap, fmt);
	vsnprintf(inst->status.reason, sizeof(inst->status.reason), fmt, ap);
	va_end(ap);
}

/*
 * set_rodata_u8
 *		Before load: the one-byte constant `var` of obj's .rodata, found by
 *		its BTF, becomes value.  Every object including pgt_common.bpf.h has
 *		the shared switches, whatever its skeleton is called.  Returns 0 or
 *		a negative error code (-ENOENT: no such constant).
 */
static int
set_rodata_u8(struct bpf_object *obj, const char *var, uint8_t value)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, ".rodata");
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_type *sec;
	const struct btf_var_secinfo *vs;
	const void *init;
	unsigned char *copy;
	size_t		size = 0;
	int			err;
	int			id;
	int			i;

	if (m == NULL || btf == NULL)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	if (id < 0)
		return -ENOENT;
	sec = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(sec);
	for (i = 0; i < btf_vlen(sec); i++, vs++)
		if (strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, vs->type)->name_off),
				   var) == 0)
			break;
	if (i == btf_vlen(sec))
		return -ENOENT;
	init = bpf_map__initial_value(m, &size);
	if (init == NULL || vs->size != 1 || vs->offset >= size)
		return -EINVAL;
	copy = malloc(size);
	if (copy == NULL)
		return -ENOMEM;
	memcpy(copy, init, size);
	copy[vs->offset] = value;
	err = bpf_map__set_initial_value(m, copy, size);
	free(copy);
	return err;
}

/*
 * The free entries a CPU takes at a time from an LRU hash map's common
 * list (the kernel's LOCAL_FREE_TARGET).  A CPU that runs out while the
 * common list is empty evicts that many of the least recently used
 * entries, even when other CPUs hold free ones: a map that some CPU touched
 * once starts evicting up to 127 entries per such CPU before it is full, 128
 * at a time (seen here: 16,256 of 16,384 entries kept, 128 evicted, with a
 * second CPU's one insert early on).  On a host of many CPUs that is most
 * of a map.
 */
#define PSET_LRU_LOCAL_FREE 128

/*
 * size_lru_map
 *		Give an LRU hash map (common list) of its own the room its CPUs'
 *		free lists may hold, so that it evicts only once its declared
 *		capacity is in use.
 */
static void
size_lru_map(struct bpf_map *m)
{
	int			ncpus;
	int			err;

	if (bpf_map__type(m) != BPF_MAP_TYPE_LRU_HASH ||
		(bpf_map__map_flags(m) & BPF_F_NO_COMMON_LRU) || bpf_map__fd(m) >= 0)
		return;					/* not an LRU of the common kind, or reused */
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return;
	err = bpf_map__set_max_entries(m, bpf_map__max_entries(m) +
								   (uint32_t) ncpus * PSET_LRU_LOCAL_FREE);
	if (err != 0)
		log_debug("map %s keeps its size: %s", bpf_map__name(m), strerror(-err));
}

/*
 * pset_prepare_object
 *		Before load: make obj's `tracked`, `pgt_qid` and `pgt_events` the
 *		shared maps, and its hook chains' program arrays the foundation's
 *		(without chains an object keeps its own, always empty); size its own
 *		LRU maps (size_lru_map); set its `pgt_qid_off`.  Returns 0 or a
 *		negative error code.
 */
int
pset_prepare_object(const pset_ctx *ctx, struct bpf_object *obj)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj)
	{
		const char *name = bpf_map__name(m);
		int			fd = -1;
		int			err;

		if (strcmp(name, "tracked") == 0)
			fd = ctx->tracked_fd;
		else if (strcmp(name, "pgt_qid") == 0)
			fd = ctx->qid_fd;
		else if (strcmp(name, "pgt_events") == 0)
			fd = ctx->events_fd;
		else if (strcmp(name, "pgt_event_drops") == 0)
			fd = ctx->drops_fd;
		else if (ctx->chain != NULL && hook_chain_map_fd(ctx->chain, name) >= 0)
			fd = hook_chain_map_fd(ctx->chain, name);
		else
		{
			size_lru_map(m);
			continue;
		}
		if (fd < 0)
			return -EBADF;
		err = bpf_map__reuse_fd(m, fd);
		if (err != 0)
			return err;
	}
	if (!ctx->qid_off)
		return 0;				/* every object is built with 0 */
	return set_rodata_u8(obj, "pgt_qid_off", 1);
}

/*
 * pset_kprobes_usable
 *		Can kprobes attach here?  1 when the kprobe PMU exists (the kernel
 *		has kprobe events) and kprobes are not disarmed host-wide (debugfs's
 *		kprobes/enabled, where debugfs is mounted: disarmed probes attach
 *		and never fire); reason says which.
 */
int
pset_kprobes_usable(char *reason, size_t len)
{
	struct stat st;
	char		enabled[4] = "";
	FILE	   *f;

	if (stat("/sys/bus/event_source/devices/kprobe", &st) != 0)
	{
		snprintf(reason, len, "no kprobe PMU: kernel built without CONFIG_KPROBE_EVENTS");
		return 0;
	}
	f = fopen("/sys/kernel/debug/kprobes/enabled", "re");
	if (f != NULL)
	{
		if (fgets(enabled, sizeof(enabled), f) == NULL)
			enabled[0] = '\0';
		fclose(f);
	}
	if (enabled[0] == '0')
	{
		snprintf(reason, len, "kprobes disarmed (/sys/kernel/debug/kprobes/enabled is 0)");
		return 0;
	}
	snprintf(reason, len, "kprobe PMU present");
	return 1;
}

/*
 * pset_runtime_start
 *		Create the shared maps and start each set.  A set that cannot run
 *		says so in its status; returns -1 only when nothing can start.
 */
int
pset_runtime_start(pset_runtime *rt, int mode, int stream, int tracked_fd,
				   hook_chain *chain, const probe_set *const *sets, size_t nsets)
{
	size_t		i;

	pset_runtime_init(rt);
	rt->ctx.mode = mode;
	rt->ctx.stream = stream;
	rt->ctx.tracked_fd = tracked_fd;
	rt->ctx.chain = chain;
	rt->ctx.qid_off = !pset_query_ids;
	rt->qid_state = PGT_PROBE_UNAVAILABLE;
	snprintf(rt->qid_reason, sizeof(rt->qid_reason), "%s",
			 rt->ctx.qid_off ? QID_OFF_REASON : "no layout file yet: query ids are 0");
	rt->ctx.kprobes = pset_kprobes_usable(rt->ctx.kprobes_reason,
											sizeof(rt->ctx.kprobes_reason));
	rt->insts = calloc(nsets ? nsets : 1, sizeof(*rt->insts));
	if (rt->insts == NULL)
		return -1;
	if (tracked_fd >= 0)
	{
		rt->ctx.qid_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "pgt_qid", sizeof(__u32),
										sizeof(struct pgt_qid_slot),
										PGT_BPF_MAX_TRACKED, NULL);
		rt->ctx.events_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "pgt_events", 0, 0,
										   stream ? pset_stream_bytes
										   : DAEMON_RINGBUF_BYTES, NULL);
		rt->ctx.drops_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "pgt_event_drops",
										  sizeof(__u32), sizeof(__u64), 1, NULL);
		if (rt->ctx.qid_fd < 0 || rt->ctx.events_fd < 0 || rt->ctx.drops_fd < 0)
			log_warn("probe sets: cannot create shared maps: %s", strerror(errno));
	}
	for (i = 0; i < nsets; i++)
		if (sets[i]->id < 64)
			rt->ctx.selected |= UINT64_C(1) << sets[i]->id;
	for (i = 0; i < nsets; i++)
	{
		pset_inst  *in = &rt->insts[rt->ninsts++];
		char		ebuf[128];

		in->set = sets[i];
		if (tracked_fd < 0 || rt->ctx.qid_fd < 0 || rt->ctx.events_fd < 0 ||
			rt->ctx.drops_fd < 0)
		{
			pset_set_status(in, PGT_PROBE_UNAVAILABLE, "none",
							"the pid filter (BPF) is unavailable");
			continue;
		}
		if (in->set->start(in, &rt->ctx) < 0)
			pset_set_status(in, PGT_PROBE_UNAVAILABLE, in->status.mechanism,
							"start failed: %s", pset_errstr(-ENOMEM, ebuf, sizeof(ebuf)));
		log_info("probe set %s: %s (%s)", in->set->name,
				 pgt_probe_state_name(in->status.state), in->status.reason);
	}
	return 0;
}

/*
 * pset_runtime_init
 *		An empty runtime whose maps read as not created, so that
 *		pset_runtime_stop closes nothing it does not own (a zeroed one
 *		would close descriptor 0).
 */
void
pset_runtime_init(pset_runtime *rt)
{
	memset(rt, 0, sizeof(*rt));
	rt->ctx.tracked_fd = rt->ctx.qid_fd = rt->ctx.events_fd = rt->ctx.drops_fd = -1;
}

/*
 * pset_runtime_stop
 *		Stop every set, close the shared maps.
 */
void
pset_runtime_stop(pset_runtime *rt)
{
	size_t		i;

	for (i = 0; i < rt->ninsts; i++)
		if (rt->insts[i].set->stop)
			rt->insts[i].set->stop(&rt->insts[i]);
	free(rt->insts);
	rt->insts = NULL;
	rt->ninsts = 0;
	if (rt->ctx.qid_fd >= 0)
		close(rt->ctx.qid_fd);
	if (rt->ctx.events_fd >= 0)
		close(rt->ctx.events_fd);
	if (rt->ctx.drops_fd >= 0)
		close(rt->ctx.drops_fd);
	rt->ctx.qid_fd = rt->ctx.events_fd = rt->ctx.drops_fd = -1;
	free(rt->sweep_qpids);
	free(rt->sweep_slots);
	free(rt->sweep_tpids);
	free(rt->sweep_tracked);
	rt->sweep_qpids = rt->sweep_tpids = NULL;
	rt->sweep_slots = NULL;
	rt->sweep_tracked = NULL;
}

/*
 * pset_runtime_lost_events
 *		The records every CPU failed to put into the stream's ring buffer.
 */
uint64_t
pset_runtime_lost_events(const pset_runtime *rt)
{
	int			ncpus = libbpf_num_possible_cpus();
	uint64_t   *per_cpu;
	uint64_t	sum = 0;
	uint32_t	zero = 0;
	int			i;

	if (rt->ctx.drops_fd < 0 || ncpus <= 0)
		return 0;
	per_cpu = calloc((size_t) ncpus, sizeof(*per_cpu));
	if (per_cpu == NULL)
		return 0;
	if (bpf_map_lookup_elem(rt->ctx.drops_fd, &zero, per_cpu) == 0)
		for (i = 0; i < ncpus; i++)
			sum += per_cpu[i];
	free(per_cpu);
	return sum;
}

/*
 * sweep_buffers
 *		Allocate (once; freed at stop) the copies of `pgt_qid` and `tracked`
 *		that the sweep and the refresh compare.  0 when memory is short.
 */
static int
sweep_buffers(pset_runtime *rt)
{
	if (rt->sweep_qpids == NULL)
		rt->sweep_qpids = malloc(PGT_BPF_MAX_TRACKED * sizeof(uint32_t));
	if (rt->sweep_slots == NULL)
		rt->sweep_slots = malloc(PGT_BPF_MAX_TRACKED * sizeof(struct pgt_qid_slot));
	if (rt->sweep_tpids == NULL)
		rt->sweep_tpids = malloc(PGT_BPF_MAX_TRACKED * sizeof(uint32_t));
	if (rt->sweep_tracked == NULL)
		rt->sweep_tracked = malloc(PGT_BPF_MAX_TRACKED * sizeof(struct pgt_tracked));
	return rt->sweep_qpids && rt->sweep_slots && rt->sweep_tpids && rt->sweep_tracked;
}

/*
 * sweep_qid_slots
 *		Remove the `pgt_qid` slots of processes that left `tracked` (they
 *		exited): nothing else does, and with connection churn the map
 *		would fill up and new backends get no slot (query ids 0).  At most
 *		once a second; a slot is only ever made for a tracked process, so
 *		one that is not tracked is dead.
 *
 * Both maps are copied in batches and compared in memory: a few system
 * calls a second, not two per backend.  A slot whose pid the copy of
 * `tracked` lacks is looked up once more before it goes, since a batch
 * copy of a map that changes meanwhile may miss an entry.  A postmaster's
 * indirect slot stays while the postmaster lives: `trace --pid BACKEND`
 * does not track the postmaster, whose slot its parallel workers need.
 */
static void
sweep_qid_slots(pset_runtime *rt)
{
	static int64_t last_us;
	int64_t		now = procfs_monotonic_us();
	size_t		nq;
	size_t		nt;
	size_t		i;

	if (rt->ctx.qid_fd < 0 || rt->ctx.tracked_fd < 0 || now - last_us < 1000000)
		return;
	last_us = now;
	if (!sweep_buffers(rt))
		return;					/* retried next second */
	/* slots first: a slot's process entered the filter before its slot */
	nq = map_copy(rt->ctx.qid_fd, sizeof(uint32_t), sizeof(struct pgt_qid_slot),
				  rt->sweep_qpids, rt->sweep_slots, PGT_BPF_MAX_TRACKED);
	nt = map_copy(rt->ctx.tracked_fd, sizeof(uint32_t), sizeof(struct pgt_tracked),
				  rt->sweep_tpids, rt->sweep_tracked, PGT_BPF_MAX_TRACKED);
	qsort(rt->sweep_tpids, nt, sizeof(uint32_t), sort_cmp_u32);
	for (i = 0; i < nq; i++)
	{
		uint32_t	pid = rt->sweep_qpids[i];
		struct pgt_tracked t;

		if (bsearch(&pid, rt->sweep_tpids, nt, sizeof(uint32_t), sort_cmp_u32) != NULL)
			continue;
		if ((rt->sweep_slots[i].flags & PGT_QID_INDIRECT) &&
			(kill((pid_t) pid, 0) == 0 || errno == EPERM))
			continue;
		if (bpf_map_lookup_elem(rt->ctx.tracked_fd, &pid, &t) != 0 && errno == ENOENT)
			(void) bpf_map_delete_elem(rt->ctx.qid_fd, &pid);
	}
}

/*
 * pset_runtime_collect
 *		Every running set copies its aggregates; slots of exited processes
 *		go.
 */
void
pset_runtime_collect(pset_runtime *rt)
{
	size_t		i;

	sweep_qid_slots(rt);

	for (i = 0; i < rt->ninsts; i++)
		if (rt->insts[i].status.state != PGT_PROBE_UNAVAILABLE && rt->insts[i].set->collect)
			rt->insts[i].set->collect(&rt->insts[i]);
}

/*
 * pset_runtime_tracked
 *		The pid filter took in processes found in /proc: the running sets
 *		that keep per-task state may have to make theirs (kset_tracked).
 */
void
pset_runtime_tracked(pset_runtime *rt)
{
	size_t		i;

	for (i = 0; i < rt->ninsts; i++)
		if (rt->insts[i].status.state != PGT_PROBE_UNAVAILABLE && rt->insts[i].set->tracked)
			rt->insts[i].set->tracked(&rt->insts[i]);
}

/*
 * pset_runtime_reset
 *		pg_tracer_reset() of the cluster whose postmaster is postmaster
 *		(host pid): every running set that can drops that cluster's rows
 *		(and with shared, the rows every cluster shows), then all copy their
 *		aggregates again, so that the next publication counts from now.
 *		Returns the rows dropped; *nsets, the sets told.
 */
size_t
pset_runtime_reset(pset_runtime *rt, uint32_t postmaster, int shared, int *nsets)
{
	size_t		rows = 0;
	size_t		i;

	*nsets = 0;
	if (postmaster == 0)
		return 0;
	for (i = 0; i < rt->ninsts; i++)
		if (rt->insts[i].status.state != PGT_PROBE_UNAVAILABLE && rt->insts[i].set->reset)
		{
			rows += rt->insts[i].set->reset(&rt->insts[i], postmaster, shared);
			(*nsets)++;
		}
	if (*nsets > 0)
		pset_runtime_collect(rt);
	return rows;
}

/*
 * pset_runtime_find
 *		The running set with id, or NULL.
 */
pset_inst *
pset_runtime_find(pset_runtime *rt, uint16_t id)
{
	size_t		i;

	for (i = 0; i < rt->ninsts; i++)
		if (rt->insts[i].set->id == id)
			return &rt->insts[i];
	return NULL;
}

/*
 * pset_runtime_hold
 *		Hold (1) or let run again (0) every running set that can be held
 *		(the kernel sets).  Returns how many sets were told.
 */
int
pset_runtime_hold(pset_runtime *rt, int hold)
{
	size_t		i;
	int			n = 0;

	for (i = 0; i < rt->ninsts; i++)
	{
		pset_inst  *in = &rt->insts[i];

		if (in->set->hold == NULL || in->status.state == PGT_PROBE_UNAVAILABLE)
			continue;
		in->set->hold(in, hold);
		n++;
	}
	return n;
}

/*
 * table_add
 *		Append one row of `size` bytes to t.
 */
static int
table_add(pset_table_rows *t, const void *row, size_t size)
{
	if (t->size != 0 && t->size != size)
		return -1;
	if (t->count == t->cap)
	{
		uint32_t	ncap = t->cap ? t->cap * 2 : 256;
		unsigned char *n = realloc(t->rows, (size_t) ncap * size);

		if (n == NULL)
			return -1;
		t->rows = n;
		t->cap = ncap;
	}
	t->size = (uint32_t) size;
	memcpy(t->rows + (size_t) t->count * size, row, size);
	t->count++;
	return 0;
}

/*
 * pset_pub_add
 *		Append one row of `size` bytes (the table's row struct) to kind.
 */
int
pset_pub_add(pset_pub *pub, uint32_t kind, const void *row, size_t size)
{
	if (kind >= PGT_SEC_KIND_MAX)
		return -1;
	return table_add(&pub->tables[kind], row, size);
}

/*
 * pset_pub_add_pid
 *		pset_pub_add for a row of host pid.  Whichever set adds them, the
 *		rows of live processes (and the kernel's) come first, then the rows
 *		exited processes were folded into (pid NULL in SQL), then those of
 *		processes that have just exited (pid_retire_exiting): a table too
 *		small for a burst of exits, or for the folded rows of a long
 *		history of them, leaves out those rather than a live process's
 *		rows, which pg_stat_activity can still join.
 */
int
pset_pub_add_pid(pset_pub *pub, uint32_t kind, const void *row, size_t size,
				 uint32_t pid)
{
	if (kind >= PGT_SEC_KIND_MAX)
		return -1;
	if (PGT_IS_RETIRED(pid))
		return table_add(&pub->folded[kind], row, size);
	if (pid_retire_exiting(pid))
		return table_add(&pub->late[kind], row, size);
	return table_add(&pub->tables[kind], row, size);
}

/*
 * pset_pub_nspid
 *		The pid PostgreSQL (and pg_stat_activity) knows pid by; 0 stays 0
 *		and a folded row's pid becomes PGT_PID_EXITED (pid_retire.h).
 */
uint32_t
pset_pub_nspid(const pset_pub *pub, uint32_t pid)
{
	if (pid == 0)
		return 0;				/* the kernel's rows */
	if (PGT_IS_RETIRED(pid))
		return PGT_PID_EXITED;	/* folded rows of exited processes */
	return pub->nspid ? pub->nspid(pub->nspid_arg, pid) : pid;
}

/*
 * pset_pub_role
 *		The backend role (PGT_ROLE_*) of host pid's rows: a folded row's is
 *		in its pid (kernel sets: PGT_RETIRED_PID_ROLE), the kernel's (pid 0)
 *		none; 0 where not known.
 */
uint32_t
pset_pub_role(const pset_pub *pub, uint32_t pid)
{
	if (pid == 0)
		return 0;
	if (PGT_IS_RETIRED(pid))
		return PGT_RETIRED_ROLE(pid);
	return pub->role ? pub->role(pub->nspid_arg, pid) : pid_retire_role(pid);
}

void
pset_pub_reset(pset_pub *pub)
{
	uint32_t	k;

	for (k = 0; k < PGT_SEC_KIND_MAX; k++)
		pub->tables[k].count = pub->folded[k].count = pub->late[k].count = 0;
}

void
pset_pub_free(pset_pub *pub)
{
	uint32_t	k;

	for (k = 0; k < PGT_SEC_KIND_MAX; k++)
	{
		free(pub->tables[k].rows);
		free(pub->folded[k].rows);
		free(pub->late[k].rows);
		memset(&pub->tables[k], 0, sizeof(pub->tables[k]));
		memset(&pub->folded[k], 0, sizeof(pub->folded[k]));
		memset(&pub->late[k], 0, sizeof(pub->late[k]));
	}
}

/*
 * append_rows
 *		Append every row of from to t.
 */
static void
append_rows(pset_table_rows *t, const pset_table_rows *from)
{
	uint32_t	i;

	for (i = 0; i < from->count; i++)
		(void) table_add(t, from->rows + (size_t) i * from->size, from->size);
}

/*
 * pset_runtime_publish
 *		Every running set adds its rows for pub->postmaster; the rows of
 *		exited processes follow the others (pset_pub_add_pid).
 */
void
pset_runtime_publish(pset_runtime *rt, pset_pub *pub)
{
	size_t		i;
	uint32_t	k;

	pset_pub_reset(pub);
	for (i = 0; i < rt->ninsts; i++)
		if (rt->insts[i].status.state != PGT_PROBE_UNAVAILABLE && rt->insts[i].set->publish)
			rt->insts[i].set->publish(&rt->insts[i], pub);
	for (k = 0; k < PGT_SEC_KIND_MAX; k++)
	{
		append_rows(&pub->tables[k], &pub->folded[k]);
		append_rows(&pub->tables[k], &pub->late[k]);
	}
}

/*
 * status_reason
 *		A set's pg_tracer_probes reason: its note first (the reason is
 *		often long enough to fill the field), then its status reason, cut
 *		to fit.
 */
static void
status_reason(char *out, size_t len, const pset_inst *in)
{
	size_t		l = 0;
	size_t		r = strlen(in->status.reason);

	if (in->note[0])
		l = (size_t) snprintf(out, len, "%s; ", in->note);
	if (l >= len)
		return;
	if (r > len - 1 - l)
		r = len - 1 - l;
	memcpy(out + l, in->status.reason, r);
	out[l + r] = '\0';
}

/*
 * pset_runtime_status_rows
 *		One pg_tracer_probes row per set (plus "queryid" tagging).
 */
size_t
pset_runtime_status_rows(pset_runtime *rt, struct pgt_probeset_entry *out, size_t max)
{
	size_t		n = 0;
	size_t		i;

	for (i = 0; i < rt->ninsts && n < max; i++, n++)
	{
		pset_inst  *in = &rt->insts[i];

		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].name, sizeof(out[n].name), "%s", in->set->name);
		out[n].state = in->status.state;
		out[n].events = in->events;
		snprintf(out[n].mechanism, sizeof(out[n].mechanism), "%s",
				 in->status.mechanism[0] ? in->status.mechanism : "none");
		status_reason(out[n].reason, sizeof(out[n].reason), in);
	}
	if (rt->ninsts > 0 && n < max)
	{
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].name, sizeof(out[n].name), "queryid-tagging");
		out[n].state = rt->qid_state;
		snprintf(out[n].mechanism, sizeof(out[n].mechanism), "layout+/proc/pid/mem");
		snprintf(out[n].reason, sizeof(out[n].reason), "%s", rt->qid_reason);
		n++;
	}
	return n;
}

/* An entry of an array (PGPROC, BackendStatusArray, a map's copy) by pid. */
typedef struct pid_slot
{
	uint32_t	pid;			/* PostgreSQL's in its arrays, the host's in pgt_qid;
								 * first: the sort key (sort_u32.h) */
	uint32_t	slot;			/* the entry's index */
} pid_slot;

/*
 * index_slots
 *		The entries of a copied array (count entries of stride bytes) whose
 *		int32 at pid_off is a pid, sorted by pid; malloc'd into *out.
 *		Returns how many, or -1 when memory is short.  A refresh looks every
 *		backend up in the arrays: sorted, that is n log n, not n squared.
 */
static ssize_t
index_slots(const unsigned char *buf, uint32_t count, size_t stride, size_t pid_off,
			pid_slot **out)
{
	pid_slot   *idx = malloc((count > 0 ? count : 1) * sizeof(*idx));
	size_t		n = 0;
	uint32_t	s;

	*out = idx;
	if (idx == NULL)
		return -1;
	for (s = 0; s < count; s++)
	{
		int32_t		pid;

		memcpy(&pid, buf + (size_t) s * stride + pid_off, sizeof(pid));
		if (pid > 0)
			idx[n++] = (pid_slot) {(uint32_t) pid, s};
	}
	qsort(idx, n, sizeof(*idx), sort_cmp_u32);
	return (ssize_t) n;
}

/*
 * find_slot
 *		The slot of pid in an index from index_slots, or -1.
 */
static int64_t
find_slot(const pid_slot *idx, size_t n, uint32_t pid)
{
	pid_slot	key = {pid, 0};
	const pid_slot *hit = n > 0 ? bsearch(&key, idx, n, sizeof(*idx), sort_cmp_u32) : NULL;

	return hit != NULL ? (int64_t) hit->slot : -1;
}

/*
 * index_procs
 *		The cluster's PGPROC array (ProcGlobal->allProcs, from the layout
 *		file), read from the postmaster's memory and indexed by pid: where
 *		each process's wait_event_info is.  0 entries when the layout has no
 *		PGPROC array, it cannot be read or its postmaster is not served
 *		(slots then have no wait address).
 */
static size_t
index_procs(pid_t postmaster, const pgt_layout *layout, pid_slot **out)
{
	unsigned char *buf;
	size_t		len;
	ssize_t		n;
	uid_t		owner;

	*out = NULL;
	if (!pm_owner_get((uint32_t) postmaster, &owner) ||
		layout->proc_array == 0 || layout->proc_stride == 0 || layout->proc_count == 0 ||
		layout->proc_count > 1000000 || layout->proc_off_pid + 4 > layout->proc_stride ||
		layout->proc_off_wait_event_info + 4 > layout->proc_stride)
		return 0;
	len = (size_t) layout->proc_count * layout->proc_stride;
	buf = malloc(len);
	if (buf == NULL || procfs_mem_read(postmaster, owner, layout->proc_array, buf, len) != 0)
	{
		free(buf);
		return 0;
	}
	n = index_slots(buf, layout->proc_count, layout->proc_stride, layout->proc_off_pid, out);
	free(buf);
	return n > 0 ? (size_t) n : 0;
}

/*
 * index_old_slots
 *		Copy `pgt_qid` (in batches, into the sweep's buffers) and index the
 *		copy by pid: the slots a refresh compares with, without a lookup
 *		per backend.  0 entries when the buffers cannot be had.
 */
static size_t
index_old_slots(pset_runtime *rt, pid_slot **out)
{
	size_t		n;
	size_t		i;

	*out = NULL;
	if (!sweep_buffers(rt))
		return 0;
	n = map_copy(rt->ctx.qid_fd, sizeof(uint32_t), sizeof(struct pgt_qid_slot),
				 rt->sweep_qpids, rt->sweep_slots, PGT_BPF_MAX_TRACKED);
	*out = malloc((n > 0 ? n : 1) * sizeof(**out));
	if (*out == NULL)
		return 0;
	for (i = 0; i < n; i++)
		(*out)[i] = (pid_slot) {rt->sweep_qpids[i], (uint32_t) i};
	qsort(*out, n, sizeof(**out), sort_cmp_u32);
	return n;
}

/*
 * indirect_leader_fields
 *		Where a new child finds its MyBgworkerEntry, so that BPF can point a
 *		parallel worker's slot at its leader (PGT_QID_LEADER).  Left 0 (each
 *		worker keeps its own id) when the layout file predates its
 *		bgworker_offsets line or the binary does not export the variable.
 */
static void
indirect_leader_fields(pid_t postmaster, const pgt_layout *layout, struct pgt_qid_slot *slot)
{
	uint64_t	addr;
	char		err[256];

	if (layout->bgw_size == 0)
	{
		log_debug("query ids: layout file without bgworker_offsets: parallel workers "
				  "keep their own query ids");
		return;
	}
	if (pg_symbol_addr(postmaster, "MyBgworkerEntry", &addr, err, sizeof(err)) < 0)
	{
		log_debug("query ids: no MyBgworkerEntry in postmaster %d (%s): parallel "
				  "workers keep their own query ids", (int) postmaster, err);
		return;
	}
	slot->bgw_addr = addr;
	slot->bgw_off_type = layout->bgw_off_type;
	slot->bgw_off_notify_pid = layout->bgw_off_notify_pid;
}

/*
 * install_indirect
 *		Once per postmaster: a PGT_QID_INDIRECT slot keyed by its pid, so a
 *		new backend's first events carry its query id, and its first waits
 *		are timed, before the next refresh maps it (needs the exported
 *		MyBEEntry, and my_wait_event_info for the waits; silently skipped
 *		when the binary does not export them: the refresh still works).
 */
static void
install_indirect(pset_runtime *rt, pid_t postmaster, const pgt_layout *layout)
{
	struct pgt_qid_slot slot;
	uint32_t	key = (uint32_t) postmaster;
	uint64_t	addr;
	char		err[256];

	if (bpf_map_lookup_elem(rt->ctx.qid_fd, &key, &slot) == 0 &&
		(slot.flags & PGT_QID_INDIRECT))
		return;
	if (pg_symbol_addr(postmaster, "MyBEEntry", &addr, err, sizeof(err)) < 0)
	{
		log_debug("query ids: no MyBEEntry in postmaster %d (%s): new backends "
				  "are tagged from the next refresh", (int) postmaster, err);
		return;
	}
	memset(&slot, 0, sizeof(slot));
	slot.flags = PGT_QID_INDIRECT;
	slot.queryid_addr = addr;
	slot.procpid_addr = layout->beentry_off_query_id;
	slot.nspid = layout->beentry_off_procpid;
	if (pg_symbol_addr(postmaster, "my_wait_event_info", &addr, err, sizeof(err)) == 0)
		slot.wait_addr = addr;
	else
		log_debug("query ids: no my_wait_event_info in postmaster %d (%s): a new "
				  "backend's waits are timed from the next refresh", (int) postmaster, err);
	indirect_leader_fields(postmaster, layout, &slot);
	if (bpf_map_update_elem(rt->ctx.qid_fd, &key, &slot, BPF_ANY) != 0)
		log_warn("query ids: cannot install the MyBEEntry slot: %s", strerror(errno));
	else
		log_debug("query ids: MyBEEntry of postmaster %d at 0x%llx", (int) postmaster,
				  (unsigned long long) slot.queryid_addr);
}

/*
 * keep_old_slot
 *		Compare pid's new slot with the one in place (from the copy, or
 *		looked up when the copy lacks it: a batch copy of a changing map may
 *		miss an entry).  true when it did not move: nothing to write.  When
 *		only the wait address was added (BPF made the slot without it), the
 *		last id read in the process's context stays in the new one, for
 *		programs in other contexts.  A parallel worker's slot that BPF
 *		pointed at its leader (PGT_QID_LEADER) stays pointed there.
 */
static int
keep_old_slot(pset_runtime *rt, const pid_slot *old, size_t nold, uint32_t pid,
			  struct pgt_qid_slot *slot)
{
	int64_t		o = find_slot(old, nold, pid);
	struct pgt_qid_slot cur;

	if (o >= 0)
		cur = rt->sweep_slots[o];
	else if (bpf_map_lookup_elem(rt->ctx.qid_fd, &pid, &cur) != 0)
		return 0;
	if (cur.flags & PGT_QID_LEADER)
	{
		/*
		 * A parallel worker reading its leader's id: BPF chose, keep it.
		 * It cannot outlive the worker: the sweep drops the slot within a
		 * second of the exit, and pids are handed out cyclically, so no new
		 * process gets this pid (and the slot) in between.
		 */
		slot->procpid_addr = cur.procpid_addr;
		slot->queryid_addr = cur.queryid_addr;
		slot->nspid = cur.nspid;
		slot->flags = cur.flags;
	}
	if (cur.queryid_addr != slot->queryid_addr || cur.nspid != slot->nspid)
		return 0;
	if (cur.wait_addr == slot->wait_addr)
		return 1;
	slot->last_qid = cur.last_qid;
	return 0;
}

/*
 * layout_has_beentries
 *		Does the layout describe a BackendStatusArray that can be indexed
 *		(its entries large enough for the fields read)?
 */
static int
layout_has_beentries(const pgt_layout *layout)
{
	return layout != NULL && layout->beentry_array != 0 && layout->beentry_stride != 0 &&
		layout->beentry_count != 0 && layout->beentry_count <= 1000000 &&
		layout->beentry_off_procpid + 4 <= layout->beentry_stride &&
		layout->beentry_off_query_id + 8 <= layout->beentry_stride;
}

/*
 * read_beentries
 *		Read the postmaster's BackendStatusArray and index its slots by pid
 *		into *be.  Returns their count, or -1 (qid state set when the memory
 *		cannot be read).
 */
static ssize_t
read_beentries(pset_runtime *rt, pid_t postmaster, const pgt_layout *layout, pid_slot **be)
{
	size_t		len = (size_t) layout->beentry_count * layout->beentry_stride;
	unsigned char *buf = malloc(len);
	ssize_t		got = -1;
	ssize_t		nbe;
	uid_t		owner;

	if (buf == NULL)
		return -1;
	errno = ESRCH;				/* a postmaster the helper no longer serves */
	if (pm_owner_get((uint32_t) postmaster, &owner))
		got = procfs_mem_pread(postmaster, owner, layout->beentry_array, buf, len);
	if (got != (ssize_t) len)
	{
		rt->qid_state = PGT_PROBE_DEGRADED;
		snprintf(rt->qid_reason, sizeof(rt->qid_reason),
				 "cannot read BackendStatusArray in /proc/%d/mem: %s", (int) postmaster,
				 got < 0 ? strerror(errno) : "short read");
		free(buf);
		return -1;
	}
	nbe = index_slots(buf, layout->beentry_count, layout->beentry_stride,
					  layout->beentry_off_procpid, be);
	free(buf);
	return nbe;
}

/*
 * build_slot
 *		The `pgt_qid` slot of the process nspid: the addresses of its
 *		PgBackendStatus fields (be: the array's slots by pid) and of its
 *		PGPROC's wait_event_info (procs, when found).  Returns -1 when it
 *		has no PgBackendStatus.
 */
static int
build_slot(const pgt_layout *layout, const pid_slot *be, size_t nbe, const pid_slot *procs,
		   size_t nprocs, uint32_t nspid, struct pgt_qid_slot *slot)
{
	int64_t		s = find_slot(be, nbe, nspid);
	uint64_t	entry;

	if (s < 0)
		return -1;
	entry = layout->beentry_array + (uint64_t) s * layout->beentry_stride;
	memset(slot, 0, sizeof(*slot));
	slot->procpid_addr = entry + layout->beentry_off_procpid;
	slot->queryid_addr = entry + layout->beentry_off_query_id;
	slot->nspid = nspid;
	s = find_slot(procs, nprocs, nspid);
	if (s >= 0)
		slot->wait_addr = layout->proc_array + (uint64_t) s * layout->proc_stride +
			layout->proc_off_wait_event_info;
	return 0;
}

/*
 * pset_qid_refresh
 *		Read the cluster's BackendStatusArray from the postmaster's memory
 *		(shared memory sits at the same address in every process) and point
 *		each pid's `pgt_qid` slot at its PgBackendStatus.  Entries of the
 *		given pids that are not found are removed.  Returns the number of
 *		pids mapped, or -1 when the array cannot be read.
 */
int
pset_qid_refresh(pset_runtime *rt, pid_t postmaster, const pgt_layout *layout,
				 const uint32_t *pids, const uint32_t *nspids, size_t npids)
{
	pid_slot   *be = NULL;
	pid_slot   *procs = NULL;
	pid_slot   *old = NULL;
	size_t		nprocs;
	size_t		nold;
	ssize_t		nbe;
	int			mapped = 0;
	size_t		i;

	if (rt->ctx.qid_fd < 0)
		return -1;
	if (layout != NULL)
		install_indirect(rt, postmaster, layout);
	if (!layout_has_beentries(layout))
	{
		rt->qid_state = PGT_PROBE_UNAVAILABLE;
		snprintf(rt->qid_reason, sizeof(rt->qid_reason),
				 "no usable layout file (extension not preloaded): query ids are 0");
		return -1;
	}
	nbe = read_beentries(rt, postmaster, layout, &be);
	if (nbe < 0)
		return -1;
	nprocs = index_procs(postmaster, layout, &procs);
	nold = index_old_slots(rt, &old);
	for (i = 0; i < npids; i++)
	{
		struct pgt_qid_slot slot;

		if (pids[i] == (uint32_t) postmaster)
			continue;			/* its key holds the MyBEEntry slot */
		if (build_slot(layout, be, (size_t) nbe, procs, nprocs, nspids[i], &slot) < 0)
		{
			(void) bpf_map_delete_elem(rt->ctx.qid_fd, &pids[i]);
			continue;
		}
		if (keep_old_slot(rt, old, nold, pids[i], &slot))
			continue;
		if (bpf_map_update_elem(rt->ctx.qid_fd, &pids[i], &slot, BPF_ANY) == 0)
			mapped++;
	}
	free(be);
	free(procs);
	free(old);
	if (rt->ctx.qid_off)
		return mapped;			/* slots for wait_addr; state stays "off" */
	rt->qid_state = PGT_PROBE_AVAILABLE;
	snprintf(rt->qid_reason, sizeof(rt->qid_reason),
			 "st_query_id of BackendStatusArray (pg %u); 0 when compute_query_id is off",
			 layout->pg_version_num);
	return mapped;
}
