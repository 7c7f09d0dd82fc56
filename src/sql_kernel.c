/*-------------------------------------------------------------------------
 *
 * sql_kernel.c
 *	  SQL functions of the kernel probe sets: pg_tracer_kernel_io(),
 *	  pg_tracer_kernel_proc(probe_set) (behind the pg_tracer_kernel_sched,
 *	  _memory and _net views) and pg_tracer_kernel_histogram(metric).
 *
 * Rows come from the helper's segment (tables PGT_SEC_KERNEL_IO, _PROC,
 * _HIST), read and validated in the calling backend; codes are turned into
 * names with common/pgt_kernel.c, and anything out of range reads as
 * "unknown" rather than failing.  When the helper is not connected the
 * result is empty (pg_tracer_probes says why).
 *
 * Visibility follows pg_stat_activity: pg_read_all_stats (and superusers)
 * see every row, including the kernel's (pid 0); other roles see only rows
 * of client backends whose session user they have the privileges of.
 *
 * Locking: none of its own; pgstat_fetch_stat_local_beentry() takes the
 * backend status snapshot the way pg_stat_activity does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid_d.h"
#include "catalog/pg_type_d.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"

#include "pg_tracer.h"
#include "pgt_kernel.h"

PG_FUNCTION_INFO_V1(pg_tracer_kernel_io);
PG_FUNCTION_INFO_V1(pg_tracer_kernel_proc);
PG_FUNCTION_INFO_V1(pg_tracer_kernel_histogram);

/*
 * Each function's columns grew at the end: pg_tracer_kernel_io() has 15
 * from 0.5.0 on (backend_type last), 14 in 0.4.x (database last), 13 in
 * 0.3.0; pg_tracer_kernel_proc() 4 (3 before 0.5.0) and
 * pg_tracer_kernel_histogram() 7 (6).  A database still at an older
 * definition, until ALTER EXTENSION ... UPDATE, gets the same rows without
 * the later columns (tuplestore_putvalues takes as many as it declares).
 */
#define KIO_COLS	15
#define KIO_COLS_0_4	14
#define KIO_COLS_0_3	13
#define KPROC_COLS	4
#define KPROC_COLS_0_4	3
#define KHIST_COLS	7
#define KHIST_COLS_0_4	6

/*
 * device_text
 *		"major:minor" of a kernel dev_t, NULL datum for 0.
 */
static Datum
device_text(uint32 dev, bool *isnull)
{
	*isnull = dev == 0;
	if (dev == 0)
		return (Datum) 0;
	return CStringGetTextDatum(psprintf("%u:%u", dev >> 20, dev & ((1U << 20) - 1)));
}

/*
 * backend_type_datum
 *		PostgreSQL's name for the role of a row's process (the helper's
 *		PGT_ROLE_*, kept for exited processes and their folded rows too);
 *		pid 0 is kernel_name (NULL for none), an unknown role NULL (and a
 *		code past the ones this library knows: a newer helper's).
 */
static Datum
backend_type_datum(uint32 pid, uint8 role, const char *kernel_name, bool *isnull)
{
	const char *name = pid == 0 ? kernel_name :
		role == PGT_ROLE_UNKNOWN || role > PGT_ROLE_OTHER ? NULL : pgt_role_name(role);

	*isnull = name == NULL;
	return name == NULL ? (Datum) 0 : CStringGetTextDatum(name);
}

/*
 * check_columns
 *		The SQL definition in place must have one of the column counts the
 *		library serves.
 */
static void
check_columns(FunctionCallInfo fcinfo, const char *func, int now, int before, int older)
{
	int			natts = ((ReturnSetInfo *) fcinfo->resultinfo)->setDesc->natts;

	if (natts != now && natts != before && natts != older)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s is declared with %d columns, the library returns %d",
						func, natts, now),
				 errhint("Run ALTER EXTENSION pg_tracer UPDATE.")));
}

/*
 * pg_tracer_kernel_io
 *		One row per I/O aggregate (syscall, vfs, pagecache, block layers).
 */
