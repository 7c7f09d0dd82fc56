/*-------------------------------------------------------------------------
 *
 * wait_event_names.c
 *	  The wait-event id -> name table of the running server, produced by the
 *	  server itself (pgstat_get_wait_event_type / pgstat_get_wait_event),
 *	  for the layout file.  There is deliberately no table of names here.
 *
 * How each class is enumerated:
 *	  LWLock	tranche ids 0 .. LWTRANCHE_FIRST_USER_DEFINED - 1, skipping the
 *				"<unassigned:N>" holes of the individual locks; then the
 *				user-defined tranches this process knows (named tranches
 *				requested at preload time), until a run of ids answers the
 *				"extension" placeholder.
 *	  Lock		lock tag types 0 .. LOCKTAG_LAST_TYPE.
 *	  others	event ids 0, 1, 2, ... until a run of PGT_UNKNOWN_RUN ids
 *				has no name of its own ("unknown wait event", or the same
 *				catch-all name again, as BufferPin and Extension answer).
 *
 * Locking: none.  The names live in constant tables and in this process's
 * copy of the tranche name array.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/lock.h"
#include "storage/lwlock.h"
#include "utils/wait_event.h"

#include "pg_tracer.h"

/* Consecutive nameless ids after which a class is considered finished. */
#define PGT_UNKNOWN_RUN			64

/* Highest event id the 16-bit field can carry. */
#define PGT_MAX_EVENT_ID		0xFFFF

/* Classes whose ids are scanned generically (see the file header). */
static const uint32 pgt_generic_classes[] = {
	PG_WAIT_BUFFER_PIN,
	PG_WAIT_ACTIVITY,
	PG_WAIT_CLIENT,
	PG_WAIT_EXTENSION,
	PG_WAIT_IPC,
	PG_WAIT_TIMEOUT,
	PG_WAIT_IO,
};

/* Accumulator for one enumeration. */
typedef struct EventTable
{
	pgt_wait_event_name *out;
	int			max;
	int			n;
} EventTable;

static bool name_is_usable(const char *name, bool one_word);
static bool table_add(EventTable *t, uint32 info, const char *name);
static void scan_lwlocks(EventTable *t);
static void scan_locks(EventTable *t);
static void scan_generic(EventTable *t, uint32 class_id);

/*
 * pgt_collect_wait_events
 *		Fill out[0..max-1] with every wait event the server names; return
 *		how many.
 */
int
pgt_collect_wait_events(pgt_wait_event_name *out, int max)
{
	EventTable	t;
	int			i;

	t.out = out;
	t.max = max;
	t.n = 0;

	scan_lwlocks(&t);
	scan_locks(&t);
	for (i = 0; i < lengthof(pgt_generic_classes); i++)
		scan_generic(&t, pgt_generic_classes[i]);
	return t.n;
}

/*
 * name_is_usable
 *		Printable ASCII, non-empty, fits the layout format; class names
 *		must also be a single word, and event names have no leading,
 *		trailing or doubled space (the helper's parser splits on single
 *		spaces and refuses the whole file over one such name: an
 *		extension's tranche "my  lock" would leave it without a layout).
 */
static bool
name_is_usable(const char *name, bool one_word)
{
	const char *p;

	if (name == NULL || name[0] == '\0' ||
		strlen(name) >= PGT_LAYOUT_NAME_LEN)
		return false;
	for (p = name; *p; p++)
	{
		if (*p < 0x20 || *p > 0x7e || (one_word && *p == ' '))
			return false;
		if (*p == ' ' && (p == name || p[1] == '\0' || p[1] == ' '))
			return false;
	}
	return true;
}

/*
 * table_add
 *		Append (info, class, name) if both names are usable and there is
 *		room.  Returns whether it was added.
 */
static bool
table_add(EventTable *t, uint32 info, const char *name)
{
	const char *class_name = pgstat_get_wait_event_type(info);
	pgt_wait_event_name *e;

	if (t->n >= t->max ||
		!name_is_usable(class_name, true) || !name_is_usable(name, false))
		return false;

	e = &t->out[t->n++];
	e->info = info;
	strlcpy(e->class_name, class_name, PGT_LAYOUT_NAME_LEN);
	strlcpy(e->event_name, name, PGT_LAYOUT_NAME_LEN);
	return true;
}

/*
 * scan_lwlocks
 *		Built-in tranches, then named tranches registered in this process.
 */
static void
scan_lwlocks(EventTable *t)
{
	uint32		id;
	int			run = 0;

	for (id = 0; id < LWTRANCHE_FIRST_USER_DEFINED; id++)
	{
		const char *name = pgstat_get_wait_event(PG_WAIT_LWLOCK | id);

		if (name != NULL && strncmp(name, "<unassigned", 11) != 0)
			(void) table_add(t, PG_WAIT_LWLOCK | id, name);
	}

	for (id = LWTRANCHE_FIRST_USER_DEFINED;
		 id <= PGT_MAX_EVENT_ID && run < PGT_UNKNOWN_RUN; id++)
	{
		const char *name = pgstat_get_wait_event(PG_WAIT_LWLOCK | id);

		if (name == NULL || strcmp(name, "extension") == 0)
		{
			run++;
			continue;
		}
		run = 0;
		(void) table_add(t, PG_WAIT_LWLOCK | id, name);
	}
}

/*
 * scan_locks
 *		Heavyweight lock tag types.
 */
static void
scan_locks(EventTable *t)
{
	uint32		id;

	for (id = 0; id <= LOCKTAG_LAST_TYPE; id++)
	{
		const char *name = pgstat_get_wait_event(PG_WAIT_LOCK | id);

		if (name != NULL)
			(void) table_add(t, PG_WAIT_LOCK | id, name);
	}
}

/*
 * scan_generic
 *		Ids 0, 1, ... of one class until a run of nameless ids.
 */
static void
scan_generic(EventTable *t, uint32 class_id)
{
	const char *prev = NULL;
	uint32		id;
	int			run = 0;

	for (id = 0; id <= PGT_MAX_EVENT_ID && run < PGT_UNKNOWN_RUN; id++)
	{
		const char *name = pgstat_get_wait_event(class_id | id);

		if (name == NULL || strcmp(name, "unknown wait event") == 0 ||
			(prev != NULL && strcmp(name, prev) == 0))
		{
			run++;
			continue;
		}
		run = 0;
		if (table_add(t, class_id | id, name))
			prev = name;
	}
}
