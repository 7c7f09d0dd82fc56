/*
 * helper/tranche_names.c
 *	  The names of LWLock tranches in the engine sets' rows.
 *
 * A pg-lwlock-hold row keyed by USDT carries the address of its tranche's
 * name, a string in some process's memory; one keyed by the uprobe
 * fallback carries the tranche id, named from the cluster's layout file.
 * Which memory can be trusted for an address is the subject of
 * tranche_name_at: a postmaster and its children share most of their
 * address space, but not all of it.
 *
 * Single-threaded (the daemon's or the trace command's loop): no locking.
 */
#include "tranche_names.h"

#include "engine.h"
#include "pgt_segment.h"
#include "pid_retire.h"
#include "pm_owner.h"
#include "procfs.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* wait_event_info's class byte of LWLock waits (PG_WAIT_LWLOCK >> 24) */
#define PG_WAIT_LWLOCK_CLASS	0x01U

/* The tranche names of each postmaster's layout, by id (tranche_name_by_id). */
static struct
{
	uint32_t	pm;
	uint16_t	id;
	char		name[PGT_LAYOUT_NAME_LEN];	/* whole, as the layout names it */
}			tranches[1024];
static size_t ntranches;

/* A tranche name read at an address (tranche_name_at). */
typedef struct addr_name
{
	uint32_t	pm;
	uint64_t	addr;
	char		name[ENG_NAME_LEN];
} addr_name;

/* By (postmaster, address), names known to be the same in all its children. */
static addr_name tranche_cache[128];
static size_t ntranche_cache;

/* The latest read from a backend's own memory at each (postmaster,
 * address), or "?": its rows keep the name once it has exited (and folded). */
static addr_name backend_names[64];
static size_t nbackend_names;

#define NAMES_CAP(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * tranche_names_forget
 *		See tranche_names.h: the names of pm's layout and those read at an
 *		address.
 */
void
tranche_names_forget(uint32_t pm)
{
	size_t		i;
	size_t		k = 0;

	for (i = 0; i < ntranches; i++)
		if (tranches[i].pm != pm)
			tranches[k++] = tranches[i];
	ntranches = k;
	for (i = k = 0; i < ntranche_cache; i++)
		if (tranche_cache[i].pm != pm)
			tranche_cache[k++] = tranche_cache[i];
	ntranche_cache = k;
	for (i = k = 0; i < nbackend_names; i++)
		if (backend_names[i].pm != pm)
			backend_names[k++] = backend_names[i];
	nbackend_names = k;
}

/*
 * tranche_names_keep
 *		See tranche_names.h: the wait events of class LWLock in pm's layout
 *		(wait_event_info is PG_WAIT_LWLOCK | tranche id), for the lwlock-hold
 *		rows the uprobe fallback keys by tranche id.
 */
void
tranche_names_keep(uint32_t pm, const pgt_layout *l)
{
	size_t		i;

	tranche_names_forget(pm);
	for (i = 0; i < l->nevents && ntranches < sizeof(tranches) / sizeof(tranches[0]); i++)
	{
		if (l->events[i].info >> 24 != PG_WAIT_LWLOCK_CLASS ||
			(l->events[i].info & 0xffffff) > 0xffff)
			continue;
		tranches[ntranches].pm = pm;
		tranches[ntranches].id = (uint16_t) (l->events[i].info & 0xffff);
		snprintf(tranches[ntranches].name, sizeof(tranches[ntranches].name), "%s",
				 l->events[i].event_name);
		ntranches++;
	}
}

/*
 * tranche_name_by_id
 *		See tranche_names.h.
 */
void
tranche_name_by_id(uint32_t pm, uint32_t id, char *name, size_t len)
{
	size_t		i;

	for (i = 0; i < ntranches; i++)
		if (tranches[i].pm == pm && tranches[i].id == id)
		{
			snprintf(name, len, "%s", tranches[i].name);
			return;
		}
	snprintf(name, len, "tranche %u", id);
}

/*
 * tranche_name_whole
 *		See tranche_names.h.  A name as long as a BPF key holds may have been
 *		cut there (SerializablePredicateList is 25 characters): the one
 *		tranche of pm's layout it begins, when exactly one does.
 */
void
tranche_name_whole(uint32_t pm, const char *cut, char *name, size_t len)
{
	size_t		n = strlen(cut);
	size_t		i;
	int			found = -1;

	snprintf(name, len, "%s", cut);
	if (n != ENG_NAME_LEN - 1)
		return;
	for (i = 0; i < ntranches; i++)
	{
		if (tranches[i].pm != pm || strncmp(tranches[i].name, cut, n) != 0)
			continue;
		if (found >= 0 && strcmp(tranches[found].name, tranches[i].name) != 0)
			return;				/* two candidates: keep the cut name */
		found = (int) i;
	}
	if (found >= 0)
		snprintf(name, len, "%s", tranches[found].name);
}

/*
 * find_name
 *		The entry of (pm, addr) among n, or NULL.
 */
static addr_name *
find_name(addr_name *names, size_t n, uint32_t pm, uint64_t addr)
{
	size_t		i;

	for (i = 0; i < n; i++)
		if (names[i].pm == pm && names[i].addr == addr)
			return &names[i];
	return NULL;
}

