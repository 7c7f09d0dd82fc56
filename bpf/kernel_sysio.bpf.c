// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/kernel_sysio.bpf.c
 *	  The system-call programs of two probe sets in one object, so that a
 *	  system call of any task on the host runs one sys_enter and one exit
 *	  program for both (the exit: sys_exit, or fexit programs on the timed
 *	  calls, below):
 *
 *	  "syscall" (do_file): file I/O system calls of tracked PostgreSQL
 *	  processes (read, write, pread64, pwrite64, readv, writev, preadv,
 *	  pwritev and their v2 forms, fsync, fdatasync, sync_file_range,
 *	  openat, close): calls, bytes, errors and latency per (pid, query id,
 *	  call, file class, relation file and its database, device) in `kio`,
 *	  and latency histograms per (pid, call, device) in `khist`: the fsync
 *	  family's (metric fsync) and the reads' and writes' (metric syscall).
 *
 *	  "network" (do_net): socket send and receive calls (sendto, recvfrom,
 *	  sendmsg, recvmsg: what PostgreSQL's send()/recv() become): calls,
 *	  bytes, errors and time per (pid, query id) in `kproc`, and TCP
 *	  retransmissions attributed to the process that owns the socket.  The
 *	  owner is learnt when a process sends on the socket (fd -> file ->
 *	  socket -> sock), so a retransmit finds it by sock.
 *
 * A call's aggregates go to the task's own rows (task accumulators,
 * kernel_tacc.bpf.h), which the helper reads with the maps and which are
 * folded into the maps when the table overflows or the task exits.
 *
 * The helper sets do_file / do_net before load from the sets selected
 * (helper/kernel_sysio.c); a disabled set's code is dead and removed by the
 * verifier.  Path of a system call: the call number is tested first (a
 * switch, no memory access: most calls are neither file I/O nor socket
 * calls), then the task's storage (present only for tasks that were
 * tracked when they got it), and only without it the pid filter (one hash
 * lookup).  The exit tests the number from the saved
 * registers (a direct load), then the task storage: no hash lookup at all
 * for calls that were not started.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "pgt_common.bpf.h"
#include "kernel_common.bpf.h"
#include "kernel_syscalls.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Which sets this object serves: set by the helper before load. */
const volatile __u8 do_file = 1;
const volatile __u8 do_net = 1;

PGT_DECLARE_KIO;
PGT_DECLARE_KHIST;
PGT_DECLARE_KPROC;

#include "kernel_tacc.bpf.h"

struct call_start
{
	__u64		ts;				/* 0: no call in progress */
	struct pgt_qid_cache qc;	/* see pgt_task_qid */
	__u64		qid;
	struct pgt_kfile file;		/* the file behind fd */
	__u32		fd;
	__u32		pm;
	__u32		owned_fd;		/* fd + 1 whose socket owner this task recorded */
	__u8		op;
	__u8		file_class;
	__u8		exited;			/* the task folded its rows at exit */
	__u8		pad;
	/* the task's accumulators (kernel_tacc.bpf.h): syscall, network */
	struct pgt_tacc_io tio;
	struct pgt_tacc_hist thist;
	struct pgt_tacc_proc tproc;
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
 * points at the same struct file of the same inode: PostgreSQL keeps its
 * files open, so the dentry walk of pgt_classify_file runs once per open
 * file, not per call.  The struct file alone does not say it is the same
 * file: when a backend closes one file and opens another, the new one
 * often gets the same descriptor and the freed struct file's memory (it
 * read a data file's blocks as the configuration file it had read before).
 * So an open that returns a descriptor sets its entry, a close drops it,
 * and a hit also needs the inode, its address and its number, to match
 * (for descriptors made by calls the set does not see, or while it was
 * held).
 */
struct fd_key
{
	__u32		tgid;
	__u32		fd;
};

struct fd_class
{
	__u64		file;			/* the struct file classified */
	__u64		inode;			/* and its inode */
	__u64		ino;			/* and the inode's number (its memory is reused too) */
	struct pgt_kfile id;
	__u8		cls;
	__u8		pad[3];
};

struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fd_key);
	__type(value, struct fd_class);
} fdcache SEC(".maps");

