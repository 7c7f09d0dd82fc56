/*
 * bpf/pgt_tracked.bpf.h
 *	  The foundation's pid filter `tracked`: tgid -> struct pgt_tracked for
 *	  every PostgreSQL process the helper follows.
 *
 * One definition for the object that owns the map (bpf/pg_tracer.bpf.c)
 * and for every probe set's object (through pgt_common.bpf.h), which the
 * helper hands the owner's fd before load (bpf_map__reuse_fd()): libbpf
 * refuses to reuse a map whose type, key, value or capacity differ, so the
 * two must not be written twice.
 *
 * Include after vmlinux.h, the libbpf headers and pg_tracer.h.
 */
#ifndef PGT_BPF_PGT_TRACKED_BPF_H
#define PGT_BPF_PGT_TRACKED_BPF_H

struct
{
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PGT_BPF_MAX_TRACKED);
	__type(key, __u32);
	__type(value, struct pgt_tracked);
} tracked SEC(".maps");

#endif							/* PGT_BPF_PGT_TRACKED_BPF_H */
