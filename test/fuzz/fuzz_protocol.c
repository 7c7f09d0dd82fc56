/*
 * test/fuzz/fuzz_protocol.c
 *	  Both ends of the control socket's line protocol (common/pgt_protocol.c,
 *	  helper/control_server.c) on arbitrary lines.
 *
 * The helper parses what any backend sends (it answers only root and the
 * cluster's owner, but a backend runs user code); the extension parses
 * what the helper answers.  Each request gets one response, and that
 * response must be a line the extension's parser accepts: the two ends
 * may never disagree about the framing.  A parsed request's words are
 * terminated and printable; a parsed response's text lies inside the line.
 *
 * Input: byte 0 bit 0 chooses the end (0: a request to the helper, 1: a
 * response to the extension), the rest is the line.
 */
#include "fuzz.h"
#include "control_server.h"
#include "pgt_protocol.h"

/* The helper's answer to one request, checked against the extension's parser. */
static void
request_roundtrip(const char *line, size_t len)
{
	control_info info = {
		.version = "fuzz", .generation = 3, .writer_pid = 1, .attached = 1,
		.postmaster_pid = 2, .backends = 4, .reset = NULL, .reset_arg = NULL
	};
	char		out[PGT_PROTO_MAX_RESPONSE + 1];
	const char *text;
	size_t		text_len;
	pgt_request req;
	char		err[128] = "";
	int			n;

	if (pgt_parse_request(line, len, &req, err, sizeof(err)) == 0)
	{
		FUZZ_EXPECT(req.nargs >= 0 && req.nargs <= PGT_PROTO_MAX_ARGS);
		FUZZ_EXPECT(fuzz_terminated(req.verb, sizeof(req.verb)) && req.verb[0] != '\0');
		FUZZ_EXPECT(fuzz_printable(req.verb));
		for (int i = 0; i < req.nargs; i++)
			FUZZ_EXPECT(fuzz_terminated(req.args[i], sizeof(req.args[i])) &&
						fuzz_printable(req.args[i]));
	}
	else
		FUZZ_EXPECT(err[0] != '\0' && fuzz_printable(err));

	n = control_respond(line, len, &info, out, sizeof(out));
	FUZZ_EXPECT(n > 0 && (size_t) n < sizeof(out));
	FUZZ_EXPECT(pgt_parse_response(out, (size_t) n, &text, &text_len) >= 0);
}

/* The extension's parse of one response line. */
static void
parse_response(const char *line, size_t len)
{
	const char *text;
	size_t		text_len;
	int			r = pgt_parse_response(line, len, &text, &text_len);

	if (r < 0)
		return;
	FUZZ_EXPECT(r == 0 || r == 1);
	FUZZ_EXPECT(text != NULL && text >= line && text + text_len <= line + len);
	for (size_t i = 0; i < text_len; i++)
		FUZZ_EXPECT(text[i] >= 0x20 && text[i] <= 0x7e);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *line;

	if (size == 0)
		return 0;
	/* the first byte picks the parser; the parsers get no NUL to lean on */
	line = fuzz_exact_copy(data + 1, size - 1);
	if (data[0] & 1)
		parse_response(line, size - 1);
	else
		request_roundtrip(line, size - 1);
	free(line);
	return 0;
}
