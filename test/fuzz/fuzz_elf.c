/*
 * test/fuzz/fuzz_elf.c
 *	  The helper's reading of a PostgreSQL executable (helper/elf_inspect.c)
 *	  on arbitrary files.
 *
 * The helper runs as root and inspects the binary behind every process it
 * takes for a postmaster: any local user can start an executable named
 * postgres, so its headers, symbol tables, build-id and debuglink notes
 * and SDT notes are attacker-chosen bytes.  Opening one must fail with a
 * printable reason or succeed with fields that are terminated and in
 * range; symbol lookups and address translation must agree with the
 * program headers the file declares.
 *
 * Input: the whole file.  It is written to a memfd and opened through
 * /proc/self/fd, as the helper opens /proc/<pid>/root/<exe>.
 */
#include "fuzz.h"
#include "elf_inspect.h"

#include <ctype.h>
#include <sys/mman.h>
#include <unistd.h>

/* The names the helper looks up in a real postgres binary. */
static const char *const symbols[] = {
	"PostmasterMain", "MyProc", "ProcGlobal", "BackendStatusArray", "_start",
};

static int	file_fd = -1;
static char file_path[64];

/* The memfd every input is written to (created once). */
static void
open_file(void)
{
	file_fd = memfd_create("fuzz_elf", MFD_CLOEXEC);
	FUZZ_EXPECT(file_fd >= 0);
	snprintf(file_path, sizeof(file_path), "/proc/self/fd/%d", file_fd);
}

/* Replace the memfd's contents with data. */
static void
write_file(const uint8_t *data, size_t size)
{
	FUZZ_EXPECT(ftruncate(file_fd, 0) == 0);
	FUZZ_EXPECT(size == 0 || pwrite(file_fd, data, size, 0) == (ssize_t) size);
}

/* The fields elf_inspect_open() filled: terminated, in range, printable. */
static void
check_info(const elf_info *info)
{
	size_t		idlen;

	FUZZ_EXPECT(info->nloads >= 0 && info->nloads <= ELF_MAX_LOADS);
	FUZZ_EXPECT(fuzz_terminated(info->build_id, sizeof(info->build_id)));
	idlen = strlen(info->build_id);
	FUZZ_EXPECT(idlen % 2 == 0 && idlen <= 80);
	for (size_t i = 0; i < idlen; i++)
		FUZZ_EXPECT(isxdigit((unsigned char) info->build_id[i]));
	FUZZ_EXPECT(fuzz_terminated(info->debuglink, sizeof(info->debuglink)));
	FUZZ_EXPECT(fuzz_printable(info->debuglink));
	FUZZ_EXPECT(fuzz_terminated(info->usdt_error, sizeof(info->usdt_error)));
	FUZZ_EXPECT(fuzz_printable(info->usdt_error));
	FUZZ_EXPECT(info->nprobes == 0 || info->probes != NULL);
	FUZZ_EXPECT(info->nprobes == 0 || info->has_stapsdt);
	for (size_t i = 0; i < info->nprobes; i++)
	{
		const usdt_probe *p = &info->probes[i];

		FUZZ_EXPECT(fuzz_terminated(p->provider, sizeof(p->provider)));
		FUZZ_EXPECT(fuzz_terminated(p->name, sizeof(p->name)));
		FUZZ_EXPECT(fuzz_terminated(p->args, sizeof(p->args)));
		/* the lookups find what a scan finds */
		FUZZ_EXPECT(elf_count_usdt(info, p->provider, p->name) >= 1);
		FUZZ_EXPECT(elf_find_usdt(info, p->provider, p->name) != NULL);
	}
}

/* A symbol found has a table, and a file offset only inside a PT_LOAD. */
static void
check_symbols(const elf_info *info)
{
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++)
	{
		elf_symbol	sym;
		uint64_t	off;

		if (elf_find_symbol(info, symbols[i], &sym) < 0)
		{
			FUZZ_EXPECT(sym.table == ELF_SYM_NONE);
			continue;
		}
		FUZZ_EXPECT(sym.table == ELF_SYM_SYMTAB || sym.table == ELF_SYM_DYNSYM);
		if (elf_vaddr_to_offset(info, sym.addr, &off) == 0)
			FUZZ_EXPECT(off == sym.offset);
		else
			FUZZ_EXPECT(sym.offset == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	elf_info	info;
	char		err[512] = "";

	if (file_fd < 0)
		open_file();
	write_file(data, size);
	if (elf_inspect_open(file_path, &info, err, sizeof(err)) < 0)
	{
		FUZZ_EXPECT(err[0] != '\0' && fuzz_printable(err));
		FUZZ_EXPECT(info.fd < 0 && info.elf == NULL && info.probes == NULL);
		return 0;
	}
	check_info(&info);
	check_symbols(&info);
	elf_inspect_close(&info);
	return 0;
}
