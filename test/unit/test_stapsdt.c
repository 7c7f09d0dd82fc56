/*
 * test/unit/test_stapsdt.c
 *	  Our .note.stapsdt parser (helper/usdt_notes.c) on synthetic notes
 *	  (well-formed, prelinked, hostile) and every argument-spec form, and
 *	  the ELF inspection (helper/elf_inspect.c) of the real PostgreSQL
 *	  binary against readelf's independent count of its notes, and the
 *	  load bias of a running PIE (this program) by both of its routes
 *	  against where one of its functions really is.
 */
#include "elf_inspect.h"
#include "engine_catalog.h"
#include "pgt_segment.h"
#include "usdt_notes.h"
#include "unit.h"

#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG_BINARY	"/usr/lib/postgresql/15/bin/postgres"

/* A function of this program whose run-time address test_load_bias knows. */
extern void unit_bias_anchor(void);

void		__attribute__((noinline, used))
unit_bias_anchor(void)
{
	__asm__ volatile ("");
}

/* Append one note to buf at *off. */
static void
put_note(unsigned char *buf, size_t *off, uint32_t type, const char *name,
		 const void *desc, uint32_t descsz)
{
	uint32_t	namesz = (uint32_t) strlen(name) + 1;

	memcpy(buf + *off, &namesz, 4);
	memcpy(buf + *off + 4, &descsz, 4);
	memcpy(buf + *off + 8, &type, 4);
	*off += 12;
	memset(buf + *off, 0, (namesz + 3) & ~3u);
	memcpy(buf + *off, name, namesz);
	*off += (namesz + 3) & ~3u;
	memset(buf + *off, 0, (descsz + 3) & ~3u);
	memcpy(buf + *off, desc, descsz);
	*off += (descsz + 3) & ~3u;
}

/* An SDT desc: pc, base, sem, provider, name, args. */
static uint32_t
sdt_desc(unsigned char *d, uint64_t pc, uint64_t base, uint64_t sem,
		 const char *prov, const char *name, const char *args)
{
	size_t		o = 24;

	memcpy(d, &pc, 8);
	memcpy(d + 8, &base, 8);
	memcpy(d + 16, &sem, 8);
	strcpy((char *) d + o, prov);
	o += strlen(prov) + 1;
	strcpy((char *) d + o, name);
	o += strlen(name) + 1;
	strcpy((char *) d + o, args);
	o += strlen(args) + 1;
	return (uint32_t) o;
}

static void
test_synthetic(void)
{
	unsigned char buf[2048];
	unsigned char d[256];
	size_t		off = 0;
	usdt_probe *p = NULL;
	size_t		n = 0;
	char		err[256];
	uint32_t	l;

	l = sdt_desc(d, 0x1000, 0x5000, 0x9000, "postgresql", "query__start", "8@%rbx");
	put_note(buf, &off, 3, "stapsdt", d, l);
	put_note(buf, &off, 1, "GNU", "abcd", 4);	/* another note: skipped */
	l = sdt_desc(d, 0x2000, 0x5000, 0, "postgresql", "deadlock__found", "");
	put_note(buf, &off, 3, "stapsdt", d, l);
	CHECK_INT(usdt_parse_notes(buf, off, 0x5000, &p, &n, err, sizeof(err)), 0);
	CHECK_INT(n, 2);
	CHECK_STR(p[0].provider, "postgresql");
	CHECK_STR(p[0].name, "query__start");
	CHECK_INT(p[0].pc, 0x1000);
	CHECK_INT(p[0].semaphore, 0x9000);
	CHECK_INT(p[0].nargs, 1);
	CHECK_STR(p[1].name, "deadlock__found");
	CHECK_INT(p[1].semaphore, 0);
	CHECK_INT(p[1].nargs, 0);
	free(p);

	/* prelinked: .stapsdt.base moved by 0x100, pc and semaphore follow */
	CHECK_INT(usdt_parse_notes(buf, off, 0x5100, &p, &n, err, sizeof(err)), 0);
	CHECK_INT(p[0].pc, 0x1100);
	CHECK_INT(p[0].semaphore, 0x9100);
	CHECK_INT(p[1].semaphore, 0);	/* no semaphore stays none */
	free(p);

	/* every truncation of the section is rejected or parses a prefix, never overreads */
	{
		size_t		cut;

		for (cut = 1; cut < off; cut++)
		{
			unsigned char *copy = malloc(cut);
			int			r;

			memcpy(copy, buf, cut);
			r = usdt_parse_notes(copy, cut, 0, &p, &n, err, sizeof(err));
			if (r == 0)
			{
				CHECK(n <= 2, "cut %zu parsed %zu notes", cut, n);
				free(p);
			}
			free(copy);
		}
	}

	/* unterminated strings, empty names, short desc: errors with a reason */
	off = 0;
	memset(d, 'x', sizeof(d));
	memset(d, 0, 24);
	put_note(buf, &off, 3, "stapsdt", d, 40);
	CHECK_INT(usdt_parse_notes(buf, off, 0, &p, &n, err, sizeof(err)), -1);
	CHECK(strstr(err, "unterminated") != NULL, "err: %s", err);
	off = 0;
	l = sdt_desc(d, 1, 0, 0, "", "x", "");
	put_note(buf, &off, 3, "stapsdt", d, l);
	CHECK_INT(usdt_parse_notes(buf, off, 0, &p, &n, err, sizeof(err)), -1);
	off = 0;
	put_note(buf, &off, 3, "stapsdt", d, 10);
	CHECK_INT(usdt_parse_notes(buf, off, 0, &p, &n, err, sizeof(err)), -1);
	/* a descsz larger than the section */
	off = 0;
	l = sdt_desc(d, 1, 0, 0, "p", "x", "");
	put_note(buf, &off, 3, "stapsdt", d, l);
	{
		uint32_t	big = 100000;

		memcpy(buf + 4, &big, 4);
	}
	CHECK_INT(usdt_parse_notes(buf, off, 0, &p, &n, err, sizeof(err)), -1);
	CHECK_INT(usdt_parse_notes(buf, 0, 0, &p, &n, err, sizeof(err)), 0);
	CHECK_INT(n, 0);
}

