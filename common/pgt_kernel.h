/*-------------------------------------------------------------------------
 *
 * pgt_kernel.h
 *	  Codes of the kernel probe sets (layers, operations, file classes,
 *	  histogram metrics, per-process counters) shared by the BPF programs
 *	  (bpf/kernel_*.bpf.c), the helper and the extension, and their names.
 *
 * Only #defines above the PGT_KERNEL_NO_NAMES guard: the BPF side includes
 * this file too (through bpf/kernel_sets.h).  Codes are never reused.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGT_KERNEL_H
#define PGT_KERNEL_H

/* Layers of pgt_kernel_io_entry.layer */
#define PGT_KLAYER_SYSCALL		1
#define PGT_KLAYER_VFS			2
#define PGT_KLAYER_PAGECACHE	3
#define PGT_KLAYER_BLOCK		4
#define PGT_KLAYER_MAX			5

/* Operations (pgt_kernel_io_entry.op, histogram op) */
#define PGT_KOP_READ			1
#define PGT_KOP_WRITE			2
#define PGT_KOP_PREAD64			3
#define PGT_KOP_PWRITE64		4
#define PGT_KOP_READV			5
#define PGT_KOP_WRITEV			6
#define PGT_KOP_PREADV			7
#define PGT_KOP_PWRITEV			8
#define PGT_KOP_PREADV2			9
#define PGT_KOP_PWRITEV2		10
#define PGT_KOP_FSYNC			11
#define PGT_KOP_FDATASYNC		12
#define PGT_KOP_SYNC_FILE_RANGE	13
#define PGT_KOP_OPENAT			14
#define PGT_KOP_CLOSE			15
#define PGT_KOP_VFS_READ		32
#define PGT_KOP_VFS_WRITE		33
#define PGT_KOP_VFS_FSYNC		34
#define PGT_KOP_CACHE_MISS		40	/* a page read in: read, readahead, fault */
#define PGT_KOP_CACHE_WRITE_MISS	41	/* a page a write brought in or created */
#define PGT_KOP_CACHE_META_MISS	42	/* a block device's own page: fs metadata */
#define PGT_KOP_BLK_READ		48
#define PGT_KOP_BLK_WRITE		49
#define PGT_KOP_BLK_FLUSH		50
#define PGT_KOP_BLK_DISCARD		51
#define PGT_KOP_BLK_OTHER		52
#define PGT_KOP_SEND			64
#define PGT_KOP_RECV			65
#define PGT_KOP_MAX				80

/* File classes behind a file descriptor */
#define PGT_KFILE_NONE			0	/* not applicable (block, page cache) */
#define PGT_KFILE_DATA			1	/* relation file under base/ or global/ */
#define PGT_KFILE_WAL			2	/* pg_wal/, or a WAL segment's name */
#define PGT_KFILE_TEMP			3	/* pgsql_tmp */
#define PGT_KFILE_SOCKET		4
#define PGT_KFILE_OTHER			5	/* another file or directory */
#define PGT_KFILE_SPECIAL		6	/* no file: a pipe, a character device,
									 * signalfd, eventfd (page cache n/a) */
#define PGT_KFILE_MAX			7

/* Histogram metrics (all in microseconds, log2 buckets) */
#define PGT_KHIST_BLOCK			1	/* block request issue -> completion */
#define PGT_KHIST_RUNQ			2	/* wakeup/preemption -> on CPU */
#define PGT_KHIST_FSYNC			3	/* fsync / fdatasync / sync_file_range */
#define PGT_KHIST_SYSCALL		4	/* file reads and writes (read ... pwritev2) */
#define PGT_KHIST_MAX			5

/* Which set filled a pgt_kernel_proc_entry (its `sets`) */
#define PGT_KPROC_SCHED			1
#define PGT_KPROC_MEMORY		2
#define PGT_KPROC_NET			4

/* Counters of a per-process value (struct pgt_kproc_val.v[]) by set */
#define PGT_KSCHED_OFFCPU_NS	0
#define PGT_KSCHED_RUNQ_NS		1
#define PGT_KSCHED_RUNQ_COUNT	2
#define PGT_KSCHED_RUNQ_MAX_NS	3
#define PGT_KSCHED_VOLUNTARY	4
#define PGT_KSCHED_INVOLUNTARY	5
#define PGT_KSCHED_MIGRATIONS	6
#define PGT_KSCHED_WAKEUPS		7

#define PGT_KMEM_FAULTS_USER	0
#define PGT_KMEM_FAULTS_KERNEL	1
#define PGT_KMEM_MAJOR			2
#define PGT_KMEM_MINOR			3
#define PGT_KMEM_PAGES_ALLOC	4
#define PGT_KMEM_PAGES_FREE		5
#define PGT_KMEM_OOM_UPDATES	6
#define PGT_KMEM_OOM_SCORE_ADJ	7

#define PGT_KNET_SEND_CALLS		0
#define PGT_KNET_SEND_BYTES		1
#define PGT_KNET_SEND_NS		2
#define PGT_KNET_SEND_ERRORS	3
#define PGT_KNET_RECV_CALLS		4
#define PGT_KNET_RECV_BYTES		5
#define PGT_KNET_RECV_NS		6
#define PGT_KNET_RECV_ERRORS	7
#define PGT_KNET_RETRANSMITS	8

#define PGT_KPROC_NVALS			12

#endif							/* PGT_KERNEL_H */

/* Names and layer properties (C only; the BPF side defines PGT_KERNEL_NO_NAMES) */
#if !defined(PGT_KERNEL_NO_NAMES) && !defined(PGT_KERNEL_NAMES_H)
#define PGT_KERNEL_NAMES_H
extern const char *pgt_klayer_name(unsigned layer);
extern int	pgt_klayer_timed(unsigned layer);
extern const char *pgt_kop_name(unsigned op);
extern const char *pgt_kfile_name(unsigned cls);
extern const char *pgt_khist_name(unsigned metric);
extern int	pgt_khist_parse(const char *name);
#endif
