/*
 * helper/segment_writer.h
 *	  Writer side of the per-cluster shared-memory segment (pgt_segment.h).
 */
#ifndef PGT_HELPER_SEGMENT_WRITER_H
#define PGT_HELPER_SEGMENT_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pgt_segment.h"

/*
 * The tables every segment carries, in file order: kind, row size and
 * default capacity.  A feature that publishes a new table adds one line to
 * seg_tables[] (segment_writer.c).
 */
typedef struct seg_table_spec
{
	uint32_t	kind;			/* PGT_SEC_* */
	uint32_t	entry_size;
	uint32_t	default_capacity;
	const char *name;			/* for the log */
} seg_table_spec;

extern const seg_table_spec seg_tables[];
extern const uint32_t seg_ntables;

typedef struct seg_writer_opts
{
	uint32_t	capacity[PGT_SEC_KIND_MAX];	/* by kind; 0 -> the default */
	uid_t		uid;			/* the cluster owner: may read the file */
	gid_t		gid;			/* data directory's group: reads it without ACLs */
	uint64_t	cluster_dev;
	uint64_t	cluster_ino;
	const char *data_dir;
	const char *helper_version;
	uint32_t	writer_pid;
	size_t		max_size;		/* seg_writer_grow's limit (0, or more: 128 MiB) */
} seg_writer_opts;

/* One table of a mapped segment. */
typedef struct seg_writer_table
{
	unsigned char *rows;		/* into the mapping */
	uint32_t	entry_size;
	uint32_t	capacity;
	uint32_t	slot;			/* index in hdr->sections[] */
	uint64_t	overflow;		/* rows dropped by the last publish */
} seg_writer_table;

typedef struct seg_writer
{
	char		path[4096];
	int			fd;
	void	   *map;
	size_t		size;
	struct pgt_seg_header *hdr;
	seg_writer_table tables[PGT_SEC_KIND_MAX];	/* by kind; rows NULL = none */
} seg_writer;

/* Rows to publish for one table. */
typedef struct seg_rows
{
	const void *rows;			/* count rows of the table's entry_size */
	uint32_t	count;
} seg_rows;

/* What one publication writes (every table is replaced; absent = empty). */
typedef struct seg_publish
{
	uint32_t	state;			/* PGT_WRITER_* */
	uint32_t	postmaster_pid;
	int64_t		postmaster_start_us;
	int64_t		attached_us;
	uint64_t	generation;		/* 0 = keep the current one */
	seg_rows	tables[PGT_SEC_KIND_MAX];	/* by kind */
} seg_publish;

extern size_t seg_writer_size(const seg_writer_opts *opts);
extern uint32_t seg_writer_capacity(const seg_writer *w, uint32_t kind);
extern uint64_t seg_writer_overflow(const seg_writer *w, char *list, size_t len);
extern int	seg_writer_create(seg_writer *w, const char *path,
							  const seg_writer_opts *opts,
							  char *err, size_t errlen);
extern int	seg_writer_grow(seg_writer *w, const seg_publish *p,
							seg_writer_opts *opts, char *err, size_t errlen);
extern int	seg_writer_rebuild(seg_writer *w, seg_writer_opts *opts, char *err,
							   size_t errlen);
extern uint64_t seg_writer_publish(seg_writer *w, const seg_publish *p);
extern uint64_t seg_writer_generation(const seg_writer *w);
extern void seg_writer_close(seg_writer *w, uint32_t final_state);
extern int	seg_writer_remove_stale_tmp(const char *dir);

#endif							/* PGT_HELPER_SEGMENT_WRITER_H */
