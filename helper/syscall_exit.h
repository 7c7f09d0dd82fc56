/*
 * helper/syscall_exit.h
 *	  Where the "syscall" and "network" sets see a system call end: the raw
 *	  sys_exit tracepoint (every kernel with tp_btf), or fexit programs on
 *	  the timed calls' wrappers (kernels with BPF trampolines).  The choice
 *	  (--syscall-exit), the test of whether this kernel can do fexit, and
 *	  the configuration of the shared object's exit programs before load.
 *
 * Single-threaded (the daemon's or the trace loop): no locking.
 */
#ifndef PGT_HELPER_SYSCALL_EXIT_H
#define PGT_HELPER_SYSCALL_EXIT_H

#include <stddef.h>

struct bpf_object;
struct probe_status;

typedef enum syscall_exit_mode
{
	SYSCALL_EXIT_AUTO = 0,		/* fexit where it works, else the tracepoint */
	SYSCALL_EXIT_FEXIT,			/* fexit or nothing (the sets say why) */
	SYSCALL_EXIT_TRACEPOINT		/* the raw sys_exit tracepoint */
} syscall_exit_mode;

/* the option's help, for the daemon's and trace's usage */
#define SYSCALL_EXIT_HELP \
"  --syscall-exit HOOK  syscall and network sets: where a call's end is seen:\n" \
"                     auto (default: fexit programs on the timed calls where\n" \
"                     the kernel runs them, else the sys_exit tracepoint),\n" \
"                     fexit (or the two sets are unavailable, with the\n" \
"                     reason) or tracepoint (sys_exit: every call of the host\n" \
"                     pays for it)\n"

/* --syscall-exit auto|fexit|tracepoint; -1 with err filled when invalid */
extern int	syscall_exit_configure(const char *arg, char *err, size_t errlen);
extern syscall_exit_mode syscall_exit_mode_chosen(void);

/*
 * Can this kernel run an fexit program on a system-call wrapper?  Tested
 * once (a two-instruction program loaded and attached, then closed); the
 * capability row "fexit" of the status shows the answer and its reason.
 */
extern int	syscall_exit_fexit_works(char *reason, size_t len);
extern void syscall_exit_detect(struct probe_status *s);

/* testing: take a failed test of fexit for a passed one (trace --assume-fexit) */
extern void syscall_exit_assume_fexit(void);

/*
 * Before the shared object's load: load its fexit programs for the
 * selected sets (file: the file calls, net: the socket calls), each on its
 * call's wrapper, and no sys_exit program (use_fexit 1), or the sys_exit
 * program alone (0).  Returns 0, or a negative error when a wrapper is not
 * in the kernel's BTF (reason filled).
 */
extern int	syscall_exit_setup(struct bpf_object *obj, int use_fexit, int file, int net,
							   char *reason, size_t len);

#endif							/* PGT_HELPER_SYSCALL_EXIT_H */
