// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/kernel_block.bpf.c
 *	  Probe set "block": block requests with their issue -> completion
 *	  latency per device and operation (log2 histogram, in-kernel), bytes
 *	  and counts per (submitter pid, query id, op, device).
 *
 * Completion runs in interrupt context on any CPU, so everything is keyed
 * by the request pointer: block_io_start (in the submitter's context, when
 * the kernel has it: 6.5+) remembers who submitted the request,
 * block_rq_issue stamps the issue time (and the submitter when
 * block_io_start is missing: a request dispatched from a kblockd worker
 * then counts as the kernel's), block_rq_complete accounts it, and
 * block_rq_merge forgets a request merged into another (freed without
 * completing: its bytes complete as the other's, for that one's
 * submitter).  A cache flush (an empty request with
 * the pre-flush flag, as fdatasync sends) is never issued as itself: the
 * flush machinery issues a flush request of its own from a kblockd worker
 * and ends the submitter's when that completes, so it counts as a "flush"
 * of its submitter, timed from its submission.  A request not submitted
 * by a tracked process but by a kernel thread (writeback, kworkers) is
 * pid 0, "kernel"; requests of other user processes are ignored.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "pgt_common.bpf.h"
#include "kernel_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

PGT_DECLARE_KIO;
PGT_DECLARE_KHIST;

#define PGT_PF_KTHREAD	0x00200000

struct rq_info
{
	__u64		issue_ns;		/* 0: not issued (yet) as itself */
	__u64		start_ns;		/* submitted (block_io_start) */
	__u64		qid;
	__u32		pid;
	__u32		pm;
	__u32		bytes;
	__u32		pad;
};

/*
 * Requests in flight, by address.  LRU: every kernel thread's request of
 * the host takes an entry, and one left behind (completed while the set
 * was held, on a device since removed) is only replaced when its address
 * comes back; a full map makes room by dropping the least recently used
 * (those leftovers first) instead of refusing new requests, a tracked
 * backend's among them.  Neither is counted.
 */
struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct rq_info);
} inflight SEC(".maps");

/*
 * submitter
 *		Fill who submits from the current context; 0 when it is neither a
 *		tracked process nor a kernel thread.
 */
static __always_inline int
submitter(struct rq_info *ri)
{
	__u32		tgid = bpf_get_current_pid_tgid() >> 32;
	__u32		pm = pgt_tracked_pm(tgid);
	struct task_struct *task;

	if (pm)
	{
		ri->pid = tgid;
		ri->pm = pm;
		ri->qid = pgt_current_qid(tgid);
		return 1;
	}
	task = bpf_get_current_task_btf();
	if (BPF_CORE_READ(task, flags) & PGT_PF_KTHREAD)
	{
		ri->pid = 0;
		ri->pm = 0;
		ri->qid = 0;
		return 1;
	}
	return 0;
}

/*
 * Set before load: block_io_start is attached (the kernel has it), so a
 * request that reaches block_rq_issue without an entry was submitted by a
 * process that is not ours (the issue may then run in a kblockd worker,
 * which must not take it for the kernel's).
 */
const volatile __u8 has_io_start = 1;

/*
 * Set by the helper after attach, when block_io_start is in the kernel but
 * its program did not attach: requests are then taken at issue, as on a
 * kernel without it (rather than every one ignored for want of an entry).
 */
__u8		io_start_lost = 0;

SEC("tp_btf/block_io_start")
int BPF_PROG(pgt_kblk_start, struct request *rq)
{
	struct rq_info ri = {};
	__u64		key = (__u64) rq;

	if (!submitter(&ri))
	{
		/*
		 * Not ours: forget what an earlier request at this address left
		 * (one merged into another is freed without completing), or its
		 * submitter would be credited with this one.
		 */
		bpf_map_delete_elem(&inflight, &key);
		return 0;
	}
	ri.start_ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&inflight, &key, &ri, BPF_ANY);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(pgt_kblk_issue, struct request *rq)
{
	__u64		key = (__u64) rq;
	struct rq_info *ri = bpf_map_lookup_elem(&inflight, &key);
	struct rq_info n = {};

	if (ri && pgt_started_before_resume(ri->start_ns))
	{
		/*
		 * Left from before the set was held: a request at this address
		 * that completed unseen, or this one, submitted unseen.  Either
		 * way not known to be its submitter's.
		 */
		bpf_map_delete_elem(&inflight, &key);
		ri = 0;
	}
	if (!ri)
	{
		/* not recorded at submission: not ours, or no block_io_start running */
		if ((has_io_start && !io_start_lost) || !submitter(&n))
			return 0;
		n.bytes = BPF_CORE_READ(rq, __data_len);
		n.issue_ns = bpf_ktime_get_ns();
		n.start_ns = n.issue_ns;
		bpf_map_update_elem(&inflight, &key, &n, BPF_ANY);
		return 0;
	}
	ri->bytes = BPF_CORE_READ(rq, __data_len);
	ri->issue_ns = bpf_ktime_get_ns();
	return 0;
}

