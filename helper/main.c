/*
 * helper/main.c
 *	  Entry point of pg-tracer: command dispatch, option parsing, --help of
 *	  every command, --version.  Commands live in their own files
 *	  (daemon.c, status_cmd.c); this file only turns argv into their
 *	  options.  Usage errors exit 2 with the usage on stderr.
 */
#include "daemon.h"
#include "engine_probes.h"
#include "escalation.h"
#include "exact_watch.h"
#include "inspect_cmd.h"
#include "kernel_sched.h"
#include "kernel_set.h"
#include "log.h"
#include "parse_num.h"
#include "pid_retire.h"
#include "pgt_segment.h"
#include "sampler_priority.h"
#include "status_cmd.h"
#include "syscall_exit.h"
#include "trace_cmd.h"
#include "trace_out.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PGT_VERSION
#define PGT_VERSION "unknown"
#endif

#define EXIT_USAGE 2

static const char main_usage[] =
"Usage: pg-tracer COMMAND [OPTIONS]\n"
"\n"
"Shows why PostgreSQL backends are slow, from the kernel and the engine.\n"
"\n"
"Commands:\n"
"  daemon    run the privileged helper in the foreground (root)\n"
"  status    show the clusters the helper serves and its probe sets\n"
"  inspect   show a server's processes, executable, USDT probes and symbols\n"
"  trace     trace PostgreSQL processes with probe sets (no extension needed)\n"
"\n"
"Options:\n"
"  -h, --help       show this help (COMMAND --help: help of a command)\n"
"  -V, --version    show the version\n";

