/*-------------------------------------------------------------------------
 *
 * pgt_kernel.c
 *	  Names of the kernel probe sets' codes (pgt_kernel.h), and which layers
 *	  are timed, shared by the helper (trace output) and the extension (SQL
 *	  views).  Pure functions,
 *	  no allocation: an unknown code reads as "unknown".
 *
 *-------------------------------------------------------------------------
 */
#include "pgt_kernel.h"

#include <string.h>

const char *
pgt_klayer_name(unsigned layer)
{
	switch (layer)
	{
		case PGT_KLAYER_SYSCALL:
			return "syscall";
		case PGT_KLAYER_VFS:
			return "vfs";
		case PGT_KLAYER_PAGECACHE:
			return "pagecache";
		case PGT_KLAYER_BLOCK:
			return "block";
	}
	return "unknown";
}

/*
 * pgt_klayer_timed
 *		Does a row of this layer carry time (total, max)?  A page's entry
 *		into the cache is counted, not timed: the views show NULL, the trace
 *		summaries no time fields.
 */
int
pgt_klayer_timed(unsigned layer)
{
	return layer != PGT_KLAYER_PAGECACHE;
}

const char *
pgt_kop_name(unsigned op)
{
	static const char *const names[] = {
		[PGT_KOP_READ] = "read",
		[PGT_KOP_WRITE] = "write",
		[PGT_KOP_PREAD64] = "pread64",
		[PGT_KOP_PWRITE64] = "pwrite64",
		[PGT_KOP_READV] = "readv",
		[PGT_KOP_WRITEV] = "writev",
		[PGT_KOP_PREADV] = "preadv",
		[PGT_KOP_PWRITEV] = "pwritev",
		[PGT_KOP_PREADV2] = "preadv2",
		[PGT_KOP_PWRITEV2] = "pwritev2",
		[PGT_KOP_FSYNC] = "fsync",
		[PGT_KOP_FDATASYNC] = "fdatasync",
		[PGT_KOP_SYNC_FILE_RANGE] = "sync_file_range",
		[PGT_KOP_OPENAT] = "openat",
		[PGT_KOP_CLOSE] = "close",
		[PGT_KOP_VFS_READ] = "vfs_read",
		[PGT_KOP_VFS_WRITE] = "vfs_write",
		[PGT_KOP_VFS_FSYNC] = "vfs_fsync",
		[PGT_KOP_CACHE_MISS] = "miss",
		[PGT_KOP_CACHE_WRITE_MISS] = "write-miss",
		[PGT_KOP_CACHE_META_MISS] = "meta-miss",
		[PGT_KOP_BLK_READ] = "read",
		[PGT_KOP_BLK_WRITE] = "write",
		[PGT_KOP_BLK_FLUSH] = "flush",
		[PGT_KOP_BLK_DISCARD] = "discard",
		[PGT_KOP_BLK_OTHER] = "other",
		[PGT_KOP_SEND] = "send",
		[PGT_KOP_RECV] = "recv",
	};

	if (op < sizeof(names) / sizeof(names[0]) && names[op] != NULL)
		return names[op];
	return "unknown";
}

const char *
pgt_kfile_name(unsigned cls)
{
	switch (cls)
	{
		case PGT_KFILE_NONE:
			return "n/a";
		case PGT_KFILE_DATA:
			return "data";
		case PGT_KFILE_WAL:
			return "wal";
		case PGT_KFILE_TEMP:
			return "temp";
		case PGT_KFILE_SOCKET:
			return "socket";
		case PGT_KFILE_OTHER:
			return "other";
		case PGT_KFILE_SPECIAL:
			return "special";
	}
	return "unknown";
}

const char *
pgt_khist_name(unsigned metric)
{
	switch (metric)
	{
		case PGT_KHIST_BLOCK:
			return "block";
		case PGT_KHIST_RUNQ:
			return "runq";
		case PGT_KHIST_FSYNC:
			return "fsync";
		case PGT_KHIST_SYSCALL:
			return "syscall";
	}
	return "unknown";
}

/*
 * pgt_khist_parse
 *		Metric code of a name, -1 when unknown.
 */
int
pgt_khist_parse(const char *name)
{
	unsigned	m;

	for (m = 1; m < PGT_KHIST_MAX; m++)
		if (strcmp(name, pgt_khist_name(m)) == 0)
			return (int) m;
	return -1;
}
