/*-------------------------------------------------------------------------
 *
 * pgt_layout.h
 *	  The layout file: what the extension tells the helper about the
 *	  running server's memory, so BPF can read backend state without
 *	  per-version offset tables.
 *
 * The extension's background worker writes <PGDATA>/pg_tracer.layout
 * (mode 0600, atomically with rename) at every server start.  The helper
 * (root) reads it, checks that it is a regular file owned by the data
 * directory's owner and not writable by group or others, and parses it
 * strictly: unknown keys, duplicate keys, bad numbers, overlong lines, or a
 * missing "end" reject the whole file.  Text, one record per line, LF:
 *
 *	  pg_tracer_layout 1
 *	  pg_version_num <decimal>
 *	  postmaster_pid <decimal>
 *	  postmaster_start_us <decimal>		(PgStartTime, unix microseconds)
 *	  proc_array <hexaddr> <count> <stride>
 *	  proc_offsets pid=<n> wait_event_info=<n> backend_id=<n>
 *	  beentry_array <hexaddr> <count> <stride>
 *	  beentry_offsets procpid=<n> query_id=<n> backend_type=<n>
 *	  bgworker_offsets type=<n> notify_pid=<n> size=<n>	(optional)
 *	  wait_event <hex32 wait_event_info> <class name> <event name>
 *	  ...
 *	  end
 *
 * proc_array is ProcGlobal->allProcs (PGPROC), beentry_array is
 * PostgreSQL's BackendStatusArray (PgBackendStatus); shared memory is
 * mapped at the same address in every backend, so these addresses are
 * valid in all of the cluster's processes.  bgworker_offsets locates
 * bgw_type and bgw_notify_pid in a BackgroundWorker of sizeof size (a
 * parallel worker's MyBgworkerEntry names its leader); files written before
 * it existed lack the line, and then its fields are 0.  wait_event lines are produced
 * by the server itself (pgstat_get_wait_event_type/pgstat_get_wait_event)
 * for every id it knows.  The class name is one word; the event name is
 * the rest of the line (an extension's LWLock tranche may contain spaces),
 * printable ASCII only, at most PGT_LAYOUT_NAME_LEN - 1 bytes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGT_LAYOUT_H
#define PGT_LAYOUT_H

#include <stdint.h>

#define PGT_LAYOUT_FILENAME		"pg_tracer.layout"
#define PGT_LAYOUT_VERSION		1
#define PGT_LAYOUT_MAX_BYTES	(1024 * 1024)
#define PGT_LAYOUT_MAX_LINE		256
#define PGT_LAYOUT_MAX_EVENTS	4096
#define PGT_LAYOUT_NAME_LEN		64

typedef struct pgt_wait_event_name
{
	uint32_t	info;
	char		class_name[PGT_LAYOUT_NAME_LEN];
	char		event_name[PGT_LAYOUT_NAME_LEN];
} pgt_wait_event_name;

typedef struct pgt_layout
{
	uint32_t	pg_version_num;
	uint32_t	postmaster_pid;
	int64_t		postmaster_start_us;
	uint64_t	proc_array;
	uint32_t	proc_count;
	uint32_t	proc_stride;
	uint32_t	proc_off_pid;
	uint32_t	proc_off_wait_event_info;
	uint32_t	proc_off_backend_id;
	uint64_t	beentry_array;
	uint32_t	beentry_count;
	uint32_t	beentry_stride;
	uint32_t	beentry_off_procpid;
	uint32_t	beentry_off_query_id;
	uint32_t	beentry_off_backend_type;
	uint32_t	bgw_off_type;	/* bgworker_offsets, all 0 when absent */
	uint32_t	bgw_off_notify_pid;
	uint32_t	bgw_size;
	uint32_t	nevents;
	pgt_wait_event_name *events;	/* nevents entries, malloc'd */
} pgt_layout;

#endif							/* PGT_LAYOUT_H */