static void
test_args(void)
{
	usdt_arg	a;
	usdt_arg	v[USDT_MAX_ARGS];

	CHECK_INT(usdt_parse_arg("-4@%ebx", &a), 0);
	CHECK_INT(a.kind, USDT_ARG_REG);
	CHECK_INT(a.size, 4);
	CHECK_INT(a.is_signed, 1);
	CHECK_STR(a.reg, "ebx");
	CHECK_INT(usdt_parse_arg("8@-144(%rbp)", &a), 0);
	CHECK_INT(a.kind, USDT_ARG_REG_DEREF);
	CHECK_INT(a.value, -144);
	CHECK_STR(a.reg, "rbp");
	CHECK_INT(usdt_parse_arg("4@(%r12)", &a), 0);
	CHECK_INT(a.kind, USDT_ARG_REG_DEREF);
	CHECK_INT(a.value, 0);
	CHECK_INT(usdt_parse_arg("1@$1", &a), 0);
	CHECK_INT(a.kind, USDT_ARG_CONST);
	CHECK_INT(a.value, 1);
	CHECK_INT(usdt_parse_arg("-4@40+CheckpointStats(%rip)", &a), 0);
	CHECK_INT(a.kind, USDT_ARG_SYMBOL);
	CHECK_STR(a.symbol, "CheckpointStats");
	CHECK_INT(a.value, 40);
	CHECK_INT(usdt_parse_arg("-4@NBuffers(%rip)", &a), 0);
	CHECK_INT(a.kind, USDT_ARG_SYMBOL);
	CHECK_INT(a.value, 0);
	/* malformed */
	CHECK_INT(usdt_parse_arg("3@%ebx", &a), -1);
	CHECK_INT(usdt_parse_arg("4%ebx", &a), -1);
	CHECK_INT(usdt_parse_arg("4@", &a), -1);
	CHECK_INT(usdt_parse_arg("4@%", &a), -1);
	CHECK_INT(usdt_parse_arg("4@8(%rbp", &a), -1);
	CHECK_INT(usdt_parse_arg("4@sym(%rbx)", &a), -1);
	CHECK_INT(usdt_parse_arg("4@$x", &a), -1);
	CHECK_INT(usdt_parse_args("4@(%r12) 4@4(%r12) 2@12(%r12) -4@%r13d", v, USDT_MAX_ARGS), 4);
	CHECK_INT(usdt_parse_args("", v, USDT_MAX_ARGS), 0);
	CHECK_INT(usdt_parse_args("4@%eax bogus", v, USDT_MAX_ARGS), -1);
	CHECK_INT(usdt_parse_args("1@$0 1@$0 1@$0", v, 2), -1);
}

/* readelf's count of NT_STAPSDT notes: the independent ground truth. */
static long
readelf_count(const char *path)
{
	char		cmd[512];
	char		line[64];
	FILE	   *f;
	long		n = -1;

	snprintf(cmd, sizeof(cmd), "readelf -n %s 2>/dev/null | grep -c NT_STAPSDT", path);
	f = popen(cmd, "r");
	if (f == NULL)
		return -1;
	if (fgets(line, sizeof(line), f) != NULL)
		n = strtol(line, NULL, 10);
	pclose(f);
	return n;
}

