/*
 * helper/inspect_cmd.c
 *	  `pg-tracer inspect [--pid PID | --pgdata DIR | --binary PATH]
 *	  [--format text|json]`.
 *
 * For each postmaster found (all of the host's without a target): its
 * processes with their roles (helper/procfs.c classification; psql,
 * pgbench and shells are not children of a postmaster and never appear),
 * its executable resolved through /proc/<pid>/root, and the ELF facts the
 * engine probes depend on.  Read-only: nothing is attached.  Exit 0 when
 * everything asked for was inspected; 1 when the target is not a server or
 * the file not an ELF executable (nothing on standard output then), or,
 * without a target, when no server was found or one of them could not be
 * inspected (the others are still printed).
 */
#include "inspect_cmd.h"

#include "discovery.h"
#include "elf_inspect.h"
#include "engine_catalog.h"
#include "log.h"
#include "pgt_segment.h"
#include "procfs.h"
#include "trace_out.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Print s as a JSON string (the trace stream's escaping). */
#define json_str(s) trace_json_string(stdout, (s))

/*
 * distinct_probes
 *		Number of distinct provider:name pairs among the notes.
 */
static size_t
distinct_probes(const elf_info *e)
{
	size_t		i;
	size_t		j;
	size_t		n = 0;

	for (i = 0; i < e->nprobes; i++)
	{
		for (j = 0; j < i; j++)
			if (strcmp(e->probes[i].name, e->probes[j].name) == 0 &&
				strcmp(e->probes[i].provider, e->probes[j].provider) == 0)
				break;
		if (j == i)
			n++;
	}
	return n;
}

/*
 * print_processes
 *		The postmaster and its children with their roles.
 */
static void
print_processes(const pm_info *pm, int json)
{
	pid_t	   *pids = NULL;
	size_t		n = 0;
	size_t		i;

	if (discovery_children(pm->pid, &pids, &n) < 0)
		n = 0;
	if (json)
		printf("\"processes\":[{\"pid\":%d,\"role\":\"postmaster\"}", (int) pm->pid);
	else
		printf("processes:\n  %-8d postmaster\n", (int) pm->pid);
	for (i = 0; i < n; i++)
	{
		char		buf[PROCFS_CMDLINE_MAX];
		size_t		len = 0;
		uint32_t	role = PGT_ROLE_OTHER;

		if (procfs_read_cmdline(pids[i], buf, sizeof(buf), &len) == 0)
		{
			role = procfs_classify_title(buf, len);
			if (role == PGT_ROLE_UNKNOWN)
				role = PGT_ROLE_OTHER;
		}
		if (json)
			printf(",{\"pid\":%d,\"role\":\"%s\"}", (int) pids[i], pgt_role_name(role));
		else
			printf("  %-8d %s\n", (int) pids[i], pgt_role_name(role));
	}
	if (json)
		printf("],");
	free(pids);
}

/*
 * print_elf_json
 *		print_elf()'s facts as the members of a JSON object.
 */
static void
print_elf_json(const elf_info *e, const engine_choice *choices)
{
	size_t		i;

	printf("\"binary\":");
	json_str(e->path);
	printf(",\"build_id\":");
	json_str(e->build_id);
	printf(",\"debuglink\":");
	json_str(e->debuglink);
	printf(",\"pie\":%s,\"dwarf\":%s,\"symtab\":%s,\"dynsym\":%s,"
		   "\"usdt_notes\":%zu,\"usdt_distinct\":%zu,\"usdt_error\":",
		   e->is_pie ? "true" : "false", e->has_dwarf ? "true" : "false",
		   e->has_symtab ? "true" : "false", e->has_dynsym ? "true" : "false",
		   e->nprobes, distinct_probes(e));
	json_str(e->usdt_error);
	printf(",\"usdt\":[");
	for (i = 0; i < e->nprobes; i++)
	{
		const usdt_probe *p = &e->probes[i];

		printf("%s{\"provider\":", i ? "," : "");
		json_str(p->provider);
		printf(",\"name\":");
		json_str(p->name);
		printf(",\"pc\":\"0x%llx\",\"semaphore\":\"0x%llx\",\"nargs\":%d,\"args\":",
			   (unsigned long long) p->pc, (unsigned long long) p->semaphore, p->nargs);
		json_str(p->args);
		printf("}");
	}
	printf("],\"symbols\":[");
	for (i = 0; i < engine_nwanted_symbols; i++)
	{
		elf_symbol	s;
		int			ok = elf_find_symbol(e, engine_wanted_symbols[i], &s) == 0;

		printf("%s{\"name\":", i ? "," : "");
		json_str(engine_wanted_symbols[i]);
		printf(",\"resolvable\":%s,\"table\":\"%s\",\"address\":\"0x%llx\"}",
			   ok ? "true" : "false",
			   s.table == ELF_SYM_SYMTAB ? "symtab" : s.table == ELF_SYM_DYNSYM ? "dynsym" : "none",
			   (unsigned long long) s.addr);
	}
	printf("],\"probe_sets\":[");
	for (i = 0; i < engine_nsets; i++)
	{
		char		mech[32];
		char		reason[512];
		uint32_t	st = engine_set_state(engine_sets[i].name, choices, NULL,
										  mech, sizeof(mech), reason, sizeof(reason));

		printf("%s{\"name\":\"%s\",\"state\":\"%s\",\"mechanism\":\"%s\","
			   "\"default\":%s,\"reason\":", i ? "," : "", engine_sets[i].name,
			   pgt_probe_state_name(st), mech, engine_sets[i].default_on ? "true" : "false");
		json_str(reason);
		printf("}");
	}
	printf("],\"probe_points\":[");
	for (i = 0; i < engine_npoints; i++)
	{
		const engine_point *p = &engine_points[i];

		printf("%s{\"set\":\"%s\",\"point\":\"%s\",\"mechanism\":\"%s\",\"detail\":",
			   i ? "," : "", p->set, p->usdt ? p->usdt : p->func,
			   engine_mech_name(choices[i].mech));
		json_str(choices[i].reason);
		printf("}");
	}
	printf("]");
}

