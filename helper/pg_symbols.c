/*
 * helper/pg_symbols.c
 *	  Address of an exported symbol (e.g. MyBEEntry) in a running
 *	  PostgreSQL process: the value from the executable's .dynsym (the
 *	  Debian binary is stripped to it), relocated by the load base found
 *	  in /proc/<pid>/maps.  Children fork from the postmaster without exec,
 *	  so the address is the same in every process of the cluster.
 */
#include "pg_symbols.h"
#include "elf_inspect.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * first_load_vaddr
 *		The vaddr of e's first PT_LOAD segment at file offset 0, 0 if none.
 */
static uint64_t
first_load_vaddr(Elf *e, size_t nph)
{
	size_t		i;

	for (i = 0; i < nph; i++)
	{
		GElf_Phdr	ph;

		if (gelf_getphdr(e, (int) i, &ph) != NULL && ph.p_type == PT_LOAD && ph.p_offset == 0)
			return ph.p_vaddr;
	}
	return 0;
}

/*
 * dynsym_find
 *		Look name up among the defined symbols of the dynamic symbol table
 *		scn (header sh); 1 with *value set when found, else 0.
 */
static int
dynsym_find(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *name, uint64_t *value)
{
	Elf_Data   *data = elf_getdata(scn, NULL);
	size_t		n;
	size_t		k;

	if (data == NULL)
		return 0;
	/* the data's size, not the header's entsize: a crafted 1 would loop per byte */
	n = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	if (n == 0)
		return 0;
	n = data->d_size / n;
	for (k = 0; k < n; k++)
	{
		GElf_Sym	sym;
		const char *s;

		if (gelf_getsym(data, (int) k, &sym) == NULL || sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(e, sh->sh_link, sym.st_name);
		if (s != NULL && strcmp(s, name) == 0)
		{
			*value = sym.st_value;
			return 1;
		}
	}
	return 0;
}

/*
 * elf_lookup
 *		st_value of name in path's .dynsym and the vaddr of its first
 *		PT_LOAD (offset 0).  Returns 0 or -1 with err.
 */
static int
elf_lookup(const char *path, const char *name, uint64_t *value, uint64_t *load_vaddr,
		   char *err, size_t errlen)
{
	Elf		   *e = NULL;
	Elf_Scn    *scn = NULL;
	size_t		nph;
	int			fd;
	int			found = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
	{
		snprintf(err, errlen, "libelf too old");
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
	{
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e == NULL || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph) != 0)
	{
		snprintf(err, errlen, "%s is not an ELF file", path);
		goto done;
	}
	*load_vaddr = first_load_vaddr(e, nph);
	while (!found && (scn = elf_nextscn(e, scn)) != NULL)
	{
		GElf_Shdr	sh;

		if (gelf_getshdr(scn, &sh) != NULL && sh.sh_type == SHT_DYNSYM && sh.sh_entsize != 0 &&
			sh.sh_size <= ELF_MAX_TABLE_BYTES &&
			elf_section_bounded(e, sh.sh_link, ELF_MAX_TABLE_BYTES))
			found = dynsym_find(e, scn, &sh, name, value);
	}
	if (!found)
		snprintf(err, errlen, "%s does not export %s", path, name);
done:
	if (e != NULL)
		elf_end(e);
	close(fd);
	return found ? 0 : -1;
}

/*
 * load_base
 *		Start of the mapping of the executable at file offset 0.
 */
static int
load_base(pid_t pid, uint64_t *base, char *err, size_t errlen)
{
	char		path[64];
	char		exe[PATH_MAX];
	char		line[PATH_MAX + 256];
	FILE	   *f;
	ssize_t		n;
	int			ok = 0;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int) pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
	{
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	exe[n] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int) pid);
	f = fopen(path, "re");
	if (f == NULL)
	{
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	while (!ok && fgets(line, sizeof(line), f) != NULL)
	{
		unsigned long long start;
		unsigned long long off;
		char	   *p;

		if (sscanf(line, "%llx-%*[0-9a-f] %*s %llx", &start, &off) != 2 || off != 0)
			continue;
		p = strchr(line, '/');
		if (p == NULL)
			continue;
		p[strcspn(p, "\n")] = '\0';
		if (strcmp(p, exe) == 0)
		{
			*base = start;
			ok = 1;
		}
	}
	fclose(f);
	if (!ok)
		snprintf(err, errlen, "no mapping of %s in %s", exe, path);
	return ok ? 0 : -1;
}

/*
 * pg_symbol_addr
 *		Run-time address of name in pid.  Returns 0 or -1 with err.
 */
int
pg_symbol_addr(pid_t pid, const char *name, uint64_t *addr, char *err, size_t errlen)
{
	char		exe[64];
	uint64_t	value = 0;
	uint64_t	vaddr = 0;
	uint64_t	base = 0;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int) pid);
	if (elf_lookup(exe, name, &value, &vaddr, err, errlen) < 0 ||
		load_base(pid, &base, err, errlen) < 0)
		return -1;
	*addr = base + value - vaddr;
	return 0;
}
