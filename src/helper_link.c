/*-------------------------------------------------------------------------
 *
 * helper_link.c
 *	  Import and judge the pg-tracer helper's segment for this cluster, and
 *	  keep the background worker's view of it in shared memory.
 *
 * The segment is <pg_tracer.runtime_dir>/pgt-<dev>-<ino>.seg, named after
 * the st_dev/st_ino of the data directory.  pgt_link_read() copies and
 * validates it, its header and the tables a caller reads
 * (common/pgt_segment.c: the copy is never mapped, every size
 * and offset is checked) and then decides whether the helper is connected:
 * the segment must describe this data directory, its writer must be
 * RUNNING, its last update must be within pg_tracer.helper_stale_ms, and
 * it must describe this start of the postmaster.  Anything else reads as
 * "not connected" with a state name and a reason, never as an error.
 *
 * The background worker judges the segment every 250 ms from its header
 * alone (pgt_link_import); the SQL functions copy the header and their own
 * tables on every call (pgt_link_read), so they are always fresh, and pay
 * for what they read, not for the whole segment.
 *
 * Locking: PgtSharedState->mutex (a spinlock) protects the shared area.
 * Only the worker writes it (pgt_link_import, pgt_link_set_layout); readers
 * copy it out with pgt_shared_copy.  The spinlock is held only for the
 * copies.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/pidfile.h"
#include "utils/timestamp.h"

#include "pg_tracer.h"

/* Difference between the unix epoch and PostgreSQL's, in microseconds. */
#define PGT_EPOCH_DIFF_US \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

/*
 * The helper takes the postmaster's start time from line 3 of postmaster.pid
 * (whole seconds, taken as the postmaster process starts); so does
 * postmaster_start_us, and the two must be equal.  When this process cannot
 * read the file, PgStartTime stands in: it is taken at the end of the
 * postmaster's startup (shared memory, preloaded libraries, sockets, temp
 * file cleanup), so the file's time is up to PGT_START_SLOW_US earlier, and
 * never more than a second later.
 */
#define PGT_START_SLOW_US		(INT64CONST(600) * USECS_PER_SEC)
#define PGT_START_AHEAD_US		(INT64CONST(1) * USECS_PER_SEC)

/* This process's cache of the data directory's identity. */
static bool cluster_id_known = false;
static uint64 cluster_dev;
static uint64 cluster_ino;

static bool cluster_identity(char *err, size_t errlen);
static void *link_alloc(size_t size, void *arg);
static void link_judge(PgtLink *link);
static bool worker_saw_abandoned(PgtLink *link);
static int64 postmaster_start_us(void);
static bool same_postmaster_start(int64 segment_start_us);
static void link_publish(const PgtLink *link);
static void link_log_transition(const PgtLink *link, bool prev_connected,
								uint64 prev_generation);

/*
 * pgt_unix_us_to_timestamptz
 *		Convert unix microseconds to TimestampTz; *valid is false for 0
 *		(the segment's "unknown") and for values outside timestamptz's
 *		range.
 */
TimestampTz
pgt_unix_us_to_timestamptz(int64 us, bool *valid)
{
	TimestampTz ts;

	*valid = false;
	if (us <= 0 || us > PG_INT64_MAX / 2)
		return 0;
	ts = (TimestampTz) (us - PGT_EPOCH_DIFF_US);
	*valid = IS_VALID_TIMESTAMP(ts);
	return ts;
}

/*
 * pgt_copy_segment_text
 *		Text the helper wrote (statement text, tranche names: UTF-8, as it
 *		cleans them) into dst for a text datum of this database.  Where the
 *		database takes UTF-8 as it is (UTF8, or SQL_ASCII, which takes any
 *		bytes) well-formed characters are kept; in any other encoding they
 *		would need a conversion that could fail, so only printable ASCII
 *		passes and the rest is '?'.  Either way every byte is checked here
 *		again: the segment is not trusted.
 */
void
pgt_copy_segment_text(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	int			enc = GetDatabaseEncoding();

	if (enc == PG_UTF8 || enc == PG_SQL_ASCII)
		pgt_copy_utf8(dst, dstlen, src, srclen);
	else
		pgt_copy_string(dst, dstlen, src, srclen);
}