Datum
pg_tracer_kernel_io(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PgtLink		link;
	PgtVisibility	vis;
	uint32		n;
	uint32		i;

	n = pgt_link_srf_begin(fcinfo, &link, PGT_SEC_KERNEL_IO, &vis);
	check_columns(fcinfo, "pg_tracer_kernel_io()", KIO_COLS, KIO_COLS_0_4, KIO_COLS_0_3);
	for (i = 0; i < n; i++)
	{
		const struct pgt_kernel_io_entry *e =
			pgt_view_row(&link.view, PGT_SEC_KERNEL_IO, i);
		Datum		values[KIO_COLS];
		bool		nulls[KIO_COLS];
		uint64		calls = e->calls;

		if (!pgt_visible_pid(&vis, e->pid))
			continue;
		memset(nulls, false, sizeof(nulls));
		values[0] = pgt_pid_datum(e->pid, &nulls[0]);
		values[1] = Int64GetDatum(e->queryid);
		values[2] = CStringGetTextDatum(pgt_klayer_name(e->layer));
		values[3] = CStringGetTextDatum(pgt_kop_name(e->op));
		values[4] = CStringGetTextDatum(pgt_kfile_name(e->file_class));
		values[5] = ObjectIdGetDatum((Oid) e->relfilenode);
		nulls[5] = e->relfilenode == 0;
		values[6] = device_text(e->dev, &nulls[6]);
		values[7] = Int64GetDatum(pgt_uint64_to_int64(calls));
		values[8] = Int64GetDatum(pgt_uint64_to_int64(e->bytes));
		values[9] = Int64GetDatum(pgt_uint64_to_int64(e->errors));
		values[10] = Float8GetDatum((double) e->total_ns / 1e6);
		/* a row is made zeroed, then added to: a copy may catch it between */
		values[11] = Float8GetDatum(calls ? (double) e->total_ns / 1e3 / (double) calls : 0.0);
		nulls[11] = calls == 0;
		values[12] = Float8GetDatum((double) e->max_ns / 1e3);
		values[13] = ObjectIdGetDatum((Oid) e->database);
		nulls[13] = e->file_class != PGT_KFILE_DATA;
		values[14] = backend_type_datum(e->pid, e->role, "kernel", &nulls[14]);
		if (!pgt_klayer_timed(e->layer))
			nulls[10] = nulls[11] = nulls[12] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * pg_tracer_kernel_proc
 *		Per (pid, query id) counters of one set ('sched', 'memory',
 *		'network') as a bigint array indexed like PGT_KSCHED_* / PGT_KMEM_*
 *		/ PGT_KNET_* (+1).  The views name the elements.
 */
Datum
pg_tracer_kernel_proc(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *set = text_to_cstring(PG_GETARG_TEXT_PP(0));
	uint32		flag;
	PgtLink		link;
	PgtVisibility	vis;
	uint32		n;
	uint32		i;

	if (strcmp(set, "sched") == 0)
		flag = PGT_KPROC_SCHED;
	else if (strcmp(set, "memory") == 0)
		flag = PGT_KPROC_MEMORY;
	else if (strcmp(set, "network") == 0)
		flag = PGT_KPROC_NET;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown kernel probe set \"%s\"", set),
				 errhint("Use one of: sched, memory, network.")));

	n = pgt_link_srf_begin(fcinfo, &link, PGT_SEC_KERNEL_PROC, &vis);
	check_columns(fcinfo, "pg_tracer_kernel_proc(text)", KPROC_COLS, KPROC_COLS_0_4,
				  KPROC_COLS_0_4);
	for (i = 0; i < n; i++)
	{
		const struct pgt_kernel_proc_entry *e =
			pgt_view_row(&link.view, PGT_SEC_KERNEL_PROC, i);
		Datum		values[KPROC_COLS];
		bool		nulls[KPROC_COLS];
		Datum		elems[PGT_KPROC_NVALS];
		int			j;

		if (e->sets != flag || !pgt_visible_pid(&vis, e->pid))
			continue;
		memset(nulls, false, sizeof(nulls));
		for (j = 0; j < PGT_KPROC_NVALS; j++)
		{
			/* oom_score_adj is signed; every other value a counter */
			if (flag == PGT_KPROC_MEMORY && j == PGT_KMEM_OOM_SCORE_ADJ)
				elems[j] = Int64GetDatum((int64) e->vals[j]);
			else
				elems[j] = Int64GetDatum(pgt_uint64_to_int64(e->vals[j]));
		}
		values[0] = pgt_pid_datum(e->pid, &nulls[0]);
		values[1] = Int64GetDatum(e->queryid);
		values[2] = PointerGetDatum(construct_array(elems, PGT_KPROC_NVALS, INT8OID,
													sizeof(int64), FLOAT8PASSBYVAL,
													TYPALIGN_DOUBLE));
		values[3] = backend_type_datum(e->pid, e->role, "kernel", &nulls[3]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pgt_link_free(&link);
	return (Datum) 0;
}

/*
 * pg_tracer_kernel_histogram
 *		The non-empty buckets of every histogram of one metric ('block',
 *		'runq', 'fsync', 'syscall'), in microseconds; the last, open-ended
 *		one (2^31 us and more) with bucket_hi_us NULL.
 */
Datum
pg_tracer_kernel_histogram(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int			metric = pgt_khist_parse(name);
	PgtLink		link;
	PgtVisibility	vis;
	uint32		n;
	uint32		i;

	if (metric < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown kernel histogram metric \"%s\"", name),
				 errhint("Use one of: block (block I/O latency), runq (run-queue latency), fsync (fsync/fdatasync latency), syscall (file read/write system call latency).")));

	n = pgt_link_srf_begin(fcinfo, &link, PGT_SEC_KERNEL_HIST, &vis);
	check_columns(fcinfo, "pg_tracer_kernel_histogram(text)", KHIST_COLS, KHIST_COLS_0_4,
				  KHIST_COLS_0_4);
	for (i = 0; i < n; i++)
	{
		const struct pgt_kernel_hist_entry *e =
			pgt_view_row(&link.view, PGT_SEC_KERNEL_HIST, i);
		int			b;

		if (e->metric != (uint32) metric || !pgt_visible_pid(&vis, e->pid))
			continue;
		for (b = 0; b < 32; b++)
		{
			Datum		values[KHIST_COLS];
			bool		nulls[KHIST_COLS];

			if (e->slots[b] == 0)
				continue;
			memset(nulls, false, sizeof(nulls));
			values[0] = pgt_pid_datum(e->pid, &nulls[0]);
			values[1] = device_text(e->dev, &nulls[1]);
			values[2] = CStringGetTextDatum(e->op ? pgt_kop_name(e->op) : "-");
			values[3] = Int64GetDatum(b == 0 ? 0 : (INT64CONST(1) << b));
			values[4] = Int64GetDatum((INT64CONST(1) << (b + 1)) - 1);
			nulls[4] = b == 31;		/* pgt_log2 puts everything longer there */
			values[5] = Int64GetDatum(pgt_uint64_to_int64(e->slots[b]));
			/* pid 0: a device's, or the fsync of every process together */
			values[6] = backend_type_datum(e->pid, e->role, NULL, &nulls[6]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	pgt_link_free(&link);
	return (Datum) 0;
}