/*
 * A request merged into another is freed without completing: drop its
 * entry now rather than leave it to whichever request reuses the address
 * (one that block_io_start does not see, a passthrough command, would
 * inherit its submitter).
 */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(pgt_kblk_merge, struct request *rq)
{
	__u64		key = (__u64) rq;

	bpf_map_delete_elem(&inflight, &key);
	return 0;
}

/*
 * blk_op
 *		PGT_KOP_BLK_* of a request's operation.
 */
static __always_inline __u8
blk_op(struct request *rq)
{
	__u32		flags = BPF_CORE_READ(rq, cmd_flags);

	switch (flags & 0xff)
	{
		case 0: return PGT_KOP_BLK_READ;
		case 1: return PGT_KOP_BLK_WRITE;
		case 2: return PGT_KOP_BLK_FLUSH;
		case 3: return PGT_KOP_BLK_DISCARD;
	}
	return PGT_KOP_BLK_OTHER;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(pgt_kblk_complete, struct request *rq, blk_status_t error,
			 unsigned int nr_bytes)
{
	__u64		key = (__u64) rq;
	struct rq_info *ri = bpf_map_lookup_elem(&inflight, &key);
	struct pgt_kio_key k = {};
	struct pgt_kfile file = {};	/* a request is counted per device */
	struct pgt_kev_io_rec *r;
	struct gendisk *disk;
	__u64		begin;
	__u64		ns;
	__u32		dev = 0;
	__u8		op;
	int			unissued = 0;

	if (!ri)
		return 0;
	begin = ri->issue_ns;
	op = blk_op(rq);
	if (!begin && ri->bytes == 0 && BPF_CORE_READ(rq, __data_len) == 0)
	{
		/*
		 * An empty request that was never issued as itself: a cache flush
		 * (fdatasync's), which the flush machinery ran as its own flush
		 * request (issued from a kblockd worker, with no entry here) and
		 * then ended.  Its time is from its submission.
		 */
		begin = ri->start_ns;
		op = PGT_KOP_BLK_FLUSH;
	}
	else if (!begin && error)
	{
		/*
		 * Failed before the driver issued it (a controller not live, a
		 * device offline, no path left): an error with no bytes moved,
		 * timed from its submission, and not a device latency.
		 */
		begin = ri->start_ns;
		unissued = 1;
	}
	if (!begin || pgt_started_before_resume(begin))
	{
		bpf_map_delete_elem(&inflight, &key);
		return 0;
	}
	ns = bpf_ktime_get_ns() - begin;
	disk = BPF_CORE_READ(rq, q, disk);
	if (disk)
		dev = ((__u32) BPF_CORE_READ(disk, major) << 20) | (__u32) BPF_CORE_READ(disk, first_minor);
	file.dev = dev;
	pgt_kio_key_set(&k, ri->pid, PGT_KLAYER_BLOCK, op, PGT_KFILE_NONE, ri->qid, &file);
	/*
	 * a failed request moved nothing: its size is not bytes read or
	 * written; one never issued waited for no device: a call and an error,
	 * no time (the row's total and max agree with the histogram; the event
	 * stream keeps its wait)
	 */
	pgt_kio_add(&kio, &k, ri->pm, error ? 0 : ri->bytes, error != 0, unissued ? 0 : ns);
	if (!unissued)
		pgt_khist_add(&khist, PGT_KHIST_BLOCK, ri->pid, dev, op, ri->pm, ns);
	r = pgt_event_reserve(sizeof(*r), PGT_SET_BLOCK, PGT_KEV_BLOCK, ri->pid, ri->pid, ri->qid);
	if (r)
	{
		r->c.latency_ns = ns;
		r->c.sector = BPF_CORE_READ(rq, __sector);
		r->c.ino = 0;
		r->c.bytes = ri->bytes;
		r->c.dev = dev;
		r->c.op = op;
		__builtin_memset(r->c.pad, 0, sizeof(r->c.pad));
		bpf_ringbuf_submit(r, 0);
	}
	bpf_map_delete_elem(&inflight, &key);
	return 0;
}
