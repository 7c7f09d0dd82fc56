/*
 * helper/elf_inspect.c
 *	  Inspection of an executable with libelf: headers, program headers,
 *	  build id note, .gnu_debuglink, DWARF and symbol table presence, SDT
 *	  notes (parsed by usdt_notes.c), symbol lookup.
 *
 * The file may come from a container (/proc/<pid>/root/...): nothing in it
 * is trusted, every size is checked by libelf or here.  No locking: an
 * elf_info belongs to one caller.
 */
#include "elf_inspect.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/*
 * read_build_id
 *		Build id from a .note.gnu.build-id section's data.
 */
static void
read_build_id(Elf_Data *d, elf_info *info)
{
	const unsigned char *b = d->d_buf;
	size_t		len = d->d_size;
	uint32_t	namesz;
	uint32_t	descsz;
	uint32_t	type;
	size_t		i;
	size_t		off;

	if (b == NULL || len < 12)
		return;
	memcpy(&namesz, b, 4);
	memcpy(&descsz, b + 4, 4);
	memcpy(&type, b + 8, 4);
	off = 12 + (((size_t) namesz + 3) & ~(size_t) 3);
	if (type != NT_GNU_BUILD_ID || namesz > len || off > len || descsz > len - off ||
		descsz > 40)
		return;
	for (i = 0; i < descsz; i++)
		snprintf(info->build_id + 2 * i, 3, "%02x", b[off + i]);
}

/*
 * read_debuglink
 *		File name and CRC from .gnu_debuglink (name\0, pad to 4, u32 crc).
 */
static void
read_debuglink(Elf_Data *d, elf_info *info)
{
	const char *b = d->d_buf;
	const char *nul;
	size_t		l;
	size_t		crc_off;
	size_t		i;

	if (b == NULL || d->d_size == 0)
		return;
	nul = memchr(b, '\0', d->d_size);
	if (nul == NULL)
		return;
	l = (size_t) (nul - b);
	if (l >= sizeof(info->debuglink))
		l = sizeof(info->debuglink) - 1;
	memcpy(info->debuglink, b, l);
	info->debuglink[l] = '\0';
	for (i = 0; i < l; i++)
		if ((unsigned char) info->debuglink[i] < 0x20 || (unsigned char) info->debuglink[i] > 0x7e)
			info->debuglink[i] = '?';
	crc_off = (((size_t) (nul - b) + 1) + 3) & ~(size_t) 3;
	if (crc_off + 4 <= d->d_size)
		memcpy(&info->debuglink_crc, b + crc_off, 4);
}

/*
 * read_program_headers
 *		The PT_LOAD segments (the first ELF_MAX_LOADS), and whether the file
 *		is a PIE: a shared object with an interpreter.
 */
static void
read_program_headers(Elf *e, elf_info *info)
{
	size_t		phnum;
	size_t		i;
	int			has_interp = 0;

	if (elf_getphdrnum(e, &phnum) != 0)
		phnum = 0;
	for (i = 0; i < phnum; i++)
	{
		GElf_Phdr	ph;

		if (gelf_getphdr(e, (int) i, &ph) == NULL)
			continue;
		if (ph.p_type == PT_INTERP)
			has_interp = 1;
		if (ph.p_type == PT_LOAD && info->nloads < ELF_MAX_LOADS)
		{
			info->loads[info->nloads].vaddr = ph.p_vaddr;
			info->loads[info->nloads].memsz = ph.p_memsz;
			info->loads[info->nloads].offset = ph.p_offset;
			info->loads[info->nloads].filesz = ph.p_filesz;
			info->nloads++;
		}
	}
	info->is_pie = info->is_shared && has_interp;
}

/*
 * elf_section_bounded
 *		See elf_inspect.h.
 */
int
elf_section_bounded(void *e, size_t ndx, uint64_t max)
{
	Elf_Scn    *scn = elf_getscn((Elf *) e, ndx);
	GElf_Shdr	sh;

	return scn != NULL && gelf_getshdr(scn, &sh) != NULL && sh.sh_size <= max;
}

/*
 * read_section
 *		What one section tells: symbol tables, DWARF, the build id, the
 *		debug link, and the USDT notes with their base address (parsed once
 *		every section is seen).
 */