static const char daemon_usage[] =
"Usage: pg-tracer daemon [--pgdata DIR | --pid PID] [--runtime-dir DIR]\n"
"                        [--log-level error|warn|info|debug] [--probes LIST]\n"
"                        [--engine-probes LIST] [--slow-ms MS]\n"
"                        [--mode tiered|sampled|full] [--exact-budget S]\n"
"                        [--anomaly on|off] [--anomaly-cooldown S]\n"
"                        [--exact-source auto|syscall|watchpoint]\n"
"                        [--sched-clock auto|ktime] [--keep-exited S]\n"
"                        [--kernel-sets always|escalated] [--query-id on|off]\n"
"                        [--syscall-exit auto|fexit|tracepoint] [--miss-events N]\n"
"                        [--forget-after S] [--max-clusters N] [--sampler-nice N]\n"
"                        [--segment-rows N]\n"
"\n"
"Run the helper in the foreground until SIGTERM or SIGINT.  Without a\n"
"target it serves every PostgreSQL cluster on the host as it appears;\n"
"it loads the BPF probes, and writes one segment and one control socket\n"
"per cluster into the runtime directory.\n"
"\n"
"Options:\n"
"  --pgdata DIR       serve only the cluster in DIR (waits for it to start;\n"
"                     follows DIR to another data directory while it is down)\n"
"  --pid PID          serve only the cluster of postmaster PID\n"
"  --runtime-dir DIR  segments, sockets and locks (default " PGT_DEFAULT_RUNTIME_DIR ")\n"
"  --log-level LEVEL  error, warn, info (default) or debug; logs go to stderr\n"
"  --engine-probes LIST  engine probe sets: default, all, none or names\n"
"                     (pg-query,pg-locks,pg-lwlock,pg-wal,pg-buffer,pg-checkpoint,\n"
"                     pg-usdt,pg-lock-hold,pg-lwlock-hold); default:\n"
"                     pg-locks,pg-wal,pg-checkpoint (the\n"
"                     others cost more than 5%: see bench/engine_overhead.sh)\n"
"  --slow-ms MS       statements slower than this are kept with their text (1000)\n"
"  --probes LIST      always-on probe sets: all (default), none, or a list\n"
"  --mode MODE        wait-event tiers: tiered (default: exact timing only in\n"
"                     escalation windows), sampled (never exact), full (always)\n"
"  --exact-budget S   exact seconds per rolling hour for escalations: 0..3600\n"
"                     (default 300; 0 disables escalation) or unlimited\n"
"  --anomaly on|off   tiered mode: anomaly rules on the sessions open windows\n"
"                     (default on)\n"
"  --anomaly-cooldown S  seconds without rule-opened windows after one (300)\n"
"  --exact-source SRC exact timing by syscall tagging (default), watchpoint\n"
"                     (hardware breakpoints on wait_event_info: every\n"
"                     transition, costs more; syscall where they do not\n"
"                     fire) or auto (watchpoint in tiered mode's windows,\n"
"                     syscall in --mode full)\n"
"  --sched-clock CLK  sched set: auto (default: the run queue's clock, and\n"
"                     run-queue latency where the kernel keeps it) or ktime\n"
"                     (the monotonic clock, no run-queue latency)\n"
"  --kernel-sets WHEN  the kernel sets (syscall, vfs, block, sched, memory,\n"
"                     network): always (default) or escalated (loaded, but\n"
"                     their hooks attached only inside escalation windows,\n"
"                     so they cost nothing outside them; needs --mode\n"
"                     tiered or full)\n"
"  --query-id on|off  tag rows and events with the backend's query id (on,\n"
"                     default), or not (off: no program reads a query id,\n"
"                     every query id is 0, the kernel sets cost less)\n"
SYSCALL_EXIT_HELP
"  --keep-exited S    rows of an exited process keep its pid S seconds\n"
"                     (0..86400, default 60), then fold into its cluster's\n"
"                     rows of exited processes (pid NULL in SQL)\n"
"  --forget-after S   host-wide: a cluster whose postmaster is gone S seconds\n"
"                     (1..86400, default 60) is dropped and its segment and\n"
"                     lock file removed\n"
"  --max-clusters N   host-wide: serve at most N clusters (1..256, default\n"
"                     64), and at most 4 of one owner that is not a system\n"
"                     account (uid 1000 and up)\n"
"  --segment-rows N   each table of a cluster's segment starts with at most N\n"
"                     rows (16..1048576; default: sized for the probe sets'\n"
"                     maps, 14.5 MB a cluster) and grows as publications\n"
"                     need: less memory in the runtime directory for hosts\n"
"                     of many quiet clusters\n"
"  --sampler-nice N   nice value the helper gives each served cluster's\n"
"                     pg_tracer sampler, -20..0 (default -15; 0 leaves it\n"
"                     alone), so that it samples when its timer fires; only\n"
"                     for clusters a system account (uid below 1000) runs\n"
"  --miss-events N    testing: act as a kernel that leaves events unreported\n"
"                     (the sched set ignores every Nth switch-in it sees, the\n"
"                     network set attaches no retransmit program, discovery\n"
"                     loses every Nth exec note), so that the repairs keeping\n"
"                     the counts exact and every cluster found are exercised;\n"
"                     0 (default) off, at most 1000\n"
"  -h, --help         show this help\n"
"\n"
"Needs root, or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE, with CAP_DAC_READ_SEARCH\n"
"and CAP_CHOWN (data directories, segment owners) and CAP_SYS_NICE for\n"
"--sampler-nice.  Never install it setuid.\n"
"SIGHUP rescans for clusters and re-reads layout files.\n";

static const char status_usage[] =
"Usage: pg-tracer status [--runtime-dir DIR] [--format text|json]\n"
"\n"
"Read every segment in the runtime directory and show, per cluster, the\n"
"helper (pid, alive, state, generation, last update), the postmaster, its\n"
"processes, each probe set with its state and reason, and the round trip\n"
"of a PING on the control socket.\n"
"\n"
"Options:\n"
"  --runtime-dir DIR  where the daemon writes (default " PGT_DEFAULT_RUNTIME_DIR ")\n"
"  --format FORMAT    text (default) or json\n"
"  -h, --help         show this help\n"
"\n"
"Exit status: 0 when at least one live helper was found, 3 when none, 4 when\n"
"none was seen live but some segment could not be read (not root nor its owner).\n";

