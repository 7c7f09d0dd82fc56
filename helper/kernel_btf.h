/*
 * helper/kernel_btf.h
 *	  What the running kernel's BTF says about its tracepoints, for the
 *	  programs that adapt to a kernel version (an argument added later).
 */
#ifndef PGT_HELPER_KERNEL_BTF_H
#define PGT_HELPER_KERNEL_BTF_H

/*
 * The number of arguments tracepoint `name` passes its BPF programs (as
 * tp_btf sees them), or -1 when the kernel's BTF does not say.
 */
extern int	kernel_btf_tp_args(const char *name);

#endif							/* PGT_HELPER_KERNEL_BTF_H */
