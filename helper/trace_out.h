/*
 * helper/trace_out.h
 *	  Output of `pg-tracer trace`: one record per line, as text or as JSON
 *	  Lines, every record starting with the common fields (ts, set, event,
 *	  pid, backend_type, queryid; see probe_set.h), and ASCII log2
 *	  histograms.  Probe sets write through these functions only, so the
 *	  two formats stay identical in content.
 */
#ifndef PGT_HELPER_TRACE_OUT_H
#define PGT_HELPER_TRACE_OUT_H

#include <stdint.h>
#include <stdio.h>

#define TRACE_TYPE_CACHE	512
#define TRACE_TYPE_RETRY_MS	1
#define TRACE_TYPE_REFRESH_MS	1000	/* a known role: its pid may be reused */
/* text: the event column's width, the longest name's ("cache_write_miss") */
#define TRACE_EVENT_WIDTH	16

/*
 * Three-way comparison (-1, 0, 1) of two values of one type, for the
 * qsort orders that group summary records by pid.
 */
#define TRACE_CMP3(a, b) (((a) > (b)) - ((a) < (b)))

/*
 * trace_cmp_heaviest
 *		Within one pid's summary rows: the most time first, then the most
 *		calls.
 */
static inline int
trace_cmp_heaviest(uint64_t ns_a, uint64_t calls_a, uint64_t ns_b, uint64_t calls_b)
{
	int			c = TRACE_CMP3(ns_b, ns_a);

	return c != 0 ? c : TRACE_CMP3(calls_b, calls_a);
}

typedef struct trace_type_entry
{
	uint32_t	pid;
	uint32_t	role;
	uint32_t	leader;			/* a parallel worker's leader, else 0 */
	int64_t		checked_ms;
} trace_type_entry;

/*
 * The title a process had when it exited, for a pid /proc no longer shows:
 * its bytes into buf and how many, or -1.
 */
typedef int (*trace_exit_title_fn) (void *arg, uint32_t pid, char *buf, size_t buflen);

typedef struct trace_out
{
	FILE	   *f;
	int			json;
	int			in_record;
	int			nfields;
	int			set_width;		/* text: the set column's width */
	int64_t		boot_to_real_us;
	const uint32_t *postmasters;	/* pids that are postmasters */
	size_t		npostmasters;
	trace_exit_title_fn exit_title; /* NULL: no titles of exited processes */
	void	   *exit_title_arg;
	uint32_t	focus;			/* --pid backend: only its records and its
								 * parallel workers' (and pid 0's); 0 = all */
	uint32_t	focus_nspid;	/* focus in its cluster's pid namespace: the
								 * leader its workers' titles name */
	int			skip;			/* the record begun is not printed (focus) */
	trace_type_entry cache[TRACE_TYPE_CACHE];
} trace_out;

extern void trace_out_init(trace_out *o, FILE *f, int json);
extern void trace_out_resync_clock(trace_out *o);
extern int	trace_parse_format(const char *arg, int *json);
extern const char *trace_backend_type(trace_out *o, uint32_t pid);
extern uint32_t trace_role(trace_out *o, uint32_t pid, int alive);
extern int	trace_wanted(trace_out *o, uint32_t pid);

/*
 * The pid of a record about every traced process together (the engine
 * sets' histograms): printed as pid 0 with backend_type "all", where a
 * real pid 0 is the kernel's.
 */
#define TRACE_PID_ALL		UINT32_MAX
/*
 * The pid of a record about no process (status, summary): pid 0 with
 * backend_type "none", so that selecting the kernel's records by
 * backend_type "kernel" does not take these.
 */
#define TRACE_PID_NONE		(UINT32_MAX - 1)

/*
 * The rows of processes that exited, folded per cluster and role
 * (PGT_RETIRED_PID_ROLE, pid_retire.h: bit 31 set, bit 30 never, unlike
 * the two above): printed as pid null (JSON) or pid=exited (text), with
 * the role they had as backend_type (the engine sets fold without it:
 * unknown) and one more common field, postmaster (their cluster's).
 */
#define TRACE_PID_FOLDED(pid)	(((pid) & 0xC0000000u) == 0x80000000u)

/* ts_ns: CLOCK_BOOTTIME ns (bpf_ktime_get_boot_ns); 0 = now. */
extern void trace_rec_begin(trace_out *o, const char *set, const char *event,
							uint32_t pid, uint64_t queryid, uint64_t ts_ns);
extern void trace_rec_u64(trace_out *o, const char *key, uint64_t v);
extern void trace_rec_i64(trace_out *o, const char *key, int64_t v);
extern void trace_rec_f64(trace_out *o, const char *key, double v);
extern void trace_rec_str(trace_out *o, const char *key, const char *v);
extern void trace_rec_bool(trace_out *o, const char *key, int v);
extern void trace_rec_end(trace_out *o);
extern int	trace_out_flush(trace_out *o);

/*
 * A log2 histogram record: text prints a bcc-style ASCII chart, JSON one
 * line with "metric", "unit", "label" and the non-empty "buckets".
 * Bucket i counts values in [2^i, 2^(i+1)) (bucket 0: [0, 2)); the last
 * one (nslots - 1) everything from 2^i on: its "hi" is null ("inf" in text).
 */
extern void trace_hist(trace_out *o, const char *set, const char *metric,
					   uint32_t pid, uint64_t queryid, const char *label,
					   const uint64_t *slots, int nslots, const char *unit);

/* Write a JSON string literal (escaped) to f. */
extern void trace_json_string(FILE *f, const char *s);

#endif							/* PGT_HELPER_TRACE_OUT_H */
