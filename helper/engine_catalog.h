/*
 * helper/engine_catalog.h
 *	  The engine probe sets (pg-query, pg-locks, pg-lwlock, pg-wal,
 *	  pg-buffer, pg-checkpoint, pg-usdt), the probe points each needs, and
 *	  the choice of mechanism per point for a given binary: the USDT probe
 *	  when the binary has it, else a uprobe on an exported or debug-symbol
 *	  function, else nothing (with the reason).  Shared by `inspect` and the
 *	  daemon's attach logic, so both report the same choice.
 */
#ifndef PGT_HELPER_ENGINE_CATALOG_H
#define PGT_HELPER_ENGINE_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "elf_inspect.h"

#define ENGINE_USDT_PROVIDER	"postgresql"

/* How a point is attached. */
typedef enum engine_mech
{
	ENGINE_MECH_NONE = 0,
	ENGINE_MECH_USDT,			/* libbpf USDT (arguments by libbpf) */
	ENGINE_MECH_USDT_SITE,		/* uprobe at the note's address + semaphore */
	ENGINE_MECH_UPROBE,			/* uprobe on the fallback function */
	ENGINE_MECH_URETPROBE		/* uretprobe on the fallback function */
} engine_mech;

typedef struct engine_point
{
	const char *set;			/* "pg-query", ... */
	int			group;			/* points of a group use one mechanism family */
	const char *usdt;			/* USDT probe name, NULL: none marks the point */
	const char *usdt_prog;		/* BPF program for the USDT */
	const char *site_prog;		/* BPF program at the note address (args we evaluate) */
	const char *func;			/* fallback function, NULL: none */
	int			func_ret;		/* fallback is a uretprobe */
	const char *func_prog;		/* BPF program for the fallback */
	int			optional;		/* the set runs (degraded) without it */
	int			fallback_only;	/* only with the function fallback (no USDT twin) */
	int			companion;		/* a function probe that goes with its group
								 * whichever family times it (optional) */
	const char *needs;			/* a companion's global it reads, NULL: none */
	const char *site_in;		/* USDT: only the note's sites inside this
								 * function (NULL: every site) */
} engine_point;

typedef struct engine_set
{
	const char *name;
	const char *summary;
	int			default_on;		/* 0: costs too much to be on by default */
} engine_set;

extern const engine_point engine_points[];
extern const size_t engine_npoints;
extern const engine_set engine_sets[];
extern const size_t engine_nsets;

/* Symbols inspect reports on: every function/global the tool may want. */
extern const char *const engine_wanted_symbols[];
extern const size_t engine_nwanted_symbols;

/* The choice for one point. */
typedef struct engine_choice
{
	engine_mech mech;
	char		reason[160];	/* why this one / why none */
} engine_choice;

/* The choice for every point of engine_points[] (choices has engine_npoints). */
extern void engine_plan(const elf_info *elf, engine_choice *choices);

/*
 * State of a set from its points' choices (and which of them attached, when
 * attached != NULL): PGT_PROBE_*; mechanism ("usdt", "uprobe",
 * "usdt+uprobe", "none") and reason filled.
 */
extern uint32_t engine_set_state(const char *set, const engine_choice *choices,
								 const int *attached, char *mechanism, size_t mlen,
								 char *reason, size_t rlen);

extern const char *engine_mech_name(engine_mech m);
extern int	engine_set_index(const char *name);

/* Names of probe ids (ENG_*), lock tag types, lock modes, LWLock modes. */
extern const char *engine_probe_name(uint32_t probe);
extern const char *engine_probe_set_of(uint32_t probe);
extern int	engine_probe_by_name(const char *name);
extern const char *engine_locktag_name(uint32_t type);
extern const char *engine_lockmode_name(uint32_t mode);
extern const char *engine_lwmode_name(uint32_t mode);

#endif							/* PGT_HELPER_ENGINE_CATALOG_H */
