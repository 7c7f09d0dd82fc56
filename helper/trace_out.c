/*
 * helper/trace_out.c
 *	  Text and JSON Lines writers of `pg-tracer trace`, backend-type lookup
 *	  of a pid (cached), and ASCII log2 histograms.  Single-threaded.
 */
#include "trace_out.h"

#include "pid_retire.h"
#include "procfs.h"
#include "pgt_segment.h"
#include "pgt_utf8.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

/* the postmaster in a folded pid (PGT_RETIRED_PID: below 2^22) */
#define FOLDED_PM_MASK		((1u << PGT_RETIRED_ROLE_SHIFT) - 1)

/*
 * now_ms
 *		CLOCK_MONOTONIC in ms (cache ages).
 */
static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * trace_out_init
 *		Start writing to f.
 */
void
trace_out_init(trace_out *o, FILE *f, int json)
{
	memset(o, 0, sizeof(*o));
	o->f = f;
	o->json = json;
	o->set_width = 8;
	o->boot_to_real_us = procfs_boot_to_real_us();
}

/*
 * trace_out_resync_clock
 *		Take the wall clock's offset from boot time again (events carry
 *		boot-time stamps): a stepped clock (NTP, date -s) would leave the
 *		events apart from the summaries, which read the wall clock.
 */
void
trace_out_resync_clock(trace_out *o)
{
	o->boot_to_real_us = procfs_boot_to_real_us();
}

/*
 * type_entry
 *		What pid's process title says (its role, and a parallel worker's
 *		leader), or for a process that is gone (or a zombie: no title left
 *		in /proc) the title it exited with.  Cached; a role not known yet (a
 *		backend between fork and its first title) is looked for again
 *		TRACE_TYPE_RETRY_MS later, a known one TRACE_TYPE_REFRESH_MS later
 *		(a new process may have taken the pid: with pid_max 32768 and
 *		connection churn, within minutes).  Not for pid 0, TRACE_PID_ALL,
 *		TRACE_PID_NONE or a postmaster.
 */
static const trace_type_entry *
type_entry(trace_out *o, uint32_t pid)
{
	trace_type_entry *e = &o->cache[pid % TRACE_TYPE_CACHE];
	char		buf[PROCFS_CMDLINE_MAX];
	size_t		len = 0;
	int64_t		now = now_ms();
	int			n;

	if (e->pid == pid &&
		now - e->checked_ms < (e->role != PGT_ROLE_UNKNOWN ? TRACE_TYPE_REFRESH_MS
							   : TRACE_TYPE_RETRY_MS))
		return e;
	if (e->pid != pid)
	{
		e->role = PGT_ROLE_UNKNOWN;
		e->leader = 0;
	}
	e->pid = pid;
	e->checked_ms = now;
	/* nothing to read: the process is gone; what was known of it stays */
	if (procfs_read_cmdline((pid_t) pid, buf, sizeof(buf), &len) == 0 && len > 0)
		n = (int) len;
	else if (o->exit_title == NULL ||
			 (n = o->exit_title(o->exit_title_arg, pid, buf, sizeof(buf))) <= 0)
		return e;
	e->role = procfs_classify_title(buf, (size_t) n);
	e->leader = procfs_parallel_leader(buf, (size_t) n);
	return e;
}

/*
 * is_postmaster
 *		Is pid one of the traced postmasters?
 */
static int
is_postmaster(const trace_out *o, uint32_t pid)
{
	size_t		i;

	for (i = 0; i < o->npostmasters; i++)
		if (o->postmasters[i] == pid)
			return 1;
	return 0;
}

/*
 * trace_backend_type
 *		PostgreSQL's name for pid's role (type_entry).
 */
const char *
trace_backend_type(trace_out *o, uint32_t pid)
{
	if (pid == 0)
		return "kernel";
	if (pid == TRACE_PID_ALL)
		return "all";
	if (pid == TRACE_PID_NONE)
		return "none";
	if (TRACE_PID_FOLDED(pid))
		return pgt_role_name(PGT_RETIRED_ROLE(pid));
	if (is_postmaster(o, pid))
		return pgt_role_name(PGT_ROLE_POSTMASTER);
	return pgt_role_name(type_entry(o, pid)->role);
}

