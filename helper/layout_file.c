/*
 * helper/layout_file.c
 *	  Read the layout file the pg_tracer extension writes into the data
 *	  directory, and parse it strictly (grammar in common/pgt_layout.h).
 *
 * The file is written by the cluster owner and read by root, so it is
 * hostile input: layout_load() refuses anything but a small regular file
 * (no symlink) owned by the data directory's owner and not writable by
 * group or others; layout_parse() accepts exactly the documented grammar
 * and rejects the whole file on the first deviation (unknown or duplicate
 * key, bad number, overlong line, control byte, missing "end", data after
 * "end", too many wait events).  layout_parse() is a pure function.
 */
#include "layout_file.h"

#include "fd_read.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Sanity bounds on what the server can report. */
#define LAYOUT_MAX_ARRAY_COUNT	(1U << 22)
#define LAYOUT_MAX_STRIDE		65536

/* Bits of the keys seen (duplicates and missing keys). */
enum
{
	K_VERSION_NUM = 1 << 0,
	K_PM_PID = 1 << 1,
	K_PM_START = 1 << 2,
	K_PROC_ARRAY = 1 << 3,
	K_PROC_OFFSETS = 1 << 4,
	K_BE_ARRAY = 1 << 5,
	K_BE_OFFSETS = 1 << 6,
	K_ALL = (1 << 7) - 1,		/* the keys a file must have */
	K_BGW_OFFSETS = 1 << 7		/* optional */
};

/* A word of a line: pointer and length (not NUL-terminated). */
typedef struct word
{
	const char *s;
	size_t		len;
} word;

/*
 * split_words
 *		Split a line at single spaces into at most max words.  Returns the
 *		number of words, or -1 on an empty word (leading, trailing or double
 *		space) or more than max words.  When rest_from >= 0, the words from
 *		that index on are returned as one word (the rest of the line).
 */
static int
split_words(const char *s, size_t len, word *w, int max, int rest_from)
{
	size_t		pos = 0;
	int			n = 0;

	if (len == 0)
		return -1;
	while (pos <= len)
	{
		size_t		start = pos;

		if (n == max)
			return -1;
		if (rest_from >= 0 && n == rest_from)
		{
			/* the rest may hold single spaces, as a name does: no more */
			w[n].s = s + start;
			w[n].len = len - start;
			if (w[n].len == 0 || s[start] == ' ' || s[len - 1] == ' ')
				return -1;
			for (pos = start; pos + 1 < len; pos++)
				if (s[pos] == ' ' && s[pos + 1] == ' ')
					return -1;
			return n + 1;
		}
		while (pos < len && s[pos] != ' ')
			pos++;
		if (pos == start)
			return -1;
		w[n].s = s + start;
		w[n].len = pos - start;
		n++;
		if (pos == len)
			break;
		pos++;					/* the single separator */
		if (pos == len)
			return -1;			/* trailing space */
	}
	return n;
}

/*
 * word_is
 *		True when w equals the C string lit.
 */
static int
word_is(word w, const char *lit)
{
	return w.len == strlen(lit) && memcmp(w.s, lit, w.len) == 0;
}

/*
 * parse_dec
 *		Strict unsigned decimal (no sign, no leading zeros except "0"),
 *		at most max.  Returns 0 or -1.
 */