/*
 * socket (struct sock *) -> the tracked process that last sent on it, and
 * how many of the socket's retransmitted segments (tcp_sock.total_retrans)
 * are counted already, as of which hold generation (kresume.gen: a
 * count taken before the set was last held is a new baseline, not a delta)
 */
struct sock_owner
{
	__u32		pid;
	__u32		pm;
	__u32		retrans_seen;
	__u32		gen;
	__u32		ports;			/* sock_ports: the key's memory may be reused */
	__u32		pad;
};

struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct sock_owner);
} owners SEC(".maps");

/*
 * remember_fd
 *		Cache the class just found (in s) of file f, the current task's fd.
 */
static __always_inline void
remember_fd(__u32 tgid, __u32 fd, struct file *f, const struct call_start *s)
{
	struct fd_key k = {.tgid = tgid, .fd = fd};
	struct fd_class n = {};
	struct inode *inode = BPF_CORE_READ(f, f_inode);

	n.file = (__u64) f;
	n.inode = (__u64) inode;
	n.ino = BPF_CORE_READ(inode, i_ino);
	n.cls = s->file_class;
	n.id = s->file;
	bpf_map_update_elem(&fdcache, &k, &n, BPF_ANY);
}

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
	struct inode *inode;

	if (c && f && c->file == (__u64) f &&
		c->inode == (__u64) (inode = BPF_CORE_READ(f, f_inode)) &&
		c->ino == BPF_CORE_READ(inode, i_ino))
	{
		s->file_class = c->cls;
		s->file = c->id;
		return;
	}
	s->file_class = pgt_classify_file(f, &s->file);
	if (f)
		remember_fd(tgid, s->fd, f, s);
}

/*
 * call_op
 *		The op of a call number among the enabled sets, 0 when no enabled
 *		set times it.
 */
static __always_inline __u8
call_op(long id)
{
	__u8		op = 0;

	if (do_file)
		op = file_op(id);
	if (!op && do_net)
		op = net_op(id);
	return op;
}

static __always_inline int
is_net(__u8 op)
{
	return op == PGT_KOP_SEND || op == PGT_KOP_RECV;
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

/*
 * is_tcp
 *		Is sk a TCP socket (the only kind that retransmits)?
 */
static __always_inline int
is_tcp(const struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) == IPPROTO_TCP &&
		BPF_CORE_READ_BITFIELD_PROBED(sk, sk_type) == SOCK_STREAM;
}

/*
 * tcp_total_retrans
 *		The segments sk has retransmitted (what tcp_info reports), 0 for a
 *		socket that is not TCP.
 */
static __always_inline __u32
tcp_total_retrans(const struct sock *sk)
{
	if (!is_tcp(sk))
		return 0;
	return BPF_CORE_READ((const struct tcp_sock *) sk, total_retrans);
}

/*
 * sock_ports
 *		The socket's remote and local port, to tell it from a later socket
 *		at the same address (an owner's entry outlives its socket).
 */
static __always_inline __u32
sock_ports(const struct sock *sk)
{
	return ((__u32) BPF_CORE_READ(sk, __sk_common.skc_dport) << 16) |
		BPF_CORE_READ(sk, __sk_common.skc_num);
}

/*
 * note_owner
 *		Record that tgid owns the socket behind s->fd, when it is a TCP
 *		socket (no other kind retransmits: a client on a Unix socket leaves
 *		`owners` empty, and the helper then skips its pass over the host's
 *		TCP sockets).  A backend sends on one socket for its whole life, so
 *		the walk (fd -> sock) and the owners update happen once per task and
 *		descriptor, not per send.  The descriptor does not name the socket
 *		for good: a backend's postgres_fdw or dblink connection, closed and
 *		opened again, gets the same descriptor for a new socket.  So a connect
 *		forgets the task's descriptor (forget_owned_fd), and so does the
 *		helper's read of the task's rows, for what the set did not see (a
 *		connect while the set was held, a dup2 onto the descriptor).
 */