/*
 * usage_error
 *		Print a message and a command's usage on stderr; return exit 2.
 */
static int
usage_error(const char *usage, const char *fmt, const char *arg)
{
	fprintf(stderr, "pg-tracer: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n\n%s", usage);
	return EXIT_USAGE;
}

/*
 * parse_pid
 *		Strict positive decimal pid.  Returns 0 or -1.
 */
static int
parse_pid(const char *s, pid_t *out)
{
	long		v;

	if (parse_decimal(s, 1, INT_MAX, &v) < 0)
		return -1;
	*out = (pid_t) v;
	return 0;
}

/*
 * bad_option
 *		Describe the option getopt_long rejected: c is ':' for a missing
 *		value, '?' for an unknown option.
 */
static int
bad_option(const char *usage, char **argv, const struct option *longopts, int c)
{
	char		why[256];

	parse_explain_option(argv, longopts, c, why, sizeof(why));
	return usage_error(usage, "%s", why);
}

static const char inspect_usage[] =
"Usage: pg-tracer inspect [--pid PID | --pgdata DIR | --binary PATH]\n"
"                         [--format text|json]\n"
"\n"
"Show a PostgreSQL server's processes and their roles, its executable\n"
"(resolved through /proc/PID/root: containers need no host mount), build\n"
"id, debuglink, PIE, DWARF, every USDT probe (.note.stapsdt: name,\n"
"address, semaphore, argument specs), the symbols the engine probes want,\n"
"and the mechanism each engine probe set would use (USDT, uprobe, none).\n"
"Without a target: every server on the host.  Attaches nothing.\n"
"\n"
"Options:\n"
"  --pid PID          the server of PID (a postmaster or one of its children)\n"
"  --pgdata DIR       the server running in DIR\n"
"  --binary PATH      only this executable, no processes\n"
"  --format FORMAT    text (default) or json\n"
"  -h, --help         show this help\n";

/*
 * cmd_inspect
 *		Parse `inspect` options and run it.
 */
static int
cmd_inspect(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"pgdata", required_argument, NULL, 'D'},
		{"binary", required_argument, NULL, 'b'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	inspect_opts o;
	int			c;
	int			targets = 0;

	memset(&o, 0, sizeof(o));
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'p':
				if (parse_pid(optarg, &o.pid) < 0)
					return usage_error(inspect_usage, "--pid %s is not a pid", optarg);
				targets++;
				break;
			case 'D':
				o.pgdata = optarg;
				targets++;
				break;
			case 'b':
				o.binary = optarg;
				targets++;
				break;
			case 'f':
				if (trace_parse_format(optarg, &o.json) < 0)
					return usage_error(inspect_usage, "--format %s: use text or json", optarg);
				break;
			case 'h':
				fputs(inspect_usage, stdout);
				return 0;
			default:
				return bad_option(inspect_usage, argv, longopts, c);
		}
	}
	if (optind < argc)
		return usage_error(inspect_usage, "unexpected argument %s", argv[optind]);
	if (targets > 1)
		return usage_error(inspect_usage, "--pid, --pgdata and --binary are exclusive%s", "");
	return inspect_run(&o);
}

/*
 * The daemon's options that configure one module each: the module parses
 * the value and says what is wrong with it.
 */
static const module_option daemon_module_options[] = {
	{'E', "--engine-probes", engine_configure},
	{'M', "--mode", escalation_configure_mode},
	{'B', "--exact-budget", escalation_configure_budget},
	{'A', "--anomaly", escalation_configure_anomaly},
	{'C', "--anomaly-cooldown", escalation_configure_cooldown},
	{'X', "--exact-source", exact_configure_source},
	{'K', "--keep-exited", pid_retire_configure},
	{'c', "--sched-clock", kernel_sched_configure_clock},
	{'m', "--miss-events", kset_configure_miss_events},
	{'q', "--query-id", pset_configure_query_ids},
	{'x', "--syscall-exit", syscall_exit_configure},
	{'N', "--sampler-nice", sampler_priority_configure},
};
#define N_DAEMON_MODULE_OPTIONS \
	(sizeof(daemon_module_options) / sizeof(daemon_module_options[0]))