/*
 * cluster_identity
 *		st_dev and st_ino of the data directory (cached per process).
 */
static bool
cluster_identity(char *err, size_t errlen)
{
	struct stat st;

	if (cluster_id_known)
		return true;
	if (stat(DataDir, &st) != 0)
	{
		snprintf(err, errlen, "could not stat the data directory: %m");
		return false;
	}
	cluster_dev = (uint64) st.st_dev;
	cluster_ino = (uint64) st.st_ino;
	cluster_id_known = true;
	return true;
}

/*
 * runtime_dir_is_private
 *		pg_tracer.runtime_dir is a directory (not a symlink) of root or of
 *		this server's user, that neither its group nor the world may write
 *		(the helper requires the latter too).  Anyone else who can write
 *		there could plant a segment or a socket that this cluster would
 *		take for its helper's.  Returns false with the reason in err.
 */
static bool
runtime_dir_is_private(char *err, size_t errlen)
{
	struct stat st;

	if (lstat(pgt_runtime_dir, &st) != 0)
	{
		if (errno == ENOENT)
			return true;		/* no helper yet: its files are missing */
		snprintf(err, errlen, "runtime directory \"%s\": %m", pgt_runtime_dir);
		return false;
	}
	if (!S_ISDIR(st.st_mode))
	{
		snprintf(err, errlen, "runtime directory \"%s\" is not a directory (or is a symlink)",
				 pgt_runtime_dir);
		return false;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid())
	{
		snprintf(err, errlen, "runtime directory \"%s\" belongs to uid %u, neither root nor "
				 "this server's user: not trusting the files in it",
				 pgt_runtime_dir, (unsigned) st.st_uid);
		return false;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH))
	{
		snprintf(err, errlen, "runtime directory \"%s\" is %s-writable (mode %04o): not "
				 "trusting the files in it; give the helper a directory of its own",
				 pgt_runtime_dir, (st.st_mode & S_IWOTH) ? "world" : "group",
				 (unsigned) (st.st_mode & 07777));
		return false;
	}
	return true;
}

/*
 * pgt_cluster_file
 *		Path of this cluster's helper file with the given suffix (".seg",
 *		".sock").  Returns false with a reason in err.
 */
bool
pgt_cluster_file(const char *suffix, char *out, size_t outlen,
				 char *err, size_t errlen)
{
	if (!cluster_identity(err, errlen) || !runtime_dir_is_private(err, errlen))
		return false;
	if (pgt_cluster_path(out, outlen, pgt_runtime_dir, cluster_dev,
						 cluster_ino, suffix) != 0)
	{
		snprintf(err, errlen, "the path of the helper's \"%s\" file is too long",
				 suffix);
		return false;
	}
	return true;
}

/*
 * link_alloc
 *		Allocator for pgt_segment_snapshot: palloc in the current context,
 *		NULL instead of an error when memory is short.
 */
static void *
link_alloc(size_t size, void *arg)
{
	return palloc_extended(size, MCXT_ALLOC_NO_OOM);
}

/*
 * link_retry
 *		After `tries` snapshots ended with r: try again?  A snapshot gives
 *		up after some 40 ms of a writer inside its update ("busy"), or
 *		stopped in it ("stale"); a helper that the host deschedules in the
 *		middle of a publication looks like either, and is not gone.  So a
 *		busy segment is tried for about another second, a stale one for a
 *		fifth of that (a helper killed mid-update leaves one until it
 *		starts again: each call should not wait long), with the caller
 *		cancellable meanwhile.
 */
#define LINK_RETRY_SLEEP_US		50000
#define LINK_BUSY_TRIES			12
#define LINK_STALE_TRIES		3

static bool
link_retry(pgt_seg_result r, int tries)
{
	if (!((r == PGT_SEG_BUSY && tries < LINK_BUSY_TRIES) ||
		  (r == PGT_SEG_ABANDONED && tries < LINK_STALE_TRIES)))
		return false;
	CHECK_FOR_INTERRUPTS();
	pg_usleep(LINK_RETRY_SLEEP_US);
	CHECK_FOR_INTERRUPTS();
	return true;
}

