// SPDX-License-Identifier: GPL-2.0
/*
 * bpf/kernel_net.bpf.c
 *	  Probe set "network": socket send and receive system calls (sendto,
 *	  recvfrom, sendmsg, recvmsg: what PostgreSQL's send()/recv() become) of
 *	  tracked processes: calls, bytes, errors and time per (pid, query id),
 *	  and TCP retransmissions attributed to the process that owns the
 *	  socket.  The owner is learnt when the process sends on the socket
 *	  (fd -> file -> socket -> sock), so a retransmit finds it by sock.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "pgt_common.bpf.h"
#include "kernel_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

PGT_DECLARE_KPROC;

struct net_start
{
	__u64		ts;
	__u64		qid;
	__u32		fd;
	__u8		op;
	__u8		pad[3];
};

struct
{
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct net_start);
} nstarts SEC(".maps");

struct sock_owner
{
	__u32		pid;
	__u32		pm;
};

struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct sock_owner);
} owners SEC(".maps");

static __always_inline __u8
net_op(long id)
{
#if defined(__TARGET_ARCH_x86)
	switch (id)
	{
		case 44: case 46: return PGT_KOP_SEND;	/* sendto, sendmsg */
		case 45: case 47: return PGT_KOP_RECV;	/* recvfrom, recvmsg */
	}
#elif defined(__TARGET_ARCH_arm64)
	switch (id)
	{
		case 206: case 211: return PGT_KOP_SEND;
		case 207: case 212: return PGT_KOP_RECV;
	}
#endif
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(pgt_knet_enter, struct pt_regs *regs, long id)
{
	__u32		tgid = bpf_get_current_pid_tgid() >> 32;
	__u32		pm;
	struct net_start *s;
	__u8		op;

	op = net_op(id);
	if (!op)
		return 0;
	pm = pgt_tracked_pm(tgid);
	if (!pm)
		return 0;
	s = bpf_task_storage_get(&nstarts, bpf_get_current_task_btf(), 0,
							 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s)
		return 0;
	s->op = op;
	s->fd = (__u32) PT_REGS_PARM1_CORE_SYSCALL(regs);
	s->qid = pgt_current_qid(tgid);
	s->ts = bpf_ktime_get_ns();
	if (op == PGT_KOP_SEND)
	{
		struct file *f = pgt_fd_file(s->fd);
		struct socket *sock = f ? BPF_CORE_READ(f, private_data) : 0;
		struct sock *sk = sock ? BPF_CORE_READ(sock, sk) : 0;

		if (sk)
		{
			__u64		key = (__u64) sk;
			struct sock_owner *cur = bpf_map_lookup_elem(&owners, &key);
			struct sock_owner o = {.pid = tgid, .pm = pm};

			/* an update takes the LRU's lock: only when the owner changed */
			if (!cur || cur->pid != tgid)
				bpf_map_update_elem(&owners, &key, &o, BPF_ANY);
		}
	}
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(pgt_knet_exit, struct pt_regs *regs, long ret)
{
	__u64		id = bpf_get_current_pid_tgid();
	__u32		tgid = id >> 32;
	struct net_start *s;
	struct pgt_kproc_val *v;
	struct pgt_kev_call_rec *r;
	__u32		pm;
	__u64		ns;
	int			send;

	{
		long		nr = pgt_exit_nr(regs);

		if (nr >= 0 && !net_op(nr))
			return 0;
	}
	s = bpf_task_storage_get(&nstarts, bpf_get_current_task_btf(), 0, 0);
	if (!s || !s->ts)
		return 0;
	ns = bpf_ktime_get_ns() - s->ts;
	s->ts = 0;
	pm = pgt_tracked_pm(tgid);
	if (!pm)
		return 0;
	send = s->op == PGT_KOP_SEND;
	v = pgt_kproc_get(&kproc, tgid, s->qid, pm);
	if (v)
	{
		__sync_fetch_and_add(&v->v[send ? PGT_KNET_SEND_CALLS : PGT_KNET_RECV_CALLS], 1);
		__sync_fetch_and_add(&v->v[send ? PGT_KNET_SEND_NS : PGT_KNET_RECV_NS], ns);
		if (ret > 0)
			__sync_fetch_and_add(&v->v[send ? PGT_KNET_SEND_BYTES : PGT_KNET_RECV_BYTES],
								 (__u64) ret);
		else if (ret < 0)
			__sync_fetch_and_add(&v->v[send ? PGT_KNET_SEND_ERRORS : PGT_KNET_RECV_ERRORS], 1);
	}
	r = pgt_event_reserve(sizeof(*r), PGT_SET_NETWORK, PGT_KEV_CALL, tgid, (__u32) id, s->qid);
	if (r)
	{
		r->c.latency_ns = ns;
		r->c.ret = ret;
		r->c.fd = s->fd;
		r->c.relfilenode = 0;
		r->c.dev = 0;
		r->c.op = s->op;
		r->c.file_class = PGT_KFILE_SOCKET;
		r->c.pad = 0;
		bpf_ringbuf_submit(r, 0);
	}
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(pgt_knet_retransmit, const struct sock *sk, const struct sk_buff *skb)
{
	__u64		key = (__u64) sk;
	struct sock_owner *o = bpf_map_lookup_elem(&owners, &key);
	struct pgt_kproc_val *v;
	struct pgt_kev_proc_rec *r;
	__u64		qid;

	if (!o)
		return 0;
	qid = pgt_cached_qid(o->pid);
	v = pgt_kproc_get(&kproc, o->pid, qid, o->pm);
	if (v)
		__sync_fetch_and_add(&v->v[PGT_KNET_RETRANSMITS], 1);
	r = pgt_event_reserve(sizeof(*r), PGT_SET_NETWORK, PGT_KEV_RETRANSMIT, o->pid, o->pid, qid);
	if (r)
	{
		r->c.a = ((__u64) bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport)) << 16) |
			BPF_CORE_READ(sk, __sk_common.skc_num);
		r->c.b = 0;
		r->c.cpu = bpf_get_smp_processor_id();
		r->c.kind = 0;
		bpf_ringbuf_submit(r, 0);
	}
	return 0;
}
