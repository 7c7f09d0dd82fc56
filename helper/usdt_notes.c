/*
 * helper/usdt_notes.c
 *	  Our own parser of SystemTap SDT notes and their argument specs.
 *
 * A note is { u32 namesz, u32 descsz, u32 type, name[namesz] padded to 4,
 * desc[descsz] padded to 4 }.  SDT notes have type 3 and name "stapsdt";
 * their desc is { u64 pc, u64 base, u64 semaphore, provider\0, name\0,
 * args\0 } (64-bit ELF).  Everything is bounds-checked: the section comes
 * from a file we do not control (a container image).
 *
 * No locking: pure functions.
 */
#include "usdt_notes.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT_STAPSDT		3
#define ALIGN4(x)		(((x) + 3) & ~(size_t) 3)

/*
 * take_string
 *		Copy the NUL-terminated string at *p (not past end) into dst;
 *		advance *p past the NUL.  Returns 0, or -1 when unterminated.
 *		Too long strings are truncated into dst (still accepted).  Control
 *		characters become '?': `inspect` prints these strings, and a
 *		binary from a container image could carry terminal escapes.
 */
static int
take_string(const char **p, const char *end, char *dst, size_t dstlen)
{
	const char *nul = memchr(*p, '\0', (size_t) (end - *p));
	size_t		l;
	size_t		i;

	if (nul == NULL)
		return -1;
	l = (size_t) (nul - *p);
	if (l >= dstlen)
		l = dstlen - 1;
	memcpy(dst, *p, l);
	dst[l] = '\0';
	for (i = 0; i < l; i++)
		if ((unsigned char) dst[i] < 0x20 || (unsigned char) dst[i] == 0x7f)
			dst[i] = '?';
	*p = nul + 1;
	return 0;
}

/* One ELF note, as next_note() finds it in the section. */
typedef struct elf_note
{
	uint32_t	type;
	uint32_t	namesz;
	uint32_t	descsz;
	const char *name;
	const char *desc;
} elf_note;

/*
 * next_note
 *		The note at *off of a len-byte section into note, and *off past it
 *		(name and desc padded to 4 bytes).  Returns -1 with err when the
 *		header, name or desc runs past the section.
 */
static int
next_note(const unsigned char *b, size_t len, size_t *off, elf_note *note,
		  char *err, size_t errlen)
{
	if (len - *off < 12)
	{
		snprintf(err, errlen, "note header truncated at offset %zu", *off);
		return -1;
	}
	memcpy(&note->namesz, b + *off, 4);
	memcpy(&note->descsz, b + *off + 4, 4);
	memcpy(&note->type, b + *off + 8, 4);
	*off += 12;
	if (note->namesz > len - *off || ALIGN4((size_t) note->namesz) > len - *off)
	{
		snprintf(err, errlen, "note name overruns the section at offset %zu", *off);
		return -1;
	}
	note->name = (const char *) b + *off;
	*off += ALIGN4((size_t) note->namesz);
	if (note->descsz > len - *off)
	{
		snprintf(err, errlen, "note desc overruns the section at offset %zu", *off);
		return -1;
	}
	note->desc = (const char *) b + *off;
	*off += note->descsz;
	*off = ALIGN4(*off) > len ? len : ALIGN4(*off);
	return 0;
}

/*
 * parse_stapsdt
 *		The probe a stapsdt note (number idx) describes: three addresses,
 *		then provider, name and argument strings.  Addresses move by how
 *		far .stapsdt.base (base_addr) moved since the note was written
 *		(a prelinked file).  Returns -1 with err when the note is malformed.
 */
static int
parse_stapsdt(const elf_note *note, uint64_t base_addr, size_t idx, usdt_probe *pr,
			  char *err, size_t errlen)
{
	const char *p;
	const char *end = note->desc + note->descsz;
	uint64_t	note_base;
	usdt_arg	args[USDT_MAX_ARGS];

	if (note->descsz < 24 + 3)
	{
		snprintf(err, errlen, "stapsdt note %zu too short (%u bytes)", idx, note->descsz);
		return -1;
	}
	p = note->desc + 24;
	memset(pr, 0, sizeof(*pr));
	memcpy(&pr->pc, note->desc, 8);
	memcpy(&note_base, note->desc + 8, 8);
	memcpy(&pr->semaphore, note->desc + 16, 8);
	if (take_string(&p, end, pr->provider, sizeof(pr->provider)) < 0 ||
		take_string(&p, end, pr->name, sizeof(pr->name)) < 0 ||
		take_string(&p, end, pr->args, sizeof(pr->args)) < 0)
	{
		snprintf(err, errlen, "stapsdt note %zu: unterminated string", idx);
		return -1;
	}
	if (pr->provider[0] == '\0' || pr->name[0] == '\0')
	{
		snprintf(err, errlen, "stapsdt note %zu: empty provider or name", idx);
		return -1;
	}
	if (base_addr != 0 && note_base != base_addr)
	{
		pr->pc += base_addr - note_base;
		if (pr->semaphore != 0)
			pr->semaphore += base_addr - note_base;
	}
	pr->nargs = usdt_parse_args(pr->args, args, USDT_MAX_ARGS);
	return 0;
}

