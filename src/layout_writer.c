/*-------------------------------------------------------------------------
 *
 * layout_writer.c
 *	  Write <PGDATA>/pg_tracer.layout: where the running server keeps each
 *	  backend's PGPROC and PgBackendStatus, and the server's own wait-event
 *	  names, in the format of pgt_layout.h.
 *
 * Only the background worker calls this, after
 * BackgroundWorkerInitializeConnection(), because the base of
 * BackendStatusArray (static in backend_status.c) is derived from the
 * worker's own slot: pgstat_beinit() sets
 *	  MyBEEntry = &BackendStatusArray[MyBackendId - 1]
 * for every process that has a BackendId.
 *
 * The file is written to a temporary name, fsync'ed, and renamed over the
 * old one with durable_rename(), so the helper never reads half a file.
 * Mode 0600: the helper insists on it.
 *
 * Locking: none.  ProcGlobal and BackendStatusArray do not move after
 * shared memory is created; nothing here reads their contents.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/backendid.h"
#include "storage/fd.h"
#include "storage/proc.h"
#include "utils/backend_status.h"
#include "utils/timestamp.h"

#include "pg_tracer.h"

static void layout_append_header(StringInfo buf);
static void layout_append_arrays(StringInfo buf);
static void layout_append_wait_events(StringInfo buf);
static bool layout_write_file(const char *path, const StringInfo buf,
							  char *err, size_t errlen);

/*
 * pgt_layout_path
 *		<DataDir>/pg_tracer.layout
 */
void
pgt_layout_path(char *out, size_t outlen)
{
	snprintf(out, outlen, "%s/%s", DataDir, PGT_LAYOUT_FILENAME);
}

/*
 * pgt_write_layout
 *		Build the layout text and write it atomically.  Returns false with
 *		a one-line reason in err on failure.
 */
bool
pgt_write_layout(char *err, size_t errlen)
{
	StringInfoData buf;
	char		path[MAXPGPATH];
	bool		ok;

	if (MyBEEntry == NULL || MyBackendId == InvalidBackendId)
	{
		snprintf(err, errlen, "this process has no backend status slot");
		return false;
	}

	initStringInfo(&buf);
	layout_append_header(&buf);
	layout_append_arrays(&buf);
	layout_append_wait_events(&buf);
	appendStringInfoString(&buf, "end\n");

	if (buf.len > PGT_LAYOUT_MAX_BYTES)
	{
		snprintf(err, errlen, "layout text is %d bytes, the format allows %d",
				 buf.len, PGT_LAYOUT_MAX_BYTES);
		pfree(buf.data);
		return false;
	}

	pgt_layout_path(path, sizeof(path));
	ok = layout_write_file(path, &buf, err, errlen);
	pfree(buf.data);
	return ok;
}

/*
 * layout_append_header
 *		Version line, server version, postmaster pid and start time.
 */
static void
layout_append_header(StringInfo buf)
{
	int64		start_us;

	/* PgStartTime counts from 2000-01-01; the file wants the unix epoch */
	start_us = (int64) PgStartTime +
		(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;

	appendStringInfo(buf, "pg_tracer_layout %d\n", PGT_LAYOUT_VERSION);
	appendStringInfo(buf, "pg_version_num %d\n", PG_VERSION_NUM);
	appendStringInfo(buf, "postmaster_pid %d\n", (int) PostmasterPid);
	appendStringInfo(buf, "postmaster_start_us " INT64_FORMAT "\n", start_us);
}

/*
 * layout_append_arrays
 *		Base address, element count and stride of the PGPROC array and of
 *		BackendStatusArray, and the offsets of the fields the helper reads
 *		(in them, and in a BackgroundWorker).
 */
static void
layout_append_arrays(StringInfo buf)
{
	uintptr_t	beentry_base;

	/* see the file header: our slot is BackendStatusArray[MyBackendId - 1] */
	beentry_base = (uintptr_t) (MyBEEntry - (MyBackendId - 1));

	appendStringInfo(buf, "proc_array 0x%llx %u %zu\n",
					 (unsigned long long) (uintptr_t) ProcGlobal->allProcs,
					 ProcGlobal->allProcCount, sizeof(PGPROC));
	appendStringInfo(buf, "proc_offsets pid=%zu wait_event_info=%zu backend_id=%zu\n",
					 offsetof(PGPROC, pid),
					 offsetof(PGPROC, wait_event_info),
					 offsetof(PGPROC, backendId));
	appendStringInfo(buf, "beentry_array 0x%llx %d %zu\n",
					 (unsigned long long) beentry_base,
					 MaxBackends + NUM_AUXPROCTYPES,
					 sizeof(PgBackendStatus));
	appendStringInfo(buf, "beentry_offsets procpid=%zu query_id=%zu backend_type=%zu\n",
					 offsetof(PgBackendStatus, st_procpid),
					 offsetof(PgBackendStatus, st_query_id),
					 offsetof(PgBackendStatus, st_backendType));
	/* a parallel worker's MyBgworkerEntry names its leader (PGT_QID_LEADER) */
	appendStringInfo(buf, "bgworker_offsets type=%zu notify_pid=%zu size=%zu\n",
					 offsetof(BackgroundWorker, bgw_type),
					 offsetof(BackgroundWorker, bgw_notify_pid),
					 sizeof(BackgroundWorker));
}

/*
 * layout_append_wait_events
 *		One "wait_event" line per id the server can name.
 */
static void
layout_append_wait_events(StringInfo buf)
{
	pgt_wait_event_name *events;
	int			n;
	int			i;

	events = palloc(sizeof(pgt_wait_event_name) * PGT_LAYOUT_MAX_EVENTS);
	n = pgt_collect_wait_events(events, PGT_LAYOUT_MAX_EVENTS);
	for (i = 0; i < n; i++)
		appendStringInfo(buf, "wait_event 0x%08x %s %s\n",
						 events[i].info, events[i].class_name,
						 events[i].event_name);
	pfree(events);
}

/*
 * layout_write_file
 *		Write buf to path.tmp with mode 0600, fsync it, and rename it over
 *		path durably.
 */
static bool
layout_write_file(const char *path, const StringInfo buf,
				  char *err, size_t errlen)
{
	char		tmppath[MAXPGPATH];
	int			fd;

	snprintf(tmppath, sizeof(tmppath), "%s.tmp", path);
	(void) unlink(tmppath);
	fd = OpenTransientFilePerm(tmppath, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY,
							   S_IRUSR | S_IWUSR);
	if (fd < 0)
	{
		snprintf(err, errlen, "could not create \"%s\": %m", tmppath);
		return false;
	}
	errno = 0;
	if (fchmod(fd, S_IRUSR | S_IWUSR) != 0 ||
		write(fd, buf->data, buf->len) != buf->len ||
		pg_fsync(fd) != 0)
	{
		/* a short write without errno means the disk is full */
		if (errno == 0)
			errno = ENOSPC;
		snprintf(err, errlen, "could not write \"%s\": %m", tmppath);
		CloseTransientFile(fd);
		(void) unlink(tmppath);
		return false;
	}
	if (CloseTransientFile(fd) != 0)
	{
		snprintf(err, errlen, "could not close \"%s\": %m", tmppath);
		(void) unlink(tmppath);
		return false;
	}
	if (durable_rename(tmppath, path, LOG) != 0)
	{
		/* durable_rename() logged the cause; errno may be gone by now */
		snprintf(err, errlen, "could not rename \"%s\" to \"%s\" (see the server log)",
				 tmppath, path);
		(void) unlink(tmppath);
		return false;
	}
	return true;
}
