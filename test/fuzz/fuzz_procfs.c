/*
 * test/fuzz/fuzz_procfs.c
 *	  The helper's parsers of /proc text (helper/procfs.c) and of the
 *	  postmaster's pid file (helper/pidfile.c) on arbitrary bytes.
 *
 * The helper runs as root and reads these for processes that are not its
 * own: a process title is whatever the process writes into its argv (a
 * client backend's shows the user, database and client names), a comm can
 * hold spaces and parentheses, postmaster.pid is written by the postgres
 * user.  What a parse hands back must be terminated and in range.
 *
 * Input: byte 0 (modulo 6) chooses the parser, the rest is the text.
 */
#include "fuzz.h"
#include "pgt_segment.h"
#include "pidfile.h"
#include "procfs.h"

/* /proc/<pid>/stat */
static void
parse_stat(const char *buf, size_t len)
{
	proc_stat	st;

	if (procfs_parse_stat(buf, len, &st) == 0)
		FUZZ_EXPECT(fuzz_terminated(st.comm, sizeof(st.comm)));
}

/* A process title (/proc/<pid>/cmdline) */
static void
classify_title(const char *buf, size_t len)
{
	uint32_t	role = procfs_classify_title(buf, len);
	uint32_t	leader = procfs_parallel_leader(buf, len);

	FUZZ_EXPECT(role <= PGT_ROLE_OTHER);
	FUZZ_EXPECT(leader == 0 || role == PGT_ROLE_PARALLEL_WORKER);
	/* a title that names the sampler is a server child's (the daemon also checks its role) */
	FUZZ_EXPECT(!procfs_title_is(buf, len, "pg_tracer sampler") ||
				(len >= 10 && memcmp(buf, "postgres: ", 10) == 0 && role != PGT_ROLE_UNKNOWN));
}

/* /proc/<pid>/status: the NSpid and Uid lines */
static void
parse_nspid(const char *buf, size_t len)
{
	int32_t		inner = 0;
	uint32_t	uids[4];

	if (procfs_parse_nspid(buf, len, &inner) == 0)
		FUZZ_EXPECT(inner > 0);
	if (procfs_parse_uids(buf, len, uids) == 0)
		FUZZ_EXPECT(memmem(buf, len, "Uid:", 4) != NULL);
}

/* postmaster.pid */
static void
parse_pidfile(const char *buf, size_t len)
{
	pg_pidfile	pf;
	char		err[256] = "";

	if (pidfile_parse(buf, len, &pf, err, sizeof(err)) == 0)
	{
		FUZZ_EXPECT(pf.pid > 0);
		FUZZ_EXPECT(fuzz_terminated(pf.data_dir, sizeof(pf.data_dir)));
		FUZZ_EXPECT(fuzz_terminated(pf.socket_dir, sizeof(pf.socket_dir)));
		FUZZ_EXPECT(fuzz_terminated(pf.listen_addr, sizeof(pf.listen_addr)));
		FUZZ_EXPECT(fuzz_terminated(pf.status, sizeof(pf.status)));
	}
	else
		FUZZ_EXPECT(err[0] != '\0' && fuzz_printable(err));
}

/* A line of /proc/<pid>/maps, as fgets() hands it over: terminated */
static void
parse_map_line(const char *buf, size_t len)
{
	char	   *line = malloc(len + 1);
	procfs_map_kind kind = PROCFS_MAP_NONE;
	int			r;

	if (line == NULL)
		return;
	memcpy(line, buf, len);
	line[len] = '\0';
	r = procfs_parse_map_line(line, UINT64_C(0x7f0000001000), &kind);
	FUZZ_EXPECT(r >= -1 && r <= 1);
	FUZZ_EXPECT(r != 1 || kind == PROCFS_MAP_PRIVATE || kind == PROCFS_MAP_SHARED ||
				kind == PROCFS_MAP_FILE_RO);
	free(line);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *buf;
	size_t		len;

	if (size == 0)
		return 0;
	len = size - 1;
	buf = fuzz_exact_copy(data + 1, len);	/* no NUL after the text */
	switch (data[0] % 6)
	{
		case 0:
			parse_stat(buf, len);
			break;
		case 1:
			classify_title(buf, len);
			break;
		case 2:
			parse_nspid(buf, len);
			break;
		case 3:
			parse_pidfile(buf, len);
			break;
		case 4:
			/* a title as the trace names it: the comm-sized prefix too */
			classify_title(buf, len < 16 ? len : 16);
			break;
		default:
			parse_map_line(buf, len);
			break;
	}
	free(buf);
	return 0;
}