static __always_inline void
note_owner(__u32 tgid, struct call_start *s)
{
	struct file *f;
	struct socket *sock;
	struct sock *sk;
	struct sock_owner *cur;
	struct sock_owner o = {.pid = tgid, .pm = s->pm, .gen = pgt_kresume_gen()};
	__u64		key;

	if (s->owned_fd == s->fd + 1)
		return;
	f = pgt_fd_file(s->fd);
	sock = f ? BPF_CORE_READ(f, private_data) : 0;
	sk = sock ? BPF_CORE_READ(sock, sk) : 0;
	if (!sk)
		return;
	if (!is_tcp(sk))
	{
		s->owned_fd = s->fd + 1;
		return;
	}
	key = (__u64) sk;
	cur = bpf_map_lookup_elem(&owners, &key);
	o.ports = sock_ports(sk);
	/* an update takes the LRU's lock: only when the owner changed */
	if (!cur || cur->pid != tgid || cur->ports != o.ports)
	{
		/* the new owner is charged the retransmits from now on */
		o.retrans_seen = tcp_total_retrans(sk);
		bpf_map_update_elem(&owners, &key, &o, BPF_ANY);
	}
	s->owned_fd = s->fd + 1;
}

/*
 * forget_owned_fd
 *		The current task connects a socket: its next send looks up the socket
 *		behind the descriptor again (note_owner).
 */
static __always_inline void
forget_owned_fd(void)
{
	struct call_start *s = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0, 0);

	if (s)
		s->owned_fd = 0;
}

/*
 * ksys_enter
 *		A file or socket call of a tracked process starts: note what it is,
 *		on which file, for which query, and the time.
 */
static __always_inline void
ksys_enter(struct pt_regs *regs, long id)
{
	struct task_struct *task;
	__u32		tgid;
	__u32		pm;
	struct call_start *s;
	__u8		op;

	/* the cheap test first: most system calls are neither file nor socket I/O */
	op = call_op(id);
	if (!op)
	{
		if (do_net && is_connect(id))
			forget_owned_fd();
		return;
	}
	tgid = bpf_get_current_pid_tgid() >> 32;
	task = bpf_get_current_task_btf();
	/* a task with storage here was tracked when it got it: no hash lookup */
	s = bpf_task_storage_get(&starts, task, 0, 0);
	if (!s)
	{
		pm = pgt_tracked_pm(tgid);
		if (!pm)
			return;
		s = bpf_task_storage_get(&starts, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!s)
			return;
		s->pm = pm;
	}
	s->op = op;
	/*
	 * A receive waits for the client's next message, whose statement has
	 * no query id yet: it keeps the id of this thread's previous call (the
	 * last statement, as pg_stat_activity shows for an idle session)
	 * instead of reading user memory again.
	 */
	if (op == PGT_KOP_SEND)
		s->qid = pgt_task_qid(task, tgid, &s->qc, 1);	/* a retransmit's id */
	else if (op != PGT_KOP_RECV)
		s->qid = pgt_task_qid(task, tgid, &s->qc, 0);
	s->fd = (__u32) PT_REGS_PARM1_SYSCALL(regs);
	s->file.relfilenode = 0;
	s->file.dboid = 0;
	s->file.dev = 0;
	if (is_net(op))
	{
		s->file_class = PGT_KFILE_SOCKET;
		if (op == PGT_KOP_SEND)
			note_owner(tgid, s);
	}
	else if (op == PGT_KOP_OPENAT)
		s->file_class = PGT_KFILE_OTHER;	/* classified at exit, fd known */
	else
		classify_fd(tgid, s);
	if (op == PGT_KOP_CLOSE)
	{
		struct fd_key k = {.tgid = tgid, .fd = s->fd};

		bpf_map_delete_elem(&fdcache, &k);	/* the descriptor goes away */
	}
	s->ts = bpf_ktime_get_ns();
}

SEC("tp_btf/sys_enter")
int BPF_PROG(pgt_ksys_enter, struct pt_regs *regs, long id)
{
	ksys_enter(regs, id);
	pgt_chain_next(ctx, &pgt_chain_enter, PGT_CHAIN_SLOT_SYSIO);
	return 0;
}


/*
 * net_done
 *		A socket call completed: into the (pid, query) counters.
 */