static const struct option daemon_longopts[] = {
	{"pgdata", required_argument, NULL, 'D'},
	{"pid", required_argument, NULL, 'p'},
	{"runtime-dir", required_argument, NULL, 'r'},
	{"log-level", required_argument, NULL, 'l'},
	{"engine-probes", required_argument, NULL, 'E'},
	{"slow-ms", required_argument, NULL, 'S'},
	{"probes", required_argument, NULL, 'P'},
	{"mode", required_argument, NULL, 'M'},
	{"exact-budget", required_argument, NULL, 'B'},
	{"anomaly", required_argument, NULL, 'A'},
	{"anomaly-cooldown", required_argument, NULL, 'C'},
	{"exact-source", required_argument, NULL, 'X'},
	{"keep-exited", required_argument, NULL, 'K'},
	{"sched-clock", required_argument, NULL, 'c'},
	{"kernel-sets", required_argument, NULL, 'k'},
	{"miss-events", required_argument, NULL, 'm'},
	{"query-id", required_argument, NULL, 'q'},
	{"syscall-exit", required_argument, NULL, 'x'},
	{"forget-after", required_argument, NULL, 'F'},
	{"sampler-nice", required_argument, NULL, 'N'},
	{"max-clusters", required_argument, NULL, 'L'},
	{"segment-rows", required_argument, NULL, 'R'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0}
};

/*
 * daemon_option
 *		Apply the `daemon` option getopt_long returned as c (its value in
 *		optarg) to o, or to the module it configures.  -1: go on parsing;
 *		otherwise the exit status (0 after --help, 2 for a bad option or
 *		value).
 */
static int
daemon_option(daemon_opts *o, int c, char **argv)
{
	char		eerr[600];
	long		v;
	pid_t		slow;
	int			r;

	switch (c)
	{
		case 'D':
			if (optarg[0] == '\0')
				return usage_error(daemon_usage, "--pgdata needs a directory%s", "");
			o->pgdata = optarg;
			return -1;
		case 'p':
			if (parse_pid(optarg, &o->pid) < 0)
				return usage_error(daemon_usage, "--pid %s is not a pid", optarg);
			return -1;
		case 'r':
			if (optarg[0] != '/')
				return usage_error(daemon_usage,
								   "--runtime-dir %s must be an absolute path", optarg);
			o->runtime_dir = optarg;
			return -1;
		case 'l':
			if (log_parse_level(optarg, &o->log_level) < 0)
				return usage_error(daemon_usage,
								   "--log-level %s: use error, warn, info or debug", optarg);
			return -1;
		case 'S':
			if (parse_pid(optarg, &slow) < 0)
				return usage_error(daemon_usage, "--slow-ms %s is not a positive number",
								   optarg);
			engine_set_slow_ms((uint64_t) slow);
			return -1;
		case 'P':
			o->probes = optarg;
			return -1;
		case 'F':
			if (parse_decimal(optarg, 1, DAEMON_FORGET_AFTER_MAX_S, &v) < 0)
				return usage_error(daemon_usage,
								   "--forget-after %s is not a number of seconds from 1 to "
								   "86400", optarg);
			o->forget_after_s = (int) v;
			return -1;
		case 'L':
			if (parse_decimal(optarg, 1, DAEMON_MAX_CLUSTERS_MAX, &v) < 0)
				return usage_error(daemon_usage,
								   "--max-clusters %s is not a number from 1 to 256", optarg);
			o->max_clusters = (int) v;
			return -1;
		case 'R':
			if (parse_decimal(optarg, DAEMON_SEGMENT_ROWS_MIN, DAEMON_SEGMENT_ROWS_MAX, &v) < 0)
				return usage_error(daemon_usage,
								   "--segment-rows %s is not a number from 16 to 1048576",
								   optarg);
			o->segment_rows = (uint32_t) v;
			return -1;
		case 'k':
			if (strcmp(optarg, "escalated") != 0 && strcmp(optarg, "always") != 0)
				return usage_error(daemon_usage,
								   "--kernel-sets %s: use always or escalated", optarg);
			o->kernel_escalated = strcmp(optarg, "escalated") == 0;
			return -1;
		case 'h':
			fputs(daemon_usage, stdout);
			return 0;
	}
	r = parse_module_option(daemon_module_options, N_DAEMON_MODULE_OPTIONS,
							c, optarg, eerr, sizeof(eerr));
	if (r < 0)
		return usage_error(daemon_usage, "%s", eerr);
	if (r > 0)
		return bad_option(daemon_usage, argv, daemon_longopts, c);
	return -1;
}

