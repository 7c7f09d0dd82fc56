/*
 * bpf/kernel_syscalls.bpf.h
 *	  The system calls the kernel sets know, by number: which file I/O or
 *	  socket call (PGT_KOP_*) a system-call number is, on the architectures
 *	  the helper builds for.  Shared by the syscall and network sets
 *	  (kernel_sysio.bpf.c: which calls to time) and the vfs set
 *	  (kernel_vfs.bpf.c: whether a page entered the cache for a write).
 *	  A switch on a constant: no memory access.
 */
#ifndef PGT_BPF_KERNEL_SYSCALLS_BPF_H
#define PGT_BPF_KERNEL_SYSCALLS_BPF_H

#include "kernel_sets.h"

/*
 * file_op
 *		PGT_KOP_* of a file I/O system call number, 0 for other calls.
 */
static __always_inline __u8
file_op(long id)
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

/*
 * net_op
 *		PGT_KOP_SEND / PGT_KOP_RECV of a socket call number, 0 for others.
 */
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

/*
 * is_connect
 *		Is id connect(2)?  Not a timed call: a socket connected anew may sit
 *		at the descriptor of one the task closed (kernel_sysio.bpf.c,
 *		note_owner).
 */
static __always_inline int
is_connect(long id)
{
#if defined(__TARGET_ARCH_x86)
	return id == 42;
#elif defined(__TARGET_ARCH_arm64)
	return id == 203;
#else
	return 0;
#endif
}

/*
 * pgt_kop_writes_file
 *		Is op a file write (write, pwrite64, writev, pwritev, pwritev2)?
 */
static __always_inline int
pgt_kop_writes_file(__u8 op)
{
	return op == PGT_KOP_WRITE || op == PGT_KOP_PWRITE64 || op == PGT_KOP_WRITEV ||
		op == PGT_KOP_PWRITEV || op == PGT_KOP_PWRITEV2;
}

#endif							/* PGT_BPF_KERNEL_SYSCALLS_BPF_H */
