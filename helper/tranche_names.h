/*
 * helper/tranche_names.h
 *	  Names of the LWLock tranches the engine sets' rows carry: by tranche
 *	  id from a cluster's layout file, or read at the address of the name a
 *	  USDT probe passed (see tranche_names.c for which memory is trusted).
 */
#ifndef PGT_HELPER_TRANCHE_NAMES_H
#define PGT_HELPER_TRANCHE_NAMES_H

#include "pgt_layout.h"

#include <stddef.h>
#include <stdint.h>

/* Keep the tranche names of postmaster pm's layout (forgets pm's first). */
extern void tranche_names_keep(uint32_t pm, const pgt_layout *layout);

/* Forget every name of postmaster pm: it is gone, or a new one has its pid. */
extern void tranche_names_forget(uint32_t pm);

/* Name of tranche id in pm's layout, or "tranche N". */
extern void tranche_name_by_id(uint32_t pm, uint32_t id, char *name, size_t len);

/* cut, a name as the BPF key holds it, made whole from pm's layout */
extern void tranche_name_whole(uint32_t pm, const char *cut, char *name, size_t len);

/* Name at addr in process pid of postmaster pm, or "?". */
extern void tranche_name_at(uint32_t pm, uint32_t pid, uint64_t addr, char *name,
							size_t len);

#endif							/* PGT_HELPER_TRANCHE_NAMES_H */
