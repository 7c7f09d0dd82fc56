/*
 * helper/usdt_notes.h
 *	  Parser of SystemTap SDT notes (.note.stapsdt): probe provider, name,
 *	  address, semaphore and argument specs, and of the argument specs
 *	  themselves ("-4@%ebx", "8@-144(%rbp)", "-4@40+CheckpointStats(%rip)").
 *
 * Pure functions over bytes: no I/O, unit-tested on synthetic notes and on
 * the notes of the real PostgreSQL binary.
 */
#ifndef PGT_HELPER_USDT_NOTES_H
#define PGT_HELPER_USDT_NOTES_H

#include <stddef.h>
#include <stdint.h>

#define USDT_NAME_LEN		64
#define USDT_ARGS_LEN		256
#define USDT_MAX_ARGS		12
/* SDT notes one binary may have (PostgreSQL has some 60; each costs 400 bytes) */
#define USDT_MAX_PROBES		4096

/* How one argument is found, from its spec. */
typedef enum usdt_arg_kind
{
	USDT_ARG_CONST,				/* $N */
	USDT_ARG_REG,				/* %reg */
	USDT_ARG_REG_DEREF,			/* off(%reg) */
	USDT_ARG_SYMBOL				/* off+sym(%rip) or sym(%rip): a global */
} usdt_arg_kind;

typedef struct usdt_arg
{
	usdt_arg_kind kind;
	int			size;			/* bytes: 1, 2, 4 or 8 */
	int			is_signed;
	int64_t		value;			/* constant, or offset */
	char		reg[16];		/* register name without '%' */
	char		symbol[USDT_NAME_LEN];	/* for USDT_ARG_SYMBOL */
} usdt_arg;

typedef struct usdt_probe
{
	char		provider[USDT_NAME_LEN];
	char		name[USDT_NAME_LEN];
	uint64_t	pc;				/* link-time address of the probe site */
	uint64_t	semaphore;		/* link-time address, 0 when none */
	char		args[USDT_ARGS_LEN];	/* the raw spec, truncated if longer */
	int			nargs;			/* -1 when the spec did not parse */
} usdt_probe;

/*
 * Parse the contents of a .note.stapsdt section (len bytes).  base_addr is
 * the link-time address of .stapsdt.base (0 when the file has none): when a
 * note's recorded base differs (prelink), its pc and semaphore are moved by
 * the difference.  Returns 0 with *out (malloc'd, *n entries) or -1 with
 * err set.  Malformed notes are errors, not skipped: the section is ours to
 * trust only if all of it parses.
 */
extern int	usdt_parse_notes(const void *data, size_t len, uint64_t base_addr,
							 usdt_probe **out, size_t *n, char *err, size_t errlen);

/*
 * Parse one argument spec ("-4@%ebx").  Returns 0 or -1.
 */
extern int	usdt_parse_arg(const char *spec, usdt_arg *out);

/*
 * Parse all argument specs of a probe (space-separated).  Returns the
 * number of arguments (0..max) or -1 when one does not parse.
 */
extern int	usdt_parse_args(const char *specs, usdt_arg *out, int max);

#endif							/* PGT_HELPER_USDT_NOTES_H */
