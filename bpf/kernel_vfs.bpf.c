// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/kernel_vfs.bpf.c
 *	  Probe set "vfs", the part that works everywhere: page-cache misses of
 *	  tracked processes (filemap:mm_filemap_add_to_page_cache: a page enters
 *	  the cache), counted in bytes per (pid, query id, device).  The share
 *	  of read bytes served from the cache is computed in user space against
 *	  the syscall set's read bytes.  The kprobe part is
 *	  bpf/kernel_vfs_kprobe.bpf.c.
 *
 * A page enters the cache for a read (a read, readahead, a prefetch by
 * posix_fadvise, a fault), or for a write: a write to a page not cached
 * creates it (a relation extended, a WAL page written) or reads it in
 * first.  The second kind is no read miss, and counted as one it would
 * lower the hit ratio of every statement that extends a table, so the
 * program tells them apart by the system call the task is in (its saved
 * registers): a page added under a file write is a "write-miss", any other
 * a "miss".
 *
 * A page can also enter the cache of a block device itself: file systems
 * read their metadata (inode tables, bitmaps, directories on some) through
 * the device's own mapping, in the context of the process whose call needs
 * it.  Those are no file data either (on a cached OLTP workload they are
 * most of the "misses" left), so they are a "meta-miss", counted on the
 * device they were read from: the tracepoint reports such a page on the
 * block-device pseudo file system (an anonymous s_dev, major 0) with the
 * device number as its inode number, and the helper gives the program the
 * host's block devices to recognise them.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "pgt_common.bpf.h"
#include "kernel_common.bpf.h"
#include "kernel_syscalls.bpf.h"

char LICENSE[] SEC("license") = "GPL";

PGT_DECLARE_KIO;

/*
 * Set by the helper before load: the host's block devices (kernel dev_t,
 * MAJOR << 20 | MINOR, from /sys/dev/block), see the file header.
 */
#define PGT_VFS_MAX_BDEVS	256
const volatile __u32 bdevs[PGT_VFS_MAX_BDEVS] = {};
const volatile __u32 nbdevs = 0;

/*
 * Set by the helper before load: the kernel's internal hugetlbfs mounts (one
 * per huge page size; kernel dev_t).  Shared memory in huge pages (the main
 * shared memory with huge_pages on or try) enters the page cache there at
 * its first touch: memory, no file read, no miss.
 */
#define PGT_VFS_MAX_HUGETLB	8
const volatile __u32 hugetlb_devs[PGT_VFS_MAX_HUGETLB] = {};
const volatile __u32 nhugetlb_devs = 0;

/* Set by the helper before load: the kernel's page size (arm64: 4, 16 or 64 KiB) */
const volatile __u32 page_size = 4096;

/*
 * bdev_of
 *		The block device whose own cache page this is (s_dev, ino from the
 *		tracepoint), or 0 for a file's page.
 */
static __always_inline __u32
bdev_of(__u32 s_dev, __u64 ino)
{
	__u32		i;

	if ((s_dev >> 20) != 0 || ino == 0 || ino > 0xffffffffULL)
		return 0;				/* a real device's file system, or no dev_t */
	for (i = 0; i < PGT_VFS_MAX_BDEVS && i < nbdevs; i++)
		if (bdevs[i] == (__u32) ino)
			return (__u32) ino;
	return 0;
}

/*
 * is_hugetlb
 *		Is s_dev one of the internal hugetlbfs mounts (hugetlb_devs)?
 */
static __always_inline bool
is_hugetlb(__u32 s_dev)
{
	__u32		i;

	if ((s_dev >> 20) != 0)
		return false;			/* a real device's file system */
	for (i = 0; i < PGT_VFS_MAX_HUGETLB && i < nhugetlb_devs; i++)
		if (hugetlb_devs[i] == s_dev)
			return true;
	return false;
}

/*
 * miss_op
 *		PGT_KOP_CACHE_WRITE_MISS when the current task is in a file write
 *		system call, PGT_KOP_CACHE_MISS otherwise (a read, a fault: its saved
 *		registers hold no system call, -1).
 */
static __always_inline __u8
miss_op(void)
{
	struct pt_regs *regs = (struct pt_regs *) bpf_task_pt_regs(bpf_get_current_task_btf());

	if (regs && pgt_kop_writes_file(file_op(pgt_exit_nr(regs))))
		return PGT_KOP_CACHE_WRITE_MISS;
	return PGT_KOP_CACHE_MISS;
}

SEC("tp/filemap/mm_filemap_add_to_page_cache")
int pgt_kvfs_cache_add(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	__u64		id = bpf_get_current_pid_tgid();
	__u32		tgid = id >> 32;
	__u32		pm = pgt_tracked_pm(tgid);
	struct pgt_kio_key k = {};
	struct pgt_kfile file = {};	/* a miss is counted per device, not per file */
	struct pgt_kev_io_rec *r;
	__u64		qid;
	__u64		ino;
	__u32		bytes;
	__u32		order;
	__u32		bdev;
	__u8		op;

	if (!pm)
		return 0;
	file.dev = BPF_CORE_READ(ctx, s_dev);
	if (is_hugetlb(file.dev))
		return 0;				/* a first touch of shared memory */
	/* older kernels record a page, without an order: one page */
	order = bpf_core_field_exists(ctx->order) ? BPF_CORE_READ(ctx, order) : 0;
	bytes = page_size << (order & 15);
	qid = pgt_current_qid(tgid);
	ino = BPF_CORE_READ(ctx, i_ino);
	bdev = bdev_of(file.dev, ino);
	if (bdev)
	{
		file.dev = bdev;
		op = PGT_KOP_CACHE_META_MISS;
	}
	else
		op = miss_op();
	pgt_kio_key_set(&k, tgid, PGT_KLAYER_PAGECACHE, op, PGT_KFILE_NONE, qid,
					&file);
	pgt_kio_add(&kio, &k, pm, bytes, 0, 0);
	r = pgt_event_reserve(sizeof(*r), PGT_SET_VFS, PGT_KEV_CACHE_MISS, tgid, (__u32) id, qid);
	if (r)
	{
		r->c.latency_ns = 0;
		r->c.sector = BPF_CORE_READ(ctx, index);
		r->c.ino = ino;
		r->c.bytes = bytes;
		r->c.dev = k.dev;
		r->c.op = op;
		__builtin_memset(r->c.pad, 0, sizeof(r->c.pad));
		bpf_ringbuf_submit(r, 0);
	}
	return 0;
}