static void
read_section(Elf *e, Elf_Scn *scn, size_t shstrndx, elf_info *info,
			 uint64_t *stapsdt_base, Elf_Data **notes)
{
	GElf_Shdr	sh;
	const char *name;
	Elf_Data   *d;

	if (gelf_getshdr(scn, &sh) == NULL ||
		!elf_section_bounded(e, shstrndx, ELF_MAX_TABLE_BYTES) ||
		(name = elf_strptr(e, shstrndx, sh.sh_name)) == NULL)
		return;
	if (sh.sh_type == SHT_SYMTAB)
		info->has_symtab = 1;
	else if (sh.sh_type == SHT_DYNSYM)
		info->has_dynsym = 1;
	if (strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0)
		info->has_dwarf = 1;
	else if (strcmp(name, ".note.gnu.build-id") == 0 && sh.sh_type == SHT_NOTE)
	{
		if (sh.sh_size <= ELF_MAX_SMALL_BYTES && (d = elf_getdata(scn, NULL)) != NULL)
			read_build_id(d, info);
	}
	else if (strcmp(name, ".gnu_debuglink") == 0)
	{
		if (sh.sh_size <= ELF_MAX_SMALL_BYTES && (d = elf_getdata(scn, NULL)) != NULL)
			read_debuglink(d, info);
	}
	else if (strcmp(name, ".stapsdt.base") == 0)
		*stapsdt_base = sh.sh_addr;
	else if (strcmp(name, ".note.stapsdt") == 0 && sh.sh_type == SHT_NOTE)
	{
		info->has_stapsdt = 1;
		/* PostgreSQL's are a few kB: a huge one would be read into memory */
		if (sh.sh_size > ELF_MAX_NOTES_BYTES)
			snprintf(info->usdt_error, sizeof(info->usdt_error),
					 ".note.stapsdt of %llu bytes: more than %d, not read",
					 (unsigned long long) sh.sh_size, ELF_MAX_NOTES_BYTES);
		else
			*notes = elf_rawdata(scn, NULL);
	}
}

/*
 * open_regular
 *		Open path for reading if it is a regular file, judged on an O_PATH
 *		handle before any real open, and reopened through that handle.
 *		Returns the descriptor (its stat in *st), or -1 with err set.
 */
