/*
 * helper/exact_watch.h
 *	  The hardware-watchpoint source of exact wait timing (helper/exact_watch.c)
 *	  and the choice of source (--exact-source).
 */
#ifndef PGT_HELPER_EXACT_WATCH_H
#define PGT_HELPER_EXACT_WATCH_H

#include <stddef.h>
#include <stdint.h>

struct bpf_program;

#define EXACT_SOURCE_SYSCALL	0	/* system-call tagging (default) */
#define EXACT_SOURCE_WATCHPOINT	1	/* write breakpoints on wait_event_info */
#define EXACT_SOURCE_AUTO		2	/* watchpoints where they fire, else syscall */

typedef struct exact_watch exact_watch;

extern int	exact_configure_source(const char *s, char *err, size_t errlen);
extern int	exact_source_requested(void);
extern const char *exact_source_name(int source);
extern int	exact_watch_selftest(char *reason, size_t len);

extern exact_watch *exact_watch_new(struct bpf_program *prog, int state_fd, int qid_fd,
									 int tracked_fd);
extern size_t exact_watch_sync(exact_watch *w, uint32_t gen);
extern void exact_watch_clear(exact_watch *w);
extern size_t exact_watch_count(const exact_watch *w);
extern unsigned exact_watch_failures(const exact_watch *w, char *buf, size_t len);
extern unsigned exact_watch_over_limit(const exact_watch *w);
extern void exact_watch_free(exact_watch *w);
extern uint64_t exact_mono_ns(void);

#endif							/* PGT_HELPER_EXACT_WATCH_H */
