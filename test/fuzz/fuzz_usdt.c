/*
 * test/fuzz/fuzz_usdt.c
 *	  The SystemTap SDT note parser (helper/usdt_notes.c) on arbitrary
 *	  sections and argument specs.
 *
 * The helper reads the notes of whatever binary a PostgreSQL process runs
 * (found host-wide by its process name): a local user can start a process
 * of that name from a binary of their own, so the notes are untrusted.  A
 * parse that succeeds hands back terminated names and an argument count in
 * range, and each argument spec it kept parses on its own.
 *
 * Input: byte 0 bit 0 chooses what is parsed (0: a .note.stapsdt section,
 * 1: one probe's argument specs), bit 1 the section's .stapsdt.base (0 or
 * an address), the rest is the bytes.
 */
#include "fuzz.h"
#include "usdt_notes.h"

/* A .note.stapsdt section's contents */
static void
parse_notes(const uint8_t *data, size_t len, uint64_t base_addr)
{
	usdt_probe *probes = NULL;
	usdt_arg	args[USDT_MAX_ARGS];
	size_t		n = 0;
	char		err[256] = "";

	if (usdt_parse_notes(data, len, base_addr, &probes, &n, err, sizeof(err)) < 0)
	{
		FUZZ_EXPECT(err[0] != '\0' && fuzz_printable(err));
		return;
	}
	FUZZ_EXPECT(n == 0 || probes != NULL);
	for (size_t i = 0; i < n; i++)
	{
		const usdt_probe *p = &probes[i];

		FUZZ_EXPECT(fuzz_terminated(p->provider, sizeof(p->provider)));
		FUZZ_EXPECT(fuzz_terminated(p->name, sizeof(p->name)));
		FUZZ_EXPECT(fuzz_terminated(p->args, sizeof(p->args)));
		FUZZ_EXPECT(p->nargs >= -1 && p->nargs <= USDT_MAX_ARGS);
		if (p->nargs >= 0)
			FUZZ_EXPECT(usdt_parse_args(p->args, args, USDT_MAX_ARGS) == p->nargs);
	}
	free(probes);
}

/* One probe's argument specs */
static void
parse_args(const uint8_t *data, size_t len)
{
	usdt_arg	args[USDT_MAX_ARGS];
	char	   *specs = fuzz_cstring(data, len);
	int			n = usdt_parse_args(specs, args, USDT_MAX_ARGS);

	FUZZ_EXPECT(n >= -1 && n <= USDT_MAX_ARGS);
	for (int i = 0; i < n; i++)
	{
		FUZZ_EXPECT(args[i].size == 1 || args[i].size == 2 || args[i].size == 4 ||
					args[i].size == 8);
		FUZZ_EXPECT(fuzz_terminated(args[i].reg, sizeof(args[i].reg)));
		FUZZ_EXPECT(fuzz_terminated(args[i].symbol, sizeof(args[i].symbol)));
	}
	free(specs);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t    *copy;

	if (size == 0)
		return 0;
	/* the first byte picks the parser; a read past the section's end faults */
	copy = fuzz_exact_copy(data + 1, size - 1);
	if (data[0] & 1)
		parse_args(copy, size - 1);
	else
		parse_notes(copy, size - 1, data[0] & 2 ? UINT64_C(0x5d0000) : 0);
	free(copy);
	return 0;
}