static void
test_real_binary(void)
{
	elf_info	e;
	char		err[512];
	elf_symbol	s;
	engine_choice *c;
	const usdt_probe *p;
	long		expected;
	size_t		i;
	char		mech[32];
	char		reason[512];

	if (access(PG_BINARY, R_OK) != 0)
	{
		fprintf(stderr, "test_stapsdt: %s missing, real-binary checks skipped\n", PG_BINARY);
		return;
	}
	CHECK_INT(elf_inspect_open(PG_BINARY, &e, err, sizeof(err)), 0);
	expected = readelf_count(PG_BINARY);
	CHECK(expected > 0, "readelf counted %ld notes", expected);
	CHECK_INT(e.nprobes, expected);
	CHECK_STR(e.usdt_error, "");
	CHECK(e.is_pie, "Debian's postgres is PIE");
	CHECK(!e.has_dwarf, "and has no DWARF");
	CHECK(!e.has_symtab, "and is stripped to .dynsym");
	CHECK(e.has_dynsym);
	CHECK_INT(strlen(e.build_id), 40);
	CHECK(e.debuglink[0] != '\0', "debuglink present");
	p = elf_find_usdt(&e, "postgresql", "query__start");
	CHECK(p != NULL);
	if (p)
	{
		CHECK(p->semaphore != 0, "semaphore");
		CHECK_INT(p->nargs, 1);
	}
	CHECK_INT(elf_count_usdt(&e, "postgresql", "buffer__read__done"), 2);
	for (i = 0; i < e.nprobes; i++)
		CHECK(e.probes[i].nargs >= 0, "%s args parse: %s", e.probes[i].name, e.probes[i].args);
	/* exported functions resolve, static ones do not */
	CHECK_INT(elf_find_symbol(&e, "LockAcquire", &s), 0);
	CHECK_INT(s.table, ELF_SYM_DYNSYM);
	CHECK(s.is_func && s.offset != 0);
	CHECK_INT(elf_find_symbol(&e, "XLogFlush", &s), 0);
	CHECK_INT(elf_find_symbol(&e, "MyBEEntry", &s), 0);
	CHECK(!s.is_func);
	CHECK_INT(elf_find_symbol(&e, "exec_simple_query", &s), -1);
	CHECK_INT(elf_find_symbol(&e, "ReadBuffer_common", &s), -1);
	CHECK_INT(elf_find_symbol(&e, "BufferSync", &s), -1);

	/* the plan: USDT everywhere it exists, XLogFlush by uprobe */
	c = calloc(engine_npoints, sizeof(*c));
	engine_plan(&e, c);
	for (i = 0; i < engine_npoints; i++)
	{
		if (engine_points[i].fallback_only)
			CHECK_INT(c[i].mech, ENGINE_MECH_NONE);
		else if (engine_points[i].usdt == NULL)
			CHECK(c[i].mech == ENGINE_MECH_UPROBE || c[i].mech == ENGINE_MECH_URETPROBE,
				  "%s by uprobe", engine_points[i].func);
		else if (strcmp(engine_points[i].usdt, "checkpoint__done") == 0)
			CHECK_INT(c[i].mech, ENGINE_MECH_USDT_SITE);
		else
			CHECK_INT(c[i].mech, ENGINE_MECH_USDT);
	}
	/* USDT, and a uprobe where errors end statements (pg-locks: waits) */
	CHECK_INT(engine_set_state("pg-query", c, NULL, mech, sizeof(mech), reason, sizeof(reason)),
			  1);
	CHECK_STR(mech, "usdt+uprobe");
	CHECK_INT(engine_set_state("pg-locks", c, NULL, mech, sizeof(mech), reason, sizeof(reason)),
			  1);
	CHECK_STR(mech, "usdt+uprobe");
	CHECK_INT(engine_set_state("pg-wal", c, NULL, mech, sizeof(mech), reason, sizeof(reason)), 1);
	CHECK_STR(mech, "usdt+uprobe");
	/* hold times: exported lock manager functions; LWLocks by USDT */
	CHECK_INT(engine_set_state("pg-lock-hold", c, NULL, mech, sizeof(mech), reason,
							   sizeof(reason)), 1);
	CHECK_STR(mech, "uprobe");
	CHECK_INT(engine_set_state("pg-lwlock-hold", c, NULL, mech, sizeof(mech), reason,
							   sizeof(reason)), 1);
	CHECK_STR(mech, "usdt");
	CHECK_INT(elf_find_symbol(&e, "ProcSleep", &s), 0);
	CHECK_INT(elf_find_symbol(&e, "CurrentResourceOwner", &s), 0);
	free(c);
	elf_inspect_close(&e);

	/* not an ELF file */
	CHECK_INT(elf_inspect_open("/etc/hostname", &e, err, sizeof(err)), -1);
	CHECK(strstr(err, "not an ELF") != NULL, "err: %s", err);
	CHECK_INT(elf_inspect_open("/nonexistent/postgres", &e, err, sizeof(err)), -1);
}

