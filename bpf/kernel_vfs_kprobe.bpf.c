// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/kernel_vfs_kprobe.bpf.c
 *	  Probe set "vfs", the kprobe part: vfs_read, vfs_write and vfs_fsync
 *	  (kprobe + kretprobe) of tracked processes, with their latency and
 *	  bytes per (pid, query id, op, file class).  Kernels without
 *	  CONFIG_KPROBE_EVENTS cannot attach it; the helper then reports the set as
 *	  degraded with that reason and keeps the page-cache part.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "pgt_common.bpf.h"
#include "kernel_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

PGT_DECLARE_KIO;

struct vfs_start
{
	__u64		ts;
	__u64		qid;
	struct pgt_kfile file;
	__u8		op;
	__u8		file_class;
};

/*
 * A call in progress, per thread and kind (an LRU: a start whose return
 * probe never ran, when the kernel had no kretprobe instance left, must not
 * fill the map for good): a write to a file opened with
 * O_DSYNC (WAL with wal_sync_method open_datasync) syncs inside vfs_write,
 * through vfs_fsync_range, so a write and a sync can be under way at once
 * on one thread, and each is counted.
 */
struct vfs_key
{
	__u32		tid;
	__u32		sync;			/* 1: vfs_fsync_range, 0: vfs_read / vfs_write */
};

struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct vfs_key);
	__type(value, struct vfs_start);
} vstarts SEC(".maps");

static __always_inline int
vfs_enter(struct file *f, __u8 op)
{
	__u64		id = bpf_get_current_pid_tgid();
	__u32		tgid = id >> 32;
	struct vfs_key key = {.tid = (__u32) id, .sync = op == PGT_KOP_VFS_FSYNC};
	struct vfs_start s = {};

	if (!pgt_tracked_pm(tgid))
		return 0;
	s.ts = bpf_ktime_get_ns();
	s.qid = pgt_current_qid(tgid);
	s.op = op;
	s.file_class = pgt_classify_file(f, &s.file);
	bpf_map_update_elem(&vstarts, &key, &s, BPF_ANY);
	return 0;
}

static __always_inline int
vfs_exit(long ret, __u32 sync)
{
	__u64		id = bpf_get_current_pid_tgid();
	__u32		tgid = id >> 32;
	struct vfs_key key = {.tid = (__u32) id, .sync = sync};
	struct vfs_start *s = bpf_map_lookup_elem(&vstarts, &key);
	struct pgt_kio_key k = {};
	__u32		pm;

	if (!s)
		return 0;
	/* a restarted call is entered again and counted then, as by `syscall` */
	pm = pgt_started_before_resume(s->ts) || is_restart(ret) ? 0 : pgt_tracked_pm(tgid);
	pgt_kio_key_set(&k, tgid, PGT_KLAYER_VFS, s->op, s->file_class, s->qid, &s->file);
	if (pm)
		pgt_kio_add(&kio, &k, pm, (s->op != PGT_KOP_VFS_FSYNC && ret > 0) ? (__u64) ret : 0,
					call_failed(ret), bpf_ktime_get_ns() - s->ts);
	bpf_map_delete_elem(&vstarts, &key);
	return 0;
}

SEC("kprobe/vfs_read")
int BPF_KPROBE(pgt_kvfs_read, struct file *f)
{
	return vfs_enter(f, PGT_KOP_VFS_READ);
}

SEC("kretprobe/vfs_read")
int BPF_KRETPROBE(pgt_kvfs_read_ret, long ret)
{
	return vfs_exit(ret, 0);
}

SEC("kprobe/vfs_write")
int BPF_KPROBE(pgt_kvfs_write, struct file *f)
{
	return vfs_enter(f, PGT_KOP_VFS_WRITE);
}

SEC("kretprobe/vfs_write")
int BPF_KRETPROBE(pgt_kvfs_write_ret, long ret)
{
	return vfs_exit(ret, 0);
}

SEC("kprobe/vfs_fsync_range")
int BPF_KPROBE(pgt_kvfs_fsync, struct file *f)
{
	return vfs_enter(f, PGT_KOP_VFS_FSYNC);
}

/* vfs_fsync_range returns an int: the upper half of rax is not its sign */
SEC("kretprobe/vfs_fsync_range")
int BPF_KRETPROBE(pgt_kvfs_fsync_ret, int ret)
{
	return vfs_exit(ret, 1);
}