static int
open_regular(const char *path, struct stat *st, char *err, size_t errlen)
{
	char		self[64];
	int			pfd = open(path, O_PATH | O_CLOEXEC);
	int			fd;

	if (pfd < 0)
	{
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(pfd, st) < 0 || !S_ISREG(st->st_mode))
	{
		snprintf(err, errlen, "%s is not a regular file", path);
		close(pfd);
		return -1;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
	close(pfd);
	return fd;
}

/*
 * elf_inspect_open
 *		See elf_inspect.h.
 */
int
elf_inspect_open(const char *path, elf_info *info, char *err, size_t errlen)
{
	Elf		   *e;
	GElf_Ehdr	eh;
	Elf_Scn    *scn = NULL;
	size_t		shstrndx;
	uint64_t	stapsdt_base = 0;
	Elf_Data   *notes = NULL;
	struct stat st;

	memset(info, 0, sizeof(*info));
	info->fd = -1;
	snprintf(info->path, sizeof(info->path), "%s", path);
	if (elf_version(EV_CURRENT) == EV_NONE)
	{
		snprintf(err, errlen, "libelf initialization failed");
		return -1;
	}
	/*
	 * The name is its owner's to point anywhere, maybe not root's: it is
	 * first opened O_PATH (no device is opened, no FIFO waited on, no
	 * driver run by it) and only a regular file is then opened for reading,
	 * through that handle rather than through the name again.
	 */
	info->fd = open_regular(path, &st, err, errlen);
	if (info->fd < 0)
		return -1;
	e = elf_begin(info->fd, ELF_C_READ, NULL);
	if (e == NULL || elf_kind(e) != ELF_K_ELF || gelf_getehdr(e, &eh) == NULL)
	{
		/* libelf has no error for a file that is simply of another kind */
		int			eno = elf_errno();

		snprintf(err, errlen, "%s is not an ELF file: %s", path,
				 eno != 0 ? elf_errmsg(eno) :
				 e != NULL && elf_kind(e) == ELF_K_AR ? "an ar archive" :
				 "no ELF header");
		if (e)
			elf_end(e);
		goto fail;
	}
	info->elf = e;
	if (gelf_getclass(e) != ELFCLASS64)
	{
		snprintf(err, errlen, "%s is not a 64-bit ELF file", path);
		goto fail;
	}
	info->is_shared = eh.e_type == ET_DYN;
	info->entry = eh.e_entry;
	read_program_headers(e, info);
	if (elf_getshdrstrndx(e, &shstrndx) != 0)
	{
		snprintf(err, errlen, "%s: no section name table: %s", path, elf_errmsg(-1));
		goto fail;
	}
	while ((scn = elf_nextscn(e, scn)) != NULL)
		read_section(e, scn, shstrndx, info, &stapsdt_base, &notes);
	if (notes != NULL && notes->d_buf != NULL &&
		usdt_parse_notes(notes->d_buf, notes->d_size, stapsdt_base,
						 &info->probes, &info->nprobes,
						 info->usdt_error, sizeof(info->usdt_error)) < 0)
	{
		info->probes = NULL;
		info->nprobes = 0;
	}
	return 0;

fail:
	elf_inspect_close(info);
	return -1;
}

/*
 * elf_inspect_close
 *		Free everything elf_inspect_open() took.
 */
void
elf_inspect_close(elf_info *info)
{
	if (info->elf)
		elf_end((Elf *) info->elf);
	info->elf = NULL;
	if (info->fd >= 0)
		close(info->fd);
	info->fd = -1;
	free(info->probes);
	info->probes = NULL;
	info->nprobes = 0;
}

/*
 * elf_vaddr_to_offset
 *		See elf_inspect.h.
 */
int
elf_vaddr_to_offset(const elf_info *info, uint64_t vaddr, uint64_t *off)
{
	int			i;

	for (i = 0; i < info->nloads; i++)
	{
		const elf_load *l = &info->loads[i];

		if (vaddr >= l->vaddr && vaddr - l->vaddr < l->filesz)
		{
			*off = vaddr - l->vaddr + l->offset;
			return 0;
		}
	}
	return -1;
}

/*
 * find_in_table
 *		Look name up in the symbol table of type sh_type.  Returns 0 or -1.
 */
static int
find_in_table(const elf_info *info, Elf64_Word sh_type, const char *name, elf_symbol *out)
{
	Elf		   *e = info->elf;
	Elf_Scn    *scn = NULL;

	while ((scn = elf_nextscn(e, scn)) != NULL)
	{
		GElf_Shdr	sh;
		Elf_Data   *d;
		size_t		n;
		size_t		i;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != sh_type || sh.sh_entsize == 0 ||
			sh.sh_size > ELF_MAX_TABLE_BYTES ||
			!elf_section_bounded(e, sh.sh_link, ELF_MAX_TABLE_BYTES))
			continue;
		d = elf_getdata(scn, NULL);
		if (d == NULL)
			continue;
		/* the data's size, not the header's entsize: a crafted 1 would loop per byte */
		n = d->d_size / sizeof(Elf64_Sym);
		for (i = 0; i < n; i++)
		{
			GElf_Sym	s;
			const char *sn;

			if (gelf_getsym(d, (int) i, &s) == NULL || s.st_shndx == SHN_UNDEF)
				continue;
			sn = elf_strptr(e, sh.sh_link, s.st_name);
			if (sn == NULL || strcmp(sn, name) != 0)
				continue;
			out->table = sh_type == SHT_SYMTAB ? ELF_SYM_SYMTAB : ELF_SYM_DYNSYM;
			out->is_func = GELF_ST_TYPE(s.st_info) == STT_FUNC;
			out->addr = s.st_value;
			out->size = s.st_size;
			if (elf_vaddr_to_offset(info, s.st_value, &out->offset) < 0)
				out->offset = 0;
			return 0;
		}
	}
	return -1;
}

/*
 * elf_find_symbol
 *		See elf_inspect.h.
 */