/*
 * A binary without USDT and without the functions: every set says why
 * (the plan of a stripped file without notes).
 */
/*
 * A copy of the real binary at path whose section `which` (0: .dynsym, 1:
 * its string table) claims `size` bytes past the old end of the file, which
 * becomes a hole that long: what a cluster owner could run as postgres.
 */
static int
sparse_copy(const char *path, int which, uint64_t size)
{
	FILE	   *f = fopen(PG_BINARY, "rb");
	unsigned char *buf = malloc(64 << 20);
	size_t		len = f && buf ? fread(buf, 1, 64 << 20, f) : 0;
	Elf64_Ehdr *eh = (Elf64_Ehdr *) buf;
	Elf64_Shdr *sh;
	uint64_t	end = (len + 4095) & ~(uint64_t) 4095;
	int			fd;
	int			ok = 0;

	if (f)
		fclose(f);
	if (len < sizeof(*eh) || eh->e_shoff + (uint64_t) eh->e_shnum * sizeof(*sh) > len)
		goto done;
	sh = (Elf64_Shdr *) (buf + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++)
	{
		Elf64_Shdr *t;

		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		t = which == 0 ? &sh[i] : &sh[sh[i].sh_link];
		t->sh_offset = end;
		t->sh_size = size;
		ok = 1;
	}
	fd = ok ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600) : -1;
	ok = fd >= 0 && write(fd, buf, len) == (ssize_t) len &&
		ftruncate(fd, (off_t) (end + size)) == 0;
	if (fd >= 0)
		close(fd);
done:
	free(buf);
	return ok;
}

/*
 * A symbol or string table whose header claims half a gigabyte of a hole:
 * the lookup refuses the table instead of reading it into memory (the
 * child's peak RSS stays far below it) and finds nothing there.
 */
static void
test_oversized_tables(void)
{
	const uint64_t claim = UINT64_C(512) << 20;

	if (access(PG_BINARY, R_OK) != 0)
		return;
	for (int which = 0; which < 2; which++)
	{
		char		path[] = "/tmp/pgt_unit_elfXXXXXX";
		int			tfd = mkstemp(path);
		struct rusage ru;
		int			status = -1;
		pid_t		child;

		close(tfd);
		CHECK(sparse_copy(path, which, claim), "crafted copy written (%d)", which);
		child = fork();
		if (child == 0)
		{
			elf_info	e;
			elf_symbol	s;
			char		err[512];
			int			rc = 3;

			if (elf_inspect_open(path, &e, err, sizeof(err)) == 0)
			{
				rc = elf_find_symbol(&e, "ProcSleep", &s) == 0 ? 1 : 0;
				elf_inspect_close(&e);
			}
			_exit(rc);
		}
		CHECK(child > 0 && wait4(child, &status, 0, &ru) == child, "child ran");
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "%s of %llu MB: opened, the table refused (status %d)",
			  which == 0 ? ".dynsym" : ".dynstr", (unsigned long long) (claim >> 20), status);
		CHECK(ru.ru_maxrss < 128 * 1024, "and not read: peak RSS %ld kB", ru.ru_maxrss);
		unlink(path);
	}
}

static void
test_no_usdt_binary(void)
{
	elf_info	e;
	char		err[512];
	engine_choice *c;
	char		mech[32];
	char		reason[512];

	if (elf_inspect_open("/bin/true", &e, err, sizeof(err)) < 0)
		return;
	CHECK_INT(e.nprobes, 0);
	CHECK(!e.has_stapsdt);
	c = calloc(engine_npoints, sizeof(*c));
	engine_plan(&e, c);
	CHECK_INT(engine_set_state("pg-query", c, NULL, mech, sizeof(mech), reason, sizeof(reason)),
			  2);
	CHECK_STR(mech, "none");
	CHECK(strstr(reason, "no USDT") != NULL, "reason: %s", reason);
	CHECK(strstr(reason, "exec_simple_query") != NULL, "reason: %s", reason);
	free(c);
	elf_inspect_close(&e);
}

