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

typedef struct seg_writer_opts
{
	uint32_t	probesets_cap;	/* 0 -> PGT_DEFAULT_PROBESETS_CAP */
	uint32_t	backends_cap;	/* 0 -> PGT_DEFAULT_BACKENDS_CAP */
	uid_t		uid;			/* owner of the file (data directory owner) */
	gid_t		gid;
	uint64_t	cluster_dev;
	uint64_t	cluster_ino;
	const char *data_dir;
	const char *helper_version;
	uint32_t	writer_pid;
} seg_writer_opts;

typedef struct seg_writer
{
	char		path[4096];
	int			fd;
	void	   *map;
	size_t		size;
	struct pgt_seg_header *hdr;
	unsigned char *probesets;
	uint32_t	probesets_cap;
	unsigned char *backends;
	uint32_t	backends_cap;
	uint64_t	backends_overflow;	/* rows dropped by the last publish */
} seg_writer;

/* What one publication writes (the tables replace the previous ones). */
typedef struct seg_publish
{
	uint32_t	state;			/* PGT_WRITER_* */
	uint32_t	postmaster_pid;
	int64_t		postmaster_start_us;
	int64_t		attached_us;
	uint64_t	generation;		/* 0 = keep the current one */
	const struct pgt_probeset_entry *probesets;
	uint32_t	nprobesets;
	const struct pgt_backend_entry *backends;
	uint32_t	nbackends;
} seg_publish;

extern size_t seg_writer_size(uint32_t probesets_cap, uint32_t backends_cap);
extern int	seg_writer_create(seg_writer *w, const char *path,
							  const seg_writer_opts *opts,
							  char *err, size_t errlen);
extern uint64_t seg_writer_publish(seg_writer *w, const seg_publish *p);
extern uint64_t seg_writer_generation(const seg_writer *w);
extern void seg_writer_close(seg_writer *w, uint32_t final_state);

#endif							/* PGT_HELPER_SEGMENT_WRITER_H */