/*
 * usdt_parse_notes
 *		See usdt_notes.h.
 */
int
usdt_parse_notes(const void *data, size_t len, uint64_t base_addr,
				 usdt_probe **out, size_t *n, char *err, size_t errlen)
{
	const unsigned char *b = data;
	size_t		off = 0;
	size_t		cap = 0;
	size_t		cnt = 0;
	usdt_probe *v = NULL;

	*out = NULL;
	*n = 0;
	while (off < len)
	{
		elf_note	note;
		usdt_probe	pr;

		if (next_note(b, len, &off, &note, err, errlen) < 0)
			goto fail;
		if (note.type != NT_STAPSDT || note.namesz != 8 ||
			memcmp(note.name, "stapsdt", 8) != 0)
			continue;			/* another kind of note: not ours */
		if (parse_stapsdt(&note, base_addr, cnt, &pr, err, errlen) < 0)
			goto fail;
		if (cnt == USDT_MAX_PROBES)
		{
			snprintf(err, errlen, "more than %d SDT notes: not a PostgreSQL build",
					 USDT_MAX_PROBES);
			goto fail;
		}
		if (cnt == cap)
		{
			size_t		ncap = cap ? cap * 2 : 64;
			usdt_probe *nv = realloc(v, ncap * sizeof(*nv));

			if (nv == NULL)
			{
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			v = nv;
			cap = ncap;
		}
		v[cnt++] = pr;
	}
	*out = v;
	*n = cnt;
	return 0;

fail:
	free(v);
	return -1;
}

/*
 * parse_int
 *		Strict signed decimal at *s (advances it).  Returns 0 or -1.
 */
static int
parse_int(const char **s, int64_t *out)
{
	const char *p = *s;
	int			neg = 0;
	int64_t		v = 0;
	int			digits = 0;

	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	while (isdigit((unsigned char) *p))
	{
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p++ - '0');
		digits++;
	}
	if (digits == 0)
		return -1;
	*out = neg ? -v : v;
	*s = p;
	return 0;
}

/*
 * parse_reg
 *		"%name" at *s into reg (letters and digits).  Returns 0 or -1.
 */
static int
parse_reg(const char **s, char *reg, size_t reglen)
{
	const char *p = *s;
	size_t		l = 0;

	if (*p != '%')
		return -1;
	p++;
	while (isalnum((unsigned char) *p))
	{
		if (l + 1 >= reglen)
			return -1;
		reg[l++] = *p++;
	}
	reg[l] = '\0';
	if (l == 0)
		return -1;
	*s = p;
	return 0;
}

/*
 * usdt_parse_arg
 *		See usdt_notes.h.  Forms: [-]N@$C, [-]N@%reg, [-]N@[off](%reg),
 *		[-]N@[off+]sym(%rip).
 */
int
usdt_parse_arg(const char *spec, usdt_arg *out)
{
	const char *p = spec;
	int64_t		sz;
	int64_t		off = 0;

	memset(out, 0, sizeof(*out));
	if (*p == '-')
	{
		out->is_signed = 1;
		p++;
	}
	if (parse_int(&p, &sz) < 0 || *p != '@')
		return -1;
	if (sz != 1 && sz != 2 && sz != 4 && sz != 8)
		return -1;
	out->size = (int) sz;
	p++;
	if (*p == '$')
	{
		p++;
		if (parse_int(&p, &out->value) < 0 || *p != '\0')
			return -1;
		out->kind = USDT_ARG_CONST;
		return 0;
	}
	if (*p == '%')
	{
		if (parse_reg(&p, out->reg, sizeof(out->reg)) < 0 || *p != '\0')
			return -1;
		out->kind = USDT_ARG_REG;
		return 0;
	}
	if (*p == '-' || *p == '+' || isdigit((unsigned char) *p))
	{
		if (parse_int(&p, &off) < 0)
			return -1;
		if (*p == '+')
			p++;
	}
	if (isalpha((unsigned char) *p) || *p == '_')
	{
		size_t		l = 0;

		while (isalnum((unsigned char) *p) || *p == '_' || *p == '.')
		{
			if (l + 1 >= sizeof(out->symbol))
				return -1;
			out->symbol[l++] = *p++;
		}
		out->symbol[l] = '\0';
	}
	if (*p != '(')
		return -1;
	p++;
	if (parse_reg(&p, out->reg, sizeof(out->reg)) < 0 || *p != ')' || p[1] != '\0')
		return -1;
	out->value = off;
	if (out->symbol[0] != '\0')
	{
		if (strcmp(out->reg, "rip") != 0)
			return -1;
		out->kind = USDT_ARG_SYMBOL;
	}
	else
		out->kind = USDT_ARG_REG_DEREF;
	return 0;
}

/*
 * usdt_parse_args
 *		See usdt_notes.h.
 */
int
usdt_parse_args(const char *specs, usdt_arg *out, int max)
{
	char		buf[USDT_ARGS_LEN];
	char	   *save = NULL;
	char	   *tok;
	int			n = 0;

	snprintf(buf, sizeof(buf), "%s", specs);
	for (tok = strtok_r(buf, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save))
	{
		if (n == max || usdt_parse_arg(tok, &out[n]) < 0)
			return -1;
		n++;
	}
	return n;
}
