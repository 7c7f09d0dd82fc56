/*
 * helper/pg_symbols.h
 *	  Run-time address of an exported symbol of a running PostgreSQL
 *	  server (its .dynsym plus the load base of its executable).
 */
#ifndef PGT_HELPER_PG_SYMBOLS_H
#define PGT_HELPER_PG_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

extern int	pg_symbol_addr(pid_t pid, const char *name, uint64_t *addr,
						   char *err, size_t errlen);

#endif							/* PGT_HELPER_PG_SYMBOLS_H */
