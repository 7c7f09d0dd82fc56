/*
 * test/unit/test_tranche_names.c
 *	  LWLock tranche names read at an address (helper/tranche_names.c),
 *	  with real processes: this program plays the postmaster and a child
 *	  it forks plays a backend.  Before the fork the "postmaster" writes
 *	  its own strings at heap addresses; the child writes other names at
 *	  the same addresses, as a backend's library registered after the fork
 *	  would.  A constant (read-only file data) and a shared page hold the
 *	  same in both.  Then: what names the child's rows while it lives,
 *	  once it has gone, and what the postmaster's memory may name; and
 *	  that nothing is read for a postmaster the helper does not serve.
 */
#include "pid_retire.h"
#include "pm_owner.h"
#include "tranche_names.h"
#include "unit.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static const char constant_name[] = "ConstTranche";

#define ADDR(p)		((uint64_t) (uintptr_t) (p))

/* tranche_name_at into a fresh buffer, returned for the checks. */
static const char *
name_at(uint32_t pm, uint32_t pid, const void *p)
{
	static char buf[64];

	memset(buf, 'x', sizeof(buf));
	tranche_name_at(pm, pid, ADDR(p), buf, sizeof(buf));
	return buf;
}

static void
test_child_names(void)
{
	uint32_t	pm = (uint32_t) getpid();
	char	   *named = malloc(32);		/* named while the child lives */
	char	   *unnamed = malloc(32);	/* first named once it has gone */
	char	   *zeros = calloc(1, 32);
	char	   *unserved = calloc(1, 32);	/* read before the owner is known */
	char	   *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
							  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int			ready[2];
	int			go[2];
	pid_t		child;
	char		c = 0;

	CHECK(named && unnamed && zeros && unserved && shared != MAP_FAILED &&
		  pipe(ready) == 0 && pipe(go) == 0, "set up");
	strcpy(named, "PmHeapString");
	strcpy(unnamed, "PmOtherString");
	strcpy(shared, "SharedTranche");
	child = fork();
	if (child == 0)
	{
		strcpy(named, "ChildTranche");
		strcpy(unnamed, "ChildOther");
		strcpy(zeros, "ChildZeros");
		strcpy(unserved, "ChildUnserved");
		(void) write(ready[1], "r", 1);
		(void) read(go[0], &c, 1);
		_exit(0);
	}
	CHECK(read(ready[0], &c, 1) == 1, "child ready");

	/* no cluster of this postmaster is served: none of its memory is read */
	CHECK(strcmp(name_at(pm, child, unserved), "?") == 0, "unserved: %s",
		  name_at(pm, child, unserved));
	CHECK(pm_owner_set(pm, geteuid()) == 0, "served, as its user's");
	CHECK(strcmp(name_at(pm, child, unserved), "ChildUnserved") == 0, "served: %s",
		  name_at(pm, child, unserved));

	/* while the child lives: its own memory, whatever the postmaster has */
	CHECK(strcmp(name_at(pm, child, named), "ChildTranche") == 0, "live: %s", name_at(pm, child, named));
	CHECK(strcmp(name_at(pm, child, zeros), "ChildZeros") == 0, "live over pm's zeros");
	CHECK(strcmp(name_at(pm, child, constant_name), "ConstTranche") == 0, "a constant");
	/* the postmaster's own row names from its memory */
	CHECK(strcmp(name_at(pm, pm, unnamed), "PmOtherString") == 0, "pm's own row");

	(void) write(go[1], "g", 1);
	(void) waitpid(child, NULL, 0);

	/* gone: the latest read at the address */
	CHECK(strcmp(name_at(pm, child, named), "ChildTranche") == 0, "gone: %s", name_at(pm, child, named));
	CHECK(strcmp(name_at(pm, child, zeros), "ChildZeros") == 0, "gone, read before");
	/* never read while it lived: not the postmaster's private heap */
	CHECK(strcmp(name_at(pm, child, unnamed), "?") == 0, "gone, never read: %s",
		  name_at(pm, child, unnamed));
	/* ... though the postmaster's own row there still reads its string */
	CHECK(strcmp(name_at(pm, pm, unnamed), "PmOtherString") == 0, "pm's own row, again");
	CHECK(strcmp(name_at(pm, child, unnamed), "?") == 0, "and the child's row stays '?'");
	/* shared memory and constants: the postmaster's string is every child's */
	CHECK(strcmp(name_at(pm, child, shared), "SharedTranche") == 0, "shared: %s",
		  name_at(pm, child, shared));
	CHECK(strcmp(name_at(pm, child, constant_name), "ConstTranche") == 0, "a constant, gone");
	/* zeros are no name, even in shared memory */
	CHECK(strcmp(name_at(pm, child, shared + 2048), "?") == 0, "shared zeros: '%s'",
		  name_at(pm, child, shared + 2048));
	/* a folded row (retired pid) reads no process's memory */
	CHECK(strcmp(name_at(pm, PGT_RETIRED_FLAG | (uint32_t) child, named), "ChildTranche") == 0,
		  "folded");
	CHECK(strcmp(name_at(pm, child, (const void *) 8), "?") == 0, "an unmapped address");

	/* forgetting the postmaster drops what was read: then only its shared memory names */
	tranche_names_forget(pm);
	CHECK(strcmp(name_at(pm, child, named), "?") == 0, "forgotten with the postmaster");
	CHECK(strcmp(name_at(pm, pm, named), "PmHeapString") == 0, "pm's row there");
	free(named);
	free(unnamed);
	free(zeros);
	free(unserved);
	pm_owner_forget(pm);
	munmap(shared, 4096);
}

/*
 * A name cut to what a BPF key holds (23 characters) is made whole from
 * the layout's tranche names when exactly one begins with it; by id, the
 * whole name.  Before, SerializablePredicateList read
 * "SerializablePredicateLi", which joins with no pg_stat_activity row.
 */
static void
test_whole_names(void)
{
	pgt_wait_event_name ev[] = {
		{0x01000000 | 40, "LWLock", "SerializablePredicateList"},
		{0x01000000 | 41, "LWLock", "SerializableFinishedList"},
		{0x01000000 | 42, "LWLock", "ExtensionTrancheAlpha_long_1"},
		{0x01000000 | 43, "LWLock", "ExtensionTrancheAlpha_long_2"},
	};
	pgt_layout	l = {.nevents = 4,.events = ev};
	char		name[64];

	tranche_names_keep(7, &l);
	tranche_name_whole(7, "SerializablePredicateLi", name, sizeof(name));
	CHECK_STR(name, "SerializablePredicateList");
	tranche_name_whole(7, "SerializableFinishedLis", name, sizeof(name));
	CHECK_STR(name, "SerializableFinishedList");
	tranche_name_whole(7, "ExtensionTrancheAlpha_l", name, sizeof(name));
	CHECK_STR(name, "ExtensionTrancheAlpha_l");	/* two begin so: left cut */
	tranche_name_whole(8, "SerializablePredicateLi", name, sizeof(name));
	CHECK_STR(name, "SerializablePredicateLi");	/* another postmaster's layout */
	tranche_name_whole(7, "WALInsert", name, sizeof(name));
	CHECK_STR(name, "WALInsert");	/* short names are whole */
	tranche_name_by_id(7, 40, name, sizeof(name));
	CHECK_STR(name, "SerializablePredicateList");
	tranche_names_forget(7);
}

int
main(void)
{
	CHECK(unit_drop_root() == 0, "runs as a plain process");
	test_child_names();
	test_whole_names();
	return UNIT_DONE("test_tranche_names");
}