/*
 * put_name
 *		Keep name for (pm, addr) among *n of cap entries: in its entry, a
 *		new one, or (full, with replace) the one the address hashes to.
 */
static void
put_name(addr_name *names, size_t *n, size_t cap, int replace, uint32_t pm,
		 uint64_t addr, const char *name)
{
	addr_name  *e = find_name(names, *n, pm, addr);

	if (e == NULL && *n < cap)
		e = &names[(*n)++];
	else if (e == NULL && replace)
		e = &names[addr % cap];
	if (e == NULL)
		return;
	e->pm = pm;
	e->addr = addr;
	snprintf(e->name, sizeof(e->name), "%s", name);
}

/*
 * read_name
 *		The string at addr in the memory of pid, a process of postmaster pm
 *		(/proc/<pid>/mem, which faults the page in where BPF cannot), as
 *		UTF-8; false when unreadable or empty (no tranche has an empty name:
 *		zeros are not one), or pm is not served.
 */
static bool
read_name(uint32_t pm, uint32_t pid, uint64_t addr, char *name, size_t len)
{
	char		buf[ENG_NAME_LEN];
	uid_t		owner;
	ssize_t		n = -1;

	if (pm_owner_get(pm, &owner))
		n = procfs_mem_pread((pid_t) pid, owner, addr, buf, sizeof(buf));
	if (n <= 0 || buf[0] == '\0')
		return false;
	pgt_copy_utf8(name, len, buf, (size_t) n);
	return true;
}

/*
 * shared_with_children
 *		Does every child of postmaster pm see at addr what pm sees there:
 *		pm maps it shared (its shared memory) or read-only from a file (the
 *		executable's and its libraries' constants)?
 */
static bool
shared_with_children(uint32_t pm, uint64_t addr)
{
	procfs_map_kind kind = procfs_map_kind_at((pid_t) pm, addr);

	return kind == PROCFS_MAP_SHARED || kind == PROCFS_MAP_FILE_RO;
}

/*
 * keep_read_name
 *		Keep own, the name read at addr in process pid of postmaster pm (see
 *		tranche_name_at): for every child where pm has the same, else as
 *		the latest read at the address.  A name in pm's own memory is kept
 *		for its children only where they share that memory.
 */
static void
keep_read_name(uint32_t pm, uint32_t pid, uint64_t addr, const char *own)
{
	char		pms[ENG_NAME_LEN];

	if (pid != pm && read_name(pm, pm, addr, pms, sizeof(pms)) && strcmp(own, pms) == 0)
		put_name(tranche_cache, &ntranche_cache, NAMES_CAP(tranche_cache), 0, pm, addr, own);
	else if (pid != pm)
		put_name(backend_names, &nbackend_names, NAMES_CAP(backend_names), 1, pm, addr, own);
	else if (shared_with_children(pm, addr))
		put_name(tranche_cache, &ntranche_cache, NAMES_CAP(tranche_cache), 0, pm, addr, own);
}

/*
 * postmaster_name
 *		The name at addr for a row whose process has gone and that no
 *		process's read named (see tranche_name_at): the postmaster's string
 *		where every child sees what it sees there, else "?".
 */
static void
postmaster_name(uint32_t pm, uint64_t addr, char *name, size_t len)
{
	if (shared_with_children(pm, addr) && read_name(pm, pm, addr, name, len))
		put_name(tranche_cache, &ntranche_cache, NAMES_CAP(tranche_cache), 0, pm, addr, name);
	else
	{
		snprintf(name, len, "?");
		put_name(backend_names, &nbackend_names, NAMES_CAP(backend_names), 1, pm, addr, name);
	}
}

/*
 * tranche_name_at
 *		See tranche_names.h.  The tranche name at address addr in process
 *		pid of postmaster pm (pg-lwlock-hold keys carry the address: see the
 *		BPF side).
 *		Built-in names are in the executable's read-only data and named
 *		tranches in shared memory, at the same address in every process
 *		forked from the postmaster: read in the postmaster, cached by (pm,
 *		address) until it goes.  A tranche a backend registered itself (a
 *		library it loaded after the fork) has its name in that backend's
 *		memory only: read there while it lives (not cached: another backend
 *		may have another string there), and the latest such read at the
 *		address names the rows of a backend gone since.
 *
 * Only what is known to be the same in every child enters the cache: a
 * string the process and the postmaster both have, or, for a row first
 * named after its process has gone, the postmaster's string where it maps
 * the address shared or read-only from a file.  Elsewhere (its heap, an
 * anonymous mapping) the postmaster may hold anything, zeros or another
 * string, where the backend had its library's name: such a row reads "?",
 * kept as the address's latest read until a process read there names it.
 */
void
tranche_name_at(uint32_t pm, uint32_t pid, uint64_t addr, char *name, size_t len)
{
	addr_name  *hit = find_name(tranche_cache, ntranche_cache, pm, addr);

	if (hit == NULL && !PGT_IS_RETIRED(pid) && read_name(pm, pid, addr, name, len))
		keep_read_name(pm, pid, addr, name);
	else if (hit != NULL || (hit = find_name(backend_names, nbackend_names, pm, addr)) != NULL)
		snprintf(name, len, "%s", hit->name);
	else
		postmaster_name(pm, addr, name, len);
}