/*
 * trace_role
 *		pid's role (PGT_ROLE_*) as its title says (type_entry), or for a
 *		process known to be gone (!alive) as it said while it ran or at its
 *		exit: not /proc, where another process may hold the pid by now; 0
 *		when not known.  For the folding of exited processes' rows
 *		(pid_retire.h), which keeps their role.
 */
uint32_t
trace_role(trace_out *o, uint32_t pid, int alive)
{
	const trace_type_entry *e = &o->cache[pid % TRACE_TYPE_CACHE];
	char		buf[PROCFS_CMDLINE_MAX];
	int			n;

	if (pid == 0 || pid == TRACE_PID_ALL || pid == TRACE_PID_NONE || TRACE_PID_FOLDED(pid))
		return PGT_ROLE_UNKNOWN;
	if (is_postmaster(o, pid))
		return PGT_ROLE_POSTMASTER;
	if (alive)
		return type_entry(o, pid)->role;
	if (e->pid == pid && e->role != PGT_ROLE_UNKNOWN)
		return e->role;
	if (o->exit_title == NULL ||
		(n = o->exit_title(o->exit_title_arg, pid, buf, sizeof(buf))) <= 0)
		return PGT_ROLE_UNKNOWN;
	return procfs_classify_title(buf, (size_t) n);
}

/*
 * trace_wanted
 *		Is a record of pid printed?  With a focus (--pid of a backend): the
 *		backend's, its parallel workers', and those of no one process (pid
 *		0, TRACE_PID_ALL, TRACE_PID_NONE: the kernel's, histograms of all,
 *		status, summaries); else all.
 */
int
trace_wanted(trace_out *o, uint32_t pid)
{
	if (o->focus == 0 || pid == 0 || pid == TRACE_PID_ALL || pid == TRACE_PID_NONE ||
		pid == o->focus)
		return 1;
	if (is_postmaster(o, pid) || TRACE_PID_FOLDED(pid))
		return 0;				/* folded rows are no one process's */
	return type_entry(o, pid)->leader == o->focus_nspid;
}

/*
 * trace_json_string
 *		A JSON string literal: well-formed UTF-8 as it is, control
 *		characters (C0, DEL, C1) escaped, any other byte U+FFFD.
 */
void
trace_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t		left = strlen(s);

	fputc('"', f);
	while (left > 0)
	{
		int			len = pgt_utf8_len(p, left);

		if (len > 0 && pgt_utf8_is_c1(p, len))
			fprintf(f, "\\u%04x", p[1]);	/* U+0080..U+009F */
		else if (len > 0)
			fwrite(p, 1, (size_t) len, f);
		else if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else if (*p >= 0x80)
			fputs("\\ufffd", f);
		else
			fputc(*p, f);
		len = len > 0 ? len : 1;
		p += len;
		left -= (size_t) len;
	}
	fputc('"', f);
}

/*
 * key
 *		Start a field: separator and key.
 */
static void
key(trace_out *o, const char *k)
{
	if (o->skip)
		return;
	if (o->json)
	{
		fputc(',', o->f);
		trace_json_string(o->f, k);
		fputc(':', o->f);
	}
	else
		fprintf(o->f, " %s=", k);
	o->nfields++;
}

/*
 * trace_rec_begin
 *		The common fields of a record.
 */