/*
 * print_elf_text
 *		print_elf()'s facts as text, a section each.
 */
static void
print_elf_text(const elf_info *e, const engine_choice *choices)
{
	size_t		i;
	char		clean[PATH_MAX * 4];

	printf("binary:      %s\n", log_escape(clean, sizeof(clean), e->path));
	printf("build id:    %s\n", e->build_id[0] ? e->build_id : "(none)");
	printf("debuglink:   %s\n", e->debuglink[0] ? e->debuglink : "(none)");
	printf("PIE:         %s\n", e->is_pie ? "yes" : "no");
	printf("DWARF:       %s\n", e->has_dwarf ? "yes" : "no");
	printf("symbols:     %s\n", e->has_symtab ? ".symtab (not stripped)" :
		   e->has_dynsym ? ".dynsym only (stripped: static functions unresolvable)" : "none");
	printf("USDT:        %zu probe sites, %zu distinct probes%s%s\n", e->nprobes,
		   distinct_probes(e), e->usdt_error[0] ? "; notes rejected: " : "", e->usdt_error);
	for (i = 0; i < e->nprobes; i++)
	{
		const usdt_probe *p = &e->probes[i];

		printf("  %s:%-36s pc 0x%-8llx sem 0x%-8llx args %s\n", p->provider, p->name,
			   (unsigned long long) p->pc, (unsigned long long) p->semaphore,
			   p->args[0] ? p->args : "(none)");
	}
	printf("symbols the tool wants:\n");
	for (i = 0; i < engine_nwanted_symbols; i++)
	{
		elf_symbol	s;

		if (elf_find_symbol(e, engine_wanted_symbols[i], &s) == 0)
			printf("  %-20s 0x%llx (%s)\n", engine_wanted_symbols[i],
				   (unsigned long long) s.addr, s.table == ELF_SYM_SYMTAB ? "symtab" : "dynsym");
		else
			printf("  %-20s unresolvable\n", engine_wanted_symbols[i]);
	}
	printf("engine probe sets:\n");
	for (i = 0; i < engine_nsets; i++)
	{
		char		mech[32];
		char		reason[512];
		uint32_t	st = engine_set_state(engine_sets[i].name, choices, NULL,
										  mech, sizeof(mech), reason, sizeof(reason));

		printf("  %-14s %-11s %-12s%s%s%s\n", engine_sets[i].name, pgt_probe_state_name(st),
			   mech, engine_sets[i].default_on ? "" : "(off by default) ",
			   reason[0] ? "- " : "", reason);
	}
	printf("engine probe points:\n");
	for (i = 0; i < engine_npoints; i++)
	{
		const engine_point *p = &engine_points[i];

		printf("  %-14s %-32s %-10s %s\n", p->set, p->usdt ? p->usdt : p->func,
			   engine_mech_name(choices[i].mech), choices[i].reason);
	}
}

/*
 * print_elf
 *		ELF facts, USDT probes, wanted symbols, and the engine plan.
 */
static void
print_elf(const elf_info *e, int json)
{
	engine_choice *choices = calloc(engine_npoints, sizeof(*choices));

	if (choices == NULL)
		return;
	engine_plan(e, choices);
	if (json)
		print_elf_json(e, choices);
	else
		print_elf_text(e, choices);
	free(choices);
}

/*
 * inspect_binary
 *		Open and print one executable.  Returns 0 or 1.
 */
static int
inspect_binary(const char *path, int json)
{
	elf_info	e;
	char		err[512];

	if (elf_inspect_open(path, &e, err, sizeof(err)) < 0)
	{
		fprintf(stderr, "pg-tracer: %s\n", err);
		return 1;
	}
	if (json)
		printf("{");
	print_elf(&e, json);
	if (json)
		printf("}\n");
	elf_inspect_close(&e);
	return 0;
}

