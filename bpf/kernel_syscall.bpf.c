// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/kernel_syscall.bpf.c
 *	  Probe set "syscall": file I/O system calls of tracked PostgreSQL
 *	  processes (read, write, pread64, pwrite64, readv, writev, preadv,
 *	  pwritev and their v2 forms, fsync, fdatasync, sync_file_range, openat,
 *	  close): calls, bytes, errors and latency per (pid, query id, call,
 *	  file class, relation file, device), plus an fsync latency histogram.
 *
 * sys_enter stores the call, its start time, the query id and the class of
 * the file behind the descriptor in task storage; sys_exit turns it into
 * the aggregate.  Untracked tasks cost one hash lookup per system call.
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

struct call_start
{
	__u64		ts;
	__u64		qid;
	__u32		fd;
	__u32		relfilenode;
	__u32		dev;
	__u8		op;
	__u8		file_class;
	__u16		pad;
};

struct
{
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct call_start);
} starts SEC(".maps");

/*
 * Class of the file behind (tgid, fd), valid while the descriptor still
 * points at the same struct file: PostgreSQL keeps its files open, so the
 * dentry walk of pgt_classify_file runs once per open file, not per call.
 */
struct fd_key
{
	__u32		tgid;
	__u32		fd;
};

struct fd_class
{
	__u64		file;
	__u32		relfilenode;
	__u32		dev;
	__u8		cls;
	__u8		pad[7];
};

struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fd_key);
	__type(value, struct fd_class);
} fdcache SEC(".maps");

/*
 * classify_fd
 *		File class of the current task's fd, through the cache.
 */
static __always_inline void
classify_fd(__u32 tgid, struct call_start *s)
{
	struct fd_key k = {.tgid = tgid, .fd = s->fd};
	struct file *f = pgt_fd_file(s->fd);
	struct fd_class *c = bpf_map_lookup_elem(&fdcache, &k);
	struct fd_class n = {};

	if (c && f && c->file == (__u64) f)
	{
		s->file_class = c->cls;
		s->relfilenode = c->relfilenode;
		s->dev = c->dev;
		return;
	}
	s->file_class = pgt_classify_file(f, &s->relfilenode, &s->dev);
	if (!f)
		return;
	n.file = (__u64) f;
	n.cls = s->file_class;
	n.relfilenode = s->relfilenode;
	n.dev = s->dev;
	bpf_map_update_elem(&fdcache, &k, &n, BPF_ANY);
}

/*
 * syscall_op
 *		PGT_KOP_* of a system call number, 0 for calls this set ignores.
 */
static __always_inline __u8
syscall_op(long id)
{
#if defined(__TARGET_ARCH_x86)
	switch (id)
	{
		case 0: return PGT_KOP_READ;
		case 1: return PGT_KOP_WRITE;
		case 3: return PGT_KOP_CLOSE;
		case 17: return PGT_KOP_PREAD64;
		case 18: return PGT_KOP_PWRITE64;
		case 19: return PGT_KOP_READV;
		case 20: return PGT_KOP_WRITEV;
		case 74: return PGT_KOP_FSYNC;
		case 75: return PGT_KOP_FDATASYNC;
		case 257: return PGT_KOP_OPENAT;
		case 277: return PGT_KOP_SYNC_FILE_RANGE;
		case 295: return PGT_KOP_PREADV;
		case 296: return PGT_KOP_PWRITEV;
		case 327: return PGT_KOP_PREADV2;
		case 328: return PGT_KOP_PWRITEV2;
	}
#elif defined(__TARGET_ARCH_arm64)
	switch (id)
	{
		case 56: return PGT_KOP_OPENAT;
		case 57: return PGT_KOP_CLOSE;
		case 63: return PGT_KOP_READ;
		case 64: return PGT_KOP_WRITE;
		case 65: return PGT_KOP_READV;
		case 66: return PGT_KOP_WRITEV;
		case 67: return PGT_KOP_PREAD64;
		case 68: return PGT_KOP_PWRITE64;
		case 69: return PGT_KOP_PREADV;
		case 70: return PGT_KOP_PWRITEV;
		case 82: return PGT_KOP_FSYNC;
		case 83: return PGT_KOP_FDATASYNC;
		case 84: return PGT_KOP_SYNC_FILE_RANGE;
		case 286: return PGT_KOP_PREADV2;
		case 287: return PGT_KOP_PWRITEV2;
	}
#endif
	return 0;
}

static __always_inline int
moves_bytes(__u8 op)
{
	return op >= PGT_KOP_READ && op <= PGT_KOP_PWRITEV2;
}

static __always_inline int
is_sync(__u8 op)
{
	return op == PGT_KOP_FSYNC || op == PGT_KOP_FDATASYNC || op == PGT_KOP_SYNC_FILE_RANGE;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(pgt_ksys_enter, struct pt_regs *regs, long id)
{
	__u32		tgid = bpf_get_current_pid_tgid() >> 32;
	struct call_start *s;
	__u8		op;

	/* the cheap test first: most system calls are not file I/O */
	op = syscall_op(id);
	if (!op)
		return 0;
	if (!pgt_tracked_pm(tgid))
		return 0;
	s = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0,
							 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s)
		return 0;
	s->op = op;
	s->qid = pgt_current_qid(tgid);
	s->fd = (__u32) PT_REGS_PARM1_CORE_SYSCALL(regs);
	if (op == PGT_KOP_OPENAT)
	{
		s->file_class = PGT_KFILE_OTHER;	/* classified at exit, fd known */
		s->relfilenode = 0;
		s->dev = 0;
	}
	else
		classify_fd(tgid, s);
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(pgt_ksys_exit, struct pt_regs *regs, long ret)
{
	__u64		id = bpf_get_current_pid_tgid();
	__u32		tgid = id >> 32;
	struct call_start *s;
	struct pgt_kio_key k = {};
	struct pgt_kev_call_rec *r;
	__u64		ns;
	__u32		pm;

	{
		long		nr = pgt_exit_nr(regs);

		if (nr >= 0 && !syscall_op(nr))
			return 0;
	}
	s = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0, 0);
	if (!s || !s->ts)
		return 0;
	ns = bpf_ktime_get_ns() - s->ts;
	s->ts = 0;
	pm = pgt_tracked_pm(tgid);
	if (!pm)
		return 0;
	if (s->op == PGT_KOP_OPENAT && ret >= 0)
	{
		s->fd = (__u32) ret;
		s->file_class = pgt_classify_file(pgt_fd_file((__u32) ret), &s->relfilenode, &s->dev);
	}
	k.pid = tgid;
	k.layer = PGT_KLAYER_SYSCALL;
	k.op = s->op;
	k.file_class = s->file_class;
	k.queryid = s->qid;
	k.relfilenode = s->relfilenode;
	k.dev = s->dev;
	pgt_kio_add(&kio, &k, pm, (moves_bytes(s->op) && ret > 0) ? (__u64) ret : 0, ret < 0, ns);
	if (is_sync(s->op))
		pgt_khist_add(&khist, PGT_KHIST_FSYNC, tgid, s->dev, s->op, pm, ns);
	r = pgt_event_reserve(sizeof(*r), PGT_SET_SYSCALL, PGT_KEV_CALL, tgid, (__u32) id, s->qid);
	if (r)
	{
		r->c.latency_ns = ns;
		r->c.ret = ret;
		r->c.fd = s->fd;
		r->c.relfilenode = s->relfilenode;
		r->c.dev = s->dev;
		r->c.op = s->op;
		r->c.file_class = s->file_class;
		r->c.pad = 0;
		bpf_ringbuf_submit(r, 0);
	}
	return 0;
}
