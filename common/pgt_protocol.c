/*-------------------------------------------------------------------------
 *
 * pgt_protocol.c
 *	  Strict parsing of control-socket requests (helper side) and
 *	  responses (extension side); the grammar is in pgt_protocol.h.
 *
 * Plain C, no allocation, no locking: both sides call these on a buffer
 * they own.  Every byte is checked; anything outside the grammar is
 * rejected with a reason rather than guessed at.
 *
 *-------------------------------------------------------------------------
 */
#include "pgt_protocol.h"

#include <stdio.h>
#include <string.h>

#define TAG_LEN (sizeof(PGT_PROTO_TAG) - 1)

/*
 * printable_line
 *		True when buf[0..len-1] is printable ASCII followed by exactly one LF
 *		at buf[len-1]... i.e. len includes the LF.
 */
static int
printable_line(const char *buf, size_t len)
{
	size_t		i;

	if (len == 0 || buf[len - 1] != '\n')
		return 0;
	for (i = 0; i + 1 < len; i++)
	{
		unsigned char c = (unsigned char) buf[i];

		if (c < 0x20 || c > 0x7e)
			return 0;
	}
	return 1;
}

/*
 * pgt_parse_request
 *		"PGT/1 VERB [ARG ...]\n" -> req.  Returns 0, or -1 with err set.
 */
int
pgt_parse_request(const char *buf, size_t len, pgt_request *req,
				  char *err, size_t errlen)
{
	size_t		pos;
	size_t		end;
	int			word = 0;

	memset(req, 0, sizeof(*req));
	if (len > PGT_PROTO_MAX_REQUEST)
	{
		snprintf(err, errlen, "request longer than %d bytes", PGT_PROTO_MAX_REQUEST);
		return -1;
	}
	if (!printable_line(buf, len))
	{
		snprintf(err, errlen, "request must be printable ASCII ending in one LF");
		return -1;
	}
	end = len - 1;
	if (end < TAG_LEN + 2 || memcmp(buf, PGT_PROTO_TAG " ", TAG_LEN + 1) != 0)
	{
		snprintf(err, errlen, "request must start with \"%s \"", PGT_PROTO_TAG);
		return -1;
	}

	pos = TAG_LEN + 1;
	while (pos < end)
	{
		size_t		start = pos;
		size_t		wlen;
		char	   *dst;

		while (pos < end && buf[pos] != ' ')
			pos++;
		wlen = pos - start;
		if (wlen == 0)
		{
			snprintf(err, errlen, "empty word (double or trailing space)");
			return -1;
		}
		if (wlen > PGT_PROTO_MAX_WORD)
		{
			snprintf(err, errlen, "word longer than %d bytes", PGT_PROTO_MAX_WORD);
			return -1;
		}
		if (word > PGT_PROTO_MAX_ARGS)
		{
			snprintf(err, errlen, "more than %d arguments", PGT_PROTO_MAX_ARGS);
			return -1;
		}
		dst = word == 0 ? req->verb : req->args[word - 1];
		memcpy(dst, buf + start, wlen);
		dst[wlen] = '\0';
		word++;
		if (pos < end)
		{
			pos++;				/* the single separating space */
			if (pos == end)
			{
				snprintf(err, errlen, "empty word (double or trailing space)");
				return -1;
			}
		}
	}
	if (word == 0)
	{
		snprintf(err, errlen, "missing verb");
		return -1;
	}
	req->nargs = word - 1;
	return 0;
}

/*
 * pgt_parse_response
 *		"PGT/1 OK text\n" -> 1, "PGT/1 ERR text\n" -> 0, anything else -> -1.
 */
int
pgt_parse_response(const char *buf, size_t len, const char **text, size_t *text_len)
{
	size_t		body;
	int			ok;

	*text = NULL;
	*text_len = 0;
	if (len > PGT_PROTO_MAX_RESPONSE || !printable_line(buf, len))
		return -1;
	if (len < TAG_LEN + 1 || memcmp(buf, PGT_PROTO_TAG " ", TAG_LEN + 1) != 0)
		return -1;
	body = TAG_LEN + 1;
	if (len - body >= 4 && memcmp(buf + body, "OK ", 3) == 0)
	{
		ok = 1;
		body += 3;
	}
	else if (len - body >= 5 && memcmp(buf + body, "ERR ", 4) == 0)
	{
		ok = 0;
		body += 4;
	}
	else
		return -1;
	*text = buf + body;
	*text_len = len - 1 - body;
	return ok;
}