/*
 * link_read
 *		Copy, validate and judge the segment's header and the tables of the
 *		kinds in `tables` (PGT_SEG_TABLE bits; 0: the header alone).
 *		Allocates in the current memory context; never raises an error
 *		about the segment's content.
 */
static void
link_read(PgtLink *link, uint64 tables)
{
	char		err[PGT_REASON_LEN];
	pgt_seg_result r;
	int			tries = 0;

	memset(link, 0, sizeof(*link));
	link->state = "io error";
	if (!pgt_cluster_file(".seg", link->path, sizeof(link->path),
						  link->reason, sizeof(link->reason)))
		return;

	for (;;)
	{
		err[0] = '\0';
		if (tables == 0)
			r = pgt_segment_snapshot_header(link->path, link_alloc, NULL, &link->buf,
											&link->view, err, sizeof(err));
		else
			r = pgt_segment_snapshot_tables(link->path, tables, link_alloc, NULL,
											&link->buf, &link->view, err, sizeof(err));
		if (!link_retry(r, ++tries))
			break;
		if (link->buf != NULL)	/* a failed copy is the caller's to free */
			pfree(link->buf);
		link->buf = NULL;
	}
	if (r != PGT_SEG_OK)
	{
		if (link->buf != NULL)	/* the last failed copy, as above */
			pfree(link->buf);
		link->buf = NULL;
		link->state = pgt_seg_result_name(r);
		link->abandoned = (r == PGT_SEG_ABANDONED);
		if (r == PGT_SEG_MISSING)
			strlcpy(link->reason, "the helper has not published a segment for this cluster",
					sizeof(link->reason));
		else
			strlcpy(link->reason, err, sizeof(link->reason));
		return;
	}
	link_judge(link);
}

/*
 * pgt_link_read
 *		The segment's header and the tables of the kinds in `tables`
 *		(PGT_SEG_TABLE(kind) | ...; 0: the header alone), for the SQL
 *		functions: judged like the worker's, tables validated.
 */
void
pgt_link_read(PgtLink *link, uint64 tables)
{
	if (worker_saw_abandoned(link))
		return;
	link_read(link, tables);
}

/*
 * worker_saw_abandoned
 *		Did the worker find the segment abandoned (a helper that died in the
 *		middle of an update) less than a second ago?  Then *link says so,
 *		without a copy: each copy of such a segment costs a quarter of a
 *		second of retries (link_retry), and a view may call a function once
 *		per row.  The worker looks again every 250 ms, so a restarted
 *		helper is seen within a second.
 */
static bool
worker_saw_abandoned(PgtLink *link)
{
	const char *abandoned = pgt_seg_result_name(PGT_SEG_ABANDONED);
	TimestampTz now = GetCurrentTimestamp();
	char		err[PGT_REASON_LEN];
	bool		saw;

	memset(link, 0, sizeof(*link));
	SpinLockAcquire(&pgt_shared->mutex);
	saw = pgt_shared->abandoned &&
		!TimestampDifferenceExceeds(pgt_shared->checked_at, now, 1000);
	if (saw)
		strlcpy(link->reason, pgt_shared->reason, sizeof(link->reason));
	SpinLockRelease(&pgt_shared->mutex);
	if (!saw)
		return false;
	link->state = abandoned;
	link->abandoned = true;
	if (!pgt_cluster_file(".seg", link->path, sizeof(link->path), err, sizeof(err)))
		link->path[0] = '\0';
	return true;
}

/*
 * pgt_link_free
 *		Free the segment copy of pgt_link_read, if it made one (a missing or
 *		unreadable segment leaves none).
 */
void
pgt_link_free(PgtLink *link)
{
	if (link->buf != NULL)
		pfree(link->buf);
	link->buf = NULL;
}

/*
 * pgt_link_srf_begin
 *		The start every SRF over one table of the segment shares: the
 *		preload check, the materialized result, a fresh copy of the segment
 *		(the table and the cluster's process list) and the caller's
 *		pg_stat_activity visibility.  Returns the number of
 *		rows of table `section` to walk: 0 when the helper is not connected
 *		or the table is empty (vis is then left unset: no row needs it).
 */