void
trace_rec_begin(trace_out *o, const char *set, const char *event,
				uint32_t pid, uint64_t queryid, uint64_t ts_ns)
{
	int64_t		us;
	time_t		secs;
	struct tm	tm;
	char		ts[64];
	const char *btype = trace_backend_type(o, pid);

	o->skip = !trace_wanted(o, pid);
	if (o->skip)
		return;
	if (pid == TRACE_PID_ALL || pid == TRACE_PID_NONE)
		pid = 0;

	if (ts_ns == 0)
		us = procfs_realtime_us();
	else
		us = o->boot_to_real_us + (int64_t) (ts_ns / 1000);
	secs = (time_t) (us / 1000000);
	gmtime_r(&secs, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			 tm.tm_min, tm.tm_sec, (int) (us % 1000000));
	o->in_record = 1;
	o->nfields = 0;
	if (o->json)
	{
		fprintf(o->f, "{\"ts\":\"%s\",\"set\":", ts);
		trace_json_string(o->f, set);
		fputs(",\"event\":", o->f);
		trace_json_string(o->f, event);
		if (TRACE_PID_FOLDED(pid))
			fputs(",\"pid\":null,\"backend_type\":", o->f);
		else
			fprintf(o->f, ",\"pid\":%u,\"backend_type\":", pid);
		trace_json_string(o->f, btype);
		/*
		 * Query ids are signed in PostgreSQL: print them as it does, but as
		 * a JSON string.  Nearly every id is beyond 2^53, and parsers that
		 * read numbers as doubles (jq 1.6, JavaScript) would round it, so a
		 * join with pg_stat_statements would silently find nothing.
		 */
		fprintf(o->f, ",\"queryid\":\"%" PRId64 "\"", (int64_t) queryid);
		if (TRACE_PID_FOLDED(pid))
			fprintf(o->f, ",\"postmaster\":%u", pid & FOLDED_PM_MASK);
	}
	else if (TRACE_PID_FOLDED(pid))
		fprintf(o->f, "%s %-*s %-*s pid=exited type=\"%s\" queryid=%" PRId64 " postmaster=%u",
				ts + 11, o->set_width, set, TRACE_EVENT_WIDTH, event, btype, (int64_t) queryid,
				pid & FOLDED_PM_MASK);
	else
		fprintf(o->f, "%s %-*s %-*s pid=%u type=\"%s\" queryid=%" PRId64,
				ts + 11, o->set_width, set, TRACE_EVENT_WIDTH, event, pid, btype, (int64_t) queryid);
}

/*
 * text_value
 *		A text-format value: as it is when it is one word of printable
 *		ASCII, else in double quotes with '"' and '\\' escaped, so that
 *		`key=value` pairs split the same way whatever a statement or a name
 *		contains.
 *		Controls (C0, DEL, C1) and bytes that are not well-formed UTF-8 are
 *		written as \xNN: a terminal must not act on them.
 */
static void
text_value(FILE *f, const char *v)
{
	const unsigned char *p = (const unsigned char *) v;
	size_t		left = strlen(v);
	int			plain = left > 0;
	size_t		i;

	for (i = 0; i < left && plain; i++)
		plain = p[i] > 0x20 && p[i] < 0x7f && p[i] != '=' && p[i] != '"' && p[i] != '\\';
	if (plain)
	{
		fputs(v, f);
		return;
	}
	fputc('"', f);
	while (left > 0)
	{
		int			len = pgt_utf8_len(p, left);
		size_t		step = len > 0 ? (size_t) len : 1;

		if (len > 0 && !pgt_utf8_is_c1(p, len))
			fwrite(p, 1, step, f);
		else if (len == 0 && *p >= 0x20 && *p < 0x7f)
		{
			if (*p == '"' || *p == '\\')
				fputc('\\', f);
			fputc(*p, f);
		}
		else
			for (i = 0; i < step; i++)
				fprintf(f, "\\x%02x", p[i]);
		p += step;
		left -= step;
	}
	fputc('"', f);
}

void
trace_rec_u64(trace_out *o, const char *k, uint64_t v)
{
	key(o, k);
	if (!o->skip)
		fprintf(o->f, "%" PRIu64, v);
}

void
trace_rec_i64(trace_out *o, const char *k, int64_t v)
{
	key(o, k);
	if (!o->skip)
		fprintf(o->f, "%" PRId64, v);
}

/* a value that is not finite (no JSON number for it) prints as null */
void
trace_rec_f64(trace_out *o, const char *k, double v)
{
	key(o, k);
	if (o->skip)
		return;
	if (isfinite(v))
		fprintf(o->f, "%.3f", v);
	else
		fputs("null", o->f);
}

void
trace_rec_str(trace_out *o, const char *k, const char *v)
{
	key(o, k);
	if (o->skip)
		return;
	if (o->json)
		trace_json_string(o->f, v);
	else
		text_value(o->f, v);
}

/* JSON true/false; text true/false */
void
trace_rec_bool(trace_out *o, const char *k, int v)
{
	key(o, k);
	if (!o->skip)
		fputs(v ? "true" : "false", o->f);
}