/*
 * cmd_daemon
 *		Parse `daemon` options and run it.
 */
static int
cmd_daemon(int argc, char **argv)
{
	daemon_opts o;
	int			c;
	int			r;

	memset(&o, 0, sizeof(o));
	o.runtime_dir = PGT_DEFAULT_RUNTIME_DIR;
	o.log_level = LOG_LEVEL_INFO;
	o.forget_after_s = DAEMON_FORGET_AFTER_DEFAULT_S;
	o.max_clusters = DAEMON_MAX_CLUSTERS_DEFAULT;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", daemon_longopts, NULL)) != -1)
		if ((r = daemon_option(&o, c, argv)) >= 0)
			return r;
	if (optind < argc)
		return usage_error(daemon_usage, "unexpected argument %s", argv[optind]);
	if (o.pgdata != NULL && o.pid != 0)
		return usage_error(daemon_usage, "--pgdata and --pid are exclusive%s", "");
	if (o.kernel_escalated && escalation_mode() == ESC_MODE_SAMPLED)
		return usage_error(daemon_usage,
						   "--kernel-sets escalated needs escalation windows, which "
						   "--mode sampled never opens%s", "");
	return daemon_run(&o);
}

/*
 * cmd_status
 *		Parse `status` options and run it.
 */
static int
cmd_status(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"runtime-dir", required_argument, NULL, 'r'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	status_opts o;
	int			c;

	memset(&o, 0, sizeof(o));
	o.runtime_dir = PGT_DEFAULT_RUNTIME_DIR;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'r':
				o.runtime_dir = optarg;
				break;
			case 'f':
				if (trace_parse_format(optarg, &o.json) < 0)
					return usage_error(status_usage, "--format %s: use text or json", optarg);
				break;
			case 'h':
				fputs(status_usage, stdout);
				return 0;
			default:
				return bad_option(status_usage, argv, longopts, c);
		}
	}
	if (optind < argc)
		return usage_error(status_usage, "unexpected argument %s", argv[optind]);
	return status_run(&o);
}

/*
 * main
 *		pg-tracer COMMAND ...
 */
int
main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2)
		return usage_error(main_usage, "missing command%s", "");
	cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0)
	{
		fputs(main_usage, stdout);
		return 0;
	}
	if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0)
	{
		printf("pg-tracer %s\n", PGT_VERSION);
		return 0;
	}
	if (strcmp(cmd, "daemon") == 0)
		return cmd_daemon(argc - 1, argv + 1);
	if (strcmp(cmd, "status") == 0)
		return cmd_status(argc - 1, argv + 1);
	if (strcmp(cmd, "inspect") == 0)
		return cmd_inspect(argc - 1, argv + 1);
	if (strcmp(cmd, "trace") == 0)
		return trace_main(argc - 1, argv + 1);
	return usage_error(main_usage, "unknown command %s", cmd);
}
