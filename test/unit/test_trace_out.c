/*
 * test/unit/test_trace_out.c
 *	  The trace output helpers (helper/trace_out.c): JSON records carry the
 *	  common fields first and escape strings, text records, log2 histogram
 *	  rendering in both formats; backend types of exited processes; the
 *	  records a --pid trace prints (the backend's and its workers'); rows
 *	  folded from exited processes; the
 *	  probe-set list parser, --buffer sizes
 *	  (helper/probe_set.c) and the kernel code names (common/pgt_kernel.c).
 */
#include "kernel_sets.h"
#include "pgt_kernel.h"
#include "pgt_trace.h"
#include "pid_retire.h"
#include "probe_set.h"
#include "trace_out.h"
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>

/* Render with fn into a string (caller frees). */
static char *
render(int json, void (*fn) (trace_out *o))
{
	char	   *buf = NULL;
	size_t		len = 0;
	FILE	   *f = open_memstream(&buf, &len);
	trace_out	o;

	trace_out_init(&o, f, json);
	fn(&o);
	fclose(f);
	return buf;
}

/* Lines (records) in s. */
static int
count_lines(const char *s)
{
	int			n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void
one_record(trace_out *o)
{
	trace_rec_begin(o, "syscall", "pread64", 0, (uint64_t) -42, 1);
	trace_rec_u64(o, "bytes", 8192);
	trace_rec_i64(o, "ret", -5);
	trace_rec_f64(o, "latency_us", 12.5);
	trace_rec_str(o, "note", "a \"quoted\"\\ \x01 word");
	trace_rec_bool(o, "final", 1);
	trace_rec_bool(o, "early", 0);
	trace_rec_end(o);
	/* text values quoted whenever a split at blanks and '=' would cut them */
	trace_rec_begin(o, "engine", "query", 7, (uint64_t) -6781391283629456789LL, 1);
	trace_rec_str(o, "empty", "");
	trace_rec_str(o, "eq", "a=b");
	trace_rec_str(o, "utf8", "caf\xc3\xa9");
	trace_rec_str(o, "csi", "\xc2\x9b" "2J \xff");
	trace_rec_f64(o, "avg_us", 0.0 / 0.0);
	trace_rec_end(o);
	/* a record about no process: pid 0, but not the kernel's */
	trace_rec_begin(o, "trace", "summary", TRACE_PID_NONE, 0, 1);
	trace_rec_end(o);
}

static void
one_hist(trace_out *o)
{
	uint64_t	slots[32] = {0};

	slots[0] = 1;
	slots[3] = 4;
	trace_hist(o, "block", "block", 0, 0, "block read dev 8:0", slots, 32, "usecs");
	slots[31] = 2;				/* 2^31 us and more: open-ended */
	trace_hist(o, "block", "block", 0, 0, "block write dev 8:0", slots, 32, "usecs");
}

static void
all_hist(trace_out *o)
{
	uint64_t	slots[32] = {0};

	slots[2] = 7;
	trace_hist(o, "pg-locks", "lock-wait_latency", TRACE_PID_ALL, 0, "lock-wait", slots, 32,
			   "usecs");
}

static void
test_json_record(void)
{
	char	   *s = render(1, one_record);

	CHECK(strncmp(s, "{\"ts\":\"", 7) == 0, "%s", s);
	CHECK(strstr(s, "Z\",\"set\":\"syscall\",\"event\":\"pread64\",\"pid\":0,"
				 "\"backend_type\":\"kernel\",\"queryid\":\"-42\",") != NULL, "%s", s);
	CHECK(strstr(s, "\"bytes\":8192,\"ret\":-5,\"latency_us\":12.500,") != NULL, "%s", s);
	/* beyond 2^53: a string, so that parsers reading doubles keep every digit */
	CHECK(strstr(s, "\"queryid\":\"-6781391283629456789\",") != NULL, "%s", s);
	CHECK(strstr(s, "\"note\":\"a \\\"quoted\\\"\\\\ \\u0001 word\","
				 "\"final\":true,\"early\":false}\n") != NULL, "%s", s);
	CHECK(strstr(s, "\"empty\":\"\",\"eq\":\"a=b\",\"utf8\":\"caf\xc3\xa9\","
				 "\"csi\":\"\\u009b2J \\ufffd\",\"avg_us\":null}\n") != NULL, "%s", s);
	CHECK(strstr(s, "\"pid\":0,\"backend_type\":\"none\",") != NULL, "%s", s);
	free(s);
}

static void
test_text_record(void)
{
	char	   *s = render(0, one_record);

	CHECK(strstr(s, " syscall  pread64          pid=0 type=\"kernel\" queryid=-42 bytes=8192 ret=-5 latency_us=12.500") != NULL, "%s", s);
	CHECK(strstr(s, " note=\"a \\\"quoted\\\"\\\\ \\x01 word\" final=true early=false\n") != NULL,
		  "%s", s);
	CHECK(strstr(s, " empty=\"\" eq=\"a=b\" utf8=\"caf\xc3\xa9\" csi=\"\\xc2\\x9b2J \\xff\" avg_us=null\n") != NULL,
		  "%s", s);
	CHECK(strstr(s, " summary          pid=0 type=\"none\" queryid=0\n") != NULL, "%s", s);
	free(s);
}

static void
test_hist(void)
{
	char	   *j = render(1, one_hist);
	char	   *t = render(0, one_hist);

	CHECK(strstr(j, "\"event\":\"histogram\"") != NULL, "%s", j);
	CHECK(strstr(j, "\"total\":5,\"buckets\":[{\"lo\":0,\"hi\":1,\"count\":1},"
				 "{\"lo\":8,\"hi\":15,\"count\":4}]}") != NULL, "%s", j);
	CHECK(strstr(t, "usecs : count      |distribution") != NULL, "%s", t);
	CHECK(strstr(t, "         8 -> 15         : 4          |****************************************|") != NULL, "%s", t);
	CHECK(strstr(t, "         4 -> 7          : 0          |                                        |") != NULL, "%s", t);
	CHECK(strstr(j, "{\"lo\":2147483648,\"hi\":null,\"count\":2}]}") != NULL, "%s", j);
	CHECK(strstr(t, "2147483648 -> inf        : 2          |********************") != NULL, "%s", t);
	free(j);
	free(t);

	/* a histogram of every process together: pid 0, but not the kernel's */
	j = render(1, all_hist);
	t = render(0, all_hist);
	CHECK(strstr(j, "\"pid\":0,\"backend_type\":\"all\",") != NULL, "%s", j);
	CHECK(strstr(t, " pid=0 type=\"all\" queryid=0 metric=lock-wait_latency unit=usecs") != NULL,
		  "%s", t);
	free(j);
	free(t);
}

static void
test_names(void)
{
	CHECK_STR(pgt_kop_name(PGT_KOP_FDATASYNC), "fdatasync");
	CHECK_STR(pgt_kop_name(200), "unknown");
	CHECK_STR(pgt_kop_name(PGT_KOP_CACHE_MISS), "miss");
	CHECK_STR(pgt_kop_name(PGT_KOP_CACHE_WRITE_MISS), "write-miss");
	CHECK_STR(pgt_kop_name(PGT_KOP_CACHE_META_MISS), "meta-miss");
	CHECK_STR(pgt_kfile_name(PGT_KFILE_WAL), "wal");
	CHECK_STR(pgt_kfile_name(PGT_KFILE_SPECIAL), "special");
	CHECK_STR(pgt_klayer_name(PGT_KLAYER_PAGECACHE), "pagecache");
	CHECK_INT(pgt_klayer_timed(PGT_KLAYER_PAGECACHE), 0);
	CHECK_INT(pgt_klayer_timed(PGT_KLAYER_BLOCK), 1);
	CHECK_INT(pgt_khist_parse("runq"), PGT_KHIST_RUNQ);
	CHECK_INT(pgt_khist_parse("Runq"), -1);
}

static void
test_parse_list(void)
{
	const probe_set *sets[16];
	size_t		n = 0;
	char		err[512] = "";

	CHECK_INT(pset_parse_list("all", sets, 16, &n, err, sizeof(err)), 0);
	CHECK_INT(n, pset_count());
	CHECK(n >= 6, "six kernel sets registered, got %zu", n);
	CHECK_INT(pset_parse_list("block,syscall,block", sets, 16, &n, err, sizeof(err)), 0);
	CHECK_INT(n, 2);
	CHECK_STR(sets[0]->name, "block");
	CHECK_INT(pset_parse_list("sched,nope", sets, 16, &n, err, sizeof(err)), -1);
	CHECK(strstr(err, "unknown probe set \"nope\"; known: all, syscall") != NULL, "%s", err);
	CHECK_INT(pset_parse_list(",", sets, 16, &n, err, sizeof(err)), -1);
	/* a name left out is refused, not skipped */
	CHECK_INT(pset_parse_list("syscall,,block", sets, 16, &n, err, sizeof(err)), -1);
	CHECK(strstr(err, "empty item in the probe set list \"syscall,,block\"") != NULL, "%s", err);
	CHECK_INT(pset_parse_list("syscall, ", sets, 16, &n, err, sizeof(err)), -1);
	CHECK_INT(pset_parse_list(" sched", sets, 16, &n, err, sizeof(err)), 0);
	CHECK_INT(n, 1);
}

/* --buffer SIZE: bytes or k/m/g, rounded up to a power of two, 4k..1g */
static void
test_stream_bytes(void)
{
	char		err[256];

	CHECK_INT(pset_configure_stream_bytes("5000", err, sizeof(err)), 0);
	CHECK_INT(pset_stream_bytes, 8192);
	CHECK_INT(pset_configure_stream_bytes("4k", err, sizeof(err)), 0);
	CHECK_INT(pset_stream_bytes, 4096);
	/* under 4k: refused, not rounded up to what the help says is the least */
	CHECK_INT(pset_configure_stream_bytes("4095", err, sizeof(err)), -1);
	CHECK_INT(pset_configure_stream_bytes("1", err, sizeof(err)), -1);
	CHECK(strstr(err, "\"1\": use a size from 4k to 1g") != NULL, "%s", err);
	CHECK_INT(pset_configure_stream_bytes("3M", err, sizeof(err)), 0);
	CHECK_INT(pset_stream_bytes, 4 << 20);
	CHECK_INT(pset_configure_stream_bytes("1g", err, sizeof(err)), 0);
	CHECK_INT(pset_stream_bytes, 1 << 30);
	CHECK_INT(pset_configure_stream_bytes("2g", err, sizeof(err)), -1);
	CHECK(strstr(err, "\"2g\": use a size from 4k to 1g") != NULL, "%s", err);
	CHECK_INT(pset_configure_stream_bytes("0", err, sizeof(err)), -1);
	CHECK_INT(pset_configure_stream_bytes("-1k", err, sizeof(err)), -1);
	CHECK_INT(pset_configure_stream_bytes("1mb", err, sizeof(err)), -1);
	CHECK_INT(pset_configure_stream_bytes("k", err, sizeof(err)), -1);
	CHECK_INT(pset_configure_stream_bytes("", err, sizeof(err)), -1);
	pset_stream_bytes = PGT_EVENTS_RINGBUF_BYTES;
}

/*
 * A source of exit titles that knows one pid, for test_exit_titles: its
 * title is arg's string, or without one a client backend's (NUL-padded, as
 * the argv area is).
 */
static int
one_exit_title(void *arg, uint32_t pid, char *buf, size_t buflen)
{
	static const char title[] = "postgres: alice shop [local] idle\0\0\0";
	const char *t = arg != NULL ? arg : title;
	size_t		len = arg != NULL ? strlen(t) + 1 : sizeof(title);

	if (pid != 4194301 || buflen < len)
		return -1;
	memcpy(buf, t, len);
	return (int) len;
}

/*
 * A pid /proc does not show (above any pid_max) is named by the title it
 * exited with, where the source has one, and is unknown otherwise.
 */
static void
test_exit_titles(void)
{
	trace_out	o;

	trace_out_init(&o, stdout, 0);
	CHECK_STR(trace_backend_type(&o, 4194301), "unknown");
	o.exit_title = one_exit_title;
	o.cache[4194301 % TRACE_TYPE_CACHE].checked_ms = 0; /* no retry wait */
	CHECK_STR(trace_backend_type(&o, 4194301), "client backend");
	CHECK_STR(trace_backend_type(&o, 4194302), "unknown");
	CHECK_STR(trace_backend_type(&o, 0), "kernel");
	/* a known role is looked at again a while later: the pid may be reused */
	o.exit_title_arg = (void *) "postgres: parallel worker for PID 4194300";
	CHECK_STR(trace_backend_type(&o, 4194301), "client backend");	/* cached */
	o.cache[4194301 % TRACE_TYPE_CACHE].checked_ms -= TRACE_TYPE_REFRESH_MS;
	CHECK_STR(trace_backend_type(&o, 4194301), "parallel worker");
	/* and once nothing tells any more, what was known stays */
	o.exit_title = NULL;
	o.cache[4194301 % TRACE_TYPE_CACHE].checked_ms -= TRACE_TYPE_REFRESH_MS;
	CHECK_STR(trace_backend_type(&o, 4194301), "parallel worker");
}

/*
 * Exited processes' titles for the focus test, a cluster in a pid namespace
 * of its own: 4194290 was a parallel worker of the backend it knows as 17
 * (the host's 4194300), 4194291 one of the backend it knows as 4194300.
 */
static int
worker_titles(void *arg, uint32_t pid, char *buf, size_t buflen)
{
	const char *title = pid == 4194290 ? "postgres: parallel worker for PID 17" :
		pid == 4194291 ? "postgres: parallel worker for PID 4194300" : NULL;

	(void) arg;
	if (title == NULL || buflen < strlen(title) + 1)
		return -1;
	memcpy(buf, title, strlen(title) + 1);
	return (int) strlen(title) + 1;
}

/* Records of the focus, its worker, another backend's worker, the kernel. */
static void
focused_records(trace_out *o)
{
	static const uint32_t pids[] = {4194300, 4194290, 4194291, 0};
	size_t		i;

	o->exit_title = worker_titles;
	o->focus = 4194300;
	o->focus_nspid = 17;
	for (i = 0; i < sizeof(pids) / sizeof(pids[0]); i++)
	{
		trace_rec_begin(o, "syscall", "stats", pids[i], 0, 1);
		trace_rec_u64(o, "calls", 1);
		trace_rec_str(o, "op", "pread64");
		trace_rec_end(o);
	}
	trace_hist(o, "sched", "runq", 4194291, 0, "runq", (const uint64_t[]) {1, 2}, 2, "usecs");
}

/*
 * --pid of a backend: its records and its parallel workers' (even gone)
 * are printed, and those of no one process; another backend's worker's
 * records and histograms are not, whole.  Workers name their leader by
 * its pid in the cluster's namespace, not by the host's.
 */
static void
test_focus(void)
{
	char	   *out = render(1, focused_records);

	CHECK(strstr(out, "\"pid\":4194300,") != NULL, "the focus's record: %s", out);
	CHECK(strstr(out, "\"pid\":4194290,\"backend_type\":\"parallel worker\"") != NULL,
		  "its worker's record: %s", out);
	CHECK(strstr(out, "4194291") == NULL, "no record of another backend's worker: %s", out);
	CHECK(strstr(out, "\"pid\":0,") != NULL, "the kernel's record: %s", out);
	CHECK_INT(count_lines(out), 3);	/* whole records only: no stray fields or ends */
	free(out);
}

/* The exit title of a client backend, for any pid (this program's own). */
static int
exit_title_of_self(void *arg, uint32_t pid, char *buf, size_t buflen)
{
	const char *title = "postgres: alice db 127.0.0.1(5000) idle";

	(void) arg;
	(void) pid;
	if (buflen < strlen(title) + 1)
		return -1;
	memcpy(buf, title, strlen(title) + 1);
	return (int) strlen(title) + 1;
}

/* A folded row of exited client backends of postmaster 4000, then a real pid. */
static void
folded_records(trace_out *o)
{
	trace_rec_begin(o, "network", "stats", PGT_RETIRED_PID_ROLE(4000, PGT_ROLE_CLIENT_BACKEND),
					7, 1);
	trace_rec_u64(o, "send_bytes", 100);
	trace_rec_end(o);
	trace_rec_begin(o, "network", "stats", PGT_RETIRED_PID(4000), 0, 1);
	trace_rec_end(o);
}

/* the same with a backend in focus (--pid): no one's rows are not its */
static void
folded_focused(trace_out *o)
{
	o->focus = 4000 + 1;
	folded_records(o);
}

/*
 * Rows folded from exited processes (pid_retire.h): pid null in JSON,
 * pid=exited in text, the role from the folded pid (none: unknown), their
 * postmaster; not
 * part of a one-backend trace.  The two pids that mark no process are not
 * taken for folded ones.
 */
static void
test_folded(void)
{
	char	   *j = render(1, folded_records);
	char	   *t = render(0, folded_records);
	char	   *f = render(1, folded_focused);

	CHECK(strstr(j, "\"pid\":null,\"backend_type\":\"client backend\",\"queryid\":\"7\","
				 "\"postmaster\":4000,\"send_bytes\":100}") != NULL, "%s", j);
	CHECK(strstr(j, "\"pid\":null,\"backend_type\":\"unknown\",") != NULL, "%s", j);
	CHECK(strstr(t, " pid=exited type=\"client backend\" queryid=7 postmaster=4000 send_bytes=100\n")
		  != NULL, "%s", t);
	CHECK_INT(count_lines(f), 0);
	{
		/* a gone process's role: its exit title, never /proc's holder of the pid */
		trace_out	o;
		char	   *buf = NULL;
		size_t		len = 0;
		FILE	   *mf = open_memstream(&buf, &len);

		trace_out_init(&o, mf, 0);
		o.exit_title = exit_title_of_self;
		CHECK_INT((int) trace_role(&o, (uint32_t) getpid(), 0), PGT_ROLE_CLIENT_BACKEND);
		CHECK((int) trace_role(&o, (uint32_t) getpid(), 1) != PGT_ROLE_CLIENT_BACKEND,
			  "alive: what /proc says (this test program)");
		fclose(mf);
		free(buf);
	}
	CHECK(!TRACE_PID_FOLDED(TRACE_PID_ALL) && !TRACE_PID_FOLDED(TRACE_PID_NONE) &&
		  !TRACE_PID_FOLDED(4194303u), "marks");
	CHECK(TRACE_PID_FOLDED(PGT_RETIRED_PID_ROLE(4194303u, 0xFF)), "the largest folded pid");
	free(j);
	free(t);
	free(f);
}

/* s as trace_json_string writes it (caller frees). */
static char *
json_of(const char *s)
{
	char	   *buf = NULL;
	size_t		len = 0;
	FILE	   *f = open_memstream(&buf, &len);

	trace_json_string(f, s);
	fclose(f);
	return buf;
}

/*
 * JSON strings: well-formed UTF-8 as it is (a data directory "données"
 * must not come back as "donnÃ©es"), quotes, backslashes and controls
 * escaped (C1 too: terminals act on them), other bytes U+FFFD.
 */
static void
test_json_strings(void)
{
	static const struct
	{
		const char *in;
		const char *out;
	}			cases[] = {
		{"/srv/donn\xc3\xa9" "es", "\"/srv/donn\xc3\xa9" "es\""},
		{"\xe2\x82\xac \xf0\x9f\x90\x98", "\"\xe2\x82\xac \xf0\x9f\x90\x98\""},
		{"a\"b\\c\x01\x7f", "\"a\\\"b\\\\c\\u0001\\u007f\""},
		{"csi \xc2\x9b" "2J", "\"csi \\u009b2J\""},
		{"bad \xff \xc3 \xed\xa0\x80", "\"bad \\ufffd \\ufffd \\ufffd\\ufffd\\ufffd\""},
		{"cut \xe2\x82", "\"cut \\ufffd\\ufffd\""},
	};
	size_t		i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		char	   *got = json_of(cases[i].in);

		CHECK_STR(got, cases[i].out);
		free(got);
	}
}