/* statement text from a BPF record */
static void
test_clean_text(void)
{
	char		out[16];
	char		rec[8] = {'a', '\n', 'b', '\t', 'c', (char) 0xc3, (char) 0xa9, 'd'};
	char		cut[6] = {'S', 'E', 'L', ' ', (char) 0xe2, (char) 0x82};	/* a euro sign, cut */

	pgt_copy_utf8(out, sizeof(out), "SELECT 1\n;", 64);
	CHECK_STR(out, "SELECT 1 ;");
	pgt_copy_utf8(out, sizeof(out), rec, sizeof(rec));	/* unterminated */
	CHECK_STR(out, "a b c\xc3\xa9" "d");	/* well-formed UTF-8 passes */
	/* a lone continuation byte, an overlong form, a surrogate, a C1 control */
	pgt_copy_utf8(out, sizeof(out), "a\x80" "b\xc0\xaf" "c\xed\xa0\x80" "d\xc2\x9b" "e", 64);
	CHECK_STR(out, "a?b??c???d?e");
	pgt_copy_utf8(out, 4, "ab\xc3\xa9", 5);	/* no room for the whole character */
	CHECK_STR(out, "ab");
	pgt_copy_utf8(out, sizeof(out), cut, sizeof(cut));	/* cut at the bound */
	CHECK_STR(out, "SEL ");
	pgt_copy_utf8(out, 4, "abcdef", 7);
	CHECK_STR(out, "abc");
	pgt_copy_utf8(out, sizeof(out), "", 1);
	CHECK_STR(out, "");
}

/* a note's strings lose their control characters (inspect prints them) */
static void
test_control_characters(void)
{
	unsigned char buf[512];
	unsigned char d[256];
	size_t		off = 0;
	usdt_probe *p = NULL;
	size_t		n = 0;
	char		err[256];
	uint32_t	l;

	l = sdt_desc(d, 0x1000, 0x5000, 0, "evil\033[2J", "na\rme\177", "8@%rbx\n");
	put_note(buf, &off, 3, "stapsdt", d, l);
	CHECK_INT(usdt_parse_notes(buf, off, 0x5000, &p, &n, err, sizeof(err)), 0);
	CHECK_INT(n, 1);
	CHECK_STR(p[0].provider, "evil?[2J");
	CHECK_STR(p[0].name, "na?me?");
	CHECK_STR(p[0].args, "8@%rbx?");
	free(p);
}

/*
 * test_load_bias
 *		elf_load_bias (by /proc/<pid>/maps) and elf_load_bias_auxv (by the
 *		auxiliary vector, its fallback) on this process, a PIE: both must
 *		give where unit_bias_anchor runs less where it was linked.
 */
static void
test_load_bias(void)
{
	elf_info	e;
	elf_symbol	s;
	char		err[512];
	uint64_t	truth;
	uint64_t	by_maps = 1;
	uint64_t	by_auxv = 1;

	CHECK_INT(elf_inspect_open("/proc/self/exe", &e, err, sizeof(err)), 0);
	CHECK(e.is_pie, "the unit programs are built as PIE");
	CHECK_INT(elf_find_symbol(&e, "unit_bias_anchor", &s), 0);
	CHECK(s.is_func && s.addr != 0);
	truth = (uint64_t) (uintptr_t) &unit_bias_anchor - s.addr;
	CHECK(truth != 0 && (truth & 0xfff) == 0, "a PIE runs page-aligned, away from 0: %llx",
		  (unsigned long long) truth);
	CHECK_INT(elf_load_bias(getpid(), &e, &by_maps), 0);
	CHECK(by_maps == truth, "by maps %llx, truth %llx", (unsigned long long) by_maps,
		  (unsigned long long) truth);
	CHECK_INT(elf_load_bias_auxv(getpid(), &e, &by_auxv), 0);
	CHECK(by_auxv == truth, "by auxv %llx, truth %llx", (unsigned long long) by_auxv,
		  (unsigned long long) truth);
	/* a process that is gone has neither */
	CHECK_INT(elf_load_bias(999999999, &e, &by_maps), -1);
	CHECK_INT(elf_load_bias_auxv(999999999, &e, &by_auxv), -1);
	elf_inspect_close(&e);
}

int
main(void)
{
	test_synthetic();
	test_control_characters();
	test_args();
	test_real_binary();
	test_oversized_tables();
	test_load_bias();
	test_no_usdt_binary();
	test_clean_text();
	return UNIT_DONE("test_stapsdt");
}
