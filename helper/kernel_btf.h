/*
 * helper/kernel_btf.h
 *	  What the running kernel's BTF says about its tracepoints, for the
 *	  programs that adapt to a kernel version (a tracepoint or an argument
 *	  added later).
 */
#ifndef PGT_HELPER_KERNEL_BTF_H
#define PGT_HELPER_KERNEL_BTF_H

#include <stddef.h>

/*
 * The number of arguments tracepoint `name` passes its BPF programs (as
 * tp_btf sees them), or -1 when the kernel's BTF does not say (or it is
 * hidden, below).
 */
extern int	kernel_btf_tp_args(const char *name);

/* Does the kernel have tracepoint `name` (for tp_btf programs)? */
extern int	kernel_btf_has_tp(const char *name);

/* Does struct `type` have member `member` (1, 0; -1: no such struct)? */
extern int	kernel_btf_has_member(const char *type, const char *member);

/*
 * Testing: act as if the kernel lacked tracepoint `name`, so that the
 * fallback an older kernel takes runs here.  Returns 0, or -1 when the
 * name is not one whose absence a probe set handles (error in err).
 */
extern int	kernel_btf_hide_tp(const char *name, char *err, size_t errlen);

#endif							/* PGT_HELPER_KERNEL_BTF_H */