/* A well-formed record, one cut short, one of an unknown kind. */
static void
kernel_records(trace_out *o)
{
	const probe_set *set = pset_find("syscall");
	pset_inst	in = {.set = set};
	struct pgt_event_hdr h = {.pid = 4242, .set = PGT_SET_SYSCALL, .event = PGT_KEV_CALL};
	struct pgt_kev_call c = {.latency_ns = 1500, .ret = 8192, .op = PGT_KOP_PREAD64};

	CHECK(set != NULL && set->event != NULL, "the syscall set renders records");
	if (set == NULL || set->event == NULL)
		return;
	CHECK_INT(set->event(&in, o, &h, &c, sizeof(c)), 0);
	CHECK_INT(set->event(&in, o, &h, &c, sizeof(c) - 1), -1);
	h.event = 99;
	CHECK_INT(set->event(&in, o, &h, &c, sizeof(c)), -1);
}

/*
 * A kernel set's records: one line for the good one; the short and the
 * unknown one are refused (trace counts them as malformed), not printed.
 */
static void
test_kernel_records(void)
{
	char	   *out = render(1, kernel_records);

	CHECK(strstr(out, "\"event\":\"pread64\",\"pid\":4242,") != NULL, "the record: %s", out);
	CHECK_INT(count_lines(out), 1);
	free(out);
}

int
main(void)
{
	test_json_strings();
	test_json_record();
	test_text_record();
	test_hist();
	test_names();
	test_parse_list();
	test_exit_titles();
	test_focus();
	test_folded();
	test_stream_bytes();
	test_kernel_records();
	UNIT_MAIN_END("test_trace_out");
}