static __always_inline void
net_done(__u32 tgid, struct call_start *s, long ret, __u64 ns)
{
	int			shared;
	struct pgt_kproc_val *v = pgt_tacc_kproc(s->exited ? 0 : &s->tproc, &kproc, tgid,
											 s->qid, s->pm, -1, &shared);
	int			send = s->op == PGT_KOP_SEND;

	if (!v)
		return;
	PGT_ADD(shared, &v->v[send ? PGT_KNET_SEND_CALLS : PGT_KNET_RECV_CALLS], 1);
	PGT_ADD(shared, &v->v[send ? PGT_KNET_SEND_NS : PGT_KNET_RECV_NS], ns);
	if (ret > 0)
		PGT_ADD(shared, &v->v[send ? PGT_KNET_SEND_BYTES : PGT_KNET_RECV_BYTES],
				(__u64) ret);
	else if (call_failed(ret))
		PGT_ADD(shared, &v->v[send ? PGT_KNET_SEND_ERRORS : PGT_KNET_RECV_ERRORS], 1);
}

/*
 * file_done
 *		A file call completed: into the I/O aggregate, and a read or write
 *		or a sync into its latency histogram (opens and closes into none).
 */
static __always_inline void
file_done(__u32 tgid, struct call_start *s, long ret, __u64 ns)
{
	struct pgt_kio_key k = {};
	struct pgt_kio_val *v;
	int			shared;

	if (s->op == PGT_KOP_OPENAT && ret >= 0)
	{
		struct file *f = pgt_fd_file((__u32) ret);

		s->fd = (__u32) ret;
		s->file_class = pgt_classify_file(f, &s->file);
		if (f)
			remember_fd(tgid, s->fd, f, s);
	}
	pgt_kio_key_set(&k, tgid, PGT_KLAYER_SYSCALL, s->op, s->file_class, s->qid, &s->file);
	v = pgt_tacc_kio(s->exited ? 0 : &s->tio, &kio, &k, s->pm, &shared);
	if (v)
		pgt_kio_val_add(v, shared, (moves_bytes(s->op) && ret > 0) ? (__u64) ret : 0,
						call_failed(ret), ns);
	if (is_sync(s->op))
		pgt_tacc_khist(s->exited ? 0 : &s->thist, &khist, PGT_KHIST_FSYNC, tgid,
					   s->file.dev, s->op, s->pm, ns);
	else if (moves_bytes(s->op) && s->file_class != PGT_KFILE_SPECIAL)
		/* files only: a latch's signalfd or pipe has a device number too */
		pgt_tacc_khist(s->exited ? 0 : &s->thist, &khist, PGT_KHIST_SYSCALL, tgid,
					   s->file.dev, s->op, s->pm, ns);
}

/*
 * ksys_exit
 *		A call noted at entry completed: into the aggregates (and the
 *		stream).
 */
static __always_inline void
ksys_exit(struct pt_regs *regs, long ret)
{
	__u64		id;
	__u32		tgid;
	struct call_start *s;
	struct pgt_kev_call_rec *r;
	__u64		ns;
	long		nr = pgt_exit_nr(regs);
	int			net;

	if (nr >= 0 && !call_op(nr))
		return;
	s = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0, 0);
	if (!s || !s->ts)
		return;
	if (pgt_started_before_resume(s->ts) || is_restart(ret))
	{
		s->ts = 0;				/* entered before the set was held, or made again */
		return;
	}
	ns = bpf_ktime_get_ns() - s->ts;
	s->ts = 0;
	id = bpf_get_current_pid_tgid();
	tgid = id >> 32;
	net = is_net(s->op);
	if (net)
		net_done(tgid, s, ret, ns);
	else
		file_done(tgid, s, ret, ns);
	r = pgt_event_reserve(sizeof(*r), net ? PGT_SET_NETWORK : PGT_SET_SYSCALL, PGT_KEV_CALL,
						  tgid, (__u32) id, s->qid);
	if (r)
	{
		r->c.latency_ns = ns;
		r->c.ret = ret;
		r->c.fd = s->fd;
		r->c.relfilenode = s->file.relfilenode;
		r->c.dev = s->file.dev;
		r->c.dboid = s->file.dboid;
		r->c.op = s->op;
		r->c.file_class = s->file_class;
		r->c.pad = 0;
		r->c.pad2 = 0;
		bpf_ringbuf_submit(r, 0);
	}
}

