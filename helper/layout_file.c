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
			w[n].s = s + start;
			w[n].len = len - start;
			return w[n].len == 0 ? -1 : n + 1;
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

/*
 * layout_parse
 *		Parse a whole layout file (buf, len bytes) into out.  Returns 0, or
 *		-1 with the first problem in err ("line N: ..."); out is left empty
 *		(nothing to free) on failure.
 */
int
layout_parse(const char *buf, size_t len, pgt_layout *out, char *err, size_t errlen)
{
	static const char *const proc_names[3] = {"pid", "wait_event_info", "backend_id"};
	static const char *const be_names[3] = {"procpid", "query_id", "backend_type"};
	static const char *const bgw_names[3] = {"type", "notify_pid", "size"};
	pgt_layout	l;
	size_t		pos = 0;
	int			lineno = 0;
	int			seen = 0;
	int			ended = 0;
	uint32_t	evcap = 0;
	uint32_t	i;

	memset(out, 0, sizeof(*out));
	memset(&l, 0, sizeof(l));
	if (len > PGT_LAYOUT_MAX_BYTES)
	{
		snprintf(err, errlen, "layout file is %zu bytes, at most %d allowed",
				 len, PGT_LAYOUT_MAX_BYTES);
		return -1;
	}

	while (pos < len)
	{
		const char *line = buf + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t		llen;
		word		w[5];
		int			nw;
		uint64_t	v;

		lineno++;
		if (nl == NULL)
		{
			snprintf(err, errlen, "line %d: no final newline", lineno);
			goto fail;
		}
		llen = (size_t) (nl - line);
		pos += llen + 1;
		if (llen + 1 > PGT_LAYOUT_MAX_LINE)
		{
			snprintf(err, errlen, "line %d: longer than %d bytes", lineno,
					 PGT_LAYOUT_MAX_LINE);
			goto fail;
		}
		for (i = 0; i < llen; i++)
		{
			unsigned char c = (unsigned char) line[i];

			if (c < 0x20 || c > 0x7e)
			{
				snprintf(err, errlen, "line %d: non-printable byte 0x%02x", lineno, c);
				goto fail;
			}
		}
		if (ended)
		{
			snprintf(err, errlen, "line %d: data after \"end\"", lineno);
			goto fail;
		}

		/* wait_event keeps the rest of the line as the event name */
		if (llen > 11 && memcmp(line, "wait_event ", 11) == 0)
			nw = split_words(line, llen, w, 4, 3);
		else
			nw = split_words(line, llen, w, 5, -1);
		if (nw < 1)
		{
			snprintf(err, errlen, "line %d: empty line, bad spacing or too many fields", lineno);
			goto fail;
		}

		if (lineno == 1)
		{
			if (nw != 2 || !word_is(w[0], "pg_tracer_layout"))
			{
				snprintf(err, errlen, "line 1: not a pg_tracer layout file");
				goto fail;
			}
			if (parse_dec(w[1], UINT32_MAX, &v) < 0 || v != PGT_LAYOUT_VERSION)
			{
				snprintf(err, errlen, "line 1: layout version \"%.*s\", this helper reads %d",
						 (int) w[1].len, w[1].s, PGT_LAYOUT_VERSION);
				goto fail;
			}
			continue;
		}

#define ONCE(bit, name) \
		do { \
			if (seen & (bit)) \
			{ \
				snprintf(err, errlen, "line %d: duplicate key %s", lineno, name); \
				goto fail; \
			} \
			seen |= (bit); \
		} while (0)
#define NEED_WORDS(n) \
		do { \
			if (nw != (n)) \
			{ \
				snprintf(err, errlen, "line %d: %.*s takes %d value(s)", lineno, \
						 (int) w[0].len, w[0].s, (n) - 1); \
				goto fail; \
			} \
		} while (0)

		if (word_is(w[0], "pg_version_num"))
		{
			ONCE(K_VERSION_NUM, "pg_version_num");
			NEED_WORDS(2);
			if (parse_dec(w[1], 9999999, &v) < 0 || v < 90600)
			{
				snprintf(err, errlen, "line %d: bad pg_version_num", lineno);
				goto fail;
			}
			l.pg_version_num = (uint32_t) v;
		}
		else if (word_is(w[0], "postmaster_pid"))
		{
			ONCE(K_PM_PID, "postmaster_pid");
			NEED_WORDS(2);
			if (parse_dec(w[1], INT32_MAX, &v) < 0 || v == 0)
			{
				snprintf(err, errlen, "line %d: bad postmaster_pid", lineno);
				goto fail;
			}
			l.postmaster_pid = (uint32_t) v;
		}
		else if (word_is(w[0], "postmaster_start_us"))
		{
			ONCE(K_PM_START, "postmaster_start_us");
			NEED_WORDS(2);
			if (parse_dec(w[1], INT64_MAX, &v) < 0)
			{
				snprintf(err, errlen, "line %d: bad postmaster_start_us", lineno);
				goto fail;
			}
			l.postmaster_start_us = (int64_t) v;
		}
		else if (word_is(w[0], "proc_array"))
		{
			ONCE(K_PROC_ARRAY, "proc_array");
			if (parse_array(w, nw, &l.proc_array, &l.proc_count, &l.proc_stride,
							err, errlen, lineno) < 0)
				goto fail;
		}
		else if (word_is(w[0], "proc_offsets"))
		{
			uint32_t	o[3];

			ONCE(K_PROC_OFFSETS, "proc_offsets");
			if (parse_offsets(w, nw, proc_names, o, err, errlen, lineno) < 0)
				goto fail;
			l.proc_off_pid = o[0];
			l.proc_off_wait_event_info = o[1];
			l.proc_off_backend_id = o[2];
		}
		else if (word_is(w[0], "beentry_array"))
		{
			ONCE(K_BE_ARRAY, "beentry_array");
			if (parse_array(w, nw, &l.beentry_array, &l.beentry_count,
							&l.beentry_stride, err, errlen, lineno) < 0)
				goto fail;
		}
		else if (word_is(w[0], "beentry_offsets"))
		{
			uint32_t	o[3];

			ONCE(K_BE_OFFSETS, "beentry_offsets");
			if (parse_offsets(w, nw, be_names, o, err, errlen, lineno) < 0)
				goto fail;
			l.beentry_off_procpid = o[0];
			l.beentry_off_query_id = o[1];
			l.beentry_off_backend_type = o[2];
		}
		else if (word_is(w[0], "bgworker_offsets"))
		{
			uint32_t	o[3];

			ONCE(K_BGW_OFFSETS, "bgworker_offsets");
			if (parse_offsets(w, nw, bgw_names, o, err, errlen, lineno) < 0)
				goto fail;
			if (o[2] == 0)
			{
				snprintf(err, errlen, "line %d: bgworker_offsets size 0", lineno);
				goto fail;
			}
			l.bgw_off_type = o[0];
			l.bgw_off_notify_pid = o[1];
			l.bgw_size = o[2];
		}
		else if (word_is(w[0], "wait_event"))
		{
			pgt_wait_event_name *ev;

			if (nw != 4)
			{
				snprintf(err, errlen, "line %d: wait_event takes <hex id> <class> <name>",
						 lineno);
				goto fail;
			}
			if (l.nevents >= PGT_LAYOUT_MAX_EVENTS)
			{
				snprintf(err, errlen, "line %d: more than %d wait events", lineno,
						 PGT_LAYOUT_MAX_EVENTS);
				goto fail;
			}
			if (parse_hex(w[1], 8, &v) < 0)
			{
				snprintf(err, errlen, "line %d: bad hex wait event id", lineno);
				goto fail;
			}
			if (w[2].len >= PGT_LAYOUT_NAME_LEN || w[3].len >= PGT_LAYOUT_NAME_LEN)
			{
				snprintf(err, errlen, "line %d: wait event name longer than %d bytes",
						 lineno, PGT_LAYOUT_NAME_LEN - 1);
				goto fail;
			}
			if (l.nevents == evcap)
			{
				uint32_t	ncap = evcap ? evcap * 2 : 256;
				pgt_wait_event_name *nev;

				if (ncap > PGT_LAYOUT_MAX_EVENTS)
					ncap = PGT_LAYOUT_MAX_EVENTS;
				nev = realloc(l.events, (size_t) ncap * sizeof(*nev));
				if (nev == NULL)
				{
					snprintf(err, errlen, "out of memory");
					goto fail;
				}
				l.events = nev;
				evcap = ncap;
			}
			ev = &l.events[l.nevents++];
			memset(ev, 0, sizeof(*ev));
			ev->info = (uint32_t) v;
			memcpy(ev->class_name, w[2].s, w[2].len);
			memcpy(ev->event_name, w[3].s, w[3].len);
		}
		else if (word_is(w[0], "end"))
		{
			NEED_WORDS(1);
			ended = 1;
		}
		else
		{
			snprintf(err, errlen, "line %d: unknown key \"%.*s\"", lineno,
					 (int) (w[0].len > 40 ? 40 : w[0].len), w[0].s);
			goto fail;
		}
#undef ONCE
#undef NEED_WORDS
	}

	if (lineno == 0)
	{
		snprintf(err, errlen, "layout file is empty");
		goto fail;
	}
	if (!ended)
	{
		snprintf(err, errlen, "missing \"end\" line (file truncated?)");
		goto fail;
	}
	if ((seen & K_ALL) != K_ALL)
	{
		static const char *const names[] = {
			"pg_version_num", "postmaster_pid", "postmaster_start_us",
			"proc_array", "proc_offsets", "beentry_array", "beentry_offsets"
		};

		for (i = 0; i < 7; i++)
			if (!(seen & (1 << i)))
				break;
		snprintf(err, errlen, "missing key %s", names[i]);
		goto fail;
	}
	if (check_fields(&l, err, errlen) < 0)
		goto fail;
	if (l.nevents > 1)
	{
		qsort(l.events, l.nevents, sizeof(*l.events), cmp_event);
		for (i = 1; i < l.nevents; i++)
		{
			if (l.events[i].info == l.events[i - 1].info)
			{
				snprintf(err, errlen, "duplicate wait event id 0x%08x", l.events[i].info);
				goto fail;
			}
		}
	}
	*out = l;
	return 0;

fail:
	free(l.events);
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
	struct stat st;
	char	   *buf = NULL;
	ssize_t		len;
	int			fd = -1;
	int			ret = -1;
	int			saved;

	memset(out, 0, sizeof(*out));
	memset(st_out, 0, sizeof(*st_out));
	if (lstat(path, &lst) < 0)
	{
		saved = errno;
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		errno = saved;
		return -1;
	}
	if (!S_ISREG(lst.st_mode))
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
		return -1;
	}
	if (fstat(fd, &st) < 0)
	{
		snprintf(err, errlen, "cannot fstat %s: %s", path, strerror(errno));
		goto cleanup;
	}
	*st_out = st;
	if (!S_ISREG(st.st_mode) || st.st_ino != lst.st_ino || st.st_dev != lst.st_dev)
	{
		snprintf(err, errlen, "%s changed while it was opened", path);
		goto cleanup;
	}
	if (st.st_uid != owner)
	{
		snprintf(err, errlen, "%s is owned by uid %d, not by the cluster owner %d",
				 path, (int) st.st_uid, (int) owner);
		goto cleanup;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH))
	{
		snprintf(err, errlen, "%s is writable by group or others (mode %04o)",
				 path, (unsigned) (st.st_mode & 07777));
		goto cleanup;
	}
	if (st.st_size > PGT_LAYOUT_MAX_BYTES)
	{
		snprintf(err, errlen, "%s is %lld bytes, at most %d allowed", path,
				 (long long) st.st_size, PGT_LAYOUT_MAX_BYTES);
		goto cleanup;
	}
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
	if (fd >= 0)
		close(fd);
	if (ret < 0)
		errno = EINVAL;
	return ret;
}