static int
parse_dec(word w, uint64_t max, uint64_t *out)
{
	uint64_t	v = 0;
	size_t		i;

	if (w.len == 0 || w.len > 20 || (w.len > 1 && w.s[0] == '0'))
		return -1;
	for (i = 0; i < w.len; i++)
	{
		unsigned	d;

		if (w.s[i] < '0' || w.s[i] > '9')
			return -1;
		d = (unsigned) (w.s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * parse_hex
 *		Hexadecimal with optional "0x" prefix, 1..maxdigits digits.
 */
static int
parse_hex(word w, size_t maxdigits, uint64_t *out)
{
	uint64_t	v = 0;
	size_t		i = 0;

	if (w.len >= 2 && w.s[0] == '0' && (w.s[1] == 'x' || w.s[1] == 'X'))
		i = 2;
	if (w.len - i == 0 || w.len - i > maxdigits)
		return -1;
	for (; i < w.len; i++)
	{
		char		c = w.s[i];
		unsigned	d;

		if (c >= '0' && c <= '9')
			d = (unsigned) (c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned) (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned) (c - 'A' + 10);
		else
			return -1;
		v = (v << 4) | d;
	}
	*out = v;
	return 0;
}

/*
 * parse_offsets
 *		"k1=<n> k2=<n> k3=<n>" with exactly the three names given, in any
 *		order, each once; each value + fsize[i] must fit in stride later, so
 *		values are bounded by LAYOUT_MAX_STRIDE here.
 */
static int
parse_offsets(const word *w, int nw, const char *const names[3], uint32_t out[3],
			  char *err, size_t errlen, int lineno)
{
	int			seen = 0;
	int			i;
	int			k;

	if (nw != 4)
	{
		snprintf(err, errlen, "line %d: expected 3 offsets", lineno);
		return -1;
	}
	for (i = 1; i < 4; i++)
	{
		const char *eq = memchr(w[i].s, '=', w[i].len);
		word		key;
		word		val;
		uint64_t	v;

		if (eq == NULL)
		{
			snprintf(err, errlen, "line %d: offset without '='", lineno);
			return -1;
		}
		key.s = w[i].s;
		key.len = (size_t) (eq - w[i].s);
		val.s = eq + 1;
		val.len = w[i].len - key.len - 1;
		for (k = 0; k < 3; k++)
			if (word_is(key, names[k]))
				break;
		if (k == 3)
		{
			snprintf(err, errlen, "line %d: unknown offset \"%.*s\"", lineno,
					 (int) key.len, key.s);
			return -1;
		}
		if (seen & (1 << k))
		{
			snprintf(err, errlen, "line %d: duplicate offset %s", lineno, names[k]);
			return -1;
		}
		if (parse_dec(val, LAYOUT_MAX_STRIDE, &v) < 0)
		{
			snprintf(err, errlen, "line %d: bad offset value for %s", lineno, names[k]);
			return -1;
		}
		seen |= 1 << k;
		out[k] = (uint32_t) v;
	}
	return 0;
}

/*
 * parse_array
 *		"<key> <hexaddr> <count> <stride>".
 */
static int
parse_array(const word *w, int nw, uint64_t *addr, uint32_t *count, uint32_t *stride,
			char *err, size_t errlen, int lineno)
{
	uint64_t	c;
	uint64_t	s;

	if (nw != 4)
	{
		snprintf(err, errlen, "line %d: expected <hexaddr> <count> <stride>", lineno);
		return -1;
	}
	if (parse_hex(w[1], 16, addr) < 0 || *addr == 0)
	{
		snprintf(err, errlen, "line %d: bad hex address", lineno);
		return -1;
	}
	if (parse_dec(w[2], LAYOUT_MAX_ARRAY_COUNT, &c) < 0 || c == 0)
	{
		snprintf(err, errlen, "line %d: bad element count", lineno);
		return -1;
	}
	if (parse_dec(w[3], LAYOUT_MAX_STRIDE, &s) < 0 || s == 0)
	{
		snprintf(err, errlen, "line %d: bad stride", lineno);
		return -1;
	}
	*count = (uint32_t) c;
	*stride = (uint32_t) s;
	return 0;
}

/*
 * cmp_event
 *		qsort comparator of wait events by id.
 */
static int
cmp_event(const void *a, const void *b)
{
	uint32_t	x = ((const pgt_wait_event_name *) a)->info;
	uint32_t	y = ((const pgt_wait_event_name *) b)->info;

	return x < y ? -1 : x > y;
}

/*
 * The most bytes of one array the helper copies out of the postmaster's
 * memory at each refresh: PGPROC and PgBackendStatus arrays of servers
 * with tens of thousands of slots fit; a layout asking for more (as one
 * pointing at shared_buffers would) is refused.
 */
#define LAYOUT_MAX_ARRAY_BYTES	(64ULL << 20)

/*
 * check_fields
 *		Cross-field checks once every line is parsed: each field read from
 *		an array element must lie inside the element, and an array must not
 *		be larger than LAYOUT_MAX_ARRAY_BYTES.
 */
static int
check_fields(const pgt_layout *l, char *err, size_t errlen)
{
	if ((uint64_t) l->proc_count * l->proc_stride > LAYOUT_MAX_ARRAY_BYTES ||
		(uint64_t) l->beentry_count * l->beentry_stride > LAYOUT_MAX_ARRAY_BYTES)
	{
		snprintf(err, errlen, "an array larger than %llu MB",
				 (unsigned long long) (LAYOUT_MAX_ARRAY_BYTES >> 20));
		return -1;
	}
	if (l->proc_off_pid + 4 > l->proc_stride ||
		l->proc_off_wait_event_info + 4 > l->proc_stride ||
		l->proc_off_backend_id + 4 > l->proc_stride)
	{
		snprintf(err, errlen, "proc_offsets outside the %u-byte PGPROC stride",
				 l->proc_stride);
		return -1;
	}
	if (l->beentry_off_procpid + 4 > l->beentry_stride ||
		l->beentry_off_query_id + 8 > l->beentry_stride ||
		l->beentry_off_backend_type + 4 > l->beentry_stride)
	{
		snprintf(err, errlen, "beentry_offsets outside the %u-byte PgBackendStatus stride",
				 l->beentry_stride);
		return -1;
	}
	/* BPF compares 16 bytes of bgw_type ("parallel worker") */
	if (l->bgw_size != 0 &&
		(l->bgw_off_type + 16 > l->bgw_size || l->bgw_off_notify_pid + 4 > l->bgw_size))
	{
		snprintf(err, errlen, "bgworker_offsets outside the %u-byte BackgroundWorker",
				 l->bgw_size);
		return -1;
	}
	return 0;
}

/* The three fields each *_offsets line names, in the order they are stored. */
static const char *const proc_names[3] = {"pid", "wait_event_info", "backend_id"};
static const char *const be_names[3] = {"procpid", "query_id", "backend_type"};
static const char *const bgw_names[3] = {"type", "notify_pid", "size"};

/* The keys a file must have, in K_* bit order (for "missing key"). */
static const char *const required_keys[] = {
	"pg_version_num", "postmaster_pid", "postmaster_start_us",
	"proc_array", "proc_offsets", "beentry_array", "beentry_offsets"
};
_Static_assert((1 << sizeof(required_keys) / sizeof(required_keys[0])) - 1 == K_ALL,
			   "required_keys names the K_ALL bits");

/*
 * The state of one layout_parse(): what the lines so far gave, and where
 * the first problem goes.
 */
typedef struct layout_parser
{
	pgt_layout	l;
	int			lineno;
	int			seen;			/* K_* bits of the keys read */
	int			ended;			/* the "end" line was read */
	uint32_t	evcap;			/* slots allocated in l.events */
	char	   *err;
	size_t		errlen;
} layout_parser;

/*
 * line_error
 *		Write "line N: <message>" into the parser's err.  Returns -1.
 */
static int
line_error(layout_parser *p, const char *fmt,...)
__attribute__((format(printf, 2, 3)));

static int
line_error(layout_parser *p, const char *fmt,...)
{
	char		msg[PGT_LAYOUT_MAX_LINE + 64];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "line %d: %s", p->lineno, msg);
	return -1;
}

/*
 * file_error
 *		Write a problem of the whole file into the parser's err.  Returns -1.
 */
static int
file_error(layout_parser *p, const char *fmt,...)
__attribute__((format(printf, 2, 3)));

static int
file_error(layout_parser *p, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(p->err, p->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * take_key
 *		Note that key, of bit, was read on this line.  Returns -1 if it had
 *		been read before.
 */
static int
take_key(layout_parser *p, int bit, word key)
{
	if (p->seen & bit)
		return line_error(p, "duplicate key %.*s", (int) key.len, key.s);
	p->seen |= bit;
	return 0;
}

/*
 * need_words
 *		Returns -1 unless the line is its key and exactly n - 1 values.
 */
static int
need_words(layout_parser *p, const word *w, int nw, int n)
{
	if (nw != n)
		return line_error(p, "%.*s takes %d value(s)", (int) w[0].len, w[0].s, n - 1);
	return 0;
}

/*
 * next_line
 *		Take the line at *pos into *line and *llen (without its LF) and
 *		advance *pos.  Returns -1 if the line lacks its newline, is too
 *		long, holds a byte that is not printable ASCII, or follows "end".
 */
static int
next_line(layout_parser *p, const char *buf, size_t len, size_t *pos,
		  const char **line, size_t *llen)
{
	const char *nl;
	size_t		i;

	*line = buf + *pos;
	nl = memchr(*line, '\n', len - *pos);
	p->lineno++;
	if (nl == NULL)
		return line_error(p, "no final newline");
	*llen = (size_t) (nl - *line);
	*pos += *llen + 1;
	if (*llen + 1 > PGT_LAYOUT_MAX_LINE)
		return line_error(p, "longer than %d bytes", PGT_LAYOUT_MAX_LINE);
	for (i = 0; i < *llen; i++)
	{
		unsigned char c = (unsigned char) (*line)[i];

		if (c < 0x20 || c > 0x7e)
			return line_error(p, "non-printable byte 0x%02x", c);
	}
	if (p->ended)
		return line_error(p, "data after \"end\"");
	return 0;
}

/*
 * parse_header
 *		The first line: "pg_tracer_layout <version>", of the one version
 *		this helper reads.
 */
static int
parse_header(layout_parser *p, const word *w, int nw)
{
	uint64_t	v;

	if (nw != 2 || !word_is(w[0], "pg_tracer_layout"))
		return line_error(p, "not a pg_tracer layout file");
	if (parse_dec(w[1], UINT32_MAX, &v) < 0 || v != PGT_LAYOUT_VERSION)
		return line_error(p, "layout version \"%.*s\", this helper reads %d",
						  (int) w[1].len, w[1].s, PGT_LAYOUT_VERSION);
	return 0;
}

/*
 * parse_number_key
 *		"<key> <decimal>", read once, with the value in [min, max].
 */
static int
parse_number_key(layout_parser *p, const word *w, int nw, int bit,
				 uint64_t min, uint64_t max, uint64_t *out)
{
	if (take_key(p, bit, w[0]) < 0 || need_words(p, w, nw, 2) < 0)
		return -1;
	if (parse_dec(w[1], max, out) < 0 || *out < min)
		return line_error(p, "bad %.*s", (int) w[0].len, w[0].s);
	return 0;
}

/*
 * parse_array_key
 *		"<key> <hexaddr> <count> <stride>", read once.
 */
static int
parse_array_key(layout_parser *p, const word *w, int nw, int bit,
				uint64_t *addr, uint32_t *count, uint32_t *stride)
{
	if (take_key(p, bit, w[0]) < 0)
		return -1;
	return parse_array(w, nw, addr, count, stride, p->err, p->errlen, p->lineno);
}

/*
 * parse_offsets_key
 *		"<key> a=<n> b=<n> c=<n>" with the three names given, read once.
 */
static int
parse_offsets_key(layout_parser *p, const word *w, int nw, int bit,
				  const char *const names[3], uint32_t o[3])
{
	if (take_key(p, bit, w[0]) < 0)
		return -1;
	return parse_offsets(w, nw, names, o, p->err, p->errlen, p->lineno);
}

/*
 * add_event
 *		A zeroed slot at the end of l.events, which grows by doubling up to
 *		PGT_LAYOUT_MAX_EVENTS.  NULL when out of memory.
 */
static pgt_wait_event_name *
add_event(layout_parser *p)
{
	pgt_wait_event_name *ev;

	if (p->l.nevents == p->evcap)
	{
		uint32_t	ncap = p->evcap ? p->evcap * 2 : 256;
		pgt_wait_event_name *nev;

		if (ncap > PGT_LAYOUT_MAX_EVENTS)
			ncap = PGT_LAYOUT_MAX_EVENTS;
		nev = realloc(p->l.events, (size_t) ncap * sizeof(*nev));
		if (nev == NULL)
			return NULL;
		p->l.events = nev;
		p->evcap = ncap;
	}
	ev = &p->l.events[p->l.nevents++];
	memset(ev, 0, sizeof(*ev));
	return ev;
}

/*
 * parse_wait_event
 *		"wait_event <hex id> <class> <name>", the name being the rest of the
 *		line.  Duplicate ids are found once the file is read.
 */
static int
parse_wait_event(layout_parser *p, const word *w, int nw)
{
	pgt_wait_event_name *ev;
	uint64_t	v;

	if (nw != 4)
		return line_error(p, "wait_event takes <hex id> <class> <name>");
	if (p->l.nevents >= PGT_LAYOUT_MAX_EVENTS)
		return line_error(p, "more than %d wait events", PGT_LAYOUT_MAX_EVENTS);
	if (parse_hex(w[1], 8, &v) < 0)
		return line_error(p, "bad hex wait event id");
	if (w[2].len >= PGT_LAYOUT_NAME_LEN || w[3].len >= PGT_LAYOUT_NAME_LEN)
		return line_error(p, "wait event name longer than %d bytes",
						  PGT_LAYOUT_NAME_LEN - 1);
	ev = add_event(p);
	if (ev == NULL)
		return file_error(p, "out of memory");
	ev->info = (uint32_t) v;
	memcpy(ev->class_name, w[2].s, w[2].len);
	memcpy(ev->event_name, w[3].s, w[3].len);
	return 0;
}

/*
 * parse_offsets_line
 *		The three *_offsets keys.  Returns 1 if w[0] is none of them, else
 *		0 or -1.
 */
static int
parse_offsets_line(layout_parser *p, const word *w, int nw)
{
	pgt_layout *l = &p->l;
	uint32_t	o[3];

	if (word_is(w[0], "proc_offsets"))
	{
		if (parse_offsets_key(p, w, nw, K_PROC_OFFSETS, proc_names, o) < 0)
			return -1;
		l->proc_off_pid = o[0];
		l->proc_off_wait_event_info = o[1];
		l->proc_off_backend_id = o[2];
	}
	else if (word_is(w[0], "beentry_offsets"))
	{
		if (parse_offsets_key(p, w, nw, K_BE_OFFSETS, be_names, o) < 0)
			return -1;
		l->beentry_off_procpid = o[0];
		l->beentry_off_query_id = o[1];
		l->beentry_off_backend_type = o[2];
	}
	else if (word_is(w[0], "bgworker_offsets"))
	{
		if (parse_offsets_key(p, w, nw, K_BGW_OFFSETS, bgw_names, o) < 0)
			return -1;
		if (o[2] == 0)
			return line_error(p, "bgworker_offsets size 0");
		l->bgw_off_type = o[0];
		l->bgw_off_notify_pid = o[1];
		l->bgw_size = o[2];
	}
	else
		return 1;
	return 0;
}

/*
 * parse_number_line
 *		The three keys with one number.  Returns 1 if w[0] is none of them,
 *		else 0 or -1.
 */
static int
parse_number_line(layout_parser *p, const word *w, int nw)
{
	pgt_layout *l = &p->l;
	uint64_t	v;

	if (word_is(w[0], "pg_version_num"))
	{
		if (parse_number_key(p, w, nw, K_VERSION_NUM, 90600, 9999999, &v) < 0)
			return -1;
		l->pg_version_num = (uint32_t) v;
	}
	else if (word_is(w[0], "postmaster_pid"))
	{
		if (parse_number_key(p, w, nw, K_PM_PID, 1, INT32_MAX, &v) < 0)
			return -1;
		l->postmaster_pid = (uint32_t) v;
	}
	else if (word_is(w[0], "postmaster_start_us"))
	{
		if (parse_number_key(p, w, nw, K_PM_START, 0, INT64_MAX, &v) < 0)
			return -1;
		l->postmaster_start_us = (int64_t) v;
	}
	else
		return 1;
	return 0;
}

/*
 * parse_key_line
 *		Any line after the first: one key and its values.
 */
static int
parse_key_line(layout_parser *p, const word *w, int nw)
{
	pgt_layout *l = &p->l;
	int			r;

	if (word_is(w[0], "proc_array"))
		return parse_array_key(p, w, nw, K_PROC_ARRAY, &l->proc_array,
							   &l->proc_count, &l->proc_stride);
	if (word_is(w[0], "beentry_array"))
		return parse_array_key(p, w, nw, K_BE_ARRAY, &l->beentry_array,
							   &l->beentry_count, &l->beentry_stride);
	if (word_is(w[0], "wait_event"))
		return parse_wait_event(p, w, nw);
	if (word_is(w[0], "end"))
	{
		p->ended = 1;
		return need_words(p, w, nw, 1);
	}
	if ((r = parse_number_line(p, w, nw)) != 1)
		return r;
	if ((r = parse_offsets_line(p, w, nw)) != 1)
		return r;
	return line_error(p, "unknown key \"%.*s\"",
					  (int) (w[0].len > 40 ? 40 : w[0].len), w[0].s);
}

/*
 * parse_line
 *		Split one line into words and parse it: the header on line 1, a key
 *		line after it.  A wait_event line keeps the rest of the line, from
 *		its fourth word on, as the event name.
 */
static int
parse_line(layout_parser *p, const char *line, size_t llen)
{
	word		w[5];
	int			nw;

	if (llen > 11 && memcmp(line, "wait_event ", 11) == 0)
		nw = split_words(line, llen, w, 4, 3);
	else
		nw = split_words(line, llen, w, 5, -1);
	if (nw < 1)
		return line_error(p, "empty line, bad spacing or too many fields");
	if (p->lineno == 1)
		return parse_header(p, w, nw);
	return parse_key_line(p, w, nw);
}

/*
 * check_complete
 *		Once every line is read: the file had lines, ended with "end", had
 *		every required key, its fields lie inside their elements, and no
 *		wait event id came twice (the events are sorted by id here).
 */
static int
check_complete(layout_parser *p)
{
	pgt_layout *l = &p->l;
	uint32_t	i;

	if (p->lineno == 0)
		return file_error(p, "layout file is empty");
	if (!p->ended)
		return file_error(p, "missing \"end\" line (file truncated?)");
	for (i = 0; i < sizeof(required_keys) / sizeof(required_keys[0]); i++)
		if (!(p->seen & (1 << i)))
			return file_error(p, "missing key %s", required_keys[i]);
	if (check_fields(l, p->err, p->errlen) < 0)
		return -1;
	if (l->nevents > 1)
		qsort(l->events, l->nevents, sizeof(*l->events), cmp_event);
	for (i = 1; i < l->nevents; i++)
		if (l->events[i].info == l->events[i - 1].info)
			return file_error(p, "duplicate wait event id 0x%08x",
							  l->events[i].info);
	return 0;
}

/*
 * layout_parse
 *		Parse a whole layout file (buf, len bytes) into out.  Returns 0, or
 *		-1 with the first problem in err ("line N: ..."); out is left empty
 *		(nothing to free) on failure.
 */
int
layout_parse(const char *buf, size_t len, pgt_layout *out, char *err, size_t errlen)
{
	layout_parser p;
	size_t		pos = 0;

	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	p.err = err;
	p.errlen = errlen;
	if (len > PGT_LAYOUT_MAX_BYTES)
	{
		snprintf(err, errlen, "layout file is %zu bytes, at most %d allowed",
				 len, PGT_LAYOUT_MAX_BYTES);
		return -1;
	}
	while (pos < len)
	{
		const char *line = NULL;
		size_t		llen = 0;

		if (next_line(&p, buf, len, &pos, &line, &llen) < 0 ||
			parse_line(&p, line, llen) < 0)
			goto fail;
	}
	if (check_complete(&p) < 0)
		goto fail;
	*out = p.l;
	return 0;

fail:
	free(p.l.events);
	return -1;
}

/*
 * layout_free
 *		Release what layout_parse() allocated; the struct is zeroed.
 */
void
layout_free(pgt_layout *layout)
{
	free(layout->events);
	memset(layout, 0, sizeof(*layout));
}

/*
 * open_regular
 *		Open path for reading when it is a regular file, never through a
 *		symlink; *lst gets its lstat.  Returns the descriptor, or -1 with err
 *		set and errno that of the failed call (EINVAL for another kind of
 *		file).
 */
static int
open_regular(const char *path, struct stat *lst, char *err, size_t errlen)
{
	int			fd;
	int			saved;

	if (lstat(path, lst) < 0)
	{
		saved = errno;
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		errno = saved;
		return -1;
	}
	if (!S_ISREG(lst->st_mode))
	{
		snprintf(err, errlen, "%s is not a regular file", path);
		errno = EINVAL;
		return -1;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
	{
		saved = errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		errno = saved;
	}
	return fd;
}

/*
 * check_opened
 *		The file open at fd must be the one lstat saw at path, owned by
 *		owner, not writable by group or others, at most
 *		PGT_LAYOUT_MAX_BYTES.  *st_out gets its fstat.  Returns 0, or -1
 *		with err set.
 */
static int
check_opened(const char *path, int fd, const struct stat *lst, uid_t owner,
			 struct stat *st_out, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
	{
		snprintf(err, errlen, "cannot fstat %s: %s", path, strerror(errno));
		return -1;
	}
	*st_out = st;
	if (!S_ISREG(st.st_mode) || st.st_ino != lst->st_ino || st.st_dev != lst->st_dev)
		snprintf(err, errlen, "%s changed while it was opened", path);
	else if (st.st_uid != owner)
		snprintf(err, errlen, "%s is owned by uid %d, not by the cluster owner %d",
				 path, (int) st.st_uid, (int) owner);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		snprintf(err, errlen, "%s is writable by group or others (mode %04o)",
				 path, (unsigned) (st.st_mode & 07777));
	else if (st.st_size > PGT_LAYOUT_MAX_BYTES)
		snprintf(err, errlen, "%s is %lld bytes, at most %d allowed", path,
				 (long long) st.st_size, PGT_LAYOUT_MAX_BYTES);
	else
		return 0;
	return -1;
}

/*
 * layout_load
 *		Open, check and parse the layout file at path.  The file must be a
 *		regular file (lstat and O_NOFOLLOW: no symlink), owned by `owner`,
 *		not writable by group or others, at most PGT_LAYOUT_MAX_BYTES.
 *		Fills *st_out with the file's fstat (mtime for reload detection)
 *		even when parsing fails.  Returns 0, or -1 with err set (errno ENOENT
 *		preserved for a missing file).
 */
int
layout_load(const char *path, uid_t owner, pgt_layout *out, struct stat *st_out,
			char *err, size_t errlen)
{
	struct stat lst;
	char	   *buf = NULL;
	ssize_t		len;
	int			fd;
	int			ret = -1;

	memset(out, 0, sizeof(*out));
	memset(st_out, 0, sizeof(*st_out));
	fd = open_regular(path, &lst, err, errlen);
	if (fd < 0)
		return -1;
	if (check_opened(path, fd, &lst, owner, st_out, err, errlen) < 0)
		goto cleanup;
	buf = malloc((size_t) PGT_LAYOUT_MAX_BYTES + 1);
	if (buf == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	len = fd_read_full(fd, buf, (size_t) PGT_LAYOUT_MAX_BYTES + 1);
	if (len < 0)
	{
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		goto cleanup;
	}
	if (layout_parse(buf, (size_t) len, out, err, errlen) < 0)
		goto cleanup;
	ret = 0;

cleanup:
	free(buf);
	close(fd);
	if (ret < 0)
		errno = EINVAL;
	return ret;
}