SEC("tp_btf/sys_exit")
int BPF_PROG(pgt_ksys_exit, struct pt_regs *regs, long ret)
{
	ksys_exit(regs, ret);
	pgt_chain_next(ctx, &pgt_chain_exit, PGT_CHAIN_SLOT_SYSIO);
	return 0;
}

/*
 * The same exits by fexit, where the kernel has BPF trampolines: one
 * program per timed call, on the call's system-call wrapper (x86-64's
 * __x64_sys_read, arm64's __arm64_sys_read, ...), whose argument is the
 * saved registers sys_exit passes and whose return value is the call's.
 * Why: a program on the raw sys_exit tracepoint runs, with the kernel's
 * path to it, at the exit of every system call of every task on the host,
 * which alone costs CPU-bound TPC-B some 2 % of its CPU here
 * (bench/RESULTS.md); an fexit program runs only at the exits of the calls
 * it is attached to.  Left out of the load unless the helper chose fexit
 * (helper/syscall_exit.c: it names each program's target and loads only
 * the selected sets' ones, and then loads no sys_exit program).  Named
 * fexit_<set>_<call>: the helper derives the target from the name.  One
 * for each call file_op and net_op know (test/unit/test_syscall_exit.c
 * checks the file calls against the ops' names).
 */
#define PGT_SYSIO_FEXIT(set, call) \
SEC("?fexit") \
int BPF_PROG(fexit_##set##_##call, struct pt_regs *regs, long ret) \
{ \
	ksys_exit(regs, ret); \
	return 0; \
}

PGT_SYSIO_FEXIT(file, read)
PGT_SYSIO_FEXIT(file, write)
PGT_SYSIO_FEXIT(file, close)
PGT_SYSIO_FEXIT(file, pread64)
PGT_SYSIO_FEXIT(file, pwrite64)
PGT_SYSIO_FEXIT(file, readv)
PGT_SYSIO_FEXIT(file, writev)
PGT_SYSIO_FEXIT(file, fsync)
PGT_SYSIO_FEXIT(file, fdatasync)
PGT_SYSIO_FEXIT(file, openat)
PGT_SYSIO_FEXIT(file, sync_file_range)
PGT_SYSIO_FEXIT(file, preadv)
PGT_SYSIO_FEXIT(file, pwritev)
PGT_SYSIO_FEXIT(file, preadv2)
PGT_SYSIO_FEXIT(file, pwritev2)
PGT_SYSIO_FEXIT(net, sendto)
PGT_SYSIO_FEXIT(net, sendmsg)
PGT_SYSIO_FEXIT(net, recvfrom)
PGT_SYSIO_FEXIT(net, recvmsg)

/*
 * pgt_ksysio_exit
 *		A task exits: its accumulated rows into the maps (its storage dies
 *		with it); what it does after this goes to the maps directly.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(pgt_ksysio_exit, struct task_struct *p)
{
	struct call_start *s = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), 0, 0);

	if (!s || s->exited)
		return 0;
	pgt_tacc_fold_all(&s->tio, &kio, &s->tproc, &kproc, -1, &s->thist, &khist);
	s->exited = 1;
	return 0;
}

/*
 * pgt_ksysio_dump
 *		The helper's read of every task's accumulated rows (a task
 *		iterator: helper/task_accum.c), and its drop of a cluster's rows
 *		(pgt_tacc_forget).
 */
SEC("iter/task")
int pgt_ksysio_dump(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct call_start *s;

	if (!task)
		return 0;
	s = bpf_task_storage_get(&starts, task, 0, 0);
	if (!s)
		return 0;
	pgt_tacc_dump(ctx->meta->seq, &s->tio, &s->tproc, &s->thist);
	pgt_tacc_forget(&s->tio, &s->tproc, &s->thist);
	s->owned_fd = 0;			/* see note_owner: a few walks a second */
	return 0;
}

/*
 * TCP retransmissions on a socket a tracked process owns, counted in
 * segments, as the socket's total_retrans (tcp_info) counts them.  Both
 * programs are loaded only when the network set is selected (the helper's
 * autoload).
 *
 * The count is the growth of total_retrans since the owner's last count
 * (sock_owner.retrans_seen), not one per event: the kernel may not report
 * every retransmission (on some hosts no tracepoint fires while certain
 * tasks are current, and a retransmit timer runs in whatever task it
 * interrupts), so each event also counts those that went unreported
 * before it, and the helper runs pgt_knet_reconcile before each copy for
 * those after the last one.  total_retrans grows before the tracepoint
 * fires.  Kernels from 6.12 on pass a third argument, the transmit's
 * error, and also fire for attempts given up with -EBUSY (the original
 * still queued), which total_retrans does not count; retrans_err_arg says
 * whether the argument exists (read from the kernel's BTF by the helper:
 * where it does not, the access is dead code, removed at load).
 */
const volatile __u8 retrans_err_arg = 0;

/*
 * retrans_count
 *		Segments of o's socket (retransmitted total_retrans in all) to charge
 *		o now, and o's count moved on; `segs` is what the reporting event
 *		retransmitted (0 from the helper's reconcile).  A count from before
 *		the set was last held is a new baseline: held spans are not counted.
 */
static __always_inline __u32
retrans_count(struct sock_owner *o, __u32 total, __u32 segs)
{
	__u32		gen = pgt_kresume_gen();
	__u32		n = total - o->retrans_seen;

	if (o->gen != gen)
	{
		o->gen = gen;
		n = segs;
	}
	else if ((__s32) n < 0)
		n = 0;					/* not the socket counted before: a new baseline */
	o->retrans_seen = total;
	return n;
}

/*
 * charge_retrans
 *		n retransmitted segments to o's process, under its cached query id.
 */
static __always_inline void
charge_retrans(const struct sock_owner *o, __u64 qid, __u32 n)
{
	struct pgt_kproc_val *v = pgt_kproc_get(&kproc, o->pid, qid, o->pm);

	if (v)
		__sync_fetch_and_add(&v->v[PGT_KNET_RETRANSMITS], n);
}

SEC("tp_btf/tcp_retransmit_skb")
int pgt_knet_retransmit(unsigned long long *ctx)
{
	const struct sock *sk = (const struct sock *) ctx[0];
	const struct sk_buff *skb = (const struct sk_buff *) ctx[1];
	__u64		key = (__u64) sk;
	struct sock_owner *o;
	struct pgt_kev_proc_rec *r;
	__u64		qid;
	__u32		n;
	__u16		segs;

	if (retrans_err_arg && (int) ctx[2] == -16)	/* -EBUSY */
		return 0;
	o = bpf_map_lookup_elem(&owners, &key);
	if (!o || o->ports != sock_ports(sk))
		return 0;
	segs = BPF_CORE_READ((struct tcp_skb_cb *) skb->cb, tcp_gso_segs);
	n = retrans_count(o, tcp_total_retrans(sk), segs ? segs : 1);
	if (!n)
		return 0;
	qid = pgt_cached_qid(o->pid);
	charge_retrans(o, qid, n);
	r = pgt_event_reserve(sizeof(*r), PGT_SET_NETWORK, PGT_KEV_RETRANSMIT, o->pid, o->pid, qid);
	if (r)
	{
		r->c.a = ((__u64) bpf_ntohs(o->ports >> 16) << 16) | (o->ports & 0xffff);
		r->c.b = n;
		r->c.cpu = bpf_get_smp_processor_id();
		r->c.kind = 0;
		bpf_ringbuf_submit(r, 0);
	}
	return 0;
}

/*
 * pgt_knet_reconcile
 *		The helper's pass over the host's TCP sockets before each copy: an
 *		owned socket whose total_retrans grew past its owner's count had
 *		retransmissions the kernel did not report; they are charged now.
 *		The iterator holds each socket's lock, as its retransmit timer does.
 */
SEC("iter/tcp")
int pgt_knet_reconcile(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct tcp_sock *tp = skc ? bpf_skc_to_tcp_sock(skc) : 0;
	struct sock_owner *o;
	__u64		key;
	__u32		n;

	if (!tp)
		return 0;				/* not a full TCP socket (time-wait, request) */
	key = (__u64) tp;
	o = bpf_map_lookup_elem(&owners, &key);
	if (!o || o->ports != sock_ports((const struct sock *) tp))
		return 0;
	n = retrans_count(o, tp->total_retrans, 0);
	if (n)
		charge_retrans(o, pgt_cached_qid(o->pid), n);
	return 0;
}
