/*
 * helper/elf_inspect.h
 *	  What the helper needs to know about a PostgreSQL executable: build id,
 *	  debuglink, PIE or not, DWARF present or not, its USDT probes
 *	  (usdt_notes.h), and where a function or global symbol is (address,
 *	  file offset for uprobes), from .symtab when present, else .dynsym.
 */
#ifndef PGT_HELPER_ELF_INSPECT_H
#define PGT_HELPER_ELF_INSPECT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "usdt_notes.h"

#define ELF_MAX_LOADS	16
/* the largest .note.stapsdt read (a PostgreSQL build's is a few kB) */
#define ELF_MAX_NOTES_BYTES	(1024 * 1024)
/* the largest symbol or string table read (a PostgreSQL build's: a few MB) */
#define ELF_MAX_TABLE_BYTES	(64 * 1024 * 1024)
/* the largest build-id note or debug link read (tens of bytes) */
#define ELF_MAX_SMALL_BYTES	4096

/* Which table a symbol came from. */
#define ELF_SYM_NONE	0
#define ELF_SYM_DYNSYM	1
#define ELF_SYM_SYMTAB	2

typedef struct elf_symbol
{
	int			table;			/* ELF_SYM_* (NONE: not found) */
	int			is_func;
	uint64_t	addr;			/* link-time address */
	uint64_t	size;
	uint64_t	offset;			/* file offset (uprobe), 0 when unmapped */
} elf_symbol;

typedef struct elf_load
{
	uint64_t	vaddr;
	uint64_t	memsz;
	uint64_t	offset;
	uint64_t	filesz;
} elf_load;

typedef struct elf_info
{
	char		path[PATH_MAX];
	int			fd;
	void	   *elf;			/* Elf * (libelf) */
	int			is_pie;			/* ET_DYN with an interpreter */
	int			is_shared;		/* ET_DYN */
	uint64_t	entry;			/* e_entry: link-time entry point */
	int			has_dwarf;		/* .debug_info present */
	int			has_symtab;		/* .symtab present (not stripped) */
	int			has_dynsym;
	char		build_id[41 * 2];	/* hex, "" when none */
	char		debuglink[256]; /* .gnu_debuglink file name, "" when none */
	uint32_t	debuglink_crc;
	int			has_stapsdt;	/* .note.stapsdt present */
	usdt_probe *probes;			/* from .note.stapsdt */
	size_t		nprobes;
	char		usdt_error[256];	/* why the notes did not parse, "" */
	elf_load	loads[ELF_MAX_LOADS];	/* PT_LOAD segments */
	int			nloads;
} elf_info;

/* Open and inspect path.  Returns 0, or -1 with err set. */
extern int	elf_inspect_open(const char *path, elf_info *info, char *err, size_t errlen);
extern void elf_inspect_close(elf_info *info);

/*
 * Is section ndx of the ELF handle e (an Elf *) at most max bytes?  libelf
 * (ELF_C_READ) reads a section whole into memory when it is first used, by
 * the size its header gives: the executable is its owner's, not root's, and
 * a sparse file's header could make the helper allocate gigabytes.  Checked
 * before elf_getdata() on a section and before elf_strptr() on its string
 * table.
 */
extern int	elf_section_bounded(void *e, size_t ndx, uint64_t max);

/* Find a symbol by name (.symtab first, then .dynsym).  Returns 0 or -1. */
extern int	elf_find_symbol(const elf_info *info, const char *name, elf_symbol *out);

/* File offset of a link-time address inside a PT_LOAD.  Returns 0 or -1. */
extern int	elf_vaddr_to_offset(const elf_info *info, uint64_t vaddr, uint64_t *off);

/* The first probe provider:name, or NULL. */
extern const usdt_probe *elf_find_usdt(const elf_info *info, const char *provider,
									   const char *name);

/* Number of sites of provider:name (a probe may be in several places). */
extern int	elf_count_usdt(const elf_info *info, const char *provider, const char *name);

/*
 * The executable of process pid as a path the helper can open: the link
 * target of /proc/<pid>/exe under /proc/<pid>/root (so a containerized
 * server's binary is read from its own filesystem, no host mount needed),
 * checked to be the same inode as /proc/<pid>/exe; /proc/<pid>/exe itself
 * when that check fails (binary replaced or deleted).  Returns 0 or -1.
 */
extern int	elf_resolve_exe(int pid, char *out, size_t outlen, char *err, size_t errlen);

/*
 * Load bias of the executable in process pid, which runs it as its main
 * program: where its first PT_LOAD is mapped minus its link-time address
 * (0 for a non-PIE).  Returns 0 or -1.
 */
extern int	elf_load_bias(int pid, const elf_info *info, uint64_t *bias);

/*
 * The same from pid's auxiliary vector alone, what elf_load_bias falls back
 * to where /proc/<pid>/maps does not name the file by the device stat()
 * gives (overlayfs on older kernels, btrfs subvolumes).  Only for the
 * program pid runs.  Returns 0 or -1.
 */
extern int	elf_load_bias_auxv(int pid, const elf_info *info, uint64_t *bias);

#endif							/* PGT_HELPER_ELF_INSPECT_H */