/*
 * runs_file
 *		Whether the file opened in e is the one process pid runs: the path
 *		is a name its owner may have pointed elsewhere since.  When not,
 *		e is closed and err says so.
 */
static bool
runs_file(int pid, elf_info *e, const char *path, char *err, size_t errlen)
{
	char		exe[64];
	struct stat a;
	struct stat b;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	if (stat(exe, &a) == 0 && fstat(e->fd, &b) == 0 &&
		a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return true;
	snprintf(err, errlen, "%.400s is no longer the file process %d runs", path, pid);
	elf_inspect_close(e);
	return false;
}

/*
 * inspect_pm
 *		One server: processes, then its executable.
 */
static int
inspect_pm(const pm_info *pm, int json)
{
	char		path[PATH_MAX + 64];
	char		err[512];
	char		clean[PATH_MAX * 4];
	elf_info	e;

	if (json)
	{
		printf("{\"postmaster_pid\":%d,\"postmaster_nspid\":%d,\"data_dir\":",
			   (int) pm->pid, (int) pm->nspid);
		json_str(pm->data_dir);
		printf(",");
	}
	else
		printf("cluster %s: postmaster %d (pid %d in its namespace)\n",
			   log_escape(clean, sizeof(clean), pm->data_dir), (int) pm->pid, (int) pm->nspid);
	print_processes(pm, json);
	if (elf_resolve_exe((int) pm->pid, path, sizeof(path), err, sizeof(err)) < 0 ||
		elf_inspect_open(path, &e, err, sizeof(err)) < 0 ||
		!runs_file((int) pm->pid, &e, path, err, sizeof(err)))
	{
		if (json)
		{
			printf("\"error\":");
			json_str(err);
			printf("}");
		}
		else
			printf("executable: %s\n", log_escape(clean, sizeof(clean), err));
		return 1;
	}
	print_elf(&e, json);
	if (json)
		printf("}");
	elf_inspect_close(&e);
	return 0;
}

/*
 * one_server
 *		The postmaster of --pgdata (found by the directory's device and
 *		inode), or of --pid (the postmaster itself, or a child's parent).
 *		Returns 0, or -1 with why.
 */
static int
one_server(const inspect_opts *o, pm_info *pm, char *why, size_t whylen)
{
	pm_info    *pms = NULL;
	size_t		n = 0;
	proc_stat	ps;
	char		why_self[256];
	char		err[256];

	if (o->pgdata != NULL)
	{
		if (discovery_pgdata(o->pgdata, &pms, &n, why, whylen) < 0)
			return -1;
		*pm = pms[0];			/* one postmaster per data directory */
		free(pms);
		return 0;
	}
	if (discovery_check_postmaster(o->pid, pm, why_self, sizeof(why_self)) == 0)
		return 0;
	/* a backend's pid: inspect its postmaster */
	if (procfs_read_stat(o->pid, &ps) < 0)
	{
		snprintf(why, whylen, "--pid %d: no such process", (int) o->pid);
		return -1;
	}
	if (discovery_check_postmaster(ps.ppid, pm, err, sizeof(err)) < 0)
	{
		/* both reasons, as trace gives them */
		snprintf(why, whylen, "--pid %d is neither a PostgreSQL postmaster (%.200s) nor a "
				 "child of one (its parent: %.200s)", (int) o->pid, why_self, err);
		return -1;
	}
	return 0;
}

/*
 * inspect_run
 *		See inspect_cmd.h.
 */
int
inspect_run(const inspect_opts *o)
{
	pm_info		pm;
	pm_info    *pms = NULL;
	char		err[512];
	size_t		n = 0;
	size_t		i;
	int			rc = 0;

	if (o->binary != NULL)
		return inspect_binary(o->binary, o->json);	/* nothing on stdout on failure */
	if (o->pgdata != NULL || o->pid != 0)
	{
		if (one_server(o, &pm, err, sizeof(err)) < 0)
		{
			fprintf(stderr, "pg-tracer: %s\n", err);
			return 1;
		}
		rc = inspect_pm(&pm, o->json);
		if (o->json)
			printf("\n");
		return rc;
	}
	if (discovery_scan(&pms, &n, 0, 0, 0, NULL, NULL, NULL, NULL) < 0 || n == 0)
	{
		free(pms);
		fprintf(stderr, "pg-tracer: no running PostgreSQL server found\n");
		return 1;
	}
	if (o->json)
		printf("[");
	for (i = 0; i < n; i++)
	{
		if (o->json && i)
			printf(",");
		else if (!o->json && i)
			printf("\n");
		rc |= inspect_pm(&pms[i], o->json);
	}
	if (o->json)
		printf("]\n");
	free(pms);
	return rc;
}