uint32
pgt_link_srf_begin(FunctionCallInfo fcinfo, PgtLink *link, uint32 section,
				   PgtVisibility *vis)
{
	uint32		n;

	pgt_require_preload();
	InitMaterializedSRF(fcinfo, 0);
	/* the process list too: which process each visible pid is */
	pgt_link_read(link, PGT_SEG_TABLE(section) | PGT_SEG_TABLE(PGT_SEC_BACKENDS));
	n = link->connected ? pgt_view_count(&link->view, section) : 0;
	if (n > 0)
		pgt_visibility_init(vis, &link->view);
	return n;
}

/*
 * postmaster_start_us
 *		Line 3 of this postmaster's postmaster.pid in unix microseconds, or
 *		-1 when it cannot be read or names another postmaster.  Read once
 *		per process: it does not change while the postmaster lives.
 */
static int64
postmaster_start_us(void)
{
	static int64 cached = -1;
	char		path[MAXPGPATH];
	char		line[MAXPGPATH + 64];
	long		pid = 0;
	long long	start = 0;
	int			n = 0;
	FILE	   *f;

	if (cached >= 0)
		return cached;
	snprintf(path, sizeof(path), "%s/postmaster.pid", DataDir);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (n < LOCK_FILE_LINE_START_TIME && fgets(line, sizeof(line), f) != NULL)
	{
		n++;
		if (n == LOCK_FILE_LINE_PID)
			pid = strtol(line, NULL, 10);
		else if (n == LOCK_FILE_LINE_START_TIME)
			start = strtoll(line, NULL, 10);
	}
	fclose(f);
	if (n == LOCK_FILE_LINE_START_TIME && pid == PostmasterPid && start > 0)
		cached = (int64) start * USECS_PER_SEC;
	return cached;
}

/*
 * same_postmaster_start
 *		Does a segment's postmaster start time (0: not given) describe this
 *		start of the postmaster?
 */
static bool
same_postmaster_start(int64 segment_start_us)
{
	int64		ours = postmaster_start_us();
	int64		pg_start_us = (int64) PgStartTime + PGT_EPOCH_DIFF_US;

	if (segment_start_us == 0)
		return true;
	if (ours >= 0)
		return segment_start_us == ours;
	return segment_start_us <= pg_start_us + PGT_START_AHEAD_US &&
		segment_start_us >= pg_start_us - PGT_START_SLOW_US;
}

/*
 * link_judge
 *		Decide whether a valid segment means "connected".
 */
static void
link_judge(PgtLink *link)
{
	const struct pgt_seg_header *h = link->view.hdr;
	int64		now_us = (int64) GetCurrentTimestamp() + PGT_EPOCH_DIFF_US;
	int64		age_ms = 0;

	/* a positive last_update cannot overflow the subtraction */
	if (h->last_update_us > 0)
		age_ms = (now_us - h->last_update_us) / 1000;

	if (h->cluster_dev != cluster_dev || h->cluster_ino != cluster_ino)
	{
		link->state = "foreign cluster";
		snprintf(link->reason, sizeof(link->reason),
				 "the segment describes data directory dev %llx ino %llx, this server's is dev %llx ino %llx",
				 (unsigned long long) h->cluster_dev,
				 (unsigned long long) h->cluster_ino,
				 (unsigned long long) cluster_dev,
				 (unsigned long long) cluster_ino);
	}
	else if (h->state == PGT_WRITER_STOPPED)
	{
		link->state = "stopped";
		strlcpy(link->reason, "the helper stopped", sizeof(link->reason));
	}
	else if (h->last_update_us <= 0)
	{
		link->state = "stale";
		strlcpy(link->reason, "the helper has not updated the segment yet",
				sizeof(link->reason));
	}
	else if (age_ms > pgt_helper_stale_ms || age_ms < -pgt_helper_stale_ms)
	{
		/* a waiting helper publishes too: one that stopped doing so is gone */
		link->state = "stale";
		snprintf(link->reason, sizeof(link->reason),
				 "last update " INT64_FORMAT " ms ago, pg_tracer.helper_stale_ms is %d",
				 age_ms, pgt_helper_stale_ms);
	}
	else if (h->state == PGT_WRITER_WAITING)
	{
		link->state = "waiting";
		strlcpy(link->reason, "the helper runs but is not attached to this server's postmaster",
				sizeof(link->reason));
	}
	else if (!same_postmaster_start(h->postmaster_start_us))
	{
		link->state = "stale";
		strlcpy(link->reason, "the segment describes another start of the postmaster",
				sizeof(link->reason));
	}
	else
	{
		link->state = "ok";
		link->reason[0] = '\0';
		link->connected = true;
	}
}

