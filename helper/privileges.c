/*
 * helper/privileges.c
 *	  Privilege checks of the daemon: refuse to run setuid/setgid, and
 *	  require root or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE.
 *
 * pg-tracer is never installed setuid, nor with file capabilities: either
 * would let any local user load BPF programs through it.  When real and
 * effective ids differ, or the exec was a secure one (AT_SECURE), we stop
 * before doing anything.  Capabilities are read with the raw capget
 * syscall (no libcap dependency).
 */
#include "privileges.h"

#include "log.h"

#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON		38
#endif
#ifndef CAP_BPF
#define CAP_BPF			39
#endif

/*
 * privileges_not_setuid
 *		0 when real and effective uid/gid agree, else -1 with err set.
 */
int
privileges_not_setuid(char *err, size_t errlen)
{
	if (getuid() != geteuid() || getgid() != getegid())
	{
		snprintf(err, errlen,
				 "refusing to run setuid/setgid (uid %d euid %d gid %d egid %d): "
				 "run pg-tracer as root or with capabilities instead",
				 (int) getuid(), (int) geteuid(), (int) getgid(), (int) getegid());
		return -1;
	}
	/*
	 * File capabilities (setcap on the binary) raise any user who runs it
	 * as setuid would, with equal ids: the kernel marks such an exec
	 * AT_SECURE, as it does setuid and setgid ones.  Capabilities are
	 * given to the service (systemd's AmbientCapabilities, capsh), not to
	 * the file.
	 */
	if (getauxval(AT_SECURE) != 0)
	{
		snprintf(err, errlen,
				 "refusing to run with privileges the executable file grants (set-uid, "
				 "set-gid or file capabilities: AT_SECURE): give the capabilities to the "
				 "service that runs pg-tracer instead");
		return -1;
	}
	return 0;
}

/*
 * has_cap
 *		True when capability `cap` is in the effective set `eff` (two
 *		32-bit words, capability version 3).
 */
static int
has_cap(const struct __user_cap_data_struct *data, int cap)
{
	return (data[cap / 32].effective >> (cap % 32)) & 1;
}

/*
 * read_caps
 *		This process's capability sets (version 3: two 32-bit words each)
 *		into data[2].  0, or -1 with errno set.
 */
static int
read_caps(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr;

	memset(&hdr, 0, sizeof(hdr));
	memset(data, 0, 2 * sizeof(*data));
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	hdr.pid = 0;
	return (int) syscall(SYS_capget, &hdr, data);
}

/*
 * privileges_check
 *		0 when command cmd ("daemon", "trace") may run: not setuid, and root or holding CAP_BPF,
 *		CAP_PERFMON and CAP_SYS_PTRACE (CAP_SYS_ADMIN standing in for the
 *		first two on kernels older than 5.8).  Else -1 with err set.
 */
int
privileges_check(const char *cmd, char *err, size_t errlen)
{
	struct __user_cap_data_struct data[2];
	int			bpf;
	int			perfmon;
	int			ptrace;

	if (privileges_not_setuid(err, errlen) < 0)
		return -1;
	if (geteuid() == 0)
		return 0;

	if (read_caps(data) < 0)
	{
		snprintf(err, errlen, "capget failed: %s", strerror(errno));
		return -1;
	}
	bpf = has_cap(data, CAP_BPF) || has_cap(data, CAP_SYS_ADMIN);
	perfmon = has_cap(data, CAP_PERFMON) || has_cap(data, CAP_SYS_ADMIN);
	ptrace = has_cap(data, CAP_SYS_PTRACE);
	if (!bpf || !perfmon || !ptrace)
	{
		snprintf(err, errlen,
				 "pg-tracer %s needs root or CAP_BPF, CAP_PERFMON and "
				 "CAP_SYS_PTRACE (missing:%s%s%s)", cmd,
				 bpf ? "" : " CAP_BPF", perfmon ? "" : " CAP_PERFMON",
				 ptrace ? "" : " CAP_SYS_PTRACE");
		return -1;
	}
	return 0;
}

/*
 * warn_no_dac
 *		Without CAP_DAC_READ_SEARCH a non-root process finds no cluster
 *		whose data directory is 0700 (its postmaster.pid cannot be read).
 */
static void
warn_no_dac(const struct __user_cap_data_struct *data)
{
	if (!has_cap(data, CAP_DAC_READ_SEARCH))
		log_warn("no CAP_DAC_READ_SEARCH: postmaster.pid and the layout file of a cluster "
				 "whose data directory is 0700 cannot be read (the systemd unit grants it)");
}

/*
 * privileges_warn_trace
 *		A trace that is not root: what it will not find without the
 *		capabilities beyond the three privileges_check requires.
 */
void
privileges_warn_trace(void)
{
	struct __user_cap_data_struct data[2];

	if (geteuid() == 0 || read_caps(data) < 0)
		return;
	warn_no_dac(data);
}

/*
 * privileges_warn_daemon
 *		A daemon that is not root: say which of the capabilities its work
 *		needs besides the three privileges_check requires it lacks, and
 *		what it will not manage without them.
 */
void
privileges_warn_daemon(void)
{
	struct __user_cap_data_struct data[2];

	if (geteuid() == 0)
		return;
	if (read_caps(data) < 0)
		return;
	warn_no_dac(data);
	if (!has_cap(data, CAP_CHOWN))
		log_warn("no CAP_CHOWN: segments and sockets cannot be given to the cluster "
				 "owners, who then cannot read them (the systemd unit grants it)");
}