/*
 * trace_rec_end
 *		Close the record.  The caller flushes (trace_out_flush) after each
 *		batch: a write per record would make a busy stream slower than the
 *		kernel fills its buffer.
 */
void
trace_rec_end(trace_out *o)
{
	if (o->skip)
	{
		o->skip = 0;
		return;
	}
	fputs(o->json ? "}\n" : "\n", o->f);
	o->in_record = 0;
}

/*
 * trace_out_flush
 *		Write out what is buffered: 0, or -1 when the output failed (a
 *		closed pipe with SIGPIPE ignored, a full disk), errno set.
 */
int
trace_out_flush(trace_out *o)
{
	errno = 0;
	if (fflush(o->f) != 0 || ferror(o->f))
	{
		if (errno == 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

/*
 * print_stars
 *		The bar of one text histogram row.
 */
static void
print_stars(FILE *f, uint64_t val, uint64_t max, int width)
{
	int			n = max ? (int) ((double) val * width / (double) max) : 0;
	int			i;

	if (val > 0 && n == 0)
		n = 1;
	for (i = 0; i < width; i++)
		fputc(i < n ? '*' : ' ', f);
}

/*
 * trace_hist
 *		One log2 histogram (see trace_out.h).
 */
void
trace_hist(trace_out *o, const char *set, const char *metric, uint32_t pid,
		   uint64_t queryid, const char *label, const uint64_t *slots,
		   int nslots, const char *unit)
{
	uint64_t	max = 0;
	uint64_t	total = 0;
	int			last = -1;
	int			i;
	int			first = 1;

	if (!trace_wanted(o, pid))
		return;
	for (i = 0; i < nslots; i++)
	{
		if (slots[i] > max)
			max = slots[i];
		if (slots[i] > 0)
			last = i;
		total += slots[i];
	}
	trace_rec_begin(o, set, "histogram", pid, queryid, 0);
	if (o->skip)
	{
		o->skip = 0;			/* trace_wanted changed its mind meanwhile */
		return;
	}
	trace_rec_str(o, "metric", metric);
	trace_rec_str(o, "unit", unit);
	trace_rec_str(o, "label", label);
	trace_rec_u64(o, "total", total);
	if (o->json)
	{
		fputs(",\"buckets\":[", o->f);
		for (i = 0; i <= last; i++)
		{
			if (slots[i] == 0)
				continue;
			fprintf(o->f, "%s{\"lo\":%" PRIu64 ",", first ? "" : ",",
					i == 0 ? 0 : (UINT64_C(1) << i));
			if (i == nslots - 1)
				fputs("\"hi\":null", o->f);	/* open-ended */
			else
				fprintf(o->f, "\"hi\":%" PRIu64, (UINT64_C(1) << (i + 1)) - 1);
			fprintf(o->f, ",\"count\":%" PRIu64 "}", slots[i]);
			first = 0;
		}
		fputc(']', o->f);
		trace_rec_end(o);
		return;
	}
	fputc('\n', o->f);
	fprintf(o->f, "%24s : %-10s |%-40s|\n", unit, "count", "distribution");
	for (i = 0; i <= last; i++)
	{
		uint64_t	lo = i == 0 ? 0 : (UINT64_C(1) << i);
		uint64_t	hi = (UINT64_C(1) << (i + 1)) - 1;

		if (i == nslots - 1)
			fprintf(o->f, "%10" PRIu64 " -> %-10s : %-10" PRIu64 " |", lo, "inf", slots[i]);
		else
			fprintf(o->f, "%10" PRIu64 " -> %-10" PRIu64 " : %-10" PRIu64 " |", lo, hi, slots[i]);
		print_stars(o->f, slots[i], max, 40);
		fputs("|\n", o->f);
	}
	o->in_record = 0;
}

/*
 * trace_parse_format
 *		--format of every command: "text" -> 0, "json" -> 1 in *json.
 *		Returns 0, or -1 for anything else (the caller reports it).
 */
int
trace_parse_format(const char *arg, int *json)
{
	if (strcmp(arg, "json") == 0)
		*json = 1;
	else if (strcmp(arg, "text") == 0)
		*json = 0;
	else
		return -1;
	return 0;
}
