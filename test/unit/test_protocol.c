/*
 * test_protocol.c — strict parsing of control-socket requests and
 * responses (common/pgt_protocol.c).
 */
#include "unit.h"
#include "pgt_protocol.h"

#include <string.h>

static int
req(const char *s, pgt_request *r)
{
	char		err[128];

	return pgt_parse_request(s, strlen(s), r, err, sizeof(err));
}

int
main(void)
{
	pgt_request r;
	const char *text;
	size_t		tlen;
	char		big[400];

	CHECK(req("PGT/1 PING\n", &r) == 0 && strcmp(r.verb, "PING") == 0 && r.nargs == 0, "PING");
	CHECK(req("PGT/1 ESCALATE 60 alice\n", &r) == 0 && r.nargs == 2 &&
		  strcmp(r.args[0], "60") == 0 && strcmp(r.args[1], "alice") == 0, "arguments");
	CHECK(req("PGT/1 A 1 2 3 4\n", &r) == 0 && r.nargs == 4, "four arguments");
	CHECK(req("PGT/1 A 1 2 3 4 5\n", &r) == -1, "five arguments refused");
	CHECK(req("PGT/1 PING", &r) == -1, "missing LF");
	CHECK(req("PGT/1 PING\n\n", &r) == -1, "two lines");
	CHECK(req("PGT/2 PING\n", &r) == -1, "other protocol version");
	CHECK(req("PING\n", &r) == -1, "missing tag");
	CHECK(req("PGT/1 \n", &r) == -1, "missing verb");
	CHECK(req("PGT/1  PING\n", &r) == -1, "double space");
	CHECK(req("PGT/1 PING \n", &r) == -1, "trailing space");
	CHECK(req("PGT/1 PI\tNG\n", &r) == -1, "control character");
	CHECK(pgt_parse_request("PGT/1 PI\0NG\n", 12, &r, big, 10) == -1, "NUL byte");
	CHECK(req("PGT/1 P\xc3\xa9NG\n", &r) == -1, "non-ASCII");
	memset(big, 'A', sizeof(big));
	memcpy(big, "PGT/1 ", 6);
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = '\0';
	CHECK(req(big, &r) == -1, "overlong request");
	memset(big, 'A', 80);
	memcpy(big, "PGT/1 ", 6);
	strcpy(big + 80, "\n");
	CHECK(req(big, &r) == -1, "overlong word");

	CHECK(pgt_parse_response("PGT/1 OK pong version=0.1\n", 26, &text, &tlen) == 1 &&
		  tlen == 16 && strncmp(text, "pong version=0.1", tlen) == 0, "OK response");
	CHECK(pgt_parse_response("PGT/1 ERR denied uid 7\n", 23, &text, &tlen) == 0 &&
		  strncmp(text, "denied uid 7", tlen) == 0, "ERR response");
	CHECK(pgt_parse_response("PGT/1 MAYBE x\n", 14, &text, &tlen) == -1, "unknown status");
	CHECK(pgt_parse_response("PGT/1 OK x", 10, &text, &tlen) == -1, "no LF");
	CHECK(pgt_parse_response("HTTP/1.1 200 OK\n", 16, &text, &tlen) == -1, "foreign reply");
	CHECK(pgt_parse_response("PGT/1 OK \x1b[31m\n", 15, &text, &tlen) == -1, "escape sequence");
	UNIT_MAIN_END("test_protocol");
}