/*
 * pgt_link_import
 *		One iteration of the worker: read the segment, publish the outcome,
 *		log a transition.  Allocates in the current (per-iteration) context.
 */
void
pgt_link_import(void)
{
	PgtLink		link;
	bool		prev_connected;
	uint64		prev_generation;

	/*
	 * The previous state lives in shared memory, so that a restarted worker
	 * does not announce again a connection that was already announced.
	 */
	SpinLockAcquire(&pgt_shared->mutex);
	prev_connected = pgt_shared->helper_connected;
	prev_generation = pgt_shared->generation;
	SpinLockRelease(&pgt_shared->mutex);

	/* the state is all the worker publishes: the header has it */
	link_read(&link, 0);
	link_publish(&link);
	link_log_transition(&link, prev_connected, prev_generation);
}

/*
 * link_publish
 *		Store the outcome of an import in shared memory.
 */
static void
link_publish(const PgtLink *link)
{
	const struct pgt_seg_header *h = link->view.hdr;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz last_update = 0;
	bool		valid = false;

	if (h != NULL)
		last_update = pgt_unix_us_to_timestamptz(h->last_update_us, &valid);

	SpinLockAcquire(&pgt_shared->mutex);
	pgt_shared->helper_connected = link->connected;
	pgt_shared->helper_pid = h != NULL ? (int32) h->writer_pid : 0;
	pgt_shared->generation = h != NULL ? h->generation : 0;
	pgt_shared->last_update = valid ? last_update : 0;
	pgt_shared->checked_at = now;
	strlcpy(pgt_shared->seg_state, link->state, PGT_STATE_LEN);
	strlcpy(pgt_shared->reason, link->reason, PGT_REASON_LEN);
	pgt_shared->abandoned = link->abandoned;
	SpinLockRelease(&pgt_shared->mutex);
}

/*
 * link_log_transition
 *		LOG when the helper connects (or reconnects with a new generation)
 *		and when it goes away; stay quiet otherwise.
 */
static void
link_log_transition(const PgtLink *link, bool prev_connected,
					uint64 prev_generation)
{
	const struct pgt_seg_header *h = link->view.hdr;

	if (link->connected &&
		(!prev_connected || h->generation != prev_generation))
		ereport(LOG,
				(errmsg("pg_tracer: helper connected (pid %u, generation %llu)",
						h->writer_pid, (unsigned long long) h->generation)));
	else if (!link->connected && prev_connected)
		ereport(LOG,
				(errmsg("pg_tracer: helper disconnected: %s: %s",
						link->state, link->reason)));
}

/*
 * pgt_link_set_layout
 *		Record whether the layout file was written (worker only).
 */
void
pgt_link_set_layout(bool written, const char *error)
{
	SpinLockAcquire(&pgt_shared->mutex);
	pgt_shared->layout_written = written;
	strlcpy(pgt_shared->layout_error, error != NULL ? error : "",
			PGT_REASON_LEN);
	SpinLockRelease(&pgt_shared->mutex);
}

/*
 * pgt_shared_copy
 *		Copy the shared area out under its spinlock.
 */
void
pgt_shared_copy(PgtSharedState *dst)
{
	SpinLockAcquire(&pgt_shared->mutex);
	memcpy(dst, pgt_shared, sizeof(PgtSharedState));
	SpinLockRelease(&pgt_shared->mutex);
}
