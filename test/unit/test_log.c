/*
 * test/unit/test_log.c
 *	  The helper's log lines (helper/log.c): one line a message, with its
 *	  level, and text other users choose (process titles, paths) written
 *	  so that no control byte reaches a terminal.
 */
#include "log.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * logged
 *		What log_msg writes to stderr for level and msg, with the prefix up
 *		to ": " cut; NULL when nothing.  Static buffer.
 */
static const char *
logged(enum log_level level, const char *msg)
{
	static char out[8192];
	FILE	   *tmp = tmpfile();
	int			saved = dup(STDERR_FILENO);
	size_t		n = 0;
	char	   *body;

	out[0] = '\0';
	if (tmp == NULL || saved < 0 || dup2(fileno(tmp), STDERR_FILENO) < 0)
		return NULL;
	log_msg(level, "%s", msg);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, sizeof(out) - 1, tmp);
	fclose(tmp);
	out[n] = '\0';
	if (n == 0)
		return NULL;
	body = strstr(out, ": ");
	return body ? body + 2 : out;
}

static void
test_plain(void)
{
	const char *l;

	log_set_level(LOG_LEVEL_INFO);
	l = logged(LOG_LEVEL_WARN, "cluster /srv/pg data \xc3\xa9t\xc3\xa9 attached\n\n");
	CHECK_STR(l, "cluster /srv/pg data \xc3\xa9t\xc3\xa9 attached\n");
	CHECK(logged(LOG_LEVEL_DEBUG, "not shown") == NULL, "below the level: nothing");
	log_set_level(LOG_LEVEL_DEBUG);
	CHECK(logged(LOG_LEVEL_DEBUG, "shown") != NULL, "at the level: written");
}

static void
test_escapes(void)
{
	const char *l;

	log_set_level(LOG_LEVEL_INFO);
	l = logged(LOG_LEVEL_ERROR, "title \x1b[31mRED\x1b[0m\tnext\nline \x7f \xc2\x9b \xff \xe2\x82");
	CHECK_STR(l, "title \\x1b[31mRED\\x1b[0m\\x09next\\x0aline \\x7f \\xc2\\x9b \\xff \\xe2\\x82\n");
	CHECK(l && strchr(l, '\x1b') == NULL, "no escape byte left");
}

/* A message past the line's room is cut between characters, not in one. */
static void
test_long(void)
{
	char		msg[4000];
	const char *l;
	size_t		len;

	memset(msg, 'a', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	for (size_t i = 2000; i + 1 < sizeof(msg); i += 4)
		memcpy(msg + i, "\x01\xc3\xa9", 3);
	log_set_level(LOG_LEVEL_INFO);
	l = logged(LOG_LEVEL_WARN, msg);
	CHECK(l != NULL, "long message written");
	if (l == NULL)
		return;
	len = strlen(l);
	CHECK(len > 1000 && l[len - 1] == '\n' && strchr(l, '\n') == l + len - 1,
		  "one line, ending in its newline (%zu bytes)", len);
	CHECK(len < 2 || l[len - 2] == 'a' || l[len - 2] == '1' || (unsigned char) l[len - 2] == 0xa9,
		  "cut after a whole character or escape (ends 0x%02x)", (unsigned char) l[len - 2]);
}

int
main(void)
{
	test_plain();
	test_escapes();
	test_long();
	UNIT_MAIN_END("test_log");
}
