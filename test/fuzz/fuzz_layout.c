/*
 * test/fuzz/fuzz_layout.c
 *	  The layout file parser (helper/layout_file.c) on arbitrary bytes.
 *
 * The helper runs as root and reads this file from the data directory,
 * where the postgres user writes it: every byte is untrusted.  A parse that
 * succeeds must hand back what BPF and the helper rely on: each field
 * offset inside its element, the wait events sorted by id without
 * duplicates, their names terminated; a parse that fails must say why in
 * printable text, and leave nothing allocated.
 */
#include "fuzz.h"
#include "layout_file.h"

/* Every promise of a successful parse (layout_file.h, check_fields). */
static void
check_layout(const pgt_layout *l)
{
	FUZZ_EXPECT(l->proc_off_pid + 4 <= l->proc_stride);
	FUZZ_EXPECT(l->proc_off_wait_event_info + 4 <= l->proc_stride);
	FUZZ_EXPECT(l->proc_off_backend_id + 4 <= l->proc_stride);
	FUZZ_EXPECT(l->beentry_off_procpid + 4 <= l->beentry_stride);
	FUZZ_EXPECT(l->beentry_off_query_id + 8 <= l->beentry_stride);
	FUZZ_EXPECT(l->beentry_off_backend_type + 4 <= l->beentry_stride);
	if (l->bgw_size != 0)
	{
		FUZZ_EXPECT(l->bgw_off_type + 16 <= l->bgw_size);
		FUZZ_EXPECT(l->bgw_off_notify_pid + 4 <= l->bgw_size);
	}
	FUZZ_EXPECT(l->nevents <= PGT_LAYOUT_MAX_EVENTS);
	FUZZ_EXPECT(l->nevents == 0 || l->events != NULL);
	for (uint32_t i = 0; i < l->nevents; i++)
	{
		const pgt_wait_event_name *e = &l->events[i];

		FUZZ_EXPECT(i == 0 || e->info > l->events[i - 1].info);
		FUZZ_EXPECT(fuzz_terminated(e->class_name, sizeof(e->class_name)));
		FUZZ_EXPECT(fuzz_terminated(e->event_name, sizeof(e->event_name)));
		FUZZ_EXPECT(fuzz_printable(e->class_name));
		FUZZ_EXPECT(fuzz_printable(e->event_name));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pgt_layout	l;
	char		err[256] = "";

	if (layout_parse((const char *) data, size, &l, err, sizeof(err)) == 0)
	{
		check_layout(&l);
		layout_free(&l);
	}
	else
	{
		FUZZ_EXPECT(err[0] != '\0');
		FUZZ_EXPECT(fuzz_printable(err));
		FUZZ_EXPECT(l.events == NULL && l.nevents == 0);
	}
	return 0;
}