int
elf_find_symbol(const elf_info *info, const char *name, elf_symbol *out)
{
	memset(out, 0, sizeof(*out));
	if (info->elf == NULL)
		return -1;
	if (find_in_table(info, SHT_SYMTAB, name, out) == 0)
		return 0;
	if (find_in_table(info, SHT_DYNSYM, name, out) == 0)
		return 0;
	memset(out, 0, sizeof(*out));
	return -1;
}

/*
 * elf_find_usdt
 *		See elf_inspect.h.
 */
const usdt_probe *
elf_find_usdt(const elf_info *info, const char *provider, const char *name)
{
	size_t		i;

	for (i = 0; i < info->nprobes; i++)
		if (strcmp(info->probes[i].provider, provider) == 0 &&
			strcmp(info->probes[i].name, name) == 0)
			return &info->probes[i];
	return NULL;
}

/*
 * elf_count_usdt
 *		See elf_inspect.h.
 */
int
elf_count_usdt(const elf_info *info, const char *provider, const char *name)
{
	size_t		i;
	int			n = 0;

	for (i = 0; i < info->nprobes; i++)
		if (strcmp(info->probes[i].provider, provider) == 0 &&
			strcmp(info->probes[i].name, name) == 0)
			n++;
	return n;
}

/*
 * elf_resolve_exe
 *		See elf_inspect.h.
 */
int
elf_resolve_exe(int pid, char *out, size_t outlen, char *err, size_t errlen)
{
	char		link[PATH_MAX];
	char		exe[64];
	char		cand[PATH_MAX + 64];
	struct stat a;
	struct stat b;
	ssize_t		n;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	if (stat(exe, &a) < 0)
	{
		snprintf(err, errlen, "cannot stat %s: %s", exe, strerror(errno));
		return -1;
	}
	n = readlink(exe, link, sizeof(link) - 1);
	if (n > 0 && link[0] == '/')
	{
		link[n] = '\0';
		snprintf(cand, sizeof(cand), "/proc/%d/root%s", pid, link);
		if (stat(cand, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
			strlen(cand) < outlen)
		{
			snprintf(out, outlen, "%s", cand);
			return 0;
		}
	}
	snprintf(out, outlen, "%s", exe);
	return 0;
}

/*
 * elf_load_bias_auxv
 *		See elf_inspect.h: the entry point pid runs at (AT_ENTRY) less the
 *		one its program was linked at.
 */
int
elf_load_bias_auxv(int pid, const elf_info *info, uint64_t *bias)
{
	char		path[64];
	uint64_t	av[2];
	int			fd;
	int			found = -1;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (read(fd, av, sizeof(av)) == (ssize_t) sizeof(av) && av[0] != AT_NULL)
	{
		if (av[0] == AT_ENTRY && av[1] >= info->entry)
		{
			*bias = av[1] - info->entry;
			found = 0;
			break;
		}
	}
	close(fd);
	return found;
}

/*
 * elf_load_bias
 *		See elf_inspect.h.  The mapping of the executable's file offset 0
 *		is found in /proc/<pid>/maps by the file's device and inode; where
 *		the device there is not the one stat() gives (overlayfs on older
 *		kernels, btrfs subvolumes), from the process's auxiliary vector.
 */
int
elf_load_bias(int pid, const elf_info *info, uint64_t *bias)
{
	char		path[64];
	char		line[PATH_MAX + 128];
	struct stat st;
	FILE	   *f;
	int			found = -1;

	*bias = 0;
	if (!info->is_shared)
		return 0;
	if (fstat(info->fd, &st) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
	{
		unsigned long long start;
		unsigned long long end;
		unsigned long long off;
		unsigned int maj;
		unsigned int min;
		unsigned long long ino;
		char		perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms, &off,
				   &maj, &min, &ino) != 7)
			continue;
		if (ino != (unsigned long long) st.st_ino || off != 0 ||
			makedev(maj, min) != st.st_dev)
			continue;
		*bias = start - (info->nloads > 0 ? (info->loads[0].vaddr & ~(uint64_t) 0xfff) : 0);
		found = 0;
		break;
	}
	fclose(f);
	if (found < 0)
		found = elf_load_bias_auxv(pid, info, bias);
	return found;
}
